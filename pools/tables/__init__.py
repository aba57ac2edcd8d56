"""One Table per list, read by its page, its exports, the API's CSV and ``poolctl``: see ``base``.

Callers import the package: ``from pools import tables``; ``tables.POOLS.text(rows)``.
"""

from .access import REVISIONS, USERS
from .base import CLI, CSV, EXPORTS, PAGE, Column, Table, as_json, csv_text, inert
from .inventory import (
    BACKENDS,
    GPUCTL_JOBS,
    GPUCTL_NODE_PODS,
    GPUCTL_NODES,
    GPUCTL_POOL_NODES,
    RESOURCES,
    SYNC_RESULTS,
    USAGE_SAMPLES,
)
from .pools import CONFIG_EFFECT, GPUCTL_POOLS, NODE_POOL_DEFAULT_COLUMNS, NODE_POOL_NUMBERS, NODE_POOLS, POOLS
from .quotas import DEPARTMENTS, PROJECTS, QUOTAS, QUOTAS_WHAT_IF
from .topology import TOPOLOGY_DOMAINS, TOPOLOGY_SHAPES
from .utilization import CONSUMPTION, IDLE
from .workloads import WORKLOADS

__all__ = [
    "BACKENDS",
    "CONFIG_EFFECT",
    "CLI",
    "CONSUMPTION",
    "CSV",
    "DEPARTMENTS",
    "IDLE",
    "PROJECTS",
    "QUOTAS",
    "QUOTAS_WHAT_IF",
    "REVISIONS",
    "USAGE_SAMPLES",
    "USERS",
    "WORKLOADS",
    "EXPORTS",
    "GPUCTL_JOBS",
    "GPUCTL_NODES",
    "GPUCTL_NODE_PODS",
    "GPUCTL_POOL_NODES",
    "GPUCTL_POOLS",
    "NODE_POOLS",
    "NODE_POOL_DEFAULT_COLUMNS",
    "NODE_POOL_NUMBERS",
    "PAGE",
    "POOLS",
    "RESOURCES",
    "SYNC_RESULTS",
    "TOPOLOGY_DOMAINS",
    "TOPOLOGY_SHAPES",
    "Column",
    "Table",
    "as_json",
    "csv_text",
    "inert",
]
