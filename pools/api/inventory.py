"""The inventory over REST: nodes, pods and memberships as last synced, usage samples, the pools' quota and status
(``poolctl pool list``), the node table (``poolctl resource list``), Run:ai's node-pools view and sync jobs."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from pools import filtersets, jobs, selectors, tables
from pools.engine.errors import ConfigError, NotFound
from pools.models import Node, NodeMembership, Pod, UsageSample

from . import serializers
from .base import NAMES_PARAMETER, ApiView, CSVRenderer, filter_parameters, names_parameter
from .errors import service_errors


class ReadOnlyListViewSet(ApiView, viewsets.GenericViewSet):
    """A filtered, ordered, paginated list of rows the user may read."""

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


@extend_schema_view(
    list=extend_schema(summary="List nodes", description="Nodes of the pools you may read."),
    retrieve=extend_schema(
        summary="Get a node",
        parameters=[OpenApiParameter("backend", str, description="the node's backend, when several have that name")],
    ),
)
class NodeViewSet(ReadOnlyListViewSet):
    """Nodes as last synced, looked up by name."""

    doors = {"list": "node.list", "retrieve": "node.get"}
    queryset = Node.objects.none()
    serializer_class = serializers.NodeSerializer
    filterset_class = filtersets.NodeFilterSet
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    ordering_fields = ["name", "gpu", "cpu", "memory", "gpu_product", "backend__name"]
    ordering = ["backend__name", "name"]

    def get_queryset(self):
        return selectors.nodes_visible(user=self.request.user)

    def get_object(self):
        nodes = self.get_queryset().filter(name=self.kwargs["name"])
        backend = self.request.query_params.get("backend")
        if backend:
            nodes = nodes.filter(backend__name=backend)
        found = list(nodes[:2])
        if not found:
            raise NotFound(f"node '{self.kwargs['name']}' does not exist")
        if len(found) > 1:
            raise ConfigError(f"several backends have a node '{found[0].name}'; add ?backend=", field="backend")
        return found[0]

    def retrieve(self, request, *args, **kwargs):
        return Response(self.get_serializer(self.get_object()).data)


@extend_schema_view(list=extend_schema(summary="List pods (workloads)", description="Pods of the pools you may read."))
class PodViewSet(ReadOnlyListViewSet):
    """Pods (the pools' workloads) as last synced."""

    doors = {"list": "pod.list"}
    queryset = Pod.objects.none()
    serializer_class = serializers.PodSerializer
    filterset_class = filtersets.PodFilterSet
    ordering_fields = ["name", "namespace", "gpu", "node_name", "pool_name"]
    ordering = ["backend__name", "namespace", "name"]

    def get_queryset(self):
        return selectors.pods_visible(user=self.request.user)


@extend_schema_view(list=extend_schema(summary="List node ↔ (pool, platform) memberships"))
class MembershipViewSet(ReadOnlyListViewSet):
    """Which nodes each (pool, platform) selects."""

    doors = {"list": "membership.list"}
    queryset = NodeMembership.objects.none()
    serializer_class = serializers.MembershipSerializer
    filterset_class = filtersets.NodeMembershipFilterSet
    ordering_fields = ["pool__name", "platform_name", "node__name"]
    ordering = ["pool__name", "platform_name", "node__name"]

    def get_queryset(self):
        return selectors.memberships_visible(user=self.request.user)


@extend_schema_view(
    list=extend_schema(
        summary="List usage samples",
        description="GPU usage history per pool or GPU product; `?format=csv` gives every matching row as CSV.",
    )
)
class UsageViewSet(ReadOnlyListViewSet):
    """Usage samples for history charts and spreadsheets."""

    doors = {"list": "usage.list"}
    queryset = UsageSample.objects.none()
    serializer_class = serializers.UsageSampleSerializer
    filterset_class = filtersets.UsageSampleFilterSet
    renderer_classes = [JSONRenderer, CSVRenderer]
    table = tables.USAGE_SAMPLES
    ordering_fields = ["at", "key", "used"]
    ordering = ["scope", "key", "at"]

    def get_queryset(self):
        return selectors.usage_samples_visible(user=self.request.user)

    def list(self, request, *args, **kwargs):
        rows = self.filter_queryset(self.get_queryset())
        if request.accepted_renderer.format == "csv":  # a spreadsheet wants the whole series, not a page of it
            return Response(self.get_serializer(rows, many=True).data)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class ListingView(ApiView, GenericAPIView):
    """A listing a selector builds whole (no pagination, no ordering by the query string)."""

    pagination_class = None
    filter_backends = []


class PoolQuotaView(ListingView):
    """GPU quota and capacity per pool: ``poolctl pool list --format json``."""

    doors = {"GET": "pool.list"}

    @extend_schema(
        summary="Pool status and GPU quota",
        parameters=filter_parameters(filtersets.PoolFilterSet, pools=f"only these pools ({NAMES_PARAMETER})"),
        responses=serializers.PoolQuotaListSerializer,
    )
    def get(self, request):
        names = names_parameter(request, "pools") or None
        with service_errors():
            rows = selectors.pool_list(names=names, filters=request.query_params, user=request.user)
        return Response({"pools": rows})


class ResourceListView(ListingView):
    """Nodes per (pool, platform) with used/capacity: ``poolctl resource list --format json``; ``?format=csv``
    is the same rows, one column per figure (``gpu.used``, ``mig.1g.10gb.capacity``).

    Its parameters are ``NodeFilterSet``'s, as on the nodes page; ``pools`` and ``platforms`` are the older
    names of ``pool`` and ``platform``.
    """

    doors = {"GET": "resource.list"}
    renderer_classes = [JSONRenderer, CSVRenderer]
    ALIASES = {"pools": "pool", "platforms": "platform"}

    @extend_schema(
        summary="Resources per node, pool and platform",
        parameters=filter_parameters(
            filtersets.NodeFilterSet,
            pools=f"same as pool ({NAMES_PARAMETER})",
            platforms=f"same as platform ({NAMES_PARAMETER})",
        ),
        responses=serializers.ResourceListSerializer,
    )
    def get(self, request):
        filters = request.query_params.copy()
        for alias, name in self.ALIASES.items():
            for value in filters.pop(alias, []):
                filters.appendlist(name, value)
        with service_errors():
            rows = selectors.resource_list(user=request.user, filters=filters)
        if request.accepted_renderer.format == "csv":
            return Response(rows)
        return Response({"resources": rows})


class NodePoolListView(ListingView):
    """Run:ai's node-pools view: one row per pool with its nodes' numbers (the ``/node-pools/`` page's rows)."""

    doors = {"GET": "node_pool.list"}

    @extend_schema(
        summary="Node pools (Run:ai's view)",
        parameters=filter_parameters(filtersets.NodePoolFilterSet),
        responses=serializers.NodePoolListSerializer,
    )
    def get(self, request):
        with service_errors():
            rows = selectors.node_pool_list(user=request.user, filters=request.query_params)
        return Response(serializers.NodePoolListSerializer({"node_pools": rows}).data)


class JobView(ListingView):
    """A job started over the API (a backend sync), visible to those who may read its backend."""

    doors = {"GET": "job.get"}

    @extend_schema(
        summary="Get a job",
        parameters=[OpenApiParameter("job_id", str, OpenApiParameter.PATH)],
        responses=serializers.JobSerializer,
    )
    def get(self, request, job_id):
        job = jobs.job_get(job_id)
        if job is None:
            raise NotFound(f"job '{job_id}' does not exist")
        return Response(job)
