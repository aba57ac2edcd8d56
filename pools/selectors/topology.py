"""Capacity by topology (SEMANTICS §11): the gangs of GPUs a pool can start, per topology level and shape."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models.fields.json import KT

from ..choices import NodeStatus
from ..engine.errors import ConfigError, NotFound, TopologyError
from ..engine.topology import TopologyNode, shapes_to_show, topology_capacity, topology_levels, topology_picture
from ..models import Node, NodeMembership, Pool
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
    # Only the levels' labels are read of each node (by the database), not every label decoded from JSON: a GPU node
    # carries some forty.
    wanted = [each.label for each in levels]
    rows = (
        Node.objects.filter(node_status_q(NodeStatus.AVAILABLE))
        .filter(pk__in=NodeMembership.objects.filter(pool_id=pool.pk).values("node_id"))
        .order_by()
        .values_list("name", "gpu_product", "gpu", "gpu_used", *(KT(f"labels__{label}") for label in wanted))
    )
    nodes = [
        TopologyNode(
            name,
            {label: value for label, value in zip(wanted, values, strict=True) if value is not None},
            product,
            gpu,
            used,
        )
        for name, product, gpu, used, *values in rows
    ]
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


def _picture(nodes: list[TopologyNode], levels) -> dict | None:
    level, rows = topology_picture(nodes, levels)
    if level is None:
        return None

    def state(gpus: int, free: int) -> str:
        return "full" if free == 0 else "free" if free == gpus else "partly"

    drawn = sum(len(row.nodes) for row in rows) <= PICTURE_NODES
    pictured = []
    for row in rows:
        cells = [
            {"name": name, "gpus": gpus, "free": free, "state": state(gpus, free)} for name, gpus, free in row.nodes
        ]
        counts = {"full": 0, "partly": 0, "free": 0}
        for cell in cells:
            counts[cell["state"]] += 1
        pictured.append(
            {
                "path": row.path,
                "label": row.path if row.path is not None else f"in no {level.key}",
                "gpus": sum(cell["gpus"] for cell in cells),
                "free": sum(cell["free"] for cell in cells),
                "node_count": len(cells),
                "states": counts,
                "nodes": cells if drawn else [],
            }
        )
    return {"level": {"key": level.key, "label": level.label}, "drawn": drawn, "rows": pictured}
