"""Jobs as their rows say: a backend sync started over the API or a page, polled at ``/api/jobs/{id}/``.

``pools.jobs`` starts them; the worker running one writes its state (``JobRecord``), so any web process answers.
"""

from __future__ import annotations

import uuid

from pools.models import JobRecord

FINISHED_STATES = {JobRecord.State.SUCCESS, JobRecord.State.FAILURE}


def job_find(job_id: str) -> JobRecord | None:
    """The job row with this id, or None (no such job, or not an id at all)."""
    try:
        key = uuid.UUID(str(job_id))
    except ValueError:
        return None
    return JobRecord.objects.select_related("backend").filter(pk=key).first()


def job_get(job_id: str) -> dict | None:
    """The job with this id as the API shows it, or None when there is no such job."""
    job = job_find(job_id)
    return None if job is None else job_shown(job)


def job_shown(job: JobRecord) -> dict:
    """A job as the API shows it."""
    return {
        "id": str(job.pk),
        "task": job.task,
        "backend": job.backend.name,
        "state": job.state,
        "done": job.state in FINISHED_STATES,
        "result": job.result,
        "error": job.error,
        "created_at": job.created_at.isoformat(),
        "created_by": job.created_by,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
