"""SEMANTICS §9.2: reclaim as KAI's proportion plugin decides it, the what-if part.

Each hand-worked case spells out the arithmetic in a comment; the properties check what §9.2 promises whatever the
figures: a reclaimer within its fair share at every level is never refused by saturation, removing victims never
raises an allocation, and the same input gives the same answer whatever the order of the queues.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import ConfigError
from pools.engine.reclaim import MAX_DEPTH, MAX_VICTIMS, Reclaimer, Unit, reclaim, reclaim_verdict

U = Unit


def department(*projects, name="d", deserved=8, fair_share=8):
    """A department over its projects (its own allocated is their sum)."""
    return [U(name, deserved=deserved, fair_share=fair_share), *(p._replace(parent=name) for p in projects)]


# --- two projects of one department ------------------------------------------------------------------------------


def test_two_projects_keep_fair_share():
    # p1 holds 1 of its fair share 4 and asks 2: 3 ≤ 4, it may start. Pair (p1, p2): p2 holds 7 > allocatable
    # max(4, 4) = 4, keep fair share holds; p2 drops to 5, d to 8. Saturation at p1 against p2: (1 + 2) / 4 = 0.75.
    units = department(U("p1", deserved=4, fair_share=4, allocated=1), U("p2", deserved=4, fair_share=4, allocated=7))
    verdict = reclaim_verdict(units, Reclaimer("p1", 2), [("p2", 2)])
    assert verdict.can_reclaim and verdict.reclaimable and verdict.refused_by is None
    assert verdict.reasons[0] == "p1 may start a reclaim: allocated 1 + request 2 = 3 ≤ fair share 4."
    assert "keep fair share holds: p2 allocated 7 > allocatable 4" in verdict.reasons[1]
    assert "(1 + 2) / 4 = 0.75" in verdict.reasons[2] and "passes" in verdict.reasons[2]
    assert verdict.allocated == {"d": 6, "p1": 1, "p2": 5}


def test_guarantee_deserved_holds_where_keep_fair_share_does_not():
    # p2 holds 4, its allocatable is max(2, 5) = 5: keep fair share fails. p1: 0 + 2 ≤ deserved 3, and p2's 4 > its
    # deserved 2: guarantee deserved holds.
    units = department(U("p1", deserved=3, fair_share=3, allocated=0), U("p2", deserved=2, fair_share=5, allocated=4))
    verdict = reclaim_verdict(units, Reclaimer("p1", 2), [("p2", 1)])
    assert verdict.reclaimable
    assert (
        "guarantee deserved holds: p1 allocated 0 + request 2 = 2 ≤ deserved 3 and p2 allocated 4 > deserved 2"
        in (verdict.reasons[1])
    )


def test_both_checks_fail_and_the_reason_says_which_pair():
    # As above but p1 deserves 1: 0 + 2 > 1, and p2's 4 ≤ allocatable 5.
    units = department(U("p1", deserved=1, fair_share=3, allocated=0), U("p2", deserved=2, fair_share=5, allocated=4))
    verdict = reclaim_verdict(units, Reclaimer("p1", 2), [("p2", 1)])
    assert verdict.can_reclaim and not verdict.reclaimable and verdict.refused_by == "leveled pair"
    assert verdict.reasons[1].startswith("Victim 1 (1 GPUs of p2), leveled pair p1 / p2: not reclaimable")
    assert "p2 allocated 4 > allocatable 5" in verdict.reasons[1] and "neither holds" in verdict.reasons[1]
    assert verdict.allocated["p2"] == 4  # nothing removed


def test_a_victim_whose_removal_drops_the_victim_side_to_its_allocatable_stops_the_next():
    # p2 holds 4 over allocatable max(2, 3) = 3: the first victim passes and leaves 3; the second sees 3 > 3 false,
    # and p1's guarantee (0 + 1 ≤ deserved 0) fails too.
    units = department(U("p1", deserved=0, fair_share=2), U("p2", deserved=2, fair_share=3, allocated=4))
    verdict = reclaim_verdict(units, Reclaimer("p1", 1), [("p2", 1), ("p2", 1)])
    assert not verdict.reclaimable and verdict.refused_by == "leveled pair"
    assert "keep fair share holds: p2 allocated 4 > allocatable 3" in verdict.reasons[1]
    assert (
        verdict.reasons[2].startswith("Victim 2 (1 GPUs of p2)")
        and "p2 allocated 3 > allocatable 3" in (verdict.reasons[2])
    )
    assert verdict.allocated == {"d": 3, "p1": 0, "p2": 3}


def test_the_allocatable_is_capped_by_the_limit_and_is_the_limit_for_a_deserved_of_minus_one():
    units = department(U("p1", deserved=0, fair_share=2), U("p2", deserved=-1, limit=3, fair_share=6, allocated=4))
    verdict = reclaim_verdict(units, Reclaimer("p1", 1), [("p2", 1)])
    assert "p2 allocated 4 > allocatable 3" in verdict.reasons[1] and verdict.reclaimable
    units = department(U("p1", deserved=0, fair_share=2), U("p2", deserved=2, limit=3, fair_share=6, allocated=4))
    assert reclaim_verdict(units, Reclaimer("p1", 1), [("p2", 1)]).reclaimable


# --- two departments ---------------------------------------------------------------------------------------------


def test_two_departments_level_the_pair_at_the_departments():
    # a1's and b1's lowest common ancestor is the top: the pair is (A, B). B holds 3 + 3 = 6 > allocatable 4.
    # After, b1 holds 2 and B 5. Saturation at a1: no sibling of a1 lost GPUs; at A against B: (1 + 2) / 4 = 0.75.
    units = [
        *department(U("a1", deserved=4, fair_share=4, allocated=1), name="A", deserved=4, fair_share=4),
        *department(
            U("b1", deserved=2, fair_share=2, allocated=3),
            U("b2", deserved=2, fair_share=2, allocated=3),
            name="B",
            deserved=4,
            fair_share=4,
        ),
    ]
    verdict = reclaim_verdict(units, Reclaimer("a1", 2), [("b1", 1)])
    assert verdict.can_reclaim and verdict.reclaimable
    assert verdict.reasons[1].startswith("Victim 1 (1 GPUs of b1), leveled pair A / B: keep fair share holds")
    assert verdict.reasons[2].startswith("Saturation of A against B: A's ratio (1 + 2) / 4 = 0.75")
    assert verdict.allocated == {"A": 1, "a1": 1, "B": 5, "b1": 2, "b2": 3}


def test_top_level_units_without_a_common_ancestor_pair_with_each_other():
    units = [U("x", fair_share=2), U("y", deserved=1, fair_share=1, allocated=3)]
    verdict = reclaim_verdict(units, Reclaimer("x", 1), [("y", 1)])
    assert "leveled pair x / y" in verdict.reasons[1] and verdict.reclaimable


# --- saturation ----------------------------------------------------------------------------------------------------


SATURATED = department(U("p1", deserved=2, fair_share=2, allocated=2), U("p2", deserved=2, fair_share=2, allocated=6))


@pytest.mark.parametrize(("multiplier", "reclaimable"), [(1, True), (0.5, True), (1.6, True), (2, False)])
def test_saturation_refuses_with_a_large_enough_multiplier(multiplier, reclaimable):
    # p1: (2 + 1) / 2 = 1.5 > 1. p2 after the victim: 5 / 2 = 2.5. 1.5 × 1 and 1.5 × 1.6 = 2.4 stay below 2.5;
    # 1.5 × 2 = 3 ≥ 2.5 refuses. A multiplier of 0.5 counts as 1.
    verdict = reclaim_verdict(SATURATED, Reclaimer("p1", 1), [("p2", 1)], multiplier)
    assert not verdict.can_reclaim  # 2 + 1 > 2, judged apart
    assert verdict.reclaimable is reclaimable
    assert verdict.reasons[-1].startswith("Saturation of p1 against p2: p1's ratio (2 + 1) / 2 = 1.5, p2's 5 / 2 = 2.5")
    if not reclaimable:
        assert verdict.refused_by == "saturation" and "1.5 × multiplier 2 ≥ 2.5" in verdict.reasons[-1]


def test_saturation_skips_a_sibling_whose_fair_share_is_zero_or_unlimited():
    for fair_share, word in ((0, "0"), (-1, "unlimited")):
        units = department(U("p1", deserved=5, fair_share=1, allocated=1), U("p2", fair_share=fair_share, allocated=6))
        verdict = reclaim_verdict(units, Reclaimer("p1", 1), [("p2", 1)], 10)
        assert verdict.reclaimable, verdict.reasons
        assert verdict.reasons[-1].endswith(f"passes, as p2's fair share is {word}.")


def test_a_reclaimer_with_a_fair_share_of_zero_has_an_infinite_ratio():
    units = department(U("p1", fair_share=0), U("p2", fair_share=1, allocated=6))
    verdict = reclaim_verdict(units, Reclaimer("p1", 1), [("p2", 1)])
    assert verdict.refused_by == "saturation" and "= ∞" in verdict.reasons[-1]


def test_no_victims_leaves_nothing_to_compare():
    units = department(U("p1", fair_share=4), U("p2", fair_share=4))
    verdict = reclaim_verdict(units, Reclaimer("p1", 1), [])
    assert verdict.can_reclaim and verdict.reclaimable
    assert verdict.reasons[-1] == "Saturation: no sibling of p1 or of its ancestors lost GPUs."


# --- a non-preemptible reclaimer -------------------------------------------------------------------------------------


def test_a_non_preemptible_reclaimer_must_stay_within_its_deserved_to_start():
    # Fair share: 1 + 2 = 3 ≤ 4. Deserved: non-preemptible 1 + 2 = 3 > 2.
    units = department(U("p1", deserved=2, fair_share=4, allocated=1, allocated_nonpreemptible=1), U("p2"))
    assert reclaim_verdict(units, Reclaimer("p1", 2), []).can_reclaim
    verdict = reclaim_verdict(units, Reclaimer("p1", 2, preemptible=False), [])
    assert not verdict.can_reclaim
    assert verdict.reasons[1] == (
        "As the job is non-preemptible, p1 also needs allocated_nonpreemptible 1 + request 2 = 3 ≤ deserved 2: "
        "it does not."
    )


def test_a_non_preemptible_reclaimer_must_stay_within_the_deserved_of_every_level():
    # p1: 0 + 2 ≤ 4. d: its non-preemptible is p2's 2, and 2 + 2 = 4 > d's deserved 3.
    units = department(
        U("p1", deserved=4, fair_share=4),
        U("p2", deserved=1, fair_share=1, allocated=5, allocated_nonpreemptible=2),
        deserved=3,
    )
    assert reclaim_verdict(units, Reclaimer("p1", 2), [("p2", 1)]).reclaimable
    verdict = reclaim_verdict(units, Reclaimer("p1", 2, preemptible=False), [("p2", 1)])
    assert verdict.can_reclaim and not verdict.reclaimable and verdict.refused_by == "non-preemptible"
    assert verdict.reasons[-1] == (
        "Non-preemptible at d: allocated_nonpreemptible 2 + request 2 = 4 > deserved 3; not reclaimable."
    )


def test_decimal_figures_stay_exact_in_the_reasons():
    units = department(U("p1", fair_share=1.5, allocated=0.25), U("p2", fair_share=0.5, allocated=2.5))
    verdict = reclaim_verdict(units, Reclaimer("p1", 0.75), [("p2", 0.1)])
    assert verdict.reasons[0] == "p1 may start a reclaim: allocated 0.25 + request 0.75 = 1 ≤ fair share 1.5."
    assert verdict.allocated["p2"] == pytest.approx(2.4)


# --- the document and bad input --------------------------------------------------------------------------------------


DOCUMENT = {
    "queues": [
        {"name": "d", "deserved": 8, "fair_share": 8},
        {"name": "p1", "parent": "d", "deserved": 4, "fair_share": 4, "allocated": 1},
        {"name": "p2", "parent": "d", "deserved": 4, "fair_share": 4, "allocated": 7},
    ],
    "reclaimer": {"queue": "p1", "gpus": 2, "preemptible": True},
    "victims": [["p2", 2]],
    "multiplier": 1,
}


def test_the_document_answers_exactly_the_three_fields():
    answer = reclaim(DOCUMENT)
    assert set(answer) == {"can_reclaim", "reclaimable", "reasons"}
    assert answer["can_reclaim"] is True and answer["reclaimable"] is True and len(answer["reasons"]) == 3


def fields_of(document):
    with pytest.raises(ConfigError) as raised:
        reclaim(document)
    assert all(problem.message for problem in raised.value.problems)
    return {problem.field for problem in raised.value.problems}


def with_(**changes):
    return {**DOCUMENT, **changes}


@pytest.mark.parametrize(
    ("document", "fields"),
    [
        ([1, 2], {""}),
        ({}, {"queues", "reclaimer"}),
        (with_(extra=1), {"extra"}),
        (with_(reclaimer={"queue": "nobody", "gpus": 1}), {"reclaimer.queue"}),
        (with_(reclaimer={"queue": "p1"}), {"reclaimer.gpus"}),
        (with_(reclaimer={"queue": "p1", "gpus": -1}), {"reclaimer.gpus"}),
        (with_(reclaimer={"queue": "p1", "gpus": 0}), {"reclaimer.gpus"}),
        (with_(reclaimer={"queue": "p1", "gpus": 1, "preemptible": "no"}), {"reclaimer.preemptible"}),
        (with_(reclaimer={"queue": "d", "gpus": 1}), {"reclaimer.queue"}),
        (with_(victims=[["p1", 1]]), {"victims[0]"}),
        (with_(victims=[["d", 1]]), {"victims[0]"}),
        (with_(victims=[["ghost", 1]]), {"victims[0]"}),
        (with_(victims=[["p2", -2]]), {"victims[0]"}),
        (with_(victims=[["p2"]]), {"victims[0]"}),
        (with_(victims="p2"), {"victims"}),
        (with_(victims=[["p2", 4], ["p2", 4]]), {"victims[1]"}),
        (with_(multiplier=-1), {"multiplier"}),
        (with_(multiplier=1e300), {"multiplier"}),
        (
            with_(queues=[*DOCUMENT["queues"][:2], {**DOCUMENT["queues"][2], "fair_share": -2}]),
            {"queues[2].fair_share"},
        ),
        (with_(queues=[*DOCUMENT["queues"][:2], {**DOCUMENT["queues"][2], "allocated": -1}]), {"queues[2].allocated"}),
        (
            with_(queues=[*DOCUMENT["queues"][:2], {**DOCUMENT["queues"][2], "allocated_nonpreemptible": 8}]),
            {"queues[2].allocated_nonpreemptible"},
        ),
        (with_(queues=[*DOCUMENT["queues"], {"name": "p1"}]), {"queues[3].name"}),
        (with_(queues=[*DOCUMENT["queues"], {"name": "x", "parent": "ghost"}]), {"queues[3].parent"}),
        (with_(queues=[*DOCUMENT["queues"], {"parent": "d"}]), {"queues[3].name"}),
        (with_(queues=[*DOCUMENT["queues"], {"name": "x", "weight": 2}]), {"queues[3].weight"}),
    ],
)
def test_bad_input_names_every_field(document, fields):
    assert fields_of(document) >= fields


def test_a_cycle_is_refused_naming_its_units():
    queues = [*DOCUMENT["queues"], {"name": "x", "parent": "y"}, {"name": "y", "parent": "x"}]
    with pytest.raises(ConfigError, match="the parents form a cycle: x → y → x"):
        reclaim(with_(queues=queues))


def test_a_victim_in_the_reclaimers_own_unit_is_refused():
    with pytest.raises(ConfigError, match="the reclaimer's own unit"):
        reclaim(with_(victims=[["p1", 1]]))


def test_a_tree_deeper_than_the_bound_is_refused():
    queues = [{"name": "u0"}] + [{"name": f"u{i}", "parent": f"u{i - 1}"} for i in range(1, MAX_DEPTH + 1)]
    with pytest.raises(ConfigError, match=f"deeper than {MAX_DEPTH} levels"):
        reclaim({"queues": queues, "reclaimer": {"queue": f"u{MAX_DEPTH}", "gpus": 1}})
    deepest = MAX_DEPTH - 1
    assert reclaim({"queues": queues[:MAX_DEPTH], "reclaimer": {"queue": f"u{deepest}", "gpus": 1}})["reclaimable"]


def test_too_many_victims_are_refused_before_any_work():
    victims = [["p2", 0.001]] * (MAX_VICTIMS + 1)
    with pytest.raises(ConfigError, match="at most 10,000"):
        reclaim(with_(victims=victims))


# --- properties ----------------------------------------------------------------------------------------------------


AMOUNTS = st.integers(min_value=0, max_value=12)


@st.composite
def cases(draw):
    """Departments with projects, a reclaimer and victims that their units can hold."""
    departments = draw(st.integers(min_value=1, max_value=3))
    units, leaves = [], []
    for d in range(departments):
        units.append(
            U(
                f"d{d}",
                deserved=draw(st.sampled_from([-1, 0, 2, 5, 9])),
                limit=draw(st.sampled_from([-1, 4, 12])),
                fair_share=draw(st.sampled_from([-1, 0, 3, 6, 10])),
            )
        )
        for p in range(draw(st.integers(min_value=1, max_value=3))):
            allocated = draw(AMOUNTS)
            leaves.append(len(units))
            units.append(
                U(
                    f"p{d}{p}",
                    parent=f"d{d}",
                    deserved=draw(st.sampled_from([-1, 0, 1, 3, 6])),
                    limit=draw(st.sampled_from([-1, 2, 8])),
                    fair_share=draw(st.sampled_from([-1, 0, 1, 3, 6])),
                    allocated=allocated,
                    allocated_nonpreemptible=draw(st.integers(min_value=0, max_value=allocated)),
                )
            )
    reclaimer = units[draw(st.sampled_from(leaves))]
    others = [units[i] for i in leaves if units[i].name != reclaimer.name]
    room = {unit.name: unit.allocated - unit.allocated_nonpreemptible for unit in others}
    victims = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        candidates = [name for name, free in room.items() if free > 0]
        if not candidates:
            break
        name = draw(st.sampled_from(sorted(candidates)))
        gpus = draw(st.integers(min_value=1, max_value=room[name]))
        room[name] -= gpus
        victims.append((name, gpus))
    request = Reclaimer(reclaimer.name, draw(st.integers(min_value=1, max_value=6)), draw(st.booleans()))
    return units, request, victims, draw(st.sampled_from([0, 1, 1.5, 3]))


def allocations(units):
    """Every unit's allocation before any victim: a leaf's as given, a department's its projects' sum."""
    totals = {unit.name: unit.allocated for unit in units if unit.parent is not None}
    for unit in units:
        if unit.parent is None:
            totals[unit.name] = sum(u.allocated for u in units if u.parent == unit.name)
    return totals


def path(units, name):
    parents = {unit.name: unit.parent for unit in units}
    while name is not None:
        yield name
        name = parents[name]


@settings(max_examples=300, deadline=None)
@given(cases())
def test_a_reclaimer_within_its_fair_share_at_every_level_is_never_refused_by_saturation(case):
    units, reclaimer, victims, multiplier = case
    before = allocations(units)
    fair = {unit.name: unit.fair_share for unit in units}
    within = all(
        fair[name] == -1 or before[name] + reclaimer.gpus <= fair[name] for name in path(units, reclaimer.queue)
    )
    verdict = reclaim_verdict(units, reclaimer, victims, multiplier)
    if within:
        assert verdict.refused_by != "saturation", verdict.reasons


@settings(max_examples=300, deadline=None)
@given(cases())
def test_removing_victims_never_raises_an_allocation_and_removes_no_more_than_they_hold(case):
    units, reclaimer, victims, multiplier = case
    before = allocations(units)
    verdict = reclaim_verdict(units, reclaimer, victims, multiplier)
    assert all(verdict.allocated[name] <= before[name] for name in before)
    assert sum(before[u.name] - verdict.allocated[u.name] for u in units if u.parent) <= sum(g for _, g in victims)


@settings(max_examples=200, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_the_same_input_gives_the_same_answer_whatever_the_order_of_the_queues(case, rng: random.Random):
    units, reclaimer, victims, multiplier = case
    first = reclaim_verdict(units, reclaimer, victims, multiplier)
    shuffled = list(units)
    rng.shuffle(shuffled)
    assert reclaim_verdict(units, reclaimer, victims, multiplier) == first
    assert reclaim_verdict(shuffled, reclaimer, victims, multiplier) == first


@settings(max_examples=200, deadline=None)
@given(cases())
def test_can_reclaim_is_the_fair_share_check_and_the_deserved_check_for_a_non_preemptible_job(case):
    units, reclaimer, victims, multiplier = case
    unit = next(u for u in units if u.name == reclaimer.queue)
    expected = unit.fair_share == -1 or unit.allocated + reclaimer.gpus <= unit.fair_share
    if not reclaimer.preemptible:
        expected = expected and (unit.deserved == -1 or unit.allocated_nonpreemptible + reclaimer.gpus <= unit.deserved)
    verdict = reclaim_verdict(units, reclaimer, victims, multiplier)
    assert verdict.can_reclaim is expected
    assert verdict.reclaimable is (verdict.refused_by is None)
