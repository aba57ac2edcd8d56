"""Issue 13's pure rules: idle allocated GPUs, the utilization distribution, GPU-hours consumed."""

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import ConfigError
from pools.engine.utilization import (
    BUCKETS,
    Allocation,
    GpuHours,
    GpuSeries,
    IdleInterval,
    consumption,
    idle_gpus,
    idle_since,
    utilization_bucket,
    utilization_distribution,
)

NOW = 1_763_715_600
HOUR = 3600


def series(values, *, step=15, end=NOW, gpu="GPU-0", namespace="team-a", pod="train-1", **extra):
    """A series whose last sample is at ``end``, one sample every ``step`` seconds."""
    start = end - step * (len(values) - 1)
    return GpuSeries(gpu, namespace, pod, [(start + step * i, v) for i, v in enumerate(values)], **extra)


def idle_pods(report):
    return [(w.namespace, w.pod, w.idle_gpus, w.gpus) for w in report.workloads]


# -- idle GPUs -----------------------------------------------------------------------------------------------------


def test_a_gpu_quiet_for_exactly_the_duration_is_idle_one_step_less_is_not():
    exactly = series([0] * 21)  # samples at now-300 ... now
    report = idle_gpus([exactly], NOW)
    assert [(g.gpu, g.idle_since, g.idle_for) for g in report.gpus] == [("GPU-0", NOW - 300, 300)]
    assert idle_gpus([series([0] * 20)], NOW).gpus == ()  # now-285 ... now
    assert idle_gpus([series([0] * 20)], NOW, duration=285).idle_gpu_count == 1


def test_idle_for_runs_to_now_even_between_samples():
    report = idle_gpus([series([0] * 21)], NOW + 10)
    assert report.gpus[0].idle_for == 310


def test_the_threshold_is_inclusive():
    assert idle_gpus([series([5] * 21)], NOW, threshold=5).idle_gpu_count == 1
    assert idle_gpus([series([5.01] + [5] * 20)], NOW, threshold=5).idle_gpu_count == 0
    assert idle_gpus([series([5] * 20 + [5.01])], NOW, threshold=5).idle_gpu_count == 0
    assert idle_gpus([series([0.5] * 21)], NOW).idle_gpu_count == 0  # the default threshold is 0 %
    assert idle_gpus([series([100] * 21)], NOW, threshold=100).idle_gpu_count == 1


def test_a_gpu_that_becomes_busy_starts_over():
    values = [0] * 40 + [1] + [0] * 10  # quiet for 10 minutes, 1 % 150 s ago, quiet from the next sample on
    assert idle_since(series(values).samples, NOW) == NOW - 135
    assert idle_gpus([series(values)], NOW).gpus == ()
    assert idle_gpus([series([0] * 40 + [80])], NOW).gpus == ()  # busy now


def test_a_gap_longer_than_twice_the_step_breaks_the_run():
    before = [(NOW - 600 + 15 * i, 0) for i in range(20)]  # now-600 ... now-315
    after_short_gap = [(NOW - 285 + 15 * i, 0) for i in range(20)]  # 30 s after: not a break
    after_long_gap = [(NOW - 270 + 15 * i, 0) for i in range(19)]  # 45 s after: a break
    assert idle_since(before + after_short_gap, NOW) == NOW - 600
    assert idle_since(before + after_long_gap, NOW) == NOW - 270
    gpu = GpuSeries("GPU-0", "ns", "pod", before + after_long_gap)
    assert idle_gpus([gpu], NOW).gpus == ()
    assert idle_gpus([gpu], NOW, max_gap=60).idle_gpu_count == 1
    assert idle_gpus([gpu], NOW, step=30).idle_gpu_count == 1  # the gap follows the step by default


def test_a_stale_series_is_not_idle_and_later_samples_are_ignored():
    stale = series([0] * 40, end=NOW - 31)
    assert idle_since(stale.samples, NOW) is None and idle_gpus([stale], NOW).gpus == ()
    assert idle_gpus([series([0] * 40, end=NOW - 30)], NOW).idle_gpu_count == 1
    future = GpuSeries("GPU-0", "ns", "pod", [*series([0] * 21).samples, (NOW + 15, 90)])
    assert idle_gpus([future], NOW).idle_gpu_count == 1
    assert idle_gpus([GpuSeries("GPU-0", "ns", "pod", [])], NOW).gpus == ()


def test_a_value_that_is_not_a_number_breaks_the_run():
    assert idle_since(series([0] * 10 + [math.nan] + [0] * 10).samples, NOW) == NOW - 135
    assert idle_since(series([0] * 20 + [math.nan]).samples, NOW) is None


