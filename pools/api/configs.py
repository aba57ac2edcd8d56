"""Config objects over REST: backends, pools (with their platforms), pod templates, resource validations, roles,
departments and projects by name, in OSMO's shapes; and platforms one by one under their pool, or all together.

Every write is one service call that decides (404 for what the caller may not see, 403 for what they may not do)
and serialises: a create that finds the name taken answers 409, a change whose ``If-Match`` names an older
version 412, also when two such requests race.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.reverse import reverse

from accounts.models import Role
from pools import filtersets, jobs, selectors, services
from pools.choices import ConfigType
from pools.configs import merge_patch, platform_body
from pools.models import Backend, Department, Platform, PodTemplate, Pool, Project
from pools.models import ResourceValidation as ResourceValidationModel

from . import serializers
from .base import CHANGE_PARAMETERS, ApiView, names_parameter
from .conditional import if_match, with_etag
from .errors import bad_request, object_path, service_errors

IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    description="the ETag read before; a change made since answers 412 and nothing is written",
)
POOL_NAME = OpenApiParameter("pool_name", str, OpenApiParameter.PATH, description="the pool's name")


def crud_doors(config_type: ConfigType) -> dict[str, str]:
    """A config type's viewset actions and their doors."""
    prefix = config_type.lower()
    return {
        "list": f"{prefix}.list",
        "retrieve": f"{prefix}.get",
        "create": f"{prefix}.create",
        "update": f"{prefix}.change",
        "partial_update": f"{prefix}.change",
        "destroy": f"{prefix}.change",
    }


class ConfigObjectViewSet(ApiView, viewsets.GenericViewSet):
    """CRUD for one config type by name; subclasses name the type, the serializer and the selector."""

    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    ordering_fields = ["name"]
    ordering = ["name"]
    config_type: ConfigType
    serializer_class: type[serializers.ConfigObjectSerializer]
    # The doors of the viewset's own actions beyond create, read, change and delete (``crud_doors``).
    action_doors: dict[str, str] = {}

    # The selector of the objects a user may read, e.g. ``pools_visible``.
    selector: Callable[..., QuerySet]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.doors = {**crud_doors(cls.config_type), **cls.action_doors}

    def get_queryset(self):
        return type(self).selector(user=self.request.user)

    def object_response(self, instance, code=status.HTTP_200_OK) -> Response:
        response = Response(self.get_serializer(instance).data, status=code)
        if code == status.HTTP_201_CREATED:
            response["Location"] = reverse(
                f"api:{self.basename}-detail", kwargs={"name": instance.name}, request=self.request
            )
        return with_etag(response, self.serializer_class.body(instance))

    def refetch(self, name: str):
        return type(self).selector(user=self.request.user).get(name=name)

    def apply(self, name: str, body_of: Callable, *, expected: services.Expected, conflict: bool = False) -> None:
        """Write one object through the services; ``body_of`` makes the new body (None deletes) from the current one
        (None when absent), under the config write lock."""
        config_type = self.config_type

        def changes(state):
            current = state[config_type].get(name)
            if current is None and expected.exists:
                return {}  # gone meanwhile: the expectation answers 404
            return {config_type: {name: body_of(current)}}

        with service_errors(where=object_path(config_type, name), conflict=conflict):
            services.config_apply(
                changes=changes, actor=self.actor(), expect={(config_type, name): expected}, **self.change_options()
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
    action_doors = {"sync": "backend.sync"}
    queryset = Backend.objects.none()
    serializer_class = serializers.BackendSerializer
    filterset_class = filtersets.BackendFilterSet
    ordering_fields = ["name", "kind", "last_sync_at"]
    selector = staticmethod(selectors.backends_visible)

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
    action_doors = {"render": "pool.render", "check": "pool.check", "capacity": "pool.capacity"}
    queryset = Pool.objects.none()
    serializer_class = serializers.PoolSerializer
    filterset_class = filtersets.PoolFilterSet
    selector = staticmethod(selectors.pools_visible)

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
                pods=options.get("pods"),
                topology=options.get("topology"),
            )
        return Response(result)

    @extend_schema(
        summary="Capacity by topology: the gangs of GPUs the pool can start, per level and shape",
        parameters=[
            OpenApiParameter("shape", str, many=True, description="also this shape, PODSxGPUS (repeat: 4x8)"),
            OpenApiParameter("level", str, description="only this level (a key of the pool's topology_keys)"),
            OpenApiParameter("gpu_product", str, description="count only the nodes of this GPU product"),
        ],
        responses=serializers.CapacityResultSerializer,
        description=(
            "As `poolctl pool capacity --json` (SEMANTICS §11): the whole pool (`key` null), then each level of the "
            "pool's `topology_keys`, with its domains and, for the standard shapes and those asked, `gangs`, "
            "`largest_gang` with `largest_domain`, and `stranded`. A bad `shape` or `level` is a 400 naming it."
        ),
    )
    @action(detail=True, methods=["get"])
    def capacity(self, request, name=None):
        with service_errors():
            result = selectors.pool_capacity(
                name,
                user=request.user,
                shapes=names_parameter(request, "shape"),
                level=request.query_params.get("level"),
                gpu_product=request.query_params.get("gpu_product"),
            )
        return Response(result)


