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

from celery.result import AsyncResult
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from pools import services, tasks

logger = logging.getLogger(__name__)

JOB_SECONDS = 24 * 3600
SENT = "SENT"
FINISHED_STATES = {"SUCCESS", "FAILURE", "REVOKED"}


def _key(job_id: str) -> str:
    return f"gpupool:api-job:{job_id}"


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
            record.update(_outcome(result.state, result.result))
    cache.set(_key(record["id"]), record, JOB_SECONDS)
    return _shown(record)


def job_get(job_id: str) -> dict | None:
    """The job with this id as it stands now, or None when there is no such job (or it expired)."""
    try:
        uuid.UUID(str(job_id))
    except ValueError:
        return None
    record = cache.get(_key(job_id))
    if record is None:
        return None
    if "state" not in record:
        if settings.CELERY_RESULT_BACKEND:
            result = AsyncResult(record["id"])
            record = {**record, **_outcome(result.state, result.result if result.ready() else None)}
        else:
            record = {**record, "state": SENT, "result": None, "error": ""}
    return _shown(record)


def _outcome(state: str, value) -> dict:
    """State, result and error of a task; a sync that returned ``{"error": ...}`` (source unreachable) failed."""
    if state == "FAILURE":
        return {"state": state, "result": None, "error": str(value)}
    if isinstance(value, dict) and value.get("error"):
        return {"state": "FAILURE", "result": value, "error": str(value["error"])}
    return {"state": state, "result": value if isinstance(value, dict) else None, "error": ""}


def _shown(record: dict) -> dict:
    return {
        "id": record["id"],
        "task": record["task"],
        "backend": record["backend"],
        "state": record["state"],
        "done": record["state"] in FINISHED_STATES,
        "result": record["result"],
        "error": record["error"],
        "created_at": record["created_at"],
        "created_by": record["created_by"],
    }
