"""The pure rules of GPU utilization (pools/engine/utilization.py): quiet runs and idle GPUs, the distribution, the
devices' names and sizes, and GPU-hours over a round's period."""

import math
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import ConfigError
from pools.engine.utilization import (
    BUCKETS,
    GpuHours,
    Holding,
    device_name,
    device_share,
    idle_for,
    period_gpu_hours,
    quiet_since,
    utilization_bucket,
    utilization_distribution,
)

NOW = 1_763_715_600
HOUR = 3600


def samples(values, *, step=15, end=NOW):
    """(t, value) pairs whose last is at ``end``, one every ``step`` seconds."""
    start = end - step * (len(values) - 1)
    return [(start + step * i, v) for i, v in enumerate(values)]


def idle(values, now=NOW, *, threshold=0, duration=300, **options):
    """How long a GPU with these samples has been idle at ``now`` (None: not idle)."""
    return idle_for(quiet_since(samples(values, **options), now, threshold=threshold), now, duration=duration)


# -- quiet runs and idle GPUs --------------------------------------------------------------------------------------


def test_a_gpu_quiet_for_exactly_the_duration_is_idle_one_step_less_is_not():
    assert quiet_since(samples([0] * 21), NOW) == NOW - 300  # samples at now-300 ... now
    assert idle([0] * 21) == 300
    assert idle([0] * 20) is None  # now-285 ... now
    assert idle([0] * 20, duration=285) == 285


def test_idle_for_runs_to_now_even_between_samples():
    assert idle([0] * 21, NOW + 10) == 310


def test_the_threshold_is_inclusive():
    assert idle([5] * 21, threshold=5) == 300
    assert idle([5.01] + [5] * 20, threshold=5) is None
    assert idle([5] * 20 + [5.01], threshold=5) is None
    assert idle([0.5] * 21) is None  # the default threshold is 0 %
    assert idle([100] * 21, threshold=100) == 300


def test_a_gpu_that_becomes_busy_starts_over():
    values = [0] * 40 + [1] + [0] * 10  # quiet for 10 minutes, 1 % 150 s ago, quiet from the next sample on
    assert quiet_since(samples(values), NOW) == NOW - 135
    assert idle(values) is None
    assert quiet_since(samples([0] * 40 + [80]), NOW) is None  # busy now


def test_a_gap_longer_than_twice_the_step_breaks_the_run():
    before = [(NOW - 600 + 15 * i, 0) for i in range(20)]  # now-600 ... now-315
    after_short_gap = [(NOW - 285 + 15 * i, 0) for i in range(20)]  # 30 s after: not a break
    after_long_gap = [(NOW - 270 + 15 * i, 0) for i in range(19)]  # 45 s after: a break
    assert quiet_since(before + after_short_gap, NOW) == NOW - 600
    assert quiet_since(before + after_long_gap, NOW) == NOW - 270
    assert quiet_since(before + after_long_gap, NOW, max_gap=60) == NOW - 600


def test_a_stale_series_is_not_quiet_and_later_samples_are_ignored():
    assert quiet_since(samples([0] * 40, end=NOW - 31), NOW) is None
    assert quiet_since(samples([0] * 40, end=NOW - 30), NOW) == NOW - 30 - 39 * 15
    assert quiet_since([*samples([0] * 21), (NOW + 15, 90)], NOW) == NOW - 300
    assert quiet_since([], NOW) is None


def test_a_value_that_is_not_a_number_breaks_the_run():
    assert quiet_since(samples([0] * 10 + [math.nan] + [0] * 10), NOW) == NOW - 135
    assert quiet_since(samples([0] * 20 + [math.nan]), NOW) is None


def test_a_series_that_begins_quiet_counts_from_its_first_sample():
    assert quiet_since(samples([0] * 100), NOW) == NOW - 99 * 15


def test_a_device_that_is_not_quiet_is_not_idle():
    assert idle_for(None, NOW) is None
    assert idle_for(NOW - 299, NOW) is None and idle_for(NOW - 300, NOW) == 300


@pytest.mark.parametrize(
    "options", [{"threshold": -1}, {"threshold": 100.5}, {"threshold": math.nan}, {"max_gap": 0}, {"max_gap": -1}]
)
def test_bad_arguments_are_config_errors(options):
    with pytest.raises(ConfigError):
        quiet_since(samples([0] * 21), NOW, **options)


@pytest.mark.parametrize("duration", [-1, math.inf, math.nan])
def test_a_bad_idle_duration_is_a_config_error(duration):
    with pytest.raises(ConfigError):
        idle_for(NOW - 400, NOW, duration=duration)


