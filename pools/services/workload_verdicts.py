"""The kept verdicts (``WorkloadVerdict``): why each pending workload waits, judged by the worker, read by the doors.

Judging every pending workload of a large cluster reads its whole state (nodes, running jobs, every unit's quota)
and costs about a second at 5,000 nodes and 10,000 waiting pods; a list page, the pool page's line and ``/metrics``
read the kept verdicts instead while the round is recent (``selectors.pending_verdicts``). The worker judges again a
few seconds after its watch batches and after each sync (``workload_verdicts_keep``).
"""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from pools import selectors
from pools.models import Backend, ConfigRevision, StartEstimate, VerdictRound, WorkloadSums, WorkloadVerdict

from . import bulk
from .workload_runs import start_estimates_keep

logger = logging.getLogger(__name__)

# A watch judges its backend's pending workloads again at most this often, after a batch that changed something.
JUDGE_SECONDS = 3.0


def workload_verdicts_keep(*, backend: Backend) -> dict:
    """Judge every pending workload of ``backend`` from the live state and keep the verdicts, replacing the last
    round's in one transaction: ``{"workloads", "seconds"}``.

    The round is stamped with the time its reading began and the newest config revision then, so a reader never
    takes it for fresher than it is. A workload waiting then without a verdict (its pending pods bound to a node
    already) is kept with an empty reason: it is not judged again by each reader.
    """
    started, clock = timezone.now(), time.monotonic()
    revision = ConfigRevision.objects.aggregate(newest=Max("id"))["newest"] or 0
    # The waiting workloads, and those of them some of whose pods run already: one read.
    waiting, running = set(), set()
    for *key, pods_running in (
        WorkloadSums.objects.filter(backend=backend, pending__gt=0)
        .order_by()
        .values_list("namespace", "workload_kind", "workload_name", "running")
    ):
        waiting.add(tuple(key))
        if pods_running > 0:
            running.add(tuple(key))
    found, where = selectors.judged_verdicts(backend.pk)
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
        }
        for key, verdict in found.items()
    ]
    rows += [
        {"backend_id": backend.pk, "namespace": namespace, "workload_kind": kind, "workload_name": name, "reason": ""}
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
        WorkloadVerdict.objects.filter(backend=backend).delete()
        bulk.insert_rows(WorkloadVerdict, rows)
        start_estimates_keep(estimates)
        VerdictRound.objects.update_or_create(
            backend=backend,
            defaults={"judged_at": started, "config_revision": revision, "workloads": len(found), "seconds": seconds},
        )
    return {"workloads": len(found), "seconds": seconds}


def workload_verdicts_keep_quietly(*, backend: Backend) -> dict | None:
    """``workload_verdicts_keep`` for a watch or a sync that must go on whatever happens to it: a failure is logged
    and the readers judge live until a round succeeds."""
    try:
        return workload_verdicts_keep(backend=backend)
    except Exception:
        logger.exception("judging the pending workloads of backend %s failed", backend.name)
        return None
