"""One error-to-status map for every HTTP door, pages and API alike: what a refusal of the gate, a service or a
selector answers."""

from __future__ import annotations

from .engine.errors import AccessDenied, ConfigError, Conflict, EngineError, NotFound, Stale
from .inventory.records import InventoryError

# In order: the first class an error is an instance of decides (NotFound and the others are ConfigErrors).
STATUS_OF = (
    (NotFound, 404),
    (Stale, 412),
    (Conflict, 409),
    (AccessDenied, 403),
    (ConfigError, 400),
    (EngineError, 400),
    (InventoryError, 503),  # the cluster could not be read or written: nothing was changed
)


def status_of(error: Exception) -> int | None:
    """The HTTP status a door answers for ``error``, or None for an error that is a bug (a 500, logged)."""
    for kind, status in STATUS_OF:
        if isinstance(error, kind):
            return status
    return None
