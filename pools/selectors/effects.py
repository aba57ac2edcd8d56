"""What a config change would move, before it is saved (SEMANTICS §5, §6.1): per pool, the nodes and GPUs that
would enter or leave it, the workloads running on the nodes that leave, and the quota warnings the change brings.

Memberships before and after are both worked out here, with the engine's placement (``engine.membership``), from
the canonical bodies of the current configuration and of the configuration the change makes, over the nodes the
backends have now: so the difference is the change's alone, and nothing is written. The editor, the API's
``?dry_run=1`` and ``poolctl … --dry-run`` all show what ``config_change_effect`` answers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.fields.json import KeyTextTransform

from accounts import access

from ..choices import ConfigType
from ..configs.state import users_of
from ..engine.membership import NodePlacer
from ..engine.permissions import VIEW_DEPARTMENT, VIEW_POOL
from ..models import Node, Pod
from .configs import ConfigState
from .gpuctl import USER_LABELS, number
from .pools import draft_render
from .quotas import pool_quota_capacity

# The workloads of a pool's row are listed up to this many groups; the count and the GPUs cover them all.
WORKLOAD_GROUPS_SHOWN = 50


@dataclass
class BackendMoves:
    """One backend's nodes (name -> GPUs, availability) and each node's (pool, platform) pairs before and after."""

    nodes: dict[str, tuple[Decimal, bool]] = field(default_factory=dict)
    before: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    after: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    pools: set[str] = field(default_factory=set)  # every pool of the backend, before or after

    def members(self, when: str) -> dict[str, set[str]]:
        """pool name -> its nodes, ``before`` or ``after`` the change."""
        found: dict[str, set[str]] = defaultdict(set)
        for node, pairs in getattr(self, when).items():
            for pool, _ in pairs:
                found[pool].add(node)
        return found


@dataclass
class ChangePlacements:
    """The states before and after a change, and the backends whose nodes it would place differently."""

    before: Mapping
    after: Mapping
    backends: dict[str, BackendMoves]


def _after(current: Mapping, changes: Mapping) -> ConfigState:
    state = ConfigState(base=current)
    for config_type, entries in changes.items():
        for name, body in entries.items():
            if body is None:
                state[ConfigType(config_type)].pop(name, None)
            else:
                state[ConfigType(config_type)][name] = body
    return state


def _candidate_backends(changes: Mapping, before: Mapping, after: Mapping) -> set[str]:
    """The backends a change of these objects may place differently: changed backends, the backends of changed
    pools, and those of the pools that use a changed template (before or after)."""
    found = set(changes.get(ConfigType.BACKEND, {}))
    for state in (before, after):
        pools = state[ConfigType.POOL]
        for name in changes.get(ConfigType.POOL, {}):
            if name in pools:
                found.add(pools[name]["backend"])
        for name in changes.get(ConfigType.POD_TEMPLATE, {}):
            found.update(pools[pool]["backend"] for pool in users_of(state, ConfigType.POD_TEMPLATE, name))
    return found


def _placer(state: Mapping, backend: str) -> tuple[NodePlacer, list]:
    """The engine's placer of ``backend``'s nodes in ``state``, and the specs it places with (to compare)."""
    templates = state[ConfigType.POD_TEMPLATE]
    specs = []
    for name, body in sorted(state[ConfigType.POOL].items()):
        if body["backend"] != backend:
            continue
        for platform, result in draft_render(pool_name=name, pool=body, templates=templates).items():
            if "error" in result:
                continue  # a platform whose templates do not render selects no node
            spec = result["pod_template"].get("spec")
            specs.append((name, platform, spec if isinstance(spec, dict) else {}))
    default = (state[ConfigType.BACKEND].get(backend) or {}).get("default_pool") or ""
    default_platform = (state[ConfigType.POOL].get(default) or {}).get("default_platform") or ""
    placer = NodePlacer(
        specs, is_default=lambda pool: bool(default) and pool == default, default_platform=default_platform
    )
    return placer, [specs, default, default_platform]


def change_placements(changes: Mapping, *, current: Mapping | None = None) -> ChangePlacements:
    """Where the current nodes would belong before and after ``changes`` (``{type: {name: canonical body or
    None}}``), on the backends whose placement the change alters. ``current``: the state the change starts from
    (``ConfigState()`` when not given). One query per such backend besides the configuration."""
    before = current if current is not None else ConfigState()
    after = _after(before, changes)
    backends: dict[str, BackendMoves] = {}
    for backend in sorted(_candidate_backends(changes, before, after)):
        placer_before, how_before = _placer(before, backend)
        placer_after, how_after = _placer(after, backend)
        if how_before == how_after:
            continue
        moves = BackendMoves(
            pools={
                name
                for state in (before, after)
                for name, body in state[ConfigType.POOL].items()
                if body["backend"] == backend
            }
        )
        rows = Node.objects.filter(backend__name=backend).values_list("name", "labels", "taints", "gpu", "available")
        for name, labels, taints, gpu, available in rows.iterator():
            labels, taints = labels or {}, taints or []
            moves.nodes[name] = (Decimal(gpu or 0), available)
            moves.before[name] = set(placer_before.place(labels=labels, taints=taints, node_name=name))
            moves.after[name] = set(placer_after.place(labels=labels, taints=taints, node_name=name))
        backends[backend] = moves
    return ChangePlacements(before, after, backends)


def hidden_nodes_would_move(placements: ChangePlacements, user) -> bool:
    """Whether the change would move a node of a pool hidden from ``user`` (SEMANTICS §7.4), as the write itself
    would find (``inventory.hidden_nodes_moved``): a node would leave a hidden pool (or platform of one), or a node
    only in hidden pools would join one of theirs."""
    if access.is_system(user):
        return False
    for moves in placements.backends.values():
        shown = set(access.visible(user, VIEW_POOL, sorted(moves.pools)))
        for node, pairs in moves.before.items():
            hidden = {pair for pair in pairs if pair[0] not in shown}
            after = moves.after[node]
            if not hidden <= after:
                return True
            if hidden and len(hidden) == len(pairs) and any(pool in shown for pool, _ in after):
                return True
    return False


def _capacity(nodes: set[str], moves: BackendMoves) -> Decimal:
    """GPUs of the available nodes among ``nodes`` (each once): a pool's capacity (SEMANTICS §9.1)."""
    return sum((moves.nodes[node][0] for node in nodes if moves.nodes[node][1]), Decimal(0))


