"""Every read the pages, the API and ``poolctl`` need, with a fixed number of queries.

The numbers shown anywhere (pool list, resource list, checks) come from the functions here, which
hand the database rows to the pure engine; no caller computes usage on its own.
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Count, DecimalField, F, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from accounts.models import Role

from .choices import ConfigType, PoolStatus
from .engine.accounting import NodeGpu, PoolGpu, PoolGpuInput, pool_gpu_accounting, resource_type, usage_pair
from .engine.errors import ConfigError, EngineError, NotFound
from .engine.permissions import VIEW_POOL
from .engine.policy import RoleDefinition, evaluate_access, parse_policies
from .engine.validation import NodeResources, check_request, parse_rules
from .engine.variables import render_pod_template, resolve_variables
from .models import (
    Backend,
    ConfigRevision,
    Node,
    NodeMembership,
    Pod,
    PodTemplate,
    Pool,
    PoolPodUsage,
    ResourceValidation,
    placements_pairs,
)

DEFAULT_PLATFORM = "default"
GI = Decimal(1024**3)
# A node's free GPUs, never negative (a node may report more in use than allocatable).
NODE_FREE_GPUS = Greatest(
    F("gpu") - F("gpu_used"), Value(0), output_field=DecimalField(max_digits=14, decimal_places=3)
)


# --- config documents ------------------------------------------------------------------------------


def backend_body(backend: Backend) -> dict:
    return {
        "description": backend.description,
        "kind": backend.kind,
        "source": backend.source,
        "kubeconfig": backend.kubeconfig,
        "context": backend.context,
        "in_cluster": backend.in_cluster,
        "seed": backend.seed,
        "size": backend.size,
        "node_conditions": backend.node_conditions,
        "pool_label": backend.pool_label,
        "priority_label": backend.priority_label,
        "writable": backend.writable,
    }


def pool_body(pool: Pool) -> dict:
    """The canonical OSMO-shaped body of a pool (platforms prefetched or not)."""
    return {
        "description": pool.description,
        "backend": pool.backend.name,
        "default_platform": pool.default_platform,
        "enable_maintenance": pool.enable_maintenance,
        "common_default_variables": pool.common_default_variables,
        "common_resource_validations": pool.common_resource_validations,
        "common_pod_template": pool.common_pod_template,
        "default_exec_timeout": pool.default_exec_timeout,
        "default_queue_timeout": pool.default_queue_timeout,
        "max_exec_timeout": pool.max_exec_timeout,
        "max_queue_timeout": pool.max_queue_timeout,
        "default_exit_actions": pool.default_exit_actions,
        "action_permissions": pool.action_permissions,
        "resources": pool.resources,
        "topology_keys": pool.topology_keys,
        "platforms": {
            platform.name: {
                "description": platform.description,
                "host_network_allowed": platform.host_network_allowed,
                "privileged_allowed": platform.privileged_allowed,
                "default_variables": platform.default_variables,
                "resource_validations": platform.resource_validations,
                "override_pod_template": platform.override_pod_template,
                "allowed_mounts": platform.allowed_mounts,
            }
            for platform in sorted(pool.platforms.all(), key=lambda p: p.name)
        },
    }


def role_body(role: Role) -> dict:
    return {
        "description": role.description,
        "policies": role.policies,
        "external_roles": role.external_roles,
        "sync_mode": role.sync_mode,
        "immutable": role.immutable,
    }


def config_state(types: Iterable[ConfigType] | None = None) -> dict[ConfigType, dict[str, Any]]:
    """The current configuration as ``{type: {name: canonical body}}``."""
    types = list(types) if types is not None else list(ConfigType)
    state: dict[ConfigType, dict[str, Any]] = {}
    for config_type in types:
        if config_type == ConfigType.BACKEND:
            state[config_type] = {b.name: backend_body(b) for b in Backend.objects.all()}
        elif config_type == ConfigType.POD_TEMPLATE:
            state[config_type] = dict(PodTemplate.objects.values_list("name", "spec"))
        elif config_type == ConfigType.RESOURCE_VALIDATION:
            state[config_type] = dict(ResourceValidation.objects.values_list("name", "rules"))
        elif config_type == ConfigType.POOL:
            pools = Pool.objects.select_related("backend").prefetch_related("platforms")
            state[config_type] = {p.name: pool_body(p) for p in pools}
        else:
            state[config_type] = {r.name: role_body(r) for r in Role.objects.all()}
    return state


def config_revision_get(*, config_type: ConfigType, revision: int) -> ConfigRevision:
    try:
        return ConfigRevision.objects.get(config_type=config_type, revision=revision)
    except ConfigRevision.DoesNotExist:
        raise NotFound(f"revision {config_type}:{revision} does not exist") from None


def config_history(*, config_type: ConfigType | None = None, name: str | None = None):
    """Revisions, newest first, optionally of one type and/or one object name."""
    revisions = ConfigRevision.objects.defer("snapshot").order_by("-created_at", "config_type", "-revision")
    if config_type:
        revisions = revisions.filter(config_type=config_type)
    if name:
        revisions = revisions.filter(name=name)
    return revisions


def revision_summary(revision: ConfigRevision) -> dict:
    return {
        "config_type": revision.config_type,
        "revision": revision.revision,
        "name": revision.name,
        "username": revision.username,
        "created_at": revision.created_at.isoformat(),
        "description": revision.description,
        "tags": revision.tags,
    }


def config_show(*, config_type: ConfigType, name: str | None = None, revision: int | None = None) -> dict:
    """A type's objects (or one, name-keyed) as they are now or were at ``revision``."""
    if revision is None:
        objects = config_state([config_type])[config_type]
    else:
        objects = config_revision_get(config_type=config_type, revision=revision).snapshot
    if name is None:
        return objects
    if name not in objects:
        when = f" at revision {revision}" if revision else ""
        raise NotFound(f"{config_type} '{name}' does not exist{when}")
    return {name: objects[name]}


