"""API views: thin. Reads come from the selectors (restricted to what the user may read), writes go through
the services with an ``Actor`` of origin ``api``; errors leave as ``{"errors": [...]}`` (``errors.py``).

Config objects (backends, pools, platforms, pod templates, resource validations, roles) share one
viewset base: list, get (with an ETag), create, replace, merge-patch and delete, each write an
all-or-nothing service call that records a revision.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet
from django.http import HttpResponse
from django.template import engines
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from drf_spectacular.views import SpectacularRedocView
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from accounts.models import Role
from pools import filtersets, jobs, selectors, services
from pools.choices import ChangeOrigin, ConfigType
from pools.configs import body_etag, merge_patch, parse_config_type, parse_revision_number, platform_body
from pools.engine.errors import ConfigError, Conflict, NotFound, Problem, Stale
from pools.models import (
    Backend,
    ConfigRevision,
    Department,
    Node,
    NodeMembership,
    Platform,
    Pod,
    PodTemplate,
    Pool,
    Project,
    UsageSample,
)
from pools.models import ResourceValidation as ResourceValidationModel

from . import serializers
from .conditional import if_match, with_etag
from .errors import ConfigProblems, bad_request, object_path, service_errors
from .metadata import EndpointMetadata
from .parsers import BoundedJSONParser
from .renderers import CSVRenderer

CHANGE_PARAMETERS = [
    OpenApiParameter("description", str, description="why the change is made (kept on the revision)"),
    OpenApiParameter("tag", str, many=True, description="tags for the revision (repeat the parameter)"),
]
IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    description="the ETag read before; a change made since answers 412 and nothing is written",
)
CONFIG_TYPE = OpenApiParameter(
    "config_type", str, OpenApiParameter.PATH, enum=ConfigType.values, description="config type (any case)"
)
REVISION = OpenApiParameter("revision", int, OpenApiParameter.PATH)
POOL_NAME = OpenApiParameter("pool_name", str, OpenApiParameter.PATH, description="the pool's name")


class Pagination(LimitOffsetPagination):
    """``?limit=&offset=``; a page holds 100 rows unless asked otherwise, 1000 at most."""

    default_limit = 100
    max_limit = 1000


class ApiView:
    """What every endpoint of this API shares: JSON in and out, filters, ordering, pagination."""

    parser_classes = [BoundedJSONParser]
    metadata_class = EndpointMetadata
    renderer_classes = [JSONRenderer]
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    pagination_class = Pagination

    def handle_exception(self, exc):
        # Errors are JSON whatever format a listing was asked in (?format=csv): one error shape for all.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)

    def actor(self) -> services.Actor:
        return services.Actor.of(self.request.user, ChangeOrigin.API)

    def change_options(self) -> dict:
        """The revision's description and tags, from the query string."""
        return {
            "description": self.request.query_params.get("description", ""),
            "tags": [tag for tag in self.request.query_params.getlist("tag") if tag.strip()],
        }

    def body(self) -> dict:
        data = self.request.data
        if not isinstance(data, dict):
            raise bad_request("the request body must be a JSON object")
        return dict(data)


# --- config objects ------------------------------------------------------------------------------------


