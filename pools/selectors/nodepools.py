"""Run:ai's node-pools view (SEMANTICS §8): one row per pool with what its nodes hold and what runs on them.

Read from ``node_groups``, so the list costs the same few queries for any number of nodes, pods and pools.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from accounts import access

from ..choices import NodePoolColumn, NodePoolStatus
from ..engine.permissions import VIEW_POOL
from ..filtersets import NodePoolFilterSet, filtered
from ..models import Pool
from .capacity import node_groups

# What each row adds up over its pool's node groups: ``NodeGroup`` field per column.
NODE_POOL_SUMS = {
    NodePoolColumn.NODES: "nodes",
    NodePoolColumn.GPU_DEVICES: "gpu",
    NodePoolColumn.GPU_MEMORY: "gpu_memory",
    NodePoolColumn.ALLOCATED_GPUS: "used",
    NodePoolColumn.CPUS: "cpu",
    NodePoolColumn.CPU_MEMORY: "memory",
    NodePoolColumn.ALLOCATED_CPUS: "cpu_used",
    NodePoolColumn.ALLOCATED_CPU_MEMORY: "memory_used",
    NodePoolColumn.WORKLOADS: "pods",
}


def node_pool_list(*, user, filters: Mapping | None = None) -> list[dict]:
    """The rows of the node-pools page and ``/api/node_pools/``: every pool ``user`` may see (as on the
    overview), filtered and sorted as ``NodePoolFilterSet`` says (its errors raise ``ConfigError``).

    Each row has the ``NodePoolColumn`` fields. A pool's numbers add up its nodes, each counted once however
    many of the pool's platforms select it: nodes, allocatable GPUs and their memory (bytes), CPUs and memory,
    and the requests of the non-terminated pods bound to them (GPU fractions added up, not rounded) and how
    many there are. Every node counts, available or not. ``status`` is ``Ready`` with at least one node, else
    ``Empty``; ``label_key`` and ``label_value`` are empty for a pool its platforms define; ``default`` marks a
    backend's default pool. Three queries (the pools, the reader's roles once per request, the node groups).
    """
    filterset = filtered(NodePoolFilterSet, filters, Pool.objects.select_related("backend").order_by("name"))
    pools = list(filterset.qs)
    visible = set(access.visible(user, VIEW_POOL, [pool.name for pool in pools]))
    pools = [pool for pool in pools if pool.name in visible]
    totals = {pool.pk: dict.fromkeys(NODE_POOL_SUMS.values(), Decimal(0)) for pool in pools}
    for group in node_groups({pool.backend_id for pool in pools}):
        for pool_id in group.pool_ids & totals.keys():
            sums = totals[pool_id]
            for field in sums:
                sums[field] += getattr(group, field)
    rows = []
    for pool in pools:
        sums = totals[pool.pk]
        label = pool.node_label or {}
        rows.append(
            {
                NodePoolColumn.NODE_POOL: pool.name,
                NodePoolColumn.STATUS: str(NodePoolStatus.READY if sums["nodes"] else NodePoolStatus.EMPTY),
                NodePoolColumn.LABEL_KEY: label.get("key", ""),
                NodePoolColumn.LABEL_VALUE: label.get("value", ""),
                **{column: _number(column, sums[field]) for column, field in NODE_POOL_SUMS.items()},
                NodePoolColumn.GPU_PLACEMENT_STRATEGY: pool.gpu_placement_strategy,
                NodePoolColumn.CPU_PLACEMENT_STRATEGY: pool.cpu_placement_strategy,
                NodePoolColumn.LAST_UPDATE: pool.updated_at,
                NodePoolColumn.CREATION_TIME: pool.created_at,
                NodePoolColumn.BACKEND: pool.backend.name,
                NodePoolColumn.DEFAULT: pool.backend.default_pool == pool.name,
            }
        )
    rows = [{str(key): value for key, value in row.items()} for row in rows]
    cleaned = filterset.form.cleaned_data
    if cleaned.get("status"):
        rows = [row for row in rows if row["status"] == cleaned["status"]]
    if cleaned.get("sort"):
        column = cleaned["sort"].lstrip("-")
        # Stable: rows equal in the column stay in name order, whichever the direction.
        rows.sort(key=lambda row: _sort_key(row[column]), reverse=cleaned["sort"].startswith("-"))
    return rows


# Columns counted in whole units; the others (GPUs, CPUs) may hold fractions.
WHOLE = {
    NodePoolColumn.NODES,
    NodePoolColumn.GPU_MEMORY,
    NodePoolColumn.CPU_MEMORY,
    NodePoolColumn.ALLOCATED_CPU_MEMORY,
    NodePoolColumn.WORKLOADS,
}


def _number(column: NodePoolColumn, value) -> int | float:
    return int(value) if column in WHOLE else float(value)


def _sort_key(value):
    return value.casefold() if isinstance(value, str) else value
