"""Deterministic randomness for the fleets: keyed 64-bit hashes, a cheap random stream, ids and timestamps.

Everything is a function of its key (strings and numbers), never of the process: no ``hash()`` (it depends on
PYTHONHASHSEED) and no shared generator whose state would depend on what was asked before.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

MASK = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15
C1 = 0xBF58476D1CE4E5B9
C2 = 0x94D049BB133111EB

# The fleets' "now" when nothing else says: node creation times lie before it.
BASE_TIME = int(datetime(2025, 11, 21, 9, 0, tzinfo=UTC).timestamp())

SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses for generated names


def mix(x: int) -> int:
    """splitmix64's finalizer: a well-spread 64-bit hash of a 64-bit integer."""
    x &= MASK
    x = ((x ^ (x >> 30)) * C1) & MASK
    x = ((x ^ (x >> 27)) * C2) & MASK
    return x ^ (x >> 31)


def key(*parts: object) -> int:
    """A stable 64-bit key of strings and numbers."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def uid(x: int, y: int) -> str:
    """A version-4 UUID made of two 64-bit numbers."""
    h = f"{x & MASK:016x}{y & MASK:016x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def suffix(x: int, length: int = 5) -> str:
    """A generated-name suffix (``kube-proxy-x7k2q``) from the bits of ``x``."""
    return "".join(SUFFIX_ALPHABET[(x >> (6 * i)) % 27] for i in range(length))


class Stream:
    """A small deterministic random stream (splitmix64): cheaper to seed than ``random.Random``."""

    __slots__ = ("state",)

    def __init__(self, *parts: object):
        self.state = key(*parts)

    def bits(self) -> int:
        self.state = (self.state + GOLD) & MASK
        return mix(self.state)

    def randint(self, low: int, high: int) -> int:
        return low + self.bits() % (high - low + 1)

    def random(self) -> float:
        """A float in [0, 1)."""
        return (self.bits() >> 11) / 2**53

    def choice(self, options):
        return options[self.bits() % len(options)]

    def uid(self) -> str:
        return uid(self.bits(), self.bits())

    def hex(self, digits: int) -> str:
        return "".join(f"{self.bits():016x}" for _ in range((digits + 15) // 16))[:digits]

    def weighted(self, options: tuple[tuple[int, float], ...], limit: int) -> int:
        """One of the option values not above ``limit``, with probability proportional to its weight."""
        table = _WEIGHT_TABLES.get((id(options), limit))
        if table is None:
            allowed = [(value, weight) for value, weight in options if value <= limit]
            total = sum(weight for _, weight in allowed)
            table = _WEIGHT_TABLES[(id(options), limit)] = [(value, weight / total) for value, weight in allowed]
        point = self.random()
        for value, share in table:
            point -= share
            if point < 0:
                return value
        return table[-1][0]


_WEIGHT_TABLES: dict[tuple[int, int], list[tuple[int, float]]] = {}  # by (id of a module-level options tuple, limit)

_HOURS: dict[int, str] = {}
_MINUTES_SECONDS = [f"{second // 60:02d}:{second % 60:02d}Z" for second in range(3600)]


def iso(seconds: float) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes timestamps (cached by hour: this is hot)."""
    hour, rest = divmod(int(seconds), 3600)
    prefix = _HOURS.get(hour)
    if prefix is None:
        if len(_HOURS) > 100_000:
            _HOURS.clear()
        prefix = _HOURS[hour] = datetime.fromtimestamp(hour * 3600, UTC).strftime("%Y-%m-%dT%H:")
    return prefix + _MINUTES_SECONDS[rest]


def parse_iso(value: object) -> int | None:
    """Seconds since the epoch of an RFC 3339 timestamp, or None."""
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp())
