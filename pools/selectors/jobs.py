"""Jobs as their records say: a backend sync started over the API or a page, polled at ``/api/jobs/{id}/``.

``pools.jobs`` starts them and keeps their records (who, which backend, an eager run's result) for a day in
Django's cache; with several web processes configure a shared cache (Redis) so any process can answer a poll.
"""

from __future__ import annotations

import uuid

from celery.result import AsyncResult
from django.conf import settings
from django.core.cache import cache

SENT = "SENT"
FINISHED_STATES = {"SUCCESS", "FAILURE", "REVOKED"}


def job_key(job_id: str) -> str:
    """Where a job's record is kept in the cache."""
    return f"gpupool:api-job:{job_id}"


def job_get(job_id: str) -> dict | None:
    """The job with this id as it stands now, or None when there is no such job (or it expired)."""
    try:
        uuid.UUID(str(job_id))
    except ValueError:
        return None
    record = cache.get(job_key(job_id))
    if record is None:
        return None
    if "state" not in record:
        if settings.CELERY_RESULT_BACKEND:
            result = AsyncResult(record["id"])
            record = {**record, **job_outcome(result.state, result.result if result.ready() else None)}
        else:
            record = {**record, "state": SENT, "result": None, "error": ""}
    return job_shown(record)


def job_outcome(state: str, value) -> dict:
    """State, result and error of a task; a sync that returned ``{"error": ...}`` (source unreachable) failed."""
    if state == "FAILURE":
        return {"state": state, "result": None, "error": str(value)}
    if isinstance(value, dict) and value.get("error"):
        return {"state": "FAILURE", "result": value, "error": str(value["error"])}
    return {"state": state, "result": value if isinstance(value, dict) else None, "error": ""}


def job_shown(record: dict) -> dict:
    """A job as the API shows it."""
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
