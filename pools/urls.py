"""Routes of the web console (namespace ``pools``): each page is a declaration of ``pools.views``."""

from django.urls import path, register_converter

from .views import access, configs, inventory, labels, pools, quotas, utilization, workloads


class DocumentKind:
    """``templates``, ``validations`` or ``roles``: the config types edited as one document."""

    regex = "|".join(configs.DOCUMENT_KINDS)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(DocumentKind, "kind")

app_name = "pools"

urlpatterns = [
    path("", pools.Overview.as_view(), name="overview"),
    path("pools/new/", pools.PoolCreate.as_view(), name="pool-create"),
    path("pools/preview/", pools.PoolPreview.as_view(), name="pool-preview"),
    path("pools/<str:name>/", pools.PoolDetail.as_view(), name="pool"),
    path("pools/<str:name>/usage/", pools.PoolUsageChart.as_view(), name="pool-usage"),
    path("pools/<str:name>/utilization/", pools.PoolUtilizationChart.as_view(), name="pool-utilization"),
    path("pools/<str:name>/edit/", pools.PoolEdit.as_view(), name="pool-edit"),
    path("pools/<str:name>/maintenance/", pools.PoolMaintenance.as_view(), name="pool-maintenance"),
    path("what-if/", pools.WhatIf.as_view(), name="what-if"),
    path("nodes/", inventory.Nodes.as_view(), name="nodes"),
    path("nodes/<str:name>/gpus/", inventory.NodeGpus.as_view(), name="node-gpus"),
    path("nodes/<str:name>/gpus/history/", inventory.NodeGpusChart.as_view(), name="node-gpus-history"),
    path("node-pools/", inventory.NodePools.as_view(), name="node-pools"),
    path("backends/", inventory.Backends.as_view(), name="backends"),
    path("backends/<str:name>/sync/", inventory.BackendSync.as_view(), name="backend-sync"),
    path("backends/<str:name>/sync/status/", inventory.BackendSyncStatus.as_view(), name="backend-sync-status"),
    path("idle/", utilization.Idle.as_view(), name="idle"),
    path("workloads/", workloads.Workloads.as_view(), name="workloads"),
    path("workloads/<str:backend>/<str:namespace>/<str:name>/", workloads.WorkloadDetail.as_view(), name="workload"),
    path("consumption/", utilization.Consumption.as_view(), name="consumption"),
    path("config/templates/preview/", configs.TemplatePreview.as_view(), name="template-preview"),
    path("config/<kind:kind>/", configs.DocumentList.as_view(), name="documents"),
    path("config/<kind:kind>/new/", configs.DocumentCreate.as_view(), name="document-create"),
    path("config/<kind:kind>/<str:name>/edit/", configs.DocumentEdit.as_view(), name="document-edit"),
    path("history/", configs.History.as_view(), name="history"),
    path("history/<str:config_type>/<int:revision>/", configs.RevisionDetail.as_view(), name="revision"),
    path("history/<str:config_type>/<int:revision>/rollback/", configs.Rollback.as_view(), name="rollback"),
    path("access/", access.Access.as_view(), name="roles"),
    path("access/users/new/", access.UserCreate.as_view(), name="user-create"),
    path("access/users/<str:username>/", access.UserDetail.as_view(), name="user"),
    path("quotas/", quotas.QuotaGrid.as_view(), name="quotas"),
    path("quotas/<str:pool>/", quotas.QuotaDashboard.as_view(), name="quota-dashboard"),
    path("quotas/<str:pool>/usage/", quotas.QuotaDashboardChart.as_view(), name="quota-dashboard-usage"),
    path("my/projects/", quotas.MyProjects.as_view(), name="my-projects"),
    path("projects/", quotas.Projects.as_view(), name="projects"),
    path("projects/new/", quotas.ProjectCreate.as_view(), name="project-create"),
    path("projects/<str:name>/edit/", quotas.ProjectEdit.as_view(), name="project-edit"),
    path("departments/", quotas.Departments.as_view(), name="departments"),
    path("departments/new/", quotas.DepartmentCreate.as_view(), name="department-create"),
    path("departments/<str:name>/edit/", quotas.DepartmentEdit.as_view(), name="department-edit"),
    path("label-pools/new/", labels.LabelPoolCreate.as_view(), name="label-pool-create"),
    path("label-pools/<str:name>/delete/", labels.LabelPoolDelete.as_view(), name="label-pool-delete"),
    path("nodes/<str:name>/labels/", labels.NodeLabels.as_view(), name="node-labels"),
]
