"""Template helpers of the web console: numbers for people, the GPU bar, side-by-side diffs, documents."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from html import escape
from itertools import zip_longest
from urllib.parse import quote

from django import template
from django.template.defaultfilters import title, truncatechars
from django.urls import reverse
from django.utils.formats import localize
from django.utils.html import format_html
from django.utils.safestring import mark_safe

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
def duration(seconds) -> str:
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


@register.filter
def percent(value) -> str:
    """A percentage (37.46) for people: ``37 %``; ``—`` when unknown."""
    if value is None or value == "":
        return "—"
    return f"{float(value):.0f} %"


@register.filter
def share(value) -> str:
    """A share (0.2546) as a percentage with one decimal: ``25.5 %``; ``—`` when unknown."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.1f} %"


@register.filter
def mib(value) -> str:
    """An amount of MiB for people: ``812 MiB``, ``79.6 GiB``, ``1.2 TiB``."""
    if value is None or value == "":
        return "—"
    value = float(value)
    for unit, factor in (("TiB", 1024 * 1024), ("GiB", 1024)):
        if value >= factor:
            return f"{value / factor:,.1f} {unit}"
    return f"{value:,.0f} MiB"


@register.filter
def iso_datetime(value):
    """An ISO 8601 text (what selectors give JSON callers) as a datetime, for ``date`` and ``timesince``."""
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


@register.filter
def bars(counts: dict) -> list[dict]:
    """``{bucket: count}`` as bars: each bucket, its count and its width in % of all the counts."""
    total = sum(counts.values()) if counts else 0
    return [
        {"label": label, "count": n, "width": round(100 * n / total, 1) if total else 0}
        for label, n in (counts or {}).items()
    ]


BYTE_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


@register.filter
def size(value) -> str:
    """Bytes for people: 1.25 TiB, 48 GiB, 512 MiB (up to two decimals); 0 B for nothing."""
    if value is None or value == "":
        return "—"
    number = int(value)
    for unit, scale in BYTE_UNITS:
        if abs(number) >= scale:
            return f"{count(number / scale)} {unit}"
    return f"{number} B"


@register.filter
def lookup(mapping, key):
    """``mapping[key]`` in a template (None when absent)."""
    return (mapping or {}).get(key)


@register.filter
def as_yaml(value) -> str:
    return document_text(value)


LEVEL_LABELS = {"ok": "within quota", "near": "near quota", "over": "over quota"}


def quota_level(gpu: dict) -> str:
    """``ok`` below 80 % of the quota, ``near`` from 80 %, ``over`` when the non-preemptible use exceeds it."""
    quota = gpu.get("quota_limit") or 0
    quota_used = gpu.get("quota_used") or 0
    if quota_used > quota:
        return "over"
    if quota and quota_used >= NEAR_QUOTA * quota:
        return "near"
    return "ok"


@register.simple_tag
def gpu_bar(gpu: dict, shared: bool = False) -> str:
    """The pool's GPUs as a bar: used of capacity, with the quota marked and coloured by how close it is.

    Built in Python rather than from an included template: the overview draws one per pool, every few
    seconds, and an inclusion tag costs a template render each time.
    """
    capacity = gpu.get("total_capacity") or 0
    used = min(gpu.get("total_usage") or 0, capacity) if capacity else 0
    quota = gpu.get("quota_limit") or 0
    level = quota_level(gpu)
    label = LEVEL_LABELS[level]
    marker = ""
    if capacity and 0 < quota < capacity:
        marker = (
            f'<div class="quota" style="left: calc({round(100 * quota / capacity, 1)}% - 1px)" '
            f'title="quota: {escape(str(quota))} GPUs"></div>'
        )
    badge = f'<div class="small"><span class="badge {level}">{escape(label)}</span></div>' if level != "ok" else ""
    total_usage, total_free, total = gpu.get("total_usage"), gpu.get("total_free"), gpu.get("total_capacity")
    width = round(100 * used / capacity, 1) if capacity else 0
    # f-strings, not format_html: the overview draws 200 bars every few seconds. Every value is a number or one of
    # this module's words, escaped all the same.
    return mark_safe(
        f'<div class="gpu-bar {level}" role="img" aria-label="{escape(str(total_usage))} of {escape(str(total))} GPUs'
        f' used, {escape(str(total_free))} free, quota {escape(str(quota))} ({escape(label)})">'
        f'<div class="track"><div class="fill" style="width: {width}%"></div>{marker}</div>'
        f'<div class="legend"><span><strong>{count(total_usage)}</strong> used</span>'
        f'<span class="{"free" if total_free else "zero"}">{count(total_free)} free</span>'
        f"<span>{count(total)} total</span></div>{badge}</div>"
    )