def test_samples_out_of_order_or_not_numbers_are_refused():
    with pytest.raises(ConfigError, match="time order"):
        quiet_since([(NOW, 0), (NOW - 15, 0), (NOW - 10, 0)], NOW)
    with pytest.raises(ConfigError, match="must be a number"):
        quiet_since([(NOW - 15, 0), (NOW, "0")], NOW)  # Prometheus's JSON strings are the caller's to convert


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0, 0, 0, 3, 50]), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=100),
    st.integers(min_value=0, max_value=900),
)
def test_idle_means_the_last_duration_seconds_of_samples_are_all_quiet(values, threshold, duration):
    found = idle(values, threshold=threshold, duration=duration) is not None
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


# -- devices -------------------------------------------------------------------------------------------------------


def test_a_device_is_named_by_its_uuid_and_its_mig_instance_or_share():
    assert device_name("GPU-1") == "GPU-1"
    assert device_name("GPU-1", "3") == "GPU-1/mig3"
    assert device_name("GPU-1", "", "2") == "GPU-1/share2"


@pytest.mark.parametrize(
    ("profile", "replicas", "share"),
    [
        ("", 1, 1),
        ("", 0, 1),
        ("", 4, 1 / 4),
        ("1g.10gb", 1, 1 / 7),
        ("3g.40gb", 1, 3 / 7),
        ("7g.80gb", 1, 1),
        ("weird", 1, 1 / 7),
        ("9g.99gb", 1, 1 / 7),
    ],
)
def test_a_device_counts_as_its_share_of_a_gpu(profile, replicas, share):
    assert device_share(mig_profile=profile, replicas=replicas) == share


# -- GPU-hours over a period ---------------------------------------------------------------------------------------


def test_a_pod_s_gpus_count_for_the_whole_period_and_its_idle_devices_from_when_they_became_idle():
    hours = period_gpu_hours(
        [
            Holding(("x", "alice"), 4, quiet=((1, NOW - 3600), (1, NOW - 330), (1, NOW - 200))),
            Holding(("x", "bob"), 2),
            Holding(("x", "alice"), 1),
        ],
        since=NOW - 60,
        until=NOW,
        duration=300,
    )
    # alice: 5 GPUs a minute; idle: one GPU the whole minute, one from now-30 (quiet since now-330), one not yet.
    assert hours == {("x", "alice"): GpuHours(5 / 60, 1 / 60 + 30 / 3600), ("x", "bob"): GpuHours(2 / 60, 0.0)}


def test_idle_hours_never_exceed_the_gpus_held():
    [found] = period_gpu_hours(
        [Holding(("x",), 1, quiet=((1, NOW - 900), (1, NOW - 900)))], since=NOW - 60, until=NOW
    ).values()
    assert found.idle == found.allocated == 1 / 60


def test_an_empty_period_counts_nothing():
    assert period_gpu_hours([Holding(("x",), 8, quiet=((8, 0),))], since=NOW, until=NOW) == {("x",): GpuHours(0.0, 0.0)}


@pytest.mark.parametrize(
    ("holding", "options"),
    [
        (Holding(("x",), -1), {}),
        (Holding(("x",), 1, quiet=((-1, NOW),)), {}),
        (Holding(("x",), math.nan), {}),
        (Holding(("x",), 1), {"since": NOW + 1}),
        (Holding(("x",), 1), {"duration": -5}),
    ],
)
def test_bad_holdings_or_periods_are_config_errors(holding, options):
    with pytest.raises(ConfigError):
        period_gpu_hours([holding], **{"since": NOW - 60, "until": NOW, **options})


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.integers(min_value=0, max_value=8),
            st.lists(st.integers(min_value=-3600, max_value=60), max_size=8),
        ),
        max_size=20,
    ),
    st.integers(min_value=0, max_value=900),
)
def test_idle_never_exceeds_allocated_and_groups_are_what_their_pods_add_up_to(pods, duration):
    holdings = [Holding((group,), gpus, quiet=tuple((1, NOW - 60 + at) for at in quiet)) for group, gpus, quiet in pods]
    hours = period_gpu_hours(holdings, since=NOW - 60, until=NOW, duration=duration)
    for group, found in hours.items():
        assert 0 <= found.idle <= found.allocated + 1e-12
        assert found.allocated == pytest.approx(sum(gpus for g, gpus, _ in pods if (g,) == group) / 60)
