"""SEMANTICS §9.1: fair share of a pool's GPUs between departments and projects (KAI's proportion plugin).

The hand-computed cases spell out each step's arithmetic in a comment; the properties check the bounds §9.1
promises and compare ``fair_shares`` with ``reference``, a literal transcription of §9.1 in ``Fraction``s.
"""

import json
import math
import random
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pools.engine.errors import ConfigError
from pools.engine.fairshare import MAX_QUEUES, Queue, fair_shares, json_number, simulate

Q = Queue
F = Fraction


def shares(capacity, *queues):
    return fair_shares(capacity, queues)


# --- the reference: §9.1 word for word, in Fractions, with none of the engine's shortcuts ------------------------


def reference(capacity, queues, k=0):
    """§9.1, and §9.3's offers when ``k`` is above 0 (each queue's ``usage``)."""
    k = max(F(0), F(Decimal(repr(k))) if isinstance(k, float) else F(k))
    order = {q.name: (q.creation_order if q.creation_order is not None else i) for i, q in enumerate(queues)}
    kids = {}
    for q in queues:
        kids.setdefault(q.parent, []).append(q)

    def request(q):
        return sum((request(kid) for kid in kids[q.name]), F(0)) if q.name in kids else F(q.request)

    result = {}

    def divide(amount, members):
        requestable, share = {}, {}
        for q in members:
            requestable[q.name] = request(q) if q.limit == -1 else min(request(q), F(q.limit))
            deserved = amount if q.deserved == -1 else F(q.deserved)
            if q.over_quota_weight is None:  # limit = deserved
                requestable[q.name] = min(requestable[q.name], deserved)
            share[q.name] = min(deserved, requestable[q.name])
        remaining = amount - sum(share.values())
        if remaining > 0:
            weight = {q.name: F(q.over_quota_weight or 0) for q in members}
            usage = {q.name: F(Decimal(repr(q.usage))) if isinstance(q.usage, float) else F(q.usage) for q in members}
            notes_by_group = []
            for priority in sorted({q.priority for q in members}, reverse=True):
                group = [q.name for q in members if q.priority == priority]
                notes = {}
                while remaining > 0:
                    unsatisfied = [n for n in group if requestable[n] - share[n] > 0]
                    total = sum(weight[n] for n in unsatisfied)
                    if total == 0:
                        break
                    # §9.3: s = max(0, nW + k × (nW − usage)), nW = w / Σw; with k = 0, s = nW and Σs = 1
                    s = {n: max(F(0), weight[n] / total + k * (weight[n] / total - usage[n])) for n in unsatisfied}
                    if sum(s.values()) == 0:
                        break
                    at_start, again = remaining, False
                    for n in unsatisfied:
                        if weight[n] == 0 or s[n] == 0:
                            continue
                        offer = at_start * s[n] / sum(s.values())
                        missing = requestable[n] - share[n]
                        if missing <= offer:
                            share[n] += missing
                            remaining -= missing
                            again = again or missing < offer
                            notes.pop(n, None)
                        else:
                            share[n] += math.floor(offer)
                            remaining -= math.floor(offer)
                            if offer != math.floor(offer):
                                notes[n] = offer - math.floor(offer)
                    if not again:
                        break
                notes_by_group.append(notes)
            for notes in notes_by_group:
                for n in sorted(notes, key=lambda n: (-notes[n], order[n], n)):
                    gift = min(F(1), remaining)
                    if gift > 0:
                        share[n] += gift
                        remaining -= gift
        result.update(share)
        for q in members:
            if q.name in kids:
                divide(share[q.name], kids[q.name])

    divide(F(capacity), kids.get(None, []))
    return {q.name: result[q.name] for q in queues}


# --- the deserved phase -------------------------------------------------------------------------------------------


def test_nothing_requested_nothing_shared():
    assert shares(10, Q("a"), Q("b", deserved=5)) == {"a": 0, "b": 0}


def test_no_queues_no_shares():
    assert fair_shares(8, []) == {}


def test_deserved_parts_that_fit_are_given_in_full():
    assert shares(10, Q("a", deserved=4, request=4), Q("b", deserved=6, request=6)) == {"a": 4, "b": 6}


def test_the_deserved_part_is_capped_by_the_request():
    # min(8, 3) = 3; remaining 7, but a is satisfied and b asks for nothing.
    assert shares(10, Q("a", deserved=8, request=3), Q("b", deserved=1)) == {"a": 3, "b": 0}


def test_deserved_parts_may_over_subscribe_and_then_nothing_more_is_given():
    # 8 + 8 = 16 > 10: both keep their deserved part; remaining -6, so c (deserved 0) gets nothing.
    result = shares(10, Q("a", deserved=8, request=9), Q("b", deserved=8, request=8), Q("c", request=5))
    assert result == {"a": 8, "b": 8, "c": 0}


