"""Capacity by topology (SEMANTICS §11): hand-worked fleets, and gangs checked against every placement of small
fleets."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import EngineError, TopologyError
from pools.engine.topology import (
    STANDARD_SHAPES,
    DomainSlots,
    Level,
    Shape,
    TopologyNode,
    domain_slots,
    gang_fit,
    parse_shape,
    shapes_to_show,
    topology_capacity,
    topology_levels,
    topology_picture,
)

ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"
LEVELS = (Level("zone", ZONE), Level("rack", RACK))


def gpu_node(name, zone=None, rack=None, *, gpus=8, used=0, product="H100"):
    labels = {key: value for key, value in ((ZONE, zone), (RACK, rack)) if value is not None}
    return TopologyNode(name, labels, product, gpus, used)


def by_key(levels):
    return {level.key: level for level in levels}


def shape_of(level, pods, gpus):
    return next(s for s in level.shapes if (s.pods, s.gpus_per_pod) == (pods, gpus))


# Two zones, each with a rack named r1: two distinct racks. n5 has no rack label, n6 no label at all.
FLEET = (
    gpu_node("n1", "a", "r1", used=2),  # 6 free
    gpu_node("n2", "a", "r1"),  # 8 free
    gpu_node("n3", "a", "r2", used=8),  # 0 free
    gpu_node("n4", "b", "r1", used=1),  # 7 free
    gpu_node("n5", "b", None),  # 8 free, in zone b but in no rack
    gpu_node("n6"),  # 8 free, in no zone and no rack
)


def test_racks_named_alike_in_two_zones_are_two_domains():
    levels = by_key(topology_capacity("p", FLEET, LEVELS, shapes_to_show()))
    assert [(d.value, d.path, d.nodes, d.gpus, d.free) for d in levels["rack"].domains] == [
        ("r1", "a/r1", 2, 16, 14),
        ("r2", "a/r2", 1, 8, 0),
        ("r1", "b/r1", 1, 8, 7),
    ]
    assert [(d.path, d.nodes, d.free) for d in levels["zone"].domains] == [("a", 3, 14), ("b", 2, 15)]
    assert [(d.value, d.path, d.nodes, d.gpus, d.free) for d in levels[None].domains] == [("p", "p", 6, 48, 37)]
    assert [level.key for level in topology_capacity("p", FLEET, LEVELS, ())] == [None, "zone", "rack"]


def test_gangs_largest_gang_and_stranded_by_level():
    levels = by_key(topology_capacity("p", FLEET, LEVELS, shapes_to_show(["2x4", "3x2"])))
    # 8-GPU pods: only n2, n5 and n6 have 8 free; n1 (6) and n4 (7) strand theirs.
    whole, zone, rack = levels[None], levels["zone"], levels["rack"]
    assert (shape_of(whole, 2, 8).gangs, shape_of(zone, 2, 8).gangs, shape_of(rack, 2, 8).gangs) == (1, 0, 0)
    assert shape_of(whole, 1, 8).stranded == 6 + 7 == shape_of(rack, 1, 8).stranded
    assert (shape_of(rack, 1, 8).largest_gang, shape_of(rack, 1, 8).largest_domain) == (1, "a/r1")
    # 4-GPU pods: slots n1 1, n2 2, n4 1, n5 2, n6 2; rack a/r1 holds 3, b/r1 1; zone a 3, zone b 3.
    assert (shape_of(rack, 2, 4).gangs, shape_of(zone, 2, 4).gangs, shape_of(whole, 2, 4).gangs) == (1, 2, 4)
    assert (shape_of(zone, 2, 4).largest_gang, shape_of(zone, 2, 4).largest_domain) == (3, "a")
    assert shape_of(whole, 2, 4).stranded == 2 + 3
    # 2-GPU pods in threes: a/r1 has 3 + 4 slots, b/r1 3; the whole pool 3 + 4 + 3 + 4 + 4 = 18.
    assert (shape_of(rack, 3, 2).gangs, shape_of(whole, 3, 2).gangs) == (2 + 1, 6)
    assert shape_of(whole, 3, 2).stranded == 1
    assert shape_of(whole, 1, 1).gangs == 37 and shape_of(whole, 1, 1).stranded == 0


def test_no_pod_fits_anywhere_has_no_largest_domain():
    levels = topology_capacity("p", [gpu_node("n1", "a", "r1", gpus=4, used=1)], LEVELS, shapes_to_show())
    for level in levels:
        big = shape_of(level, 1, 8)
        assert (big.gangs, big.largest_gang, big.largest_domain, big.stranded) == (0, 0, None, 3)


def test_product_filter_counts_only_that_product():
    fleet = [
        gpu_node("h1", "a", "r1"),
        gpu_node("b1", "a", "r1", product="B200"),
        gpu_node("b2", "b", "r1", product="B200"),
    ]
    levels = by_key(topology_capacity("p", fleet, LEVELS, shapes_to_show(), gpu_product="B200"))
    assert [(d.path, d.nodes, d.free) for d in levels["rack"].domains] == [("a/r1", 1, 8), ("b/r1", 1, 8)]
    assert shape_of(levels[None], 2, 8).gangs == 1 and shape_of(levels["rack"], 2, 8).gangs == 0
    unfiltered = by_key(topology_capacity("p", fleet, LEVELS, shapes_to_show()))
    assert shape_of(unfiltered["rack"], 2, 8).gangs == 1  # h1 and b1 share rack a/r1: one gang of mixed products


def test_an_empty_pool_is_one_empty_domain():
    levels = topology_capacity("p", [], LEVELS, shapes_to_show())
    assert [(d.path, d.nodes, d.gpus, d.free) for d in levels[0].domains] == [("p", 0, 0, 0)]
    assert levels[1].domains == () and levels[2].domains == ()
    assert {s.gangs for level in levels for s in level.shapes} == {0}


def test_fractions_of_gpus_round_as_accounting_does():
    node = gpu_node("n1", gpus=8.5, used=0.5)
    assert (node.whole_gpus, node.free) == (8, 7)
    assert gpu_node("n2", gpus=2, used=5).free == 0


def test_one_level_only():
    levels = topology_capacity("p", FLEET, LEVELS, shapes_to_show(), level="rack")
    assert [level.key for level in levels] == ["rack"]
    assert [d.path for d in levels[0].domains] == ["a/r1", "a/r2", "b/r1"]  # paths still name the zone
    with pytest.raises(TopologyError, match="no topology level 'row'.*zone, rack"):
        topology_capacity("p", FLEET, LEVELS, (), level="row")


def test_shapes_standard_then_asked_once():
    shapes = shapes_to_show(["4x8", "3×2", " 5X1 "])
    assert [(s.pods, s.gpus_per_pod) for s in shapes] == [*STANDARD_SHAPES, (3, 2), (5, 1)]
    assert str(parse_shape("16x4")) == "16x4"


@pytest.mark.parametrize("text", ["", "4", "4x", "x8", "4x8x2", "-1x8", "4*8", "4.5x8", "٤x8", None])
def test_a_shape_that_is_not_pods_by_gpus_is_refused(text):
    with pytest.raises(TopologyError, match="is not a shape"):
        parse_shape(text)


@pytest.mark.parametrize(("text", "what"), [("0x8", "pods"), ("4x0", "GPUs per pod"), ("200000x1", "pods")])
def test_a_shape_needs_at_least_one_pod_and_one_gpu(text, what):
    with pytest.raises(EngineError, match=f"shape's {what} must be a whole number from 1"):
        parse_shape(text)
    with pytest.raises(TopologyError):
        Shape(0, 1)


def test_too_many_shapes_are_refused():
    with pytest.raises(TopologyError, match="at most"):
        shapes_to_show(["1x1"] * 33)


def test_topology_levels_read_osmo_topology_keys():
    assert topology_levels([{"key": "zone", "label": ZONE}, {"key": "rack", "label": RACK}]) == LEVELS
    assert topology_levels([]) == () and topology_levels(None) == ()
    for bad, message in (
        ({"key": "zone"}, "must be a list"),
        ([{"key": "zone"}], r"topology_keys\[0\] must be"),
        ([{"key": "zone", "label": ZONE}, "rack"], r"topology_keys\[1\] must be"),
        ([{"key": "zone", "label": ZONE}, {"key": "zone", "label": RACK}], "named twice"),
    ):
        with pytest.raises(TopologyError, match=message):
            topology_levels(bad)


# --- against brute force -----------------------------------------------------------------------------------------


def most_pods(frees, gpus_per_pod):
    """The most pods of ``gpus_per_pod`` GPUs placed at once on nodes with these free GPUs, found by trying every
    number of pods on every node (no division involved)."""
    best = 0
    for counts in itertools.product(*(range(free + 1) for free in frees)):
        if all(count * gpus_per_pod <= free for count, free in zip(counts, frees, strict=True)):
            best = max(best, sum(counts))
    return best


def most_gangs(frees, pods, gpus_per_pod):
    """The most gangs of ``pods`` pods placed at once: grow the number of gangs while some assignment of all their
    pods to nodes (each pod on one node, no node past its free GPUs) exists."""
    gangs = 0
    while any(
        sum(counts) == (gangs + 1) * pods and all(c * gpus_per_pod <= f for c, f in zip(counts, frees, strict=True))
        for counts in itertools.product(*(range(free + 1) for free in frees))
    ):
        gangs += 1
    return gangs


small_nodes = st.lists(
    st.tuples(st.sampled_from("ab"), st.sampled_from(["r1", "r2", None]), st.integers(0, 5), st.integers(0, 6)),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(nodes=small_nodes, pods=st.integers(1, 3), gpus_per_pod=st.integers(1, 4))
def test_gangs_and_largest_gang_match_every_placement(nodes, pods, gpus_per_pod):
    fleet = [gpu_node(f"n{i}", zone, rack, gpus=gpus, used=used) for i, (zone, rack, gpus, used) in enumerate(nodes)]
    shape = Shape(pods, gpus_per_pod)
    for level in topology_capacity("p", fleet, LEVELS, (shape,)):
        members = {domain.path: [] for domain in level.domains}
        for node in fleet:
            if level.key is None:
                members["p"].append(node.free)
            elif level.key == "zone":
                members[node.labels[ZONE]].append(node.free)
            elif RACK in node.labels:
                members[f"{node.labels[ZONE]}/{node.labels[RACK]}"].append(node.free)
        (answer,) = level.shapes
        assert answer.gangs == sum(most_gangs(frees, pods, gpus_per_pod) for frees in members.values())
        largest = max((most_pods(frees, gpus_per_pod) for frees in members.values()), default=0)
        assert answer.largest_gang == largest
        if largest:
            assert most_pods(members[answer.largest_domain], gpus_per_pod) == largest
        assert answer.stranded == sum(node.free % gpus_per_pod for node in fleet)


@settings(max_examples=150, deadline=None)
@given(nodes=small_nodes, sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_nodes_counted_alike_answer_as_the_nodes_one_by_one(nodes, sizes):
    """The kept sums stand for their nodes: a TopologyNode with ``count`` n answers as n such nodes."""
    fleet = [gpu_node(f"n{i}", zone, rack, gpus=gpus, used=used) for i, (zone, rack, gpus, used) in enumerate(nodes)]
    alike = Counter((tuple(sorted(node.labels.items())), node.whole_gpus, node.free) for node in fleet)
    counted = [
        TopologyNode("", dict(labels), "H100", gpus, gpus - free, count)
        for (labels, gpus, free), count in alike.items()
    ]
    shapes = tuple(Shape(pods, size) for pods, size in zip((1, 2, 3), sizes, strict=False))
    assert topology_capacity("p", counted, LEVELS, shapes) == topology_capacity("p", fleet, LEVELS, shapes)
    shape = shapes[0]
    assert gang_fit(counted, LEVELS, shape, level="rack", required=False) == gang_fit(
        fleet, LEVELS, shape, level="rack", required=False
    )


# --- one gang's place: per-domain pod slots for one shape (the what-if's topology) -------------------------------


def test_domain_slots_per_level_for_one_gpu_count():
    assert domain_slots(FLEET, LEVELS, "rack", 4) == (
        DomainSlots("a/r1", 3),  # n1 6 free: 1 slot, n2 8 free: 2
        DomainSlots("a/r2", 0),
        DomainSlots("b/r1", 1),
    )
    assert domain_slots(FLEET, LEVELS, "zone", 8) == (DomainSlots("a", 1), DomainSlots("b", 1))
    with pytest.raises(TopologyError, match="no topology level 'row' \\(its levels: zone, rack\\)"):
        domain_slots(FLEET, LEVELS, "row", 4)


@pytest.mark.parametrize("pods", [1, 2, 3, 5])
@pytest.mark.parametrize("gpus", [1, 4, 8])
def test_domain_slots_agree_with_the_capacity_of_the_level(pods, gpus):
    for level in topology_capacity("p", FLEET, LEVELS, [Shape(pods, gpus)]):
        if level.key is None:
            continue
        slots = domain_slots(FLEET, LEVELS, level.key, gpus)
        assert [d.path for d in slots] == [d.path for d in level.domains]
        shape = level.shapes[0]
        assert sum(d.slots // pods for d in slots) == shape.gangs
        assert max(d.slots for d in slots) == shape.largest_gang


def test_a_required_gang_fits_only_inside_one_domain():
    fit = gang_fit(FLEET, LEVELS, Shape(2, 4), level="rack", required=True)
    assert (fit.fits, fit.split, fit.pool_slots, fit.domains) == (True, False, 8, (DomainSlots("a/r1", 3),))
    too_big = gang_fit(FLEET, LEVELS, Shape(4, 4), level="rack", required=True)
    assert (too_big.fits, too_big.split, too_big.domains) == (False, False, ())


def test_a_preferred_gang_fits_in_the_pool_and_says_whether_it_is_split():
    whole = gang_fit(FLEET, LEVELS, Shape(3, 4), level="rack", required=False)
    assert (whole.fits, whole.split, [d.path for d in whole.domains]) == (True, False, ["a/r1"])
    # 4 pods of 4 GPUs: no rack offers 4 slots, but the pool offers 8 (n5 and n6 are in no rack and still count).
    split = gang_fit(FLEET, LEVELS, Shape(4, 4), level="rack", required=False)
    assert (split.fits, split.split, split.pool_slots, split.domains) == (True, True, 8, ())
    nowhere = gang_fit(FLEET, LEVELS, Shape(9, 4), level="zone", required=False)
    assert (nowhere.fits, nowhere.split) == (False, False)


def test_the_picture_draws_the_level_with_the_most_domains_a_row_per_domain():
    levels = topology_levels(
        [{"key": "zone", "label": "zone"}, {"key": "rack", "label": "rack"}, {"key": "clique", "label": "clique"}]
    )
    nodes = [
        TopologyNode("a2", {"zone": "z1", "rack": "r1"}, "H100", 8, 8),
        TopologyNode("a1", {"zone": "z1", "rack": "r1"}, "H100", 8, 3),
        TopologyNode("b1", {"zone": "z1", "rack": "r2", "clique": "c1"}, "GB200", 4, 0),
        TopologyNode("c1", {"zone": "z2"}, "H100", 8, 0),
        TopologyNode("cpu", {"zone": "z1", "rack": "r1"}, "", 0, 0),
    ]
    level, rows = topology_picture(nodes, levels)
    assert level.key == "rack"  # zone and rack have 2 domains each: the finer; the clique level has 1
    assert [(row.path, row.nodes) for row in rows] == [
        ("z1/r1", (("a1", 8, 5, 1), ("a2", 8, 0, 1))),
        ("z1/r2", (("b1", 4, 4, 1),)),
        (None, (("c1", 8, 8, 1),)),  # in no rack; the CPU node is not drawn
    ]
    assert topology_picture(nodes, ()) == (None, ())
