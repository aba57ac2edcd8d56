"""Who makes a change: whose permissions the gate checks, and the name and door recorded on the revision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accounts.access import SYSTEM as SYSTEM_PRINCIPAL
from pools.choices import ChangeOrigin


@dataclass(frozen=True)
class Actor:
    """Who makes a change and through which door.

    ``principal`` is whom the gate asks (a user, or ``accounts.access.SYSTEM``, which may do everything);
    ``username`` and ``origin`` are what the revision or audit row records.
    """

    username: str
    origin: str
    principal: Any

    @classmethod
    def of(cls, user, origin: str) -> Actor:
        """A person or service account acting through ``origin`` (web, API, admin, ``poolctl --as``)."""
        return cls(user.get_username(), origin, user)

    @classmethod
    def system(cls, username: str = "system", origin: str = ChangeOrigin.SYSTEM) -> Actor:
        """The product itself, or an operator on the server: no permission is checked, ``username`` is recorded."""
        return cls(username, origin, SYSTEM_PRINCIPAL)


SYSTEM = Actor.system()
