"""gpuctl's reads (SEMANTICS §8.1): ``get pools``, ``describe pool``, ``get nodes``, ``describe node``,
``get labels``, and the workloads that hold a pool back from deletion.

Each is a fixed number of queries whatever the number of nodes and pods: pool numbers come from ``pool_list``,
node counts from ``node_groups``, nodes in one query.
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Q
from django.utils import timezone

from accounts import access

from ..choices import LABEL_WRITABLE_KINDS, GpuctlPoolStatus, NodeStatus
from ..engine.errors import ConfigError, NotFound
from ..engine.permissions import VIEW_POOL
from ..models import Backend, Node, NodeMembership, Pod, Pool, placements_pairs
from .capacity import node_based_pools, pool_list
from .pools import pool_get

# Where a workload's user is read, first found wins: OSMO's label, then gpuctl's.
USER_LABELS = ("osmo.user", "runwhere.ai/user")


def number(value) -> int | float:
    """A GPU count as gpuctl prints it: whole numbers without a decimal point."""
    value = Decimal(value)
    return int(value) if value == value.to_integral_value() else float(value)


def pool_jobs(pool: Pool, *, now=None) -> list[dict]:
    """The pool's running and pending workloads (non-terminated pods), one query.

    For a label or default pool (node-based, SEMANTICS §8): the pods bound to its nodes, and the pending pods
    labelled with the pool that no node holds yet; for any other pool, the pods labelled with it.
    """
    now = now or timezone.now()
    pods = Pod.objects.filter(backend_id=pool.backend_id)
    node_based = node_based_pools(
        [{"id": pool.pk, "name": pool.name, "backend_id": pool.backend_id, "node_label": pool.node_label}],
        [pool.backend_id],
    )
    if node_based:
        names = NodeMembership.objects.filter(pool=pool).values("node__name")
        pods = pods.filter(Q(node_name__in=names) | Q(node_name="", pool_name=pool.name))
    else:
        pods = pods.filter(pool_name=pool.name)
    rows = pods.order_by("namespace", "name").values_list(
        "namespace", "name", "labels", "gpu", "phase", "node_name", "created"
    )
    return [
        {
            "namespace": namespace,
            "name": name,
            "user": next((labels[key] for key in USER_LABELS if (labels or {}).get(key)), ""),
            "gpu": number(gpu),
            "phase": phase,
            "node": node,
            "age_seconds": int((now - created).total_seconds()) if created else None,
        }
        for namespace, name, labels, gpu, phase, node, created in rows
    ]


def gpuctl_pools(*, user, names=None) -> list[dict]:
    """``get pools``: every pool ``user`` may see with its gpuctl status, GPU total/used/free and node count.

    In creation order (then id); each backend's default pool last, as gpuctl lists ``default``.
    """
    rows = sorted(
        pool_list(user=user, names=names, with_nodes=True),
        key=lambda row: (row["default"], row["created_at"], row["id"]),
    )
    return [
        {
            "name": row["name"],
            "description": row["description"],
            "status": GpuctlPoolStatus.of(status=row["status"], nodes=row["node_count"], default=row["default"]).value,
            "gpu_total": number(row["gpu"]["total_capacity"]),
            "gpu_used": number(row["gpu"]["used_on_nodes"]),  # with total and free, adds up (SEMANTICS §6.1)
            "gpu_free": number(row["gpu"]["total_free"]),
            "node_count": row["node_count"],
            "backend": row["backend"],
            "default": row["default"],
        }
        for row in rows
    ]


def _node_row(row: dict, pool_names: dict[int, str]) -> dict:
    return {
        "name": row["name"],
        "status": NodeStatus.of(available=row["available"], cordoned=row["unschedulable"]).value,
        "gpu_total": number(row["gpu"]),
        "gpu_used": number(row["gpu_used"]),
        "gpu_free": number(max(Decimal(0), row["gpu"] - row["gpu_used"])),
        "gpu_type": row["gpu_product"],
        "ip": row["address"],
        "pools": sorted({pool_names[p] for p, _ in placements_pairs(row["placements"]) if p in pool_names}),
        "backend": row["backend__name"],
    }


NODE_COLUMNS = (
    "name",
    "available",
    "unschedulable",
    "gpu",
    "gpu_used",
    "gpu_product",
    "address",
    "placements",
    "backend__name",
)


def _visible_pool_names(user) -> dict[int, str]:
    names = dict(Pool.objects.values_list("id", "name"))
    visible = set(access.visible(user, VIEW_POOL, names.values()))
    return {pool_id: name for pool_id, name in names.items() if name in visible}


def _in_pool(pool_id: int) -> Q:
    """Nodes placed in the pool, read from ``Node.placements`` (``"<pool id>:<platform>"`` words)."""
    return Q(placements__startswith=f"{pool_id}:") | Q(placements__contains=f" {pool_id}:")


def gpuctl_pool_detail(name: str, *, user) -> dict:
    """``describe pool``: the pool's row of ``get pools``, its GPU types, nodes and running and pending jobs."""
    pool = pool_get(name, user=user)
    rows = gpuctl_pools(user=user, names=[name])
    if not rows:
        raise NotFound(f"pool '{name}' does not exist")
    pool_names = _visible_pool_names(user)
    nodes = [
        _node_row(row, pool_names)
        for row in Node.objects.filter(backend_id=pool.backend_id)
        .filter(_in_pool(pool.pk))
        .order_by("name")
        .values(*NODE_COLUMNS)
    ]
    return {
        **rows[0],
        "gpu_types": sorted({node["gpu_type"] for node in nodes if node["gpu_type"]}),
        "nodes": nodes,
        "jobs": pool_jobs(pool),
    }


