"""gpuctl's pool workflow over REST (SEMANTICS §8.1): a label pool from a gpuctl pool file, its deletion, and one
node label set or removed, each written to the cluster all or nothing by ``services.label_pool_*``/``node_label``."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import selectors, services
from pools.configs import gpuctl_file_parse

from . import serializers
from .base import ApiView
from .errors import errors_body

BACKEND = OpenApiParameter("backend", str, description="the node's backend, when several have a node of that name")
ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')


class GpuctlView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []


class LabelPoolOptions(drf.Serializer):
    """Where and how a pool file is applied (the file itself is read by ``gpuctl_file_parse``)."""

    backend = drf.CharField(required=False, allow_null=True, allow_blank=True, default=None)
    overwrite = drf.BooleanField(required=False, default=False)


class LabelPoolListView(GpuctlView):
    doors = {"POST": "label_pool.create"}
    serializer_class = serializers.LabelPoolRequestSerializer

    @extend_schema(
        summary="Create or update a label pool from a gpuctl pool file",
        description="Labels every listed node `<pool_label_key>=<name>` (and `runwhere.ai/gpu-type`) in the "
        "cluster, all or nothing, and creates the pool. Needs `config:Update` on pools and `backend:Update` on "
        "the backend. A missing node (400) or one in another pool without `overwrite` (409) changes nothing; a "
        "node of a pool hidden from the caller is refused as a missing one.",
        request=serializers.LabelPoolRequestSerializer,
        responses={201: serializers.LabelPoolResultSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS, 409: ERRORS},
    )
    def post(self, request):
        body = self.body()
        options = LabelPoolOptions(data={key: body.pop(key) for key in ("backend", "overwrite") if key in body})
        options.is_valid(raise_exception=True)
        result = services.label_pool_apply(
            document=gpuctl_file_parse(body),
            actor=self.actor(),
            backend=options.validated_data["backend"] or None,
            overwrite=options.validated_data["overwrite"],
        )
        return Response(result, status=status.HTTP_201_CREATED)


class LabelPoolDetailView(GpuctlView):
    doors = {"DELETE": "label_pool.delete"}
    serializer_class = serializers.LabelPoolDeleteResultSerializer

    @extend_schema(
        summary="Delete a label pool and remove its label from its nodes",
        parameters=[OpenApiParameter("force", bool, description="delete even with running or pending workloads")],
        responses={200: serializers.LabelPoolDeleteResultSerializer, 403: ERRORS, 404: ERRORS, 409: ERRORS},
    )
    def delete(self, request, name):
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes", "on")
        try:
            result = services.label_pool_delete(name=name, actor=self.actor(), force=force)
        except services.PoolBusy as exc:
            jobs = serializers.PoolJobSerializer(exc.workloads, many=True).data
            return Response({**errors_body([("", str(exc))]), "workloads": jobs}, status=status.HTTP_409_CONFLICT)
        return Response(result)


class NodeLabelsView(GpuctlView):
    doors = {"GET": "node.get", "PATCH": "node.label"}
    serializer_class = serializers.NodeLabelsSerializer

    @extend_schema(summary="A node's labels", parameters=[BACKEND], responses={200: serializers.NodeLabelsSerializer})
    def get(self, request, name):
        backend = request.query_params.get("backend") or None
        return Response(selectors.node_labels(name, user=request.user, backend=backend))

    @extend_schema(
        summary="Set or remove one label of a node in its cluster",
        description="`value: null` removes the label; changing a value needs `overwrite`. Needs `backend:Update`.",
        parameters=[BACKEND],
        request=serializers.NodeLabelChangeRequestSerializer,
        responses={200: serializers.NodeLabelsSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS},
    )
    def patch(self, request, name):
        change = serializers.NodeLabelChangeRequestSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        data = change.validated_data
        backend = request.query_params.get("backend") or None
        services.node_label(
            node=name,
            key=data["key"],
            value=data["value"],
            overwrite=data["overwrite"],
            backend=backend,
            actor=self.actor(),
        )
        return Response(selectors.node_labels(name, user=request.user, backend=backend))