@register.filter
def pool_url(name: str) -> str:
    """The pool page's address (``{% url 'pools:pool' name %}`` without resolving the URLconf per row)."""
    return route_url("pools:pool", name)


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


DEFAULT_POOL_BADGE = mark_safe(
    ' <span class="badge default-pool" data-testid="default-pool" title="The backend&#x27;s default pool: it holds '
    'the nodes no other pool takes, and cannot be deleted">Default pool</span>'
)
MUTED_DASH = mark_safe('<td><span class="muted">—</span></td>')
YES, NO = mark_safe("<td>Yes</td>"), mark_safe('<td><span class="muted">No</span></td>')


@register.simple_tag
def node_pool_cell(row: dict, cell: tuple) -> str:
    """One ``<td>`` of the node-pools table. One call per cell: the table has thousands of them, and branching on
    the column in the template cost more than the rest of the page."""
    column, text, value, numeric = cell
    if column == "node_pool":
        badge = DEFAULT_POOL_BADGE if row["default"] else ""
        return format_html('<td><a href="{}"><strong>{}</strong></a>{}</td>', pool_url(row["name"]), text, badge)
    if column == "status":
        return format_html('<td><span class="badge {}">{}</span></td>', text.lower(), text)
    if column in ("label_key", "label_value"):
        if text:
            return format_html("<td><code>{}</code></td>", text)
        return MUTED_DASH
    if column == "default":
        return YES if value else NO
    if column in ("last_update", "creation_time"):
        return format_html('<td class="small nowrap"><time datetime="{}">{}</time></td>', value.isoformat(), text)
    if numeric:
        return format_html('<td class="num">{}</td>', text)
    return format_html("<td>{}</td>", text)


@lru_cache(maxsize=16)
def _route_template(route: str) -> str:
    return reverse(route, args=["NAME"])


@register.simple_tag
def route_url(route: str, name: str) -> str:
    """``{% url route name %}`` for a route taking one name, without resolving the URLconf per row."""
    return _route_template(route).replace("NAME", quote(name, safe=""), 1)


def _cell_text(value) -> str:
    """A value as ``{{ value }}`` shows it: localized as the template engine does, then escaped."""
    return escape(str(localize(value)))


@register.simple_tag
def node_row(row: dict) -> str:
    """One ``<tr>`` of the node table (``pools/_node_table.html``): the node and its backend with links to its
    labels and GPUs, pool and platform, type, status and reason, GPU product and MIG devices, the numbers, the
    labels and taints (``node_tags``). Built here, as ``node_tags`` is: a hundred rows of ~25 template variables
    each were a third of the page's time. Every text is escaped with ``html.escape``."""
    node, backend = escape(row["node"]), escape(row["backend"])
    query = f"?backend={escape(quote(row['backend'], safe='/'))}"
    gpu, cpu, memory = row["gpu"], row["cpu"], row["memory_gi"]
    gpus = ""
    if gpu["capacity"] or row["mig"]:
        gpus = (
            f' · <a href="{escape(route_url("pools:node-gpus", row["node"]))}{query}" '
            f'title="GPU utilization of {node}">GPUs</a>'
        )
    if row["pool"]:
        pool = (
            f'<a href="{escape(pool_url(row["pool"]))}">{escape(row["pool"])}</a> '
            f'<span class="muted">/ {escape(row["platform"])}</span>'
        )
    else:
        pool = '<span class="muted">—</span>'
    status, reason = row["status"], row["reason"]
    shown_reason = f'<div class="small muted">{escape(reason)}</div>' if reason and reason != status else ""
    product = escape(row["gpu_product"]) if row["gpu_product"] else "—"
    if row["time_sliced"]:
        product += ' <span class="badge">time-sliced</span>'
    devices = "".join(
        f'<div class="small muted">{escape(str(profile))} {_cell_text(mig["used"])}/{_cell_text(mig["capacity"])}</div>'
        for profile, mig in row["mig"].items()
    )
    cells = (
        f'<td><a href="{escape(route_url("pools:node-labels", row["node"]))}{query}" title="Labels of {node}">'
        f'<code>{node}</code></a><div class="small muted">{backend}{gpus}</div></td>',
        f"<td>{pool}</td>",
        f'<td><span class="badge {escape(row["type"].lower())}">{escape(row["type"])}</span></td>',
        f'<td><span class="badge {escape(status)}">{escape(status)}</span>{shown_reason}</td>',
        f'<td class="small">{product}\n{devices}</td>',
        f'<td class="num">{_cell_text(gpu["used"])}/{_cell_text(gpu["capacity"])}</td>',
        f'<td class="num">{_cell_text(cpu["used"])}/{_cell_text(cpu["capacity"])}</td>',
        f'<td class="num">{count(memory["used"])}/{count(memory["capacity"])}</td>',
        f"<td>{node_tags(row)}</td>",
    )
    return mark_safe("<tr>" + "".join(cells) + "</tr>\n")  # every text above is escaped