def config_diff(*, config_type: ConfigType, revision: int, other: int | None = None) -> str:
    """A unified diff from ``revision`` to ``other`` (or to the current state), object by object."""
    before = config_revision_get(config_type=config_type, revision=revision).snapshot
    if other is None:
        after, after_label = config_state([config_type])[config_type], "current"
    else:
        after, after_label = config_revision_get(config_type=config_type, revision=other).snapshot, str(other)
    lines: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        old = json.dumps(before[name], indent=2, sort_keys=True).splitlines() if name in before else []
        new = json.dumps(after[name], indent=2, sort_keys=True).splitlines() if name in after else []
        lines.extend(
            difflib.unified_diff(
                old,
                new,
                fromfile=f"{config_type}:{revision}/{name}",
                tofile=f"{config_type}:{after_label}/{name}",
                lineterm="",
            )
        )
    return "\n".join(lines)


# --- pools, platforms, templates ---------------------------------------------------------------------


def visible_pool_filter(user, names: Iterable[str]) -> set[str] | None:
    """The pool names ``user`` may see among ``names``; None means no filtering (the operator's CLI)."""
    if user is None:
        return None
    from accounts.access import visible

    return set(visible(user, VIEW_POOL, names))


def pool_get(name: str, *, user=None) -> Pool:
    """One pool; a pool the user may not see does not exist for them (NotFound, a 404)."""
    try:
        pool = Pool.objects.select_related("backend").prefetch_related("platforms").get(name=name)
    except Pool.DoesNotExist:
        raise NotFound(f"pool '{name}' does not exist") from None
    visible = visible_pool_filter(user, [pool.name])
    if visible is not None and pool.name not in visible:
        raise NotFound(f"pool '{name}' does not exist")
    return pool


def pool_platforms(pool: Pool) -> dict[str, Any]:
    """A pool's platforms by name; a pool without platforms has one, ``default``, with nothing of its own."""
    platforms = {platform.name: platform for platform in pool.platforms.all()}
    return platforms or {DEFAULT_PLATFORM: None}


