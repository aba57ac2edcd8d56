"""One FilterSet per model: the ``?field=`` parameters of the API's lists (the UI pages filter in their views)."""

import django_filters
from django import forms
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from accounts.models import Role

from .choices import (
    BackendKind,
    ConfigType,
    ConsumptionBy,
    NodePoolColumn,
    NodePoolStatus,
    NodeStatus,
    PoolStatus,
    ResourceType,
)
from .engine.errors import ConfigError
from .engine.search import Term, parse_search
from .models import (
    Backend,
    ConfigRevision,
    Department,
    GpuConsumption,
    Node,
    NodeMembership,
    Platform,
    Pod,
    PodTemplate,
    Pool,
    Project,
    QuietGpu,
    ResourceValidation,
    UsageSample,
    online_window,
)
from .querysets import node_status_q


def filtered(filterset_class, filters, queryset) -> django_filters.FilterSet:
    """``filterset_class`` applied to ``filters`` (a query string, or a dict from ``poolctl``) over ``queryset``.

    Selectors call this with what the page, the API or ``poolctl`` was given, so all three read a filter the
    same way. Bad values raise ``ConfigError`` naming each parameter: ``status: Select a valid choice. …``.
    """
    filterset = filterset_class(filters or {}, queryset=queryset)
    if not filterset.is_valid():
        raise ConfigError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in filterset.errors.items()))
    return filterset


@extend_schema_field(OpenApiTypes.STR)
class StrictBooleanFilter(django_filters.TypedChoiceFilter):
    """``true`` or ``false`` (``1``/``0`` too); anything else is an error, not silently no filter."""

    def __init__(self, *args, **kwargs):
        choices = [("true", "true"), ("false", "false"), ("1", "1"), ("0", "0")]
        super().__init__(*args, choices=choices, coerce=lambda value: value in ("true", "1"), **kwargs)


class SearchField(forms.CharField):
    """A search box's text, read by the search grammar (``engine.search``): its terms, or a form error."""

    def clean(self, value):
        text = super().clean(value)
        try:
            return parse_search(text)
        except ConfigError as exc:
            raise forms.ValidationError(exc.problems[0].message) from None


@extend_schema_field(OpenApiTypes.STR)
class SearchFilter(django_filters.Filter):
    """``q``: every term of the search grammar must match (``SearchFilterSet.term_condition`` says how)."""

    field_class = SearchField

    def filter(self, queryset, terms):
        if not terms:
            return queryset
        for term in terms:
            queryset = queryset.filter(self.parent.term_condition(term))
        return queryset


class SearchFilterSet(django_filters.FilterSet):
    """Adds ``q``: the search grammar of ``engine.search`` over ``search_fields``.

    Each word is a case-insensitive substring of one of the fields; a ``key=value`` term is a plain word here
    (lists with labels override ``term_condition``). User text is only ever a value compared with.
    """

    search_fields: tuple[str, ...] = ("name",)
    q = SearchFilter(label="Search")

    def term_condition(self, term: Term) -> Q:
        word = term.word or f"{term.key}={term.value}"
        condition = Q()
        for field in self.search_fields:
            condition |= Q(**{f"{field}__icontains": word})
        return condition


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
    """The pools' filters: the overview, ``/api/pools/``, ``/api/pool-quota/`` and ``poolctl pool list``.

    ``status`` is a ``PoolStatus``; ``free`` keeps the pools with free GPUs, which the GPU accounting decides
    after the query (``pools.selectors.pool_list`` applies it; here it filters nothing).
    """

    search_fields = ("name", "description")
    backend = django_filters.CharFilter(field_name="backend__name", label="backend name")
    platform = django_filters.CharFilter(field_name="platforms__name", distinct=True, label="has this platform")
    status = django_filters.ChoiceFilter(
        choices=PoolStatus.choices, method="by_status", label=f"one of {', '.join(PoolStatus.values)}"
    )
    free = StrictBooleanFilter(method="after_accounting", label="true: only pools with free GPUs")

    class Meta:
        model = Pool
        fields = ["name", "backend", "enable_maintenance", "default_platform"]

    def by_status(self, queryset, name, value):
        recent = Q(backend__last_heartbeat__gt=timezone.now() - online_window())
        if value == PoolStatus.MAINTENANCE:
            return queryset.filter(enable_maintenance=True)
        if value == PoolStatus.ONLINE:
            return queryset.filter(recent, enable_maintenance=False)
        return queryset.filter(~recent | Q(backend__last_heartbeat__isnull=True), enable_maintenance=False)

    def after_accounting(self, queryset, name, value):
        return queryset


