"""The generic per-type config endpoints of ``poolctl config``: a type's objects as one document (show, update),
import, history, diff, a revision, its tags, rollback.

The type comes from the URL (any case; an unknown type is a 404); what each caller may see and do of it is decided
object by object by the selectors and services. An update, an import and a rollback answer the revisions they
recorded (``revisions_body``).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from pools import filtersets, selectors, services
from pools.choices import ConfigType
from pools.configs import parse_config_type, parse_revision_number
from pools.engine.errors import ConfigError
from pools.models import ConfigRevision

from . import serializers
from .base import CHANGE_PARAMETERS, ApiView, filter_parameters
from .errors import ConfigProblems, bad_request, service_errors

CONFIG_TYPE = OpenApiParameter(
    "config_type", str, OpenApiParameter.PATH, enum=ConfigType.values, description="config type (any case)"
)
REVISION = OpenApiParameter("revision", int, OpenApiParameter.PATH)


def revisions_body(revisions) -> dict:
    return {"revisions": serializers.RevisionSerializer(revisions, many=True).data}


class ConfigHistoryView(ApiView, GenericAPIView):
    """Revisions, newest first: ``poolctl config history``."""

    doors = {"GET": "config.history"}
    serializer_class = serializers.RevisionSerializer
    queryset = ConfigRevision.objects.none()
    filter_backends = []

    @extend_schema(
        summary="Config history",
        parameters=filter_parameters(filtersets.ConfigRevisionFilterSet),
        responses=serializers.RevisionSerializer(many=True),
    )
    def get(self, request):
        with service_errors():
            revisions = selectors.config_history(user=request.user, filters=request.query_params)
        page = self.paginate_queryset(revisions)
        shown = [selectors.redacted(revision, request.user) for revision in page]
        return self.get_paginated_response(self.get_serializer(shown, many=True).data)


class ConfigTypeView(ApiView, GenericAPIView):
    """Base of the per-type config endpoints: the URL's type (any case; an unknown type is a 404); what each caller
    may see and do of it is decided object by object by the selectors and services, as on every other door."""

    pagination_class = None
    filter_backends = []

    def config_type(self) -> ConfigType:
        try:
            return parse_config_type(self.kwargs["config_type"])
        except ConfigError as exc:
            raise ConfigProblems(exc.problems, status_code=status.HTTP_404_NOT_FOUND) from None


class ConfigDocumentView(ConfigTypeView):
    """A type's objects as one name-keyed document: read it, or post an OSMO file to create or replace objects."""

    doors = {"GET": "config.show", "POST": "config.update"}

    @extend_schema(
        summary="Show a config type's objects",
        operation_id="configs_show",
        parameters=[
            CONFIG_TYPE,
            OpenApiParameter("name", str, description="only this object"),
            OpenApiParameter("revision", int, description="as they were at this revision"),
        ],
        responses=OpenApiResponse(OpenApiTypes.OBJECT, description="`{name: body}` as `poolctl config show` prints"),
    )
    def get(self, request, config_type):
        config_type = self.config_type()
        revision = request.query_params.get("revision")
        with service_errors():
            document = selectors.config_show(
                config_type=config_type,
                user=request.user,
                name=request.query_params.get("name") or None,
                revision=parse_revision_number(revision, "revision") if revision is not None else None,
            )
        return Response(document)

    @extend_schema(
        summary="Create or replace objects from an OSMO document",
        operation_id="configs_update",
        description='The body is the file as OSMO writes it: a name-keyed mapping (`{"l40s": {...}}`), a pool '
        "or role body with `name`, or with `?name=` the bare body (`poolctl config update TYPE [NAME] --file`).",
        parameters=[
            CONFIG_TYPE,
            OpenApiParameter("name", str, description="the object, when the body is its bare body"),
            OpenApiParameter(
                "dry_run",
                bool,
                description="check everything, write nothing; the answer's `effect` says what the change would move: "
                "per pool, the nodes and GPUs entering or leaving it, the workloads on the nodes that leave, and quota "
                "warnings",
            ),
            *CHANGE_PARAMETERS,
        ],
        request=OpenApiTypes.OBJECT,
        responses=serializers.RevisionListSerializer,
    )
    def post(self, request, config_type):
        config_type = self.config_type()
        dry_run = request.query_params.get("dry_run", "").lower() in ("1", "true", "yes")
        with service_errors():
            revisions = services.config_update(
                config_type=config_type,
                name=request.query_params.get("name") or None,
                data=request.data,
                actor=self.actor(),
                dry_run=dry_run,
                **self.change_options(),
            )
        if isinstance(revisions, services.Preview):  # nothing saved: what the change would move, as the caller sees it
            return Response({**revisions_body(revisions), "effect": revisions.effect})
        return Response(revisions_body(revisions))


