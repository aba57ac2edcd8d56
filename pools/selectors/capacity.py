"""GPU accounting per pool (SEMANTICS §6): the pool list, node summaries per pool and usage series.

Read from the node groups sync keeps (``node_groups``), so that the overview costs the same few queries for any
fleet size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from accounts import access

from ..choices import NodeStatus
from ..engine.accounting import TERMINATED_PHASES, NodeGpu, PoolGpu, PoolGpuInput, pool_gpu_accounting
from ..engine.permissions import VIEW_POOL
from ..filtersets import PoolFilterSet, filtered
from ..models import (
    Backend,
    Node,
    NodeGroupSums,
    NodeMembership,
    Pod,
    Pool,
    PoolPodUsage,
    UsageSample,
    placements_pairs,
    placements_pool_ids,
)
from .pools import pool_status_of


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Nodes of one backend that share their placements, availability, cordoning and GPU product, summed.

    ``free`` adds up ``max(0, gpu - used)`` node by node; ``used`` and the other sums are plain sums of the node
    columns (``pods``: non-terminated pods bound to them). Every node with a placement is in exactly one group.
    The fields from ``available`` on are ``NODE_GROUP_COLUMNS``, in their order.
    """

    placements: tuple[tuple[int, str], ...]
    pool_ids: frozenset[int]  # the pools of ``placements``
    available: bool
    cordoned: bool
    product: str
    nodes: int
    gpu: Decimal
    free: Decimal
    used: Decimal
    gpu_memory: int
    cpu: Decimal
    cpu_used: Decimal
    memory: int
    memory_used: int
    pods: int


# The ``NodeGroupSums`` columns that make a ``NodeGroup``'s fields from ``available`` on.
NODE_GROUP_COLUMNS = (
    "available",
    "unschedulable",
    "gpu_product",
    "nodes",
    "gpu",
    "free",
    "gpu_used",
    "gpu_memory",
    "cpu",
    "cpu_used",
    "memory",
    "memory_used",
    "pods",
)


def node_groups(backend_ids: Iterable[int]) -> list[NodeGroup]:
    """The placed nodes of these backends in groups, as sync and watch keep them (``NodeGroupSums``).

    A fleet has few distinct groups however many nodes and memberships it has (20,000 nodes make about a
    thousand), so only a few rows travel, in one statement (one consistent state): the pool summaries read
    these instead of every node or membership.
    """
    rows = (
        NodeGroupSums.objects.filter(backend_id__in=list(backend_ids))
        .order_by()
        .values_list("placements", *NODE_GROUP_COLUMNS)
    )
    return [
        NodeGroup(placements_pairs(placements), placements_pool_ids(placements), *columns)
        for placements, *columns in rows
    ]


def node_based_pools(pools: Iterable[dict], backend_ids: Iterable[int]) -> set[int]:
    """Ids of the pools whose usage is what runs on their nodes (SEMANTICS §8): label pools and default pools.

    ``pools`` are rows with ``id``, ``name``, ``backend_id`` and ``node_label``, and ``backend__default_pool``
    when they were read with it (``POOL_SUMMARY_COLUMNS``); without it the backends' default pools are read here.
    """
    pools = list(pools)
    if all("backend__default_pool" in pool for pool in pools):
        defaults = {(pool["backend_id"], pool["backend__default_pool"]) for pool in pools}
    else:
        defaults = set(Backend.objects.filter(id__in=list(backend_ids)).values_list("id", "default_pool"))
    return {pool["id"] for pool in pools if pool["node_label"] or (pool["backend_id"], pool["name"]) in defaults}


# What ``pool_gpu_summary`` reads of each pool.
POOL_SUMMARY_COLUMNS = ("id", "name", "backend_id", "resources", "node_label", "backend__default_pool")