def test_remaining_exactly_zero_gives_nothing_more():
    assert shares(10, Q("a", deserved=4, request=9), Q("b", deserved=6, request=9)) == {"a": 4, "b": 6}


def test_priority_is_ignored_in_the_deserved_phase():
    result = shares(6, Q("low", deserved=4, request=4, priority=1), Q("high", deserved=4, request=4, priority=900))
    assert result == {"low": 4, "high": 4}


def test_deserved_minus_one_is_the_whole_amount():
    # a: min(8, 5) = 5; b: min(8, 10) = 8: 13 > 8, over-subscribed, nothing more.
    assert shares(8, Q("a", deserved=-1, request=5), Q("b", deserved=-1, request=10)) == {"a": 5, "b": 8}


def test_deserved_minus_one_alone_takes_the_amount_up_to_its_request():
    assert shares(8, Q("a", deserved=-1, request=20)) == {"a": 8}
    assert shares(8, Q("a", deserved=-1, request=3)) == {"a": 3}


# --- limits and weights -------------------------------------------------------------------------------------------


def test_the_limit_caps_the_requestable():
    # requestable a = min(10, 2) = 2. Round 1, offers 10 × 2/4 = 5 each: a takes its 2 (less than its offer:
    # another round), b takes 5. Round 2, R = 3, b alone: offer 3, b takes 3.
    assert shares(10, Q("a", limit=2, request=10), Q("b", request=10)) == {"a": 2, "b": 8}


def test_the_limit_caps_the_deserved_part_too():
    assert shares(10, Q("a", deserved=6, limit=2, request=10, over_quota_weight=0)) == {"a": 2}


def test_limit_zero_means_nothing():
    assert shares(10, Q("a", deserved=5, limit=0, request=10), Q("b", request=10)) == {"a": 0, "b": 10}


def test_limit_minus_one_is_unlimited():
    assert shares(100, Q("a", limit=-1, request=70)) == {"a": 70}


def test_weight_zero_gets_its_deserved_part_only():
    # a: deserved 2; remaining 8 goes to b alone (W = 1).
    assert shares(10, Q("a", deserved=2, request=10, over_quota_weight=0), Q("b", request=10, over_quota_weight=1)) == {
        "a": 2,
        "b": 8,
    }


def test_weight_zero_alone_leaves_the_rest_undivided():
    assert shares(10, Q("a", deserved=2, request=10, over_quota_weight=0)) == {"a": 2}


def test_weight_none_means_no_over_quota():
    # a: deserved 3 (limit = deserved); b: remaining 7.
    result = shares(10, Q("a", deserved=3, request=10, over_quota_weight=None), Q("b", request=10))
    assert result == {"a": 3, "b": 7}


def test_weight_none_with_a_lower_limit_keeps_the_limit():
    assert shares(10, Q("a", deserved=5, limit=2, request=10, over_quota_weight=None)) == {"a": 2}


def test_weight_none_with_deserved_minus_one_takes_the_amount_up_to_its_request():
    assert shares(10, Q("a", deserved=-1, request=30, over_quota_weight=None), Q("b", request=5)) == {"a": 10, "b": 0}


def test_weights_one_two_three_divide_in_proportion():
    # W = 6, R = 12: offers 2, 4, 6, all whole.
    result = shares(*weighted(12, 1, 2, 3))
    assert result == {"w1": 2, "w2": 4, "w3": 6}


def weighted(capacity, *weights, request=100):
    return capacity, *(Q(f"w{w}", request=request, over_quota_weight=w) for w in weights)


def test_weights_one_two_three_in_whole_gpus_then_the_leftover():
    # W = 6, R = 10: offers 10/6, 20/6, 30/6 → take 1, 3, 5 and note 2/3, 1/3, 0. Nobody was satisfied: no other
    # round. Leftover R = 1: the largest noted fraction (w1, 2/3) takes it.
    assert shares(*weighted(10, 1, 2, 3)) == {"w1": 2, "w2": 3, "w3": 5}


def test_fractional_weights_are_ratios():
    assert shares(*weighted(12, Decimal("0.5"), 1, Fraction(3, 2))) == {"w0.5": 2, "w1": 4, "w3/2": 6}


def test_a_weight_w_is_the_same_as_k_times_w():
    assert list(shares(*weighted(10, 1, 2, 3)).values()) == list(shares(*weighted(10, 10, 20, 30)).values())


# --- rounds and the leftover step ---------------------------------------------------------------------------------


