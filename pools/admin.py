"""The Django admin: every model listed; config objects edited as documents through the services.

A config object's change form holds its canonical body as JSON (or YAML). Saving validates the whole
change like ``poolctl config update`` and records a revision; deleting goes through the same
reference checks. Inventory (nodes, pods, membership) and history are read-only here.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect

from accounts.models import Role

from . import selectors, services
from .choices import ChangeOrigin, ConfigType
from .configs import parse_document
from .engine.errors import AccessDenied, ConfigError
from .models import (
    Backend,
    ConfigRevision,
    Department,
    GpuConsumption,
    JobRecord,
    Lease,
    Node,
    NodeGroupSums,
    NodeLabelChange,
    NodeMembership,
    Platform,
    Pod,
    PodTemplate,
    Pool,
    PoolPodUsage,
    Project,
    ProjectUsageMinute,
    ProjectUsageSums,
    QuietGpu,
    ResourceValidation,
    StartEstimate,
    TopologySums,
    UsageSample,
    UtilizationSample,
    VerdictRound,
    WorkloadRun,
    WorkloadSums,
    WorkloadVerdict,
)


def admin_actor(request) -> services.Actor:
    return services.Actor.of(request.user, ChangeOrigin.ADMIN)


class ConfigDocumentForm(forms.ModelForm):
    """Name plus the object's body as a JSON/YAML document, checked by a dry run of the real change."""

    document = forms.CharField(
        widget=forms.Textarea(
            attrs={"rows": 28, "cols": 110, "spellcheck": "false", "style": "font-family: monospace"}
        ),
        help_text="The body in OSMO's JSON shape (YAML is accepted too). Saving records a config revision.",
    )

    class Meta:
        fields = ["name"]

    config_type: ConfigType

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.request = request
        if self.instance.pk and not self.is_bound:
            body = selectors.config_show(config_type=self.config_type, name=self.instance.name, user=request.user)[
                self.instance.name
            ]
            self.initial["document"] = json.dumps(body, indent=2)

    def clean(self):
        cleaned = super().clean()
        name = cleaned.get("name") or self.instance.name
        if not name or "document" not in cleaned:
            return cleaned
        try:
            cleaned["body"] = parse_document(cleaned["document"], filename="document")
            services.config_update(
                config_type=self.config_type,
                name=name,
                data=cleaned["body"],
                actor=admin_actor(self.request),
                dry_run=True,
            )
        except ConfigError as exc:
            for problem in exc.problems:
                self.add_error("document", str(problem))
        except AccessDenied as exc:
            self.add_error("document", f"permission denied: {exc}")
        return cleaned


class ConfigAdmin(admin.ModelAdmin):
    """Shared admin for the config types: saves and deletes go through ``pools.services`` (and its gate)."""

    config_type: ConfigType
    search_fields = ["name"]
    actions = None

    def get_queryset(self, request):
        return super().get_queryset(request).restrict(request.user)

    def get_form(self, request, obj=None, change=False, **kwargs):
        base = type(
            f"{self.model.__name__}DocumentForm",
            (ConfigDocumentForm,),
            {"config_type": self.config_type, "Meta": type("Meta", (), {"model": self.model, "fields": ["name"]})},
        )
        kwargs["form"] = base
        form = super().get_form(request, obj, change=change, **kwargs)

        class RequestForm(form):
            def __init__(self, *args, **inner):
                super().__init__(*args, request=request, **inner)

        return RequestForm

    def get_fieldsets(self, request, obj=None):
        return [(None, {"fields": ["name", "document"]})]

    def get_readonly_fields(self, request, obj=None):
        return ["name"] if obj else []

    def save_model(self, request, obj, form, change):
        services.config_update(
            config_type=self.config_type, name=obj.name, data=form.cleaned_data["body"], actor=admin_actor(request)
        )
        obj.pk = type(obj).objects.get(name=obj.name).pk

    def save_related(self, request, form, formsets, change):
        """Nothing: the service wrote the whole object."""

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, object_id)
        if obj is not None and request.method == "POST":
            try:
                services.config_delete(
                    config_type=self.config_type, name=obj.name, actor=admin_actor(request), dry_run=True
                )
            except (ConfigError, AccessDenied) as exc:
                self.message_user(request, f"Cannot delete: {exc}", messages.ERROR)
                return HttpResponseRedirect(request.path.rsplit("/delete/", 1)[0] + "/change/")
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request, obj):
        services.config_delete(config_type=self.config_type, name=obj.name, actor=admin_actor(request))


