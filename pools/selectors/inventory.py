"""Reads of the synced inventory: backends, nodes, pods, memberships, the node table and node checks.

The node table (``resource_index`` → ``resource_numbers``) is what the nodes page, ``/api/resources/`` and
``poolctl resource list`` show; ``NodeFilterSet`` (pools.filtersets) filters it for all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import NamedTuple

from django.db.models import Count, DecimalField, F, Max, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from accounts import access

from ..choices import BackendKind, NodeStatus
from ..engine.accounting import resource_type, usage_pair
from ..engine.errors import ConfigError, EngineError, NotFound
from ..engine.permissions import LIST_FLEET, VIEW_POOL
from ..engine.validation import NodeResources, check_request, parse_rules, requested_amounts
from ..filtersets import NodeFilterSet, filtered
from ..models import (
    Backend,
    Node,
    NodeMembership,
    Platform,
    Pod,
    Pool,
    ResourceValidation,
    backend_status,
    placements_pairs,
)
from ..querysets import node_status_q, visible_pool_ids
from .pools import DEFAULT_PLATFORM, platform_validation_names, pool_get, pool_platform_render, pool_platforms
from .whatif import project_quota_check

GI = Decimal(1024**3)


# A node's free GPUs, never negative (a node may report more in use than allocatable).
NODE_FREE_GPUS = Greatest(
    F("gpu") - F("gpu_used"), Value(0), output_field=DecimalField(max_digits=14, decimal_places=3)
)


def node_usage(nodes: Iterable[Node]) -> dict[int, dict[str, Decimal]]:
    """Requests of the non-terminated pods bound to each node, by node id (kept on the node by sync)."""
    return {
        node.pk: {
            "cpu": Decimal(node.cpu_used),
            "memory": Decimal(node.memory_used),
            "storage": Decimal(node.storage_used),
            "gpu": Decimal(node.gpu_used),
        }
        for node in nodes
    }


def pool_check(
    *,
    pool_name: str,
    user,
    platform: str | None = None,
    user_values: dict | None = None,
    project: str | None = None,
) -> dict:
    """Would this request fit? Static rules once, per-node rules against each member node (SEMANTICS.md §4).

    Each node that may hold it also says whether it could start there now or would wait for free resources
    (``start``, ``shortfalls``; ``starts`` and ``start_now_nodes`` for the whole platform). With ``project``,
    ``quota`` says where the request's GPUs would put that project on the pool (``whatif.project_quota_check``;
    a project ``user`` may not see is ``NotFound``); without, ``quota`` is None.
    """
    pool = pool_get(pool_name, user=user)
    rendered = pool_platform_render(pool, platform, user_values)
    platform_name = rendered["platform"]
    platform_obj = pool_platforms(pool)[platform_name]
    rules = []
    sets = dict(
        ResourceValidation.objects.filter(name__in=platform_validation_names(pool, platform_obj)).values_list(
            "name", "rules"
        )
    )
    for name in platform_validation_names(pool, platform_obj):
        if name not in sets:
            raise ConfigError(f"pool '{pool.name}' names resource validation '{name}', which does not exist")
        rules.extend(parse_rules(sets[name], source=name))
    nodes = list(Node.objects.filter(memberships__pool=pool, memberships__platform_name=platform_name).order_by("name"))
    usage = node_usage(nodes)
    zero = {"cpu": Decimal(0), "memory": Decimal(0), "storage": Decimal(0), "gpu": Decimal(0)}
    resources = []
    for node in nodes:
        used = usage.get(node.pk, zero)
        resources.append(
            NodeResources(
                name=node.name,
                cpu=node.cpu,
                gpu=node.gpu,
                memory=Decimal(node.memory),
                storage=Decimal(node.storage),
                free_cpu=node.cpu - used["cpu"],
                free_gpu=node.gpu - used["gpu"],
                free_memory=Decimal(node.memory) - used["memory"],
                free_storage=Decimal(node.storage) - used["storage"],
                gpu_product=node.gpu_product,
                available=node.available,
                reason=node.unavailable_reason,
            )
        )
    try:
        verdict = check_request(rules, rendered["variables"], resources, platform=platform_name)
    except EngineError as exc:  # a rule that costs more to render than a render may (SEMANTICS §7.3)
        raise ConfigError(str(exc)) from None
    quota = None
    if project:
        gpu = requested_amounts(rendered["variables"]).get("gpu", Decimal(0))
        quota = project_quota_check(user=user, pool_name=pool.name, project=project, gpu=gpu)
    return {"pool": pool.name, "platform": platform_name, **verdict.as_dict(), "quota": quota}


class NodeTableRow(NamedTuple):
    """One row of the node table without its numbers: what filtering, sorting and paging need."""

    node_id: int
    node: str
    backend: str
    pool: str
    platform: str
    type: str
    status: str  # a NodeStatus
    gpu_product: str


def resource_index(*, user, filters: Mapping | None = None) -> list[NodeTableRow]:
    """The node table as light tuples: one row per (node, pool, platform) and one per UNUSED node, by name.

    The nodes page, ``/api/resources/`` and ``poolctl resource list`` all call this with the parameters they
    were given; ``NodeFilterSet`` says what each means (its errors raise ``ConfigError``). Only rows of pools
    ``user`` may see, and UNUSED nodes only for those allowed ``LIST_FLEET`` (``Node.objects.restrict``); a
    pool named in the filters that ``user`` may not see is ``NotFound``, like a platform that one named pool
    does not have. ``resource_numbers`` adds the numbers to the rows a caller keeps.
    """
    filterset = filtered(NodeFilterSet, filters, Node.objects.restrict(user))
    pools, platforms = filterset.form.cleaned_data.get("pool"), filterset.form.cleaned_data.get("platform")
    pool_names = dict(Pool.objects.values_list("id", "name"))
    visible = set(access.visible(user, VIEW_POOL, pool_names.values()))
    for name in pools or ():
        if name not in visible:
            raise NotFound(f"pool '{name}' does not exist")
    if pools and len(pools) == 1 and platforms:
        offered = set(Platform.objects.filter(pool__name=pools[0]).values_list("name", flat=True)) or {DEFAULT_PLATFORM}
        missing = [platform for platform in platforms if platform not in offered]
        if missing:
            raise NotFound(f"pool '{pools[0]}' has no platform '{missing[0]}'")
    show_unused = access.allows(user, LIST_FLEET) and not pools and not platforms
    nodes = filterset.qs.order_by("name").values_list(
        "id", "name", "backend__name", "placements", "available", "unschedulable", "gpu_product"
    )
    rows = []
    for node_id, name, backend, placements, available, cordoned, product in nodes:
        pairs = sorted(
            (pool_names[p], platform_name) for p, platform_name in placements_pairs(placements) if p in pool_names
        )
        kind = resource_type(len({pool_name for pool_name, _ in pairs}))
        status = NodeStatus.of(available=available, cordoned=cordoned).value
        for pool_name, platform_name in pairs or [("", "")]:
            if not pool_name:
                if not show_unused:
                    continue
            elif (
                pool_name not in visible
                or (pools and pool_name not in pools)
                or (platforms and platform_name not in platforms)
            ):
                continue
            rows.append(NodeTableRow(node_id, name, backend, pool_name, platform_name, kind, status, product))
    return rows


def node_filter_choices(*, user) -> dict[str, list[str]]:
    """What the node filters offer ``user``: the pools and platforms they may see, the GPU products of their nodes."""
    seen = visible_pool_ids(user)
    platforms = Platform.objects.filter(pool_id__in=list(seen)).values_list("name", flat=True)
    nodes = Node.objects.restrict(user).exclude(gpu_product="").order_by("gpu_product")
    return {
        "pools": sorted(name for _, name in seen.values()),
        "platforms": sorted(set(platforms)),
        "products": list(nodes.values_list("gpu_product", flat=True).distinct()),
    }


def resource_numbers(index: Iterable[NodeTableRow]) -> dict[int, dict]:
    """By node id, for the nodes of these index rows: availability, GPU, CPU, memory and storage used of
    capacity, MIG devices by profile, time-slicing. A node deleted since the index was read is missing."""
    ids = list({row.node_id for row in index})
    # The node table's number columns only: labels, taints and conditions are the biggest part of a row.
    nodes = [
        node
        for chunk in range(0, len(ids), 5000)
        for node in Node.objects.filter(pk__in=ids[chunk : chunk + 5000]).defer(
            "labels", "taints", "conditions", "allocatable"
        )
    ]
    usage = node_usage(nodes)
    mig = node_mig_usage(nodes)
    return {
        node.pk: {
            "available": node.available,
            "reason": node.unavailable_reason,
            "gpu": _pair(usage[node.pk]["gpu"], node.gpu),
            "cpu": _pair(usage[node.pk]["cpu"], node.cpu),
            "memory_gi": _pair(usage[node.pk]["memory"], Decimal(node.memory), GI),
            "storage_gi": _pair(usage[node.pk]["storage"], Decimal(node.storage), GI),
            "mig": mig.get(node.pk, {}),
            "time_sliced": node.gpu_replicas > 1,
        }
        for node in nodes
    }


def resource_rows(index: list[NodeTableRow]) -> list[dict]:
    """The index rows with their numbers, in the index's order (rows of nodes deleted meanwhile left out)."""
    numbers = resource_numbers(index)
    return [
        {
            "node": row.node,
            "backend": row.backend,
            "pool": row.pool,
            "platform": row.platform,
            "type": row.type,
            "status": row.status,
            "gpu_product": row.gpu_product,
            **numbers[row.node_id],
        }
        for row in index
        if row.node_id in numbers
    ]