def test_another_round_gives_what_a_satisfied_member_left():
    # Round 1, offers 10/3 each: a takes its 1.5 (less than its offer), b and c take 3 and note 1/3.
    # Round 2, R = 2.5, W = 2 × 2: offers 1.25: b and c take 1, note 1/4 (the latest round's note).
    # Leftover R = 0.5: b and c tie at 1/4, b was created first and takes min(1, 0.5) = 0.5.
    result = shares(10, Q("a", request=Decimal("1.5")), Q("b", request=20), Q("c", request=20))
    assert result == {"a": F(3, 2), "b": F(9, 2), "c": 4}


def test_a_tie_goes_to_the_one_created_first_then_to_the_name():
    queues = [
        Q("a", request=Decimal("1.5")),
        Q("b", request=20, creation_order=5),
        Q("c", request=20, creation_order=2),
    ]
    assert fair_shares(10, queues) == {"a": F(3, 2), "b": 4, "c": F(9, 2)}
    queues = [
        Q("a", request=Decimal("1.5")),
        Q("c", request=20, creation_order=1),
        Q("b", request=20, creation_order=1),
    ]
    assert fair_shares(10, queues) == {"a": F(3, 2), "c": 4, "b": F(9, 2)}


def test_a_member_satisfied_with_exactly_its_offer_calls_no_other_round():
    # W = 5, R = 7: offers 1.4, 2.8, 2.8. a takes exactly 1.4 (not less than its offer: no other round); b and c
    # take 2 and note 0.8. Leftover R = 1.6: b (created first) takes 1, c takes 0.6.
    result = shares(
        7,
        Q("a", request=Decimal("1.4"), over_quota_weight=1),
        Q("b", request=10, over_quota_weight=2),
        Q("c", request=10, over_quota_weight=2),
    )
    assert result == {"a": F(7, 5), "b": 3, "c": F(13, 5)}


def test_a_member_satisfied_in_a_later_round_loses_its_note():
    # Round 1, W = 3, R = 10: a (w 1, wants 4) is offered 10/3, takes 3, notes 1/3; b (w 2, wants 1) takes 1 and
    # is satisfied with less. Round 2, R = 6, a alone: takes its last 1, its note goes. Leftover: none noted.
    result = shares(10, Q("a", request=4, over_quota_weight=1), Q("b", request=1, over_quota_weight=2))
    assert result == {"a": 4, "b": 1}


def test_the_leftover_gpu_may_pass_the_requestable():
    # W = 3, R = 3.6: offers 1.2 each. a (wants 1.5), b and c take 1 and note 0.2. Leftover R = 0.6: a, created
    # first, takes min(1, 0.6): 1.6, more than its 1.5. §9.1: only the leftover step can do that.
    result = shares(Decimal("3.6"), Q("a", request=Decimal("1.5")), Q("b", request=10), Q("c", request=10))
    assert result == {"a": F(8, 5), "b": 1, "c": 1}


def test_one_gpu_among_three_equal_members_goes_to_the_one_created_first():
    # Offers 1/3 each: all take 0 and note 1/3; the leftover GPU goes to the first created.
    assert shares(1, Q("x", request=5), Q("y", request=5), Q("z", request=5)) == {"x": 1, "y": 0, "z": 0}
    queues = [Q("x", request=5, creation_order=3), Q("y", request=5, creation_order=1), Q("z", request=5)]
    assert fair_shares(1, queues) == {"x": 0, "y": 1, "z": 0}  # z: position 2 > creation order 1


def test_a_single_member_gets_no_more_than_its_requestable():
    assert shares(10, Q("a", request=3)) == {"a": 3}


def test_fractional_requests_stay_exact():
    # Offers 0.5 each, each missing 0.5 fits: both satisfied exactly.
    result = shares(1, Q("a", request=Decimal("0.5")), Q("b", request=0.5))
    assert result == {"a": F(1, 2), "b": F(1, 2)}
    assert all(type(value) is Fraction for value in result.values())


def test_float_inputs_are_read_by_their_decimal_form():
    assert shares(1, Q("a", request=0.1), Q("b", request=0.2)) == {"a": F(1, 10), "b": F(1, 5)}


# --- priority groups ----------------------------------------------------------------------------------------------


def test_the_higher_priority_group_is_satisfied_first():
    # high alone in its group: offer 10, takes its 6. R = 4 to the next group: offers 2 each, whatever the weights.
    result = shares(
        10,
        Q("high", request=6, priority=200, over_quota_weight=1),
        Q("low1", request=10, priority=100, over_quota_weight=3),
        Q("low2", request=10, priority=100, over_quota_weight=3),
    )
    assert result == {"high": 6, "low1": 2, "low2": 2}


