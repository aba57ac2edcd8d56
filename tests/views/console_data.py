"""Data the web console tests build: pools shaped like the demo's, and the forms a browser posts."""

from __future__ import annotations

import copy

from accounts.access import SYSTEM
from pools import configs, selectors, services
from pools.choices import ConfigType
from pools.forms import PoolForm
from pools.models import Pool


def add_team_pools(*names: str) -> None:
    """Pools shaped like the demo's ``team-development`` (same backend and templates), under other names."""
    shown = selectors.config_show(user=SYSTEM, config_type=ConfigType.POOL, name="team-development")
    body = copy.deepcopy(shown["team-development"])
    services.config_apply(
        changes={ConfigType.POOL: {name: {**body, "description": f"{name} pool"} for name in names}},
        actor=services.Actor.system("tester"),
    )


def pool_form_data(pool_name: str, /, **changes) -> dict:
    """The pool's edit form as a browser posts it back unchanged, with ``changes`` over it."""
    initial = PoolForm.initial_from_body(pool_name, configs.pool_body(Pool.objects.get(name=pool_name)))
    data = {
        field: ", ".join(value) if isinstance(value, list) else value
        for field, value in initial.items()
        if value is not None and value is not False
    }
    return {**data, **changes}
