"""The tables of the inventory: the node table (the nodes page, ``/api/resources/``, ``poolctl resource list``)
and gpuctl's ``get nodes``."""

from __future__ import annotations

from . import cells
from .base import CLI, CSV, PAGE, Column, Table
from .formats import count, dash, fraction, kubectl_age


def _figure(kind: str, part: str):
    return lambda row: row[kind][part]


def _status_text(row: dict) -> str:
    return row["status"] if row["status"] == "available" else f"{row['status']} ({row['reason']})"


def _mig_text(row: dict) -> str:
    """A node's MIG slices by profile, as the page shows them: ``1g.10gb 3/7; 3g.40gb 0/2``."""
    return "; ".join(
        f"{profile} {count(slices['used'])}/{count(slices['capacity'])}" for profile, slices in row["mig"].items()
    )


RESOURCES = Table(
    "nodes",
    (
        Column("node", "Node", html=cells.node_cell),
        Column("backend", "Backend", where=frozenset({CSV})),
        Column("pool", "Pool", text=dash, where=frozenset({CSV, CLI})),
        Column("platform", "Platform", text=dash, where=frozenset({CSV, CLI})),
        Column("placement", "Pool / platform", html=cells.placement_cell, where=frozenset({PAGE})),
        Column("type", "Type", html=cells.type_cell),
        Column("status", "Status", value=_status_text, where=frozenset({CLI})),
        Column("status", "Status", html=cells.node_status_cell, where=frozenset({PAGE, CSV})),
        Column("gpu_product", "GPU product", html=cells.product_cell, where=frozenset({PAGE, CSV})),
        *(
            Column(f"{kind}_{part}", f"{kind} {part}", value=_figure(kind, part), numeric=True, where=frozenset({CSV}))
            for kind in ("gpu", "cpu", "memory_gi")
            for part in ("used", "capacity")
        ),
        Column("mig", "MIG slices used/capacity", value=_mig_text, where=frozenset({CSV})),
        Column("gpu", "GPU [#]", text=fraction, where=frozenset({CLI})),
        Column("cpu", "CPU [#]", text=fraction, where=frozenset({CLI})),
        Column("memory_gi", "Memory [Gi]", text=fraction, where=frozenset({CLI})),
        Column("storage_gi", "Storage [Gi]", text=fraction, where=frozenset({CLI})),
        Column("gpu", "GPU", html=cells.gpu_cell, numeric=True, where=frozenset({PAGE})),
        Column("cpu", "CPU", html=cells.pair_cell("cpu"), numeric=True, where=frozenset({PAGE})),
        Column(
            "memory_gi", "Memory GiB", html=cells.pair_cell("memory_gi", count), numeric=True, where=frozenset({PAGE})
        ),
        Column("reason", "Reason", where=frozenset({CSV})),
        Column("labels", "Labels and taints", html=cells.node_tags_cell, where=frozenset({PAGE})),
    ),
    empty="No nodes.",
)


GPUCTL_NODES = Table(
    "gpuctl-nodes",
    (
        Column("name", "NODE NAME", width=17),
        Column("status", "STATUS", width=13),
        Column("gpu_total", "GPU TOTAL", width=11),
        Column("gpu_used", "GPU USED", width=10),
        Column("gpu_free", "GPU FREE", width=10),
        Column("gpu_type", "GPU TYPE", text=dash, width=14),
        Column("ip", "IP", text=dash, width=17),
        Column("pools", "POOL", text=lambda pools: ",".join(pools) or "-"),
    ),
    empty="",
    style="gpuctl",
)


# Usage samples as ``/api/usage/?format=csv`` writes them (the API's fields of a sample).
USAGE_SAMPLES = Table(
    "usage",
    tuple(
        Column(key, key, numeric=key in ("used", "capacity", "quota_used", "quota_limit"))
        for key in ("scope", "key", "backend", "resolution", "at", "used", "capacity", "quota_used", "quota_limit")
    ),
)


# gpuctl's ``describe pool``'s and ``describe node``'s tables.
GPUCTL_POOL_NODES = Table(
    "gpuctl-pool-nodes",
    (
        Column("name", "NODE NAME", width=17),
        Column("status", "STATUS", width=13),
        Column("gpus", "GPU USED/TOTAL", value=lambda node: f"{node['gpu_used']}/{node['gpu_total']}", width=16),
        Column("gpu_type", "GPU TYPE", text=dash),
    ),
    empty="  (none)",
    style="gpuctl",
)
GPUCTL_JOBS = Table(
    "gpuctl-jobs",
    (
        Column("namespace", "NAMESPACE", width=14),
        Column("name", "NAME", width=24),
        Column("user", "USER", text=dash, width=12),
        Column("gpu", "GPUS", width=6),
        Column("phase", "PHASE", width=10),
        Column("age_seconds", "AGE", text=kubectl_age),
    ),
    empty="  (none)",
    style="gpuctl",
)
GPUCTL_NODE_PODS = Table(
    "gpuctl-node-pods",
    (
        Column("namespace", "NAMESPACE", width=14),
        Column("name", "NAME", width=24),
        Column("phase", "PHASE", width=10),
        Column("gpu", "GPUS", width=6),
        Column("age_seconds", "AGE", text=kubectl_age),
    ),
    empty="  (none)",
    style="gpuctl",
)


def _changes(counts: dict) -> str:
    return "+{created} ~{updated} -{deleted}".format(**counts)


# ``poolctl backend sync``: what each backend's sync found and changed.
SYNC_RESULTS = Table(
    "syncs",
    (
        Column("backend", "Backend"),
        Column("nodes", "Nodes", numeric=True),
        Column("pods", "Pods", numeric=True),
        Column("warnings", "Warnings", numeric=True),
        Column("nodes_changed", "Node changes", text=_changes),
        Column("pods_changed", "Pod changes", text=_changes),
    ),
    empty="",
)


def _when(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"


def _sync_holder(row: dict) -> str:
    """Who syncs the backend now (its sync lease's holder, ``host:pid:thread``), since when and until when."""
    if not row.get("sync_holder"):
        return ""
    return f"{row['sync_holder']} since {_when(row['sync_since'])}, lease until {_when(row['sync_expires'])}"


def _node_counts(counts: dict) -> str:
    return ", ".join(f"{count} {status}" for status, count in counts.items() if count) or "0"


# The backends with their sync health: the backends page's exports and ``poolctl backend list``.
BACKENDS = Table(
    "backends",
    (
        Column("name", "Backend"),
        Column("kind", "Kind"),
        Column("status", "Status", value=lambda row: str(row["status"])),
        Column("last_heartbeat", "Last contact (UTC)", text=_when),
        Column("last_sync_at", "Last sync (UTC)", text=_when),
        Column("last_sync_duration", "Sync seconds", text=lambda value: "-" if value is None else f"{value:.2f}"),
        Column("available_nodes", "Available nodes", value=lambda row: row["nodes"]["available"], numeric=True),
        Column("nodes", "Nodes", text=_node_counts, where=frozenset({CLI})),
        Column("last_sync_error", "Last error", text=dash),
        Column("sync_holder", "Syncing now", value=_sync_holder, text=dash),
        Column("utilization_source", "Utilization from", text=dash),
    ),
    empty="No backends.",
)