def test_what_a_group_cannot_use_passes_down_before_the_leftover_step():
    # High: offers 2.5, take 2 and note 0.5 each, R = 1. Low: offer 1, takes 1. Leftover: nothing left.
    result = shares(
        5,
        Q("h1", request=10, priority=200),
        Q("h2", request=10, priority=200),
        Q("l1", request=10, priority=100),
    )
    assert result == {"h1": 2, "h2": 2, "l1": 1}


def test_the_leftover_step_goes_group_by_group():
    # High: offers 4/3: take 1, note 1/3 each; R = 1. Low: offers 1/2: take 0, note 1/2 each. Leftover R = 1: the
    # high group first, though its fractions are smaller: h1 (created first) takes it.
    queues = [Q(f"h{i}", request=10, priority=200) for i in (1, 2, 3)]
    queues += [Q(f"l{i}", request=10, priority=100) for i in (1, 2)]
    assert fair_shares(4, queues) == {"h1": 2, "h2": 1, "h3": 1, "l1": 0, "l2": 0}


def test_a_satisfied_higher_group_leaves_its_rest_to_the_lower_ones():
    result = shares(20, Q("a", request=3, priority=300), Q("b", request=4, priority=200), Q("c", request=50))
    assert result == {"a": 3, "b": 4, "c": 13}


def test_negative_and_huge_priorities_are_ranks():
    result = shares(3, Q("a", request=9, priority=-5), Q("b", request=2, priority=10**30))
    assert result == {"a": 1, "b": 2}


# --- the hierarchy ------------------------------------------------------------------------------------------------


def test_a_department_request_is_its_projects_sum_and_its_fair_share_is_divided():
    # Departments: A wants 6 + 2 = 8 (its own request is ignored), B 4; offers 3 each: both take 3.
    # A's 3: offers 1.5: a1 and a2 take 1 and note 1/2; leftover 1 to a1 (created first). B's 3 go to b1.
    queues = [
        Q("A", request=100),
        Q("a1", parent="A", request=6),
        Q("a2", parent="A", request=2),
        Q("B"),
        Q("b1", parent="B", request=4),
    ]
    assert fair_shares(6, queues) == {"A": 3, "a1": 2, "a2": 1, "B": 3, "b1": 3}


def test_the_department_fair_share_not_its_deserved_is_divided():
    # A deserves 10 but its projects ask for 4 in all: its fair share is 4, and p1's deserved -1 is those 4.
    queues = [Q("A", deserved=10), Q("p1", parent="A", deserved=-1, request=3), Q("p2", parent="A", request=1)]
    assert fair_shares(4, queues) == {"A": 4, "p1": 3, "p2": 1}


def test_projects_deserved_may_over_subscribe_their_department():
    # A's fair share is 2 (its limit); its projects deserve 3 each and get them: over-subscription at that level.
    queues = [
        Q("A", limit=2),
        Q("p1", parent="A", deserved=3, request=3),
        Q("p2", parent="A", deserved=3, request=5),
    ]
    assert fair_shares(10, queues) == {"A": 2, "p1": 3, "p2": 3}


def test_a_department_limit_caps_its_projects_total():
    queues = [Q("A", limit=5), Q("p1", parent="A", request=10), Q("p2", parent="A", request=10), Q("B", request=1)]
    assert fair_shares(100, queues) == {"A": 5, "p1": 3, "p2": 2, "B": 1}


def test_siblings_only_compete_with_siblings():
    # The projects of B never see A's priority or weights.
    queues = [
        Q("A", priority=500, over_quota_weight=3),
        Q("a1", parent="A", request=4),
        Q("B", over_quota_weight=1),
        Q("b1", parent="B", request=10, priority=1),
        Q("b2", parent="B", request=10, priority=1),
    ]
    # Departments: A (priority 500) alone in its group takes its 4; B gets the 8 left. b1 and b2 split B's 8.
    assert fair_shares(12, queues) == {"A": 4, "a1": 4, "B": 8, "b1": 4, "b2": 4}


def test_three_levels_and_parents_listed_after_their_children():
    queues = [
        Q("leaf1", parent="team", request=3),
        Q("leaf2", parent="team", request=3),
        Q("team", parent="dept"),
        Q("dept"),
        Q("other", request=2),
    ]
    # dept wants 6, other 2: offers 4 each; other takes 2 (another round), dept 4, then dept the last 2.
    assert fair_shares(8, queues) == {"leaf1": 3, "leaf2": 3, "team": 6, "dept": 6, "other": 2}


def test_projects_need_not_be_listed_next_to_each_other():
    queues = [
        Q("A"),
        Q("B"),
        Q("a1", parent="A", request=4),
        Q("b1", parent="B", request=4),
        Q("a2", parent="A", request=4),
    ]
    assert fair_shares(8, queues) == {"A": 4, "B": 4, "a1": 2, "b1": 4, "a2": 2}


