"""Every write to the pool domain, by concern; callers import from here (``from pools import services``).

- ``config``: config changes, history, rollback, tags, built-ins, generated pool roles
- ``inventory``: a backend's full sync and its watch events, through one write path
- ``membership``: where each node belongs (pool, platform) and the sums of its node groups
- ``node_usage``: what pods add to their nodes and pool labels, recomputed or moved by deltas
- ``workload_sums``: each workload's pods added up, recomputed for the workloads a write touched
- ``workload_verdicts``: why each pending workload waits, judged by the worker and kept for the doors
- ``topology_sums``: each pool's available nodes counted by topology domain, kept by the node writes
- ``leases``: one sync, watch or utilization round at a time across every worker
- ``watching``: bounded watches of the live backends, as the Celery task ``watch_backend`` runs them
- ``labels``: gpuctl's label pools and node labels, written to the cluster (all or nothing)
- ``usage``: usage samples and their compaction
- ``utilization``: GPU utilization rounds (Prometheus or the simulated exporter), idle GPUs, GPU-hours
- ``quotas``: departments', projects' and their quotas' writes
- ``access``: pool permissions kept in step with the pools
- ``bulk``: many rows at once (COPY, array upserts), the write primitive of the sync
- ``demo``: the demo of ``make run``
"""

from .access import pool_permissions_sync
from .actors import SYSTEM, Actor
from .config import (
    ABSENT,
    PRESENT,
    Expected,
    Preview,
    authorize_names,
    builtins_restore,
    config_apply,
    config_delete,
    config_import,
    config_rollback,
    config_tag,
    config_update,
    config_write_lock,
    platform_change,
    pool_maintenance_set,
    pool_role_generate,
)
from .demo import demo_history_backfill, demo_install
from .inventory import (
    SyncBusy,
    backend_sync,
    backend_sync_now,
    backend_to_sync,
    backend_watch,
    watch_events_apply,
)
from .labels import PoolBusy, label_pool_apply, label_pool_delete, node_label, writable_backend
from .leases import lease_acquire, lease_owner, lease_release
from .membership import membership_recompute, node_groups_refresh
from .node_usage import usage_refresh
from .project_usage import project_usage_compact, project_usage_record
from .quotas import (
    department_create,
    project_create,
    quota_bulk_preview,
    quota_bulk_set,
    quota_set,
    unit_members_set,
)
from .usage import usage_history_compact, usage_sample_record
from .utilization import (
    UtilizationBusy,
    utilization_backfill,
    utilization_history_compact,
    utilization_record,
    utilization_record_all,
)
from .watching import VerdictJudging, WatchBusy, backend_watch_for, watch_task_seconds
from .workload_runs import start_estimates_keep, workload_runs_compact, workload_runs_record
from .workload_verdicts import workload_verdicts_keep, workload_verdicts_keep_quietly

__all__ = [
    "UtilizationBusy",
    "utilization_backfill",
    "utilization_history_compact",
    "utilization_record",
    "utilization_record_all",
    "ABSENT",
    "PRESENT",
    "SYSTEM",
    "Actor",
    "Expected",
    "Preview",
    "authorize_names",
    "SyncBusy",
    "backend_sync",
    "backend_sync_now",
    "backend_to_sync",
    "backend_watch",
    "backend_watch_for",
    "watch_task_seconds",
    "VerdictJudging",
    "WatchBusy",
    "builtins_restore",
    "PoolBusy",
    "label_pool_apply",
    "label_pool_delete",
    "writable_backend",
    "config_apply",
    "config_delete",
    "config_import",
    "config_rollback",
    "config_tag",
    "config_update",
    "config_write_lock",
    "platform_change",
    "demo_history_backfill",
    "demo_install",
    "department_create",
    "project_create",
    "quota_bulk_preview",
    "quota_bulk_set",
    "quota_set",
    "unit_members_set",
    "lease_acquire",
    "lease_owner",
    "lease_release",
    "membership_recompute",
    "node_groups_refresh",
    "workload_verdicts_keep",
    "workload_verdicts_keep_quietly",
    "node_label",
    "pool_maintenance_set",
    "pool_permissions_sync",
    "pool_role_generate",
    "usage_history_compact",
    "usage_refresh",
    "usage_sample_record",
    "project_usage_record",
    "project_usage_compact",
    "workload_runs_record",
    "workload_runs_compact",
    "start_estimates_keep",
    "watch_events_apply",
]