def resource_list(*, user, filters: Mapping | None = None) -> list[dict]:
    """The node table with its numbers: ``poolctl resource list``, ``/api/resources/``, a pool's node list."""
    return resource_rows(resource_index(user=user, filters=filters))


def node_mig_usage(nodes: list[Node]) -> dict[int, dict[str, dict]]:
    """MIG devices per profile of the nodes that have them: ``{profile: {"used", "capacity"}}`` by node id."""
    mig_nodes = {(node.backend_id, node.name): node for node in nodes if node.mig_devices}
    result = {
        node.pk: {profile: {"used": 0, "capacity": count} for profile, count in sorted(node.mig_devices.items())}
        for node in mig_nodes.values()
    }
    if not mig_nodes:
        return result
    pods = (
        Pod.objects.filter(backend_id__in={b for b, _ in mig_nodes}, node_name__in={n for _, n in mig_nodes})
        .exclude(mig_devices={})
        .values_list("backend_id", "node_name", "mig_devices")
    )
    for backend_id, node_name, devices in pods:
        node = mig_nodes.get((backend_id, node_name))
        if node is None:
            continue
        for profile, count in devices.items():
            entry = result[node.pk].setdefault(profile, {"used": 0, "capacity": 0})
            entry["used"] = min(entry["capacity"], entry["used"] + count)
    return result


