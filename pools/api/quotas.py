"""Quotas per node pool over REST (SEMANTICS §9): the fair-share simulator, KAI's, for planners."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import selectors, services
from pools.engine.errors import AccessDenied

from . import serializers
from .errors import bad_request, service_errors
from .views import CHANGE_PARAMETERS, ApiView, _revisions_body

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

    @extend_schema(
        summary="Change many quotas at once, all or nothing",
        description="Each item of `quotas` names a department or project (`unit`; `department/NAME` or "
        "`project/NAME` when both exist), a pool (`nodePool`) and the figures to set, in Run:ai's field names "
        "(`priority`, `gpu: {deserved, limit, overQuotaWeight}`, `cpu`, `memory`); figures not given are kept. "
        "One revision per changed type; one bad item and nothing is written. Needs `config:Update` on the types "
        "changed, and for a project `department:Update` on its department. Answers the revisions and the "
        "warnings of SEMANTICS §9 after the change.",
        parameters=CHANGE_PARAMETERS,
        request=serializers.QuotaBulkSerializer,
        responses={200: serializers.QuotaBulkResultSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS},
    )
    def patch(self, request):
        with service_errors():
            if not selectors.can_change_quotas(request.user):
                raise AccessDenied("changing quotas needs config:Update on config/DEPARTMENT or config/PROJECT")
        items = self.body().get("quotas")
        if not isinstance(items, list) or not items:
            raise bad_request("a non-empty list of quotas is required", field="quotas")
        if len(items) > MAX_BULK:
            raise bad_request(f"at most {MAX_BULK} quotas in one request", field="quotas")
        quotas = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise bad_request("must be an object", field=f"quotas[{index}]")
            for key in ("unit", "nodePool"):
                if not isinstance(item.get(key), str) or not item[key]:
                    raise bad_request("a name is required", field=f"quotas[{index}].{key}")
            figures = {key: value for key, value in item.items() if key not in ("unit", "nodePool")}
            quotas.append({"unit": item["unit"], "pool": item["nodePool"], "figures": figures})
        options = self.change_options()
        with service_errors():
            revisions = services.quota_bulk_set(
                quotas=quotas, actor=self.actor(), description=options["description"], tags=options["tags"]
            )
        warnings: list[str] = []
        selectors.quota_figures(user=request.user, warnings=warnings)
        return Response({**_revisions_body(revisions), "warnings": warnings})


MAX_BULK = 10_000