def pool_platform_choice(pool: Pool, platform: str | None) -> str:
    """The platform a request means: the one named, else the pool's ``default_platform``."""
    platforms = pool_platforms(pool)
    chosen = platform or pool.default_platform or (next(iter(platforms)) if len(platforms) == 1 else "")
    if not chosen:
        raise ConfigError(f"pool '{pool.name}' has no default platform; choose one of {', '.join(sorted(platforms))}")
    if chosen not in platforms:
        raise NotFound(f"pool '{pool.name}' has no platform '{chosen}' (it has {', '.join(sorted(platforms))})")
    return chosen


def platform_template_names(pool: Pool, platform) -> list[str]:
    return list(pool.common_pod_template) + (list(platform.override_pod_template) if platform else [])


def platform_validation_names(pool: Pool, platform) -> list[str]:
    return list(pool.common_resource_validations) + (list(platform.resource_validations) if platform else [])


def platform_variables(pool: Pool, platform_name: str, platform, user_values: dict | None = None) -> dict:
    return resolve_variables(
        pool=pool.name,
        platform=platform_name,
        pool_defaults=pool.common_default_variables,
        platform_defaults=platform.default_variables if platform else None,
        user_values=user_values,
    )


def _render_platform(pool: Pool, platform_name: str, platform, variables: dict, templates: dict) -> dict:
    names = platform_template_names(pool, platform)
    missing = [name for name in names if name not in templates]
    if missing:
        raise ConfigError(f"pool '{pool.name}' names pod template '{missing[0]}', which does not exist")
    try:
        return render_pod_template([(name, templates[name]) for name in names], variables)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None


def pool_render(*, pool_name: str, platform: str | None = None, user_values: dict | None = None, user=None) -> dict:
    """The merged, rendered pod template a request to this pool and platform would get."""
    return _pool_render(pool_get(pool_name, user=user), platform, user_values)


def _pool_render(pool: Pool, platform: str | None, user_values: dict | None) -> dict:
    platform_name = pool_platform_choice(pool, platform)
    platform_obj = pool_platforms(pool)[platform_name]
    variables = platform_variables(pool, platform_name, platform_obj, user_values)
    templates = dict(
        PodTemplate.objects.filter(name__in=platform_template_names(pool, platform_obj)).values_list("name", "spec")
    )
    pod_template = _render_platform(pool, platform_name, platform_obj, variables, templates)
    return {"pool": pool.name, "platform": platform_name, "variables": variables, "pod_template": pod_template}


def platform_selection_specs(*, backend: Backend) -> Iterator[tuple[Pool, str, dict]]:
    """Each (pool, platform, pod spec) of a backend's pools, the spec rendered with default variables.

    Membership uses these specs. A platform whose templates do not render selects no node.
    """
    templates = dict(PodTemplate.objects.values_list("name", "spec"))
    for pool in Pool.objects.filter(backend=backend).prefetch_related("platforms"):
        for platform_name, platform in pool_platforms(pool).items():
            variables = platform_variables(pool, platform_name, platform)
            try:
                merged = _render_platform(pool, platform_name, platform, variables, templates)
            except ConfigError:
                continue
            spec = merged.get("spec")
            yield pool, platform_name, spec if isinstance(spec, dict) else {}


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


def pool_check(*, pool_name: str, platform: str | None = None, user_values: dict | None = None, user=None) -> dict:
    """Would this request fit? Static rules once, per-node rules against each member node (SEMANTICS.md §4)."""
    pool = pool_get(pool_name, user=user)
    rendered = _pool_render(pool, platform, user_values)
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
    return {"pool": pool.name, "platform": platform_name, **verdict.as_dict()}


# --- accounting ----------------------------------------------------------------------------------------