class ConfigObjectViewSet(ApiView, viewsets.GenericViewSet):
    """CRUD for one config type by name; subclasses name the type, the serializer and the selector.

    Every write is one ``services.config_apply`` call, which decides (404 for what the caller may not see,
    403 for what they may not do) and serialises: a create that finds the name taken answers 409, a change
    whose ``If-Match`` names an older version 412 — also when two such requests race.
    """

    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    ordering_fields = ["name"]
    ordering = ["name"]
    config_type: ConfigType
    serializer_class: type[serializers.ConfigObjectSerializer]

    # The selector of the objects a user may read, e.g. ``pools_visible``.
    visible: Callable[..., QuerySet]

    def get_queryset(self):
        return type(self).visible(user=self.request.user)

    def object_response(self, instance, code=status.HTTP_200_OK) -> Response:
        response = Response(self.get_serializer(instance).data, status=code)
        if code == status.HTTP_201_CREATED:
            response["Location"] = reverse(
                f"api:{self.basename}-detail", kwargs={"name": instance.name}, request=self.request
            )
        return with_etag(response, self.serializer_class.body(instance))

    def refetch(self, name: str):
        return type(self).visible(user=self.request.user).get(name=name)

    def apply(self, name: str, body_of: Callable, *, expected: services.Expected, conflict: bool = False) -> None:
        """Write one object through the services.

        ``body_of`` makes the new body (None deletes) from the current one (None when absent), under the
        config write lock; the gate answers before it runs, so a body is never judged for someone who may
        not make the change at all.
        """
        actor = self.actor()

        def changes(state):
            current = state[self.config_type].get(name)
            if current is None and expected.exists:
                return {}  # gone meanwhile: the expectation answers 404
            return {self.config_type: {name: body_of(current)}}

        with service_errors(where=object_path(self.config_type, name), conflict=conflict):
            services.authorize_names(actor, {self.config_type: {name: None}})
            services.config_apply(
                changes=changes, actor=actor, expect={(self.config_type, name): expected}, **self.change_options()
            )

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        return self.object_response(self.get_object())

    def create(self, request, *args, **kwargs):
        data = self.body()
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request("a name is required", field="name")
        self.apply(name, lambda current: self.serializer_class.body_from_request(data), expected=services.ABSENT)
        return self.object_response(self.refetch(name), status.HTTP_201_CREATED)

    def update(self, request, *args, partial: bool = False, **kwargs):
        instance = self.get_object()
        data = self.body()
        if data.get("name", instance.name) != instance.name:
            raise bad_request(f"'{data['name']}' does not match '{instance.name}' (names cannot change)", "name")
        serializer = self.serializer_class

        def body(current):
            if partial:
                return serializer.body_from_request(merge_patch(serializer.document(instance.name, current), data))
            return serializer.body_from_request(data)

        self.apply(instance.name, body, expected=if_match(request), conflict=self.refuses(instance))
        return self.object_response(self.refetch(instance.name))

    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request, *args, **kwargs):
        instance = self.get_object()
        self.apply(instance.name, lambda current: None, expected=if_match(request), conflict=True)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def refuses(self, instance) -> bool:
        """Whether the current object refuses any change (an immutable role): its errors are then 409s."""
        return False


def config_object_schema(serializer_class, label: str):
    """The OpenAPI description of a config object viewset's CRUD operations."""
    create_request = type(
        f"{serializer_class.__name__.removesuffix('Serializer')}CreateSerializer", (serializer_class,), {}
    )
    create_request._declared_fields = {
        **serializer_class._declared_fields,
        "name": serializer_class._declared_fields["name"].__class__(max_length=128, help_text=serializers.NAME_HELP),
    }
    return extend_schema_view(
        list=extend_schema(summary=f"List {label}s", description=f"The {label}s you may read."),
        retrieve=extend_schema(summary=f"Get a {label}", description="The response carries an ETag."),
        create=extend_schema(
            summary=f"Create a {label}",
            request=create_request,
            parameters=CHANGE_PARAMETERS,
            description="Validated as a whole; a revision is recorded.",
        ),
        update=extend_schema(summary=f"Replace a {label}", parameters=[IF_MATCH, *CHANGE_PARAMETERS]),
        partial_update=extend_schema(
            summary=f"Change fields of a {label}",
            parameters=[IF_MATCH, *CHANGE_PARAMETERS],
            description="JSON Merge Patch (RFC 7386): objects merge key by key, null removes a key.",
        ),
        destroy=extend_schema(summary=f"Delete a {label}", parameters=[IF_MATCH, *CHANGE_PARAMETERS]),
    )


