"""Routes of the API under ``/api/``: a router for the model endpoints, explicit paths for the rest."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import label_pools, quotas, users, utilization, views

app_name = "api"

router = DefaultRouter()
router.include_root_view = False
router.register("backends", views.BackendViewSet, basename="backend")
router.register("pools", views.PoolViewSet, basename="pool")
router.register("platforms", views.PlatformViewSet, basename="platform")
router.register("pod_templates", views.PodTemplateViewSet, basename="pod-template")
router.register("resource_validations", views.ResourceValidationViewSet, basename="resource-validation")
router.register("roles", views.RoleViewSet, basename="role")
router.register("departments", views.DepartmentViewSet, basename="department")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("nodes", views.NodeViewSet, basename="node")
router.register("pods", views.PodViewSet, basename="pod")
router.register("memberships", views.MembershipViewSet, basename="membership")
router.register("usage", views.UsageViewSet, basename="usage")

platforms = views.PoolPlatformViewSet

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", views.RedocView.as_view(url_name="api:schema"), name="redoc"),
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
    path("pool_quota/", views.PoolQuotaView.as_view(), name="pool-quota"),
    path("resources/", views.ResourceListView.as_view(), name="resources"),
    path("node_pools/", views.NodePoolListView.as_view(), name="node-pools"),
    path("configs/history/", views.ConfigHistoryView.as_view(), name="config-history"),
    path("configs/import/", views.ConfigImportView.as_view(), name="config-import"),
    path("configs/<str:config_type>/", views.ConfigDocumentView.as_view(), name="config-document"),
    path("configs/<str:config_type>/diff/", views.ConfigDiffView.as_view(), name="config-diff"),
    path("configs/<str:config_type>/<int:revision>/", views.RevisionView.as_view(), name="config-revision"),
    path("configs/<str:config_type>/<int:revision>/tags/", views.RevisionTagsView.as_view(), name="config-tags"),
    path(
        "configs/<str:config_type>/<int:revision>/rollback/",
        views.RevisionRollbackView.as_view(),
        name="config-rollback",
    ),
    path("jobs/<str:job_id>/", views.JobView.as_view(), name="job-detail"),
    path("users/", users.UserListView.as_view(), name="user-list"),
    path("users/<str:username>/", users.UserDetailView.as_view(), name="user-detail"),
    path("users/<str:username>/roles/", users.UserRolesView.as_view(), name="user-roles"),
    path("users/<str:username>/tokens/", users.UserTokensView.as_view(), name="user-tokens"),
    # gpuctl's pool workflow (SEMANTICS §8.1)
    path("label_pools/", label_pools.LabelPoolListView.as_view(), name="label-pool-list"),
    path("label_pools/<str:name>/", label_pools.LabelPoolDetailView.as_view(), name="label-pool-detail"),
    path("nodes/<str:name>/labels/", label_pools.NodeLabelsView.as_view(), name="node-labels"),
    # quotas per node pool (SEMANTICS §9)
    path("quotas/", quotas.QuotaListView.as_view(), name="quota-list"),
    path("quotas/simulate/", quotas.QuotaSimulateView.as_view(), name="quota-simulate"),
    # GPU utilization: idle GPUs and GPU-hours (issue 13)
    path("idle_gpus/", utilization.IdleGpuListView.as_view(), name="idle-gpus"),
    path("consumption/", utilization.ConsumptionView.as_view(), name="consumption"),
    path("", include(router.urls)),
    re_path(r"^[\s\S]*$", views.UnknownEndpointView.as_view(), name="unknown"),  # newlines too
]