def test_a_series_that_begins_quiet_counts_from_its_first_sample():
    assert idle_gpus([series([0] * 100)], NOW).gpus[0].idle_since == NOW - 99 * 15


def test_unallocated_gpus_are_never_idle():
    report = idle_gpus([series([0] * 40, pod="", namespace="")], NOW)
    assert report.gpus == () and report.workloads == ()


def test_idle_gpus_are_grouped_into_their_workloads():
    gpus = [
        series([0] * 41, gpu="GPU-a", pod="train-1", user="alice", pool="pool-01"),
        series([0] * 30, gpu="GPU-b", pod="train-1", user="alice", pool="pool-01"),
        series([90] * 41, gpu="GPU-c", pod="train-1", user="alice", pool="pool-01"),
        series([0] * 41, gpu="GPU-d", pod="eval-2", namespace="robotics"),
        series([0] * 41, gpu="GPU-e", pod="eval-2", namespace="robotics"),
        series([70] * 41, gpu="GPU-f", pod="serve-3"),
    ]
    report = idle_gpus(gpus, NOW)
    assert [(g.namespace, g.pod, g.gpu) for g in report.gpus] == [
        ("robotics", "eval-2", "GPU-d"),
        ("robotics", "eval-2", "GPU-e"),
        ("team-a", "train-1", "GPU-a"),
        ("team-a", "train-1", "GPU-b"),
    ]
    assert idle_pods(report) == [("robotics", "eval-2", 2, 2), ("team-a", "train-1", 2, 3)]
    train = report.workloads[1]
    assert (train.user, train.pool, train.idle_for, train.fully_idle) == ("alice", "pool-01", 29 * 15, False)
    assert report.workloads[0].fully_idle


@pytest.mark.parametrize(
    "options",
    [
        {"threshold": -1},
        {"threshold": 100.5},
        {"threshold": math.nan},
        {"duration": -1},
        {"duration": math.inf},
        {"step": 0},
        {"max_gap": 0},
    ],
)
def test_bad_arguments_are_config_errors(options):
    with pytest.raises(ConfigError):
        idle_gpus([series([0] * 21)], NOW, **options)


def test_samples_out_of_order_or_not_numbers_are_refused():
    with pytest.raises(ConfigError, match="time order"):
        idle_since([(NOW, 0), (NOW - 15, 0), (NOW - 10, 0)], NOW)
    with pytest.raises(ConfigError, match="must be a number"):
        idle_since([(NOW - 15, 0), (NOW, "0")], NOW)  # Prometheus's JSON strings are the caller's to convert


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0, 0, 0, 3, 50]), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=900),
)
def test_idle_means_the_last_duration_seconds_of_samples_are_all_quiet(values, threshold, duration):
    gpu = series(values)
    found = idle_gpus([gpu], NOW, threshold=threshold, duration=duration).idle_gpu_count == 1
    quiet_tail = 0
    for value in reversed(values):
        if value > threshold:
            break
        quiet_tail += 1
    assert found == (quiet_tail > 0 and (quiet_tail - 1) * 15 >= duration)


# -- the distribution ----------------------------------------------------------------------------------------------


def test_each_bucket_holds_its_lower_bound_and_the_last_one_100():
    values = [0, 24.999, 25, 49.9, 50, 74.99, 75, 99.9, 100]
    assert utilization_distribution(values) == {"0-25": 2, "25-50": 2, "50-75": 2, "75-100": 3}
    assert [utilization_bucket(v) for v in (0, 25, 50, 75, 100)] == ["0-25", "25-50", "50-75", "75-100", "75-100"]
    assert utilization_bucket(Decimal("24.99")) == "0-25" and utilization_bucket(Fraction(50)) == "50-75"


def test_no_values_no_gpus_in_any_bucket():
    assert utilization_distribution([]) == dict.fromkeys(BUCKETS, 0)
    assert list(utilization_distribution([1])) == ["0-25", "25-50", "50-75", "75-100"]


@pytest.mark.parametrize("value", [-0.1, 100.01, math.nan, math.inf, "50", None, True])
def test_a_value_outside_0_100_is_a_config_error(value):
    with pytest.raises(ConfigError):
        utilization_distribution([10, value])


@given(st.lists(st.floats(min_value=0, max_value=100)))
def test_every_value_is_counted_once(values):
    counts = utilization_distribution(values)
    assert sum(counts.values()) == len(values)
    assert counts["75-100"] == sum(1 for v in values if v >= 75)


