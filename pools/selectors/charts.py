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
from .capacity import series_resolution, usage_series
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


def chart(*, times: list[float], series: list[dict], start: datetime, end: datetime, step: float = 0, **extra) -> dict:
    """A chart's data, the same shape for every chart (see the module's docstring).

    ``step`` is the seconds between the samples of the chart's one resolution: where two samples are further apart
    than twice that, a moment without values is put between them, so the line breaks there instead of drawing
    across the hours nobody measured (SEMANTICS §6.1: a gap, never a line or a zero)."""
    if step and len(times) > 1:
        gapped_times, gapped = [], [[] for _ in series]
        for index, moment in enumerate(times):
            if index and moment - times[index - 1] > 2 * step:
                gapped_times.append(times[index - 1] + step)
                for values in gapped:
                    values.append(None)
            gapped_times.append(moment)
            for values, item in zip(gapped, series, strict=True):
                values.append(item["values"][index])
        times = gapped_times
        series = [{**item, "values": values} for item, values in zip(series, gapped, strict=True)]
    return {"times": times, "start": start.timestamp(), "end": end.timestamp(), "series": series, **extra}


def series_step(*, start: datetime, end: datetime) -> float:
    """The seconds between two samples of a sampled series over [start, end] (``series_resolution``)."""
    minute = series_resolution(since=start, until=end) == UsageSample.Resolution.MINUTE
    return 60.0 if minute else 3600.0


def _epoch(at: str) -> float:
    return datetime.fromisoformat(at).timestamp()


def percent_of(part: float | None, whole: float | None) -> float | None:
    """``part`` as a percentage of ``whole`` to one decimal (None when unknown)."""
    return round(100 * part / whole, 1) if part is not None and whole else None


def pool_usage_chart(*, user, pool: str, period: str | None = None) -> dict:
    """A pool's GPUs used, its node set's capacity and its quota over the window: the pool's own series only."""
    found = pool_get(pool, user=user)
    _, start, end = chart_window(period)
    samples = usage_series(scope=UsageSample.Scope.POOL, key=found.name, since=start, until=end)
    labelled = (("Used", "used"), ("Capacity", "capacity"), ("Quota", "quota_limit"))
    return chart(
        times=[_epoch(sample["at"]) for sample in samples],
        series=[{"label": label, "values": [sample[key] for sample in samples]} for label, key in labelled],
        start=start,
        end=end,
        step=series_step(start=start, end=end),
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
        step=series_step(start=start, end=end),
        unit="%",
        empty=empty,
        error=found.backend.utilization_error,
    )


def quota_usage_chart(*, user, pool: str, period: str | None = None) -> dict:
    """A pool's departments' allocation against their deserved quota and the pool's capacity over the window."""
    pool_get(pool, user=user)
    _, start, end = chart_window(period)
    samples = usage_series(scope=UsageSample.Scope.QUOTA, key=pool, since=start, until=end)
    labelled = (("Allocated", "used"), ("Deserved", "quota_limit"), ("Capacity", "capacity"))
    return chart(
        times=[_epoch(sample["at"]) for sample in samples],
        series=[{"label": label, "values": [sample[key] for sample in samples]} for label, key in labelled],
        start=start,
        end=end,
        step=series_step(start=start, end=end),
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
        step=series["step"],
        unit="%",
        empty=empty,
    )
