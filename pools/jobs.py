"""Jobs: a backend sync started over the API and polled at ``/api/jobs/{id}/``.

A job is the Celery task ``pools.tasks.sync_backend``, sent to the backend's queue (``tasks.backend_queue``:
the default one unless ``GPUPOOL_BACKEND_QUEUES`` is on). Where its state comes from:

- embedded default (no broker): the task runs eagerly when it is sent, so the job is finished when
  the POST answers; its result is kept in the job record;
- a broker and ``CELERY_RESULT_BACKEND``: a worker runs it and the state is read from the result backend;
- a broker without a result backend: Celery cannot tell, so the job stays ``SENT``; the backend's own
  ``status`` (last sync time and error) shows when the sync has happened.

Job records (who started it, on which backend, the eager result) are kept for a day in Django's cache;
with several web processes configure a shared cache (Redis) so that any process can answer a poll.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from pools import services, tasks
from pools.selectors.jobs import job_get, job_key, job_outcome, job_shown

logger = logging.getLogger(__name__)

JOB_SECONDS = 24 * 3600


def backend_sync_request(*, name: str, actor: services.Actor) -> dict:
    """Start a sync of backend ``name`` as a job (the page's "Sync now", ``POST /api/backends/<name>/sync/``),
    once ``services.backend_to_sync`` let ``actor`` do it; returns the job as ``job_get`` shows it."""
    backend = services.backend_to_sync(name, actor)
    username = actor.username
    record = {
        "task": "sync_backend",
        "backend": backend.name,
        "created_at": timezone.now().isoformat(),
        "created_by": username,
    }
    try:
        result = tasks.sync_backend.apply_async((backend.pk,), **tasks.backend_queue(backend.name))
    except Exception as exc:  # an eager run that raised: the job failed, the caller still gets a job to read
        logger.exception("sync of backend %s failed", backend.name)
        record.update(id=str(uuid.uuid4()), state="FAILURE", result=None, error=f"{exc.__class__.__name__}: {exc}")
    else:
        record["id"] = result.id
        if settings.CELERY_TASK_ALWAYS_EAGER:
            record.update(job_outcome(result.state, result.result))
    cache.set(job_key(record["id"]), record, JOB_SECONDS)
    return job_shown(record)


__all__ = ["backend_sync_request", "job_get"]
