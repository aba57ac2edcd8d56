"""One FilterSet per model: the ``?field=`` parameters of the API's lists (the UI pages filter in their views)."""

import django_filters
from django.db.models import Q

from accounts.models import Role

from .choices import BackendKind, ConfigType
from .models import (
    Backend,
    ConfigRevision,
    Node,
    NodeMembership,
    Pod,
    PodTemplate,
    Pool,
    ResourceValidation,
    UsageSample,
)


class SearchFilterSet(django_filters.FilterSet):
    """Adds ``q``: a case-insensitive search over ``search_fields``."""

    search_fields: tuple[str, ...] = ("name",)
    q = django_filters.CharFilter(method="search", label="Search")

    def search(self, queryset, name, value):
        if not value.strip():
            return queryset
        condition = Q()
        for field in self.search_fields:
            condition |= Q(**{f"{field}__icontains": value.strip()})
        return queryset.filter(condition)


class BackendFilterSet(SearchFilterSet):
    search_fields = ("name", "description")
    kind = django_filters.MultipleChoiceFilter(choices=BackendKind.choices)

    class Meta:
        model = Backend
        fields = ["name", "kind"]


class PodTemplateFilterSet(SearchFilterSet):
    class Meta:
        model = PodTemplate
        fields = ["name", "builtin"]


class ResourceValidationFilterSet(SearchFilterSet):
    class Meta:
        model = ResourceValidation
        fields = ["name", "builtin"]


class PoolFilterSet(SearchFilterSet):
    search_fields = ("name", "description")
    backend = django_filters.CharFilter(field_name="backend__name")
    platform = django_filters.CharFilter(field_name="platforms__name", distinct=True)

    class Meta:
        model = Pool
        fields = ["name", "backend", "enable_maintenance", "default_platform"]


class RoleFilterSet(SearchFilterSet):
    search_fields = ("name", "description")

    class Meta:
        model = Role
        fields = ["name", "sync_mode", "immutable"]


class NodeFilterSet(SearchFilterSet):
    search_fields = ("name", "gpu_product")
    backend = django_filters.CharFilter(field_name="backend__name")
    pool = django_filters.CharFilter(field_name="memberships__pool__name", distinct=True)
    platform = django_filters.CharFilter(field_name="memberships__platform_name", distinct=True)
    gpu_product = django_filters.CharFilter()
    status = django_filters.ChoiceFilter(
        choices=[("available", "Available"), ("unavailable", "Unavailable"), ("cordoned", "Cordoned")],
        method="by_status",
    )

    class Meta:
        model = Node
        fields = ["name", "backend", "gpu_product", "available", "pool", "platform"]

    def by_status(self, queryset, name, value):
        if value == "available":
            return queryset.filter(available=True)
        if value == "cordoned":
            return queryset.filter(unschedulable=True)
        return queryset.filter(available=False)


class PodFilterSet(SearchFilterSet):
    search_fields = ("name", "namespace", "node_name", "pool_name")
    backend = django_filters.CharFilter(field_name="backend__name")
    pool = django_filters.CharFilter(field_name="pool_name")
    node = django_filters.CharFilter(field_name="node_name")

    class Meta:
        model = Pod
        fields = ["namespace", "phase", "preemptible", "backend", "pool", "node"]


class NodeMembershipFilterSet(django_filters.FilterSet):
    pool = django_filters.CharFilter(field_name="pool__name")
    platform = django_filters.CharFilter(field_name="platform_name")
    node = django_filters.CharFilter(field_name="node__name")

    class Meta:
        model = NodeMembership
        fields = ["pool", "platform", "node"]


class ConfigRevisionFilterSet(SearchFilterSet):
    search_fields = ("name", "description", "username")
    config_type = django_filters.MultipleChoiceFilter(choices=ConfigType.choices)
    tag = django_filters.CharFilter(field_name="tags", lookup_expr="icontains")
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lte")

    class Meta:
        model = ConfigRevision
        fields = ["config_type", "name", "username", "action", "origin"]


class UsageSampleFilterSet(django_filters.FilterSet):
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lte")
    backend = django_filters.CharFilter(field_name="backend__name")

    class Meta:
        model = UsageSample
        fields = ["scope", "key", "resolution", "backend"]