@register.simple_tag
def node_tags(row: dict) -> str:
    """The node table's "labels and taints" cell. Built here, not in the template, and escaped with the standard
    library's ``html.escape`` rather than ``format_html`` per tag: a node has dozens of labels and a page a hundred
    nodes, and the per-tag machinery was half of the page's time."""
    labels, taints = row["labels"], row["taints"]
    summary = f"{len(labels)} labels"
    if taints:
        summary += f", {len(taints)} taint{'' if len(taints) == 1 else 's'}"
    parts = [f'<details><summary class="small">{summary}</summary>\n']
    for taint in taints:
        value = f"={taint['value']}" if taint.get("value") else ""
        parts.append(
            '<span class="tag" style="background:var(--near-soft)">'
            f"{escape(str(taint.get('key', '')) + value)}:{escape(str(taint.get('effect', '')))}</span>"
        )
    parts.append("\n")
    parts.extend(f'<span class="tag">{escape(str(key))}={escape(str(value))}</span>' for key, value in labels.items())
    parts.append("</details>")
    return mark_safe("".join(parts))  # every text above is escaped


@register.simple_tag
def node_counts(counts: dict) -> str:
    """Nodes by status (``NodeStatus``): the available count, then the others when there are any."""
    text = f"{count(counts.get('available') or 0)} available"
    for status in ("unavailable", "cordoned"):
        if counts.get(status):
            text += f' <span class="badge {status}">{count(counts[status])} {status}</span>'
    return mark_safe(text)  # numbers and fixed words only


NO_GPUS = '<span class="zero">no GPUs</span>'
NO_NODES_SELECTED = '<span class="muted small">no nodes selected</span>'
SHARES_SHOWN = 5  # pools a shared pool's row names; the badge's title names them all


@register.simple_tag
def pool_row(row: dict) -> str:
    """One ``<tr>`` of the overview's pool table, built in Python with every text escaped: the page draws 200 of
    them every few seconds, and the template's per-variable machinery cost more than the data behind them."""
    name, gpu, summary = row["name"], row["gpu"], row["summary"]
    link = escape(pool_url(name))
    head = f'<a href="{link}"><strong>{escape(name)}</strong></a>'
    shares = ""
    if row["shared"]:
        others = row["shares_with"]
        head += f' <span class="badge shared" title="Shares nodes with {escape(", ".join(others))}">shared</span>'
        named = ", ".join(f'<a href="{escape(pool_url(other))}">{escape(other)}</a>' for other in others[:SHARES_SHOWN])
        more = f" and {len(others) - SHARES_SHOWN} more" if len(others) > SHARES_SHOWN else ""
        shares = f'<div class="small muted">shares nodes with {named}{more}</div>'
    about = escape(row["backend"])
    if row.get("description"):
        about += f" · {escape(truncatechars(row['description'], 70))}"
    platforms = []
    for platform, info in summary["platforms"].items():
        products = " ".join(
            f'<span class="product {"free" if free else "zero"}">{count(free)} × {escape(product)}</span>'
            for product, free in info["free_by_product"].items()
        )
        platforms.append(
            f'<div class="small"><span class="muted">{escape(platform)}:</span> {products or NO_GPUS}</div>'
        )
    status = escape(row["status"])
    quota_free = gpu.get("quota_free") or 0
    return mark_safe(
        f'<tr data-pool="{escape(name)}">'
        f'<td>{head}<div class="muted small">{about}</div>{shares}</td>'
        f'<td><span class="badge {status.lower()}">{escape(title(row["status"]))}</span></td>'
        f"<td>{gpu_bar(gpu, row['shared'])}</td>"
        f'<td class="num">{count(gpu.get("quota_used"))} / {count(gpu.get("quota_limit"))}'
        f'<div class="small {"free" if quota_free > 0 else "zero"}">{count(gpu.get("quota_free"))} free</div></td>'
        f"<td>{''.join(platforms) or NO_NODES_SELECTED}</td>"
        f'<td class="nodes-counts small">{node_counts(summary["nodes"] or {})}</td></tr>'
    )