# ``sort=`` of the node-pools list: a column, ascending, or ``-`` and the column, descending.
NODE_POOL_SORTS = [(sort, sort) for column in NodePoolColumn.values for sort in (column, f"-{column}")]


class NodePoolFilterSet(SearchFilterSet):
    """The node-pools list's filters (Run:ai's node-pools view): the page ``/node-pools/`` and
    ``/api/node_pools/`` (``pools.selectors.node_pool_list`` applies them).

    ``q`` finds a text in the pool's name, label key or value, or backend; ``default`` keeps (true) or drops
    (false) the backends' default pools. ``status`` (a ``NodePoolStatus``) and ``sort`` (a ``NodePoolColumn``,
    ``-`` first for descending) need the node numbers, so the selector applies them after counting; here they
    filter nothing.
    """

    search_fields = ("name", "node_label__key", "node_label__value", "backend__name")
    q = SearchFilter(label="words in the name, label key or value, or backend")
    status = django_filters.ChoiceFilter(
        choices=NodePoolStatus.choices, method="after_counting", label=f"one of {', '.join(NodePoolStatus.values)}"
    )
    backend = django_filters.CharFilter(field_name="backend__name", label="backend name")
    label_key = django_filters.CharFilter(field_name="node_label__key", label="the pool's label key")
    default = StrictBooleanFilter(method="by_default", label="true: only default pools; false: none of them")
    sort = django_filters.ChoiceFilter(
        choices=NODE_POOL_SORTS, method="after_counting", label="a column, or -column for descending"
    )

    class Meta:
        model = Pool
        fields = ["name"]

    def by_default(self, queryset, name, value):
        is_default = Q(backend__default_pool=F("name"))
        return queryset.filter(is_default) if value else queryset.exclude(is_default)

    def after_counting(self, queryset, name, value):
        return queryset


class PlatformFilterSet(django_filters.FilterSet):
    """Platforms across pools (``/api/platforms/``) or of one pool (``/api/pools/{pool}/platforms/``)."""

    pool = django_filters.CharFilter(field_name="pool__name")

    class Meta:
        model = Platform
        fields = ["name", "pool", "host_network_allowed", "privileged_allowed"]


class RoleFilterSet(SearchFilterSet):
    search_fields = ("name", "description")

    class Meta:
        model = Role
        fields = ["name", "sync_mode", "immutable"]


class DepartmentFilterSet(SearchFilterSet):
    search_fields = ("name", "description")

    class Meta:
        model = Department
        fields = ["name"]


class ProjectFilterSet(SearchFilterSet):
    search_fields = ("name", "description")
    department = django_filters.CharFilter(field_name="department__name")

    class Meta:
        model = Project
        fields = ["name", "department"]


class NamesField(forms.Field):
    """Names given repeated (``?pool=a&pool=b``) or comma-separated (``?pool=a,b``): at most 100, each bounded."""

    widget = forms.TextInput
    MAX_NAMES = 100
    MAX_LENGTH = 253

    def to_python(self, value):
        values = value if isinstance(value, list | tuple) else [] if value in (None, "") else [value]
        names = [name.strip() for item in values for name in str(item).split(",") if name.strip()]
        if len(names) > self.MAX_NAMES:
            raise forms.ValidationError(f"at most {self.MAX_NAMES} names")
        if any(len(name) > self.MAX_LENGTH for name in names):
            raise forms.ValidationError(f"a name has at most {self.MAX_LENGTH} characters")
        return list(dict.fromkeys(names))


