"""GPU utilization over REST (issue 13): thin views over ``selectors.idle_workloads`` and ``consumption_report``.

- ``GET /api/idle_gpus/``: the workloads holding idle GPUs, longest idle first (``?format=csv`` too);
- ``GET /api/consumption/``: GPU-hours allocated and idle per pool, user, namespace or project over a period
  (``?format=csv``: one row per group).

Both count only the pools the caller may read; a bad parameter is a 400 naming it.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from pools import filtersets, selectors

from . import serializers
from .errors import service_errors
from .renderers import CSVRenderer
from .views import ApiView, filter_parameters

ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')
IDLE_COLUMNS = list(selectors.IDLE_WORKLOAD_COLUMNS)
HOURS_COLUMNS = list(selectors.GPU_HOURS_COLUMNS)


class UtilizationView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []
    renderer_classes = [JSONRenderer, CSVRenderer]


class IdleGpuListView(UtilizationView):
    serializer_class = serializers.IdleWorkloadSerializer
    csv_columns = IDLE_COLUMNS

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
    serializer_class = serializers.ConsumptionReportSerializer

    @extend_schema(
        summary="GPU-hours allocated and idle per pool, user, namespace or project",
        description="GPU-hours allocated to workloads, and the idle part of them, over a period (`period`, default "
        "30d, or `since`/`until` in ISO 8601), counted in the pools the caller may read and grouped `by` pool, "
        "user, namespace or project, largest first: `poolctl get consumption --json`. Counted in whole hours, or "
        "in whole days (UTC) for a period reaching back more than 7 days. `?format=csv` gives one row per group "
        "with the columns `<by>`, " + ", ".join(f"`{column}`" for column in HOURS_COLUMNS) + ".",
        parameters=filter_parameters(filtersets.ConsumptionFilterSet),
        responses={200: serializers.ConsumptionReportSerializer, 400: ERRORS},
    )
    def get(self, request):
        with service_errors():
            report = selectors.consumption_report(user=request.user, filters=request.query_params)
        if request.accepted_renderer.format == "csv":
            self.csv_columns = [report["by"], *HOURS_COLUMNS]
            return Response(report["rows"])
        return Response(report)
