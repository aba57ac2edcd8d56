"""Capacity by topology (SEMANTICS §11): how many gangs of GPUs a pool can start at once, and where.

A pool's ``topology_keys`` name its levels, coarsest first (``zone``, then ``rack``). At a level, a *domain* is the
set of available nodes sharing that level's label value and every coarser level's, so ``rack-07`` of zone a and
``rack-07`` of zone b are two racks; a node missing one of those labels is in no domain of the level. The whole pool
is one more level, without a key, holding a single domain.

For a *shape* of P pods × G GPUs a node offers ``floor(free / G)`` pod slots, a domain holds
``floor(Σ slots / P)`` gangs at once, and the level's ``gangs`` adds its domains up. A node's slots do not depend
on the level, so each distinct G is divided once per node, and everything costs O(levels × nodes × shapes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real

from .errors import TopologyError

# The shapes every answer shows, before those asked for: (pods, GPUs per pod).
STANDARD_SHAPES: tuple[tuple[int, int], ...] = ((1, 1), (1, 8), (2, 8), (4, 8), (8, 8), (16, 4))
MAX_SHAPE_NUMBER = 100_000  # pods or GPUs per pod in one shape: past any real gang, and cheap to divide by
MAX_ASKED_SHAPES = 32
_SHAPE_RE = re.compile(r"\s*([0-9]{1,6})\s*[x×]\s*([0-9]{1,6})\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Shape:
    """A gang: ``pods`` pods of ``gpus_per_pod`` whole GPUs each, every pod on one node."""

    pods: int
    gpus_per_pod: int

    def __post_init__(self):
        for name, number in (("pods", self.pods), ("GPUs per pod", self.gpus_per_pod)):
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= MAX_SHAPE_NUMBER:
                raise TopologyError(f"a shape's {name} must be a whole number from 1 to {MAX_SHAPE_NUMBER:,}")

    def __str__(self):
        return f"{self.pods}x{self.gpus_per_pod}"


@dataclass(frozen=True, slots=True)
class Level:
    """A topology level: its ``key`` (``rack``) and the node label holding its value; both None for the whole pool."""

    key: str | None
    label: str | None


WHOLE_POOL = Level(None, None)


@dataclass(frozen=True, slots=True)
class TopologyNode:
    """What the capacity of one available node needs: its labels, GPU product, allocatable GPUs and GPUs in use.

    ``count`` above 1 stands for that many nodes alike in all of these (their names aside): the kept sums of a pool's
    nodes (``models.TopologySums``) come as one per domain, product, whole GPUs and free GPUs."""

    name: str
    labels: Mapping[str, str]
    product: str
    gpus: Real
    used: Real
    count: int = 1
    # Worked out once (a pool's figures read them per level and shape): allocatable GPUs rounded down, a fraction
    # of a GPU holding no pod; and whole GPUs no pod holds, capacity rounded down less usage rounded up, never
    # below zero (SEMANTICS §6).
    whole_gpus: int = field(init=False, repr=False, compare=False)
    free: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        whole = max(0, math.floor(self.gpus))
        object.__setattr__(self, "whole_gpus", whole)
        object.__setattr__(self, "free", max(0, whole - math.ceil(self.used)))


@dataclass(frozen=True, slots=True)
class Domain:
    """One domain of a level: its own label ``value``, its ``path`` (the values from the coarsest level, joined by
    ``/``) and its nodes, GPUs and free GPUs."""

    value: str
    path: str
    nodes: int
    gpus: int
    free: int


@dataclass(frozen=True, slots=True)
class ShapeCapacity:
    """One shape at one level: ``gangs`` that fit at once over the level's domains, the ``largest_gang`` (most pods
    of ``gpus_per_pod`` GPUs inside one domain) and that domain's path (None when no pod fits anywhere), and the
    ``stranded`` free GPUs no such pod can use (over the whole pool, whatever the level)."""

    pods: int
    gpus_per_pod: int
    gangs: int
    largest_gang: int
    largest_domain: str | None
    stranded: int


@dataclass(frozen=True, slots=True)
class LevelCapacity:
    """A level's domains (by path) and, per shape, what fits in them."""

    key: str | None
    label: str | None
    domains: tuple[Domain, ...]
    shapes: tuple[ShapeCapacity, ...]


