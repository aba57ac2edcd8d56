"""Data the web console tests build: pools shaped like the demo's."""

from __future__ import annotations

import copy

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType


def add_team_pools(*names: str) -> None:
    """Pools shaped like the demo's ``team-development`` (same backend and templates), under other names."""
    shown = selectors.config_show(user=SYSTEM, config_type=ConfigType.POOL, name="team-development")
    body = copy.deepcopy(shown["team-development"])
    services.config_apply(
        changes={ConfigType.POOL: {name: {**body, "description": f"{name} pool"} for name in names}},
        actor=services.Actor.system("tester"),
    )
