"""Quotas per node pool (SEMANTICS §9): the fair-share simulator planners use before they change anything."""

from __future__ import annotations

from collections.abc import Mapping

from ..engine import fairshare


def quota_simulate(document: Mapping) -> dict:
    """KAI's fair-share simulator (§9.1): ``{"capacity", "queues": [...]}`` in, ``{"fair_share": {name: n}}`` out.

    Reads and writes no data, so it needs nothing but a signed-in caller; ``POST /api/quotas/simulate/`` and
    ``poolctl quota simulate`` both answer with it. Bad input raises ``ConfigError`` naming each field.
    """
    return fairshare.simulate(document)