@config_object_schema(serializers.BackendSerializer, "backend")
class BackendViewSet(ConfigObjectViewSet):
    """Cluster backends; ``POST /api/backends/{name}/sync/`` reads a backend's inventory now."""

    config_type = ConfigType.BACKEND
    queryset = Backend.objects.none()
    serializer_class = serializers.BackendSerializer
    filterset_class = filtersets.BackendFilterSet
    ordering_fields = ["name", "kind", "last_sync_at"]
    visible = staticmethod(selectors.backends_visible)

    @extend_schema(
        summary="Sync a backend now",
        request=None,
        responses={202: serializers.JobSerializer},
        description="Starts `sync_backend`; poll the job at its Location until `done`.",
    )
    @action(detail=True, methods=["post"])
    def sync(self, request, name=None):
        job = jobs.backend_sync_request(name=name, actor=self.actor())
        location = reverse("api:job-detail", kwargs={"job_id": job["id"]}, request=request)
        return Response(job, status=status.HTTP_202_ACCEPTED, headers={"Location": location})


@config_object_schema(serializers.PoolSerializer, "pool")
class PoolViewSet(ConfigObjectViewSet):
    """Pools in OSMO's shape; ``render`` and ``check`` answer like ``poolctl pool render/check``."""

    config_type = ConfigType.POOL
    queryset = Pool.objects.none()
    serializer_class = serializers.PoolSerializer
    filterset_class = filtersets.PoolFilterSet
    visible = staticmethod(selectors.pools_visible)

    def pool_request(self, serializer=serializers.RenderRequestSerializer) -> dict:
        request = serializer(data=self.request.data)
        request.is_valid(raise_exception=True)
        return request.validated_data

    @extend_schema(
        summary="Render a pool's pod template",
        request=serializers.RenderRequestSerializer,
        responses=serializers.RenderResultSerializer,
    )
    @action(detail=True, methods=["post"])
    def render(self, request, name=None):
        options = self.pool_request()
        with service_errors():
            result = selectors.pool_render(
                pool_name=name, platform=options.get("platform"), user_values=options["variables"], user=request.user
            )
        return Response(result)

    @extend_schema(
        summary="Check a request against a pool's rules, free resources and a project's quota",
        request=serializers.CheckRequestSerializer,
        responses=serializers.CheckResultSerializer,
        description=(
            "200 whatever the verdict; `passed` tells whether the request fits the rules, `starts` whether a node "
            "could start it now, and with `project`, `quota` whether it fits that project's quota on the pool "
            "(a project you may not see is a 404)."
        ),
    )
    @action(detail=True, methods=["post"])
    def check(self, request, name=None):
        options = self.pool_request(serializers.CheckRequestSerializer)
        with service_errors():
            result = selectors.pool_check(
                pool_name=name,
                platform=options.get("platform"),
                user_values=options["variables"],
                user=request.user,
                project=options.get("project") or None,
            )
        return Response(result)


@config_object_schema(serializers.PodTemplateSerializer, "pod template")
class PodTemplateViewSet(ConfigObjectViewSet):
    """Pod templates by name; readable and writable per type (``config/POD_TEMPLATE``)."""

    config_type = ConfigType.POD_TEMPLATE
    queryset = PodTemplate.objects.none()
    serializer_class = serializers.PodTemplateSerializer
    filterset_class = filtersets.PodTemplateFilterSet
    visible = staticmethod(selectors.pod_templates_visible)


@config_object_schema(serializers.ResourceValidationSerializer, "resource validation")
class ResourceValidationViewSet(ConfigObjectViewSet):
    """Resource-validation sets by name; readable and writable per type (``config/RESOURCE_VALIDATION``)."""

    config_type = ConfigType.RESOURCE_VALIDATION
    queryset = ResourceValidationModel.objects.none()
    serializer_class = serializers.ResourceValidationSerializer
    filterset_class = filtersets.ResourceValidationFilterSet
    visible = staticmethod(selectors.resource_validations_visible)


@config_object_schema(serializers.DepartmentSerializer, "department")
class DepartmentViewSet(ConfigObjectViewSet):
    """Run:ai departments with their quotas per node pool (``resources``); SEMANTICS §9."""

    config_type = ConfigType.DEPARTMENT
    queryset = Department.objects.none()
    serializer_class = serializers.DepartmentSerializer
    filterset_class = filtersets.DepartmentFilterSet
    visible = staticmethod(selectors.departments_queryset)


