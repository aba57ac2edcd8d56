"""GPU utilization over REST: the workloads holding idle GPUs, and GPU-hours allocated and idle (CSV too). Both count
only the pools the caller may read; a bad parameter is a 400 naming it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from pools import filtersets, selectors, tables
from pools.choices import ConsumptionBy

from . import serializers
from .base import ApiView, CSVRenderer, filter_parameters
from .errors import service_errors

ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')
IDLE_COLUMNS = [column.key for column in tables.IDLE.where(tables.CSV)]
HOURS_COLUMNS = ["allocated_gpu_hours", "idle_gpu_hours", "idle_share"]


class UtilizationView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []
    renderer_classes = [JSONRenderer, CSVRenderer]


class IdleGpuListView(UtilizationView):
    doors = {"GET": "idle.list"}
    serializer_class = serializers.IdleWorkloadSerializer
    table = tables.IDLE

    @extend_schema(
        summary="Workloads holding idle GPUs",
        description="One row per pod holding GPUs that stayed at or below the idle threshold for the idle time, "
        "in the pools the caller may read, longest idle first: `poolctl get idle --json`. `?format=csv` gives "
        "the same rows as CSV with the columns " + ", ".join(f"`{column}`" for column in IDLE_COLUMNS) + ".",
        parameters=filter_parameters(filtersets.IdleGpuFilterSet),
        responses={200: serializers.IdleWorkloadSerializer(many=True), 400: ERRORS},
    )
    def get(self, request):
        with service_errors():
            rows = selectors.idle_workloads(user=request.user, filters=request.query_params)
        return Response(rows)


class ConsumptionView(UtilizationView):
    doors = {"GET": "consumption.report"}
    serializer_class = serializers.ConsumptionReportSerializer
    by = ConsumptionBy.POOL

    def csv_table(self):
        return tables.CONSUMPTION[self.by]

    @extend_schema(
        summary="GPU-hours allocated and idle per pool, user, namespace or project",
        description="GPU-hours allocated to workloads, and the idle part of them, over a period (`period`, default "
        "30d, or `since`/`until` in ISO 8601), counted in the pools the caller may read and grouped `by` pool, "
        "user, namespace or project (by project: of the projects the caller may read), largest first: "
        "`poolctl get consumption --json`. Counted in whole hours, or in whole days (UTC) for a period reaching "
        "back more than 7 days. `?format=csv` gives one row per group with the columns `<by>`, "
        + ", ".join(f"`{column}`" for column in HOURS_COLUMNS)
        + ".",
        parameters=filter_parameters(filtersets.ConsumptionFilterSet),
        responses={200: serializers.ConsumptionReportSerializer, 400: ERRORS},
    )
    def get(self, request):
        with service_errors():
            report = selectors.consumption_report(user=request.user, filters=request.query_params)
        if request.accepted_renderer.format == "csv":
            self.by = report["by"]
            return Response(report["rows"])
        return Response(report)
