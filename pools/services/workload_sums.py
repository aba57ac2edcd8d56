"""The workloads' sums (``WorkloadSums``): each workload's pods added up, kept by the writes that change the pods.

A full sync that changed most of a backend's pods recomputes the backend's whole set in two statements (a delete
and an ``INSERT ... SELECT`` grouping its pods as ``selectors.workload_sums`` does); a watch batch or a small resync
recomputes only the workloads of the pods it wrote or deleted, before and after the write (a pod that moved to
another workload changes both).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from pools.models import Backend, Pod, WorkloadSums
from pools.selectors.workload_keys import workload_key_condition
from pools.selectors.workloads import workload_sums

from .bulk import chunks

# A workload: (namespace, kind, name) on one backend.
WorkloadKey = tuple[str, str, str]
COLUMNS = ("backend_id", "namespace", "workload_kind", "workload_name", "gpus", "held", "pods", "running", "pending",
           "failed")  # fmt: skip


def workload_sums_refresh(*, backend: Backend, keys: Iterable[WorkloadKey] | None = None) -> None:
    """Recompute the sums of these workloads of ``backend`` (every one of its workloads when None) from its pods,
    in the caller's transaction: a workload left without pods loses its row.

    The rows are ``selectors.workload_sums`` of the pods, inserted by the database (``INSERT ... SELECT``). Keys are
    matched one ``IN`` list per column, which may take in a few more workloads than asked: those are recomputed
    too, to what they were."""
    wanted = sorted(set(keys)) if keys is not None else None
    for chunk in chunks(wanted) if wanted is not None else [None]:
        pods = Pod.objects.filter(backend=backend).order_by()
        kept = WorkloadSums.objects.filter(backend=backend)
        if chunk is not None:
            matching = workload_key_condition([(backend.pk, *key) for key in chunk])
            pods, kept = pods.filter(matching), kept.filter(matching)
        kept.delete()
        select, params = workload_sums(pods).order_by().query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {WorkloadSums._meta.db_table} ({', '.join(COLUMNS)}) {select}", params)


def workload_keys(rows: Iterable[dict]) -> set[WorkloadKey]:
    """The workloads of pod rows (as the sync writes them, or as ``pod_contributions`` reads them)."""
    return {(row["namespace"], row["workload_kind"], row["workload_name"]) for row in rows}