class NamesWidget(forms.TextInput):
    def value_from_datadict(self, data, files, name):
        return data.getlist(name) if hasattr(data, "getlist") else data.get(name)


@extend_schema_field(OpenApiTypes.STR)
class NamesFilter(django_filters.Filter):
    """Rows whose field is one of the names given; nothing given, no filtering."""

    field_class = NamesField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", NamesWidget)
        super().__init__(*args, lookup_expr="in", **kwargs)


class NodeFilterSet(SearchFilterSet):
    """The node table's filters, one meaning wherever they are given: the nodes page, ``/api/nodes/``,
    ``/api/resources/`` and ``poolctl resource list`` (``pools.selectors.resource_index`` applies them).

    ``pool`` and ``platform`` keep the nodes that one membership places in one of those pools *and* one of
    those platforms; ``status`` is a ``NodeStatus``, ``type`` a ``ResourceType``; ``q`` finds a text in the
    node's name, GPU product or labels, and ``key=value`` finds that label.
    """

    q = SearchFilter(label="words in the name, GPU product or labels; key=value for one label")
    name = django_filters.CharFilter(label="node name")
    backend = django_filters.CharFilter(field_name="backend__name", label="backend name")
    pool = NamesFilter(method="by_placement", label="pool names, repeated or comma-separated")
    platform = NamesFilter(method="by_placement", label="platform names, repeated or comma-separated")
    gpu_product = django_filters.CharFilter(label="GPU product, as its label says")
    available = StrictBooleanFilter(label="true or false: adds to capacity (true is status=available)")
    status = django_filters.ChoiceFilter(
        choices=NodeStatus.choices, method="by_status", label=f"one of {', '.join(NodeStatus.values)}"
    )
    type = django_filters.ChoiceFilter(
        choices=ResourceType.choices, method="by_type", label=f"one of {', '.join(ResourceType.values)}"
    )

    class Meta:
        model = Node
        fields = ["name", "backend", "gpu_product", "available", "pool", "platform"]

    def term_condition(self, term: Term):
        if term.is_label:
            # The key is one JSON key, never a lookup path: ``x__isnull`` or ``regex`` are just keys no node has.
            return Exact(KeyTextTransform(term.key, "labels"), term.value)
        # ``labels_text`` is the labels' JSON as text, already in lower case: label keys and values match as text,
        # in any case, with neither the JSON serialised nor the case changed per node and query.
        word = term.word
        return Q(name__icontains=word) | Q(gpu_product__icontains=word) | Q(labels_text__contains=word.lower())

    def by_placement(self, queryset, name, value):
        # Both in one filter() call, so that one membership must match both (the first of the two does it).
        if name != "pool" and self.form.cleaned_data.get("pool"):
            return queryset
        placed = {}
        if pools := self.form.cleaned_data.get("pool"):
            placed["pool__name__in"] = pools
        if platforms := self.form.cleaned_data.get("platform"):
            placed["platform_name__in"] = platforms
        if not placed:
            return queryset
        return queryset.filter(pk__in=NodeMembership.objects.filter(**placed).values("node_id"))

    def by_status(self, queryset, name, value):
        return queryset.filter(node_status_q(value))

    def by_type(self, queryset, name, value):
        pool_count = (
            NodeMembership.objects.filter(node_id=OuterRef("pk"))
            .order_by()
            .values("node_id")
            .annotate(pools=Count("pool_id", distinct=True))
            .values("pools")
        )
        queryset = queryset.annotate(pool_count=Coalesce(Subquery(pool_count), 0))
        if value == ResourceType.UNUSED:
            return queryset.filter(pool_count=0)
        return queryset.filter(pool_count=1) if value == ResourceType.RESERVED else queryset.filter(pool_count__gt=1)


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
    """The history's filters: the history page, ``/api/configs/history/`` and ``poolctl config history``.

    ``name`` keeps the revisions that changed that object, alone or with others (an import, a rollback).
    """

    search_fields = ("name", "description", "username")
    config_type = django_filters.MultipleChoiceFilter(choices=ConfigType.choices)
    name = django_filters.CharFilter(method="by_changed_name", label="revisions that changed this object")
    tag = django_filters.CharFilter(field_name="tags", lookup_expr="icontains")
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lte")

    class Meta:
        model = ConfigRevision
        fields = ["config_type", "name", "username", "action", "origin"]

    def by_changed_name(self, queryset, name, value):
        # ``changed`` is a JSON list; looking inside one is not portable across databases, so read the lists.
        touched = [pk for pk, changed in queryset.values_list("pk", "changed") if value in changed]
        return queryset.filter(pk__in=touched)


