"""The pool summaries computed the straightforward way: every node and every membership, one by one.

``tests/test_pool_summary.py`` checks ``selectors.pool_gpu_summary`` and ``selectors.pool_node_summary``
against these, and ``scripts/bench_overview.py`` times both ways in the same run.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from pools.engine.accounting import NodeGpu, PoolGpuInput, pool_gpu_accounting
from pools.models import Node, NodeMembership, Pool, PoolPodUsage


def naive_gpu_summary() -> dict[int, object]:
    """Every node and membership to the engine, as the selector did before it grouped in SQL."""
    nodes = {
        str(n.pk): NodeGpu(name=str(n.pk), capacity=n.gpu, used=n.gpu_used, available=n.available)
        for n in Node.objects.all()
    }
    members = defaultdict(set)
    for pool_id, node_id in NodeMembership.objects.values_list("pool_id", "node_id"):
        members[pool_id].add(str(node_id))
    usage = {row.pool_name: (row.gpu, row.gpu_quota) for row in PoolPodUsage.objects.all()}
    inputs = []
    for pool in Pool.objects.all():
        gpu, quota = usage.get(pool.name, (Decimal(0), Decimal(0)))
        inputs.append(
            PoolGpuInput(
                name=str(pool.pk),
                nodes=frozenset(members[pool.pk]),
                guarantee=(pool.resources.get("gpu") or {}).get("guarantee", -1),
                pod_requests=((quota, False), (gpu - quota, True)),
            )
        )
    return {int(key): value for key, value in pool_gpu_accounting(inputs, nodes).items()}


def naive_node_summary() -> dict[str, dict]:
    """Node counts and free GPUs by product, one membership at a time."""
    summary: dict[str, dict] = {}
    counted = set()
    for membership in NodeMembership.objects.select_related("pool", "node"):
        n = membership.node
        entry = summary.setdefault(
            membership.pool.name, {"nodes": {"available": 0, "unavailable": 0, "cordoned": 0}, "platforms": {}}
        )
        platform = entry["platforms"].setdefault(membership.platform_name, {"nodes": 0, "free_by_product": {}})
        platform["nodes"] += 1
        if (membership.pool_id, n.pk) not in counted:
            counted.add((membership.pool_id, n.pk))
            entry["nodes"]["cordoned" if n.unschedulable else "available" if n.available else "unavailable"] += 1
        if n.available and n.gpu and n.gpu_product:
            free = max(Decimal(0), n.gpu - n.gpu_used)
            products = platform["free_by_product"]
            products[n.gpu_product] = products.get(n.gpu_product, 0) + int(free)
    return summary
