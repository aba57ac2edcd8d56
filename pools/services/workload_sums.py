"""The workloads' sums (``WorkloadSums``): each workload's pods added up, kept by the writes that change the pods.

A full sync that changed most of a backend's pods recomputes the backend's whole set in two statements (a delete
and an ``INSERT ... SELECT`` grouping its pods); a watch batch or a small resync recomputes only the workloads of
the pods it wrote or deleted, before and after the write (a pod that moved to another workload changes both).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from pools.models import Backend, Pod, WorkloadSums

from .bulk import chunks, rows_table

# A workload: (namespace, kind, name) on one backend.
WorkloadKey = tuple[str, str, str]
_KEY_COLUMNS = {"namespace": "text", "workload_kind": "text", "workload_name": "text"}
_KEY = ("namespace", "workload_kind", "workload_name")
_TERMINATED = "('Succeeded', 'Failed')"


def _sums_select(pods: str) -> str:
    """The SELECT giving one ``WorkloadSums`` row per workload of the pods ``pods`` (a table or alias name)."""
    live_and_bound = f"{pods}.node_name <> '' AND {pods}.phase NOT IN {_TERMINATED}"
    return (
        f"SELECT {pods}.backend_id, {pods}.namespace, {pods}.workload_kind, {pods}.workload_name, "
        f"SUM({pods}.gpu), SUM(CASE WHEN {live_and_bound} THEN {pods}.gpu ELSE 0 END), COUNT(*), "
        f"SUM(CASE WHEN {pods}.phase = 'Running' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {pods}.phase = 'Pending' THEN 1 ELSE 0 END), "
        f"SUM(CASE WHEN {pods}.phase = 'Failed' THEN 1 ELSE 0 END) FROM {Pod._meta.db_table} {pods}"
    )


_COLUMNS = "backend_id, namespace, workload_kind, workload_name, gpus, held, pods, running, pending, failed"
_GROUP_BY = "GROUP BY 1, 2, 3, 4"


def workload_sums_refresh(*, backend: Backend, keys: Iterable[WorkloadKey] | None = None) -> None:
    """Recompute the sums of these workloads of ``backend`` (every one of its workloads when None) from its pods,
    in the caller's transaction: a workload left without pods loses its row."""
    sums = WorkloadSums._meta.db_table
    with connection.cursor() as cursor:
        if keys is None:
            cursor.execute(f"DELETE FROM {sums} WHERE backend_id = %s", [backend.pk])
            cursor.execute(
                f"INSERT INTO {sums} ({_COLUMNS}) {_sums_select('p')} WHERE p.backend_id = %s {_GROUP_BY}",
                [backend.pk],
            )
            return
        wanted_rows = sorted(set(keys))
        key = ", ".join(_KEY)
        for chunk in chunks(wanted_rows):
            wanted, params = rows_table("wanted", _KEY_COLUMNS, chunk)
            cursor.execute(
                f"{wanted} DELETE FROM {sums} WHERE backend_id = %s AND ({key}) IN (SELECT {key} FROM wanted)",
                [*params, backend.pk],
            )
            joined = " AND ".join(f"p.{column} = wanted.{column}" for column in _KEY)
            cursor.execute(
                f"{wanted} INSERT INTO {sums} ({_COLUMNS}) {_sums_select('p')} JOIN wanted ON {joined} "
                f"WHERE p.backend_id = %s {_GROUP_BY}",
                [*params, backend.pk],
            )


def workload_keys(rows: Iterable[dict]) -> set[WorkloadKey]:
    """The workloads of pod rows (as the sync writes them, or as ``pod_contributions`` reads them)."""
    return {(row["namespace"], row["workload_kind"], row["workload_name"]) for row in rows}
