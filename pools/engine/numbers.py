"""Numbers as people type them, read once and bounded before any arithmetic (SEMANTICS §7.4).

Every door that takes a number as text (a quota-grid cell, ``--gpu-deserved``, ``?limit=``, a form field) reads
it here. The text itself is checked first, digits and exponent counted, so ``1e999999999`` is refused in
microseconds: turning it into a ``Decimal`` is cheap, but any arithmetic on it (``int(value)``, a comparison
with a float, a quantize) would build a billion-digit number and stop the process for minutes.
"""

from __future__ import annotations

import re
from decimal import Decimal

from .errors import ConfigError

# At most 18 digits before and 18 after the point, an exponent of at most 3 digits: every figure the product
# keeps (GPUs, CPU cores, MiB, weights, priorities) fits with room to spare, and nothing here is costly.
_NUMBER = re.compile(r"[+-]?(?P<whole>[0-9]{1,18})?(?:\.(?P<fraction>[0-9]{1,18}))?(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
MAX_TEXT = 48
# Beyond this no figure of the product means anything; a bound the arithmetic below never exceeds.
DEFAULT_BOUND = Decimal(10) ** 18


def parse_number(
    text: str,
    *,
    field: str = "",
    minimum: Decimal | int | None = None,
    maximum: Decimal | int | None = None,
    whole: bool = False,
) -> int | float:
    """``text`` as a number: an ``int`` when it is whole, else a ``float``.

    Raises ``ConfigError`` naming ``field`` for text that is not a plain decimal number (``12``, ``-1``, ``0.5``,
    ``2e3``), for ``whole`` numbers with a fraction, and for a value outside ``minimum``..``maximum`` (by default
    ±10^18). No value is ever converted before its text has been bounded.
    """
    value = str(text).strip()
    match = _NUMBER.fullmatch(value) if len(value) <= MAX_TEXT else None
    if match is None or (match["whole"] is None and match["fraction"] is None):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ConfigError(f"'{shown}' is not a number", field=field)
    number = Decimal(value)
    low = Decimal(minimum) if minimum is not None else -DEFAULT_BOUND
    high = Decimal(maximum) if maximum is not None else DEFAULT_BOUND
    # The exponent is at most 999, so this comparison costs nothing; the bound makes everything after it cheap.
    if not low <= number <= high:
        raise ConfigError(f"must be a number from {_plain(low)} to {_plain(high)}", field=field)
    if number == number.to_integral_value():
        return int(number)
    if whole:
        raise ConfigError("must be a whole number", field=field)
    return float(number)


def _plain(value: Decimal) -> str:
    return f"{value:f}" if value == value.to_integral_value() and abs(value) < 10**9 else f"{value:g}"
