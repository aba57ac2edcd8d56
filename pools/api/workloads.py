"""Workloads over REST (SEMANTICS §10): the rows of the Workloads page, paginated, and one workload."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from pools import selectors, tables
from pools.filtersets import WorkloadFilterSet

from .base import ApiView, CSVRenderer, filter_parameters
from .errors import service_errors
from .serializers.workloads import WorkloadDetailSerializer, WorkloadSerializer

ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')


class WorkloadListView(ApiView, GenericAPIView):
    doors = {"GET": "workload.list"}
    serializer_class = WorkloadSerializer
    filter_backends = []
    renderer_classes = [JSONRenderer, CSVRenderer]
    table = tables.WORKLOADS

    @extend_schema(
        summary="Workloads",
        description="The workloads the caller may see (those of the pools their roles show, and of the projects "
        "they are a member of), GPU holders first, as the Workloads page and `poolctl get workloads --json` list "
        "them: grouped by pod group, controller or pod (SEMANTICS §10). `pending=1` keeps those with a pending "
        "pod; `reason` those waiting for that reason. Paginated with `limit` and `offset`; `?format=csv` for CSV.",
        parameters=filter_parameters(WorkloadFilterSet),
        responses={200: WorkloadSerializer(many=True), 400: ERRORS},
    )
    def get(self, request):
        with service_errors():
            rows = selectors.workloads_visible(user=request.user, filters=request.query_params)
            if request.accepted_renderer.format == "csv":  # a spreadsheet wants every row, not a page of them
                return Response(list(rows))
            page = self.paginate_queryset(rows)
        return self.get_paginated_response(page)


class WorkloadDetailView(ApiView, GenericAPIView):
    doors = {"GET": "workload.get"}
    serializer_class = WorkloadDetailSerializer
    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="One workload",
        description="A workload by backend, namespace and name, with its pods, nodes, why it waits (its verdict's "
        "checks with figures, and victims) and the history of its phases. The kind is not in the address: when "
        "kinds share a name in a namespace, a pod group is meant, then a controller, then a bare pod. A workload "
        "the caller may not see answers 404, as one that does not exist.",
        responses={200: WorkloadDetailSerializer, 404: ERRORS},
    )
    def get(self, request, backend, namespace, name):
        with service_errors():
            workload = selectors.workload_get(user=request.user, backend=backend, namespace=namespace, name=name)
        return Response(workload)