def _pair(used: Decimal, capacity: Decimal, unit: Decimal = Decimal(1)) -> dict:
    used_out, capacity_out = usage_pair(used, capacity, unit)
    return {"used": used_out, "capacity": capacity_out}


def backend_health(*, user) -> list[dict]:
    """Per backend ``user`` may see: status, last contact, last sync duration and error, ``nodes`` by status."""
    rows = (
        Backend.objects.restrict(user)
        .order_by("name")
        .annotate(
            **{
                f"nodes_{status}": Count("nodes", filter=node_status_q(status, prefix="nodes__"))
                for status in NodeStatus
            }
        )
        .values(
            "name",
            "kind",
            "last_heartbeat",
            "last_sync_at",
            "last_sync_duration",
            "last_sync_error",
            "prometheus_url",
            "utilization_at",
            "utilization_error",
            *(f"nodes_{status}" for status in NodeStatus),
        )
    )
    now = timezone.now()
    return [
        {
            **{key: value for key, value in row.items() if not key.startswith("nodes_") and key != "prometheus_url"},
            "status": backend_status(row["last_heartbeat"], now),
            "nodes": {status.value: row[f"nodes_{status}"] for status in NodeStatus},
            "utilization_source": _utilization_source(row["kind"], row["prometheus_url"]),
        }
        for row in rows
    ]