# --- simulate: the answer and its input -------------------------------------------------------------------------


def test_simulate_answers_json_numbers():
    answer = simulate(
        {
            "capacity": 10,
            "queues": [
                {"name": "A", "parent": None, "deserved": 4, "limit": -1, "over_quota_weight": 2, "request": 0},
                {"name": "p", "parent": "A", "request": 2.5},
                {"name": "B", "over_quota_weight": None, "deserved": 1.5, "request": 3, "priority": 7},
                {"name": "C", "request": 0.25, "creation_order": 0},
            ],
        }
    )
    assert answer == {"fair_share": {"A": 2.5, "p": 2.5, "B": 1.5, "C": 0.25}}
    assert json.loads(json.dumps(answer)) == answer
    assert type(answer["fair_share"]["A"]) is float


def test_simulate_gives_ints_for_whole_shares():
    answer = simulate({"capacity": 4, "queues": [{"name": "a", "request": 3}]})
    assert answer == {"fair_share": {"a": 3}} and type(answer["fair_share"]["a"]) is int


def test_json_number():
    assert json_number(F(1, 2)) == 0.5 and json_number(F(4, 1)) == 4 and type(json_number(F(4, 1))) is int
    assert json_number(F(1, 3)) == pytest.approx(1 / 3)
    assert json_number(7) == 7


def problems(document):
    with pytest.raises(ConfigError) as caught:
        simulate(document)
    return {problem.field: problem.message for problem in caught.value.problems}


@pytest.mark.parametrize(
    "document",
    [None, [], "capacity: 4", 4, {"capacity": 4}, {"queues": []}, {"capacity": 4, "queues": {}}],
)
def test_simulate_refuses_a_document_of_the_wrong_shape(document):
    with pytest.raises(ConfigError):
        simulate(document)


def test_simulate_names_the_missing_and_unknown_fields():
    found = problems({"queues": [{"name": "a", "weight": 2}, {"request": 1}, 5], "extra": 1})
    assert set(found) == {"extra", "capacity", "queues[0].weight", "queues[1].name", "queues[2]"}
    assert "expected one of" in found["queues[0].weight"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("request", -1),
        ("request", "2"),
        ("request", None),
        ("request", True),
        ("request", [1]),
        ("request", {"gpu": 1}),
        ("request", float("nan")),
        ("request", float("inf")),
        ("request", 1e16),
        ("request", 1e-30),
        ("deserved", -2),
        ("deserved", -0.5),
        ("deserved", "-1"),
        ("limit", -3),
        ("limit", False),
        ("over_quota_weight", -1),
        ("over_quota_weight", "High"),
        ("priority", 1.5),
        ("priority", "100"),
        ("priority", None),
        ("priority", True),
        ("creation_order", "1"),
        ("creation_order", 0.5),
        ("name", ""),
        ("name", 5),
        ("name", None),
        ("parent", 3),
        ("parent", ["A"]),
        ("parent", "nobody"),
    ],
)
def test_simulate_refuses_a_value_that_is_not_allowed(field, value):
    found = problems({"capacity": 4, "queues": [{"name": "A"}, {"name": "x", "parent": "A", field: value}]})
    assert list(found) == [f"queues[1].{field}"]


@pytest.mark.parametrize("capacity", [-1, "8", None, True, float("nan"), 1e20])
def test_simulate_refuses_a_capacity_that_is_not_a_number_of_gpus(capacity):
    assert list(problems({"capacity": capacity, "queues": []})) == ["capacity"]


def test_duplicate_names_are_refused():
    found = problems({"capacity": 4, "queues": [{"name": "a"}, {"name": "b"}, {"name": "a"}]})
    assert found == {"queues[2].name": "'a' is already the name of queues[0]"}


def test_a_queue_that_is_its_own_parent_is_a_cycle():
    found = problems({"capacity": 4, "queues": [{"name": "a", "parent": "a"}]})
    assert found == {"queues[0].parent": "the parents form a cycle: a → a"}


def test_a_cycle_is_named_and_the_queues_below_it_are_not_blamed():
    found = problems(
        {
            "capacity": 4,
            "queues": [
                {"name": "top"},
                {"name": "a", "parent": "c"},
                {"name": "b", "parent": "a"},
                {"name": "c", "parent": "b"},
                {"name": "below", "parent": "b"},
            ],
        }
    )
    assert found == {"queues[1].parent": "the parents form a cycle: a → c → b → a"}


