"""The tables of departments, projects and their quotas per node pool (SEMANTICS §9): Run:ai's projects and
departments views (their CSV and ``poolctl project|department list``) and the figures per unit and pool
(``poolctl quota list``)."""

from __future__ import annotations

from .base import CLI, CSV, Column, Table
from .formats import amount, share

_QUOTA_TOTALS = (
    Column("node_pools", "NODE POOLS WITH QUOTA", text=lambda pools: ",".join(pools) or "-", csv=",".join),
    Column("gpu_quota", "GPU QUOTA", text=amount, numeric=True),
)
_CPU_MEMORY = (
    Column("cpu_quota", "CPU QUOTA", text=amount, numeric=True),
    Column("memory_quota_mib", "MEMORY QUOTA (MiB)", text=amount, numeric=True),
)
_FIGURES = (
    Column("status", "Status", where=frozenset({CSV})),
    Column("allocated_gpus", "Allocated GPUs", numeric=True, where=frozenset({CSV})),
    Column("allocation_ratio", "GPU allocation ratio", numeric=True, where=frozenset({CSV})),
)

PROJECTS = Table(
    "projects",
    (
        Column("name", "PROJECT"),
        Column("department", "DEPARTMENT"),
        Column("namespaces", "NAMESPACES", csv=",".join, where=frozenset({CLI})),
        _FIGURES[0],
        _QUOTA_TOTALS[0],
        *_FIGURES[1:],
        _QUOTA_TOTALS[1],
        *_CPU_MEMORY,
        Column("workloads", "Workloads", numeric=True, where=frozenset({CSV})),
    ),
    empty="No projects.",
)

DEPARTMENTS = Table(
    "departments",
    (
        Column("name", "DEPARTMENT"),
        Column("projects", "PROJECTS", numeric=True),
        _FIGURES[0],
        _QUOTA_TOTALS[0],
        *_FIGURES[1:],
        _QUOTA_TOTALS[1],
        *_CPU_MEMORY,
        Column("workloads", "Workloads", numeric=True, where=frozenset({CSV})),
    ),
    empty="No departments.",
)


def _unit(row: dict) -> str:
    return f"  {row['unit']}" if row["kind"] == "project" else row["unit"]


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.0%}"


QUOTAS = Table(
    "quotas",
    (
        Column("pool", "POOL"),
        Column("unit", "UNIT", value=_unit),
        Column("department", "DEPARTMENT"),
        Column("deserved", "DESERVED", text=amount, numeric=True),
        Column("limit", "LIMIT", text=amount, numeric=True),
        Column("over_quota_weight", "WEIGHT", text=amount, numeric=True),
        Column("allocated", "ALLOCATED", text=amount, numeric=True),
        Column("pending", "PENDING", text=amount, numeric=True),
        Column("allocation_ratio", "RATIO", text=_ratio, numeric=True),
        Column("over_quota", "OVER QUOTA", text=amount, numeric=True),
        Column("fair_share", "FAIR SHARE", text=amount, numeric=True),
        Column("usage", "USAGE", text=share, numeric=True),
        Column("over_fair_share", "OVER FAIR SHARE", text=amount, numeric=True),
    ),
    empty="No quotas.",
)
# ``quota list`` with a what-if (SEMANTICS §9.3): the fair share now and with the planned k and usage.
QUOTAS_WHAT_IF = Table(
    "quotas-what-if",
    (
        *(QUOTAS.keys[key] for key in ("pool", "unit", "department", "deserved", "over_quota_weight", "allocated")),
        Column("request", "REQUEST", text=amount, numeric=True),
        QUOTAS.keys["fair_share"],
        QUOTAS.keys["usage"],
        Column("what_if_usage", "WHAT-IF USAGE", text=share, numeric=True),
        Column("what_if_fair_share", "WHAT-IF FAIR SHARE", text=amount, numeric=True),
    ),
    empty=QUOTAS.empty,
)