def _workloads(backend: str, nodes: set[str], hidden: set[str]) -> dict[str, list[dict]]:
    """node -> the pods bound to it that hold GPUs, grouped by pool label, namespace and user (pods labelled with
    a pool in ``hidden`` are left out: they do not exist for the reader). One query."""
    if not nodes:
        return {}
    user = KeyTextTransform(USER_LABELS[0], "labels")
    other = KeyTextTransform(USER_LABELS[1], "labels")
    rows = (
        Pod.objects.filter(backend__name=backend, node_name__in=sorted(nodes))
        .filter(Q(gpu__gt=0) | ~Q(mig_devices={}))
        .exclude(pool_name__in=sorted(hidden))
        .annotate(labelled_user=user, other=other)
        .values("node_name", "pool_name", "namespace", "labelled_user", "other")
        .annotate(pods=Count("id"), gpu=Sum("gpu"))
        .order_by()
    )
    found: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        found[row["node_name"]].append(
            {
                "pool_label": row["pool_name"],
                "namespace": row["namespace"],
                "user": row["labelled_user"] or row["other"] or "",
                "pods": row["pods"],
                "gpu": Decimal(str(row["gpu"] or 0)),
            }
        )
    return found


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _summary(row: dict) -> str:
    """``4 nodes, 32 GPUs leave heterogeneous_pool, 7 workloads running``, and what joins."""
    parts = []
    if row["nodes_out"]:
        text = f"{_plural(len(row['nodes_out']), 'node')}, {number(row['gpus_out'])} GPUs leave {row['pool']}"
        if row["workloads_affected"]:
            text += f", {_plural(row['workloads_affected'], 'workload')} running"
        parts.append(text)
    if row["nodes_in"]:
        parts.append(f"{_plural(len(row['nodes_in']), 'node')}, {number(row['gpus_in'])} GPUs join {row['pool']}")
    return "; ".join(parts)


