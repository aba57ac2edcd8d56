"""``poolctl``'s text beyond its tables (which are ``pools.tables``): rendered pod templates, check verdicts, gpuctl's
descriptions of a pool and a node, the fair-share simulation and the reclaim check, in exactly the documented shapes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import tables
from .engine.documents import dump_yaml
from .tables.base import osmo_layout
from .tables.formats import amount


def as_yaml(data: Any) -> str:
    return dump_yaml(data, sort_keys=False, default_flow_style=False).rstrip()


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return osmo_layout(
        [[str(h) for h in headers]] + [["" if cell is None else str(cell) for cell in row] for row in rows]
    )


def render_text(result: dict) -> str:
    variables = _table(["Variable", "Value"], [[k, v] for k, v in sorted(result["variables"].items())])
    return (
        f"Pool {result['pool']}, platform {result['platform']}\n\n{variables}\n\n"
        f"Pod template:\n{as_yaml(result['pod_template'])}"
    )


_STARTS = {"now": "starts now", "wait": "would wait: no node has it free now"}


def check_text(result: dict) -> str:
    head = f"Pool {result['pool']}, platform {result['platform']}: {'PASSED' if result['passed'] else 'FAILED'}"
    if result["starts"]:
        head += f", {_STARTS[result['starts']]}"
    lines = [head] + [f"  - {error}" for error in result["errors"]]
    if result["quota"]:
        lines.append(f"Quota: {result['quota']['message']}")
    if result.get("topology"):
        lines.append(f"Topology: {result['topology']['message']}")
    if result["nodes"]:
        rows = [
            [
                n["node"],
                "pass" if n["passed"] else "fail",
                f"wait ({'; '.join(n['shortfalls'])})" if n["start"] == "wait" else n["start"] or "-",
                "; ".join(n["errors"]),
            ]
            for n in result["nodes"]
        ]
        lines += ["", _table(["Node", "Result", "Start", "Failed rules"], rows)]
    return "\n".join(lines)


def role_check_text(result: dict) -> str:
    verdict = "ALLOWED" if result["allowed"] else "DENIED"
    return f"{verdict}: {result['action']} on {result['resource'] or '(unscoped)'} — {result['reason']}"


def access_explain_text(result: dict) -> str:
    """``ALLOWED``/``DENIED``, the user's roles and the deciding role and policy, one per line."""
    verdict = "ALLOWED" if result["allowed"] else "DENIED"
    lines = [
        f"{verdict}: {result['user']} {result['action']} on {result['resource'] or '(unscoped)'}",
        f"roles:  {', '.join(result['roles']) or '(none)'}",
        f"reason: {result['reason']}",
    ]
    return "\n".join(lines)


