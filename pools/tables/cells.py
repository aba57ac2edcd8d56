"""The pages' table cells that are more than text: the GPU bar, names linking to their page, badges, a node's labels.

Built in Python with every text escaped by ``html.escape`` rather than from templates: the overview draws 200
rows every few seconds and the node table a hundred rows of dozens of labels, and the template engine's
per-variable machinery cost more than the data behind them.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape
from urllib.parse import quote

from django.template.defaultfilters import title, truncatechars
from django.urls import reverse
from django.utils.formats import localize
from django.utils.safestring import mark_safe

from .formats import count, limit, share

NEAR_QUOTA = 0.8
LEVEL_LABELS = {"ok": "within quota", "near": "near quota", "over": "over quota"}
NO_GPUS = '<span class="zero">no GPUs</span>'
NO_NODES_SELECTED = '<span class="muted small">no nodes selected</span>'
SHARES_SHOWN = 5  # pools a shared pool's row names; the badge's title names them all
DEFAULT_POOL_BADGE = (
    ' <span class="badge default-pool" data-testid="default-pool" title="The backend&#x27;s default pool: it holds '
    'the nodes no other pool takes, and cannot be deleted">Default pool</span>'
)
MUTED_DASH = '<td><span class="muted">—</span></td>'


@lru_cache(maxsize=16)
def _route_template(route: str) -> str:
    return reverse(route, args=["NAME"])


def route_url(route: str, name: str) -> str:
    """``{% url route name %}`` for a route taking one name, without resolving the URLconf per row."""
    return _route_template(route).replace("NAME", quote(name, safe=""), 1)


def pool_url(name: str) -> str:
    """The pool page's address."""
    return route_url("pools:pool", name)


def text(value) -> str:
    """A value as ``{{ value }}`` shows it: localized as the template engine does, then escaped."""
    return escape(str(localize(value)))


def quota_level(gpu: dict) -> str:
    """``ok`` below 80 % of the quota, ``near`` from 80 %, ``over`` when the non-preemptible use exceeds it."""
    quota = gpu.get("quota_limit") or 0
    quota_used = gpu.get("quota_used") or 0
    if quota_used > quota:
        return "over"
    if quota and quota_used >= NEAR_QUOTA * quota:
        return "near"
    return "ok"


def gpu_bar(gpu: dict) -> str:
    """The pool's GPUs as a bar: GPUs in use on its node set of their capacity (the two add up with the free ones,
    SEMANTICS §6.1), with the quota marked and coloured by how close it is."""
    capacity = gpu.get("total_capacity") or 0
    used = min(gpu.get("used_on_nodes") or 0, capacity) if capacity else 0
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
    total_usage, total_free, total = gpu.get("used_on_nodes"), gpu.get("total_free"), gpu.get("total_capacity")
    width = round(100 * used / capacity, 1) if capacity else 0
    return mark_safe(  # every value is a number or one of this module's words, escaped all the same
        f'<div class="gpu-bar {level}" role="img" aria-label="{escape(str(total_usage))} of {escape(str(total))} GPUs'
        f' used, {escape(str(total_free))} free, quota {escape(str(quota))} ({escape(label)})">'
        f'<div class="track"><div class="fill" style="width: {width}%"></div>{marker}</div>'
        f'<div class="legend"><span><strong>{count(total_usage)}</strong> used</span>'
        f'<span class="{"free" if total_free else "zero"}">{count(total_free)} free</span>'
        f"<span>{count(total)} total</span></div>{badge}</div>"
    )


def node_counts(counts: dict) -> str:
    """Nodes by status (``NodeStatus``): the available count, then the others when there are any."""
    shown = f"{count(counts.get('available') or 0)} available"
    for status in ("unavailable", "cordoned"):
        if counts.get(status):
            shown += f' <span class="badge {status}">{count(counts[status])} {status}</span>'
    return mark_safe(shown)  # numbers and fixed words only


# --- the overview's pool rows ------------------------------------------------------------------------------------


def pool_attributes(row: dict) -> str:
    return f' data-pool="{escape(row["name"])}"'


def pool_name_cell(row: dict) -> str:
    """The pool's name linking to its page, its backend and description, and whom it shares nodes with."""
    name = row["name"]
    head = f'<a href="{escape(pool_url(name))}"><strong>{escape(name)}</strong></a>'
    shares = ""
    if row["shared"]:
        others = [other for other in row["node_set"] if other != name]
        head += f' <span class="badge shared" title="Shares nodes with {escape(", ".join(others))}">shared</span>'
        named = ", ".join(f'<a href="{escape(pool_url(other))}">{escape(other)}</a>' for other in others[:SHARES_SHOWN])
        more = f" and {len(others) - SHARES_SHOWN} more" if len(others) > SHARES_SHOWN else ""
        shares = f'<div class="small muted">shares nodes with {named}{more}</div>'
    about = escape(row["backend"])
    if row.get("description"):
        about += f" · {escape(truncatechars(row['description'], 70))}"
    return f'<td>{head}<div class="muted small">{about}</div>{shares}</td>'


