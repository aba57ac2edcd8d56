"""Reads of the synced inventory: backends, nodes, pods, memberships, the node table and node checks.

The node table (``resource_index`` → ``resource_numbers``) is what the nodes page, ``/api/resources/`` and
``poolctl resource list`` show; ``NodeFilterSet`` (pools.filtersets) filters it for all three.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import islice
from typing import NamedTuple

from django.db.models import Count, Max, Q, Sum, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts import access

from ..choices import BackendKind, NodeStatus, SyncState
from ..engine.accounting import resource_type, usage_pair
from ..engine.errors import ConfigError, EngineError, NotFound
from ..engine.permissions import LIST_FLEET, VIEW_POOL
from ..engine.topology import topology_levels
from ..engine.validation import NodeResources, check_request, parse_rules, requested_amounts
from ..filtersets import NodeFilterSet, filtered
from ..inventory.records import paused_gc
from ..models import (
    Backend,
    Lease,
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
from .capacity import node_based_pools
from .pools import DEFAULT_PLATFORM, platform_validation_names, pool_get, pool_platform_render, pool_platforms
from .quotas import projects_queryset
from .verdicts import request_verdict
from .whatif import gang_pods, gang_topology_check, project_quota_check

GI = Decimal(1024**3)


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
    pods: int | None = None,
    topology: Mapping | None = None,
) -> dict:
    """Would this request fit? Static rules once, per-node rules against each member node (SEMANTICS.md §4).

    Each node that may hold it also says whether it could start there now or would wait for free resources
    (``start``, ``shortfalls``; ``starts`` and ``start_now_nodes`` for the whole platform). With ``project``,
    ``quota`` says where the request's GPUs (``pods`` pods of them, one when None) would put that project on the
    pool (``whatif.project_quota_check``; a project ``user`` may not see is ``NotFound``); without, ``quota`` is
    None. With ``topology`` (``{level, required}``), ``topology`` says whether a gang of ``pods`` such pods could
    start now in one domain of that level, or split (``whatif.gang_topology_check``); without, it is None.
    ``pending_verdict`` is the verdict the request would get if it were submitted now and waited (SEMANTICS §10,
    ``verdicts.request_verdict``): ``pods`` pods of its GPUs, of ``project`` when given.
    """
    pods = gang_pods(pods)
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
    gpu = requested_amounts(rendered["variables"]).get("gpu", Decimal(0))
    gang = None
    if topology is not None:
        gang = gang_topology_check(pool=pool, nodes=nodes, gpu=gpu, pods=pods, topology=topology)
    quota = None
    if project:
        quota = project_quota_check(user=user, pool_name=pool.name, project=project, gpu=gpu * pods)
    refused = "" if verdict.passed else "; ".join(verdict.errors) or "no node of the platform passes its rules"
    required = ""  # the label of the level a required topology keeps the gang within (its level was checked above)
    if gang is not None and gang["required"]:
        required = next(level.label for level in topology_levels(pool.topology_keys) if level.key == gang["level"])
    waits = request_verdict(
        pool=pool, project=project if quota else None, gpu=gpu, pods=pods, refused=refused, topology=required
    )
    return {
        "pool": pool.name,
        "platform": platform_name,
        **verdict.as_dict(),
        "quota": quota,
        "topology": gang,
        "pending_verdict": waits,
    }


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


def resource_index(*, user, filters: Mapping | None = None) -> NodeTable:
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
    backend_names = dict(Backend.objects.values_list("id", "name"))
    nodes = filterset.qs.order_by().values_list(
        "id", "name", "backend_id", "placements", "available", "unschedulable", "gpu_product"
    )
    # Nodes of the same pools share one placements text: each distinct text is parsed, sorted and filtered once.
    shown: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    table = NodeTable()
    with paused_gc():  # thousands of tuples, no cycles: no collector pass over the whole process per thousand
        # Sorted here by name, then backend, not by the database: PostgreSQL's sort was a third of this read at
        # 5,000 nodes (planned with parallel workers), in an order that followed the database's collation.
        # Python compares code points, as SQLite does: one order on both databases.
        rows = sorted(nodes, key=lambda row: (row[1], backend_names[row[2]]))
        for node_id, name, backend_id, placements, available, cordoned, product in rows:
            known = shown.get(placements)
            if known is None:
                pairs = sorted(
                    (pool_names[p], platform) for p, platform in placements_pairs(placements) if p in pool_names
                )
                kept = [
                    (pool_name, platform)
                    for pool_name, platform in pairs or [("", "")]
                    if (show_unused if not pool_name else _row_shown(pool_name, platform, visible, pools, platforms))
                ]
                known = shown[placements] = (resource_type(len({pool_name for pool_name, _ in pairs})), kept)
            kind, kept = known
            if kept:
                status = NodeStatus.of(available=available, cordoned=cordoned).value
                table.add((node_id, name, backend_names[backend_id], kind, status, product), kept)
    return table


class NodeTable(Sequence):
    """The node table's rows, made when read: one ``NodeTableRow`` per (node, kept pool and platform).

    A page shows a hundred of a fleet's tens of thousands; the table holds one entry per node (the rows of a
    node share its pool list) and a running count, so its length and any slice cost no row not read.
    """

    def __init__(self):
        self._nodes: list[tuple[tuple, list[tuple[str, str]]]] = []
        self._ends: list[int] = []  # rows up to and including each node's

    def add(self, node: tuple, pairs: list[tuple[str, str]]) -> None:
        self._nodes.append((node, pairs))
        self._ends.append((self._ends[-1] if self._ends else 0) + len(pairs))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[NodeTableRow]:
        for (node_id, name, backend, kind, status, product), pairs in self._nodes:
            for pool_name, platform in pairs:
                yield NodeTableRow(node_id, name, backend, pool_name, platform, kind, status, product)

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            return list(islice(self._rows_from(start), max(0, stop - start)))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("node table index out of range")
        return next(self._rows_from(index))

    def _rows_from(self, start: int) -> Iterator[NodeTableRow]:
        """The rows from position ``start`` on."""
        position = bisect_right(self._ends, start)  # the node holding row ``start``
        skip = start - (self._ends[position - 1] if position else 0)
        for (node_id, name, backend, kind, status, product), pairs in self._nodes[position:]:
            for pool_name, platform in pairs[skip:]:
                yield NodeTableRow(node_id, name, backend, pool_name, platform, kind, status, product)
            skip = 0


def _row_shown(pool_name: str, platform_name: str, visible: set[str], pools, platforms) -> bool:
    """Whether the node table shows a (pool, platform) row: a pool the user sees, among the named pools, platforms."""
    return pool_name in visible and (not pools or pool_name in pools) and (not platforms or platform_name in platforms)


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


def node_table_page(index: Sequence[NodeTableRow]) -> list[dict]:
    """A page of the node table: its index rows with their numbers, labels and taints (rows of nodes deleted
    meanwhile left out); a fixed number of queries for the page."""
    numbers = resource_numbers(index)
    details = node_details({row.node_id for row in index})
    return [
        {
            **row._asdict(),
            **numbers[row.node_id],
            "labels": details.get(row.node_id, {}).get("labels", {}),
            "taints": details.get(row.node_id, {}).get("taints", []),
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
    # By node name alone, the backend checked below: asked for both, a planner walks every pod of the backend.
    pods = (
        Pod.objects.filter(node_name__in={n for _, n in mig_nodes})
        .exclude(mig_devices={})
        .order_by()
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


# How long a sync the page asked for may take before the page says it timed out.
SYNC_GIVE_UP = timedelta(minutes=2)


def sync_progress(name: str, *, user, since: datetime) -> dict:
    """How a sync of backend ``name`` requested at ``since`` goes (``SyncState``): done once the backend was synced
    after it, failed when its last contact failed, timed out after ``SYNC_GIVE_UP``, running otherwise."""
    backend = backend_get(name, user=user)
    now = timezone.now()
    state = SyncState.RUNNING
    if backend.last_sync_at and backend.last_sync_at >= since:
        state = SyncState.DONE
    elif backend.last_sync_error and now - since > timedelta(seconds=2):
        state = SyncState.FAILED
    elif now - since > SYNC_GIVE_UP:
        state = SyncState.TIMEOUT
    return {"backend": backend, "state": state, "since": since.timestamp(), "done": state != SyncState.RUNNING}


def backend_health(*, user) -> list[dict]:
    """Per backend ``user`` may see: status, last contact, last sync duration and error, ``nodes`` by status."""
    rows = (
        with_sync_holder(Backend.objects.restrict(user))
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
            "sync_holder",
            "sync_since",
            "sync_expires",
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


def pool_platform_names(*, user) -> dict[str, list[str]]:
    """The platforms of each pool ``user`` may see, by pool name (``default`` for a pool without platforms), sorted;
    one query besides the visibility, no pool document read (the what-if page's choices)."""
    seen = visible_pool_ids(user)
    names: dict[str, list[str]] = {name: [] for _, name in seen.values()}
    for pool_id, platform in Platform.objects.filter(pool_id__in=list(seen)).values_list("pool_id", "name"):
        names[seen[pool_id][1]].append(platform)
    return {pool: sorted(platforms) or [DEFAULT_PLATFORM] for pool, platforms in sorted(names.items())}


def utilization_read_at(*, user):
    """When GPU utilization was last read on a backend of the pools ``user`` may see (None: never)."""
    seen = visible_pool_ids(user)
    backends = Backend.objects.filter(id__in={backend_id for backend_id, _ in seen.values()})
    return backends.aggregate(at=Max("utilization_at"))["at"]


def pool_workloads(pool: Pool, *, user_label: str = "osmo.user") -> list[dict]:
    """The pool's non-terminated pods grouped by namespace and user: running, pending and their GPUs.

    One grouped query: the user is read out of the labels by the database, so no pod's labels are decoded here.
    The pods are found by their pool label alone and their backend checked on the groups: asked for both, the
    planners (SQLite's always, PostgreSQL's before an ANALYZE) walk every pod of the backend instead. A label or
    default pool's workloads are what runs on its nodes (SEMANTICS §8), and its pending pods labelled with it:
    read from its memberships, which a config change recomputes at once.
    """
    pending = Q(phase="Pending")
    pods = Pod.objects.filter(pool_name=pool.name)
    row = {"id": pool.pk, "name": pool.name, "backend_id": pool.backend_id, "node_label": pool.node_label}
    if node_based_pools([row], [pool.backend_id]):
        names = NodeMembership.objects.filter(pool=pool).values("node__name")
        pods = Pod.objects.filter(backend_id=pool.backend_id).filter(
            Q(node_name__in=names) | Q(node_name="", pool_name=pool.name)
        )
    rows = (
        pods.annotate(
            labelled_user=Coalesce(KeyTextTransform(user_label, "labels"), Value(""), output_field=TextField())
        )
        .values("backend_id", "namespace", "labelled_user")
        .annotate(running=Count("id", filter=~pending), pending=Count("id", filter=pending), gpu=Sum("gpu"))
        .order_by()
    )
    return sorted(
        (
            {
                "namespace": row["namespace"],
                "user": row["labelled_user"],
                "running": row["running"],
                "pending": row["pending"],
                "gpu": float(row["gpu"] or 0),
            }
            for row in rows
            if row["backend_id"] == pool.backend_id
        ),
        key=lambda row: (row["namespace"], row["user"]),
    )


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
    """Backends ``user`` may read, with the holder of their sync lease (``sync_holder``, ``sync_since``,
    ``sync_expires``: None while no sync runs)."""
    return with_sync_holder(Backend.objects.restrict(user))


def with_sync_holder(backends):
    """``backends`` with who holds each one's sync lease now: ``host:pid:thread``, since when, until when."""
    from django.db.models import CharField, OuterRef, Subquery
    from django.db.models.functions import Cast, Concat, Now

    from ..models import Lease

    held = Lease.objects.filter(
        name=Concat(Value("sync:"), Cast(OuterRef("pk"), CharField()), output_field=CharField()),
        expires_at__gte=Now(),
    )
    return backends.annotate(
        sync_holder=Subquery(held.values("owner")[:1]),
        sync_since=Subquery(held.values("since")[:1]),
        sync_expires=Subquery(held.values("expires_at")[:1]),
    )


def nodes_visible(*, user):
    """Nodes of the pools ``user`` may read; every node, unused ones too, with ``LIST_FLEET``."""
    return Node.objects.restrict(user).select_related("backend")


def pods_visible(*, user):
    """Pods labelled with a visible pool of their own backend; every pod with ``LIST_FLEET``."""
    return Pod.objects.restrict(user).select_related("backend")


def memberships_visible(*, user):
    """Node ↔ (pool, platform) rows of the pools ``user`` may read."""
    return NodeMembership.objects.restrict(user).select_related("node", "node__backend", "pool")


def backends_to_sync(*, user=access.SYSTEM):
    """The backends that have an inventory to read (every kind but a ``file`` backend without a file) that ``user``
    may see: every one for the product's own work."""
    return Backend.objects.restrict(user).exclude(kind=BackendKind.FILE, source="")


def backends_to_watch() -> list[Backend]:
    """The live backends (every kind but ``file``) whose watch lease nobody holds now, by name."""
    held = Lease.objects.filter(name__startswith="watch:", expires_at__gte=timezone.now()).values_list(
        "name", flat=True
    )
    held_ids = {int(name.split(":", 1)[1]) for name in held if name.split(":", 1)[1].isdigit()}
    live = backends_to_sync().exclude(kind=BackendKind.FILE).order_by("name")
    return [backend for backend in live if backend.pk not in held_ids]


def backend_get(name: str, *, user) -> Backend:
    """One backend; a backend the user may not read does not exist for them."""
    backend = Backend.objects.restrict(user).filter(name=name).first()
    if backend is None:
        raise NotFound(f"backend '{name}' does not exist")
    return backend


@dataclass(frozen=True)
class HiddenNodes:
    """What a write may not move (SEMANTICS §7.4), read before it: the memberships ``{node id: {(pool id,
    platform)}}`` of the nodes in pools hidden from the writer, and the ids of those pools."""

    memberships: dict
    hidden_pools: frozenset

    def __bool__(self) -> bool:
        return bool(self.memberships)


def hidden_nodes(principal, *, backends: Iterable[str]) -> HiddenNodes:
    """The nodes of ``backends`` in pools hidden from ``principal``, before a write (nothing for SYSTEM)."""
    if access.is_system(principal) or not backends:
        return HiddenNodes({}, frozenset())
    seen = visible_pool_ids(principal)
    hidden_pools = frozenset(Pool.objects.exclude(pk__in=list(seen)).values_list("pk", flat=True))
    rows = NodeMembership.objects.filter(
        node_id__in=NodeMembership.objects.filter(
            pool_id__in=hidden_pools, node__backend__name__in=list(backends)
        ).values("node_id")
    )
    return HiddenNodes(_memberships(rows), hidden_pools)


def _memberships(rows) -> dict[int, set]:
    memberships: dict[int, set] = {}
    for node_id, pool_id, platform in rows.values_list("node_id", "pool_id", "platform_name"):
        memberships.setdefault(node_id, set()).add((pool_id, platform))
    return memberships


def hidden_nodes_moved(before: HiddenNodes) -> bool:
    """Whether a write moved a node of a pool hidden from its writer (SEMANTICS §7.4), ``before`` being
    ``hidden_nodes`` read before it: a node left one of those pools, or a node the writer could not see (in hidden
    pools only) joined one of theirs (a ``node_label`` of ``kubernetes.io/hostname``, a template's selector). A
    node the writer sees through one of their pools may leave it or join their other pools.
    """
    if not before:
        return False
    after = _memberships(NodeMembership.objects.filter(node_id__in=list(before.memberships)))
    for node_id, pairs in before.memberships.items():
        now = after.get(node_id, set())
        hidden = {pair for pair in pairs if pair[0] in before.hidden_pools}
        if not hidden <= now:
            return True
        if len(hidden) == len(pairs) and any(pool_id not in before.hidden_pools for pool_id, _ in now):
            return True
    return False


def what_if_choices(*, user) -> dict:
    """What the what-if page offers ``user``: each visible pool's platforms, and the projects they may read."""
    return {
        "platforms": pool_platform_names(user=user),
        "projects": list(projects_queryset(user=user).order_by("name").values_list("name", flat=True)),
    }


LABEL_POOL_NODES_SHOWN = 500


def label_pool_node_choices(*, user, filters: Mapping | None = None) -> list[dict]:
    """The nodes the label-pool page offers to pick: one row per node of the node table (``NodeFilterSet``'s
    filters) with the pools it is in, at most ``LABEL_POOL_NODES_SHOWN``."""
    rows: dict[str, dict] = {}
    for row in resource_index(user=user, filters=filters):
        entry = rows.setdefault(
            row.node,
            {
                "node": row.node,
                "backend": row.backend,
                "status": row.status,
                "gpu_product": row.gpu_product,
                "pools": [],
            },
        )
        if row.pool and row.pool not in entry["pools"]:
            entry["pools"].append(row.pool)
    return list(rows.values())[:LABEL_POOL_NODES_SHOWN]