def parse_shape(text: str) -> Shape:
    """``PxG`` (``4x8``, ``4×8``) as a Shape; anything else is a TopologyError saying what a shape looks like."""
    match = _SHAPE_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise TopologyError(f"'{text}' is not a shape: write PODSxGPUS, e.g. 4x8 for 4 pods of 8 GPUs")
    return Shape(int(match[1]), int(match[2]))


def shapes_to_show(asked: Iterable[str | Shape] = ()) -> tuple[Shape, ...]:
    """The standard shapes, then those asked for (texts ``PxG`` or Shapes) that are not among them, each once."""
    asked = list(asked)
    if len(asked) > MAX_ASKED_SHAPES:
        raise TopologyError(f"ask for at most {MAX_ASKED_SHAPES} shapes at once")
    shapes = [Shape(pods, gpus) for pods, gpus in STANDARD_SHAPES]
    shapes += [shape if isinstance(shape, Shape) else parse_shape(shape) for shape in asked]
    return tuple(dict.fromkeys(shapes))


def topology_levels(topology_keys: object) -> tuple[Level, ...]:
    """A pool's ``topology_keys`` (OSMO's ordered list of ``{key, label}``, coarsest first) as Levels.

    A TopologyError names the first entry that is not an object with a text ``key`` and ``label``, or a key given
    twice, so that the pool's owner knows what to fix.
    """
    if topology_keys in (None, ""):
        return ()
    if not isinstance(topology_keys, list):
        raise TopologyError("topology_keys must be a list of {key, label}")
    levels: list[Level] = []
    for index, entry in enumerate(topology_keys):
        key = entry.get("key") if isinstance(entry, dict) else None
        label = entry.get("label") if isinstance(entry, dict) else None
        if not (isinstance(key, str) and key and isinstance(label, str) and label):
            raise TopologyError(f"topology_keys[{index}] must be {{key, label}}, both non-empty texts")
        if any(level.key == key for level in levels):
            raise TopologyError(f"topology_keys[{index}]: the level '{key}' is named twice")
        levels.append(Level(key, label))
    return tuple(levels)