def status_cell(row: dict) -> str:
    status = escape(row["status"])
    return f'<td><span class="badge {status.lower()}">{escape(title(row["status"]))}</span></td>'


def gpu_bar_cell(row: dict) -> str:
    return f"<td>{gpu_bar(row['gpu'])}</td>"


def quota_cell(row: dict) -> str:
    gpu = row["gpu"]
    free = gpu.get("quota_free") or 0
    return (
        f'<td class="num">{count(gpu.get("quota_used"))} / {count(gpu.get("quota_limit"))}'
        f'<div class="small {"free" if free > 0 else "zero"}">{count(gpu.get("quota_free"))} free</div></td>'
    )


def free_by_platform_cell(row: dict) -> str:
    platforms = []
    for platform, info in row["summary"]["platforms"].items():
        products = " ".join(
            f'<span class="product {"free" if free else "zero"}">{count(free)} × {escape(product)}</span>'
            for product, free in info["free_by_product"].items()
        )
        platforms.append(
            f'<div class="small"><span class="muted">{escape(platform)}:</span> {products or NO_GPUS}</div>'
        )
    return f"<td>{''.join(platforms) or NO_NODES_SELECTED}</td>"


def node_counts_cell(row: dict) -> str:
    return f'<td class="nodes-counts small">{node_counts(row["summary"]["nodes"] or {})}</td>'


# --- the node table ----------------------------------------------------------------------------------------


def node_cell(row: dict) -> str:
    """The node and its backend, with links to its labels and (when it has GPUs) its GPUs."""
    node, backend = escape(row["node"]), escape(row["backend"])
    query = f"?backend={escape(quote(row['backend'], safe='/'))}"
    gpus = ""
    if row["gpu"]["capacity"] or row["mig"]:
        gpus = (
            f' · <a href="{escape(route_url("pools:node-gpus", row["node"]))}{query}" '
            f'title="GPU utilization of {node}">GPUs</a>'
        )
    return (
        f'<td><a href="{escape(route_url("pools:node-labels", row["node"]))}{query}" title="Labels of {node}">'
        f'<code>{node}</code></a><div class="small muted">{backend}{gpus}</div></td>'
    )


def placement_cell(row: dict) -> str:
    if not row["pool"]:
        return MUTED_DASH
    return (
        f'<td><a href="{escape(pool_url(row["pool"]))}">{escape(row["pool"])}</a> '
        f'<span class="muted">/ {escape(row["platform"])}</span></td>'
    )


def type_cell(row: dict) -> str:
    return f'<td><span class="badge {escape(row["type"].lower())}">{escape(row["type"])}</span></td>'


def node_status_cell(row: dict) -> str:
    status, reason = row["status"], row["reason"]
    shown_reason = f'<div class="small muted">{escape(reason)}</div>' if reason and reason != status else ""
    return f'<td><span class="badge {escape(status)}">{escape(status)}</span>{shown_reason}</td>'


def product_cell(row: dict) -> str:
    product = escape(row["gpu_product"]) if row["gpu_product"] else "—"
    if row["time_sliced"]:
        product += ' <span class="badge">time-sliced</span>'
    return f'<td class="small">{product}</td>'


def gpu_cell(row: dict) -> str:
    """A node's GPUs as used/capacity: whole GPUs, then each MIG profile's slices by the profile's name
    (``3/7 1g.10gb``), never as a decimal of a GPU (SEMANTICS §6.1); a node of MIG slices only shows only those."""
    gpu, mig = row["gpu"], row["mig"]
    parts = []
    if gpu["capacity"] or not mig:
        parts.append(f"{text(gpu['used'])}/{text(gpu['capacity'])}")
    parts += [
        f'<div class="small">{text(slices["used"])}/{text(slices["capacity"])} '
        f"<code>{escape(str(profile))}</code></div>"
        for profile, slices in mig.items()
    ]
    return f'<td class="num">{"".join(parts)}</td>'


def pair_cell(key: str, shown=text):
    def cell(row: dict) -> str:
        pair = row[key]
        return f'<td class="num">{shown(pair["used"])}/{shown(pair["capacity"])}</td>'

    return cell


def node_tags(row: dict) -> str:
    """The node table's "labels and taints" cell contents."""
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
    return "".join(parts)


