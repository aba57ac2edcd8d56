"""Every read the pages, the API and ``poolctl`` need, with a fixed number of queries.

The numbers shown anywhere (pool list, resource list, checks) come from the functions here, which
hand the database rows to the pure engine; no caller computes usage on its own.
"""

from __future__ import annotations

import copy
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

from accounts import access
from accounts.access import is_system
from accounts.models import Role

from .choices import BackendKind, ConfigType, PoolStatus, RevisionAction
from .configs import TYPE_LABELS
from .engine.accounting import NodeGpu, PoolGpu, PoolGpuInput, pool_gpu_accounting, resource_type, usage_pair
from .engine.errors import ConfigError, EngineError, NotFound
from .engine.permissions import LIST_FLEET, VIEW_POOL
from .engine.policy import RoleDefinition, evaluate_access, parse_policies
from .engine.validation import NodeResources, check_request, parse_rules
from .engine.variables import render_pod_template, resolve_variables
from .models import (
    Backend,
    ConfigRevision,
    Node,
    NodeMembership,
    Platform,
    Pod,
    PodTemplate,
    Pool,
    PoolPodUsage,
    ResourceValidation,
    UsageSample,
    placements_pairs,
)
from .querysets import visible_object, visible_objects

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


def config_revision_get(*, config_type: ConfigType, revision: int, user) -> ConfigRevision:
    """One revision as ``user`` may see it (``redacted``); one that changed nothing they may see is NotFound."""
    found = ConfigRevision.objects.restrict(user).filter(config_type=config_type, revision=revision).first()
    if found is None:
        raise NotFound(f"revision {config_type}:{revision} does not exist")
    return redacted(found, user)


def redacted(revision: ConfigRevision, user) -> ConfigRevision:
    """The revision with only what ``user`` may see: its snapshot, changed names, name and description.

    Returns a detached copy when anything is hidden (never saved); the description then names only the
    visible objects, since a hand-written or generated one may name the others.
    """
    if is_system(user):
        return revision
    changed = [name for name in revision.changed if visible_object(user, revision.config_type, name)]
    if changed == revision.changed and "snapshot" in revision.get_deferred_fields():
        return revision
    shown = copy.copy(revision)
    if "snapshot" not in revision.get_deferred_fields():
        shown.snapshot = visible_objects(user, revision.config_type, revision.snapshot)
    if changed != revision.changed:
        shown.changed = changed
        shown.name = changed[0] if len(changed) == 1 else ""
        shown.description = describe_change(revision.action, ConfigType(revision.config_type), changed)
    return shown


def describe_change(action: str, config_type: ConfigType, changed: list[str]) -> str:
    """``Updated pools a, b and 3 more``: the description a revision gets when its author gives none."""
    label = TYPE_LABELS[config_type]
    names = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return f"{RevisionAction(action).label} {label}{'s' if len(changed) > 1 else ''} {names}"


def config_history(*, user, config_type: ConfigType | None = None, name: str | None = None):
    """Revisions ``user`` may see, newest first, optionally of one type and/or one object name.

    A queryset (for paging); pass each row shown through ``redacted``.
    """
    revisions = ConfigRevision.objects.restrict(user).defer("snapshot")
    if config_type:
        revisions = revisions.filter(config_type=config_type)
    if name:
        touched = [pk for pk, changed in revisions.values_list("pk", "changed") if name in changed]
        revisions = revisions.filter(pk__in=touched)
    return revisions.order_by("-created_at", "config_type", "-revision")


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


def config_objects(*, config_type: ConfigType, user, revision: int | None = None) -> dict:
    """``{name: body}`` of a type's objects ``user`` may see, as they are now or were at ``revision``."""
    if revision is None:
        return visible_objects(user, config_type, config_state([config_type])[config_type])
    return config_revision_get(config_type=config_type, revision=revision, user=user).snapshot


def config_show(*, config_type: ConfigType, user, name: str | None = None, revision: int | None = None) -> dict:
    """A type's objects (or one, name-keyed) as they are now or were at ``revision``, as ``user`` may see them."""
    objects = config_objects(config_type=config_type, user=user, revision=revision)
    if name is None:
        return objects
    if name not in objects:
        when = f" at revision {revision}" if revision else ""
        raise NotFound(f"{config_type} '{name}' does not exist{when}")
    return {name: objects[name]}


def config_diff(*, config_type: ConfigType, user, revision: int, other: int | None = None) -> str:
    """A unified diff from ``revision`` to ``other`` (or to the current state), object by object, of what
    ``user`` may see."""
    before = config_objects(config_type=config_type, user=user, revision=revision)
    after = config_objects(config_type=config_type, user=user, revision=other)
    return snapshot_diff(config_type, before, after, str(revision), "current" if other is None else str(other))


def revision_changes(*, revision: ConfigRevision, user) -> tuple[int | None, str]:
    """What ``revision`` (as ``config_revision_get`` gave it) changed: the number of the revision before it and
    the diff from that one, of the objects ``user`` may see. ``(None, "")`` for a type's first revision."""
    previous = (
        ConfigRevision.objects.filter(config_type=revision.config_type, revision__lt=revision.revision)
        .order_by("-revision")
        .first()
    )
    if previous is None:
        return None, ""
    before = visible_objects(user, revision.config_type, previous.snapshot)
    config_type = ConfigType(revision.config_type)
    return previous.revision, snapshot_diff(
        config_type, before, revision.snapshot, str(previous.revision), str(revision.revision)
    )