@config_object_schema(serializers.ProjectSerializer, "project")
class ProjectViewSet(ConfigObjectViewSet):
    """Run:ai projects: department, namespaces and quotas per node pool; changed by managers of the department."""

    config_type = ConfigType.PROJECT
    queryset = Project.objects.none()
    serializer_class = serializers.ProjectSerializer
    filterset_class = filtersets.ProjectFilterSet
    visible = staticmethod(selectors.projects_queryset)


@config_object_schema(serializers.RoleSerializer, "role")
class RoleViewSet(ConfigObjectViewSet):
    """Roles; ``POST /api/roles/generate/`` makes an ``osmo-<prefix>`` pool role."""

    config_type = ConfigType.ROLE
    queryset = Role.objects.none()
    serializer_class = serializers.RoleSerializer
    filterset_class = filtersets.RoleFilterSet
    visible = staticmethod(selectors.roles_visible)

    def refuses(self, instance):
        return instance.immutable

    @extend_schema(
        summary="Generate a pool role",
        request=serializers.RoleGenerateSerializer,
        responses={200: serializers.RoleSerializer, 201: serializers.RoleSerializer},
        description="`osmo-<prefix>` grants `workflow:*` and `pool:Read` on `pool/<prefix>*` "
        "(like `poolctl role set osmo-<prefix> pool`); 201 when created, 200 when refreshed.",
    )
    @action(detail=False, methods=["post"])
    def generate(self, request):
        options = serializers.RoleGenerateSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        name = options.validated_data["name"]
        existed = selectors.roles_visible(user=request.user).filter(name=name).exists()
        with service_errors(where=object_path(ConfigType.ROLE, name), conflict=existed):
            services.pool_role_generate(
                name=name, actor=self.actor(), description=options.validated_data["description"]
            )
        return self.object_response(self.refetch(name), status.HTTP_200_OK if existed else status.HTTP_201_CREATED)


