"""Template helpers of the web console: numbers for people, the GPU bar, side-by-side diffs, documents."""

from __future__ import annotations

import json
from itertools import zip_longest

from django import template

from pools.forms import document_text

register = template.Library()

NEAR_QUOTA = 0.8


@register.filter
def count(value) -> str:
    """A whole number with thousands separators (1234 → 1,234); fractions keep up to two decimals."""
    if value is None or value == "":
        return "—"
    number = float(value)
    if number.is_integer():
        return f"{int(number):,}"
    return f"{number:,.2f}".rstrip("0").rstrip(".")


@register.filter
def percent(part, whole) -> str:
    """``part`` of ``whole`` as a rounded percentage ("—" when there is no whole)."""
    if not whole:
        return "—"
    return f"{round(100 * float(part) / float(whole))}%"


@register.filter
def lookup(mapping, key):
    """``mapping[key]`` in a template (None when absent)."""
    return (mapping or {}).get(key)


@register.filter
def as_yaml(value) -> str:
    return document_text(value)


@register.filter
def as_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


@register.inclusion_tag("pools/_gpu_bar.html")
def gpu_bar(gpu: dict, shared: bool = False):
    """The pool's GPUs as a bar: used of capacity, with the quota marked and coloured by how close it is.

    ``ok`` below 80 % of the quota, ``near`` from 80 %, ``over`` when the non-preemptible use exceeds it.
    """
    capacity = gpu.get("total_capacity") or 0
    used = min(gpu.get("total_usage") or 0, capacity) if capacity else 0
    quota = gpu.get("quota_limit") or 0
    quota_used = gpu.get("quota_used") or 0
    if quota_used > quota:
        level = "over"
    elif quota and quota_used >= NEAR_QUOTA * quota:
        level = "near"
    else:
        level = "ok"
    return {
        "gpu": gpu,
        "shared": shared,
        "used_width": round(100 * used / capacity, 1) if capacity else 0,
        "quota_left": round(100 * min(quota, capacity) / capacity, 1) if capacity else 0,
        "quota_marked": bool(capacity) and 0 < quota < capacity,
        "level": level,
        "level_label": {"ok": "within quota", "near": "near quota", "over": "over quota"}[level],
    }


@register.filter
def side_by_side(diff: str, swap: bool = False) -> list[dict]:
    """A unified diff as sections of rows ``(left, right, kind)`` for a two-column view.

    Removed lines face the added lines that replace them; context lines sit on both sides. ``swap`` puts
    the newer side on the left (the rollback page shows "now" against "after the rollback").
    """
    sections: list[dict] = []
    removed: list[str] = []
    added: list[str] = []

    def flush():
        for left, right in zip_longest(removed, added):
            kind = "change" if left is not None and right is not None else "del" if right is None else "add"
            if swap:
                left, right = right, left
                kind = {"del": "add", "add": "del"}.get(kind, kind)
            sections[-1]["rows"].append({"left": left, "right": right, "kind": kind})
        removed.clear()
        added.clear()

    for line in diff.splitlines():
        if line.startswith("--- "):
            if sections:
                flush()
            title = line[4:].rsplit("/", 1)[-1]
            sections.append({"title": title, "rows": []})
        elif line.startswith("+++ ") or not sections:
            continue
        elif line.startswith("@@"):
            flush()
            if sections[-1]["rows"]:
                sections[-1]["rows"].append({"left": "…", "right": "…", "kind": "gap"})
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
        else:
            flush()
            sections[-1]["rows"].append({"left": line[1:], "right": line[1:], "kind": "same"})
    if sections:
        flush()
    return sections