def pool_gpu_summary(
    backend_ids: Iterable[int], groups: list[NodeGroup] | None = None, pools: list[dict] | None = None
) -> dict[int, PoolGpu]:
    """GPU accounting (SEMANTICS.md §6) for every pool of these backends, by pool id, in three queries.

    Reads the usage sync keeps on nodes and in ``PoolPodUsage``, never the pods themselves. The engine
    receives one stand-in node per ``node_groups`` row instead of every node: each real node is in exactly
    one group, so node sets, capacity and free GPUs come out the same (``tests/test_pool_summary.py``).
    ``groups`` are these backends' ``node_groups``, and ``pools`` rows of ``POOL_SUMMARY_COLUMNS`` of their
    pools (others are left out), when the caller has read them already.
    """
    backend_ids = set(backend_ids)
    if groups is None:
        groups = node_groups(backend_ids)
    if pools is None:
        pools = list(Pool.objects.filter(backend_id__in=backend_ids).values(*POOL_SUMMARY_COLUMNS))
    pools = [pool for pool in pools if pool["backend_id"] in backend_ids]
    node_based = node_based_pools(pools, backend_ids)
    nodes: dict[str, NodeGpu] = {}
    members = defaultdict(set)
    node_usage: dict[int, Decimal] = defaultdict(Decimal)
    for index, group in enumerate(groups):
        key = f"group-{index}"
        nodes[key] = NodeGpu(name=key, capacity=group.gpu, used=group.gpu - group.free, available=group.available)
        for pool_id in group.pool_ids:
            members[pool_id].add(key)
            node_usage[pool_id] += group.used
    usage = {
        (backend_id, pool_name): (gpu, quota)
        for backend_id, pool_name, gpu, quota in PoolPodUsage.objects.filter(backend_id__in=backend_ids).values_list(
            "backend_id", "pool_name", "gpu", "gpu_quota"
        )
    }
    inputs = []
    for pool in pools:
        if pool["id"] in node_based:
            # What runs on its nodes, whatever the pods' labels; none of it is marked preemptible.
            gpu = quota = node_usage[pool["id"]]
        else:
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


def pool_usage_where(pool: Pool) -> dict | None:
    """Where the GPUs of a pool's own workloads (``total_usage``) are (SEMANTICS §6.1): ``on_nodes`` on its node
    set, ``outside`` on other nodes (a misconfiguration to look at: ``outside_nodes`` names them, most GPUs
    first, with the pods' GPUs and count) and ``waiting`` in pods bound to no node yet, so that the three add up
    to ``total_usage`` (each rounded up as it is). None for a pool whose usage is what runs on its nodes (label
    and default pools, §8): none of it can be elsewhere. The caller has checked the pool is visible."""
    if pool.pk in node_based_pools(
        [{"id": pool.pk, "name": pool.name, "backend_id": pool.backend_id, "node_label": pool.node_label}],
        [pool.backend_id],
    ):
        return None
    gpu = pool_gpu_summary([pool.backend_id])[pool.pk]
    set_ids = [int(key) for key in gpu.node_set]
    pods = (
        Pod.objects.filter(backend_id=pool.backend_id, pool_name=pool.name, gpu__gt=0)
        .exclude(phase__in=TERMINATED_PHASES)
        .order_by()
    )
    inside = NodeMembership.objects.filter(pool_id__in=set_ids).values("node__name")
    outside = [
        {"node": row["node_name"], "gpus": _whole(row["gpus"]), "pods": row["pods"]}
        for row in pods.exclude(node_name="")
        .exclude(node_name__in=inside)
        .values("node_name")
        .annotate(gpus=Sum("gpu"), pods=Count("id"))
        .order_by("-gpus", "node_name")
    ]
    waiting = pods.filter(node_name="").aggregate(gpus=Sum("gpu"))["gpus"] or Decimal(0)
    outside_gpus = _whole(sum((Decimal(row["gpus"]) for row in outside), Decimal(0)))
    waiting_gpus = _whole(waiting)
    return {
        "total_usage": gpu.total_usage,
        "on_nodes": max(0, gpu.total_usage - outside_gpus - waiting_gpus),
        "outside": outside_gpus,
        "outside_nodes": outside,
        "waiting": waiting_gpus,
    }


def _whole(value) -> int:
    """GPUs as a whole number, rounded up as §6 rounds usage."""
    return int(Decimal(value or 0).to_integral_value(rounding="ROUND_CEILING"))


def every_pool() -> list[dict]:
    """Every pool, by name, with the columns ``pool_list`` reads (one query; not a pool's documents, which are JSON
    to decode)."""
    return list(Pool.objects.order_by("name").values(*POOL_SUMMARY_COLUMNS, *POOL_LIST_COLUMNS))


