"""Quotas per node pool over REST (SEMANTICS §9): the fair-share simulator, KAI's, for planners."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
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
