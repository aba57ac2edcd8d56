"""Routes of the web console (namespace ``pools``)."""

from django.urls import path

from . import views, views_quotas, views_utilization

app_name = "pools"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("pools/new/", views.pool_edit, name="pool-create"),
    path("pools/preview/", views.pool_preview, name="pool-preview"),
    path("pools/<str:name>/", views.pool_detail, name="pool"),
    path("pools/<str:name>/usage/", views.pool_usage, name="pool-usage"),
    path("pools/<str:name>/utilization/", views_utilization.pool_utilization, name="pool-utilization"),
    path("pools/<str:name>/edit/", views.pool_edit, name="pool-edit"),
    path("pools/<str:name>/maintenance/", views.pool_maintenance, name="pool-maintenance"),
    path("nodes/", views.nodes, name="nodes"),
    path("backends/", views.backends, name="backends"),
    # GPU utilization: idle GPUs, GPU-hours, a node's GPUs (issue 13)
    path("idle/", views_utilization.idle, name="idle"),
    path("consumption/", views_utilization.consumption, name="consumption"),
    path("nodes/<str:name>/gpus/", views_utilization.node_gpus, name="node-gpus"),
    path("nodes/<str:name>/gpus/history/", views_utilization.node_gpus_history, name="node-gpus-history"),
    path("backends/<str:name>/sync/", views.backend_sync, name="backend-sync"),
    path("backends/<str:name>/sync/status/", views.backend_sync_status, name="backend-sync-status"),
    path("config/templates/preview/", views.template_preview, name="template-preview"),
    path("config/<str:kind>/", views.document_list, name="documents"),
    path("config/<str:kind>/new/", views.document_edit, name="document-create"),
    path("config/<str:kind>/<str:name>/edit/", views.document_edit, name="document-edit"),
    path("what-if/", views.what_if, name="what-if"),
    path("history/", views.history, name="history"),
    path("history/<str:config_type>/<int:revision>/", views.revision_detail, name="revision"),
    path("history/<str:config_type>/<int:revision>/rollback/", views.revision_rollback, name="rollback"),
    path("access/", views.roles, name="roles"),
    path("access/users/new/", views.user_create, name="user-create"),
    path("access/users/<str:username>/", views.user_detail, name="user"),
    # Node pools (Run:ai's node-pools view, issue 11)
    path("node-pools/", views.node_pools, name="node-pools"),
    # Departments, projects and quotas per node pool (SEMANTICS §9)
    path("quotas/", views_quotas.quota_grid, name="quotas"),
    path("quotas/<str:pool>/", views_quotas.quota_dashboard, name="quota-dashboard"),
    path("quotas/<str:pool>/usage/", views_quotas.quota_dashboard_usage, name="quota-dashboard-usage"),
    path("projects/", views_quotas.projects, name="projects"),
    path("departments/", views_quotas.departments, name="departments"),
    # === gpuctl's pool workflow (SEMANTICS §8.1) ===
    path("label-pools/new/", views.label_pool_create, name="label-pool-create"),
    path("label-pools/<str:name>/delete/", views.label_pool_delete, name="label-pool-delete"),
    path("nodes/<str:name>/labels/", views.node_labels, name="node-labels"),
]