def _fields(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    width = max(len(label) for label, _ in pairs) + 2
    return [f"{(label + ':').ljust(width)}{'' if value is None else value}" for label, value in pairs]


def gpuctl_pool_detail_text(pool: dict) -> str:
    """gpuctl's ``describe pool``."""
    lines = _fields(
        [
            ("Name", pool["name"]),
            ("Description", pool["description"]),
            ("Status", pool["status"]),
            ("GPU Total", pool["gpu_total"]),
            ("GPU Used", pool["gpu_used"]),
            ("GPU Free", pool["gpu_free"]),
            ("GPU Types", ", ".join(pool["gpu_types"]) or "-"),
            ("Node Count", pool["node_count"]),
        ]
    )
    lines += ["", "Nodes:", tables.GPUCTL_POOL_NODES.text(pool["nodes"])]
    lines += ["", "Jobs:", tables.GPUCTL_JOBS.text(pool["jobs"])]
    return "\n".join(lines)


def gpuctl_node_detail_text(node: dict) -> str:
    """gpuctl's ``describe node``."""
    lines = _fields(
        [
            ("Name", node["name"]),
            ("Backend", node["backend"]),
            ("Status", node["status"] + (f" ({node['unavailable_reason']})" if node["unavailable_reason"] else "")),
            ("IP", node["ip"] or "-"),
            ("Pool", ", ".join(node["pools"]) or "-"),
            ("GPU Type", node["gpu_type"] or "-"),
            ("GPU Total", node["gpu_total"]),
            ("GPU Used", node["gpu_used"]),
            ("GPU Free", node["gpu_free"]),
            ("CPU", node["cpu"]),
        ]
    )
    lines += ["", "Labels:"] + [f"  {key}={value}" for key, value in node["labels"].items()]
    if node["taints"]:
        lines += ["", "Taints:"] + [f"  {t['key']}={t['value']}:{t['effect']}" for t in node["taints"]]
    lines += ["", "Pods:", tables.GPUCTL_NODE_PODS.text(node["pods"])]
    return "\n".join(lines)


def node_labels_text(result: dict) -> str:
    if not result["labels"]:
        return f"node/{result['node']} has no such label" if result.get("key") else f"node/{result['node']}: no labels"
    return "\n".join(f"{key}={value}" for key, value in result["labels"].items())


def quota_simulation_text(document: dict, result: dict) -> str:
    """``quota simulate``: each unit under its parent, with what it asked for and its fair share."""
    queues = document["queues"]
    children: dict[str | None, list[dict]] = {}
    for queue in queues:
        children.setdefault(queue.get("parent"), []).append(queue)
    rows: list[list] = []

    def walk(parent: str | None, depth: int) -> None:
        for queue in children.get(parent, []):
            rows.append(
                [
                    "  " * depth + queue["name"],
                    amount(queue.get("deserved", 0)),
                    amount(queue.get("limit", -1)),
                    amount(queue.get("over_quota_weight", 2)),
                    queue.get("priority", 100),
                    amount(queue.get("request", 0)) if queue["name"] not in children else "",
                    amount(result["fair_share"][queue["name"]]),
                ]
            )
            walk(queue["name"], depth + 1)

    walk(None, 0)
    headers = ["UNIT", "DESERVED", "LIMIT", "WEIGHT", "PRIORITY", "REQUEST", "FAIR SHARE"]
    return f"Capacity: {amount(document['capacity'])} GPUs\n" + _table(headers, rows)


def quota_reclaim_text(result: dict) -> str:
    """``quota reclaim``: the two answers, then the reasons, one a line."""
    lines = [
        f"May start a reclaim:   {'yes' if result['can_reclaim'] else 'no'}",
        f"Victims reclaimable:   {'yes' if result['reclaimable'] else 'no'}",
    ]
    return "\n".join(lines + [f"  - {reason}" for reason in result["reasons"]])


def consumption_text(report: dict) -> str:
    """``get consumption``: GPU-hours per group, largest first, then the total and the period counted."""
    by = report["by"]
    rows = [*report["rows"], {by: "TOTAL", **report["total"]}]
    period = f"from {report['since']} to {report['until']}, counted in whole {report['resolution']}s"
    return tables.CONSUMPTION[by].text(rows) + "\n\n" + period


def config_effect_text(effect: dict) -> str:
    """A dry run's answer: what the change would move (``tables.CONFIG_EFFECT``), each pool's nodes and the
    workloads on the nodes that leave, and the quota warnings. Nothing was saved."""
    lines = ["Dry run: nothing was saved.", "", tables.CONFIG_EFFECT.text(effect["pools"])]
    for row in effect["pools"]:
        lines += ["", f"{row['summary']}."]
        if row["nodes_out"]:
            lines.append(f"  out: {', '.join(row['nodes_out'])}")
        if row["nodes_in"]:
            lines.append(f"  in:  {', '.join(row['nodes_in'])}")
        for group in row["workloads"]:
            owner = f" user {group['user']}" if group["user"] else ""
            label = f"pool label {group['pool_label']}" if group["pool_label"] else "no pool label"
            lines.append(
                f"  workload: {group['namespace']}{owner} ({label}): {group['pods']} pod(s), {group['gpu']} GPUs"
            )
    lines += [f"warning: {warning}" for warning in effect["warnings"]]
    return "\n".join(lines)


def capacity_text(result: dict) -> str:
    """``poolctl pool capacity``: per level, a heading, then its shapes and its domains (``pools.tables``)."""
    parts = []
    for level in result["levels"]:
        if level["key"] is None:
            heading = f"Pool {result['pool']} as a whole"
        else:
            heading = f"Level {level['key']} ({level['label']}): {len(level['domains'])} domain(s)"
        parts.append(
            f"{heading}\n\n{tables.TOPOLOGY_SHAPES.text(level['shapes'])}\n\n{tables.TOPOLOGY_DOMAINS.text(level['domains'])}"
        )
    return "\n\n".join(parts)


def my_projects_text(units: list[dict]) -> str:
    """``my projects``: one row per unit and pool with its figures, then each waiting workload and why it waits."""
    if not units:
        return "You belong to no department or project."
    rows: list[list] = []
    for unit in units:
        who = [f"{unit['kind']}/{unit['name']}", unit["role"] + (f" (via {unit['via']})" if unit["via"] else "")]
        figures = ("deserved", "limit", "fair_share", "allocated", "pending")
        rows += [[*who, row["pool"], *(amount(row[figure]) for figure in figures)] for row in unit["pools"]]
        if not unit["pools"]:
            rows.append([*who, "-", "", "", "", "", ""])
    text = _table(["UNIT", "ROLE", "POOL", "DESERVED", "LIMIT", "FAIR SHARE", "ALLOCATED", "PENDING"], rows)
    waiting = [
        [unit["name"], f"{w['namespace']}/{w['name']}", w["pool"] or "-", amount(w["gpus"]), w["reason"] or "-"]
        for unit in units
        for w in unit["pending_workloads"]
    ]
    if waiting:
        text += "\n\nWaiting workloads:\n" + _table(["PROJECT", "WORKLOAD", "POOL", "GPUS", "REASON"], waiting)
    return text
