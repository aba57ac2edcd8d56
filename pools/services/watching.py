"""Bounded watches, as Celery runs them: one task watches one live backend for a while, then returns.

Beat's ``watch_all_backends`` queues a ``watch_backend`` task for every live backend (``kubernetes`` or
``simulated``: a ``file`` backend has no watch) whose lease ``watch:<id>`` nobody holds; the task runs
``backend_watch_for``, which takes that lease first (``WatchBusy`` at once when another holder has it, so a
worker slot is never spent waiting for it), then runs ``backend_watch`` until its time is up. A worker is
therefore never busy for longer than ``GPUPOOL["WATCH_TASK_SECONDS"]`` (a deploy can roll), and a watch
that ended or died is started again by the next beat.

The task renews its lease on a thread of its own for as long as it runs: ``backend_watch`` renews it only
between batches, and its first list (a full sync when the backend has no inventory yet) can outlast the
lease when several backends list at once on a busy worker. Were it to expire then, beat's next round would
start a second watch of the backend, and the first, finding its lease taken, would idle in its slot until
its time was up. A watch that loses its lease anyway (the database was out of reach for longer than the
lease) stops at once and frees its slot.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings

from pools.inventory.records import InventoryError
from pools.models import Backend

from .inventory import backend_watch
from .leases import lease_acquire, lease_keep, lease_owner, lease_release
from .workload_verdicts import JUDGE_SECONDS, workload_verdicts_keep_quietly

# backend_watch's own default: renewed every third of it while watching; a dead holder's lease frees itself after it.
WATCH_LEASE_SECONDS = 60


class WatchBusy(InventoryError):
    """Another holder watches the backend; this watch did not start."""


def watch_lease(backend_id: int) -> str:
    return f"watch:{backend_id}"


def watch_task_seconds() -> float:
    return float(settings.GPUPOOL.get("WATCH_TASK_SECONDS", 300))


def backend_watch_for(*, backend: Backend, seconds: float, lease_seconds: float = WATCH_LEASE_SECONDS) -> dict:
    """Watch ``backend`` (``backend_watch``: list, then apply its events) for ``seconds``, then return.

    Raises ``WatchBusy`` at once while another holder has the lease ``watch:<id>``. Returns how long it
    watched, the batches and node and pod changes it applied, and the backend's sync state at the end.
    """
    lease, owner = watch_lease(backend.pk), lease_owner()
    if not lease_acquire(name=lease, owner=owner, seconds=lease_seconds):
        raise WatchBusy(f"backend '{backend.name}' is already being watched; this watch did not start")
    applied = {"batches": 0, "nodes": 0, "pods": 0}
    judged = [0.0]  # when this watch last judged the backend's pending workloads (monotonic clock)

    def count(counts: dict) -> None:
        applied["batches"] += 1
        applied["nodes"] += counts.get("nodes", 0)
        applied["pods"] += counts.get("pods", 0)
        if (counts.get("nodes") or counts.get("pods")) and time.monotonic() - judged[0] >= JUDGE_SECONDS:
            workload_verdicts_keep_quietly(backend=backend)  # the verdicts move with the batches
            judged[0] = time.monotonic()

    stop, lost = threading.Event(), threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    renewer = threading.Thread(
        target=lease_keep, args=(lease, owner, lease_seconds, stop, lost), name=f"renew-{lease}", daemon=True
    )
    started = time.monotonic()
    timer.start()
    renewer.start()
    try:
        backend_watch(backend=backend, stop=stop, owner=owner, lease_seconds=lease_seconds, on_batch=count)
    finally:
        timer.cancel()
        stop.set()
        renewer.join(lease_seconds)  # a renewal is one short UPDATE; a hung database does not hold the task
        lease_release(name=lease, owner=owner)  # backend_watch releases it too, unless it raised
    state = Backend.objects.filter(pk=backend.pk).values("last_sync_at", "last_sync_error").first() or {}
    last_sync_at = state.get("last_sync_at")
    return {
        "backend": backend.name,
        "watched": round(time.monotonic() - started, 3),
        **applied,
        **({"lease_lost": True} if lost.is_set() else {}),
        "last_sync_at": last_sync_at.isoformat() if last_sync_at else None,
        "last_sync_error": state.get("last_sync_error", ""),
    }