def pool_list(
    *,
    user,
    names: Iterable[str] | None = None,
    filters: Mapping | None = None,
    with_ids: bool = False,
    with_nodes: bool = False,
    with_summary: bool = False,
    every: list[dict] | None = None,
) -> list[dict]:
    """The rows of the overview, ``poolctl pool list`` and ``/api/pool-quota/``: status, node set and GPU
    numbers per pool, filtered as ``PoolFilterSet`` says (its errors raise ``ConfigError``).

    ``with_ids`` adds ``backend_id`` for callers that store rows (usage samples); ``with_nodes`` adds
    ``id``, ``created_at``, ``default`` (its backend's default pool) and ``node_count`` (gpuctl's listing),
    from the same read of the nodes; ``with_summary`` adds ``summary``, the pool's ``pool_node_summary``, from it
    too (the overview). ``every``: ``every_pool()``, when the caller has read it already.
    """
    filterset = filtered(PoolFilterSet, filters, Pool.objects.order_by("name"))
    # Every pool, once: for the numbers, and for node sets, which name only the pools the user may see (the
    # sharing itself stays visible), so visibility is decided once, over all of them.
    every = every_pool() if every is None else every
    visible = set(access.visible(user, VIEW_POOL, [row["name"] for row in every]))
    id_names = {row["id"]: row["name"] for row in every if row["name"] in visible}
    pools = [row for row in every if row["id"] in id_names]
    if names is not None:
        names = set(names)
        pools = [row for row in pools if row["name"] in names]
    if any(value not in (None, "", ()) for name, value in filterset.form.cleaned_data.items() if name != "free"):
        listed = set(filterset.qs.values_list("id", flat=True))
        pools = [row for row in pools if row["id"] in listed]
    backend_ids = {pool["backend_id"] for pool in pools}
    groups = node_groups(backend_ids)
    summary = pool_gpu_summary(backend_ids, groups, every)
    node_counts: dict[int, int] = defaultdict(int)
    if with_nodes:
        for group in groups:
            for pool_id in group.pool_ids:
                node_counts[pool_id] += group.nodes
    summaries = _node_summary({pool["id"]: pool["name"] for pool in pools}, groups) if with_summary else {}
    now = timezone.now()
    node_sets: dict[tuple, list[str]] = {}  # pools that share nodes share their node set: named once
    rows = []
    for pool in pools:
        gpu = summary[pool["id"]]
        if gpu.node_set not in node_sets:
            node_sets[gpu.node_set] = sorted(id_names[int(key)] for key in gpu.node_set if int(key) in id_names)
        status = pool_status_of(
            maintenance=pool["enable_maintenance"], last_heartbeat=pool["backend__last_heartbeat"], now=now
        )
        rows.append(
            {
                "name": pool["name"],
                "description": pool["description"],
                "status": str(status),
                "backend": pool["backend__name"],
                "shared": gpu.shared,
                "node_set": list(node_sets[gpu.node_set]),
                "gpu": gpu.as_dict(),
                **({"backend_id": pool["backend_id"]} if with_ids else {}),
                **({"summary": summaries.get(pool["name"], EMPTY_NODE_SUMMARY)} if with_summary else {}),
                **(
                    {
                        "id": pool["id"],
                        "created_at": pool["created_at"],
                        "default": pool["backend__default_pool"] == pool["name"],
                        "node_count": node_counts[pool["id"]],
                    }
                    if with_nodes
                    else {}
                ),
            }
        )
    if filterset.form.cleaned_data.get("free"):
        rows = [row for row in rows if row["gpu"]["total_free"] > 0]
    return rows


def summary_products(summary: dict) -> list[str]:
    """The GPU products of a pool's ``pool_node_summary``, sorted."""
    return sorted({product for info in summary["platforms"].values() for product in info["free_by_product"]})


def pool_totals(rows: list[dict]) -> dict:
    """The totals of ``pool_list``'s rows (SEMANTICS §6.1): capacity, free GPUs and GPUs used on the nodes once per
    node set, so pools that share nodes count them once (``used_on_nodes + total_free = total_capacity`` holds for
    the totals as for each row); the pools' own usage added up over the pools (a pod counts in its own pool only)."""
    node_sets = {tuple(row["node_set"]): row["gpu"] for row in rows}
    return {
        "total_usage": sum(row["gpu"]["total_usage"] for row in rows),
        "total_capacity": sum(gpu["total_capacity"] for gpu in node_sets.values()),
        "total_free": sum(gpu["total_free"] for gpu in node_sets.values()),
        "used_on_nodes": sum(gpu["used_on_nodes"] for gpu in node_sets.values()),
        "node_sets": len(node_sets),
    }


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


# A chart of a window up to this long reads minute samples; a longer one hourly samples (SEMANTICS §6.1: one
# resolution per chart, minutes within the last hours, then hours).
MINUTE_SERIES_SPAN = timedelta(hours=6)


def series_resolution(*, since, until) -> str:
    """The one resolution of a series over [since, until]: ``minute`` up to ``MINUTE_SERIES_SPAN``, else ``hour``."""
    minute = until - since <= MINUTE_SERIES_SPAN
    return str(UsageSample.Resolution.MINUTE if minute else UsageSample.Resolution.HOUR)


