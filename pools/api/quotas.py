"""Quotas per node pool over REST (SEMANTICS §9): the fair-share simulator, KAI's, for planners."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import selectors

from . import serializers
from .views import ApiView

ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')


class QuotaSimulateView(ApiView, GenericAPIView):
    serializer_class = serializers.QuotaSimulationSerializer
    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Simulate fair shares",
        description="Divides `capacity` GPUs among departments and their projects as KAI Scheduler's proportion "
        "plugin does (SEMANTICS §9.1) and answers each unit's fair share. Reads and writes no data; any signed-in "
        "caller may use it. Every problem of the input is a 400 naming its field (`queues[3].deserved`).",
        request=serializers.QuotaSimulationSerializer,
        responses={200: serializers.FairShareSerializer, 400: ERRORS},
    )
    def post(self, request):
        return Response(selectors.quota_simulate(self.body()))


class QuotaListView(ApiView, GenericAPIView):
    serializer_class = serializers.QuotaFiguresRowSerializer
    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Quotas, allocations and fair shares per department, project and pool",
        description="One row per (department or project, pool) the caller may see, with every figure of SEMANTICS "
        "§9, as `poolctl quota list --json`: each department, then its projects; `warnings` says where projects "
        "deserve more than their department, or departments more than a pool's capacity (never refused).",
        parameters=[OpenApiParameter("pool", str, description="one pool")],
        responses={200: serializers.QuotaListSerializer, 400: ERRORS, 404: ERRORS},
    )
    def get(self, request):
        pool = request.query_params.get("pool") or None
        warnings: list[str] = []
        rows = selectors.quota_figures(user=request.user, pool=pool, warnings=warnings)
        return Response({"quotas": rows, "warnings": warnings})