# -- consumption ---------------------------------------------------------------------------------------------------


def alloc(pod, gpus, start, end=None, **groups):
    return Allocation(groups.pop("namespace", "team-a"), pod, gpus, start, end, **groups)


def test_allocations_are_clipped_to_the_period():
    allocations = [
        alloc("before", 2, NOW - HOUR, NOW + HOUR, pool="a"),  # half inside
        alloc("inside", 1, NOW + 600, NOW + 1200, pool="a"),
        alloc("after", 4, NOW + HOUR, NOW + 5 * HOUR, pool="b"),  # half inside
        alloc("outside", 8, NOW - 5 * HOUR, NOW - HOUR, pool="c"),
    ]
    report = consumption(allocations, since=NOW, until=NOW + 2 * HOUR)
    assert report.groups == {"a": GpuHours(Fraction(2) + Fraction(1, 6)), "b": GpuHours(Fraction(4))}
    assert report.total == GpuHours(Fraction(37, 6)) and report.by == "pool"


def test_open_allocations_run_until_now_or_the_end_of_the_period():
    allocations = [alloc("running", 2, NOW)]
    assert consumption(allocations, since=NOW, until=NOW + 3 * HOUR).total.allocated == 6
    assert consumption(allocations, since=NOW, until=NOW + 3 * HOUR, now=NOW + HOUR).total.allocated == 2
    assert consumption(allocations, since=NOW, until=NOW + HOUR, now=NOW + 3 * HOUR).total.allocated == 2


@pytest.mark.parametrize(
    ("by", "expected"),
    [
        ("pool", {"p1": 3, "p2": 4}),
        ("user", {"alice": 5, "bob": 2}),
        ("namespace", {"robotics": 4, "team-a": 3}),
        ("project", {"": 4, "vision": 3}),
    ],
)
def test_grouping(by, expected):
    allocations = [
        alloc("a", 1, NOW, NOW + HOUR, pool="p1", user="alice", project="vision"),
        alloc("b", 2, NOW, NOW + HOUR, pool="p1", user="alice", project="vision"),
        alloc("c", 2, NOW, NOW + HOUR, pool="p2", user="alice", namespace="robotics"),
        alloc("d", 2, NOW, NOW + HOUR, pool="p2", user="bob", namespace="robotics"),
    ]
    report = consumption(allocations, since=NOW, until=NOW + HOUR, by=by)
    assert {key: hours.allocated for key, hours in report.groups.items()} == expected
    assert list(report.groups) == sorted(expected)


def test_idle_time_counts_within_its_allocation_and_the_period_only():
    allocations = [alloc("train", 4, NOW, NOW + 2 * HOUR)]
    idle = [
        IdleInterval("team-a", "train", NOW - HOUR, NOW + 1800, gpus=2),  # 30 min inside, 2 GPUs
        IdleInterval("team-a", "train", NOW + HOUR + 1800, None, gpus=1),  # still idle: 30 min to the end
        IdleInterval("team-a", "other-pod", NOW, NOW + HOUR, gpus=8),  # no allocation: ignored
        IdleInterval("robotics", "train", NOW, NOW + HOUR, gpus=8),  # same name, another namespace
    ]
    report = consumption(allocations, idle, since=NOW, until=NOW + 2 * HOUR)
    assert report.total == GpuHours(Fraction(8), Fraction(3, 2))
    clipped = consumption(allocations, idle, since=NOW + HOUR, until=NOW + 2 * HOUR)
    assert clipped.total == GpuHours(Fraction(4), Fraction(1, 2))


def test_idle_gpus_never_count_more_than_the_pod_holds():
    allocations = [alloc("train", 2, NOW, NOW + HOUR)]
    idle = [IdleInterval("team-a", "train", NOW, NOW + HOUR, gpus=1) for _ in range(5)]
    assert consumption(allocations, idle, since=NOW, until=NOW + HOUR).total == GpuHours(Fraction(2), Fraction(2))


def test_intervals_of_one_named_gpu_count_once_where_they_overlap():
    allocations = [alloc("train", 8, NOW, NOW + HOUR)]
    idle = [
        IdleInterval("team-a", "train", NOW, NOW + 1800, gpu="GPU-a"),
        IdleInterval("team-a", "train", NOW + 900, NOW + 2700, gpu="GPU-a"),  # overlaps: 45 min in all
        IdleInterval("team-a", "train", NOW + 2700, NOW + 3600, gpu="GPU-a"),  # touches: 60 min in all
        IdleInterval("team-a", "train", NOW, NOW + 900, gpu="GPU-b"),
    ]
    assert consumption(allocations, idle, since=NOW, until=NOW + HOUR).total.idle == Fraction(5, 4)


