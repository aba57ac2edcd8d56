"""The rows of sync jobs ("Sync now", ``pools.jobs``) as the worker running one and the web processes reading one
write them: started, finished, or given up once nothing runs it any more."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from pools.models import JobRecord, Lease

State = JobRecord.State
# A queued job no worker took in this long is given up.
JOB_QUEUED_SECONDS = 600
# A running job is given up once its backend's sync lease has not been held for this long after it started (a
# killed worker's lease expires within ``GPUPOOL["SYNC_LEASE_SECONDS"]``).
JOB_STARTED_GRACE_SECONDS = 5
WORKER_LOST = "the worker running this sync stopped before it finished"
NOT_TAKEN = "no worker took this sync in {seconds} s; is the worker running?"


def job_given_up(job: JobRecord) -> bool:
    """Fail ``job`` (and say so) when it is active but nothing runs it any more; see the module's text."""
    now = timezone.now()
    if job.state == State.PENDING and now - job.created_at > timedelta(seconds=JOB_QUEUED_SECONDS):
        error = NOT_TAKEN.format(seconds=JOB_QUEUED_SECONDS)
    elif (
        job.state == State.STARTED
        and now - (job.started_at or job.created_at) > timedelta(seconds=JOB_STARTED_GRACE_SECONDS)
        and not Lease.objects.filter(name=f"sync:{job.backend_id}", expires_at__gte=now).exists()
    ):
        error = WORKER_LOST
    else:
        return False
    job_finished(job.pk, error=error, only_if_active=True)
    job.refresh_from_db()
    return True


def job_started(job_id: str) -> None:
    """The worker took the job."""
    JobRecord.objects.filter(pk=job_id, state=State.PENDING).update(state=State.STARTED, started_at=timezone.now())


def job_finished(job_id, *, result: dict | None = None, error: str = "", only_if_active: bool = False) -> None:
    """The job ended: ``FAILURE`` with ``error``, else ``SUCCESS`` with ``result``."""
    jobs = JobRecord.objects.filter(pk=job_id)
    if only_if_active:
        jobs = jobs.filter(state__in=JobRecord.ACTIVE)
    jobs.update(
        state=State.FAILURE if error else State.SUCCESS, result=result, error=error[:2000], finished_at=timezone.now()
    )