def test_every_problem_is_reported_at_once():
    found = problems(
        {
            "capacity": -4,
            "queues": [{"name": "a", "request": -1, "limit": "x"}, {"name": "a", "parent": "zz"}, {"priority": 1}],
        }
    )
    assert set(found) == {
        "capacity",
        "queues[0].request",
        "queues[0].limit",
        "queues[1].name",
        "queues[1].parent",
        "queues[2].name",
    }


def test_more_than_the_maximum_of_queues_is_refused():
    assert set(problems({"capacity": 1, "queues": [{"name": "q"}] * (MAX_QUEUES + 1)})) == {"queues"}
    with pytest.raises(ConfigError):
        fair_shares(1, [Q("q")] * (MAX_QUEUES + 1))


def test_simulate_accepts_the_maximum_of_queues():
    queues = [{"name": f"q{i}", "request": 1} for i in range(MAX_QUEUES)]
    answer = simulate({"capacity": 10, "queues": queues})["fair_share"]
    assert len(answer) == MAX_QUEUES and sum(answer.values()) == 10


@pytest.mark.parametrize(
    "value",
    [Decimal("1E-100000000"), Decimal("1E+100000000"), Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity")],
)
def test_fair_shares_refuses_extreme_decimals_at_once(value):
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        fair_shares(4, [Q("a", request=1), Q("b", request=value)])
    assert [problem.field for problem in caught.value.problems] == ["queues[1].request"]
    assert time.perf_counter() - started < 1


def test_zero_with_a_huge_exponent_is_zero():
    assert shares(4, Q("a", request=Decimal("0E-100000000")), Q("b", request=Decimal("0E+5"))) == {"a": 0, "b": 0}


def test_fair_shares_refuses_bad_values_with_the_same_problems():
    with pytest.raises(ConfigError) as caught:
        fair_shares(4, [Q("a", deserved=-7), Q("b", parent="a", over_quota_weight=True)])
    assert [problem.field for problem in caught.value.problems] == ["queues[0].deserved", "queues[1].over_quota_weight"]


def test_a_bool_hidden_among_equal_ints_is_still_refused():
    with pytest.raises(ConfigError):
        fair_shares(4, [Q("a", request=1), Q("b", request=True)])


def test_the_error_is_a_value_error_with_a_readable_message():
    with pytest.raises(ValueError, match=r"queues\[0\]\.parent: no queue is named 'B'"):
        simulate({"capacity": 1, "queues": [{"name": "a", "parent": "B"}]})


# --- properties ---------------------------------------------------------------------------------------------------

amounts = st.one_of(
    st.integers(0, 20),
    st.integers(0, 40).map(lambda n: Decimal(n) / 2),
    st.sampled_from([Decimal("0.25"), Decimal("0.1"), Fraction(1, 3), 0.5]),
)
weights = st.sampled_from([None, 0, 1, 2, 2, 3, Decimal("0.5")])


@st.composite
def trees(draw, explicit_order=False, usage=False):
    """Up to 6 departments with up to 6 projects each (sometimes a third level), numbers Run:ai would accept."""
    capacity = draw(st.one_of(st.integers(0, 64), st.integers(0, 128).map(lambda n: Decimal(n) / 2)))
    queues = []

    def queue(name, parent):
        order = len(queues) if explicit_order else draw(st.one_of(st.none(), st.integers(0, 5)))
        queues.append(
            Q(
                name,
                parent=parent,
                deserved=draw(st.one_of(st.just(-1), amounts, st.just(0))),
                limit=draw(st.one_of(st.just(-1), st.just(0), st.integers(1, 30), amounts)),
                over_quota_weight=draw(weights),
                priority=draw(st.sampled_from([50, 100, 100, 200])),
                request=draw(amounts),
                creation_order=order,
                usage=draw(st.sampled_from([0, 0.05, 0.1, 0.25, 0.5, 1, F(1, 3)])) if usage else 0,
            )
        )

    for d in range(draw(st.integers(1, 6))):
        queue(f"d{d}", None)
        for p in range(draw(st.integers(0, 6))):
            queue(f"d{d}p{p}", f"d{d}")
            if draw(st.integers(0, 9)) == 0:
                queue(f"d{d}p{p}x", f"d{d}p{p}")
    return capacity, queues


def requestables_and_parts(capacity, queues, result):
    """Per queue: its requestable and its deserved part, at its own level (the amount: its parent's share)."""
    kids = {}
    for q in queues:
        kids.setdefault(q.parent, []).append(q)

    def request(q):
        return sum((request(kid) for kid in kids[q.name]), F(0)) if q.name in kids else F(q.request)

    figures = {}
    for q in queues:
        amount = F(capacity) if q.parent is None else result[q.parent]
        requestable = request(q) if q.limit == -1 else min(request(q), F(q.limit))
        deserved = amount if q.deserved == -1 else F(q.deserved)
        if q.over_quota_weight is None:
            requestable = min(requestable, deserved)
        figures[q.name] = (requestable, min(deserved, requestable))
    return kids, figures


fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(trees())
def test_fair_shares_is_the_procedure_of_semantics_9_1(tree):
    capacity, queues = tree
    assert fair_shares(capacity, queues) == reference(capacity, queues)


@fast
@given(trees())
def test_siblings_share_no_more_than_the_amount_unless_their_deserved_parts_do(tree):
    capacity, queues = tree
    result = fair_shares(capacity, queues)
    kids, figures = requestables_and_parts(capacity, queues, result)
    for parent, members in kids.items():
        amount = F(capacity) if parent is None else result[parent]
        given_out = sum(result[q.name] for q in members)
        assert given_out <= max(amount, sum(figures[q.name][1] for q in members))


@fast
@given(trees())
def test_a_share_is_at_least_the_deserved_part_and_at_most_one_gpu_past_the_requestable(tree):
    capacity, queues = tree
    result = fair_shares(capacity, queues)
    _, figures = requestables_and_parts(capacity, queues, result)
    for q in queues:
        requestable, deserved_part = figures[q.name]
        assert 0 <= deserved_part <= result[q.name] <= requestable + 1
        if not q.over_quota_weight:  # 0 or None: the deserved part only
            assert result[q.name] == deserved_part


@fast
@given(trees(explicit_order=True), st.randoms(use_true_random=False))
def test_the_order_of_the_input_does_not_matter_when_creation_orders_are_given(tree, rng):
    capacity, queues = tree
    shuffled = list(queues)
    rng.shuffle(shuffled)
    assert fair_shares(capacity, shuffled) == fair_shares(capacity, queues)


@fast
@given(trees())
def test_the_same_input_gives_the_same_shares_and_simulate_agrees(tree):
    capacity, queues = tree
    first = fair_shares(capacity, queues)
    assert fair_shares(capacity, list(queues)) == first
    document = {
        "capacity": float(capacity),
        "queues": [
            {
                "name": q.name,
                "parent": q.parent,
                "deserved": float(q.deserved),
                "limit": float(q.limit),
                "over_quota_weight": None if q.over_quota_weight is None else float(q.over_quota_weight),
                "priority": q.priority,
                "request": float(q.request),
                "creation_order": q.creation_order,
            }
            for q in queues
            if all(F(value).denominator in (1, 2, 4, 5, 10) for value in (q.deserved, q.limit, q.request))
        ],
    }
    if len(document["queues"]) == len(queues):  # floats hold these decimals exactly; 1/3 they do not
        answer = simulate(document)["fair_share"]
        assert answer == {name: json_number(value) for name, value in first.items()}


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**17), st.floats(allow_nan=True), st.text(max_size=3)
)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
)
queue_fields = st.sampled_from(["name", "parent", "deserved", "limit", "over_quota_weight", "priority", "request"])


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "capacity": json_scalars,
                "queues": st.lists(
                    st.dictionaries(queue_fields, st.one_of(json_values, st.sampled_from(["a", "b", "c"]))),
                    max_size=5,
                ),
            }
        ),
    )
)
def test_simulate_answers_or_raises_config_error_and_nothing_else(document):
    try:
        answer = simulate(document)
    except ConfigError as error:
        assert error.problems and all(problem.message for problem in error.problems)
    else:
        assert set(answer) == {"fair_share"}
        json.dumps(answer)


