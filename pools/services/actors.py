"""Who makes a change: recorded on every revision and audit entry."""

from dataclasses import dataclass

from pools.choices import ChangeOrigin


@dataclass(frozen=True)
class Actor:
    """Who makes a change and through which door; recorded on every revision."""

    username: str = ""
    origin: str = ChangeOrigin.SYSTEM


SYSTEM = Actor("system", ChangeOrigin.SYSTEM)
