"""What start estimates learn from and are measured against (SEMANTICS §10.1): each workload's runs, noted every
minute by the worker, and each estimate as first made, with the start that followed.

``workload_runs_record`` runs with the usage sample every minute (``usage_sample_record``): a workload seen holding
GPUs opens a run (from its pods' earliest start); a run whose workload no longer runs is finished at the last minute
it was seen; an estimate whose workload now runs gets its actual start, and one whose workload is gone unstarted is
dropped. ``start_estimates_keep`` records the estimates of a verdict round that are made for the first time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from operator import attrgetter

from django.db import transaction
from django.db.models import F, Min
from django.db.models.fields.json import KT
from django.utils import timezone

from pools.models import Pod, Project, StartEstimate, WorkloadRun, WorkloadSums
from pools.selectors.quotas import QUEUE_LABEL

from .bulk import chunks

TERMINATED = ("Succeeded", "Failed")
RUN_RETENTION = timedelta(days=30)
ESTIMATE_RETENTION = timedelta(days=8)
KEY_FIELDS = ("backend_id", "namespace", "workload_kind", "workload_name")


def running_workloads() -> dict[tuple, tuple[datetime | None, str]]:
    """Every workload whose pods hold GPUs on a node now: (backend id, namespace, kind, name) -> (its pods' earliest
    start, its project or ""). One query, grouped in the database."""
    owner, projects = {}, set()
    for name, namespaces in Project.objects.values_list("name", "namespaces"):
        projects.add(name)
        owner.update(dict.fromkeys(namespaces or (), name))
    rows = (
        Pod.objects.exclude(node_name="")
        .exclude(phase__in=TERMINATED)
        .filter(gpu__gt=0)
        .values(*KEY_FIELDS)
        .annotate(queue=KT(f"labels__{QUEUE_LABEL}"), started=Min("started"))
        .order_by()
    )
    found: dict[tuple, tuple[datetime | None, str]] = {}
    for row in rows:
        key = tuple(row[field] for field in KEY_FIELDS)
        project = row["queue"] if row["queue"] in projects else owner.get(row["namespace"], "")
        started, known = found.get(key, (None, ""))
        if row["started"] is not None and (started is None or row["started"] < started):
            started = row["started"]
        found[key] = (started, known or project)
    return found


def workload_runs_record(*, at: datetime | None = None) -> dict:
    """Note this minute's running workloads: open, keep and finish their runs, and give the estimates of workloads
    that started their actual start. Returns ``{"running", "finished", "started"}``."""
    at = at or timezone.now()
    running = running_workloads()
    pending = set(WorkloadSums.objects.filter(pending__gt=0).order_by().values_list(*KEY_FIELDS))
    with transaction.atomic():
        open_runs = {
            row[:4]: row[4] for row in WorkloadRun.objects.filter(finished__isnull=True).values_list(*KEY_FIELDS, "pk")
        }
        ended = [pk for key, pk in open_runs.items() if key not in running]
        for chunk in chunks(ended):
            WorkloadRun.objects.filter(pk__in=chunk).update(finished=F("last_seen"))  # the last minute seen running
        WorkloadRun.objects.filter(finished__isnull=True).update(last_seen=at)  # the ended ones are finished now
        WorkloadRun.objects.bulk_create(
            [
                WorkloadRun(
                    backend_id=key[0],
                    namespace=key[1],
                    workload_kind=key[2],
                    workload_name=key[3],
                    project=project,
                    started=min(started or at, at),
                    last_seen=at,
                )
                for key, (started, project) in running.items()
                if key not in open_runs
            ],
            batch_size=1000,
            ignore_conflicts=True,
        )
        begun, gone = 0, []
        for pk, *key in StartEstimate.objects.filter(started__isnull=True).values_list("pk", *KEY_FIELDS):
            key = tuple(key)
            if key in running:
                begun += StartEstimate.objects.filter(pk=pk).update(started=min(running[key][0] or at, at))
            elif key not in pending:
                gone.append(pk)  # gone without starting: nothing to compare
        for chunk in chunks(gone):
            StartEstimate.objects.filter(pk__in=chunk).delete()
    return {"running": len(running), "finished": len(ended), "started": begun}


def start_estimates_keep(rows: list[StartEstimate]) -> int:
    """Record these estimates where their workload has none open yet: an estimate is measured as first made. The
    open ones are read first, so a round whose workloads were all estimated before writes nothing; one recorded by
    another round meanwhile is left as it is. How many were new."""
    if not rows:
        return 0
    key = attrgetter("backend_id", "namespace", "workload_kind", "workload_name")
    recorded = set(
        StartEstimate.objects.filter(backend_id__in={row.backend_id for row in rows}, started__isnull=True)
        .order_by()
        .values_list("backend_id", "namespace", "workload_kind", "workload_name")
    )
    new = [row for row in rows if key(row) not in recorded]
    return len(StartEstimate.objects.bulk_create(new, batch_size=1000, ignore_conflicts=True))


def workload_runs_compact(*, now: datetime | None = None) -> int:
    """Drop runs finished longer ago than the runtimes are learned over, and estimates older than the accuracy
    reads."""
    now = now or timezone.now()
    dropped = WorkloadRun.objects.filter(finished__lt=now - RUN_RETENTION).delete()[0]
    return dropped + StartEstimate.objects.filter(made_at__lt=now - ESTIMATE_RETENTION).delete()[0]
