"""Pages of GPU utilization (issue 13): the workloads holding idle GPUs, the GPU-hours consumed and wasted, a
pool's and a node's utilization over time, a node's GPUs now.

Thin like the other pages: every figure comes from ``pools.selectors`` (``selectors.utilization`` underneath, as
the API and ``poolctl`` read it); a chart's data is JSON whose ``start`` and ``end`` are the chosen window, so
the chart's time axis spans exactly that window whatever the samples.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from . import selectors
from .choices import ConsumptionBy
from .engine.errors import ConfigError
from .filtersets import ConsumptionFilterSet, IdleGpuFilterSet
from .views import export, filter_values, gate_answers, page_or_fragment

DEFAULT_PERIOD = "24h"
MEMORY_COLOUR = "#b86e00"  # the charts' memory line: amber, apart from utilization's blue
NOT_READ_YET = "the worker reads utilization once a minute"
NO_SAMPLES = "No utilization samples in this period yet: the worker reads utilization once a minute."
NO_SOURCE = (
    "Backend {backend} has no Prometheus and is not simulated: there is no GPU utilization to show. "
    "Give it a prometheus_url that scrapes NVIDIA's DCGM exporter."
)


def chart_window(request) -> tuple[str, float, float]:
    """The chosen period (``?range=``, one of ``selectors.PERIODS``, else 24h) and its window in epoch seconds."""
    period = request.GET.get("range", DEFAULT_PERIOD)
    period = period if period in selectors.PERIODS else DEFAULT_PERIOD
    end = timezone.now()
    return period, (end - selectors.PERIODS[period]).timestamp(), end.timestamp()


def percent_of(part: float | None, whole: float | None) -> float | None:
    """``part`` as a percentage of ``whole`` to one decimal (None when unknown)."""
    return round(100 * part / whole, 1) if part is not None and whole else None


# --- workloads with idle GPUs ----------------------------------------------------------------------------------


@login_required
@require_GET
def idle(request):
    """The workloads holding GPUs they have not used for the idle duration, longest idle first; CSV export."""
    filters = filter_values(request, IdleGpuFilterSet)
    error = ""
    try:
        rows = selectors.idle_workloads(user=request.user, filters=request.GET)
    except ConfigError as exc:
        rows, error = [], str(exc)
    fmt = request.GET.get("format")
    if fmt in ("csv", "json"):
        if error:
            return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
        return export(rows, list(selectors.IDLE_WORKLOAD_COLUMNS), "idle-gpus", fmt)
    context = {
        "rows": rows,
        "filters": filters,
        "error": error,
        "pools": selectors.pool_names_visible(user=request.user),
        "read_at": selectors.utilization_read_at(user=request.user),
        "not_read_yet": NOT_READ_YET,
    }
    return page_or_fragment(request, "pools/idle.html", "pools/_idle_table.html", context, status=400 if error else 200)


# --- GPU-hours -------------------------------------------------------------------------------------------------


@login_required
@require_GET
def consumption(request):
    """GPU-hours allocated and idle per pool, user, namespace or project over a period; CSV and JSON exports."""
    filters = filter_values(request, ConsumptionFilterSet)
    error, report = "", None
    try:
        report = selectors.consumption_report(user=request.user, filters=request.GET)
    except ConfigError as exc:
        error = str(exc)
    fmt = request.GET.get("format")
    if fmt in ("csv", "json"):
        if error:
            return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
        name = f"gpu-consumption-{report['by']}"
        if fmt == "json":
            return export(report, [], name, fmt)
        return export(report["rows"], [report["by"], *selectors.GPU_HOURS_COLUMNS], name, fmt)
    context = {
        "report": report,
        "filters": {**filters, "by": filters["by"] or ConsumptionBy.POOL, "period": filters["period"] or "30d"},
        "error": error,
        "by_choices": ConsumptionBy.choices,
        "periods": list(selectors.PERIODS),
        "pools": selectors.pool_names_visible(user=request.user),
    }
    return render(request, "pools/consumption.html", context, status=400 if error else 200)


# --- a pool's utilization over time ----------------------------------------------------------------------------


@login_required
@require_GET
@gate_answers
def pool_utilization(request, name: str):
    """A pool's average GPU utilization and GPU memory used (%) over the chosen window (JSON for the chart)."""
    pool = selectors.pool_get(name, user=request.user)
    _, start, end = chart_window(request)
    samples = selectors.utilization_series(
        pool=pool.name, since=datetime.fromtimestamp(start, tz=UTC), until=datetime.fromtimestamp(end, tz=UTC)
    )
    source = selectors.utilization_source(pool.backend)
    empty = ""
    if not samples:
        empty = NO_SOURCE.format(backend=pool.backend.name) if not source else NO_SAMPLES
    return JsonResponse(
        {
            "times": [sample["at"] for sample in samples],
            "start": start,
            "end": end,
            "unit": "%",
            "empty": empty,
            "error": pool.backend.utilization_error,
            "series": [
                {"label": "GPU utilization %", "values": [sample["utilization"] for sample in samples]},
                {
                    "label": "GPU memory used %",
                    "color": MEMORY_COLOUR,
                    "values": [percent_of(sample["memory_used"], sample["memory_total"]) for sample in samples],
                },
            ],
        }
    )


# --- a node's GPUs ---------------------------------------------------------------------------------------------


@login_required
@require_GET
@gate_answers
def node_gpus(request, name: str):
    """A node's GPUs now: model, the pod holding each, utilization, memory and idle time; and their history."""
    backend = request.GET.get("backend") or None
    gpus = selectors.node_gpus(name, user=request.user, backend=backend)
    context = {"gpus": gpus, "backend": backend, "ranges": list(selectors.PERIODS), "no_source": ""}
    if not gpus["source"]:
        context["no_source"] = NO_SOURCE.format(backend=gpus["backend"])
    return render(request, "pools/node_gpus.html", context)


@login_required
@require_GET
@gate_answers
def node_gpus_history(request, name: str):
    """A node's average GPU utilization (%) and GPU memory used (GiB) over the chosen window (JSON for the chart)."""
    _, start, end = chart_window(request)
    series = selectors.node_utilization_series(
        name, user=request.user, since=start, until=end, backend=request.GET.get("backend") or None
    )
    empty = ""
    if series["error"]:
        empty = f"Prometheus did not answer: {series['error']}"
    elif not series["source"]:
        empty = "This node's backend has no Prometheus and is not simulated: there is no GPU utilization to show."
    elif not series["times"]:
        empty = "No utilization in this period yet."
    return JsonResponse(
        {
            "times": series["times"],
            "start": start,
            "end": end,
            "unit": "%",
            "empty": empty,
            "series": [
                {"label": "GPU utilization %", "values": series["utilization"]},
                {
                    "label": "GPU memory used GiB",
                    "color": MEMORY_COLOUR,
                    "scale": "GiB",
                    "values": [None if value is None else round(value / 1024, 2) for value in series["memory_used"]],
                },
            ],
        }
    )
