"""Kubernetes label syntax, and the template a label pool stands for (SEMANTICS §8)."""

from __future__ import annotations

import re

# A qualified name with an optional DNS-subdomain prefix, as Kubernetes validates label keys.
LABEL_KEY = re.compile(
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
MAX_KEY_LENGTH = 317  # a 253-character prefix, the slash and a 63-character name


def label_key_problem(key: object) -> str | None:
    """Why ``key`` is not a Kubernetes label key, or None."""
    if not isinstance(key, str) or not key:
        return "a label key must be a non-empty string"
    prefix, _, name = key.rpartition("/")
    if len(key) > MAX_KEY_LENGTH or len(prefix) > 253 or len(name) > 63 or not LABEL_KEY.match(key):
        return f"'{key}' is not a valid label key ([prefix/]name: letters, digits, '-_.', name at most 63 characters)"
    return None


def label_value_problem(value: object) -> str | None:
    """Why ``value`` is not a Kubernetes label value, or None (the empty value is valid)."""
    if not isinstance(value, str):
        return "a label value must be a string"
    if not LABEL_VALUE.match(value):
        return f"'{value}' is not a valid label value (63 characters at most: letters, digits, '-_.')"
    return None


def node_label_template(node_label: dict | None) -> dict | None:
    """The pod template a pool's ``node_label`` acts as, merged before its own templates; None without one."""
    if not node_label:
        return None
    return {"spec": {"nodeSelector": {node_label["key"]: node_label["value"]}}}
