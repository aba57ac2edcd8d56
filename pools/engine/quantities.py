"""Kubernetes quantities (``500m``, ``8Gi``, ``1.5k``) and human durations (``1h30m``, ``PT2H``).

Quantities follow Kubernetes exactly, which is where OSMO goes wrong (SEMANTICS §3): ``k M G T P E`` are
powers of 1000, ``Ki Mi Gi Ti Pi Ei`` powers of 1024, ``m`` is a thousandth (so ``500m`` CPU is 0.5) and
``e3``/``E3`` is a decimal exponent. Values are ``Decimal`` so that byte counts and millicores stay exact.
"""

import datetime
import functools
import math
import re
from decimal import Context, Decimal

from .errors import DurationError, QuantityError

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}

# The exponent alternative is tried before the SI letters so that "1E3" is 1000 while "1E" alone is exa.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))",
    re.ASCII,
)

# Bounds keep every parsed value exact under _EXACT (no rounding ever happens) and stop a hostile
# "1e999999999" from turning into a number nobody can print.
_MAX_QUANTITY_LENGTH = 256
_MAX_EXPONENT = 64
_EXACT = Context(prec=400)


def _not_a_quantity(value: object) -> QuantityError:
    text = value if isinstance(value, str) else repr(value)
    return QuantityError(f"'{text}' is not a quantity")


def parse_quantity(value: str | float | Decimal) -> Decimal:
    """Return the exact value of a Kubernetes quantity.

    Accepts a string (surrounding whitespace ignored) such as ``8Gi``, ``500m``, ``1.5k``, ``-2``, ``1e3``,
    or an int, finite float or finite Decimal. ``True``/``False`` are not quantities. Raises
    ``QuantityError`` for anything else.
    """
    if isinstance(value, bool):
        raise _not_a_quantity(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise _not_a_quantity(value)
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _not_a_quantity(value)
        # repr gives the shortest string that reads back as the same float: 0.1 -> Decimal("0.1").
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise _not_a_quantity(value)
    return _parse_text(value)


@functools.lru_cache(maxsize=8192)
def _parse_text(value: str) -> Decimal:
    # Cached: a cluster repeats a few hundred spellings ("4", "32Gi", "500m") across every pod it has.
    text = value.strip()
    match = _QUANTITY.fullmatch(text) if len(text) <= _MAX_QUANTITY_LENGTH else None
    if match is None:
        raise _not_a_quantity(value)
    number = Decimal(match["number"])
    if match["sign"] == "-":
        number = number.copy_negate()
    if match["binary"]:
        return _without_positive_exponent(_EXACT.multiply(number, Decimal(1024) ** _BINARY_SUFFIXES[match["binary"]]))
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"'{value}' is not a quantity (exponent out of range)")
    else:
        exponent = _DECIMAL_SUFFIXES[match["decimal"]]
    return _without_positive_exponent(_EXACT.scaleb(number, exponent))


def _without_positive_exponent(value: Decimal) -> Decimal:
    # Decimal("1E+9") equals 1000000000 but prints in scientific notation; whole numbers should print whole.
    if value.as_tuple().exponent > 0:
        return value.quantize(Decimal(1), context=_EXACT)
    return value


def format_quantity(value: Decimal | int) -> str:
    """Return a canonical string for ``value`` that ``parse_quantity`` reads back to the same number.

    Whole numbers use the shortest of their plain, binary-suffixed (``8Gi``) and SI-suffixed (``2G``) spellings,
    binary first on a tie; fractions that are whole in milli/micro/nano use that suffix (``500m``); anything
    else is a plain decimal without exponent.
    """
    try:
        value = parse_quantity(value)
    except QuantityError:
        raise QuantityError(f"'{value}' cannot be formatted as a quantity") from None
    if value == value.to_integral_value():
        integer = int(value)
        spellings = [str(integer)]
        if integer:
            spellings += [
                f"{integer // 1024**power}{suffix}"
                for suffix, power in _BINARY_SUFFIXES.items()
                if integer % 1024**power == 0
            ]
            spellings += [
                f"{integer // 10**power}{suffix}"
                for suffix, power in _DECIMAL_SUFFIXES.items()
                if power > 0 and integer % 10**power == 0
            ]
        # min() keeps the first of equally short spellings; the list is plain, then binary, then SI.
        return min(spellings, key=len)
    for suffix in ("m", "u", "n"):
        scaled = _EXACT.scaleb(value, -_DECIMAL_SUFFIXES[suffix])
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return format(value, "f")


# Digits are ASCII only: str.isdigit() and \d also accept "²" or "٣", which int() then refuses or misreads.
_COMPACT_DURATION = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", re.ASCII)
_ISO_DURATION = re.compile(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.ASCII)
_SECONDS = re.compile(r"[0-9]+", re.ASCII)
_MAX_DURATION_LENGTH = 64


def parse_duration(value: str | int) -> datetime.timedelta:
    """Return the timedelta of a duration such as ``30d``, ``2h``, ``1h30m``, ``10s``, ``PT2H`` or ``P2W``.

    A plain non-negative integer (or a string of digits) means seconds. ISO-8601 years and months are
    refused because they have no fixed length. Raises ``DurationError`` naming the value otherwise.
    """
    if isinstance(value, bool):
        raise DurationError(f"'{value}' is not a duration")
    if isinstance(value, int):
        if value < 0:
            raise DurationError(f"'{value}' is not a duration (it is negative)")
        return _timedelta(value, seconds=value)
    if not isinstance(value, str):
        raise DurationError(f"'{value!r}' is not a duration")
    text = value.strip()
    if len(text) > _MAX_DURATION_LENGTH:
        raise DurationError(f"'{text[:20]}…' is not a duration (it is longer than {_MAX_DURATION_LENGTH} characters)")
    if _SECONDS.fullmatch(text):
        return _timedelta(value, seconds=int(text))
    match = None
    if text[:1] in ("P", "p"):
        iso = text.upper()
        # "P" or "PT" alone match the pattern with every group empty; they are not durations.
        if iso not in ("P", "PT") and not iso.endswith("T"):
            match = _ISO_DURATION.fullmatch(iso)
    elif text:
        match = _COMPACT_DURATION.fullmatch(text.lower())
    if match is None or not any(match.groups()):
        raise DurationError(
            f"'{value}' is not a duration (use e.g. 30d, 2h, 1h30m, 10s or an ISO-8601 duration like PT2H)"
        )
    weeks, days, hours, minutes = (int(group or 0) for group in match.groups()[:4])
    return _timedelta(value, weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=float(match[5] or 0))


def _timedelta(value: object, **parts: float) -> datetime.timedelta:
    try:
        return datetime.timedelta(**parts)
    except OverflowError:
        raise DurationError(f"'{value}' is too long a duration") from None


def format_duration(value: datetime.timedelta) -> str:
    """Return a compact string (``2h``, ``1d12h``, ``30s``, ``0s``) that ``parse_duration`` reads back."""
    if value < datetime.timedelta(0):
        return "-" + format_duration(-value)
    days, remainder = value.days, value.seconds
    hours, remainder = divmod(remainder, 3600)
    minutes, seconds = divmod(remainder, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    if value.microseconds:
        fraction = f"{value.microseconds:06d}".rstrip("0")
        parts.append(f"{seconds}.{fraction}s")
    elif seconds:
        parts.append(f"{seconds}s")
    return "".join(parts) or "0s"
