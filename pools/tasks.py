"""Celery tasks: thin, they take ids and call a service (which holds the backend's lease).

Beat (``CELERY_BEAT_SCHEDULE`` in settings) runs ``sync_all_backends`` and ``watch_all_backends`` every 30 s,
``record_usage`` and ``record_utilization`` every minute and ``compact_usage_history`` every hour. Without a
broker the tasks run in-process. With ``GPUPOOL["BACKEND_QUEUES"]`` the fan-out tasks send a backend's sync
and watch to the queue ``backend-<name>`` (``backend_queue``), for workers started with ``-Q backend-<name>,...``.
"""

import logging

from celery import shared_task
from django.conf import settings

from . import selectors, services
from .inventory.records import InventoryError
from .models import Backend
from .services.jobs import job_finished, job_started

logger = logging.getLogger(__name__)


# Syncs and watches are long: they are acknowledged when they end (``acks_late``), so that a worker whose
# processes are all busy with them reserves no further message (with the prefetch of one in settings) that
# another worker could run now. If a whole worker is killed, Redis hands its unacknowledged task to a worker
# again after the transport's visibility timeout (an hour); harmless, as the leases keep one sync and one
# watch per backend, and a watch's message has expired by then (docs/operations.md, "When a worker dies").
LONG_TASK = {"ignore_result": False, "acks_late": True}


@shared_task(**LONG_TASK)
def sync_backend(backend_id: int, job_id: str | None = None) -> dict:
    """Full sync of one backend; skipped (not queued twice) while another sync of it runs. With ``job_id`` (a
    "Sync now", ``pools.jobs``) the job's row follows it: started, then its result or error."""
    if job_id:
        job_started(job_id)
    try:
        result = _sync_backend(backend_id)
    except Exception as exc:
        if job_id:
            job_finished(job_id, error=f"{exc.__class__.__name__}: {exc}")
        raise
    if job_id:
        job_finished(job_id, result=result, error=str(result.get("error") or ""))
    return result


def _sync_backend(backend_id: int) -> dict:
    backend = Backend.objects.filter(pk=backend_id).first()
    if backend is None:
        return {"skipped": "backend no longer exists"}
    try:
        result = services.backend_sync(backend=backend)
    except services.SyncBusy as exc:
        return {"skipped": str(exc)}
    except InventoryError as exc:
        logger.warning("sync of backend %s failed: %s", backend.name, exc)
        return {"error": str(exc)}
    result.pop("resource_versions", None)
    services.workload_verdicts_keep_quietly(backend=backend)  # judged again from what the sync wrote
    return result


def backend_queue(name: str) -> dict:
    """``apply_async`` options for a task of backend ``name``: its own queue with ``GPUPOOL["BACKEND_QUEUES"]``,
    else none (the default queue)."""
    return {"queue": f"backend-{name}"} if settings.GPUPOOL.get("BACKEND_QUEUES") else {}


@shared_task
def sync_all_backends() -> int:
    """Queue a sync of every backend that has an inventory source."""
    backends = list(selectors.backends_to_sync().values_list("pk", "name"))
    for backend_id, name in backends:
        sync_backend.apply_async((backend_id,), **backend_queue(name))
    return len(backends)


@shared_task(**LONG_TASK)
def watch_backend(backend_id: int) -> dict:
    """Watch one live backend for ``GPUPOOL["WATCH_TASK_SECONDS"]``, then return; skipped at once while
    another holder has its lease ``watch:<id>``."""
    backend = Backend.objects.filter(pk=backend_id).first()
    if backend is None:
        return {"skipped": "backend no longer exists"}
    try:
        return services.backend_watch_for(backend=backend, seconds=services.watch_task_seconds())
    except services.WatchBusy as exc:
        return {"skipped": str(exc)}


@shared_task
def watch_all_backends() -> int:
    """Queue a watch of every live backend that nobody watches now (its lease ``watch:<id>`` is free).

    A queued watch that no worker took before the next round expires unrun, so watches do not pile up
    behind busy workers; the next round queues a fresh one.
    """
    backends = selectors.backends_to_watch()
    expires = settings.CELERY_BEAT_SCHEDULE["watch-backends"]["schedule"]
    for backend in backends:
        watch_backend.apply_async((backend.pk,), expires=expires, **backend_queue(backend.name))
    return len(backends)


@shared_task
def record_usage() -> int:
    return services.usage_sample_record()


@shared_task
def record_utilization() -> dict:
    """A round of GPU utilization of every backend that has a Prometheus or a simulated fleet."""
    return services.utilization_record_all()


@shared_task
def compact_usage_history() -> dict:
    return {"usage": services.usage_history_compact(), "utilization": services.utilization_history_compact()}