class UsageSampleFilterSet(django_filters.FilterSet):
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lte")
    backend = django_filters.CharFilter(field_name="backend__name")

    class Meta:
        model = UsageSample
        fields = ["scope", "key", "resolution", "backend"]


class IdleGpuFilterSet(SearchFilterSet):
    """The workloads with idle GPUs (page, ``/api/idle_gpus/``, ``poolctl get idle``)."""

    search_fields = ("namespace", "pod", "user", "project", "node_name")
    pool = django_filters.CharFilter(field_name="pool")
    backend = django_filters.CharFilter(field_name="backend__name")
    namespace = django_filters.CharFilter(field_name="namespace")
    user = django_filters.CharFilter(field_name="user")
    project = django_filters.CharFilter(field_name="project")

    class Meta:
        model = QuietGpu
        fields = ["pool", "backend", "namespace", "user", "project"]


class ConsumptionFilterSet(django_filters.FilterSet):
    """A consumption report's parameters: what to count by, the period, and which pools or backend."""

    by = django_filters.ChoiceFilter(choices=ConsumptionBy.choices, method="keep", label="Count by")
    period = django_filters.ChoiceFilter(
        choices=[(period, period) for period in ("1h", "24h", "7d", "30d")], method="keep", label="Period"
    )
    since = django_filters.IsoDateTimeFilter(method="keep", label="Since (ISO 8601)")
    until = django_filters.IsoDateTimeFilter(method="keep", label="Until (ISO 8601)")
    pool = django_filters.CharFilter(field_name="pool")
    backend = django_filters.CharFilter(field_name="backend__name")

    class Meta:
        model = GpuConsumption
        fields = ["pool", "backend"]

    def keep(self, queryset, name, value):
        """A report parameter, not a row filter: ``consumption_report`` reads it from the cleaned data."""
        return queryset


class WorkloadFilterSet(django_filters.FilterSet):
    """The workloads' filters (page, ``/api/workloads/``, ``poolctl get workloads``): ``selectors.workloads_visible``
    applies them in its grouped query."""

    pool = django_filters.CharFilter(method="keep", label="Pool")
    project = django_filters.CharFilter(method="keep", label="Project")
    user = django_filters.CharFilter(method="keep", label="User")
    phase = django_filters.CharFilter(method="keep", label="Phase (Pending, Running, Partially running, …)")
    reason = django_filters.CharFilter(method="keep", label="Why a pending workload waits")
    pending = django_filters.CharFilter(method="keep", label="1: only workloads with a pending pod")
    backend = django_filters.CharFilter(method="keep", label="Backend")
    namespace = django_filters.CharFilter(method="keep", label="Namespace")

    class Meta:
        model = Pod
        fields = []

    def keep(self, queryset, name, value):
        """Read by the selector, which groups the pods."""
        return queryset
