"""GPU accounting: effective pod requests, node sets of shared pools, per-pool quota (SEMANTICS §6).

Every number the product shows about capacity, usage and quota comes from here, so the pool page, the API
and the CLI always agree.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from .errors import QuantityError
from .quantities import parse_quantity

TERMINATED_PHASES = frozenset({"Succeeded", "Failed"})


def pod_resource_requests(pod_spec: Mapping, *, warnings: list[str] | None = None) -> dict[str, Decimal]:
    """Return the effective request of a pod per resource name, as the Kubernetes scheduler computes it.

    For each resource: the larger of the biggest init-container request and the sum of the app-container
    requests, plus the pod ``overhead``. Sidecars (init containers with ``restartPolicy: Always``) keep
    running, so they count with the app containers and with every init container that starts after them.
    A container's request falls back to its limit, as Kubernetes defaults requests to limits. A value that
    is not a quantity is skipped, with a message appended to ``warnings`` when a list is given.
    """
    warnings = [] if warnings is None else warnings
    apps: dict[str, Decimal] = {}
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in _containers(pod_spec, "initContainers"):
        requests = _container_requests(container, warnings)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            candidates = sidecars
        else:
            candidates = {name: sidecars.get(name, Decimal(0)) + value for name, value in requests.items()}
        for name, value in candidates.items():
            init_peak[name] = max(init_peak.get(name, value), value)
    for container in _containers(pod_spec, "containers"):
        _add(apps, _container_requests(container, warnings))
    _add(apps, sidecars)
    effective = {name: max(apps.get(name, Decimal(0)), init_peak.get(name, Decimal(0))) for name in apps | init_peak}
    _add(effective, _quantities(pod_spec.get("overhead"), "overhead", warnings))
    return effective


def _containers(pod_spec: Mapping, field: str) -> list[Mapping]:
    containers = pod_spec.get(field) or []
    return (
        [container for container in containers if isinstance(container, Mapping)]
        if isinstance(containers, list)
        else []
    )


def _container_requests(container: Mapping, warnings: list[str]) -> dict[str, Decimal]:
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        return {}
    where = f"container '{container.get('name', '?')}'"
    limits = _quantities(resources.get("limits"), f"{where} limits", warnings)
    requests = _quantities(resources.get("requests"), f"{where} requests", warnings)
    return limits | requests


def _quantities(values, where: str, warnings: list[str]) -> dict[str, Decimal]:
    if not isinstance(values, Mapping):
        return {}
    parsed = {}
    for name, value in values.items():
        try:
            parsed[name] = parse_quantity(value)
        except QuantityError:
            warnings.append(f"{where}: {name} '{value}' is not a quantity; ignored")
    return parsed


def _add(total: dict[str, Decimal], amounts: Mapping[str, Decimal]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, Decimal(0)) + value


@dataclass(frozen=True)
class NodeGpu:
    """A node's GPUs: allocatable capacity and the requests of its non-terminated pods."""

    name: str
    capacity: Decimal
    used: Decimal
    available: bool = True


@dataclass(frozen=True)
class PoolGpuInput:
    """A pool as accounting sees it: its nodes, its guarantee (-1 = none) and its own pods' ``(gpu, preemptible)``."""

    name: str
    nodes: frozenset[str]
    guarantee: int = -1
    pod_requests: tuple[tuple[Decimal, bool], ...] = ()


@dataclass(frozen=True)
class PoolGpu:
    """The GPU numbers of one pool; ``node_set`` names the pools whose nodes it shares (itself included)."""

    quota_used: int
    quota_limit: int
    quota_free: int
    total_usage: int
    total_capacity: int
    total_free: int
    shared: bool
    node_set: tuple[str, ...]
    used_on_nodes: int = 0

    def as_dict(self) -> dict:
        """Return the six numbers as OSMO's pool listing names them, and ``used_on_nodes`` (SEMANTICS §6.1)."""
        return {field: getattr(self, field) for field in GPU_FIGURES}


# A pool's GPU figures in the order every door shows them: OSMO's six, then what its node set's pods use.
GPU_FIGURES = (
    "quota_used",
    "quota_limit",
    "quota_free",
    "total_usage",
    "total_capacity",
    "total_free",
    "used_on_nodes",
)


