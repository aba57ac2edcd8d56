"""The overview: every visible pool with its figures, their totals, the filters' choices and the longest-idle
workloads, from one read of the pools and one decision of what the user may see."""

from __future__ import annotations

from collections.abc import Mapping

from accounts import access

from ..engine.permissions import VIEW_POOL
from .capacity import every_pool, pool_list, pool_totals
from .utilization import idle_workloads


def pool_overview(*, user, filters: Mapping | None = None, idle: bool = True) -> dict:
    """What the overview shows ``user``: ``rows`` (``pool_list`` with summaries, filtered), ``totals`` (each node set
    once), ``backends`` (the backend filter's choices: those of the pools they may see) and, with ``idle``,
    ``idle_rows`` (the workloads holding idle GPUs in those pools, longest idle first). Eight queries with the
    session's, whatever the number of pools."""
    every = every_pool()
    rows = pool_list(user=user, filters=filters, with_summary=True, every=every)
    seen = set(access.visible(user, VIEW_POOL, [pool["name"] for pool in every]))
    overview = {
        "rows": rows,
        "totals": pool_totals(rows),
        "backends": sorted({pool["backend__name"] for pool in every if pool["name"] in seen}),
    }
    if idle:
        pools = [(pool["backend_id"], pool["name"]) for pool in every]
        overview["idle_rows"] = idle_workloads(user=user, pools=pools)
    return overview