def _utilization_source(kind: str, prometheus_url: str) -> str:
    """``utilization_source`` of a backend read as values (its kind and Prometheus URL)."""
    from .utilization import utilization_source

    return utilization_source(Backend(kind=kind, prometheus_url=prometheus_url or ""))


def pool_names_visible(*, user) -> list[str]:
    """The names of the pools ``user`` may see, sorted (what a page's pool filter offers)."""
    return sorted(name for _, name in visible_pool_ids(user).values())


def utilization_read_at(*, user):
    """When GPU utilization was last read on a backend of the pools ``user`` may see (None: never)."""
    seen = visible_pool_ids(user)
    backends = Backend.objects.filter(id__in={backend_id for backend_id, _ in seen.values()})
    return backends.aggregate(at=Max("utilization_at"))["at"]


def pool_workloads(pool: Pool, *, user_label: str = "osmo.user") -> list[dict]:
    """The pool's non-terminated pods grouped by namespace and user: running, pending and their GPUs (one query)."""
    groups: dict[tuple[str, str], dict] = {}
    pods = Pod.objects.filter(backend_id=pool.backend_id, pool_name=pool.name)
    for namespace, labels, phase, gpu in pods.values_list("namespace", "labels", "phase", "gpu"):
        user = (labels or {}).get(user_label, "")
        group = groups.setdefault(
            (namespace, user), {"namespace": namespace, "user": user, "running": 0, "pending": 0, "gpu": Decimal(0)}
        )
        if phase == "Pending":
            group["pending"] += 1
        else:
            group["running"] += 1
        group["gpu"] += gpu
    return [{**group, "gpu": float(group["gpu"])} for _, group in sorted(groups.items())]


def node_details(node_ids: Iterable[int]) -> dict[int, dict]:
    """Labels, taints, GPU product, backend and cordon state of nodes by id, for the node table (one query).

    By id, not name: two backends may each have a node of the same name.
    """
    rows = Node.objects.filter(pk__in=set(node_ids)).values_list(
        "id", "backend__name", "labels", "taints", "gpu_product", "unschedulable"
    )
    return {
        node_id: {
            "backend": backend,
            "labels": labels or {},
            "taints": taints or [],
            "gpu_product": product,
            "cordoned": cordoned,
        }
        for node_id, backend, labels, taints, product, cordoned in rows
    }


def backends_visible(*, user):
    """Backends ``user`` may read."""
    return Backend.objects.restrict(user)


def nodes_visible(*, user):
    """Nodes of the pools ``user`` may read; every node, unused ones too, with ``LIST_FLEET``."""
    return Node.objects.restrict(user).select_related("backend")


def pods_visible(*, user):
    """Pods labelled with a visible pool of their own backend; every pod with ``LIST_FLEET``."""
    return Pod.objects.restrict(user).select_related("backend")


def memberships_visible(*, user):
    """Node ↔ (pool, platform) rows of the pools ``user`` may read."""
    return NodeMembership.objects.restrict(user).select_related("node", "node__backend", "pool")


def backends_to_sync():
    """The backends that have an inventory to read: every kind but a ``file`` backend without a file."""
    return Backend.objects.exclude(kind=BackendKind.FILE, source="")


def backend_get(name: str, *, user) -> Backend:
    """One backend; a backend the user may not read does not exist for them."""
    backend = Backend.objects.restrict(user).filter(name=name).first()
    if backend is None:
        raise NotFound(f"backend '{name}' does not exist")
    return backend