def node_sets(pool_nodes: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """Return, for every pool, the sorted names of the pools in its node set (itself included).

    Pools that share a node, directly or through a chain of pools, are in one set. Pass only available
    nodes: an unavailable node must not join pools. Runs in near-linear time (union-find).
    """
    parent = {pool: pool for pool in pool_nodes}

    def root(pool: str) -> str:
        while parent[pool] != pool:
            parent[pool] = parent[parent[pool]]  # path halving keeps the trees flat
            pool = parent[pool]
        return pool

    owner: dict[str, str] = {}
    for pool, nodes in pool_nodes.items():
        for node in nodes:
            first = owner.setdefault(node, pool)
            if first != pool:
                parent[root(pool)] = root(first)
    members: dict[str, list[str]] = {}
    for pool in pool_nodes:
        members.setdefault(root(pool), []).append(pool)
    groups = {group_root: tuple(sorted(names)) for group_root, names in members.items()}
    return {pool: groups[root(pool)] for pool in pool_nodes}


def _ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _floor(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_FLOOR))


def pool_gpu_accounting(pools: Sequence[PoolGpuInput], nodes: Mapping[str, NodeGpu]) -> dict[str, PoolGpu]:
    """Return the GPU numbers of every pool, keyed by pool name.

    Only available nodes known to ``nodes`` count. Capacity and free GPUs are summed over the pool's node
    set, each node once: ``total_capacity`` rounded down, ``total_free`` = sum of ``max(0, capacity - used)``
    rounded down; ``used_on_nodes`` is what pods of any pool hold on the node set, each node's clamped at its
    capacity: ``total_capacity - total_free``, so the three add up (SEMANTICS §6.1). ``total_usage`` and
    ``quota_used`` (non-preemptible pods only) are the pool's own pods, wherever they run, rounded up.
    ``quota_limit`` is the guarantee, or the node set's capacity when it is negative.
    ``quota_free`` is ``quota_limit - quota_used`` clamped at 0: a pool over its quota has nothing free,
    and the overrun stays visible as ``quota_used > quota_limit``. Linear in pools plus nodes.
    """
    available = {name for name, node in nodes.items() if node.available}
    pool_nodes = {pool.name: frozenset(pool.nodes) & available for pool in pools}
    sets = node_sets(pool_nodes)

    set_nodes: dict[tuple[str, ...], set[str]] = {}
    for pool_name, members in sets.items():
        set_nodes.setdefault(members, set()).update(pool_nodes[pool_name])
    set_totals = {
        members: (
            _floor(sum((nodes[name].capacity for name in names), Decimal(0))),
            _floor(sum((max(Decimal(0), nodes[name].capacity - nodes[name].used) for name in names), Decimal(0))),
        )
        for members, names in set_nodes.items()
    }

    result = {}
    for pool in pools:
        members = sets[pool.name]
        capacity, free = set_totals[members]
        usage = _ceil(sum((gpu for gpu, _ in pool.pod_requests), Decimal(0)))
        quota_used = _ceil(sum((gpu for gpu, preemptible in pool.pod_requests if not preemptible), Decimal(0)))
        quota_limit = pool.guarantee if pool.guarantee >= 0 else capacity
        result[pool.name] = PoolGpu(
            quota_used=quota_used,
            quota_limit=quota_limit,
            quota_free=max(0, quota_limit - quota_used),
            total_usage=usage,
            total_capacity=capacity,
            total_free=free,
            shared=len(members) > 1,
            node_set=members,
            used_on_nodes=capacity - free,
        )
    return result


RESERVED, SHARED, UNUSED = "RESERVED", "SHARED", "UNUSED"


def resource_type(pool_count: int) -> str:
    """Return how a node is used: ``UNUSED`` (in no pool), ``RESERVED`` (one pool) or ``SHARED`` (several)."""
    if pool_count <= 0:
        return UNUSED
    return RESERVED if pool_count == 1 else SHARED


def usage_pair(used: Decimal, capacity: Decimal, unit: Decimal = Decimal(1)) -> tuple[int, int]:
    """Return ``(used, capacity)`` in ``unit``: used rounded up, capacity rounded down, used within [0, capacity].

    Raises ``QuantityError`` when ``unit`` is not positive.
    """
    if unit <= 0:
        raise QuantityError(f"unit '{unit}' must be positive")
    capacity_units = max(0, _floor(Decimal(capacity) / Decimal(unit)))
    used_units = _ceil(Decimal(used) / Decimal(unit))
    return min(max(0, used_units), capacity_units), capacity_units
