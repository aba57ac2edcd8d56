"""The charts' data: every chart of the console (a pool's usage and utilization, a quota dashboard's allocation, a
node's GPUs) answers the same shape from one function, ``chart``, over a window ``chart_window`` reads.

``{"times": [epoch seconds], "start", "end", "series": [{"label", "values", "color"?, "scale"?}], "unit"?,
"empty"?, "error"?}``: the chart's time axis spans exactly ``start`` to ``end`` whatever the samples, and a
value of None is a gap in a line.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from ..models import UsageSample
from ..querysets import sees_whole_fleet
from .capacity import pool_node_summary, summary_products, usage_series
from .gpuctl import node_get
from .pools import pool_get
from .utilization import PERIODS, node_utilization_series, utilization_series, utilization_source

DEFAULT_PERIOD = "24h"
MEMORY_COLOUR = "#b86e00"  # the charts' memory line: amber, apart from utilization's blue
NO_SAMPLES = "No utilization samples in this period yet: the worker reads utilization once a minute."
NO_SOURCE = (
    "Backend {backend} has no Prometheus and is not simulated: there is no GPU utilization to show. "
    "Give it a prometheus_url that scrapes NVIDIA's DCGM exporter."
)


def chart_window(period: str | None, *, now: datetime | None = None) -> tuple[str, datetime, datetime]:
    """The period asked for (one of ``PERIODS``, else 24 h) and its window, ending now."""
    period = period if period in PERIODS else DEFAULT_PERIOD
    end = now or timezone.now()
    return period, end - PERIODS[period], end


def chart(*, times: list[float], series: list[dict], start: datetime, end: datetime, **extra) -> dict:
    """A chart's data, the same shape for every chart (see the module's docstring)."""
    return {"times": times, "start": start.timestamp(), "end": end.timestamp(), "series": series, **extra}


def _epoch(at: str) -> float:
    return datetime.fromisoformat(at).timestamp()


def percent_of(part: float | None, whole: float | None) -> float | None:
    """``part`` as a percentage of ``whole`` to one decimal (None when unknown)."""
    return round(100 * part / whole, 1) if part is not None and whole else None


def pool_usage_chart(*, user, pool: str, period: str | None = None) -> dict:
    """A pool's GPUs used, its capacity and its quota over the window; to readers of the whole fleet also its GPU
    products' use in every pool (a sum over every pool, which a reader of some pools may not see)."""
    found = pool_get(pool, user=user)
    _, start, end = chart_window(period)
    summary = pool_node_summary([found.name]).get(found.name, {"platforms": {}})
    products = summary_products(summary) if sees_whole_fleet(user) else []
    series = {"used": {}, "capacity": {}, "quota_limit": {}}
    for sample in usage_series(scope=UsageSample.Scope.POOL, key=found.name, since=start):
        for key in series:
            series[key][sample["at"]] = sample[key]
    for product in products:
        series[product] = {
            sample["at"]: sample["used"]
            for sample in usage_series(scope=UsageSample.Scope.PRODUCT, key=product, since=start)
        }
    times = sorted({at for values in series.values() for at in values})
    labelled = [
        ("Used", series["used"]),
        ("Capacity", series["capacity"]),
        ("Quota", series["quota_limit"]),
        *((f"{product} used (all pools)", series[product]) for product in products),
    ]
    return chart(
        times=[_epoch(at) for at in times],
        series=[{"label": label, "values": [values.get(at) for at in times]} for label, values in labelled],
        start=start,
        end=end,
    )


def pool_utilization_chart(*, user, pool: str, period: str | None = None) -> dict:
    """A pool's average GPU utilization and GPU memory used (%) over the window."""
    found = pool_get(pool, user=user)
    _, start, end = chart_window(period)
    samples = utilization_series(pool=found.name, since=start.astimezone(UTC), until=end.astimezone(UTC))
    empty = ""
    if not samples:
        empty = NO_SOURCE.format(backend=found.backend.name) if not utilization_source(found.backend) else NO_SAMPLES
    return chart(
        times=[sample["at"] for sample in samples],
        series=[
            {"label": "GPU utilization %", "values": [sample["utilization"] for sample in samples]},
            {
                "label": "GPU memory used %",
                "color": MEMORY_COLOUR,
                "values": [percent_of(sample["memory_used"], sample["memory_total"]) for sample in samples],
            },
        ],
        start=start,
        end=end,
        unit="%",
        empty=empty,
        error=found.backend.utilization_error,
    )


def quota_usage_chart(*, user, pool: str, period: str | None = None) -> dict:
    """A pool's departments' allocation against their deserved quota and the pool's capacity over the window."""
    pool_get(pool, user=user)
    _, start, end = chart_window(period)
    samples = usage_series(scope=UsageSample.Scope.QUOTA, key=pool, since=start)
    labelled = (("Allocated", "used"), ("Deserved", "quota_limit"), ("Capacity", "capacity"))
    return chart(
        times=[_epoch(sample["at"]) for sample in samples],
        series=[{"label": label, "values": [sample[key] for sample in samples]} for label, key in labelled],
        start=start,
        end=end,
    )


def node_gpus_chart(*, user, node: str, backend: str | None = None, period: str | None = None) -> dict:
    """A node's average GPU utilization (%) and GPU memory used (GiB) over the window."""
    node_get(node, user, backend)  # a node the reader may not see does not exist for them
    _, start, end = chart_window(period)
    series = node_utilization_series(node, user=user, since=start.timestamp(), until=end.timestamp(), backend=backend)
    empty = ""
    if series["error"]:
        empty = f"Prometheus did not answer: {series['error']}"
    elif not series["source"]:
        empty = "This node's backend has no Prometheus and is not simulated: there is no GPU utilization to show."
    elif not series["times"]:
        empty = "No utilization in this period yet."
    return chart(
        times=series["times"],
        series=[
            {"label": "GPU utilization %", "values": series["utilization"]},
            {
                "label": "GPU memory used GiB",
                "color": MEMORY_COLOUR,
                "scale": "GiB",
                "values": [None if value is None else round(value / 1024, 2) for value in series["memory_used"]],
            },
        ],
        start=start,
        end=end,
        unit="%",
        empty=empty,
    )
