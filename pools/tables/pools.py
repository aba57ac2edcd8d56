"""The tables of pools: the overview (``GET /``, ``/api/pool_quota/``'s CSV, ``poolctl pool list``), Run:ai's
node-pools view, and gpuctl's ``get pools``."""

from __future__ import annotations

from ..choices import NodePoolColumn
from . import cells
from .base import CLI, CSV, PAGE, Column, Table
from .formats import count, size


def _gpu(key: str):
    return lambda row: row["gpu"][key]


def _shares_with(row: dict) -> str:
    others = [name for name in row["node_set"] if name != row["name"]]
    return f"with {', '.join(others)}" if row["shared"] else ""


_GPU_FIGURES = (
    ("quota_used", "Quota Used"),
    ("quota_limit", "Quota Limit"),
    ("quota_free", "Quota Free"),
    ("total_usage", "Total Usage"),
    ("total_capacity", "Total Capacity"),
    ("total_free", "Total Free"),
)

POOLS = Table(
    "pools",
    (
        Column("name", "Pool", html=cells.pool_name_cell),
        Column("status", "Status", html=cells.status_cell),
        Column("backend", "Backend", where=frozenset({CSV, CLI})),
        Column("shared", "Shared", where=frozenset({CSV})),
        Column("node_set", "Node set", csv=" ".join, where=frozenset({CSV})),
        Column("gpu", "GPUs used / capacity", html=cells.gpu_bar_cell, where=frozenset({PAGE})),
        Column("quota", "Quota used / limit", html=cells.quota_cell, numeric=True, where=frozenset({PAGE})),
        *(
            Column(key, heading, value=_gpu(key), numeric=True, where=frozenset({CSV, CLI}))
            for key, heading in _GPU_FIGURES
        ),
        # Beyond OSMO's six: in the CSV and JSON, not in ``pool list``'s text, whose columns are OSMO's.
        Column("used_on_nodes", "Used On Nodes", value=_gpu("used_on_nodes"), numeric=True, where=frozenset({CSV})),
        Column("free_by_platform", "Free GPUs by platform", html=cells.free_by_platform_cell, where=frozenset({PAGE})),
        Column("nodes", "Nodes", html=cells.node_counts_cell, where=frozenset({PAGE})),
        Column("shares_with", "Shared", value=_shares_with, where=frozenset({CLI})),
    ),
    empty="No pools.",
    row_attributes=cells.pool_attributes,
)


# --- Run:ai's node-pools view ----------------------------------------------------------------------------------

# Columns counted (right-aligned as numbers); memory in bytes, shown in GiB/TiB.
NODE_POOL_NUMBERS = {
    NodePoolColumn.NODES,
    NodePoolColumn.GPU_DEVICES,
    NodePoolColumn.GPU_MEMORY,
    NodePoolColumn.ALLOCATED_GPUS,
    NodePoolColumn.CPUS,
    NodePoolColumn.CPU_MEMORY,
    NodePoolColumn.ALLOCATED_CPUS,
    NodePoolColumn.ALLOCATED_CPU_MEMORY,
    NodePoolColumn.WORKLOADS,
}
_MEMORY = {NodePoolColumn.GPU_MEMORY, NodePoolColumn.CPU_MEMORY, NodePoolColumn.ALLOCATED_CPU_MEMORY}


def _utc(value) -> str:
    from datetime import UTC

    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _node_pool_column(column: NodePoolColumn) -> Column:
    """A column of the node-pools table as people read it: memory in GiB/TiB, GPUs and CPUs with up to two
    decimals, times in UTC; the page and the CSV show the same text (the CSV's header is the heading)."""
    heading = str(column.label)
    if column in _MEMORY:
        return Column(column, heading, text=size, csv=size, numeric=True)
    if column in NODE_POOL_NUMBERS:
        return Column(column, heading, text=count, csv=count, numeric=True)
    if column in (NodePoolColumn.LAST_UPDATE, NodePoolColumn.CREATION_TIME):
        return Column(column, heading, text=_utc, csv=_utc, html=cells.time_cell(column, _utc))
    if column == NodePoolColumn.DEFAULT:
        yes_no = lambda value: "yes" if value else "no"  # noqa: E731
        return Column(column, heading, text=yes_no, csv=yes_no, html=cells.yes_no_cell(column))
    if column == NodePoolColumn.NODE_POOL:
        return Column(column, heading, html=cells.node_pool_name_cell)
    if column == NodePoolColumn.STATUS:
        return Column(column, heading, html=cells.badge_cell(column))
    if column in (NodePoolColumn.LABEL_KEY, NodePoolColumn.LABEL_VALUE):
        return Column(column, heading, html=cells.code_cell(column))
    return Column(column, heading)


NODE_POOLS = Table(
    "node-pools",
    tuple(_node_pool_column(column) for column in NodePoolColumn),
    empty="No pools.",
    row_attributes=cells.node_pool_attributes,
)
# The columns a first visit shows; the others are a checkbox away (``?columns=``). The pool's name is always in.
NODE_POOL_DEFAULT_COLUMNS = (
    NodePoolColumn.NODE_POOL,
    NodePoolColumn.STATUS,
    NodePoolColumn.LABEL_KEY,
    NodePoolColumn.LABEL_VALUE,
    NodePoolColumn.NODES,
    NodePoolColumn.GPU_DEVICES,
    NodePoolColumn.GPU_MEMORY,
    NodePoolColumn.ALLOCATED_GPUS,
    NodePoolColumn.CPUS,
    NodePoolColumn.ALLOCATED_CPUS,
    NodePoolColumn.WORKLOADS,
    NodePoolColumn.BACKEND,
)


# --- gpuctl's get pools (SEMANTICS §8.1) -------------------------------------------------------------------------
# gpuctl pads each column to a fixed width (wider when a cell needs it) and has no dashes under the header; the
# widths reproduce its ``get pools`` example exactly.

GPUCTL_POOLS = Table(
    "gpuctl-pools",
    (
        Column("name", "POOL NAME", width=17),
        Column("status", "STATUS", width=9),
        Column("gpu_total", "GPU TOTAL", width=11),
        Column("gpu_used", "GPU USED", width=10),
        Column("gpu_free", "GPU FREE", width=10),
        Column("node_count", "NODE COUNT"),
    ),
    empty="",
    style="gpuctl",
)


# What a config change would move, per pool (``selectors.config_change_effect``): the editor's preview, ``poolctl
# … --dry-run`` and the API's dry run show these rows.
CONFIG_EFFECT = Table(
    "config-effect",
    (
        Column("pool", "Pool"),
        Column("backend", "Backend", where=frozenset({CSV})),
        Column("nodes_in", "Nodes in", value=lambda row: len(row["nodes_in"]), numeric=True),
        Column("nodes_out", "Nodes out", value=lambda row: len(row["nodes_out"]), numeric=True),
        Column("gpus_in", "GPUs in", numeric=True),
        Column("gpus_out", "GPUs out", numeric=True),
        Column("workloads_affected", "Workloads affected", numeric=True),
    ),
    empty="No node would enter or leave a pool.",
)