def pool_status(pool: Pool, *, now=None) -> str:
    """MAINTENANCE, else ONLINE while the backend's last successful contact is recent, else OFFLINE."""
    if pool.enable_maintenance:
        return PoolStatus.MAINTENANCE
    heartbeat = pool.backend.last_heartbeat
    window = timedelta(seconds=settings.GPUPOOL["ONLINE_WINDOW_SECONDS"])
    if heartbeat and (now or timezone.now()) - heartbeat < window:
        return PoolStatus.ONLINE
    return PoolStatus.OFFLINE


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of one backend that share their placements, availability, cordoning and GPU product, summed.

    ``free`` adds up ``max(0, gpu - used)`` node by node. Every node with a placement is in exactly one group.
    """

    placements: tuple[tuple[int, str], ...]
    available: bool
    cordoned: bool
    product: str
    nodes: int
    gpu: Decimal
    free: Decimal

    @property
    def pool_ids(self) -> frozenset[int]:
        return frozenset(pool_id for pool_id, _ in self.placements)


def node_groups(backend_ids: Iterable[int]) -> list[NodeGroup]:
    """The placed nodes of these backends grouped in the database (one statement, so one consistent state).

    A fleet has few distinct groups however many nodes and memberships it has, so only a few rows travel:
    the pool summaries read these instead of every membership.
    """
    rows = (
        Node.objects.filter(backend_id__in=list(backend_ids))
        .exclude(placements="")
        .order_by()
        .values("placements", "available", "unschedulable", "gpu_product")
        .annotate(count=Count("id"), gpus=Sum("gpu"), free_gpus=Sum(NODE_FREE_GPUS))
        .values_list("placements", "available", "unschedulable", "gpu_product", "count", "gpus", "free_gpus")
    )
    return [
        NodeGroup(
            placements=tuple(placements_pairs(placements)),
            available=available,
            cordoned=unschedulable,
            product=product,
            nodes=nodes,
            gpu=gpu,
            free=free,
        )
        for placements, available, unschedulable, product, nodes, gpu, free in rows
    ]


def pool_gpu_summary(backend_ids: Iterable[int]) -> dict[int, PoolGpu]:
    """GPU accounting (SEMANTICS.md §6) for every pool of these backends, by pool id, in three queries.

    Reads the usage sync keeps on nodes and in ``PoolPodUsage``, never the pods themselves. The engine
    receives one stand-in node per ``node_groups`` row instead of every node: each real node is in exactly
    one group, so node sets, capacity and free GPUs come out the same (``tests/test_pool_summary.py``).
    """
    backend_ids = set(backend_ids)
    pools = list(Pool.objects.filter(backend_id__in=backend_ids).values("id", "name", "backend_id", "resources"))
    nodes: dict[str, NodeGpu] = {}
    members = defaultdict(set)
    for index, group in enumerate(node_groups(backend_ids)):
        key = f"group-{index}"
        nodes[key] = NodeGpu(name=key, capacity=group.gpu, used=group.gpu - group.free, available=group.available)
        for pool_id in group.pool_ids:
            members[pool_id].add(key)
    usage = {
        (backend_id, pool_name): (gpu, quota)
        for backend_id, pool_name, gpu, quota in PoolPodUsage.objects.filter(backend_id__in=backend_ids).values_list(
            "backend_id", "pool_name", "gpu", "gpu_quota"
        )
    }
    inputs = []
    for pool in pools:
        gpu, quota = usage.get((pool["backend_id"], pool["name"]), (Decimal(0), Decimal(0)))
        inputs.append(
            PoolGpuInput(
                name=str(pool["id"]),
                nodes=frozenset(members[pool["id"]]),
                guarantee=((pool["resources"] or {}).get("gpu") or {}).get("guarantee", -1),
                # The engine adds these up: the quota part as non-preemptible, the rest as preemptible.
                pod_requests=((quota, False), (gpu - quota, True)),
            )
        )
    return {int(key): value for key, value in pool_gpu_accounting(inputs, nodes).items()}


def pool_list(*, names: Iterable[str] | None = None, with_ids: bool = False, user=None) -> list[dict]:
    """The rows of ``poolctl pool list`` / the pool API: status, node set and GPU numbers per pool.

    ``with_ids`` adds ``backend_id`` for callers that store rows (usage samples).
    """
    pools = Pool.objects.select_related("backend").order_by("name")
    if names is not None:
        pools = pools.filter(name__in=list(names))
    pools = list(pools)
    # Every pool's name, for node sets; a node set names only the pools the user may see (the sharing
    # itself stays visible), so visibility is decided once, over all of them.
    id_names = dict(Pool.objects.values_list("id", "name"))
    visible = visible_pool_filter(user, id_names.values())
    if visible is not None:
        pools = [pool for pool in pools if pool.name in visible]
        id_names = {key: name for key, name in id_names.items() if name in visible}
    summary = pool_gpu_summary({pool.backend_id for pool in pools})
    now = timezone.now()
    rows = []
    for pool in pools:
        gpu = summary.get(pool.pk)
        if gpu is None:  # deleted between the two reads
            continue
        rows.append(
            {
                "name": pool.name,
                "description": pool.description,
                "status": str(pool_status(pool, now=now)),
                "backend": pool.backend.name,
                "shared": gpu.shared,
                "node_set": sorted(id_names[int(key)] for key in gpu.node_set if int(key) in id_names),
                "gpu": gpu.as_dict(),
                **({"backend_id": pool.backend_id} if with_ids else {}),
            }
        )
    return rows


def gpu_product_usage() -> list[dict]:
    """GPUs used and allocatable per (backend, GPU product) over available nodes, for the history charts."""
    totals: dict[tuple[int, str], dict] = {}
    for backend_id, product, gpu, used in (
        Node.objects.filter(available=True)
        .exclude(gpu_product="")
        .values_list("backend_id", "gpu_product", "gpu", "gpu_used")
    ):
        row = totals.setdefault(
            (backend_id, product),
            {"backend_id": backend_id, "gpu_product": product, "used": Decimal(0), "capacity": Decimal(0)},
        )
        row["capacity"] += gpu
        row["used"] += min(gpu, used)
    return [
        {**row, "used": float(row["used"]), "capacity": float(row["capacity"])} for _, row in sorted(totals.items())
    ]


def usage_series(*, scope: str, key: str, since, until=None) -> list[dict]:
    """Samples of one pool or GPU product between two times, minute samples for up to two days, else hourly.

    Samples of the same time from several backends (a product in several clusters) are added up.
    """
    from .models import UsageSample

    until = until or timezone.now()
    resolution = UsageSample.Resolution.MINUTE if until - since <= timedelta(days=2) else UsageSample.Resolution.HOUR
    rows = (
        UsageSample.objects.filter(scope=scope, key=key, resolution=resolution, at__gte=since, at__lte=until)
        .values("at")
        .annotate(
            used=Sum("used"), capacity=Sum("capacity"), quota_used=Sum("quota_used"), quota_limit=Sum("quota_limit")
        )
        .order_by("at")
    )
    return [
        {
            "at": row["at"].isoformat(),
            "used": row["used"],
            "capacity": row["capacity"],
            "quota_used": row["quota_used"],
            "quota_limit": row["quota_limit"],
            "resolution": resolution,
        }
        for row in rows
    ]


class NodeTableRow(NamedTuple):
    """One row of the node table without its numbers: what filtering, sorting and paging need."""

    node_id: int
    node: str
    backend: str
    pool: str
    platform: str
    type: str
    status: str  # available / cordoned / unavailable
    gpu_product: str


def resource_index(*, pool: str | None = None, platform: str | None = None, user=None) -> list[NodeTableRow]:
    """The rows of ``poolctl resource list`` as light tuples: one per (node, pool, platform), UNUSED nodes once.

    One query over the node table's small columns (memberships come with each node, ``Node.placements``).
    With a ``user``, only rows of pools they may see, and UNUSED nodes only for those allowed
    ``resource:List``. ``resource_rows`` adds the numbers to the rows a caller keeps.
    """
    pool_names = dict(Pool.objects.values_list("id", "name"))
    visible = visible_pool_filter(user, pool_names.values())
    show_unused = visible is None or _allowed(user, "resource:List")
    if pool:
        pool_obj = pool_get(pool, user=user)
        if platform and platform not in pool_platforms(pool_obj):
            raise NotFound(f"pool '{pool}' has no platform '{platform}'")
    elif platform:
        raise ConfigError("--platform needs --pool")
    nodes = Node.objects.all()
    if pool:
        nodes = nodes.filter(memberships__pool=pool_obj).distinct()
    elif not show_unused:
        nodes = nodes.filter(memberships__pool__name__in=visible).distinct()
    nodes = nodes.order_by("name").values_list(
        "id", "name", "backend__name", "placements", "available", "unschedulable", "gpu_product"
    )
    rows = []
    for node_id, name, backend, placements, available, cordoned, product in nodes:
        pairs = sorted(
            (pool_names[p], platform_name) for p, platform_name in placements_pairs(placements) if p in pool_names
        )
        kind = resource_type(len({pool_name for pool_name, _ in pairs}))
        status = "available" if available else "cordoned" if cordoned else "unavailable"
        for pool_name, platform_name in pairs or [("", "")]:
            if pool and (pool_name != pool or (platform and platform_name != platform)):
                continue
            if visible is not None and (pool_name not in visible if pool_name else not show_unused):
                continue
            rows.append(NodeTableRow(node_id, name, backend, pool_name, platform_name, kind, status, product))
    return rows


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
        {"node": row.node, "pool": row.pool, "platform": row.platform, "type": row.type, **numbers[row.node_id]}
        for row in index
        if row.node_id in numbers
    ]


def resource_list(*, pool: str | None = None, platform: str | None = None, user=None) -> list[dict]:
    """The rows of ``poolctl resource list`` (and ``/api/resources/``): ``resource_index`` with the numbers."""
    return resource_rows(resource_index(pool=pool, platform=platform, user=user))


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


def _allowed(user, action: str, resource: str = "") -> bool:
    from accounts.access import user_can

    return user_can(user, action, resource).allowed


def _pair(used: Decimal, capacity: Decimal, unit: Decimal = Decimal(1)) -> dict:
    used_out, capacity_out = usage_pair(used, capacity, unit)
    return {"used": used_out, "capacity": capacity_out}


# --- roles ------------------------------------------------------------------------------------------------


def role_definitions(names: Iterable[str]) -> list[RoleDefinition]:
    """Roles by name as engine definitions; ``osmo-default`` is always held. Unknown names are an error."""
    wanted = set(names) | {"osmo-default"}
    roles = {role.name: role for role in Role.objects.filter(name__in=wanted)}
    missing = sorted(wanted - roles.keys())
    if missing:
        raise NotFound(f"role '{missing[0]}' does not exist")
    return [
        RoleDefinition(name=name, policies=parse_policies(roles[name].policies, role=name)) for name in sorted(roles)
    ]


def role_check(*, roles: Iterable[str], action: str, resource: str = "") -> dict:
    """Would a user holding ``roles`` be allowed ``action`` on ``resource``, and by which policy."""
    decision = evaluate_access(role_definitions(roles), action, resource)
    return {"action": action, "resource": resource, **decision.as_dict()}


# --- backends ---------------------------------------------------------------------------------------------


def backend_health() -> list[dict]:
    """Per backend: last contact, last sync duration and error, and node counts by availability (two queries)."""
    from django.db.models import Count, Q

    return list(
        Backend.objects.order_by("name")
        .annotate(
            nodes_available=Count("nodes", filter=Q(nodes__available=True)),
            nodes_unavailable=Count("nodes", filter=Q(nodes__available=False)),
        )
        .values(
            "name",
            "kind",
            "last_heartbeat",
            "last_sync_at",
            "last_sync_duration",
            "last_sync_error",
            "nodes_available",
            "nodes_unavailable",
        )
    )


# --- web console ------------------------------------------------------------------------------------------


def draft_render(*, pool_name: str, pool: dict, templates: dict[str, Any], user_values: dict | None = None) -> dict:
    """Each platform's merged template for a pool body that may not be saved yet (the editors' live preview).

    ``pool`` is a canonical pool body and ``templates`` maps template names to specs (the saved ones with the
    draft in its place); nothing is read from or written to the database. Returns ``{platform: {"pod_template":
    ...}}``, or ``{"error": ...}`` for a platform whose templates are missing or do not render.
    """
    platforms = pool.get("platforms") or {DEFAULT_PLATFORM: None}
    results = {}
    for platform_name, platform in platforms.items():
        names = list(pool.get("common_pod_template") or []) + list((platform or {}).get("override_pod_template") or [])
        missing = [name for name in names if name not in templates]
        if missing:
            results[platform_name] = {"error": f"pod template '{missing[0]}' does not exist", "templates": names}
            continue
        variables = resolve_variables(
            pool=pool_name,
            platform=platform_name,
            pool_defaults=pool.get("common_default_variables"),
            platform_defaults=(platform or {}).get("default_variables"),
            user_values=user_values,
        )
        try:
            rendered = render_pod_template([(name, templates[name]) for name in names], variables)
        except EngineError as exc:
            results[platform_name] = {"error": str(exc), "templates": names}
            continue
        results[platform_name] = {"pod_template": rendered, "templates": names}
    return results


def pool_node_summary(pool_names: Iterable[str]) -> dict[str, dict]:
    """Per pool name: node counts (ready / not ready / cordoned) and free GPUs by product per platform.

    Two queries whatever the number of pools and nodes (the pools, then ``node_groups``). A node counts once
    per pool even when several of its platforms select it. Free GPUs are counted on available nodes with a
    GPU product label: ``max(0, gpu - used)`` per node, summed.
    """
    rows = list(Pool.objects.filter(name__in=list(pool_names)).values_list("id", "name", "backend_id"))
    pools = {pool_id: name for pool_id, name, _ in rows}
    summary: dict[str, dict] = {}
    for group in node_groups({backend_id for _, _, backend_id in rows}):
        state = "ready" if group.available else "cordoned" if group.cordoned else "not_ready"
        for pool_id in group.pool_ids & pools.keys():
            entry = summary.setdefault(
                pools[pool_id], {"nodes": {"ready": 0, "not_ready": 0, "cordoned": 0}, "platforms": {}}
            )
            entry["nodes"][state] += group.nodes
        for pool_id, platform_name in group.placements:
            if pool_id not in pools:
                continue
            platform = summary[pools[pool_id]]["platforms"].setdefault(
                platform_name, {"nodes": 0, "free_by_product": {}}
            )
            platform["nodes"] += group.nodes
            if group.available and group.gpu and group.product:
                products = platform["free_by_product"]
                products[group.product] = products.get(group.product, 0) + int(group.free)
    return summary


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


def node_details(names: Iterable[str]) -> dict[str, dict]:
    """Labels, taints, GPU product, backend and cordon state of nodes by name, for the node table (one query)."""
    return {
        name: {
            "backend": backend,
            "labels": labels or {},
            "taints": taints or [],
            "gpu_product": product,
            "cordoned": cordoned,
        }
        for name, backend, labels, taints, product, cordoned in Node.objects.filter(name__in=set(names)).values_list(
            "name", "backend__name", "labels", "taints", "gpu_product", "unschedulable"
        )
    }


def role_reach(*, pool_names: Iterable[str]) -> list[dict]:
    """Every role with its policies and the pools each one alone lets a holder see (two queries)."""
    from .engine.policy import visible_names

    pool_names = list(pool_names)
    rows = []
    for role in Role.objects.order_by("name"):
        try:
            definition = RoleDefinition(name=role.name, policies=parse_policies(role.policies, role=role.name))
            reach = visible_names([definition], VIEW_POOL.action, VIEW_POOL.resource_type, pool_names)
        except EngineError:
            reach = []
        rows.append({"role": role, "body": role_body(role), "pools": sorted(reach)})
    return rows


# --- REST API: querysets restricted to what a user may read ------------------------------------------------
# Objects a user may not read are left out before any lookup, so a list never shows them and a detail
# request answers 404. Each function costs a fixed number of queries whatever the number of rows.
# ``user=None`` means no restriction (the service's own reads), as in ``visible_pool_filter``.


def _names_allowed(user, action: str, kind: str, names: Iterable[str]) -> list[str]:
    from accounts.access import user_can

    if user is None:
        return list(names)
    return [name for name in names if user_can(user, action, f"{kind}/{name}").allowed]


def config_type_readable(user, config_type: ConfigType) -> bool:
    """Whether ``user`` may read config objects of this type (``config:Read`` on ``config/<TYPE>``)."""
    return user is None or _allowed(user, "config:Read", f"config/{config_type}")


def _visible_pool_names(user) -> list[str]:
    names = list(Pool.objects.values_list("name", flat=True))
    visible = visible_pool_filter(user, names)
    return names if visible is None else sorted(visible)


def backends_visible(*, user):
    """Backends ``user`` may read (``backend:Read`` on ``backend/<name>``)."""
    names = _names_allowed(user, "backend:Read", "backend", Backend.objects.values_list("name", flat=True))
    return Backend.objects.filter(name__in=names)


def pools_visible(*, user):
    """Pools ``user`` may read (``pool:Read`` on ``pool/<name>``), with their backend and platforms."""
    pools = Pool.objects.filter(name__in=_visible_pool_names(user))
    return pools.select_related("backend").prefetch_related("platforms")


def platforms_visible(*, user):
    """Platforms of the pools ``user`` may read."""
    from .models import Platform

    return Platform.objects.filter(pool__name__in=_visible_pool_names(user)).select_related("pool")


def pod_templates_visible(*, user):
    """Every pod template for a user with ``config:Read`` on ``config/POD_TEMPLATE``, else none."""
    templates = PodTemplate.objects.all()
    return templates if config_type_readable(user, ConfigType.POD_TEMPLATE) else templates.none()


def resource_validations_visible(*, user):
    """Every validation set for a user with ``config:Read`` on ``config/RESOURCE_VALIDATION``, else none."""
    validations = ResourceValidation.objects.all()
    return validations if config_type_readable(user, ConfigType.RESOURCE_VALIDATION) else validations.none()


def roles_visible(*, user):
    """Roles ``user`` may read (``role:Read`` on ``role/<name>``)."""
    names = _names_allowed(user, "role:Read", "role", Role.objects.values_list("name", flat=True))
    return Role.objects.filter(name__in=names)


def nodes_visible(*, user):
    """Nodes of the pools ``user`` may read; every node, unused ones too, with ``resource:List``."""
    nodes = Node.objects.select_related("backend")
    if user is None or _allowed(user, "resource:List"):
        return nodes
    members = NodeMembership.objects.filter(pool__name__in=_visible_pool_names(user)).values("node_id")
    return nodes.filter(pk__in=members)


def pods_visible(*, user):
    """Pods labelled with a pool ``user`` may read; every pod with ``resource:List``."""
    pods = Pod.objects.select_related("backend")
    if user is None or _allowed(user, "resource:List"):
        return pods
    return pods.filter(pool_name__in=_visible_pool_names(user))


def memberships_visible(*, user):
    """Node ↔ (pool, platform) rows of the pools ``user`` may read."""
    return NodeMembership.objects.filter(pool__name__in=_visible_pool_names(user)).select_related(
        "node", "node__backend", "pool"
    )


def usage_samples_visible(*, user):
    """Usage samples of the pools ``user`` may read; GPU-product samples (cluster-wide) need ``resource:List``."""
    from django.db.models import Q

    from .models import UsageSample

    samples = UsageSample.objects.select_related("backend")
    if user is None or _allowed(user, "resource:List"):
        return samples
    return samples.filter(Q(scope=UsageSample.Scope.POOL, key__in=_visible_pool_names(user)))


def revisions_visible(*, user, config_type: ConfigType | None = None, name: str | None = None):
    """``config_history`` restricted to the config types ``user`` may read."""
    readable = [config_type for config_type in ConfigType if config_type_readable(user, config_type)]
    return config_history(config_type=config_type, name=name).filter(config_type__in=readable)


def backend_get(name: str, *, user=None) -> Backend:
    """One backend; a backend the user may not read (``backend:Read``) does not exist for them."""
    backend = Backend.objects.filter(name=name).first()
    if backend is None or (user is not None and not _allowed(user, "backend:Read", f"backend/{name}")):
        raise NotFound(f"backend '{name}' does not exist")
    return backend