def history(samples, *, since, until, figures: tuple[str, ...], read) -> tuple[str, list[dict]]:
    """One series of sampled history (usage or utilization) over [since, until], at one resolution
    (``series_resolution``), oldest first: ``(resolution, rows)``, each row ``at`` and ``figures``.

    ``read(queryset)`` gives the rows of a queryset of ``samples`` as dicts of ``at`` and ``figures``, one per
    moment. An hourly series is the hourly samples, then, for the hours the compaction has not reached yet
    (the current one, or after a pause), the average of their minute samples, as the compaction will make it;
    no hour is drawn from a mix. Hours without any sample are simply absent (the chart draws a gap).
    """
    resolution = series_resolution(since=since, until=until)
    window = Q(at__gte=since, at__lte=until)
    if resolution == UsageSample.Resolution.MINUTE:
        return resolution, list(read(samples.filter(window, resolution=resolution).order_by("at")))
    hours = list(read(samples.filter(window, resolution=resolution).order_by("at")))
    after = hours[-1]["at"] + timedelta(hours=1) if hours else since
    minutes = read(samples.filter(window, resolution=UsageSample.Resolution.MINUTE, at__gte=after).order_by("at"))
    by_hour: dict = {}
    for row in minutes:
        by_hour.setdefault(row["at"].replace(minute=0, second=0, microsecond=0), []).append(row)
    for hour, rows in sorted(by_hour.items()):
        hours.append(
            {
                "at": hour,
                **{
                    figure: (
                        sum(values) / len(values)
                        if (values := [row[figure] for row in rows if row[figure] is not None])
                        else None
                    )
                    for figure in figures
                },
            }
        )
    return resolution, hours


USAGE_FIGURES = ("used", "capacity", "quota_used", "quota_limit")


def usage_series(*, scope: str, key: str, since, until=None) -> list[dict]:
    """Samples of one pool, GPU product or pool's quota between two times, at one resolution (``history``).

    Samples of the same time from several backends (a product in several clusters) are added up.
    """

    until = until or timezone.now()

    def read(queryset):
        return queryset.values("at").annotate(**{figure: Sum(figure) for figure in USAGE_FIGURES}).order_by("at")

    resolution, rows = history(
        UsageSample.objects.filter(scope=scope, key=key), since=since, until=until, figures=USAGE_FIGURES, read=read
    )
    return [
        {"at": row["at"].isoformat(), **{figure: row[figure] for figure in USAGE_FIGURES}, "resolution": resolution}
        for row in rows
    ]


# What a row of ``pool_list`` reads of its pool besides ``POOL_SUMMARY_COLUMNS``.
POOL_LIST_COLUMNS = ("description", "enable_maintenance", "created_at", "backend__name", "backend__last_heartbeat")
EMPTY_NODE_SUMMARY = {"nodes": {}, "platforms": {}}  # a pool whose node set is empty


def pool_node_summary(pool_names: Iterable[str]) -> dict[str, dict]:
    """Per pool name: node counts by ``NodeStatus`` and free GPUs by product per platform.

    Two queries whatever the number of pools and nodes (the pools, then ``node_groups``). A node counts once
    per pool even when several of its platforms select it. Free GPUs are counted on available nodes with a
    GPU product label: ``max(0, gpu - used)`` per node, summed.
    """
    rows = list(Pool.objects.filter(name__in=list(pool_names)).values_list("id", "name", "backend_id"))
    return _node_summary({pool_id: name for pool_id, name, _ in rows}, node_groups({b for _, _, b in rows}))


def _node_summary(pools: dict[int, str], groups: list[NodeGroup]) -> dict[str, dict]:
    """``pool_node_summary`` of these pools (id -> name) from their backends' ``node_groups``."""
    summary: dict[str, dict] = {}
    statuses = NodeStatus.values  # Django builds this list anew on every access: once, not per group and pool
    for group in groups:
        state = NodeStatus.of(available=group.available, cordoned=group.cordoned).value
        for pool_id in group.pool_ids & pools.keys():
            entry = summary.setdefault(pools[pool_id], {"nodes": dict.fromkeys(statuses, 0), "platforms": {}})
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


def usage_samples_visible(*, user):
    """Usage samples of the pools ``user`` may read; GPU-product samples (fleet-wide) need ``LIST_FLEET``."""
    return UsageSample.objects.restrict(user).select_related("backend")
