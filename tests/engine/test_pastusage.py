"""SEMANTICS §9.3's usage: a unit's allocated GPU-seconds over the window divided by the backend's capacity-seconds
over the same window, each sample counting ``0.5^(age / half_life)`` with a half-life.

The hand-worked cases spell the sums out; the property folds random histories minute by minute into ``UsageSums``
(samples entering and leaving the window) and compares it with ``usage_over``, the literal sums over the whole
history.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.pastusage import Sample, UsageSums, read_settings, usage_over, usage_streamed

DAY = 86400


def minute(index, capacity=10.0, **allocated):
    return Sample(index * 60, 60, capacity, allocated)


def test_usage_is_gpu_seconds_over_capacity_seconds():
    # Two minutes of a 10-GPU backend: a held 5 then 3 GPUs (8 of 20 GPU-minutes), b 2 in the second minute.
    samples = [minute(1, a=5.0), minute(2, a=3.0, b=2.0)]
    assert usage_over(samples, now=120, window=DAY, half_life=None) == {"a": 0.4, "b": 0.1}


def test_samples_out_of_the_window_count_for_nothing():
    samples = [minute(1, a=10.0), minute(100, b=5.0)]
    # The window of 3,600 s ending at minute 100 holds minute 100 only.
    assert usage_over(samples, now=6000, window=3600, half_life=None) == {"b": 0.5}


def test_a_half_life_halves_a_sample_of_that_age_on_both_sides():
    # a held everything an hour ago and nothing now; with a 1-hour half-life the old minute counts half:
    # a = 10 × 0.5 / (10 × 0.5 + 10 × 1) = 1/3.
    samples = [Sample(0, 60, 10.0, {"a": 10.0}), Sample(3600, 60, 10.0, {})]
    assert usage_over(samples, now=3600, window=DAY, half_life=3600) == {"a": round(1 / 3, 6)}
    assert usage_over(samples, now=3600, window=DAY, half_life=None) == {"a": 0.5}


def test_a_longer_sample_counts_for_its_seconds():
    samples = [Sample(0, 3600, 10.0, {"a": 10.0}), Sample(3600, 60, 10.0, {})]
    assert usage_over(samples, now=3600, window=DAY, half_life=None) == {"a": round(3600 / 3660, 6)}


def test_no_capacity_means_no_usage():
    assert usage_over([minute(1, capacity=0.0, a=1.0)], now=60, window=DAY, half_life=None) == {}


def test_kept_sums_forget_what_is_older_than_nothing_recorded_for_a_window():
    sums = UsageSums(window=3600, half_life=None)
    sums.add(minute(1, a=5.0))
    assert sums.usage(now=60) == {"a": 0.5}
    assert sums.usage(now=60 + 3600) == {}


def test_kept_sums_refuse_a_sample_from_the_past():
    sums = UsageSums(window=3600, half_life=None)
    sums.add(minute(2, a=5.0))
    with pytest.raises(ValueError):
        sums.add(minute(1, a=5.0))


histories = st.lists(
    st.tuples(
        st.integers(1, 30),  # minutes since the sample before
        st.sampled_from([0.0, 4.0, 8.0, 16.0]),  # capacity
        st.dictionaries(st.sampled_from("abcd"), st.sampled_from([0.5, 1.0, 2.0, 7.0]), max_size=4),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(history=histories, window_minutes=st.integers(60, 240), half_life=st.sampled_from([None, 600, 7200]))
def test_kept_sums_equal_the_literal_sums_at_every_minute(history, window_minutes, half_life):
    window = window_minutes * 60
    sums = UsageSums(window=window, half_life=half_life)
    samples = []
    at = 0
    for gap, capacity, allocated in history:
        at += gap * 60
        sample = Sample(at, 60, capacity, {name: min(gpus, capacity) for name, gpus in allocated.items()})
        leaving = [old for old in samples if sums.through - window < old.at <= at - window] if samples else []
        sums.add(sample, leaving)
        samples.append(sample)
        expected = usage_over(samples, now=at, window=window, half_life=half_life)
        found = sums.usage(now=at)
        for name in expected.keys() | found.keys():
            assert math.isclose(found.get(name, 0.0), expected.get(name, 0.0), abs_tol=2e-6), (name, at)


def test_settings_read_with_their_defaults():
    normalized, read, problems = read_settings(None)
    assert normalized == {"k_value": 0, "window": "7d", "half_life": None}
    assert read == (0.0, 7 * DAY, None) and problems == []
    normalized, read, problems = read_settings({"k_value": 1.5, "window": "168h", "half_life": "PT12H"})
    assert normalized == {"k_value": 1.5, "window": "7d", "half_life": "12h"}
    assert read == (1.5, 7 * DAY, 12 * 3600) and problems == []


def test_a_k_at_or_below_zero_counts_as_zero():
    assert read_settings({"k_value": -2})[1].k == 0


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"k_value": "1"}, "fair_share.k_value", "must be a number"),
        ({"k_value": True}, "fair_share.k_value", "must be a number"),
        ({"k_value": 1e9}, "fair_share.k_value", "must be a number"),
        ({"window": "1m"}, "fair_share.window", "must be from 1h to 30d"),
        ({"window": "31d"}, "fair_share.window", "must be from 1h to 30d"),
        ({"window": "soon"}, "fair_share.window", "not a duration"),
        ({"half_life": "10s"}, "fair_share.half_life", "must be from 1m"),
        ({"k": 1}, "fair_share.k", "unknown field"),
        ([1], "fair_share", "must be a JSON object"),
    ],
)
def test_bad_settings_are_named(value, path, words):
    problems = read_settings(value)[2]
    assert [problem.field for problem in problems] == [path]
    assert words in problems[0].message


@settings(max_examples=60, deadline=None)
@given(history=histories, half_life=st.sampled_from([None, 600]))
def test_usage_read_one_sample_at_a_time_equals_the_literal_sums(history, half_life):
    samples, at = [], 0
    for gap, capacity, allocated in history:
        at += gap * 60
        samples.append(Sample(at, 60, capacity, allocated))
    now = at + 120  # read a little after the last sample: the weights shrink alike on both sides
    expected = usage_over(samples, now=now, window=3600, half_life=half_life)
    found = usage_streamed(iter(samples), now=now, window=3600, half_life=half_life)
    for name in expected.keys() | found.keys():
        assert math.isclose(found.get(name, 0.0), expected.get(name, 0.0), abs_tol=2e-6), name
