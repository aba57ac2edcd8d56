"""SEMANTICS §10.1: when a waiting workload will start. The pool is played forward: running workloads free their
GPUs at ``started + expected runtime`` (median for the likely start, 90th percentile for the late bound, never past
``max_exec_timeout``), and the waiting ones start in the scheduler's order where their pods fit."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.estimates import (
    Arrival,
    Estimate,
    Holder,
    Runtimes,
    Share,
    Waiter,
    expected_arrivals,
    holder_end,
    learned,
    ordered_ends,
    start_estimates,
    whole_gpus,
)

NOW = 1_000_000.0
HOUR = 3600.0
MINUTE = 60.0
TWO_HOURS = learned([2 * HOUR] * 5 + [3 * HOUR] * 5)  # median 2 h, 90th percentile 3 h


def waiter(key, gpus, *, order=None, nodes=("n1",), runtimes=TWO_HOURS, pods=1):
    return Waiter(key, (order if order is not None else key,), (gpus,) * pods, frozenset(nodes), runtimes)


def test_learned_runtimes_are_the_median_and_the_90th_percentile_capped():
    assert learned([]) is None
    assert learned(range(1, 11)) == Runtimes(5, 9, 10, tuple(range(1, 11)))
    assert learned([100, 200, 300, 99_999], cap=1000) == Runtimes(200, 1000, 4, (100, 200, 300, 1000))


def test_a_fraction_of_a_gpu_takes_a_whole_one():
    assert (whole_gpus(0.5), whole_gpus(2), whole_gpus(0)) == (1, 2, 0)


def test_it_starts_when_the_holder_is_expected_to_end():
    # The holder started an hour ago and its kind runs 2 h (median) or 3 h (90th percentile).
    holder = Holder({"n1": 8}, NOW - HOUR, TWO_HOURS)
    found = start_estimates(NOW, {"n1": 0}, [holder], [waiter("a", 8)])
    assert found == {"a": Estimate(NOW + HOUR, NOW + 2 * HOUR)}


def test_the_workloads_ahead_take_theirs_first():
    holder = Holder({"n1": 8}, NOW - HOUR, TWO_HOURS)
    found = start_estimates(NOW, {"n1": 0}, [holder], [waiter("b", 8, order=2), waiter("a", 8, order=1)])
    # a starts when the holder ends, b when a has run its own median (2 h) or 90th percentile (3 h).
    assert found["a"] == Estimate(NOW + HOUR, NOW + 2 * HOUR)
    assert found["b"] == Estimate(NOW + 3 * HOUR, NOW + 5 * HOUR)


def test_a_small_workload_behind_a_big_one_starts_on_gpus_the_big_one_cannot_use():
    holder = Holder({"n1": 6}, NOW - HOUR, TWO_HOURS)
    found = start_estimates(NOW, {"n1": 2}, [holder], [waiter("big", 8, order=1), waiter("small", 2, order=2)])
    assert found["small"] == Estimate(NOW, NOW)
    # The small one holds 2 GPUs for 2 h (3 h late), so the big one waits for it too.
    assert found["big"] == Estimate(NOW + 2 * HOUR, NOW + 3 * HOUR)


def test_it_fits_only_the_nodes_it_may_use():
    holders = [Holder({"n1": 8}, NOW - HOUR, TWO_HOURS), Holder({"n2": 8}, NOW, TWO_HOURS)]
    found = start_estimates(NOW, {"n1": 0, "n2": 0}, holders, [waiter("a", 8, nodes=("n2",))])
    assert found["a"] == Estimate(NOW + 2 * HOUR, NOW + 3 * HOUR)


def test_a_gang_waits_for_all_its_pods():
    holders = [Holder({"n1": 8}, NOW - HOUR, TWO_HOURS), Holder({"n2": 8}, NOW - 30 * 60, TWO_HOURS)]
    found = start_estimates(NOW, {"n1": 0, "n2": 0}, holders, [waiter("gang", 8, pods=2, nodes=("n1", "n2"))])
    # Likely when both have ended: the second of two to end ends when one and a half of them are expected to have
    # ended (n1's 2 h run and n2's 2 h run each end 1 h and 1.5 h from now, or 2 h and 2.5 h: the second end is 2 h
    # from now), not at the later of their medians (1.5 h). The late bound: the later of their 90th percentiles.
    assert found["gang"] == Estimate(NOW + 2 * HOUR, NOW + 2.5 * HOUR)


def test_a_holder_that_ran_long_is_expected_to_run_as_the_longer_runs_did():
    # Past its median: the runs longer than 2.5 h all took 3 h.
    late = Holder({"n1": 8}, NOW - 2.5 * HOUR, TWO_HOURS)
    assert start_estimates(NOW, {"n1": 0}, [late], [waiter("a", 8)])["a"] == Estimate(
        NOW + 0.5 * HOUR, NOW + 0.5 * HOUR
    )
    # Past every learned run: at the pool's timeout, else after as long again as it has run.
    overdue = Holder({"n1": 8}, NOW - 4 * HOUR, TWO_HOURS)
    assert start_estimates(NOW, {"n1": 0}, [overdue], [waiter("a", 8)], cap=10 * HOUR)["a"] == Estimate(
        NOW + 6 * HOUR, NOW + 6 * HOUR
    )
    assert start_estimates(NOW, {"n1": 0}, [overdue], [waiter("a", 8)])["a"] == Estimate(NOW + 4 * HOUR, NOW + 4 * HOUR)


def test_drawn_runtimes_give_the_spread_of_many_plays_and_the_same_answer_each_time():
    runs = learned([HOUR * (1 + i / 10) for i in range(20)])  # 1 h to 2.9 h
    holders = [Holder({f"n{i}": 8}, NOW, runs) for i in range(4)]
    waiters = [waiter("a", 8, nodes=("n0", "n1", "n2", "n3"), runtimes=runs)]
    free = dict.fromkeys(("n0", "n1", "n2", "n3"), 0)
    drawn = start_estimates(NOW, free, holders, waiters, draws=40)
    # The first of four holders to end: earlier than any one's median (1.9 h), never before the shortest run.
    assert NOW + HOUR <= drawn["a"].likely < NOW + 1.9 * HOUR
    assert drawn["a"].likely <= drawn["a"].late
    assert start_estimates(NOW, free, holders, waiters, draws=40) == drawn


def of_unit(key, unit, waiting_since, gpus=8, nodes=("n1", "n2")):
    return Waiter(key, (waiting_since, key), (gpus,), frozenset(nodes), TWO_HOURS, unit)


def test_many_running_workloads_end_as_the_order_statistics_of_their_spread_not_each_at_its_median():
    # 100 workloads started together, each running 1 h to 10 h (one run of each length learned): each one's median
    # is 5 h, but the first of them ends after 1 h and the last after 10 h, the k-th when k - ½ are expected done.
    spread = learned([hour * HOUR for hour in range(1, 11)])
    holders = [Holder({f"n{i}": 8}, NOW, spread) for i in range(100)]
    ends = sorted(ordered_ends(holders, NOW, None))
    assert ends[0] == NOW + HOUR and ends[-1] == NOW + 10 * HOUR
    assert ends[49] == NOW + 5 * HOUR and ends[50] == NOW + 6 * HOUR
    # Alone, a workload ends at its median; with nothing learned, or past every learned run, as ``holder_end`` says.
    assert ordered_ends(holders[:1], NOW, None) == [NOW + 5 * HOUR]
    overdue = Holder({"m": 8}, NOW - 20 * HOUR, spread)
    assert ordered_ends([overdue, Holder({"x": 8}, NOW, None)], NOW, 30 * HOUR) == [NOW + 10 * HOUR, NOW + 30 * HOUR]


def test_the_ends_are_ordered_among_the_workloads_of_a_kind():
    # 100 one-GPU jobs of 10 to 100 minutes and 10 gangs of 1 to 10 hours, all just started. Among the gangs, the
    # first ends after 1 h, when half a gang's worth of theirs are expected to have ended; pooled with the short jobs,
    # the gangs would get the ends after every short job's (the first of them after 100 minutes, with the last).
    short = learned([minutes * MINUTE for minutes in range(10, 101, 10)])
    long = learned([hours * HOUR for hours in range(1, 11)])
    jobs = [Holder({f"s{i}": 1}, NOW, short, kind="batch") for i in range(100)]
    gangs = [Holder({f"g{i}": 8}, NOW, long, kind="train") for i in range(10)]
    ends = ordered_ends(jobs + gangs, NOW, None)
    assert min(ends[100:]) == NOW + HOUR and max(ends[100:]) == NOW + 10 * HOUR
    assert (min(ends[:100]), max(ends[:100])) == (NOW + 10 * MINUTE, NOW + 100 * MINUTE)
    pooled = [Holder(job.nodes, NOW, short) for job in jobs] + [Holder(gang.nodes, NOW, long) for gang in gangs]
    assert min(ordered_ends(pooled, NOW, None)[100:]) == NOW + 100 * MINUTE


@given(
    # (hours run so far, the scale of its kind's runs: 1, 2, 3, 5 and 8 times it, its kind): none has outlived every
    # run.
    st.lists(st.tuples(st.integers(0, 7), st.integers(1, 10), st.sampled_from("ab")), min_size=1, max_size=30),
)
@settings(max_examples=60, deadline=None)
def test_the_ordered_ends_are_handed_out_in_the_order_of_the_workloads_medians(started_and_scale):
    holders = [
        Holder({f"n{i}": 1}, NOW - elapsed * HOUR, learned([scale * HOUR * m for m in (1, 2, 3, 5, 8)]), kind=kind)
        for i, (elapsed, scale, kind) in enumerate(started_and_scale)
    ]
    ends = ordered_ends(holders, NOW, None)
    medians = [holder_end(holder, NOW, None, late=False) for holder in holders]
    assert all(end >= NOW for end in ends)
    for i in range(len(holders)):
        for j in range(len(holders)):
            if holders[i].kind == holders[j].kind and medians[i] < medians[j]:
                assert ends[i] <= ends[j]


def test_the_unit_holding_less_of_its_share_goes_first_though_its_workload_came_later():
    # a holds both nodes (half its share each); n1 frees in 1 h, n2 in 1.5 h.
    holders = [Holder({"n1": 8}, NOW - HOUR, TWO_HOURS, "a"), Holder({"n2": 8}, NOW - 0.5 * HOUR, TWO_HOURS, "a")]
    units = {"a": Share(16, 16), "b": Share(0, 16)}
    waiters = [of_unit("a1", "a", NOW - 3 * HOUR), of_unit("b1", "b", NOW - HOUR)]
    found = start_estimates(NOW, {"n1": 0, "n2": 0}, holders, waiters, units=units)
    # At 1 h a holds half its share, b none: b1 goes first. a1 takes the other node when it frees: the second of the
    # two to end, 2 h from now (``ordered_ends``).
    assert found["b1"].likely == NOW + HOUR
    assert found["a1"].likely == NOW + 2 * HOUR
    # Without the units the older one goes first.
    static = start_estimates(NOW, {"n1": 0, "n2": 0}, holders, waiters)
    assert (static["a1"].likely, static["b1"].likely) == (NOW + HOUR, NOW + 2 * HOUR)


def test_a_unit_that_starts_a_workload_moves_back_in_the_order():
    units = {"a": Share(0, 16), "b": Share(0, 16)}
    waiters = [of_unit("a1", "a", NOW - 3 * HOUR), of_unit("a2", "a", NOW - 2 * HOUR), of_unit("b1", "b", NOW - HOUR)]
    found = start_estimates(NOW, {"n1": 8, "n2": 8}, [], waiters, units=units)
    # a1 goes first (both hold nothing, it waited longest); a then holds half its share, so b1 goes before a2.
    assert (found["a1"].likely, found["b1"].likely) == (NOW, NOW)
    assert found["a2"] == Estimate(NOW + 2 * HOUR, NOW + 3 * HOUR)


def test_a_unit_at_its_limit_waits_for_its_own_workloads_to_end_though_gpus_are_free():
    # a may hold 8 GPUs and holds 8 on n1 (ending in 1 h or 2 h); n2 is free. a1 waits for a's own job to end; b1,
    # behind it, takes n2 at once.
    holder = Holder({"n1": 8}, NOW - HOUR, TWO_HOURS, "a")
    units = {"a": Share(8, 16, limit=8), "b": Share(0, 16)}
    waiters = [of_unit("a1", "a", NOW - 3 * HOUR), of_unit("b1", "b", NOW - HOUR)]
    found = start_estimates(NOW, {"n1": 0, "n2": 8}, [holder], waiters, units=units)
    assert found["b1"] == Estimate(NOW, NOW)
    assert found["a1"] == Estimate(NOW + HOUR, NOW + 2 * HOUR)
    # Without the limit a1 (below its share, as b) goes first, being the older: it takes n2 now, b1 waits for n1.
    free = start_estimates(NOW, {"n1": 0, "n2": 8}, [holder], waiters, units={"a": Share(8, 16), "b": Share(8, 16)})
    assert (free["a1"].likely, free["b1"].likely) == (NOW, NOW + HOUR)


def test_projects_of_a_department_at_its_limit_wait_for_any_of_its_workloads_to_end():
    # Department d may hold 8: its project a holds 8 on n1; its project c's workload waits for a's to end though n2
    # is free, and no project has a limit of its own.
    holder = Holder({"n1": 8}, NOW - HOUR, TWO_HOURS, "a")
    units = {
        ("department", "d"): Share(8, 16, limit=8),
        "a": Share(8, 8, parent=("department", "d")),
        "c": Share(0, 8, parent=("department", "d")),
    }
    found = start_estimates(NOW, {"n1": 0, "n2": 8}, [holder], [of_unit("c1", "c", NOW - HOUR)], units=units)
    assert found["c1"] == Estimate(NOW + HOUR, NOW + 2 * HOUR)


def test_a_workload_asking_more_than_its_limit_gets_no_estimate():
    units = {"a": Share(0, 16, limit=4)}
    assert start_estimates(NOW, {"n1": 8}, [], [of_unit("a1", "a", NOW)], units=units) == {"a1": Estimate(None, None)}


def test_workloads_a_unit_below_its_share_will_submit_go_ahead_and_those_of_one_above_do_not():
    holder = Holder({"n1": 8}, NOW - HOUR, TWO_HOURS)  # frees n1 in 1 h
    waiters = [of_unit("a1", "a", NOW - HOUR, nodes=("n1",))]
    arrivals = [Arrival("b", 0.5 * HOUR, ((8,),), frozenset({"n1"}), TWO_HOURS)]
    alone = start_estimates(NOW, {"n1": 0}, [holder], waiters, units={"a": Share(8, 8), "b": Share(0, 8)})
    assert alone["a1"].likely == NOW + HOUR
    # b holds nothing of its share and submits one every 30 min: the one it submits by then takes n1 first.
    behind = start_estimates(
        NOW, {"n1": 0}, [holder], waiters, units={"a": Share(8, 8), "b": Share(0, 8)}, arrivals=arrivals
    )
    assert behind["a1"].likely > NOW + HOUR
    # b above its share: what it submits waits behind a1.
    ahead = start_estimates(
        NOW, {"n1": 0}, [holder], waiters, units={"a": Share(0, 8), "b": Share(16, 8)}, arrivals=arrivals
    )
    assert ahead["a1"].likely == NOW + HOUR


def test_expected_arrivals_come_as_often_as_they_started_shaped_as_the_units_workloads():
    holders = [Holder({"n1": 8, "n2": 8}, NOW, TWO_HOURS, "b", "train"), Holder({"n3": 2}, NOW, TWO_HOURS, "b", "tune")]
    waiters = [Waiter("w", (NOW,), (4,), frozenset({"n3"}), TWO_HOURS, "b", "tune")]
    every = frozenset({"n1", "n2", "n3"})
    found = expected_arrivals(
        {("b", "train"): 4, ("b", "tune"): 12, ("c", "train"): 5}, 24 * HOUR, holders, waiters, every, lambda *_: None
    )
    by_kind = {(arrival.unit, arrival.interval): arrival for arrival in found}
    # c has no workload on the pool: no known shape, left out.
    assert set(by_kind) == {("b", 6 * HOUR), ("b", 2 * HOUR)}
    assert by_kind["b", 6 * HOUR].shapes == ((8, 8),) and by_kind["b", 6 * HOUR].nodes == every
    assert by_kind["b", 2 * HOUR].shapes == ((2,), (4,)) and by_kind["b", 2 * HOUR].nodes == {"n3"}


def test_nothing_learned_means_no_estimate_unless_the_pool_has_a_timeout():
    unknown = Holder({"n1": 8}, NOW - HOUR, None)
    assert start_estimates(NOW, {"n1": 0}, [unknown], [waiter("a", 8)])["a"] == Estimate(None, None)
    capped = start_estimates(NOW, {"n1": 0}, [unknown], [waiter("a", 8)], cap=5 * HOUR)
    assert capped["a"] == Estimate(NOW + 4 * HOUR, NOW + 4 * HOUR)


def test_a_workload_that_never_fits_gets_no_estimate():
    assert start_estimates(NOW, {"n1": 8}, [], [waiter("a", 16)])["a"] == Estimate(None, None)


fleets = st.lists(st.integers(0, 8), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(free=fleets, asks=st.lists(st.integers(1, 8), max_size=30), seed=st.integers(0, 1000))
def test_estimates_never_precede_now_and_what_fits_now_in_order_starts_now(free, asks, seed):
    rng = random.Random(seed)
    nodes = {f"n{i}": gpus for i, gpus in enumerate(free)}
    holders = [Holder({name: 8 - gpus}, NOW - rng.uniform(0, 3 * HOUR), TWO_HOURS) for name, gpus in nodes.items()]
    waiters = [waiter(f"w{i}", gpus, order=i, nodes=tuple(nodes)) for i, gpus in enumerate(asks)]
    found = start_estimates(NOW, nodes, holders, waiters)
    for estimate in found.values():
        assert estimate.likely is None or estimate.likely >= NOW
        assert estimate.late is None or estimate.late >= NOW
    # The first waiter starts now exactly when some node has its GPUs free.
    if waiters:
        fits_now = any(gpus >= asks[0] for gpus in free)
        assert (found["w0"].likely == NOW) == fits_now


@settings(max_examples=60, deadline=None)
@given(free=fleets, asks=st.lists(st.integers(1, 8), max_size=20), seed=st.integers(0, 1000))
def test_with_one_unit_the_moving_order_is_the_waiting_order(free, asks, seed):
    rng = random.Random(seed)
    nodes = {f"n{i}": gpus for i, gpus in enumerate(free)}
    holders = [Holder({name: 8 - gpus}, NOW - rng.uniform(0, 3 * HOUR), TWO_HOURS, "a") for name, gpus in nodes.items()]
    waiters = [
        Waiter(f"w{i}", (NOW - rng.uniform(0, HOUR), i), (gpus,), frozenset(nodes), TWO_HOURS, "a")
        for i, gpus in enumerate(asks)
    ]
    moving = start_estimates(NOW, nodes, holders, waiters, units={"a": Share(8 * len(nodes), 4)})
    assert moving == start_estimates(NOW, nodes, holders, waiters)