@admin.register(Backend)
class BackendAdmin(ConfigAdmin):
    config_type = ConfigType.BACKEND
    list_display = ["name", "kind", "description", "last_sync_at", "last_sync_error"]
    list_filter = ["kind"]


@admin.register(PodTemplate)
class PodTemplateAdmin(ConfigAdmin):
    config_type = ConfigType.POD_TEMPLATE
    list_display = ["name", "builtin"]


@admin.register(ResourceValidation)
class ResourceValidationAdmin(ConfigAdmin):
    config_type = ConfigType.RESOURCE_VALIDATION
    list_display = ["name", "builtin"]


@admin.register(Pool)
class PoolAdmin(ConfigAdmin):
    config_type = ConfigType.POOL
    list_display = ["name", "backend", "default_platform", "enable_maintenance", "description"]
    list_filter = ["backend", "enable_maintenance"]
    list_select_related = ["backend"]


@admin.register(Role)
class RoleAdmin(ConfigAdmin):
    config_type = ConfigType.ROLE
    list_display = ["name", "description", "sync_mode", "immutable"]


@admin.register(Department)
class DepartmentAdmin(ConfigAdmin):
    config_type = ConfigType.DEPARTMENT
    list_display = ["name", "description", "created_at"]


@admin.register(Project)
class ProjectAdmin(ConfigAdmin):
    config_type = ConfigType.PROJECT
    list_display = ["name", "department", "description", "created_at"]
    list_filter = ["department"]
    list_select_related = ["department"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that only sync or history writes: viewable, never edited by hand, only those the user may see."""

    actions = None

    def get_queryset(self, request):
        return super().get_queryset(request).restrict(request.user)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Node)
class NodeAdmin(ReadOnlyAdmin):
    list_display = ["name", "backend", "gpu_product", "gpu", "available", "unavailable_reason"]
    list_filter = ["backend", "available", "gpu_product"]
    list_select_related = ["backend"]
    search_fields = ["name"]


@admin.register(Pod)
class PodAdmin(ReadOnlyAdmin):
    list_display = ["name", "namespace", "backend", "node_name", "phase", "pool_name", "gpu", "preemptible"]
    list_filter = ["backend", "phase", "preemptible"]
    list_select_related = ["backend"]
    search_fields = ["name", "namespace", "pool_name", "node_name"]


@admin.register(NodeMembership)
class NodeMembershipAdmin(ReadOnlyAdmin):
    list_display = ["node", "pool", "platform_name"]
    list_filter = ["pool"]
    list_select_related = ["node", "pool"]


@admin.register(ConfigRevision)
class ConfigRevisionAdmin(ReadOnlyAdmin):
    # A snapshot holds every object of its type; the history pages show what each reader may see of it.
    exclude = ["snapshot"]
    list_display = ["config_type", "revision", "name", "action", "username", "origin", "created_at", "description"]
    list_filter = ["config_type", "action", "origin"]
    search_fields = ["name", "description", "username"]


@admin.register(Platform)
class PlatformAdmin(ReadOnlyAdmin):
    """Platforms are edited inside their pool's document, where the whole pool is validated together."""

    list_display = ["name", "pool", "description"]
    list_select_related = ["pool"]


@admin.register(UsageSample)
class UsageSampleAdmin(ReadOnlyAdmin):
    list_display = ["scope", "key", "backend", "resolution", "at", "used", "capacity", "quota_used", "quota_limit"]
    list_filter = ["scope", "resolution", "backend"]
    search_fields = ["key"]


@admin.register(UtilizationSample)
class UtilizationSampleAdmin(ReadOnlyAdmin):
    list_display = ["pool", "backend", "resolution", "at", "gpus", "utilization", "memory_used", "idle_gpus"]
    list_filter = ["resolution", "backend"]
    search_fields = ["pool"]


@admin.register(QuietGpu)
class QuietGpuAdmin(ReadOnlyAdmin):
    list_display = ["device", "node_name", "namespace", "pod", "user", "project", "pool", "gpus", "quiet_since"]
    list_filter = ["backend", "pool"]
    list_select_related = ["backend"]
    search_fields = ["pod", "namespace", "user", "node_name", "device"]


@admin.register(GpuConsumption)
class GpuConsumptionAdmin(ReadOnlyAdmin):
    list_display = ["start", "resolution", "pool", "dimension", "value", "allocated", "idle", "backend"]
    list_filter = ["resolution", "dimension", "backend"]
    list_select_related = ["backend"]
    search_fields = ["pool", "value"]


@admin.register(NodeLabelChange)
class NodeLabelChangeAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "node_name", "key", "old_value", "new_value", "username", "origin", "backend"]
    list_filter = ["backend", "origin"]
    search_fields = ["node_name", "key", "username"]


