"""Celery tasks: thin, they take ids, hold the backend's lease and call a service.

Beat (``CELERY_BEAT_SCHEDULE`` in settings) runs ``sync_all_backends`` every 30 s, ``record_usage``
every minute and ``compact_usage_history`` every hour. Without a broker the tasks run in-process.
"""

import logging
import os
import socket
import threading

from celery import shared_task

from . import services
from .inventory.records import InventoryError
from .models import Backend

logger = logging.getLogger(__name__)

SYNC_LEASE_SECONDS = 300


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


@shared_task(ignore_result=False)
def sync_backend(backend_id: int) -> dict:
    """Full sync of one backend; skipped (not queued twice) while another sync of it runs."""
    backend = Backend.objects.filter(pk=backend_id).first()
    if backend is None:
        return {"skipped": "backend no longer exists"}
    lease, owner = f"sync:{backend_id}", worker_name()
    if not services.lease_acquire(name=lease, owner=owner, seconds=SYNC_LEASE_SECONDS):
        return {"skipped": "another sync of this backend is running"}
    try:
        result = services.backend_sync(backend=backend)
        result.pop("resource_versions", None)
        return result
    except InventoryError as exc:
        logger.warning("sync of backend %s failed: %s", backend.name, exc)
        return {"error": str(exc)}
    finally:
        services.lease_release(name=lease, owner=owner)


@shared_task
def sync_all_backends() -> int:
    """Queue a sync of every backend that has an inventory source."""
    ids = list(Backend.objects.exclude(kind="file", source="").values_list("pk", flat=True))
    for backend_id in ids:
        sync_backend.delay(backend_id)
    return len(ids)


@shared_task
def watch_backend(backend_id: int, seconds: float = 55) -> str:
    """Watch one backend for ``seconds`` as a worker job; beat starts it again, the lease keeps it single."""
    backend = Backend.objects.get(pk=backend_id)
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    try:
        services.backend_watch(backend=backend, stop=stop, owner=worker_name())
    finally:
        timer.cancel()
    return backend.name


@shared_task
def record_usage() -> int:
    return services.usage_sample_record()


@shared_task
def compact_usage_history() -> dict:
    return services.usage_history_compact()
