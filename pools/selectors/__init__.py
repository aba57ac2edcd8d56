"""Every read of the pool domain, by concern, with a fixed number of queries whatever the number of rows.

- ``configs``: canonical documents, the current state, history, revisions and diffs
- ``pools``: one pool, its platforms and what each renders
- ``inventory``: backends, nodes, pods, the node table, node checks
- ``capacity``: GPU accounting per pool, node summaries, usage series
- ``nodepools``: Run:ai's node-pools view (nodes, GPUs, CPUs and workloads per pool)
- ``access``: roles, their reach, the profile
- ``gpuctl``: gpuctl's pool and node listings, node labels, the workloads holding a pool
- ``quotas``: quotas per node pool and the fair-share simulator
- ``estimates``: when each waiting workload will start, and how often the console was right
- ``project_usage``: each project's past usage, which time-based fair share reads
- ``units``: departments and projects as the quota pages show them (projects, departments, grid, dashboard)
- ``utilization``: GPU utilization: the devices' readers, idle GPUs, GPU-hours, the pools' and nodes' history
- ``whatif``: the what-if check's quota part: within quota, over quota or past a limit
- ``charts``: the data of every chart, in one shape
- ``effects``: what a config change would move before it is saved: nodes, GPUs, workloads, quota warnings
- ``membership``: who belongs to which department and project, the roles it gives, the My projects view
- ``topology``: capacity by topology: the gangs of GPUs a pool can start, per level and shape

Every function that returns user-facing data takes ``user=`` (``accounts.access.SYSTEM`` for tasks and the
operator's ``poolctl``) and reads through the models' ``restrict``. Callers import the package
(``from pools import selectors``); the numbers shown anywhere come from here, never from a caller's own sums.
"""

from .access import profile_pools, role_check, role_definitions, role_reach, roles_visible
from .capacity import (
    NodeGroup,
    every_pool,
    gpu_product_usage,
    node_based_pools,
    node_groups,
    pool_gpu_summary,
    pool_list,
    pool_node_summary,
    pool_totals,
    pool_usage_where,
    summary_products,
    usage_samples_visible,
    usage_series,
)
from .charts import (
    NO_SOURCE,
    chart_window,
    node_gpus_chart,
    pool_usage_chart,
    pool_utilization_chart,
    quota_usage_chart,
)
from .configs import (
    ConfigState,
    config_diff,
    config_history,
    config_object,
    config_objects,
    config_revision_get,
    config_show,
    config_state,
    describe_change,
    document_list,
    pod_templates_visible,
    pools_using,
    redacted,
    resource_validations_visible,
    revision_changes,
    revision_summary,
    snapshot_diff,
)
from .effects import ChangePlacements, change_placements, config_change_effect, hidden_nodes_would_move
from .estimates import estimate_accuracy
from .gpuctl import (
    gpuctl_node_detail,
    gpuctl_nodes,
    gpuctl_pool_detail,
    gpuctl_pools,
    label_pool_backends,
    node_labels,
    pool_jobs,
)
from .inventory import (
    HiddenNodes,
    NodeTableRow,
    backend_get,
    backend_health,
    backends_to_sync,
    backends_to_watch,
    backends_visible,
    hidden_nodes,
    hidden_nodes_moved,
    label_pool_node_choices,
    memberships_visible,
    node_details,
    node_filter_choices,
    node_mig_usage,
    node_table_page,
    node_usage,
    nodes_visible,
    pods_visible,
    pool_check,
    pool_names_visible,
    pool_platform_names,
    pool_workloads,
    resource_index,
    resource_list,
    resource_numbers,
    resource_rows,
    sync_progress,
    utilization_read_at,
    what_if_choices,
)
from .membership import forget_memberships, has_units, membership_roles, my_projects, projects_of, units_of
from .nodepools import NODE_POOL_SUMS, node_pool_list
from .overview import pool_overview
from .pools import (
    DEFAULT_PLATFORM,
    draft_preview,
    draft_render,
    platform_selection_specs,
    platform_template_names,
    platform_validation_names,
    platform_variables,
    platforms_visible,
    pool_filter_choices,
    pool_form_choices,
    pool_get,
    pool_platform_choice,
    pool_platform_render,
    pool_platform_views,
    pool_platforms,
    pool_render,
    pool_status,
    pools_visible,
)
from .project_usage import fair_share_what_if, project_usage, project_usage_minutes
from .quotas import (
    departments_queryset,
    departments_visible,
    project_allocations,
    projects_queryset,
    projects_visible,
    quota_figures,
    quota_reclaim,
    quota_report,
    quota_simulate,
    quota_warnings,
)
from .topology import pool_capacity, pool_capacity_of
from .units import (
    department_table,
    departments_managed,
    project_table,
    quota_dashboard,
    quota_grid,
    quota_pool_totals,
    quota_series,
    unit_editor,
)
from .utilization import (
    GPU_HOURS_COLUMNS,
    IDLE_WORKLOAD_COLUMNS,
    PERIODS,
    Device,
    SimulatedInputs,
    Workload,
    WorkloadContext,
    consumption_report,
    exporter_devices,
    gpu_workloads,
    idle_gpus_by_pool,
    idle_workloads,
    node_gpus,
    node_replicas,
    node_utilization_series,
    pool_utilization,
    pool_utilization_latest,
    prometheus_client,
    prometheus_devices,
    prometheus_readings,
    simulated_devices,
    simulated_inputs,
    utilization_series,
    utilization_source,
    workload_context,
)
from .verdicts import (
    judged_verdicts,
    pending_verdicts,
    pending_workload_counts,
    pool_waiting_summary,
    pools_of_nodes,
    request_verdict,
    verdict_round_fresh,
)
from .whatif import project_quota_check
from .workloads import WorkloadRows, workload_get, workloads_visible
