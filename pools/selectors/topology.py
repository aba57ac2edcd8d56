"""Capacity by topology (SEMANTICS §11): the gangs of GPUs a pool can start, per topology level and shape."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from django.db.models import Count, IntegerField, Q, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Ceil, Floor, Greatest

from ..choices import NodeStatus
from ..engine.errors import ConfigError, NotFound, TopologyError
from ..engine.topology import TopologyNode, shapes_to_show, topology_capacity, topology_levels, topology_picture
from ..models import Node, NodeMembership, Pool, TopologySums
from ..querysets import node_status_q

# Past this many GPU nodes the picture counts each domain's nodes by how free they are instead of drawing each one: a
# cell per node of a 5,000-node pool would be most of a 650 KiB page.
PICTURE_NODES = 600


def pool_capacity(
    name: str,
    *,
    user,
    shapes: Sequence[str] = (),
    level: str | None = None,
    gpu_product: str | None = None,
) -> dict:
    """``{"pool", "levels": [...]}``: the whole pool, then each level of its ``topology_keys`` (only ``level``'s
    when one is named), with their domains and, for the standard shapes and those asked (``PxG`` texts), the gangs
    that fit at once, the largest gang and its domain, and the stranded GPUs.

    Two queries: the pool, as ``pool_get`` finds it (a pool the user may not see does not exist for them), then its
    available member nodes. A bad shape or level is a ConfigError naming the parameter (``shape``, ``level``).
    """
    pool = Pool.objects.restrict(user).filter(name=name).only("id", "name", "topology_keys").first()
    if pool is None:
        raise NotFound(f"pool '{name}' does not exist")
    return pool_capacity_of(pool, shapes=shapes, level=level, gpu_product=gpu_product)


def pool_capacity_of(
    pool: Pool,
    *,
    shapes: Sequence[str] = (),
    level: str | None = None,
    gpu_product: str | None = None,
    picture: bool = False,
) -> dict:
    """``pool_capacity`` of a pool the caller has read as visible already (the pool page's), in one query.

    With ``picture``, also ``"picture"``: the pool's GPU nodes drawn by domain of its level with the most domains
    (``engine.topology.topology_picture``), ``{"level": {"key", "label"}, "drawn", "rows": [{"path", "label", "free",
    "gpus", "node_count", "states": {"full", "partly", "free"}, "nodes": [{"name", "gpus", "free", "state"}]}]}``
    (``state``: ``full``, ``partly`` or ``free``; ``nodes`` empty and ``drawn`` false past ``PICTURE_NODES`` nodes:
    the counts by state stand for them), or None without levels; the pool page draws it, the API's shape (SEMANTICS
    §11) has no such part."""
    try:
        wanted_shapes = shapes_to_show(shapes)
    except TopologyError as exc:
        raise ConfigError(str(exc), field="shape") from None
    try:
        levels = topology_levels(pool.topology_keys)
    except TopologyError as exc:
        raise ConfigError(f"pool '{pool.name}': {exc}", field="topology_keys") from None
    wanted = [each.label for each in levels]
    nodes = _kept_nodes(pool, wanted) if levels else None
    if nodes is None or (picture and sum(node.count for node in nodes if node.whole_gpus) <= PICTURE_NODES):
        nodes = _member_nodes(pool, wanted)  # each node: no sums kept yet, or a picture drawing every node
    try:
        answer = topology_capacity(
            pool.name, nodes, levels, wanted_shapes, level=level or None, gpu_product=gpu_product or None
        )
    except TopologyError as exc:
        raise ConfigError(str(exc), field="level") from None
    found = {
        "pool": pool.name,
        "levels": [
            {
                "key": each.key,
                "label": each.label,
                "domains": [
                    {"value": d.value, "path": d.path, "nodes": d.nodes, "gpus": d.gpus, "free": d.free}
                    for d in each.domains
                ],
                "shapes": [
                    {
                        "pods": s.pods,
                        "gpus_per_pod": s.gpus_per_pod,
                        "gangs": s.gangs,
                        "largest_gang": s.largest_gang,
                        "largest_domain": s.largest_domain,
                        "stranded": s.stranded,
                    }
                    for s in each.shapes
                ],
            }
            for each in answer
        ],
    }
    if picture:
        found["picture"] = _picture(nodes, levels)
    return found


def _available_members(pool_id: int):
    return Node.objects.filter(node_status_q(NodeStatus.AVAILABLE)).filter(
        pk__in=NodeMembership.objects.filter(pool_id=pool_id).values("node_id")
    )


def _member_nodes(pool: Pool, wanted: list[str]) -> list[TopologyNode]:
    """The pool's available nodes one by one, with only the labels ``wanted`` read (by the database, not every label
    decoded from JSON: a GPU node carries some forty)."""
    rows = (
        _available_members(pool.pk)
        .order_by()
        .values_list("name", "gpu_product", "gpu", "gpu_used", *(KT(f"labels__{label}") for label in wanted))
    )
    return [
        TopologyNode(name, _labels(wanted, values), product, gpu, used) for name, product, gpu, used, *values in rows
    ]


def _labels(wanted: Sequence[str], values: Sequence[str | None]) -> dict[str, str]:
    return {label: value for label, value in zip(wanted, values, strict=True) if value is not None}


def _kept_nodes(pool: Pool, wanted: list[str]) -> list[TopologyNode] | None:
    """The pool's available nodes as sync and watch keep them summed (``TopologySums``), one TopologyNode per
    domain, product, GPUs and free GPUs with its ``count``; None when no whole set is kept for these levels."""
    rows = list(
        TopologySums.objects.filter(pool_id=pool.pk, levels=json.dumps(wanted)).values_list(
            "domain", "gpu_product", "gpus", "free", "nodes"
        )
    )
    if not any(domain == TopologySums.COMPLETE for domain, *_ in rows):
        return None
    labels_of: dict[str, dict[str, str]] = {}  # a domain's rows share its labels: each read once
    nodes = []
    for domain, product, gpus, free, count in rows:
        if domain != TopologySums.COMPLETE:
            labels = labels_of.get(domain)
            if labels is None:
                labels = labels_of[domain] = _labels(wanted, json.loads(domain))
            nodes.append(TopologyNode("", labels, product, gpus, gpus - free, count))
    return nodes


def topology_domain_counts(
    pool_id: int, wanted: Sequence[str], domains: Iterable[tuple[str | None, ...]] | None = None
) -> list[tuple[tuple[str | None, ...], str, int, int, int]]:
    """The pool's available nodes counted by their values of the labels ``wanted`` (None where a node lacks one),
    GPU product, whole GPUs and whole free GPUs (``engine.topology.TopologyNode``'s), grouped by the database:
    ``[(values, product, gpus, free, nodes)]``. With ``domains``, only the nodes having one of those values.

    What ``services.topology_sums_refresh`` keeps as ``TopologySums``."""
    names = [f"level_{index}" for index in range(len(wanted))]
    nodes = _available_members(pool_id).annotate(
        **{name: KT(f"labels__{label}") for name, label in zip(names, wanted, strict=True)},
        whole=Cast(Floor("gpu"), IntegerField()),
        whole_free=Cast(Greatest(Floor("gpu") - Ceil("gpu_used"), Value(0)), IntegerField()),
    )
    if domains is not None:
        matching = Q(pk__in=[])
        for values in domains:
            domain = Q()
            for label, value in zip(wanted, values, strict=True):
                domain &= ~Q(labels__has_key=label) if value is None else Q(**{f"labels__{label}": value})
            matching |= domain
        nodes = nodes.filter(matching)
    rows = nodes.order_by().values(*names, "gpu_product", "whole", "whole_free").annotate(count=Count("id"))
    return [
        (
            tuple(row[name] for name in names),
            row["gpu_product"],
            int(row["whole"]),
            int(row["whole_free"]),
            row["count"],
        )
        for row in rows
    ]


def _picture(nodes: list[TopologyNode], levels) -> dict | None:
    level, rows = topology_picture(nodes, levels)
    if level is None:
        return None

    def state(gpus: int, free: int) -> str:
        return "full" if free == 0 else "free" if free == gpus else "partly"

    drawn = sum(count for row in rows for *_, count in row.nodes) <= PICTURE_NODES
    pictured = []
    for row in rows:
        counts = {"full": 0, "partly": 0, "free": 0}
        for _, gpus, free, count in row.nodes:
            counts[state(gpus, free)] += count
        pictured.append(
            {
                "path": row.path,
                "label": row.path if row.path is not None else f"in no {level.key}",
                "gpus": sum(gpus * count for _, gpus, _, count in row.nodes),
                "free": sum(free * count for _, _, free, count in row.nodes),
                "node_count": sum(count for *_, count in row.nodes),
                "states": counts,
                "nodes": [
                    {"name": name, "gpus": gpus, "free": free, "state": state(gpus, free)}
                    for name, gpus, free, _ in row.nodes
                ]
                if drawn
                else [],
            }
        )
    return {"level": {"key": level.key, "label": level.label}, "drawn": drawn, "rows": pictured}