@admin.register(PoolPodUsage)
class PoolPodUsageAdmin(ReadOnlyAdmin):
    list_display = ["pool_name", "backend", "gpu", "gpu_quota"]
    list_filter = ["backend"]


@admin.register(NodeGroupSums)
class NodeGroupSumsAdmin(ReadOnlyAdmin):
    list_display = ["placements", "backend", "available", "unschedulable", "gpu_product", "nodes", "gpu", "free"]
    list_filter = ["backend", "available", "unschedulable"]


@admin.register(TopologySums)
class TopologySumsAdmin(ReadOnlyAdmin):
    list_display = ["domain", "pool", "gpu_product", "gpus", "free", "nodes"]
    list_filter = ["pool"]


@admin.register(VerdictRound)
class VerdictRoundAdmin(ReadOnlyAdmin):
    list_display = ["backend", "judged_at", "workloads", "seconds", "config_revision"]


@admin.register(WorkloadVerdict)
class WorkloadVerdictAdmin(ReadOnlyAdmin):
    list_display = ["workload_name", "workload_kind", "namespace", "backend", "pool", "gpus", "reason"]
    list_filter = ["backend", "reason"]
    search_fields = ["workload_name", "namespace"]


@admin.register(ProjectUsageMinute)
class ProjectUsageMinuteAdmin(ReadOnlyAdmin):
    list_display = ["at", "backend", "seconds", "capacity"]
    list_filter = ["backend"]


@admin.register(ProjectUsageSums)
class ProjectUsageSumsAdmin(ReadOnlyAdmin):
    list_display = ["backend", "window", "half_life", "through", "capacity"]


@admin.register(WorkloadRun)
class WorkloadRunAdmin(ReadOnlyAdmin):
    list_display = ["workload_name", "workload_kind", "namespace", "project", "backend", "started", "finished"]
    list_filter = ["backend", "workload_kind"]
    search_fields = ["workload_name", "namespace", "project"]


@admin.register(StartEstimate)
class StartEstimateAdmin(ReadOnlyAdmin):
    list_display = ["workload_name", "namespace", "pool", "made_at", "likely", "late", "started"]
    list_filter = ["pool"]
    search_fields = ["workload_name", "namespace"]


@admin.register(WorkloadSums)
class WorkloadSumsAdmin(ReadOnlyAdmin):
    list_display = ["workload_name", "workload_kind", "namespace", "backend", "gpus", "held", "pods", "pending"]
    list_filter = ["backend", "workload_kind"]
    search_fields = ["workload_name", "namespace"]


@admin.register(Lease)
class LeaseAdmin(ReadOnlyAdmin):
    list_display = ["name", "owner", "since", "expires_at"]


@admin.register(JobRecord)
class JobRecordAdmin(ReadOnlyAdmin):
    list_display = ["id", "task", "backend", "state", "created_by", "created_at", "finished_at"]
    list_filter = ["task", "state", "backend"]


admin.site.site_header = "GPU Pool Console"
admin.site.site_title = "GPU Pool Console"
admin.site.index_title = "Pools, templates, validations, roles and inventory"
