"""Quotas per node pool over REST (SEMANTICS §9): every unit's figures, a bulk change, KAI's fair-share simulator
and its reclaim check, and a member's own departments and projects (§9.4)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers as fields
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import selectors, services

from . import serializers
from .base import CHANGE_PARAMETERS, ApiView
from .errors import service_errors
from .history import revisions_body

ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')


class QuotaView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []


class QuotaSimulateView(QuotaView):
    doors = {"POST": "quota.simulate"}
    serializer_class = serializers.QuotaSimulationSerializer

    @extend_schema(
        summary="Simulate fair shares",
        description="Divides `capacity` GPUs among departments and their projects as KAI Scheduler's proportion "
        "plugin does (SEMANTICS §9.1) and answers each unit's fair share; with `k_value` above 0, by past usage "
        "too (each queue's `usage`, §9.3). Reads and writes no data; any signed-in caller may use it. Every problem "
        "of the input is a 400 naming its field (`queues[3].deserved`).",
        request=serializers.QuotaSimulationSerializer,
        responses={200: serializers.FairShareSerializer, 400: ERRORS},
    )
    def post(self, request):
        return Response(selectors.quota_simulate(self.body()))


class QuotaReclaimView(QuotaView):
    doors = {"POST": "quota.reclaim"}
    serializer_class = serializers.QuotaReclaimSerializer

    @extend_schema(
        summary="Check a reclaim, what-if",
        description="Decides as KAI Scheduler's proportion plugin does (SEMANTICS §9.2) whether `reclaimer` may "
        "start a reclaim (`can_reclaim`) and whether `victims`, in order, may be taken from (`reclaimable`: the "
        "leveled pairs, saturation, the non-preemptible checks), with one sentence per decision in `reasons`. "
        "Reads and writes no data; any signed-in caller may use it. Every problem of the input is a 400 naming its "
        "field (`victims[0]`, `queues[2].fair_share`).",
        request=serializers.QuotaReclaimSerializer,
        responses={200: serializers.ReclaimVerdictSerializer, 400: ERRORS},
    )
    def post(self, request):
        return Response(selectors.quota_reclaim(self.body()))


class QuotaListView(QuotaView):
    doors = {"GET": "quota.list", "PATCH": "quota.change"}
    serializer_class = serializers.QuotaFiguresRowSerializer

    @extend_schema(
        summary="Quotas, allocations and fair shares per department, project and pool",
        description="One row per (department or project, pool) the caller may see, with every figure of SEMANTICS "
        "§9, as `poolctl quota list --json`: each department, then its projects; `warnings` says where projects "
        "deserve more than their department, or departments more than a pool's capacity (never refused).",
        parameters=[
            OpenApiParameter("pool", str, description="one pool"),
            OpenApiParameter(
                "k_value",
                float,
                description="what-if (SEMANTICS §9.3): each row also gets `what_if_fair_share` and `what_if_usage`, "
                "the fair share with this k and the usage over `window` (default 7d: last week's) and `half_life`; "
                "nothing is written",
            ),
            OpenApiParameter("window", str, description="what-if: the usage window (1h to 30d; default 7d)"),
            OpenApiParameter("half_life", str, description="what-if: the usage half-life (none by default)"),
        ],
        responses={200: serializers.QuotaListSerializer, 400: ERRORS, 404: ERRORS},
    )
    def get(self, request):
        params = request.query_params
        with service_errors():
            what_if = selectors.fair_share_what_if(params.get("k_value"), params.get("window"), params.get("half_life"))
            return Response(selectors.quota_report(user=request.user, pool=params.get("pool") or None, what_if=what_if))

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
        changes = serializers.QuotaBulkSerializer(data=self.body())
        changes.is_valid(raise_exception=True)
        options = self.change_options()
        with service_errors():
            revisions = services.quota_bulk_set(
                quotas=changes.changes(), actor=self.actor(), description=options["description"], tags=options["tags"]
            )
        return Response({**revisions_body(revisions), "warnings": selectors.quota_warnings(user=request.user)})


MY_UNIT = inline_serializer(
    "MyUnit",
    {
        "kind": fields.ChoiceField(choices=["department", "project"]),
        "name": fields.CharField(),
        "role": fields.ChoiceField(choices=["researcher", "viewer", "admin"]),
        "via": fields.CharField(help_text="the department a project's membership comes from, if not listed in it"),
        "department": fields.CharField(),
        "pools": fields.ListField(child=fields.DictField(), help_text="per pool: quota_report's figures"),
        "pending_workloads": fields.ListField(child=fields.DictField(), help_text="each with its reason"),
    },
)


class MyProjectsView(QuotaView):
    doors = {"GET": "my.projects"}

    @extend_schema(
        summary="My departments and projects",
        description="The departments and projects the caller belongs to (as a user, through an identity provider's "
        "group, or as a service account; a department's members belong to its projects), each with the caller's "
        "role and, per pool, the quota (`deserved`, `limit`), `fair_share`, `allocated` and `pending` as "
        "`GET /api/quotas/` computes them, and each pending workload of a project with the reason it waits "
        "(SEMANTICS §9.4, §10). Nothing of the units the caller does not belong to.",
        responses={200: inline_serializer("MyProjects", {"units": fields.ListField(child=MY_UNIT)})},
    )
    def get(self, request):
        return Response({"units": selectors.my_projects(user=request.user)})
