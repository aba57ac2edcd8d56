"""The kept verdicts (``WorkloadVerdict``): why each pending workload waits, judged by the worker, read by the doors.

Judging every pending workload of a large cluster reads its whole state (nodes, running jobs, every unit's quota)
and costs about a second at 5,000 nodes and 10,000 waiting pods; a list page, the pool page's line and ``/metrics``
read the kept verdicts instead while the round is recent (``selectors.pending_verdicts``). The worker judges again a
few seconds after its watch batches and after each sync (``workload_verdicts_keep``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection, Iterator

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from pools import selectors
from pools.models import Backend, ConfigRevision, StartEstimate, VerdictRound, WorkloadSums, WorkloadVerdict

from . import bulk
from .workload_runs import start_estimates_keep

logger = logging.getLogger(__name__)

KEY_FIELDS = ("namespace", "workload_kind", "workload_name")
# A watch judges its backend's pending workloads again at most this often, after a batch that changed something.
JUDGE_SECONDS = 3.0


def workload_verdicts_keep(*, backend: Backend, pool_ids: Collection[int] | None = None) -> dict:
    """Judge every pending workload of ``backend`` from the live state and keep the verdicts, replacing the last
    round's in one transaction: ``{"workloads", "seconds"}`` (and ``"kept": False`` when a newer round was kept
    meanwhile: an older judgement never replaces it).

    The round is stamped with the time its reading began and the newest config revision then, so a reader never
    takes it for fresher than it is. A workload waiting then without a verdict (its pending pods bound to a node
    already) is kept with an empty reason: it is not judged again by each reader.

    With ``pool_ids`` only the workloads waiting on those pools are judged again and their rows replaced (a watch
    batch that freed or took GPUs on their nodes), those rows stamped with their own time (a whole round's rows take the
    round's); the backend's round keeps its stamp, so its other rows are not taken for fresher than they are.
    """
    started, clock = timezone.now(), time.monotonic()
    with _one_snapshot():
        revision = ConfigRevision.objects.aggregate(newest=Max("id"))["newest"] or 0
        found, where = selectors.judged_verdicts(backend.pk, pool_ids)
        # The waiting workloads, and those of them some of whose pods run already: one read.
        sums = list(
            WorkloadSums.objects.filter(backend=backend, pending__gt=0)
            .order_by()
            .values_list("namespace", "workload_kind", "workload_name", "running")
        )
    rows = [
        {
            "backend_id": backend.pk,
            "namespace": key[1],
            "workload_kind": key[2],
            "workload_name": key[3],
            "pool_id": where[key][0],
            "gpus": where[key][1],
            "scheduled_message": where[key][2],
            "reason": verdict["reason"],
            "verdict": verdict,
            "judged_at": None if pool_ids is None else started,
        }
        for key, verdict in found.items()
    ]
    waiting, running = set(), set()
    for *key, pods_running in sums:
        waiting.add(tuple(key))
        if pods_running > 0:
            running.add(tuple(key))
    if pool_ids is None:
        rows += [
            {
                "backend_id": backend.pk,
                "namespace": namespace,
                "workload_kind": kind,
                "workload_name": name,
                "reason": "",
            }
            for namespace, kind, name in waiting - {key[1:] for key in found}
        ]
    # Each start estimate as first made (SEMANTICS §10.1), of the workloads none of whose pods runs yet.
    estimates = [
        StartEstimate(
            backend_id=backend.pk,
            namespace=key[1],
            workload_kind=key[2],
            workload_name=key[3],
            pool_id=where[key][0],
            made_at=started,
            likely=verdict["start"]["likely"],
            late=verdict["start"]["late"],
        )
        for key, verdict in found.items()
        if verdict.get("start") and where[key][0] is not None and key[1:] not in running
    ]
    seconds = round(time.monotonic() - clock, 3)
    with transaction.atomic():
        # One round at a time per backend (a watch's and a sync's): the backend's row, as its other writers lock it.
        list(Backend.objects.select_for_update(no_key=True).filter(pk=backend.pk).values_list("pk"))
        kept = VerdictRound.objects.filter(backend=backend).values_list("judged_at", flat=True).first()
        if kept is not None and kept > started:
            return {"workloads": len(found), "seconds": seconds, "kept": False}
        mine = WorkloadVerdict.objects.filter(backend=backend)
        if pool_ids is not None:
            mine = mine.filter(pool_id__in=list(pool_ids))
            # Those of them that still wait but are no longer judged (their pods just bound): kept with no reason.
            judged = {key[1:] for key in found}
            rows += [
                {
                    "backend_id": backend.pk,
                    **dict(zip(KEY_FIELDS, key, strict=True)),
                    "reason": "",
                    "judged_at": started,
                }
                for key in mine.values_list(*KEY_FIELDS)
                if key in waiting and key not in judged
            ]
        mine.delete()
        bulk.insert_rows(WorkloadVerdict, rows)
        start_estimates_keep(estimates)
        if pool_ids is None:
            VerdictRound.objects.update_or_create(
                backend=backend,
                defaults={
                    "judged_at": started,
                    "config_revision": revision,
                    "workloads": len(found),
                    "seconds": seconds,
                },
            )
    return {"workloads": len(found), "seconds": seconds}


@contextlib.contextmanager
def _one_snapshot() -> Iterator[None]:
    """Read as of one moment (PostgreSQL: a read-only REPEATABLE READ transaction), so that a round judged while the
    watch goes on writing its batches sees each batch whole or not at all, in every one of its queries. Inside a
    caller's transaction (or elsewhere), the reads are that transaction's."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def workload_verdicts_keep_quietly(*, backend: Backend, pool_ids: Collection[int] | None = None) -> dict | None:
    """``workload_verdicts_keep`` for a watch or a sync that must go on whatever happens to it: a failure is logged
    and the readers judge live until a round succeeds."""
    try:
        return workload_verdicts_keep(backend=backend, pool_ids=pool_ids)
    except Exception:
        logger.exception("judging the pending workloads of backend %s failed", backend.name)
        if not connection.in_atomic_block:
            connection.close()  # a broken connection is opened afresh by the next round
        return None