# --- platforms, nested in their pool ----------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="List a pool's platforms", parameters=[POOL_NAME]),
    retrieve=extend_schema(summary="Get a platform", parameters=[POOL_NAME]),
    create=extend_schema(summary="Add a platform to a pool", parameters=[POOL_NAME, *CHANGE_PARAMETERS]),
    update=extend_schema(summary="Replace a platform", parameters=[POOL_NAME, IF_MATCH, *CHANGE_PARAMETERS]),
    partial_update=extend_schema(
        summary="Change fields of a platform", parameters=[POOL_NAME, IF_MATCH, *CHANGE_PARAMETERS]
    ),
    destroy=extend_schema(summary="Remove a platform", parameters=[POOL_NAME, IF_MATCH, *CHANGE_PARAMETERS]),
)
class PoolPlatformViewSet(ApiView, viewsets.GenericViewSet):
    """A pool's platforms one by one; each write replaces the pool's body through the services (a POOL revision)."""

    queryset = Platform.objects.none()
    serializer_class = serializers.PlatformSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    ordering_fields = ["name"]
    ordering = ["name"]
    filterset_class = filtersets.PlatformFilterSet

    def pool(self) -> Pool:
        with service_errors():
            return selectors.pool_get(self.kwargs["pool_name"], user=self.request.user)

    def get_queryset(self):
        return selectors.platforms_visible(user=self.request.user).filter(pool__name=self.kwargs["pool_name"])

    def object_response(self, instance, code=status.HTTP_200_OK) -> Response:
        response = Response(self.get_serializer(instance).data, status=code)
        if code == status.HTTP_201_CREATED:
            response["Location"] = reverse(
                "api:pool-platform-detail",
                kwargs={"pool_name": instance.pool.name, "name": instance.name},
                request=self.request,
            )
        return with_etag(response, platform_body(instance))

    def write_platform(self, name: str, edit: Callable, *, expected: services.Expected, conflict=False) -> None:
        """Change platform ``name`` of the pool, under the config lock, as a change of the whole pool.

        ``edit`` takes the platform's current body (None when it has none) and returns the new one (None
        removes it); ``expected`` is checked against the platform's own version. Errors about the platform
        get paths inside its body.
        """
        pool_name = self.kwargs["pool_name"]

        def changes(state):
            pool = state[ConfigType.POOL].get(pool_name)
            if pool is None:
                return {}
            platforms = dict(pool["platforms"])
            current = platforms.get(name)
            if not expected.exists and current is not None:
                raise Conflict([Problem("name", f"pool '{pool_name}' already has platform '{name}'")])
            if expected.exists and current is None:
                raise NotFound(f"pool '{pool_name}' has no platform '{name}'")
            if expected.etags and body_etag(current) not in expected.etags:
                raise Stale(f"platform '{name}' changed since it was read; read it again")
            new = edit(current)
            if new is None:
                platforms.pop(name)
            else:
                platforms[name] = new
            return {ConfigType.POOL: {pool_name: {**pool, "platforms": platforms}}}

        where = f"{object_path(ConfigType.POOL, pool_name)}.platforms.{name}"
        with service_errors(where=where, conflict=conflict):
            services.authorize_names(self.actor(), {ConfigType.POOL: {pool_name: None}})
            services.config_apply(
                changes=changes,
                actor=self.actor(),
                expect={(ConfigType.POOL, pool_name): services.PRESENT},
                **self.change_options(),
            )

    def refetch(self, name: str) -> Platform:
        return selectors.platforms_visible(user=self.request.user).get(pool__name=self.kwargs["pool_name"], name=name)

    def list(self, request, *args, **kwargs):
        self.pool()
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        self.pool()
        return self.object_response(self.get_object())

    def create(self, request, *args, **kwargs):
        data = self.body()
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise bad_request("a name is required", field="name")
        self.pool()
        body = serializers.PlatformSerializer.body_from_request(data)
        self.write_platform(name, lambda current: body, expected=services.ABSENT)
        return self.object_response(self.refetch(name), status.HTTP_201_CREATED)

    def update(self, request, *args, partial: bool = False, **kwargs):
        self.pool()
        instance = self.get_object()
        data = self.body()
        if data.get("name", instance.name) != instance.name:
            raise bad_request("platform names cannot change", field="name")
        serializer = serializers.PlatformSerializer
        if partial:

            def edit(current):
                document = {"name": instance.name, "pool": instance.pool.name, **current}
                return serializer.body_from_request(merge_patch(document, data))
        else:
            body = serializer.body_from_request(data)

            def edit(current):
                return body

        self.write_platform(instance.name, edit, expected=if_match(request))
        return self.object_response(self.refetch(instance.name))

    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request, *args, **kwargs):
        self.pool()
        instance = self.get_object()
        self.write_platform(instance.name, lambda current: None, expected=if_match(request), conflict=True)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(list=extend_schema(summary="List platforms of every pool you may read"))
class PlatformViewSet(ApiView, viewsets.GenericViewSet):
    """Every visible platform, filterable by ``pool`` and ``name``; each is addressed under its pool."""

    queryset = Platform.objects.none()
    serializer_class = serializers.PlatformSerializer
    filterset_class = filtersets.PlatformFilterSet
    ordering_fields = ["name", "pool__name"]
    ordering = ["pool__name", "name"]

    def get_queryset(self):
        return selectors.platforms_visible(user=self.request.user)

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


# --- inventory (read-only) ----------------------------------------------------------------------------


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

    queryset = UsageSample.objects.none()
    serializer_class = serializers.UsageSampleSerializer
    filterset_class = filtersets.UsageSampleFilterSet
    renderer_classes = [JSONRenderer, CSVRenderer]
    ordering_fields = ["at", "key", "used"]
    ordering = ["scope", "key", "at"]

    def get_queryset(self):
        return selectors.usage_samples_visible(user=self.request.user)

    def paginate_queryset(self, queryset):
        # A spreadsheet wants the whole series, not a page of it.
        if self.request.accepted_renderer.format == "csv":
            return None
        return super().paginate_queryset(queryset)

    def list(self, request, *args, **kwargs):
        rows = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(rows)
        if page is None:
            return Response(self.get_serializer(rows, many=True).data)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


