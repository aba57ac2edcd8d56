"""Charts that do not lie (SEMANTICS §6.1): a gap where no sample exists, one resolution per chart, and only the
page's own series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kube_objects import node, pod

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import UsageSample
from pools.selectors.charts import chart

START = datetime(2026, 11, 1, tzinfo=UTC)


def test_samples_further_apart_than_twice_the_step_break_the_line():
    times = [0.0, 60.0, 120.0, 3720.0, 3780.0]
    drawn = chart(
        times=times,
        series=[{"label": "Used", "values": [1, 2, 3, 4, 5]}],
        start=START,
        end=START + timedelta(hours=2),
        step=60,
    )
    assert drawn["times"] == [0.0, 60.0, 120.0, 180.0, 3720.0, 3780.0]
    assert drawn["series"][0]["values"] == [1, 2, 3, None, 4, 5]  # a gap, never a zero or a line across


def test_samples_at_their_step_are_drawn_as_they_are():
    drawn = chart(times=[0.0, 3600.0], series=[{"label": "x", "values": [1, 2]}], start=START, end=START, step=3600)
    assert drawn["times"] == [0.0, 3600.0] and drawn["series"][0]["values"] == [1, 2]


def test_a_pool_chart_is_its_own_series_at_one_resolution(cluster, actor):
    backend = cluster([node("n1", gpu=8), pod("a", node="n1", gpu=3, pool="p")])
    services.config_apply(changes={ConfigType.POOL: {"p": {"backend": backend.name}}}, actor=actor)
    now = datetime.now(tz=UTC).replace(second=0, microsecond=0)
    hour = now.replace(minute=0)
    for at, resolution in (
        (hour - timedelta(hours=20), "hour"),
        (hour - timedelta(hours=19), "hour"),
        (hour - timedelta(hours=3), "hour"),  # nothing recorded for 15 hours before this one
        (hour, "minute"),  # the current hour, which the compaction has not reached
    ):
        UsageSample.objects.create(
            scope="pool", key="p", backend=backend, resolution=resolution, at=at, used=3, capacity=8
        )
        UsageSample.objects.create(
            scope="product",
            key="NVIDIA-H100-80GB-HBM3",
            backend=backend,
            resolution=resolution,
            at=at,
            used=70,
            capacity=80,
        )
    day = selectors.pool_usage_chart(user=SYSTEM, pool="p", period="24h")
    assert [series["label"] for series in day["series"]] == ["Used", "Capacity", "Quota"]
    used = day["series"][0]["values"]
    assert 70 not in used  # the fleet's product lines are another page's
    # Hourly: the 15 silent hours are one gap; the last minute sample is its hour's average, not a minute point.
    assert used.count(None) == 2 and all(t % 3600 == 0 for t in day["times"])
    hour_chart = selectors.pool_usage_chart(user=SYSTEM, pool="p", period="1h")
    assert hour_chart["times"] == [hour.timestamp()]
