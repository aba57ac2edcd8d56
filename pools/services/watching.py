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

import logging
import threading
import time

from django.conf import settings
from django.db import connection

from pools import selectors
from pools.inventory.records import InventoryError
from pools.models import Backend

from .inventory import backend_watch
from .leases import lease_acquire, lease_keep, lease_owner, lease_release
from .workload_verdicts import JUDGE_SECONDS, workload_verdicts_keep_quietly

logger = logging.getLogger(__name__)

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
    stop, lost = threading.Event(), threading.Event()
    judging = VerdictJudging(backend)

    def count(counts: dict) -> None:
        applied["batches"] += 1
        applied["nodes"] += counts.get("nodes", 0)
        applied["pods"] += counts.get("pods", 0)
        judging.note(counts)  # the verdicts move with the batches

    timer = threading.Timer(seconds, stop.set)
    timer.daemon = True
    renewer = threading.Thread(
        target=lease_keep, args=(lease, owner, lease_seconds, stop, lost), name=f"renew-{lease}", daemon=True
    )
    started = time.monotonic()
    timer.start()
    renewer.start()
    try:
        with judging:
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


# A batch that freed or took GPUs on the nodes of at most this many pools has those pools judged again at once; more
# wait for the backend's next round (a busy fleet's batches touch every pool: the round judges them all at once).
PROMPT_POOLS = 4
# How long a watch's end waits for a round under way to be kept.
JUDGING_JOIN_SECONDS = 60.0


class VerdictJudging:
    """Judges a watched backend's pending workloads again as the watch's batches change them, on a thread of its own:
    the watch goes on applying events while a round is judged.

    Every changed batch makes the backend's round due: it is judged whole (``workload_verdicts_keep``) at most every
    ``JUDGE_SECONDS``, and once more after the last change. Meanwhile, a batch that freed or took GPUs on the nodes of
    a few pools (``PROMPT_POOLS``) has only those pools judged again at once, while the round they amend is one a
    reader takes: a freed node moves the verdicts it affects within the judging of one pool, not a round later.
    """

    def __init__(self, backend: Backend):
        self.backend = backend
        self.stop = threading.Event()  # the watch it follows has ended
        self.lock = threading.Lock()
        self.changed = threading.Event()
        self.due = False  # a batch changed something since the last whole round began
        self.nodes: set[str] = set()  # the nodes whose GPUs changed since the last judging began
        self.thread = threading.Thread(target=self.run, name=f"judge-{backend.pk}", daemon=True)

    def __enter__(self) -> VerdictJudging:
        """The watch begins: the thread starts."""
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        """The watch has ended: a round under way is kept (waited for up to ``JUDGING_JOIN_SECONDS``), then the
        thread ends."""
        self.stop.set()
        self.changed.set()
        self.thread.join(JUDGING_JOIN_SECONDS)

    def note(self, counts: dict) -> None:
        """A batch was applied that changed ``counts["nodes"]`` nodes and ``counts["pods"]`` pods (as
        ``watch_events_apply`` counts them; a batch that changed nothing is no reason to judge)."""
        if not (counts.get("nodes") or counts.get("pods")):
            return
        with self.lock:
            self.due = True
            self.nodes |= counts.get("gpu_nodes", set())
        self.changed.set()

    def _take(self, whole: bool) -> set[str]:
        with self.lock:
            nodes, self.nodes = self.nodes, set()
            if whole:
                self.due = False
            return nodes

    def run(self) -> None:
        judged = -JUDGE_SECONDS  # when the last whole round began (monotonic clock)
        try:
            while not self.stop.is_set():
                self.changed.wait(JUDGE_SECONDS / 8)
                self.changed.clear()
                if self.stop.is_set() or not self.due:
                    continue
                if time.monotonic() - judged >= JUDGE_SECONDS:
                    self._take(whole=True)
                    judged = time.monotonic()
                    workload_verdicts_keep_quietly(backend=self.backend)
                elif nodes := self._take(whole=False):
                    self._judge_pools(nodes)
        finally:
            connection.close()  # this thread's own connection: Django opens one per thread and never closes it

    def _judge_pools(self, nodes: set[str]) -> None:
        try:
            pool_ids = selectors.pools_of_nodes(self.backend.pk, nodes)
            if not pool_ids or len(pool_ids) > PROMPT_POOLS or not selectors.verdict_round_fresh(self.backend.pk):
                return  # the next whole round judges them
        except Exception:
            logger.exception("reading the pools of backend %s's changed nodes failed", self.backend.name)
            connection.close()
            return
        workload_verdicts_keep_quietly(backend=self.backend, pool_ids=pool_ids)