# --- listings with poolctl's numbers ----------------------------------------------------------------------


def _names(request, key: str) -> list[str]:
    """A list parameter given repeated (``?pools=a&pools=b``) or comma-separated (``?pools=a,b``)."""
    return [name.strip() for value in request.query_params.getlist(key) for name in value.split(",") if name.strip()]


NAMES_PARAMETER = "names, repeated or comma-separated"


def filter_parameters(filterset_class, **extra: str) -> list[OpenApiParameter]:
    """The query parameters of a FilterSet for the schema of a view that applies it in its selector."""
    parameters = [
        OpenApiParameter(name, str, description=str(field.label or name))
        for name, field in filterset_class.base_filters.items()
    ]
    return parameters + [OpenApiParameter(name, str, description=text) for name, text in extra.items()]


class PoolQuotaView(ApiView, GenericAPIView):
    """GPU quota and capacity per pool: ``poolctl pool list --format json``."""

    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Pool status and GPU quota",
        parameters=filter_parameters(filtersets.PoolFilterSet, pools=f"only these pools ({NAMES_PARAMETER})"),
        responses=serializers.PoolQuotaListSerializer,
    )
    def get(self, request):
        names = _names(request, "pools") or None
        with service_errors():
            rows = selectors.pool_list(names=names, filters=request.query_params, user=request.user)
        return Response({"pools": rows})


class ResourceListView(ApiView, GenericAPIView):
    """Nodes per (pool, platform) with used/capacity: ``poolctl resource list --format json``; CSV too.

    Its parameters are ``NodeFilterSet``'s, as on the nodes page; ``pools`` and ``platforms`` are the older
    names of ``pool`` and ``platform``.
    """

    pagination_class = None
    filter_backends = []
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


class NodePoolListView(ApiView, GenericAPIView):
    """Run:ai's node-pools view: one row per pool with its nodes' numbers (the ``/node-pools/`` page's rows)."""

    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Node pools (Run:ai's view)",
        parameters=filter_parameters(filtersets.NodePoolFilterSet),
        responses=serializers.NodePoolListSerializer,
    )
    def get(self, request):
        with service_errors():
            rows = selectors.node_pool_list(user=request.user, filters=request.query_params)
        return Response(serializers.NodePoolListSerializer({"node_pools": rows}).data)


# --- config documents, history, diff, tags, rollback ------------------------------------------------------


def _config_type(value: str) -> ConfigType:
    try:
        return parse_config_type(value)
    except ConfigError as exc:
        raise ConfigProblems(exc.problems, status_code=status.HTTP_404_NOT_FOUND) from None


def _revisions_body(revisions) -> dict:
    return {"revisions": serializers.RevisionSerializer(revisions, many=True).data}


class ConfigHistoryView(ApiView, GenericAPIView):
    """Revisions, newest first: ``poolctl config history``."""

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
    """Base of the per-type config endpoints: resolves the type; what each caller may see and do of it is
    decided object by object by the selectors and services, as on every other door."""

    pagination_class = None
    filter_backends = []

    def config_type(self) -> ConfigType:
        return _config_type(self.kwargs["config_type"])

    def revision_number(self, revision: int) -> int:
        """The URL's revision, held to what a revision number can be (an int column) like every other."""
        with service_errors():
            return parse_revision_number(str(revision), "revision")


class ConfigDocumentView(ConfigTypeView):
    """A type's objects as one name-keyed document: read it, or post an OSMO file to create or replace objects."""

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
            OpenApiParameter("dry_run", bool, description="check everything, write nothing"),
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
        return Response(_revisions_body(revisions))


class ConfigImportView(ApiView, GenericAPIView):
    """A bundle with OSMO's Helm-values keys, imported all or nothing: ``poolctl config import``."""

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
        return Response(_revisions_body(revisions))


