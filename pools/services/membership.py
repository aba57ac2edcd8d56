"""Where each node belongs, and the sums of its groups.

Membership (SEMANTICS.md §5): each (pool, platform) whose merged pod template selects a node, else the backend's
default pool. A sync, a watch batch and a config change all place nodes through ``membership_recompute``, inside
the backend's inventory write lock, and keep ``NodeGroupSums`` (the nodes of one placement and state, added up) in
step with ``node_groups_refresh``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import connection

from pools import selectors
from pools.engine.membership import NodePlacer, node_availability
from pools.inventory.records import node_record
from pools.models import Backend, Node, NodeGroupSums, NodeMembership, placements_text

from .bulk import chunks, rows_table
from .topology_sums import topology_sums_refresh

# The first key of the PostgreSQL advisory lock ``inventory_write_lock`` takes; the second is the backend's id.
INVENTORY_LOCK_SPACE = 744_690_138
# ``NodeGroupSums``' columns and how a group's nodes make each one (``node_groups_refresh``).
GROUP_KEY = ("placements", "available", "unschedulable", "gpu_product")
GROUP_SUMS = {
    "nodes": "COUNT(*)",
    "gpu": "SUM(gpu)",
    "free": "SUM(CASE WHEN gpu > gpu_used THEN gpu - gpu_used ELSE 0 END)",
    "gpu_used": "SUM(gpu_used)",
    "gpu_memory": "SUM(gpu_memory)",
    "cpu": "SUM(cpu)",
    "cpu_used": "SUM(cpu_used)",
    "memory": "SUM(memory)",
    "memory_used": "SUM(memory_used)",
    "pods": "SUM(pods)",
}


def inventory_write_lock(backend: Backend) -> None:
    """Serialise the writes of this backend's nodes for the rest of the transaction.

    Every transaction that writes a backend's nodes takes it first (a sync, a watch batch, a config change's
    membership recompute): a watch batch's usage deltas are added to ``NodeGroupSums`` from the nodes as they
    were, which must not change under it, and two recomputes of the same groups must not interleave.
    PostgreSQL: a transaction-scoped advisory lock. SQLite writes one transaction at a time anyway.

    A transaction that takes both this and the config write lock (``config.config_write_lock``) takes the config
    one first, as a config change does before it recomputes memberships: the other order could deadlock with it.

    One lock order for everything that writes a backend: the config lock, then the backend's row, then this lock.
    So this takes the backend's row lock first (``FOR NO KEY UPDATE``, what an UPDATE of the row takes): a sync
    or a watch batch that wrote its nodes under this lock and then its row (``last_sync_at``), beside a config
    change that wrote the row and then recomputed memberships under this lock, deadlocked.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {Backend._meta.db_table} WHERE id = %s FOR NO KEY UPDATE", [backend.pk])
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [INVENTORY_LOCK_SPACE, backend.pk])


def node_groups_refresh(*, backend: Backend) -> None:
    """Recompute the backend's ``NodeGroupSums`` from its nodes (one DELETE and one INSERT ... SELECT), and its pools'
    ``TopologySums`` (``topology_sums_refresh``).

    Called in the transaction that moved nodes between groups or set their usage whole, after those writes: at
    the end of a sync, after a watch batch's node events, after a config change's membership recompute. It costs
    a few milliseconds per 5,000 nodes.
    """
    inventory_write_lock(backend)
    groups, nodes = NodeGroupSums._meta.db_table, Node._meta.db_table
    key = ", ".join(GROUP_KEY)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {groups} WHERE backend_id = %s", [backend.pk])
        cursor.execute(
            f"INSERT INTO {groups} (backend_id, {key}, {', '.join(GROUP_SUMS)}) "
            f"SELECT backend_id, {key}, {', '.join(GROUP_SUMS.values())} FROM {nodes} "
            f"WHERE backend_id = %s AND placements <> '' GROUP BY backend_id, {key}",
            [backend.pk],
        )
    topology_sums_refresh(backend=backend)


