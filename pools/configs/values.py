"""Values as people type them, on the command line, in a URL or in a form: config types, revision numbers,
``TYPE:REVISION`` references and ``KEY=VALUE`` variables. Each is read in one place and refused with a
``ConfigError`` that names the field.
"""

from __future__ import annotations

import re
from typing import Any

from ..choices import ConfigType
from ..engine.errors import ConfigError
from ..engine.numbers import parse_number

# What the database columns hold (PostgreSQL's integer is 32-bit signed), so a value is refused, not overflowed.
INT32_MAX = 2**31 - 1


INT32_MIN = -(2**31)


_REVISION_NUMBER = re.compile(r"[0-9]{1,10}", re.ASCII)


def parse_config_type(value: str) -> ConfigType:
    """Read a config type as users type it: any case, dashes or underscores (``pod-template``)."""
    key = value.strip().upper().replace("-", "_")
    try:
        return ConfigType(key)
    except ValueError:
        choices = ", ".join(ConfigType.values)
        raise ConfigError(f"unknown config type '{value}'; choose one of {choices}") from None


def variable_value(text: str) -> int | float | str:
    """A variable's value as typed (``--set USER_GPU=2``, the what-if form): a number when it reads as one.

    A number is read by the one number parser (``engine.numbers``: ints for whole numbers, floats otherwise);
    anything else stays the string it is, for the rules to read as a quantity or to refuse.
    """
    value = text.strip()
    try:
        return parse_number(value)
    except ConfigError:
        return value


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (``--set USER_GPU=2``) as variables, their values read by ``variable_value``."""
    values: dict[str, Any] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"'{item}' is not KEY=VALUE")
        values[key] = variable_value(value)
    return values


def parse_revision_number(text: str, field: str) -> int:
    """A revision number as typed (``?revision=3``, ``POOL:3``): ASCII digits, from 1 to what the column holds.

    Raises ``ConfigError`` naming ``field``. Every revision number a caller types goes through here.
    """
    if not _REVISION_NUMBER.fullmatch(text) or not 1 <= int(text) <= INT32_MAX:
        raise ConfigError(f"'{text[:40]}' is not a revision number (1 to {INT32_MAX})", field=field)
    return int(text)


def parse_revision_ref(text: str) -> tuple[ConfigType, int]:
    """``POOL:3`` as (ConfigType.POOL, 3)."""
    type_text, sep, number = text.rpartition(":")
    if not sep:
        raise ConfigError(f"'{text}' is not TYPE:REVISION (for example POOL:3)")
    try:
        revision = parse_revision_number(number, "revision")
    except ConfigError:
        raise ConfigError(f"'{text}' is not TYPE:REVISION (for example POOL:3)") from None
    return parse_config_type(type_text), revision


# ``--resources nodepool=P,gpu-deserved=N,...`` (Run:ai's CLI words) -> a quota entry's (section, figure).
QUOTA_SPEC_KEYS = {
    "gpu-deserved": ("gpu", "deserved"),
    "gpu-limit": ("gpu", "limit"),
    "over-quota-weight": ("gpu", "overQuotaWeight"),
    "gpu-over-quota-weight": ("gpu", "overQuotaWeight"),
    "cpu-deserved": ("cpu", "deserved"),
    "cpu-limit": ("cpu", "limit"),
    "memory-deserved": ("memory", "deserved"),
    "memory-limit": ("memory", "limit"),
}


def quota_figure(text: str) -> int | float | str | None:
    """One figure as typed: a number, or a weight's name (``High``); ``None``/``null`` as no over-quota."""
    value = variable_value(text)
    if isinstance(value, str) and value.strip().lower() in ("null", "~"):
        return None
    return value


def parse_quota_spec(text: str) -> dict:
    """``nodepool=P,gpu-deserved=4,gpu-limit=8,over-quota-weight=2`` as a quota entry (``resources[i]``).

    Figures not given are left out (the entry's defaults, or what ``quota set`` keeps, apply). The entry is
    checked as a whole by the document's reader; this only splits the words and names a bad one.
    """
    entry: dict = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise ConfigError(f"'{item}' in --resources is not KEY=VALUE")
        if key in ("nodepool", "node-pool", "pool"):
            entry["nodePool"] = value.strip()
        elif key == "priority":
            entry["priority"] = variable_value(value)
        elif key in QUOTA_SPEC_KEYS:
            section, figure = QUOTA_SPEC_KEYS[key]
            entry.setdefault(section, {})[figure] = quota_figure(value)
        else:
            words = ", ".join(["nodepool", "priority", *QUOTA_SPEC_KEYS])
            raise ConfigError(f"unknown --resources key '{key}'; expected one of {words}")
    if "nodePool" not in entry:
        raise ConfigError(f"--resources '{text}' names no nodepool=POOL")
    return entry