class ConfigDiffView(ConfigTypeView):
    """``poolctl config diff TYPE:FROM [TYPE:TO]``: a unified diff, object by object."""

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

    @extend_schema(
        summary="Get a revision",
        operation_id="configs_revision_retrieve",
        parameters=[CONFIG_TYPE, REVISION],
        responses=serializers.RevisionDetailSerializer,
    )
    def get(self, request, config_type, revision):
        config_type = self.config_type()
        revision = self.revision_number(revision)
        with service_errors():
            found = selectors.config_revision_get(config_type=config_type, revision=revision, user=request.user)
        return Response(serializers.RevisionDetailSerializer(found).data)


class RevisionTagsView(ConfigTypeView):
    """``poolctl config tag TYPE:REV --set T --delete T``."""

    @extend_schema(
        summary="Tag a revision",
        parameters=[CONFIG_TYPE, REVISION],
        request=serializers.TagRequestSerializer,
        responses=serializers.RevisionSerializer,
    )
    def post(self, request, config_type, revision):
        config_type = self.config_type()
        revision = self.revision_number(revision)
        options = serializers.TagRequestSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        with service_errors():
            tagged = services.config_tag(
                config_type=config_type,
                revision=revision,
                actor=self.actor(),
                add=options.validated_data["add"],
                remove=options.validated_data["remove"],
            )
        return Response(serializers.RevisionSerializer(selectors.redacted(tagged, request.user)).data)


class RevisionRollbackView(ConfigTypeView):
    """``poolctl config rollback TYPE:REV``: the state of that revision, restored as a new revision."""

    @extend_schema(
        summary="Roll back to a revision",
        parameters=[CONFIG_TYPE, REVISION],
        request=serializers.RollbackRequestSerializer,
        responses=serializers.RevisionListSerializer,
        description="409 when that state no longer fits the rest of the configuration, or is the current one.",
    )
    def post(self, request, config_type, revision):
        config_type = self.config_type()
        revision = self.revision_number(revision)
        options = serializers.RollbackRequestSerializer(data=request.data)
        options.is_valid(raise_exception=True)
        with service_errors():
            selectors.config_revision_get(config_type=config_type, revision=revision, user=request.user)
        with service_errors(conflict=True):
            revisions = services.config_rollback(
                config_type=config_type,
                revision=revision,
                actor=self.actor(),
                description=options.validated_data["description"],
            )
        return Response(_revisions_body(revisions))


# --- jobs ---------------------------------------------------------------------------------------------


class JobView(ApiView, GenericAPIView):
    """A job started over the API (a backend sync), visible to those who may read its backend."""

    pagination_class = None
    filter_backends = []

    @extend_schema(
        summary="Get a job",
        parameters=[OpenApiParameter("job_id", str, OpenApiParameter.PATH)],
        responses=serializers.JobSerializer,
    )
    def get(self, request, job_id):
        job = jobs.job_get(job_id)
        if job is None or not selectors.backends_visible(user=request.user).filter(name=job["backend"]).exists():
            raise NotFound(f"job '{job_id}' does not exist")
        return Response(job)


# --- documentation pages --------------------------------------------------------------------------------

# The stock Redoc page loads web fonts from Google; this one keeps everything on the server.
REDOC_PAGE = """{% extends "drf_spectacular/redoc.html" %}{% block head %}
<title>{{ title }}</title><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0; padding: 0; }</style>{% endblock head %}"""


class RedocView(SpectacularRedocView):
    """Redoc for the schema, served from the sidecar package with no request leaving the server."""

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        page = engines["django"].from_string(REDOC_PAGE)
        return HttpResponse(page.render(response.data, request))


class UnknownEndpointView(ApiView, APIView):
    """Any other URL under ``/api/``: a 404 in the error shape rather than Django's HTML page."""

    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def dispatch(self, request, *args, **kwargs):
        return super().dispatch(request, *args, **kwargs)

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise NotFound(f"no API endpoint at {request.path}")