def membership_recompute(*, backend: Backend, node_names: Iterable[str] | None = None) -> None:
    """Recompute availability and node↔(pool, platform) membership (SEMANTICS.md §5) of a backend's nodes.

    With ``node_names`` only those nodes are looked at (a sync or a watch event changed them); without,
    every node (a config change), and then the backend's node groups too (``node_groups_refresh``); a sync
    and a watch refresh them once they have written everything. Writes only the rows that changed.
    """
    inventory_write_lock(backend)
    nodes = Node.objects.filter(backend=backend).only(
        "id", "name", "labels", "taints", "conditions", "unschedulable", "available", "unavailable_reason", "placements"
    )
    if node_names is not None:
        names = list(set(node_names))
        if not names:
            return
        nodes = [node for chunk in chunks(names) for node in nodes.filter(name__in=chunk)]
    else:
        nodes = list(nodes)
    rules = backend.node_conditions or None
    placer = Placer(backend)
    wanted = {
        (node.id, pool.id, platform_name)
        for node in nodes
        for pool, platform_name in placer.place(labels=node.labels, taints=node.taints, node_name=node.name)
    }
    placements = defaultdict(list)
    for node_id, pool_id, platform_name in wanted:
        placements[node_id].append((pool_id, platform_name))
    changed_nodes = []
    for node in nodes:
        state = node_availability(conditions=node.conditions, unschedulable=node.unschedulable, rules=rules)
        text = placements_text(placements[node.id])
        if state != (node.available, node.unavailable_reason) or text != node.placements:
            node.available, node.unavailable_reason = state
            node.placements = text
            changed_nodes.append(node)
    _nodes_placed(backend, changed_nodes)

    existing_rows = NodeMembership.objects.filter(node__backend=backend)
    if node_names is not None:
        node_ids = [node.id for node in nodes]
        existing_rows = [
            row
            for chunk in chunks(node_ids)
            for row in existing_rows.filter(node_id__in=chunk).values_list("pk", "node_id", "pool_id", "platform_name")
        ]
    else:
        existing_rows = existing_rows.values_list("pk", "node_id", "pool_id", "platform_name")
    existing = {(node_id, pool_id, platform): pk for pk, node_id, pool_id, platform in existing_rows}
    stale = [pk for key, pk in existing.items() if key not in wanted]
    for chunk in chunks(stale):
        NodeMembership.objects.filter(pk__in=chunk).delete()
    NodeMembership.objects.bulk_create(
        [NodeMembership(node_id=n, pool_id=p, platform_name=name) for n, p, name in wanted - existing.keys()],
        batch_size=1000,
    )
    if node_names is None:  # memberships of pools that moved to another backend
        NodeMembership.objects.filter(node__backend=backend).exclude(pool__backend=backend).delete()
        node_groups_refresh(backend=backend)


def _nodes_placed(backend: Backend, nodes: list[Node]) -> None:
    """Write the availability and placements of ``nodes``: one UPDATE joined to a table of them per chunk.

    Django's ``bulk_update`` builds a CASE of every row for each column: on a first sync's 5,000 nodes
    it cost seconds of Python.
    """
    table = Node._meta.db_table
    columns = {"name": "text", "available": "boolean", "unavailable_reason": "text", "placements": "text"}
    with connection.cursor() as cursor:
        for chunk in chunks(nodes, 1000):
            placed, params = rows_table(
                "placed", columns, [(n.name, n.available, n.unavailable_reason, n.placements) for n in chunk]
            )
            cursor.execute(
                f"{placed} UPDATE {table} SET available = placed.available, "
                f"unavailable_reason = placed.unavailable_reason, placements = placed.placements "
                f"FROM placed WHERE {table}.backend_id = %s AND {table}.name = placed.name",
                [*params, backend.pk],
            )


class Placer(NodePlacer):
    """Where a node of a backend belongs (``engine.membership.NodePlacer``), from the backend's pools as stored."""

    def __init__(self, backend: Backend):
        # Read now: a watcher holds its backend object for hours while the default pool may change.
        default_pool = Backend.objects.filter(pk=backend.pk).values_list("default_pool", flat=True).first()
        specs = list(selectors.platform_selection_specs(backend=backend))
        default = next((pool for pool, _, _ in specs if default_pool and pool.name == default_pool), None)
        super().__init__(
            specs,
            is_default=lambda pool: bool(default_pool) and pool.name == default_pool,
            default_platform=default.default_platform if default is not None else "",
        )


def node_pool_names(backend: Backend, nodes: list[dict]) -> dict[str, list[str]]:
    """For Kubernetes node objects not yet stored: the pools each would belong to (by name)."""
    placer = Placer(backend)
    result: dict[str, list[str]] = {}
    for obj in nodes:
        record = node_record(obj, [])
        if record is None:
            continue
        placed = placer.place(labels=record.labels, taints=record.taints, node_name=record.name)
        result[record.name] = sorted({pool.name for pool, _ in placed})
    return result
