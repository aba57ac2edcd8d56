"""gpuctl's pool workflow over REST (SEMANTICS §8.1): thin views over ``services.label_pool_*`` and ``node_label``.

- ``POST /api/label_pools/``: a gpuctl ``kind: pool`` document as JSON (plus ``backend``, ``overwrite``);
- ``DELETE /api/label_pools/{name}/?force=true``: 409 with the running and pending workloads unless forced;
- ``GET`` and ``PATCH /api/nodes/{name}/labels/``: a node's labels, and one label set or removed.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import selectors, services
from pools.configs import gpuctl_file_parse

from . import serializers
from .errors import bad_request, errors_body
from .views import ApiView

BACKEND = OpenApiParameter("backend", str, description="the node's backend, when several have a node of that name")
ERRORS = OpenApiResponse(description='{"errors": [{"field", "message"}]}')


class GpuctlView(ApiView, GenericAPIView):
    pagination_class = None
    filter_backends = []


class LabelPoolListView(GpuctlView):
    serializer_class = serializers.LabelPoolRequestSerializer

    @extend_schema(
        summary="Create or update a label pool from a gpuctl pool file",
        description="Labels every listed node `<pool_label_key>=<name>` (and `runwhere.ai/gpu-type`) in the "
        "cluster, all or nothing, and creates the pool. Needs `config:Update` on pools and `backend:Update` on "
        "the backend. A missing node (400) or one in another pool without `overwrite` (409) changes nothing.",
        request=serializers.LabelPoolRequestSerializer,
        responses={201: serializers.LabelPoolResultSerializer, 400: ERRORS, 403: ERRORS, 404: ERRORS, 409: ERRORS},
    )
    def post(self, request):
        body = self.body()
        backend = body.pop("backend", None)
        overwrite = body.pop("overwrite", False)
        if backend is not None and not isinstance(backend, str):
            raise bad_request("must be a string", field="backend")
        if not isinstance(overwrite, bool):
            raise bad_request("must be true or false", field="overwrite")
        result = services.label_pool_apply(
            document=gpuctl_file_parse(body), actor=self.actor(), backend=backend or None, overwrite=overwrite
        )
        return Response(result, status=status.HTTP_201_CREATED)


class LabelPoolDetailView(GpuctlView):
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
