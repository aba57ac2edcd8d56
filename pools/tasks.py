"""Celery tasks: thin, they take ids and call a service (which holds the backend's lease).

Beat (``CELERY_BEAT_SCHEDULE`` in settings) runs ``sync_all_backends`` every 30 s, ``record_usage`` and
``record_utilization`` every minute and ``compact_usage_history`` every hour. Without a broker the tasks run in-process.
"""

import logging

from celery import shared_task

from . import selectors, services
from .inventory.records import InventoryError
from .models import Backend

logger = logging.getLogger(__name__)


@shared_task(ignore_result=False)
def sync_backend(backend_id: int) -> dict:
    """Full sync of one backend; skipped (not queued twice) while another sync of it runs."""
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
    return result


@shared_task
def sync_all_backends() -> int:
    """Queue a sync of every backend that has an inventory source."""
    ids = list(selectors.backends_to_sync().values_list("pk", flat=True))
    for backend_id in ids:
        sync_backend.delay(backend_id)
    return len(ids)


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