# --- size ---------------------------------------------------------------------------------------------------------


def test_a_pool_of_50_departments_of_500_projects_is_divided_in_reasonable_time():
    rng = random.Random(3)
    queues = []
    for d in range(50):
        queues.append(Q(f"d{d}", deserved=rng.choice([0, 40, 80]), over_quota_weight=rng.choice([None, 0, 1, 2, 3])))
        queues += [
            Q(f"d{d}p{p}", parent=f"d{d}", request=Decimal(rng.randint(0, 16)) / 2, priority=rng.choice([50, 100]))
            for p in range(500)
        ]
    started = time.perf_counter()
    result = fair_shares(4000, queues)
    elapsed = time.perf_counter() - started
    assert sum(result[f"d{d}"] for d in range(50)) <= 4000 + sum(q.deserved for q in queues if q.parent is None)
    assert elapsed < 1  # the figure itself is scripts/bench_fairshare.py's; this only catches a quadratic blunder


# --- time-based fair share (SEMANTICS §9.3) ----------------------------------------------------------------------


def test_a_heavy_past_user_gets_less_of_the_surplus():
    # Equal weights, nothing deserved, 10 GPUs: nW = 1/2 each. k = 1: a (usage 1/2) s = 1/2, b (usage 0) s = 1.
    # Offers 10 × (1/2) / (3/2) = 3 1/3 and 10 × 1 / (3/2) = 6 2/3: a takes 3, b 6, the leftover GPU to b (2/3 lost).
    queues = [Q("a", request=20, usage=F(1, 2)), Q("b", request=20, usage=0)]
    assert fair_shares(10, queues, k_value=1) == {"a": 3, "b": 7}
    assert fair_shares(10, queues) == {"a": 5, "b": 5}  # k = 0: §9.1, whatever the usage


