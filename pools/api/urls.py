"""Routes of the API under ``/api/``: a router for the viewsets, explicit paths for the rest. Each endpoint names its
doors of the catalogue; ``pools.doors`` lists them all with what each needs."""

from django.urls import include, path, re_path
from rest_framework.routers import DefaultRouter

from . import access, configs, docs, history, inventory, labels, quotas, utilization, workloads

app_name = "api"

router = DefaultRouter()
router.include_root_view = False
router.register("backends", configs.BackendViewSet, basename="backend")
router.register("pools", configs.PoolViewSet, basename="pool")
router.register("platforms", configs.PlatformViewSet, basename="platform")
router.register("pod_templates", configs.PodTemplateViewSet, basename="pod-template")
router.register("resource_validations", configs.ResourceValidationViewSet, basename="resource-validation")
router.register("roles", configs.RoleViewSet, basename="role")
router.register("departments", configs.DepartmentViewSet, basename="department")
router.register("projects", configs.ProjectViewSet, basename="project")
router.register("nodes", inventory.NodeViewSet, basename="node")
router.register("pods", inventory.PodViewSet, basename="pod")
router.register("memberships", inventory.MembershipViewSet, basename="membership")
router.register("usage", inventory.UsageViewSet, basename="usage")

platforms = configs.PoolPlatformViewSet

urlpatterns = [
    path("schema/", docs.SchemaView.as_view(), name="schema"),
    path("docs/", docs.SwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", docs.RedocView.as_view(url_name="api:schema"), name="redoc"),
    path(
        "pools/<str:pool_name>/platforms/",
        platforms.as_view({"get": "list", "post": "create"}),
        name="pool-platform-list",
    ),
    path(
        "pools/<str:pool_name>/platforms/<str:name>/",
        platforms.as_view({"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}),
        name="pool-platform-detail",
    ),
    path("pool_quota/", inventory.PoolQuotaView.as_view(), name="pool-quota"),
    path("resources/", inventory.ResourceListView.as_view(), name="resources"),
    path("node_pools/", inventory.NodePoolListView.as_view(), name="node-pools"),
    path("configs/history/", history.ConfigHistoryView.as_view(), name="config-history"),
    path("configs/import/", history.ConfigImportView.as_view(), name="config-import"),
    path("configs/<str:config_type>/", history.ConfigDocumentView.as_view(), name="config-document"),
    path("configs/<str:config_type>/diff/", history.ConfigDiffView.as_view(), name="config-diff"),
    path("configs/<str:config_type>/<int:revision>/", history.RevisionView.as_view(), name="config-revision"),
    path("configs/<str:config_type>/<int:revision>/tags/", history.RevisionTagsView.as_view(), name="config-tags"),
    path(
        "configs/<str:config_type>/<int:revision>/rollback/",
        history.RevisionRollbackView.as_view(),
        name="config-rollback",
    ),
    path("jobs/<str:job_id>/", inventory.JobView.as_view(), name="job-detail"),
    path("users/", access.UserListView.as_view(), name="user-list"),
    path("users/<str:username>/", access.UserDetailView.as_view(), name="user-detail"),
    path("users/<str:username>/roles/", access.UserRolesView.as_view(), name="user-roles"),
    path("users/<str:username>/tokens/", access.UserTokensView.as_view(), name="user-tokens"),
    # gpuctl's pool workflow (SEMANTICS §8.1)
    path("label_pools/", labels.LabelPoolListView.as_view(), name="label-pool-list"),
    path("label_pools/<str:name>/", labels.LabelPoolDetailView.as_view(), name="label-pool-detail"),
    path("nodes/<str:name>/labels/", labels.NodeLabelsView.as_view(), name="node-labels"),
    # quotas per node pool (SEMANTICS §9)
    path("quotas/", quotas.QuotaListView.as_view(), name="quota-list"),
    path("quotas/simulate/", quotas.QuotaSimulateView.as_view(), name="quota-simulate"),
    path("quotas/reclaim/", quotas.QuotaReclaimView.as_view(), name="quota-reclaim"),
    path("my/projects/", quotas.MyProjectsView.as_view(), name="my-projects"),
    # GPU utilization: idle GPUs and GPU-hours
    path("idle_gpus/", utilization.IdleGpuListView.as_view(), name="idle-gpus"),
    path("consumption/", utilization.ConsumptionView.as_view(), name="consumption"),
    # workloads (SEMANTICS §10)
    path("workloads/", workloads.WorkloadListView.as_view(), name="workload-list"),
    path(
        "workloads/<str:backend>/<str:namespace>/<str:name>/",
        workloads.WorkloadDetailView.as_view(),
        name="workload-detail",
    ),
    path("", include(router.urls)),
    re_path(r"^[\s\S]*$", docs.UnknownEndpointView.as_view(), name="unknown"),  # newlines too
]