def topology_capacity(
    pool: str,
    nodes: Iterable[TopologyNode],
    levels: Sequence[Level],
    shapes: Sequence[Shape],
    *,
    level: str | None = None,
    gpu_product: str | None = None,
) -> tuple[LevelCapacity, ...]:
    """The whole pool (named ``pool``, its one domain's value and path), then each of ``levels``, with their domains
    and, for every shape, its gangs, largest gang and stranded GPUs (see the module's docstring).

    ``nodes`` are the pool's available nodes; with ``gpu_product``, only the nodes of that product count (a gang of
    one product). The whole pool's domain is there even when it holds no node; another level's domains are the
    ones its nodes make. With ``level`` (a level's key), only that level is answered; a key that is not one of
    ``levels`` is a TopologyError naming them.
    """
    if level and all(each.key != level for each in levels):
        known = ", ".join(each.key or "" for each in levels) or "none"
        raise TopologyError(f"the pool has no topology level '{level}' (its levels: {known})")
    if gpu_product:
        nodes = [node for node in nodes if node.product == gpu_product]
    else:
        nodes = list(nodes)
    sizes = sorted({shape.gpus_per_pod for shape in shapes})
    # Each node's figures once, times the nodes it stands for: (count, GPUs, free GPUs, {GPUs per pod: slots}).
    figures = []
    for node in nodes:
        count, free = node.count, node.free
        figures.append((count, node.whole_gpus * count, free * count, {size: free // size * count for size in sizes}))
    stranded = {size: sum(node.free % size * node.count for node in nodes) for size in sizes}
    answer = []
    if not level:
        answer.append(_level_capacity(WHOLE_POOL, [(pool,)] * len(nodes), figures, shapes, stranded, pool))
    values = _level_values(nodes, levels)
    for depth, each in enumerate(levels, start=1):
        if level and each.key != level:
            continue
        answer.append(_level_capacity(each, _paths_at(values, depth), figures, shapes, stranded))
    return tuple(answer)


def _level_values(nodes: Sequence[TopologyNode], levels: Sequence[Level]) -> list[tuple[str, ...]]:
    """Each node's values of the levels' labels, coarsest first, up to the first label it lacks."""
    labels = [each.label for each in levels]
    answer = []
    for node in nodes:
        values = []
        for label in labels:
            value = node.labels.get(label)
            if value is None:
                break
            values.append(str(value))
        answer.append(tuple(values))
    return answer


def _paths_at(values: Sequence[tuple[str, ...]], depth: int) -> list[tuple[str, ...] | None]:
    """The nodes' domain paths at the level ``depth`` (1 for the coarsest) from ``_level_values``: None for a node
    lacking one of the labels down to that level."""
    return [path[:depth] if len(path) >= depth else None for path in values]


def _level_capacity(
    level: Level,
    paths: Sequence[tuple[str, ...] | None],
    figures: Sequence[tuple[int, int, int, Mapping[int, int]]],
    shapes: Sequence[Shape],
    stranded: Mapping[int, int],
    whole_pool: str | None = None,
) -> LevelCapacity:
    """One level from its nodes' domain paths (None: in no domain) and their figures: nodes, GPUs, free GPUs and
    pod slots per GPU count."""
    sums: dict[tuple[str, ...], list] = {}  # path -> [nodes, gpus, free, {GPUs per pod: slots}]
    if whole_pool is not None:
        sums[(whole_pool,)] = [0, 0, 0, dict.fromkeys(stranded, 0)]
    for path, (count, gpus, free, node_slots) in zip(paths, figures, strict=True):
        if path is None:
            continue
        entry = sums.get(path)
        if entry is None:
            entry = sums[path] = [0, 0, 0, dict.fromkeys(stranded, 0)]
        entry[0] += count
        entry[1] += gpus
        entry[2] += free
        domain_slots = entry[3]
        for size, slots in node_slots.items():
            domain_slots[size] += slots
    ordered = sorted(sums.items())
    domains = tuple(Domain(path[-1], "/".join(path), count, gpus, free) for path, (count, gpus, free, _) in ordered)
    return LevelCapacity(
        level.key,
        level.label,
        domains,
        tuple(_shape_capacity(shape, ordered, stranded[shape.gpus_per_pod]) for shape in shapes),
    )


def _shape_capacity(shape: Shape, domains: Sequence[tuple[tuple[str, ...], list]], stranded: int) -> ShapeCapacity:
    gangs = 0
    largest, where = 0, None
    for path, (_, _, _, slots) in domains:
        pods = slots[shape.gpus_per_pod]
        gangs += pods // shape.pods
        if pods > largest:  # the first domain (by path) wins a tie
            largest, where = pods, "/".join(path)
    return ShapeCapacity(shape.pods, shape.gpus_per_pod, gangs, largest, where, stranded)


@dataclass(frozen=True, slots=True)
class DomainSlots:
    """One domain of a level (its ``path``) and the pod ``slots`` of one GPU count its nodes offer at once."""

    path: str
    slots: int


@dataclass(frozen=True, slots=True)
class GangFit:
    """Where one gang of ``shape`` could start now at a ``level`` (SEMANTICS §11, the what-if's topology).

    ``pool_slots`` are the pod slots of the whole pool (nodes in no domain of the level included); ``domains`` are
    the level's domains that could each take the whole gang, by path. ``required``: the gang ``fits`` when one
    domain takes it. Preferred: it ``fits`` when the pool's slots take it, and is ``split`` over domains when it
    fits but no single domain takes it."""

    level: str
    required: bool
    shape: Shape
    fits: bool
    split: bool
    pool_slots: int
    domains: tuple[DomainSlots, ...]


def domain_slots(nodes: Iterable[TopologyNode], levels: Sequence[Level], level: str, gpus_per_pod: int):
    """Each domain of ``level`` (a key of ``levels``) by path, with the pods of ``gpus_per_pod`` GPUs its nodes could
    start at once (``floor(free / G)`` per node, summed); a key not in ``levels`` is a TopologyError naming them."""
    depth = next((index for index, each in enumerate(levels, start=1) if each.key == level), None)
    if depth is None:
        known = ", ".join(each.key or "" for each in levels) or "none"
        raise TopologyError(f"the pool has no topology level '{level}' (its levels: {known})")
    nodes = list(nodes)
    sums: dict[tuple[str, ...], int] = {}
    for node, path in zip(nodes, _paths_at(_level_values(nodes, levels), depth), strict=True):
        if path is not None:
            sums[path] = sums.get(path, 0) + node.free // gpus_per_pod * node.count
    return tuple(DomainSlots("/".join(path), slots) for path, slots in sorted(sums.items()))


def gang_fit(
    nodes: Iterable[TopologyNode], levels: Sequence[Level], shape: Shape, *, level: str, required: bool
) -> GangFit:
    """Whether one gang of ``shape`` could start now within one domain of ``level`` (``required``) or anywhere in
    the pool and, then, whether it would be split over the level's domains (see GangFit)."""
    nodes = list(nodes)
    per_domain = domain_slots(nodes, levels, level, shape.gpus_per_pod)
    taking = tuple(domain for domain in per_domain if domain.slots >= shape.pods)
    pool_slots = sum(node.free // shape.gpus_per_pod * node.count for node in nodes)
    if required:
        fits, split = bool(taking), False
    else:
        fits = pool_slots >= shape.pods
        split = fits and not taking
    return GangFit(level, required, shape, fits, split, pool_slots, taking)


@dataclass(frozen=True, slots=True)
class PictureRow:
    """One row of a pool's topology picture: a domain's ``path`` (``None``: the nodes in no domain of the level) and
    its nodes, each ``(name, whole GPUs, free GPUs, count)`` (``count``: how many nodes alike it stands for, see
    TopologyNode), by name."""

    path: str | None
    nodes: tuple[tuple[str, int, int, int], ...]


def topology_picture(nodes: Iterable[TopologyNode], levels: Sequence[Level]) -> tuple[Level | None, tuple]:
    """A pool's GPU nodes drawn by domain: the level with the most domains (the finer one on a tie, such as racks
    rather than zones), a row per domain in path order, then a row of the GPU nodes in none of its domains.

    ``(None, ())`` when the pool has no topology levels or no GPU node. Nodes without GPUs are left out: the picture
    is of where GPUs are free.
    """
    gpu_nodes = [node for node in nodes if node.whole_gpus > 0]
    if not levels or not gpu_nodes:
        return None, ()
    best: tuple[int, int, Level, list] | None = None
    values = _level_values(gpu_nodes, levels)
    for depth, each in enumerate(levels, start=1):
        paths = _paths_at(values, depth)
        count = len({path for path in paths if path is not None})
        if best is None or (count, depth) >= (best[0], best[1]):
            best = (count, depth, each, paths)
    _, _, level, paths = best
    rows: dict[tuple[str, ...] | None, list] = {}
    for node, path in zip(gpu_nodes, paths, strict=True):
        rows.setdefault(path, []).append((node.name, node.whole_gpus, node.free, node.count))
    ordered = sorted(path for path in rows if path is not None)
    picture = [PictureRow("/".join(path), tuple(sorted(rows[path]))) for path in ordered]
    if None in rows:
        picture.append(PictureRow(None, tuple(sorted(rows[None]))))
    return level, tuple(picture)
