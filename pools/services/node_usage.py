"""What pods add to their nodes and pool labels: requests, GPUs and pod counts, kept on the rows they add to.

Reads cost a few thousand rows instead of a scan of every pod. A full sync recomputes the sums (``usage_refresh``);
a watch batch moves them by the difference of the pods it changed (``usage_apply_deltas``), node groups included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.db import connection
from django.db.models import Count, Q, Sum

from pools.models import Backend, Node, NodeGroupSums, Pod, PoolPodUsage

from .bulk import chunks, rows_table, upsert_rows
from .membership import GROUP_KEY
from .topology_sums import topology_sums_refresh

# What a pod adds to its node's and pool label's usage and to its workload's sums, as ``pod_contributions`` reads it.
POD_CONTRIBUTION_COLUMNS = (
    "namespace",
    "name",
    "workload_kind",
    "workload_name",
    "resource_version",
    "node_name",
    "pool_name",
    "preemptible",
    "cpu",
    "memory",
    "storage",
    "gpu",
)


def pod_contributions(backend: Backend, keys: list) -> dict[tuple[str, str], dict]:
    """The stored state of the given pods: version, workload, node, pool label, priority and requests, by key.

    The keys are joined as a table (``rows_table``) on the unique index's columns, in one query per chunk.
    """
    table = Pod._meta.db_table
    selected = ", ".join(f"{table}.{column}" for column in POD_CONTRIBUTION_COLUMNS)
    result = {}
    with connection.cursor() as cursor:
        for chunk in chunks(list(set(keys))):
            wanted, params = rows_table("wanted", {"namespace": "text", "name": "text"}, chunk)
            cursor.execute(
                f"{wanted} SELECT {selected} FROM {table} JOIN wanted ON {table}.namespace = wanted.namespace "
                f"AND {table}.name = wanted.name WHERE {table}.backend_id = %s",
                [*params, backend.pk],
            )
            for row in cursor.fetchall():
                values = dict(zip(POD_CONTRIBUTION_COLUMNS, row, strict=True))
                for column in ("cpu", "gpu"):  # SQLite hands decimals back as floats
                    if not isinstance(values[column], Decimal):
                        values[column] = Decimal(str(values[column]))
                values["preemptible"] = bool(values["preemptible"])
                result[(values["namespace"], values["name"])] = values
    return result


USAGE_FIELDS = {"cpu_used": "cpu", "memory_used": "memory", "storage_used": "storage", "gpu_used": "gpu"}
# What a node keeps of the pods bound to it: their requests (``USAGE_FIELDS``) and how many there are.
NODE_USAGE_COLUMNS = (*USAGE_FIELDS, "pods")
# The usage columns a node group adds up (``NodeGroupSums``): a node's own, but its storage.
NODE_GROUP_USAGE = tuple(column for column in NODE_USAGE_COLUMNS if column != "storage_used")
NODE_DELTA_COLUMNS = {
    "name": "text",
    "cpu_used": "decimal",
    "memory_used": "bigint",
    "storage_used": "bigint",
    "gpu_used": "decimal",
    "pods": "integer",
}


def _group_deltas_update() -> str:
    """The UPDATE that adds a table ``delta`` of node usage deltas (``NODE_DELTA_COLUMNS``) to ``NodeGroupSums``.

    Run before the nodes themselves change: a group's free GPUs move by each node's ``max(0, gpu - used)`` after
    the delta less the one before, which reads the node's usage before it. Parameters: the backend's id, twice.
    """
    groups, nodes = NodeGroupSums._meta.db_table, Node._meta.db_table
    used = f"{nodes}.gpu_used + delta.gpu_used"
    free_after = f"CASE WHEN {nodes}.gpu > {used} THEN {nodes}.gpu - ({used}) ELSE 0 END"
    free_before = f"CASE WHEN {nodes}.gpu > {nodes}.gpu_used THEN {nodes}.gpu - {nodes}.gpu_used ELSE 0 END"
    moved = [f"SUM(delta.{column}) AS {column}" for column in NODE_GROUP_USAGE]
    key = ", ".join(f"{nodes}.{column}" for column in GROUP_KEY)
    sets = ", ".join(f"{column} = {groups}.{column} + moved.{column}" for column in (*NODE_GROUP_USAGE, "free"))
    return (
        f"UPDATE {groups} SET {sets} FROM (SELECT {key}, {', '.join(moved)}, SUM({free_after} - {free_before}) AS free "
        f"FROM {nodes} JOIN delta ON {nodes}.name = delta.name "
        f"WHERE {nodes}.backend_id = %s AND {nodes}.placements <> '' GROUP BY {key}) AS moved "
        f"WHERE {groups}.backend_id = %s AND "
        + " AND ".join(f"{groups}.{column} = moved.{column}" for column in GROUP_KEY)
    )


def usage_apply_deltas(*, backend: Backend, removed: Iterable[dict], added: Iterable[dict]) -> None:
    """Move stored usage by what pods stopped adding (``removed``) and started adding (``added``).

    A watch batch changes a few hundred pods of a cluster with hundreds of thousands; adding their
    difference costs three statements (the node groups, the nodes, the pool labels), where recomputing a pool
    label's sum would read all its pods, and the topology sums of the domains whose nodes' GPUs moved. A full sync
    recomputes everything now and then.
    """
    nodes: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    pools: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for sign, rows in ((-1, removed), (1, added)):
        for row in rows:
            if row["node_name"]:
                for field, source in USAGE_FIELDS.items():
                    nodes[row["node_name"]][field] += sign * Decimal(row[source])
                nodes[row["node_name"]]["pods"] += sign
            if row["pool_name"]:
                gpu = sign * Decimal(row["gpu"])
                pools[row["pool_name"]][0] += gpu
                if not row["preemptible"]:
                    pools[row["pool_name"]][1] += gpu
    node_rows = [
        (name, d["cpu_used"], int(d["memory_used"]), int(d["storage_used"]), d["gpu_used"], int(d["pods"]))
        for name, d in nodes.items()
        if any(d.values())
    ]
    pool_rows = [(name, gpu, quota) for name, (gpu, quota) in pools.items() if gpu or quota]
    with connection.cursor() as cursor:
        table = Node._meta.db_table
        for chunk in chunks(node_rows, 1000):
            delta, params = rows_table("delta", NODE_DELTA_COLUMNS, chunk)
            # The groups first: their free GPUs are worked out from the nodes' usage before the delta.
            cursor.execute(f"{delta} {_group_deltas_update()}", [*params, backend.pk, backend.pk])
            sets = ", ".join(f"{column} = {table}.{column} + delta.{column}" for column in NODE_USAGE_COLUMNS)
            cursor.execute(
                f"{delta} UPDATE {table} SET {sets} FROM delta "
                f"WHERE {table}.backend_id = %s AND {table}.name = delta.name",
                [*params, backend.pk],
            )
        table = PoolPodUsage._meta.db_table
        for chunk in chunks(pool_rows, 1000):
            delta, params = rows_table("delta", {"pool_name": "text", "gpu": "decimal", "gpu_quota": "decimal"}, chunk)
            cursor.execute(
                f"{delta} INSERT INTO {table} (backend_id, pool_name, gpu, gpu_quota) "
                f"SELECT %s, pool_name, gpu, gpu_quota FROM delta WHERE true "
                f"ON CONFLICT (backend_id, pool_name) DO UPDATE SET gpu = {table}.gpu + excluded.gpu, "
                f"gpu_quota = {table}.gpu_quota + excluded.gpu_quota",
                [*params, backend.pk],
            )
    moved = [name for name, d in nodes.items() if d["gpu_used"]]
    if moved:  # the free GPUs of these nodes' domains
        topology_sums_refresh(backend=backend, node_names=moved)


def usage_refresh(*, backend: Backend, node_names: set[str] | None = None, pool_names: set[str] | None = None) -> None:
    """Recompute the stored usage of these nodes and pool labels (all of the backend's when None) from its pods.

    Nodes keep the requests and the number of the pods bound to them; ``PoolPodUsage`` keeps each pool label's
    GPUs. Reads then cost a few thousand rows instead of a scan of every pod.
    """
    pods = Pod.objects.filter(backend=backend).order_by()
    nodes = Node.objects.filter(backend=backend).only("id", "name", *NODE_USAGE_COLUMNS)
    if node_names is None or node_names:
        selected_pods = pods.exclude(node_name="")
        if node_names is not None:
            names = [name for name in node_names if name]
            nodes = [node for chunk in chunks(names) for node in nodes.filter(name__in=chunk)]
            selected_pods = selected_pods.filter(node_name__in=names)
        sums = {
            row["node_name"]: row
            for row in selected_pods.values("node_name").annotate(
                cpu_used=Sum("cpu"),
                memory_used=Sum("memory"),
                storage_used=Sum("storage"),
                gpu_used=Sum("gpu"),
                pods=Count("id"),
            )
        }
        changed = []
        for node in nodes:
            row = sums.get(node.name, {})
            values = {field: row.get(field) or 0 for field in NODE_USAGE_COLUMNS}
            if any(getattr(node, field) != values[field] for field in NODE_USAGE_COLUMNS):
                changed.append({"backend_id": backend.pk, "name": node.name, **values})
        upsert_rows(Node, changed, unique_fields=["backend", "name"], update_fields=list(NODE_USAGE_COLUMNS))
    if pool_names is None or pool_names:
        labelled = pods.exclude(pool_name="")
        stale = PoolPodUsage.objects.filter(backend=backend)
        if pool_names is not None:
            names = [name for name in pool_names if name]
            labelled = labelled.filter(pool_name__in=names)
            stale = stale.filter(pool_name__in=names)
        rows = labelled.values("pool_name").annotate(total=Sum("gpu"), quota=Sum("gpu", filter=Q(preemptible=False)))
        stale.delete()
        PoolPodUsage.objects.bulk_create(
            [
                PoolPodUsage(
                    backend=backend, pool_name=row["pool_name"], gpu=row["total"] or 0, gpu_quota=row["quota"] or 0
                )
                for row in rows
            ]
        )