class ConfigImportView(ApiView, GenericAPIView):
    """A bundle with OSMO's Helm-values keys, imported all or nothing: ``poolctl config import``."""

    doors = {"POST": "config.import"}
    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Import a bundle",
        description="Keys `backends`, `podTemplates`, `resourceValidations`, `pools`, `roles`; one error and "
        "nothing is written. Needs `config:Update` on every type the bundle holds.",
        parameters=CHANGE_PARAMETERS,
        request=OpenApiTypes.OBJECT,
        responses=serializers.RevisionListSerializer,
    )
    def post(self, request):
        with service_errors():
            revisions = services.config_import(data=request.data, actor=self.actor(), **self.change_options())
        return Response(revisions_body(revisions))


class ConfigDiffView(ConfigTypeView):
    """``poolctl config diff TYPE:FROM [TYPE:TO]``: a unified diff, object by object."""

    doors = {"GET": "config.diff"}

    @extend_schema(
        summary="Diff two revisions (or one against the current state)",
        parameters=[
            CONFIG_TYPE,
            OpenApiParameter("from", int, required=True, description="the older revision"),
            OpenApiParameter("to", int, description="the newer revision (default: the current state)"),
        ],
        responses=serializers.ConfigDiffSerializer,
    )
    def get(self, request, config_type):
        config_type = self.config_type()
        numbers = {}
        for key in ("from", "to"):
            value = request.query_params.get(key)
            with service_errors():
                numbers[key] = parse_revision_number(value, key) if value is not None else None
        if numbers["from"] is None:
            raise bad_request("the revision to diff from is required", field="from")
        with service_errors():
            diff = selectors.config_diff(
                config_type=config_type, user=request.user, revision=numbers["from"], other=numbers["to"]
            )
        return Response(
            {"config_type": config_type, "from_revision": numbers["from"], "to_revision": numbers["to"], "diff": diff}
        )


class RevisionView(ConfigTypeView):
    """One revision with the whole type's state after it."""

    doors = {"GET": "config.revision"}

    @extend_schema(
        summary="Get a revision",
        operation_id="configs_revision_retrieve",
        parameters=[CONFIG_TYPE, REVISION],
        responses=serializers.RevisionDetailSerializer,
    )
    def get(self, request, config_type, revision):
        with service_errors():
            found = selectors.config_revision_get(config_type=self.config_type(), revision=revision, user=request.user)
        return Response(serializers.RevisionDetailSerializer(found).data)


class RevisionTagsView(ConfigTypeView):
    """``poolctl config tag TYPE:REV --set T --delete T``."""

    doors = {"POST": "config.tag"}

    @extend_schema(
        summary="Tag a revision",
        parameters=[CONFIG_TYPE, REVISION],
        request=serializers.TagRequestSerializer,
        responses=serializers.RevisionSerializer,
    )
    def post(self, request, config_type, revision):
        options = serializers.TagRequestSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        with service_errors():
            tagged = services.config_tag(
                config_type=self.config_type(),
                revision=revision,
                actor=self.actor(),
                add=options.validated_data["add"],
                remove=options.validated_data["remove"],
            )
        return Response(serializers.RevisionSerializer(selectors.redacted(tagged, request.user)).data)


class RevisionRollbackView(ConfigTypeView):
    """``poolctl config rollback TYPE:REV``: the state of that revision, restored as a new revision."""

    doors = {"POST": "config.rollback"}

    @extend_schema(
        summary="Roll back to a revision",
        parameters=[CONFIG_TYPE, REVISION],
        request=serializers.RollbackRequestSerializer,
        responses=serializers.RevisionListSerializer,
        description="409 when that state no longer fits the rest of the configuration, or is the current one.",
    )
    def post(self, request, config_type, revision):
        options = serializers.RollbackRequestSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        with service_errors(conflict=True):
            revisions = services.config_rollback(
                config_type=self.config_type(),
                revision=revision,
                actor=self.actor(),
                description=options.validated_data["description"],
            )
        return Response(revisions_body(revisions))
