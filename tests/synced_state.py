"""What a sync leaves in the database for one backend, comparable between two syncs (no ids)."""

from __future__ import annotations

from pools.models import Node, NodeGroupSums, NodeMembership, Pod, PoolPodUsage, WorkloadSums
from pools.services import inventory as inventory_service
from pools.services.node_usage import NODE_USAGE_COLUMNS

NODE_COLUMNS = (
    *inventory_service.NODE_FIELDS,
    *NODE_USAGE_COLUMNS,
    "available",
    "unavailable_reason",
    "placements",
)


def database_state(backend) -> tuple[list, list, list, list, list, list]:
    """Every synced column of the backend's nodes and pods, their usage, memberships, node groups and workloads'
    sums, sorted."""
    nodes = sorted(
        tuple(str(value) for value in row)
        for row in Node.objects.filter(backend=backend).values_list("name", *NODE_COLUMNS)
    )
    pods = sorted(
        tuple(str(value) for value in row)
        for row in Pod.objects.filter(backend=backend).values_list("namespace", "name", *inventory_service.POD_FIELDS)
    )
    usage = sorted(PoolPodUsage.objects.filter(backend=backend).values_list("pool_name", "gpu", "gpu_quota"))
    memberships = sorted(
        NodeMembership.objects.filter(node__backend=backend).values_list("node__name", "pool__name", "platform_name")
    )
    groups = sorted(
        tuple(str(value) for value in row)
        for row in NodeGroupSums.objects.filter(backend=backend).values_list(
            *(field.name for field in NodeGroupSums._meta.concrete_fields if field.name not in ("id", "backend"))
        )
    )
    workloads = sorted(
        tuple(str(value) for value in row)
        for row in WorkloadSums.objects.filter(backend=backend).values_list(
            *(field.name for field in WorkloadSums._meta.concrete_fields if field.name not in ("id", "backend"))
        )
    )
    return nodes, pods, usage, memberships, groups, workloads