@config_object_schema(serializers.PodTemplateSerializer, "pod template")
class PodTemplateViewSet(ConfigObjectViewSet):
    """Pod templates by name; readable and writable per type (``config/POD_TEMPLATE``)."""

    config_type = ConfigType.POD_TEMPLATE
    queryset = PodTemplate.objects.none()
    serializer_class = serializers.PodTemplateSerializer
    filterset_class = filtersets.PodTemplateFilterSet
    selector = staticmethod(selectors.pod_templates_visible)


@config_object_schema(serializers.ResourceValidationSerializer, "resource validation")
class ResourceValidationViewSet(ConfigObjectViewSet):
    """Resource-validation sets by name; readable and writable per type (``config/RESOURCE_VALIDATION``)."""

    config_type = ConfigType.RESOURCE_VALIDATION
    queryset = ResourceValidationModel.objects.none()
    serializer_class = serializers.ResourceValidationSerializer
    filterset_class = filtersets.ResourceValidationFilterSet
    selector = staticmethod(selectors.resource_validations_visible)


@config_object_schema(serializers.DepartmentSerializer, "department")
class DepartmentViewSet(ConfigObjectViewSet):
    """Run:ai departments with their quotas per node pool (``resources``); SEMANTICS §9."""

    config_type = ConfigType.DEPARTMENT
    queryset = Department.objects.none()
    serializer_class = serializers.DepartmentSerializer
    filterset_class = filtersets.DepartmentFilterSet
    selector = staticmethod(selectors.departments_queryset)


@config_object_schema(serializers.ProjectSerializer, "project")
class ProjectViewSet(ConfigObjectViewSet):
    """Run:ai projects: department, namespaces and quotas per node pool; changed by managers of the department."""

    config_type = ConfigType.PROJECT
    queryset = Project.objects.none()
    serializer_class = serializers.ProjectSerializer
    filterset_class = filtersets.ProjectFilterSet
    selector = staticmethod(selectors.projects_queryset)


@config_object_schema(serializers.RoleSerializer, "role")
class RoleViewSet(ConfigObjectViewSet):
    """Roles; ``POST /api/roles/generate/`` makes an ``osmo-<prefix>`` pool role."""

    config_type = ConfigType.ROLE
    action_doors = {"generate": "role.generate"}
    queryset = Role.objects.none()
    serializer_class = serializers.RoleSerializer
    filterset_class = filtersets.RoleFilterSet
    selector = staticmethod(selectors.roles_visible)

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
    """A pool's platforms one by one; each write changes the pool's body through the services (a POOL revision)."""

    doors = {
        "list": "platform.list",
        "retrieve": "platform.list",
        "create": "platform.change",
        "update": "platform.change",
        "partial_update": "platform.change",
        "destroy": "platform.change",
    }
    queryset = Platform.objects.none()
    serializer_class = serializers.PlatformSerializer
    lookup_field = "name"
    lookup_value_regex = r"[^/]+"
    ordering_fields = ["name"]
    ordering = ["name"]
    filterset_class = filtersets.PlatformFilterSet

    def get_queryset(self):
        with service_errors():
            selectors.pool_get(self.kwargs["pool_name"], user=self.request.user)
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

    def change(self, name: str, edit: Callable, *, expected: services.Expected, conflict=False) -> None:
        pool_name = self.kwargs["pool_name"]
        where = f"{object_path(ConfigType.POOL, pool_name)}.platforms.{name}"
        with service_errors(where=where, conflict=conflict):
            services.platform_change(
                pool=pool_name, platform=name, edit=edit, actor=self.actor(), expected=expected, **self.change_options()
            )

    def refetch(self, name: str) -> Platform:
        return self.get_queryset().get(name=name)

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
        self.get_queryset()  # the pool exists for the caller
        body = serializers.PlatformSerializer.body_from_request(data)
        self.change(name, lambda current: body, expected=services.ABSENT)
        return self.object_response(self.refetch(name), status.HTTP_201_CREATED)

    def update(self, request, *args, partial: bool = False, **kwargs):
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

        self.change(instance.name, edit, expected=if_match(request))
        return self.object_response(self.refetch(instance.name))

    def partial_update(self, request, *args, **kwargs):
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request, *args, **kwargs):
        instance = self.get_object()
        self.change(instance.name, lambda current: None, expected=if_match(request), conflict=True)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(list=extend_schema(summary="List platforms of every pool you may read"))
class PlatformViewSet(ApiView, viewsets.GenericViewSet):
    """Every visible platform, filterable by ``pool`` and ``name``; each is addressed under its pool."""

    doors = {"list": "platform.all"}
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