def config_change_effect(
    changes: Mapping, *, user, current: Mapping | None = None, placements: ChangePlacements | None = None
) -> dict:
    """What ``changes`` (``{type: {name: canonical body or None}}``) would move, as ``user`` may see it.

    ``{"pools": [...], "warnings": [...]}``: one row per pool ``user`` may see whose nodes would change, with
    ``nodes_in``/``nodes_out`` (names), ``gpus_in``/``gpus_out``, its nodes and GPUs before and after, the
    workloads running on the nodes that leave (pods holding GPUs, grouped by pool label, namespace and user) with
    their count (``workloads_affected``) and GPUs, and a one-line ``summary``; ``warnings`` are the quota
    problems the change would bring on pools ``user`` may see (a GPU guarantee above what the pool's nodes would
    have, departments deserving more than its capacity). Nothing is written. ``placements``: what
    ``change_placements`` answered for these changes, when the caller has it already.
    """
    if placements is None:
        placements = change_placements(changes, current=current)
    rows = []
    capacity: dict[str, tuple[Decimal, Decimal]] = {}
    for backend, moves in placements.backends.items():
        shown = set(access.visible(user, VIEW_POOL, sorted(moves.pools)))
        before, after = moves.members("before"), moves.members("after")
        changed = sorted(pool for pool in shown if before.get(pool, set()) != after.get(pool, set()))
        leaving = {node for pool in changed for node in before.get(pool, set()) - after.get(pool, set())}
        workloads = _workloads(backend, leaving, moves.pools - shown)
        for pool in changed:
            nodes_before, nodes_after = before.get(pool, set()), after.get(pool, set())
            capacity[pool] = (_capacity(nodes_before, moves), _capacity(nodes_after, moves))
            nodes_in, nodes_out = sorted(nodes_after - nodes_before), sorted(nodes_before - nodes_after)
            groups: dict[tuple, dict] = {}
            for node in nodes_out:
                for group in workloads.get(node, []):
                    key = (group["pool_label"], group["namespace"], group["user"])
                    total = groups.setdefault(key, {**group, "pods": 0, "gpu": Decimal(0), "nodes": []})
                    total["pods"] += group["pods"]
                    total["gpu"] += group["gpu"]
                    total["nodes"].append(node)
            listed = sorted(groups.values(), key=lambda g: (-g["gpu"], g["pool_label"], g["namespace"], g["user"]))
            row = {
                "pool": pool,
                "backend": backend,
                "nodes_in": nodes_in,
                "nodes_out": nodes_out,
                "gpus_in": number(sum((moves.nodes[node][0] for node in nodes_in), Decimal(0))),
                "gpus_out": number(sum((moves.nodes[node][0] for node in nodes_out), Decimal(0))),
                "nodes_before": len(nodes_before),
                "nodes_after": len(nodes_after),
                "gpus_before": number(sum((moves.nodes[node][0] for node in nodes_before), Decimal(0))),
                "gpus_after": number(sum((moves.nodes[node][0] for node in nodes_after), Decimal(0))),
                "workloads_affected": sum(group["pods"] for group in listed),
                "workload_gpus": number(sum((group["gpu"] for group in listed), Decimal(0))),
                "workloads": [
                    {**group, "gpu": number(group["gpu"]), "nodes": sorted(group["nodes"])}
                    for group in listed[:WORKLOAD_GROUPS_SHOWN]
                ],
            }
            row["summary"] = _summary(row)
            rows.append(row)
    return {
        "pools": sorted(rows, key=lambda row: row["pool"]),
        "warnings": _quota_warnings(changes, placements, capacity, user),
    }


def _deserved(state: Mapping, pool: str) -> Decimal:
    """GPUs the departments deserve on ``pool`` in ``state`` (a quota of -1 counts as none, as §9's warning reads)."""
    total = Decimal(0)
    for body in state[ConfigType.DEPARTMENT].values():
        for entry in body.get("resources", []):
            if entry["nodePool"] == pool:
                total += max(Decimal(0), Decimal(str(entry["gpu"]["deserved"])))
    return total


def _guarantee(state: Mapping, pool: str) -> Decimal | None:
    body = state[ConfigType.POOL].get(pool)
    if body is None:
        return None
    guarantee = ((body.get("resources") or {}).get("gpu") or {}).get("guarantee", -1)
    return None if guarantee is None or guarantee < 0 else Decimal(str(guarantee))


def _quota_warnings(changes: Mapping, placements: ChangePlacements, capacity: dict, user) -> list[str]:
    """The quota problems true after the change and not before, on the pools ``user`` may see that the change
    moves or names (a pool's body, a department's quotas)."""
    named = set(capacity) | set(changes.get(ConfigType.POOL, {}))
    for config_type in (ConfigType.DEPARTMENT, ConfigType.PROJECT):
        for name, body in changes.get(config_type, {}).items():
            for state_body in (body, placements.before[config_type].get(name)):
                named.update(entry["nodePool"] for entry in (state_body or {}).get("resources", []))
    pools = sorted(set(access.visible(user, VIEW_POOL, sorted(named))))
    if not pools:
        return []
    stored = pool_quota_capacity() if set(pools) - set(capacity) else {}
    departments = list(placements.after[ConfigType.DEPARTMENT])
    every_department = len(access.visible(user, VIEW_DEPARTMENT, departments)) == len(departments)
    warnings = []
    for pool in pools:
        gpus_before, gpus_after = capacity.get(pool) or (Decimal(str(stored.get(pool, 0))),) * 2
        guarantee_before = _guarantee(placements.before, pool)
        guarantee_after = _guarantee(placements.after, pool)
        if guarantee_after is not None and guarantee_after > gpus_after:
            if guarantee_before is None or guarantee_before <= gpus_before:
                warnings.append(
                    f"pool '{pool}': its GPU guarantee ({number(guarantee_after)}) would be more than the "
                    f"{number(gpus_after)} GPUs of its available nodes"
                )
        if not every_department:
            continue
        deserved_before, deserved_after = _deserved(placements.before, pool), _deserved(placements.after, pool)
        if deserved_after > gpus_after and not deserved_before > gpus_before:
            warnings.append(
                f"pool '{pool}' would be over-subscribed: departments deserve {number(deserved_after)} GPUs, its "
                f"capacity would be {number(gpus_after)}"
            )
    return warnings