def snapshot_diff(config_type: ConfigType, before: dict, after: dict, before_label: str, after_label: str) -> str:
    """A unified diff between two ``{name: body}`` states, object by object."""
    revision = before_label
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


def pool_get(name: str, *, user) -> Pool:
    """One pool; a pool the user may not see does not exist for them (NotFound, a 404)."""
    pool = Pool.objects.restrict(user).select_related("backend").prefetch_related("platforms").filter(name=name).first()
    if pool is None:
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


def pool_render(*, pool_name: str, user, platform: str | None = None, user_values: dict | None = None) -> dict:
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


def pool_check(*, pool_name: str, user, platform: str | None = None, user_values: dict | None = None) -> dict:
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


def pool_list(*, user, names: Iterable[str] | None = None, with_ids: bool = False) -> list[dict]:
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
    visible = set(access.visible(user, VIEW_POOL, id_names.values()))
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


def resource_index(*, user, pool: str | None = None, platform: str | None = None) -> list[NodeTableRow]:
    """The rows of ``poolctl resource list`` as light tuples: one per (node, pool, platform), UNUSED nodes once.

    One query over the node table's small columns (memberships come with each node, ``Node.placements``).
    Only rows of pools ``user`` may see, and UNUSED nodes only for those allowed ``LIST_FLEET``.
    ``resource_rows`` adds the numbers to the rows a caller keeps.
    """
    pool_names = dict(Pool.objects.values_list("id", "name"))
    visible = set(access.visible(user, VIEW_POOL, pool_names.values()))
    show_unused = access.allows(user, LIST_FLEET)
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
            if pool_name not in visible if pool_name else not show_unused:
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


def resource_list(*, user, pool: str | None = None, platform: str | None = None) -> list[dict]:
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


def backend_health(*, user) -> list[dict]:
    """Per backend ``user`` may see: last contact, last sync duration and error, node counts by availability."""
    from django.db.models import Count, Q

    return list(
        Backend.objects.restrict(user)
        .order_by("name")
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


def role_reach(*, user, pool_names: Iterable[str]) -> list[dict]:
    """The roles ``user`` may see, with their policies and the pools each one alone lets a holder see."""
    from .engine.policy import visible_names

    pool_names = list(pool_names)
    rows = []
    for role in Role.objects.restrict(user).order_by("name"):
        try:
            definition = RoleDefinition(name=role.name, policies=parse_policies(role.policies, role=role.name))
            reach = visible_names([definition], VIEW_POOL.action, VIEW_POOL.resource_type, pool_names)
        except EngineError:
            reach = []
        rows.append({"role": role, "body": role_body(role), "pools": sorted(reach)})
    return rows


# --- lists restricted to what a user may read ---------------------------------------------------------------
# Each starts from the model's ``restrict`` (pools.querysets), so a list, a detail, an export and a chart
# can never disagree; a fixed number of queries whatever the number of rows.


def backends_visible(*, user):
    """Backends ``user`` may read."""
    return Backend.objects.restrict(user)


def pools_visible(*, user):
    """Pools ``user`` may read, with their backend and platforms."""
    return Pool.objects.restrict(user).select_related("backend").prefetch_related("platforms")


def platforms_visible(*, user):
    """Platforms of the pools ``user`` may read."""
    return Platform.objects.restrict(user).select_related("pool")


def pod_templates_visible(*, user):
    """Every pod template for a reader of the type, else none."""
    return PodTemplate.objects.restrict(user)


def resource_validations_visible(*, user):
    """Every validation set for a reader of the type, else none."""
    return ResourceValidation.objects.restrict(user)


def roles_visible(*, user):
    """Roles ``user`` may read."""
    return Role.objects.restrict(user)


def nodes_visible(*, user):
    """Nodes of the pools ``user`` may read; every node, unused ones too, with ``LIST_FLEET``."""
    return Node.objects.restrict(user).select_related("backend")


def pods_visible(*, user):
    """Pods labelled with a visible pool of their own backend; every pod with ``LIST_FLEET``."""
    return Pod.objects.restrict(user).select_related("backend")


def memberships_visible(*, user):
    """Node ↔ (pool, platform) rows of the pools ``user`` may read."""
    return NodeMembership.objects.restrict(user).select_related("node", "node__backend", "pool")


def usage_samples_visible(*, user):
    """Usage samples of the pools ``user`` may read; GPU-product samples (fleet-wide) need ``LIST_FLEET``."""
    return UsageSample.objects.restrict(user).select_related("backend")


def backends_to_sync():
    """The backends that have an inventory to read: every kind but a ``file`` backend without a file."""
    return Backend.objects.exclude(kind=BackendKind.FILE, source="")


def backend_get(name: str, *, user) -> Backend:
    """One backend; a backend the user may not read does not exist for them."""
    backend = Backend.objects.restrict(user).filter(name=name).first()
    if backend is None:
        raise NotFound(f"backend '{name}' does not exist")
    return backend
