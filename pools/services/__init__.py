"""Every write to the pool domain, by concern; callers import from here (``from pools import services``).

- ``config``: config changes, history, rollback, tags, built-ins, generated pool roles
- ``inventory``: membership, full sync, watch events, leases, node labels
- ``usage``: usage samples and their compaction
- ``demo``: the demo of ``make run``
"""

from .actors import SYSTEM, Actor
from .config import (
    builtins_restore,
    config_apply,
    config_delete,
    config_import,
    config_rollback,
    config_tag,
    config_update,
    pool_role_generate,
)
from .demo import demo_install
from .inventory import (
    backend_sync,
    backend_watch,
    lease_acquire,
    lease_release,
    membership_recompute,
    node_label,
    usage_refresh,
    watch_events_apply,
)
from .usage import usage_history_compact, usage_sample_record

__all__ = [
    "SYSTEM",
    "Actor",
    "backend_sync",
    "backend_watch",
    "builtins_restore",
    "config_apply",
    "config_delete",
    "config_import",
    "config_rollback",
    "config_tag",
    "config_update",
    "demo_install",
    "lease_acquire",
    "lease_release",
    "membership_recompute",
    "node_label",
    "pool_role_generate",
    "usage_history_compact",
    "usage_refresh",
    "usage_sample_record",
    "watch_events_apply",
]
