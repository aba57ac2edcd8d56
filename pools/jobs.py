"""Jobs: a backend sync started over the API or a page ("Sync now"), polled at ``/api/jobs/{id}/``.

A job is a row (``JobRecord``), so any web process answers a poll. It is the Celery task
``pools.tasks.sync_backend`` sent with the job's id to the backend's queue (``tasks.backend_queue``); the
worker that runs it writes the job's state: ``STARTED`` when it begins, ``SUCCESS`` or ``FAILURE`` with its
result when it ends (``job_started``, ``job_finished``). Without a broker the task runs eagerly while the
request is answered, so the job is finished when the POST answers.

- One sync job per backend is queued or running at a time: asking again meanwhile answers that job (the
  partial unique constraint ``one_active_job_per_backend`` settles two requests at once).
- A broker that is out of reach fails the job at once (one connection attempt, no retry of the send, within
  ``BROKER_CONNECT_SECONDS``): ``FAILURE`` with ``BROKER_DOWN`` as its error, never "queued".
- A job whose worker died is given up when it is next read: running, but the backend's sync lease has not been
  held for ``JOB_STARTED_GRACE_SECONDS`` (a killed worker's lease expires within its heartbeat,
  ``services.leases``); queued, but no worker took it in ``JOB_QUEUED_SECONDS``.
"""

from __future__ import annotations

import logging
import uuid

from django.db import IntegrityError, transaction

from pools import services, tasks
from pools.engine.errors import Conflict
from pools.models import Backend, JobRecord
from pools.selectors.jobs import job_find, job_shown
from pools.services.jobs import (
    job_finished,
    job_given_up,
    job_started,
)

logger = logging.getLogger(__name__)

SYNC_TASK = "sync_backend"
# The longest "Sync now" waits for the broker before it says it is out of reach: to connect, and for each answer
# (a paused Redis accepts the connection and never answers), with no retry.
BROKER_CONNECT_SECONDS = 2
BROKER_SEND_OPTIONS = {
    "socket_connect_timeout": BROKER_CONNECT_SECONDS,
    "socket_timeout": BROKER_CONNECT_SECONDS,
    "retry_on_timeout": False,
}
BROKER_DOWN = "the task queue (broker) is out of reach; nothing was queued, try again later"


def backend_sync_request(*, name: str, actor: services.Actor) -> dict:
    """Start a sync of backend ``name`` as a job (the page's "Sync now", ``POST /api/backends/<name>/sync/``),
    once ``services.backend_to_sync`` let ``actor`` do it; returns the job as ``job_get`` shows it: the job
    already queued or running for the backend, if there is one."""
    backend = services.backend_to_sync(name, actor)
    for _attempt in range(3):
        active = _active_job(backend)
        if active is not None:
            return job_shown(active)
        job_id = uuid.uuid4()
        try:
            with transaction.atomic():
                job = JobRecord.objects.create(id=job_id, task=SYNC_TASK, backend=backend, created_by=actor.username)
        except IntegrityError:  # another request created one meanwhile: answer that one
            continue
        break
    else:  # pragma: no cover - three jobs given up in a row while asking
        raise Conflict(f"backend '{name}' has a sync starting; try again")
    _send(job, backend)
    job.refresh_from_db()
    return job_shown(job)


def _send(job: JobRecord, backend: Backend) -> None:
    """Send the job's task; a broker out of reach (refused, or paused: no answer) fails the job at once: one
    connection attempt and each answer bounded by ``BROKER_CONNECT_SECONDS``, no retries of the send."""
    app = tasks.sync_backend.app
    try:
        if app.conf.task_always_eager:  # in this process, as it stands: no broker, no producer pool to borrow from
            tasks.sync_backend.apply((backend.pk,), {"job_id": str(job.pk)}, task_id=str(job.pk))
            return
        with app.connection_for_write(transport_options=BROKER_SEND_OPTIONS) as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_CONNECT_SECONDS)
            tasks.sync_backend.apply_async(
                (backend.pk,),
                {"job_id": str(job.pk)},
                task_id=str(job.pk),
                retry=False,
                connection=connection,
                **tasks.backend_queue(backend.name),
            )
    except Exception as exc:  # an eager run that raised (the task recorded it), or a broker out of reach
        if app.conf.task_always_eager:
            logger.exception("sync of backend %s failed", backend.name)
            job_finished(job.pk, error=f"{exc.__class__.__name__}: {exc}", only_if_active=True)
        else:
            logger.warning("sync of backend %s not queued: %s", backend.name, exc)
            job_finished(job.pk, error=f"{BROKER_DOWN} ({exc.__class__.__name__}: {exc})")


def _active_job(backend: Backend) -> JobRecord | None:
    """The backend's queued or running sync job, once those whose worker died are given up."""
    job = JobRecord.objects.filter(backend=backend, task=SYNC_TASK, state__in=JobRecord.ACTIVE).first()
    if job is not None and job_given_up(job):
        return None
    return job


def job_get(job_id: str) -> dict | None:
    """The job with this id as it stands now (given up when its worker died), or None when there is none."""
    job = job_find(job_id)
    if job is None:
        return None
    if job.state in JobRecord.ACTIVE:
        job_given_up(job)
    return job_shown(job)


__all__ = ["backend_sync_request", "job_finished", "job_get", "job_given_up", "job_started"]
