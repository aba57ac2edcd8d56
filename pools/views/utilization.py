"""Pages of GPU utilization: the workloads holding idle GPUs, and the GPU-hours consumed and wasted."""

from __future__ import annotations

from django.http import JsonResponse

from .. import selectors, tables
from ..choices import ConsumptionBy
from ..filtersets import ConsumptionFilterSet, IdleGpuFilterSet
from .base import ListPage

NOT_READ_YET = "the worker reads utilization once a minute"


class Idle(ListPage):
    """The workloads holding GPUs they have not used for the idle duration, longest idle first; CSV export."""

    door = "idle.list"
    template_name = "pools/idle.html"
    fragment_name = "pools/_idle_table.html"
    table = tables.IDLE
    filterset = IdleGpuFilterSet
    export_name = "idle-gpus"

    def rows(self):
        return selectors.idle_workloads(user=self.request.user, filters=self.request.GET)

    def context(self, rows):
        return {
            "pools": selectors.pool_names_visible(user=self.request.user),
            "read_at": selectors.utilization_read_at(user=self.request.user),
            "not_read_yet": NOT_READ_YET,
        }


class Consumption(ListPage):
    """GPU-hours allocated and idle per pool, user, namespace or project over a period; CSV (a row per group) and
    JSON (the whole report, as ``/api/consumption/`` answers it) exports."""

    door = "consumption.report"
    template_name = "pools/consumption.html"
    filterset = ConsumptionFilterSet
    report: dict | None = None

    def rows(self):
        self.report = selectors.consumption_report(user=self.request.user, filters=self.request.GET)
        return self.report["rows"]

    @property
    def export_name(self) -> str:
        return f"gpu-consumption-{self.report['by']}" if self.report else "gpu-consumption"

    @property
    def table(self):
        return tables.CONSUMPTION[self.report["by"] if self.report else ConsumptionBy.POOL]

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        if request.GET.get("format") == "json" and self.report is not None:
            response = JsonResponse(self.report, json_dumps_params={"indent": 2})
            response["Content-Disposition"] = f'attachment; filename="{self.export_name}.json"'
        return response

    def context(self, rows):
        filters = self.filter_values()
        return {
            "report": self.report,
            "filters": {**filters, "by": filters["by"] or ConsumptionBy.POOL, "period": filters["period"] or "30d"},
            "by_choices": ConsumptionBy.choices,
            "periods": list(selectors.PERIODS),
            "pools": selectors.pool_names_visible(user=self.request.user),
        }