def gpuctl_nodes(*, user, pool: str | None = None, gpu_type: str | None = None) -> list[dict]:
    """``get nodes``: the nodes ``user`` may see, by name, with status, GPUs, GPU type, IP and pools."""
    pool_names = _visible_pool_names(user)
    nodes = Node.objects.restrict(user)
    if pool:
        ids = [pool_id for pool_id, name in pool_names.items() if name == pool]
        if not ids:
            raise NotFound(f"pool '{pool}' does not exist")
        nodes = nodes.filter(_in_pool(ids[0]))
    if gpu_type:
        nodes = nodes.filter(gpu_product=gpu_type)
    return [_node_row(row, pool_names) for row in nodes.order_by("name", "backend__name").values(*NODE_COLUMNS)]


def node_get(name: str, user, backend: str | None) -> Node:
    nodes = Node.objects.restrict(user).select_related("backend").filter(name=name)
    if backend:
        nodes = nodes.filter(backend__name=backend)
    found = list(nodes[:10])
    if not found:
        raise NotFound(f"node '{name}' does not exist")
    if len(found) > 1:
        names = ", ".join(sorted(n.backend.name for n in found))
        raise ConfigError(f"node '{name}' exists in several backends ({names}); choose one with --backend")
    return found[0]


def gpuctl_node_detail(name: str, *, user, backend: str | None = None) -> dict:
    """``describe node``: the node's row of ``get nodes``, its labels, taints, conditions, resources and pods."""
    node = node_get(name, user, backend)
    pool_names = _visible_pool_names(user)
    row = {column: getattr(node, column) for column in NODE_COLUMNS if "__" not in column}
    row["backend__name"] = node.backend.name
    now = timezone.now()
    pods = Pod.objects.filter(backend_id=node.backend_id, node_name=node.name).order_by("namespace", "name")
    return {
        **_node_row(row, pool_names),
        "labels": dict(sorted((node.labels or {}).items())),
        "taints": node.taints,
        "conditions": node.conditions,
        "unavailable_reason": node.unavailable_reason,
        "cpu": number(node.cpu),
        "memory": node.memory,
        "pods": [
            {
                "namespace": pod.namespace,
                "name": pod.name,
                "phase": pod.phase,
                "gpu": number(pod.gpu),
                "age_seconds": int((now - pod.created).total_seconds()) if pod.created else None,
            }
            for pod in pods
        ],
    }


def node_labels(name: str, *, user, key: str | None = None, backend: str | None = None) -> dict:
    """``get labels NODE [--key KEY]``: the node's labels as last synced (a node ``user`` may not see is NotFound)."""
    node = node_get(name, user, backend)
    labels = node.labels or {}
    if key is not None:
        labels = {key: labels[key]} if key in labels else {}
    return {"node": node.name, "backend": node.backend.name, "labels": dict(sorted(labels.items()))}


def label_pool_backends(*, user) -> list[str]:
    """The writable backends ``user`` may see (kubernetes or simulated: where gpuctl pools can be created)."""
    backends = Backend.objects.restrict(user).filter(kind__in=LABEL_WRITABLE_KINDS, writable=True).order_by("name")
    return list(backends.values_list("name", flat=True))