def test_a_weight_clamps_at_zero():
    # k = 2, a used everything: s = max(0, 1/2 + 2 × (1/2 − 1)) = 0; b: 1/2 + 2 × 1/2 = 3/2. b takes all it asks,
    # then a round of a alone: nW = 1, s = max(0, 1 + 2 × (1 − 1)) = 1, the 2 left.
    queues = [Q("a", request=20, usage=1), Q("b", request=8, usage=0)]
    assert fair_shares(10, queues, k_value=2) == {"a": 2, "b": 8}
    # with b asking everything, a gets nothing over its deserved part
    queues = [Q("a", deserved=1, request=20, usage=1), Q("b", request=20, usage=0)]
    assert fair_shares(10, queues, k_value=2) == {"a": 1, "b": 9}


def test_when_every_member_of_a_round_is_clamped_the_rest_goes_to_the_next_group():
    queues = [Q("a", request=20, usage=1, priority=200), Q("b", request=20, usage=1, priority=100)]
    # a alone in its group: nW = 1, s = 1 + 5 × (1 − 1) = 1, it takes all 10: b gets none
    assert fair_shares(10, queues, k_value=5) == {"a": 10, "b": 0}
    queues = [
        Q("a1", request=20, usage=1, priority=200),
        Q("a2", request=20, usage=1, priority=200),
        Q("b", request=20, usage=0, priority=100),
    ]
    # a1, a2: nW = 1/2, s = 1/2 + 5 × (1/2 − 1) < 0 → 0 both: nothing in their group, all 10 to b
    assert fair_shares(10, queues, k_value=5) == {"a1": 0, "a2": 0, "b": 10}


@pytest.mark.parametrize("k", [0, -1, -0.5])
def test_k_at_or_below_zero_is_9_1_exactly(k):
    queues = [Q("a", request=20, usage=1), Q("b", request=20, usage=0, over_quota_weight=3)]
    assert fair_shares(11, queues, k_value=k) == fair_shares(11, queues)


def test_usage_and_k_are_checked():
    with pytest.raises(ConfigError) as error:
        fair_shares(10, [Q("a", usage=1.5), Q("b", usage="much")], k_value=1)
    assert {p.field for p in error.value.problems} == {"queues[0].usage", "queues[1].usage"}
    with pytest.raises(ConfigError, match="k_value"):
        fair_shares(10, [Q("a")], k_value="high")
    with pytest.raises(ConfigError, match="k_value"):
        fair_shares(10, [Q("a")], k_value=float("nan"))


def test_the_simulator_takes_k_and_usage():
    document = {
        "capacity": 10,
        "k_value": 1,
        "queues": [{"name": "a", "request": 20, "usage": 0.5}, {"name": "b", "request": 20}],
    }
    assert simulate(document) == {"fair_share": {"a": 3, "b": 7}}
    with pytest.raises(ConfigError) as error:
        simulate({**document, "k_value": "x", "queues": [{"name": "a", "usage": 2}]})
    assert {p.field for p in error.value.problems} == {"k_value", "queues[0].usage"}


@fast
@given(trees(usage=True), st.sampled_from([0, 0.5, 1, 2, F(1, 3)]))
def test_time_based_fair_share_is_the_procedure_of_semantics_9_3(tree, k):
    capacity, queues = tree
    assert fair_shares(capacity, queues, k_value=k) == reference(capacity, queues, k)


@fast
@given(trees(), st.sampled_from([0.5, 1, 3]))
def test_with_zero_usage_everywhere_time_based_fair_share_is_9_1(tree, k):
    capacity, queues = tree
    assert fair_shares(capacity, queues, k_value=k) == fair_shares(capacity, queues)


@fast
@given(trees(usage=True), st.sampled_from([0.5, 1, 3]))
def test_time_based_shares_keep_the_bounds_of_9_1(tree, k):
    capacity, queues = tree
    result = fair_shares(capacity, queues, k_value=k)
    _, figures = requestables_and_parts(capacity, queues, result)
    for q in queues:
        requestable, deserved_part = figures[q.name]
        assert 0 <= deserved_part <= result[q.name] <= requestable + 1
