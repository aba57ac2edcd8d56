"""Template helpers of the web console: figures for people, tables' rows, side-by-side diffs, documents."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from itertools import zip_longest

from django import template
from django.urls import reverse

from accounts.access import allows, allows_some
from pools import gate, selectors
from pools.doors import page_door
from pools.engine.doors import Door
from pools.engine.permissions import LIST_FLEET, VIEW_POOL
from pools.forms import document_text
from pools.tables import cells, formats
from pools.tables import utilization as utilization_tables
from pools.tables import workloads as workload_tables
from pools.tables.base import Table

register = template.Library()

# The figures as people read them, the same as the tables' text and poolctl's (``pools.tables.formats``).
register.filter("count", formats.count)
register.filter("held_gpus", utilization_tables.held_gpus)
register.filter("node_gpu_cell", cells.gpu_cell)  # a node's GPUs and MIG slices, as the node table shows them
register.filter("rack_row", cells.rack_row)  # a domain of a pool's topology picture
register.filter("idle_gpus", utilization_tables.idle_gpus)
register.filter("workload_gpus", workload_tables.workload_gpus)  # a workload's GPUs and MIG slices
register.filter("start_text", workload_tables.start_text)  # a waiting workload's start estimate, in a sentence
register.filter("start_time", workload_tables.start_time)
register.filter("duration", formats.human_duration)
register.filter("percent", formats.percent)
register.filter("share", formats.share)
register.filter("mib", formats.mib)
register.filter("size", formats.size)
register.filter("pool_url", cells.pool_url)
# A quota's figures in one vocabulary on every page: a weight as its number, -1 as "no limit" or "all".
register.filter("quota_deserved", formats.deserved)
register.filter("quota_limit", formats.limit)
register.filter("quota_weight", formats.weight)
register.filter("quota_terms", formats.quota_terms)
register.simple_tag(cells.quota_held, name="quota_held")
register.simple_tag(cells.above_limit_mark, name="above_limit_mark")

# The main navigation: each page's name, its route and arguments, and the paths under which it is the current one.
NAVIGATION = (
    ("Pools", "pools:overview", (), ("/pools/",)),
    ("Nodes", "pools:nodes", (), ("/nodes/",)),
    ("Node pools", "pools:node-pools", (), ("/node-pools/",)),
    ("My projects", "pools:my-projects", (), ("/my/",)),
    ("Quotas", "pools:quotas", (), ("/quotas/", "/projects/", "/departments/")),
    ("Workloads", "pools:workloads", (), ("/workloads/",)),
    ("Idle GPUs", "pools:idle", (), ("/idle/",)),
    ("Consumption", "pools:consumption", (), ("/consumption/",)),
    ("Backends", "pools:backends", (), ("/backends/",)),
    ("What-if", "pools:what-if", (), ("/what-if/",)),
    ("Templates", "pools:documents", ("templates",), ("/config/templates/",)),
    ("Validations", "pools:documents", ("validations",), ("/config/validations/",)),
    ("History", "pools:history", (), ("/history/",)),
    ("Access", "pools:roles", (), ("/access/", "/config/roles/")),
)


def _sees_some_workload(user) -> bool:
    """Whether ``user`` may see some workload (SEMANTICS §10): those of a pool their roles show, of the whole fleet
    (``LIST_FLEET``), or of a project they belong to (§9.4)."""
    return allows_some(user, VIEW_POOL) or allows(user, LIST_FLEET) or bool(selectors.projects_of(user))


# Links offered only to some of those the gate lets through: My projects to members of a department or project,
# Workloads to those who would find some there.
OFFERED_WHEN = {"My projects": selectors.has_units, "Workloads": _sees_some_workload}


def _always(user) -> bool:
    return True


@lru_cache(maxsize=1)
def _navigation() -> tuple[tuple[str, str, tuple[str, ...], Door], ...]:
    """Each page of the navigation with its address and the door its view declares (read once)."""
    links = []
    for label, route, args, under in NAVIGATION:
        url = reverse(route, args=args)
        links.append((label, url, under, page_door(url)))
    return tuple(links)


@register.inclusion_tag("pools/_navigation.html", takes_context=True)
def main_navigation(context) -> dict:
    """The pages the signed-in user may use: each link is shown when the gate would let them through its page's
    door (``gate.may_enter``), the one decision for every link."""
    request = context["request"]
    path = request.path
    return {
        "links": [
            {"label": label, "url": url, "current": path == url or path.startswith(under)}
            for label, url, under, door in _navigation()
            if gate.may_enter(request.user, door) and OFFERED_WHEN.get(label, _always)(request.user)
        ]
    }


@register.simple_tag
def table_row(table: Table, row: dict) -> str:
    """One ``<tr>`` of ``table`` (``pools.tables``) for ``row``: the page's cells of its columns."""
    return table.page_row(row)


@register.simple_tag
def route_url(route: str, name: str) -> str:
    """``{% url route name %}`` for a route taking one name, without resolving the URLconf per row."""
    return cells.route_url(route, name)


@register.simple_tag
def gpu_bar(gpu: dict, shared: bool = False) -> str:
    """The pool's GPUs as a bar: used of capacity, with the quota marked (``pools.tables.cells.gpu_bar``)."""
    return cells.gpu_bar(gpu)


@register.simple_tag
def node_counts(counts: dict) -> str:
    """Nodes by status: the available count, then the others when there are any."""
    return cells.node_counts(counts)


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


@register.filter
def verdict_figures(figures) -> list[dict]:
    """A verdict check's figures laid out as ``{"label", "value"}`` texts (``tables.workloads.verdict_figures``)."""
    return workload_tables.verdict_figures(figures)


@register.filter
def lookup(mapping, key):
    """``mapping[key]`` in a template (None when absent)."""
    return (mapping or {}).get(key)


@register.filter
def as_yaml(value) -> str:
    return document_text(value)


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
