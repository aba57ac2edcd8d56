"""How figures read as text, the same on the pages, in the exports' text and in ``poolctl``."""

from __future__ import annotations

from typing import Any

BYTE_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def count(value) -> str:
    """A whole number with thousands separators (1234 → 1,234); fractions keep up to two decimals; ``—`` unknown."""
    if value is None or value == "":
        return "—"
    number = float(value)
    if number.is_integer():
        return f"{int(number):,}"
    return f"{number:,.2f}".rstrip("0").rstrip(".")


def size(value) -> str:
    """Bytes for people: 1.25 TiB, 48 GiB, 512 MiB (up to two decimals); 0 B for nothing."""
    if value is None or value == "":
        return "—"
    number = int(value)
    for unit, scale in BYTE_UNITS:
        if abs(number) >= scale:
            return f"{count(number / scale)} {unit}"
    return f"{number} B"


def mib(value) -> str:
    """An amount of MiB for people: ``812 MiB``, ``79.6 GiB``, ``1.2 TiB``."""
    if value is None or value == "":
        return "—"
    value = float(value)
    for unit, factor in (("TiB", 1024 * 1024), ("GiB", 1024)):
        if value >= factor:
            return f"{value / factor:,.1f} {unit}"
    return f"{value:,.0f} MiB"


def percent(value) -> str:
    """A percentage (37.46) for people: ``37 %``; ``—`` when unknown."""
    if value is None or value == "":
        return "—"
    return f"{float(value):.0f} %"


def share(value) -> str:
    """A share (0.2546) as a percentage with one decimal: ``25.5 %``; ``—`` when unknown."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.1f} %"


def human_duration(seconds) -> str:
    """A time span for people: 45s, 12m, 3h 5m, 2d 4h (``—`` when unknown)."""
    if seconds is None or seconds == "":
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours == 0:
        return f"{minutes}m"
    if days == 0:
        return f"{hours}h {minutes % 60}m" if minutes % 60 else f"{hours}h"
    return f"{days}d {hours % 24}h" if hours % 24 else f"{days}d"


def kubectl_duration(seconds: int | None) -> str:
    """A time as kubectl's ``HumanDuration`` prints it, two units at most: ``45s``, ``12m``, ``3h5m``, ``2d4h``."""
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        hours, minutes = divmod(seconds // 60, 60)
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(seconds // 3600, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


def kubectl_age(seconds: int | None) -> str:
    """An age as kubectl's ``get`` prints it: ``45s``, ``12m``, ``5h``, ``3d``."""
    if seconds is None:
        return "-"
    seconds = max(0, seconds)
    for unit, scale in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= scale:
            return f"{seconds // scale}{unit}"
    return f"{seconds}s"


def amount(value: Any) -> str:
    """A GPU amount as planners read it: ``-1`` stays ``-1``, whole numbers without a point, else up to 4 places."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        value = float(value)
    return str(value) if isinstance(value, int) else f"{value:.4f}".rstrip("0").rstrip(".")


def deserved(value) -> str:
    """A quota's deserved GPUs for people: ``all`` for -1 (the whole amount being divided), else ``count``."""
    return "all" if value == -1 else count(value)


def limit(value) -> str:
    """A quota's limit for people: ``no limit`` for -1, else ``count`` (``0`` is a limit of none at all)."""
    return "no limit" if value == -1 else count(value)


def weight(value) -> str:
    """An over-quota weight for people: always the number (Run:ai's Medium is ``2``); ``no over-quota`` for None."""
    return "no over-quota" if value is None else count(value)


def quota_terms(row: dict) -> str:
    """A quota in one line: ``4 deserved · limit 8 · weight 2``, ``all deserved · no limit · no over-quota``."""
    capped = limit(row["limit"]) if row["limit"] == -1 else f"limit {limit(row['limit'])}"
    shared = (
        weight(row["over_quota_weight"])
        if row["over_quota_weight"] is None
        else f"weight {weight(row['over_quota_weight'])}"
    )
    return f"{deserved(row['deserved'])} deserved · {capped} · {shared}"


def fraction(pair: dict) -> str:
    """``used/capacity``."""
    return f"{pair['used']}/{pair['capacity']}"


def hours(value: float) -> str:
    """GPU-hours with two decimals."""
    return f"{value:.2f}"


def dash(value: Any) -> str:
    """``-`` for nothing (``poolctl``'s empty cell), else the value as text."""
    return str(value) if value not in (None, "", [], ()) else "-"