def test_arithmetic_is_exact_and_rounded_only_at_the_edge():
    allocations = [alloc(f"pod-{n}", 1, NOW, NOW + 1200) for n in range(3)]  # 3 x 1/3 GPU-hour
    report = consumption(allocations, since=NOW, until=NOW + HOUR, by="namespace")
    assert report.total.allocated == 1
    assert GpuHours(Fraction(1, 3)).rounded() == (Decimal("0.33"), Decimal("0.00"))
    assert GpuHours(Fraction(1, 8), Fraction(5, 8)).rounded(2) == (Decimal("0.13"), Decimal("0.63"))  # half up
    assert GpuHours(Fraction(2, 3)).rounded(0) == (Decimal("1"), Decimal("0"))
    floats = consumption([alloc("f", 0.5, NOW + 0.1, NOW + 0.7)], since=NOW, until=NOW + 1)
    assert floats.total.allocated == Fraction(0.5) * (Fraction(NOW + 0.7) - Fraction(NOW + 0.1)) / 3600
    fractional = consumption([alloc("mig", Fraction(1, 7), NOW, NOW + 7 * HOUR)], since=NOW, until=NOW + 7 * HOUR)
    assert fractional.total.allocated == 1
    assert GpuHours(Fraction(3), Fraction(1)).idle_share == Fraction(1, 3) and GpuHours().idle_share == 0


@pytest.mark.parametrize(
    ("allocations", "idle", "options"),
    [
        ([], [], {"since": NOW + 1, "until": NOW}),
        ([], [], {"since": NOW, "until": NOW + 1, "by": "node"}),
        ([], [], {"since": math.nan, "until": NOW}),
        ([alloc("a", -1, NOW, NOW + 1)], [], {"since": NOW, "until": NOW + 1}),
        ([alloc("a", 1, NOW, NOW - 1)], [], {"since": NOW, "until": NOW + 1}),
        ([], [IdleInterval("a", "b", NOW, NOW - 1)], {"since": NOW, "until": NOW + 1}),
        ([], [IdleInterval("a", "b", NOW, NOW + 1, gpus=-1)], {"since": NOW, "until": NOW + 1}),
    ],
)
def test_bad_consumption_arguments_are_config_errors(allocations, idle, options):
    with pytest.raises(ConfigError):
        consumption(allocations, idle, **options)


def test_an_empty_period_consumes_nothing():
    report = consumption([alloc("a", 1, NOW - HOUR, NOW + HOUR)], since=NOW, until=NOW)
    assert report.groups == {} and report.total == GpuHours()


times = st.integers(min_value=0, max_value=10 * HOUR)
allocation_strategy = st.builds(
    lambda pod, gpus, start, length, pool, user, open_: Allocation(
        "ns", f"pod-{pod}", gpus, start, None if open_ else start + length, user=user, pool=pool
    ),
    st.integers(0, 5),
    st.integers(0, 8),
    times,
    times,
    st.sampled_from(["p1", "p2", "p3"]),
    st.sampled_from(["alice", "bob"]),
    st.booleans(),
)
idle_strategy = st.builds(
    lambda pod, gpus, start, length, gpu: IdleInterval("ns", f"pod-{pod}", start, start + length, gpus, gpu),
    st.integers(0, 5),
    st.integers(0, 8),
    times,
    times,
    st.sampled_from(["", "GPU-a", "GPU-b"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(allocation_strategy, max_size=12), st.lists(idle_strategy, max_size=12), times, times)
def test_idle_never_exceeds_allocated_and_groups_add_up_to_the_total(allocations, idle, a, b):
    since, until = min(a, b), max(a, b)
    reports = [consumption(allocations, idle, since=since, until=until, by=by) for by in ("pool", "user", "project")]
    for report in reports:
        assert all(0 <= hours.idle <= hours.allocated for hours in report.groups.values())
        assert sum(report.groups.values(), GpuHours()) == report.total
        assert report.total == reports[0].total  # the grouping changes nothing of the total
    longest = sum(
        Fraction(a.gpus) * (min(until, a.end if a.end is not None else until) - max(since, a.start)) / 3600
        for a in allocations
        if min(until, a.end if a.end is not None else until) > max(since, a.start)
    )
    assert reports[0].total.allocated == longest