def node_tags_cell(row: dict) -> str:
    return f"<td>{node_tags(row)}</td>"


# --- the node-pools table ----------------------------------------------------------------------------------


def node_pool_attributes(row: dict) -> str:
    return f' data-node-pool="{escape(row["node_pool"])}"' + (' class="default-pool"' if row["default"] else "")


def node_pool_name_cell(row: dict) -> str:
    badge = DEFAULT_POOL_BADGE if row["default"] else ""
    name = escape(row["node_pool"])
    return f'<td><a href="{escape(pool_url(row["node_pool"]))}"><strong>{name}</strong></a>{badge}</td>'


def badge_cell(key: str):
    def cell(row: dict) -> str:
        shown = escape(str(row[key]))
        return f'<td><span class="badge {shown.lower()}">{shown}</span></td>'

    return cell


def code_cell(key: str):
    def cell(row: dict) -> str:
        return f"<td><code>{escape(str(row[key]))}</code></td>" if row[key] else MUTED_DASH

    return cell


def yes_no_cell(key: str):
    def cell(row: dict) -> str:
        return "<td>Yes</td>" if row[key] else '<td><span class="muted">No</span></td>'

    return cell


def time_cell(key: str, shown):
    def cell(row: dict) -> str:
        value = row[key]
        return (
            f'<td class="small nowrap"><time datetime="{escape(value.isoformat())}">{escape(shown(value))}</time></td>'
        )

    return cell


# --- quotas per node pool (SEMANTICS §9) ---------------------------------------------------------------------


def above_limit(row: dict) -> bool:
    """Whether a unit holds more GPUs on a pool than its limit (never for -1, no limit). Unlike being over quota
    (above deserved within the limit: normal, the excess is preemptible) this should not happen: the limit was
    lowered under running work, or pods run outside the scheduler."""
    return row["limit"] != -1 and row["allocated"] > row["limit"]


def above_limit_mark(row: dict) -> str:
    """The mark of a unit above its limit on a pool (nothing otherwise), the same wherever quotas show."""
    if not above_limit(row):
        return ""
    return mark_safe(  # numbers and fixed words only
        f'<span class="badge above-limit" data-testid="above-limit" title="Holds {count(row["allocated"])} GPUs, '
        f'more than its limit of {limit(row["limit"])}">above limit</span>'
    )


def quota_held(row: dict) -> str:
    """What a unit holds on a pool under its quota: allocated, waiting, over quota (normal, preemptible: drawn as
    the rest) and its fair share; the above-limit mark when it holds more than its limit."""
    held = f"holds {count(row['allocated'])}"
    if row["pending"]:
        held += f", {count(row['pending'])} waiting"
    if row["over_quota"]:
        held += f' · <span class="over-quota">{count(row["over_quota"])} over quota</span>'
    held += f" · fair {count(row['fair_share'])}"
    if row.get("usage"):
        held += f' · <span title="past usage (time-based fair share)">used {share(row["usage"])}</span>'
    return mark_safe(f'<div class="quota-held small">{held} {above_limit_mark(row)}</div>')  # numbers only


STATE_WORDS = {"partly": "partly free", "free": "all free", "full": "none free"}


def rack_row(row: dict, drawn: bool) -> str:
    """One domain of a pool's topology picture (``selectors.pool_capacity_of(picture=True)``'s row): its name and GPUs
    free, then each GPU node as free/GPUs coloured by how free it is or, when too many to draw, the nodes counted
    by state. A pool page draws 300 racks of these."""
    nodes = row["node_count"]
    free = f"{count(row['free'])} of {count(row['gpus'])} GPUs free on {count(nodes)} node{'' if nodes == 1 else 's'}"
    head = (
        f'<div class="rack-row" data-domain="{escape(row["path"] or "")}"><div class="rack-name">{escape(row["label"])}'
        f"<small>{free}</small></div>"
    )
    if drawn:
        cells = "".join(
            f'<span class="gpu-node {node["state"]}" data-node="{escape(node["name"])}" data-free="{node["free"]}" '
            f'title="{escape(node["name"])}: {node["free"]} of {node["gpus"]} GPUs free">{node["free"]}/{node["gpus"]}'
            "</span>"
            for node in row["nodes"]
        )
        body = f'<div class="rack-nodes">{cells}</div>'
    else:
        cells = "".join(
            f'<span class="gpu-node {state}" data-state="{state}" data-count="{number}">{count(number)} '
            f"{STATE_WORDS[state]}</span>"
            for state, number in row["states"].items()
            if number
        )
        body = f'<div class="rack-nodes" data-counted>{cells}</div>'
    return mark_safe(f"{head}{body}</div>")  # noqa: S308 - every text above is escaped
