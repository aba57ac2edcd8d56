"""Text rendering for ``poolctl``: aligned tables like the ``osmo`` CLI, and JSON in exactly the documented shapes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .engine.documents import dump_yaml


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, a header underlined with dashes, two spaces between columns."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str)


def as_yaml(data: Any) -> str:
    return dump_yaml(data, sort_keys=False, default_flow_style=False).rstrip()


def fraction(pair: dict) -> str:
    return f"{pair['used']}/{pair['capacity']}"


def pool_list_text(pools: list[dict]) -> str:
    if not pools:
        return "No pools."
    rows = []
    for pool in pools:
        gpu = pool["gpu"]
        shared = ", ".join(name for name in pool["node_set"] if name != pool["name"])
        rows.append(
            [
                pool["name"],
                pool["status"],
                pool["backend"],
                gpu["quota_used"],
                gpu["quota_limit"],
                gpu["quota_free"],
                gpu["total_usage"],
                gpu["total_capacity"],
                gpu["total_free"],
                f"with {shared}" if pool["shared"] else "",
            ]
        )
    return table(
        [
            "Pool",
            "Status",
            "Backend",
            "Quota Used",
            "Quota Limit",
            "Quota Free",
            "Total Usage",
            "Total Capacity",
            "Total Free",
            "Shared",
        ],
        rows,
    )


def resource_list_text(resources: list[dict]) -> str:
    if not resources:
        return "No nodes."
    rows = [
        [
            r["node"],
            r["pool"] or "-",
            r["platform"] or "-",
            r["type"],
            r["status"] if r["status"] == "available" else f"{r['status']} ({r['reason']})",
            fraction(r["gpu"]),
            fraction(r["cpu"]),
            fraction(r["memory_gi"]),
            fraction(r["storage_gi"]),
        ]
        for r in resources
    ]
    return table(
        ["Node", "Pool", "Platform", "Type", "Status", "GPU [#]", "CPU [#]", "Memory [Gi]", "Storage [Gi]"], rows
    )


def user_list_text(users: list[dict]) -> str:
    if not users:
        return "No users."
    rows = [
        [
            user["username"],
            user["kind"],
            ", ".join(user["roles"]) or "-",
            user["signs_in_with"],
            user["tokens"],
            (user["last_login"] or "never")[:19].replace("T", " "),
        ]
        for user in users
    ]
    return table(["User", "Kind", "Roles", "Signs in with", "Tokens", "Last login (UTC)"], rows)


def history_text(revisions: list[dict]) -> str:
    if not revisions:
        return "No revisions."
    rows = [
        [
            r["config_type"],
            r["revision"],
            r["name"] or "-",
            r["username"],
            r["created_at"][:19].replace("T", " "),
            ", ".join(r["tags"]),
            r["description"],
        ]
        for r in revisions
    ]
    return table(["Type", "Rev", "Name", "User", "Created (UTC)", "Tags", "Description"], rows)


def render_text(result: dict) -> str:
    variables = table(["Variable", "Value"], [[k, v] for k, v in sorted(result["variables"].items())])
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
        lines += ["", table(["Node", "Result", "Start", "Failed rules"], rows)]
    return "\n".join(lines)


def role_check_text(result: dict) -> str:
    verdict = "ALLOWED" if result["allowed"] else "DENIED"
    return f"{verdict}: {result['action']} on {result['resource'] or '(unscoped)'} — {result['reason']}"


def doors_markdown(doors) -> str:
    """The permission catalogue's doors as the Markdown table ``docs/api.md`` holds (``poolctl access doors``)."""

    def permission(value, on: str) -> str:
        if value is None:
            return ""
        where = f" on `{value.resource_type}/{on}`" if value.resource_type and on else ""
        return f"`{value.action}`{where}" if where else f"`{value.action}`"

    rows = ["| door | sees (else 404) | does (else 403) | note |", "|---|---|---|---|"]
    for door in doors:
        sees = (
            "anyone"
            if door.public
            else "signed in"
            if door.signed_in
            else permission(door.reads, "" if door.rows else door.object)
        )
        if door.rows and door.reads is not None:
            sees += " (rows)"
        cells = [f"`{door.door}`", sees, permission(door.acts, door.acts_on), door.note]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


# --- gpuctl's tables (SEMANTICS §8.1) ------------------------------------------------------------------------
# gpuctl pads each column to a fixed width (wider when a cell needs it: two spaces after the longest) and has
# no dashes under the header. The widths reproduce its ``get pools`` example exactly.

GPUCTL_POOL_COLUMNS = (
    ("POOL NAME", 17),
    ("STATUS", 9),
    ("GPU TOTAL", 11),
    ("GPU USED", 10),
    ("GPU FREE", 10),
    ("NODE COUNT", 0),
)
GPUCTL_NODE_COLUMNS = (
    ("NODE NAME", 17),
    ("STATUS", 13),
    ("GPU TOTAL", 11),
    ("GPU USED", 10),
    ("GPU FREE", 10),
    ("GPU TYPE", 14),
    ("IP", 17),
    ("POOL", 0),
)


def gpuctl_table(columns: Sequence[tuple[str, int]], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns of at least their stated width, the last one unpadded."""
    cells = [[name for name, _ in columns]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(minimum, max(len(row[i]) for row in cells) + 2) for i, (_, minimum) in enumerate(columns)]
    return "\n".join(
        "".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def gpuctl_pools_text(pools: list[dict]) -> str:
    rows = [[p["name"], p["status"], p["gpu_total"], p["gpu_used"], p["gpu_free"], p["node_count"]] for p in pools]
    return gpuctl_table(GPUCTL_POOL_COLUMNS, rows)


def _node_cells(n: dict) -> list:
    return [
        n["name"],
        n["status"],
        n["gpu_total"],
        n["gpu_used"],
        n["gpu_free"],
        n["gpu_type"] or "-",
        n["ip"] or "-",
        ",".join(n["pools"]) or "-",
    ]


def gpuctl_nodes_text(nodes: list[dict]) -> str:
    return gpuctl_table(GPUCTL_NODE_COLUMNS, [_node_cells(n) for n in nodes])


def age(seconds: int | None) -> str:
    """An age as kubectl prints it: ``45s``, ``12m``, ``5h``, ``3d``."""
    if seconds is None:
        return "-"
    seconds = max(0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _fields(pairs: Sequence[tuple[str, Any]]) -> list[str]:
    width = max(len(label) for label, _ in pairs) + 2
    return [f"{(label + ':').ljust(width)}{'' if value is None else value}" for label, value in pairs]


def gpuctl_pool_detail_text(pool: dict) -> str:
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
    lines += ["", "Nodes:"]
    node_rows = [
        [n["name"], n["status"], f"{n['gpu_used']}/{n['gpu_total']}", n["gpu_type"] or "-"] for n in pool["nodes"]
    ]
    lines.append(
        gpuctl_table((("NODE NAME", 17), ("STATUS", 13), ("GPU USED/TOTAL", 16), ("GPU TYPE", 0)), node_rows)
        if node_rows
        else "  (none)"
    )
    lines += ["", "Jobs:"]
    job_rows = [
        [j["namespace"], j["name"], j["user"] or "-", j["gpu"], j["phase"], age(j["age_seconds"])] for j in pool["jobs"]
    ]
    lines.append(
        gpuctl_table((("NAMESPACE", 14), ("NAME", 24), ("USER", 12), ("GPUS", 6), ("PHASE", 10), ("AGE", 0)), job_rows)
        if job_rows
        else "  (none)"
    )
    return "\n".join(lines)


def gpuctl_node_detail_text(node: dict) -> str:
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
    lines += ["", "Pods:"]
    pod_rows = [[p["namespace"], p["name"], p["phase"], p["gpu"], age(p["age_seconds"])] for p in node["pods"]]
    lines.append(
        gpuctl_table((("NAMESPACE", 14), ("NAME", 24), ("PHASE", 10), ("GPUS", 6), ("AGE", 0)), pod_rows)
        if pod_rows
        else "  (none)"
    )
    return "\n".join(lines)


def node_labels_text(result: dict) -> str:
    if not result["labels"]:
        return f"node/{result['node']} has no such label" if result.get("key") else f"node/{result['node']}: no labels"
    return "\n".join(f"{key}={value}" for key, value in result["labels"].items())


def _amount(value) -> str:
    """A GPU amount as planners read it: ``-1`` stays ``-1``, whole numbers without a point, else up to 4 places."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        value = float(value)
    return str(value) if isinstance(value, int) else f"{value:.4f}".rstrip("0").rstrip(".")


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
                    _amount(queue.get("deserved", 0)),
                    _amount(queue.get("limit", -1)),
                    _amount(queue.get("over_quota_weight", 2)),
                    queue.get("priority", 100),
                    _amount(queue.get("request", 0)) if queue["name"] not in children else "",
                    _amount(result["fair_share"][queue["name"]]),
                ]
            )
            walk(queue["name"], depth + 1)

    walk(None, 0)
    headers = ["UNIT", "DESERVED", "LIMIT", "WEIGHT", "PRIORITY", "REQUEST", "FAIR SHARE"]
    return f"Capacity: {_amount(document['capacity'])} GPUs\n" + table(headers, rows)


def _quota_cells(unit: dict) -> list:
    return [
        ",".join(unit["node_pools"]) or "-",
        _amount(unit["gpu_quota"]),
        _amount(unit["cpu_quota"]),
        _amount(unit["memory_quota_mib"]),
    ]


def department_list_text(departments: list[dict]) -> str:
    if not departments:
        return "No departments."
    rows = [[d["name"], d["projects"], *_quota_cells(d)] for d in departments]
    return table(
        ["DEPARTMENT", "PROJECTS", "NODE POOLS WITH QUOTA", "GPU QUOTA", "CPU QUOTA", "MEMORY QUOTA (MiB)"], rows
    )


def project_list_text(projects: list[dict]) -> str:
    if not projects:
        return "No projects."
    rows = [[p["name"], p["department"], ",".join(p["namespaces"]), *_quota_cells(p)] for p in projects]
    headers = ["PROJECT", "DEPARTMENT", "NAMESPACES", "NODE POOLS WITH QUOTA", "GPU QUOTA", "CPU QUOTA"]
    return table([*headers, "MEMORY QUOTA (MiB)"], rows)


QUOTA_COLUMNS = (
    ("POOL", "pool"),
    ("UNIT", "unit"),
    ("DEPARTMENT", "department"),
    ("DESERVED", "deserved"),
    ("LIMIT", "limit"),
    ("WEIGHT", "over_quota_weight"),
    ("ALLOCATED", "allocated"),
    ("PENDING", "pending"),
    ("RATIO", "allocation_ratio"),
    ("OVER QUOTA", "over_quota"),
    ("FAIR SHARE", "fair_share"),
    ("OVER FAIR SHARE", "over_fair_share"),
)


def quota_list_text(rows: list[dict]) -> str:
    """``quota list``: one line per unit and pool, a department's projects under it (indented)."""
    if not rows:
        return "No quotas."
    lines = []
    for row in rows:
        cells = []
        for _, key in QUOTA_COLUMNS:
            value = row[key]
            if key == "unit" and row["kind"] == "project":
                value = f"  {value}"
            elif key == "allocation_ratio":
                value = "-" if value is None else f"{value:.0%}"
            elif key != "unit" and key not in ("pool", "department"):
                value = _amount(value)
            cells.append(value)
        lines.append(cells)
    return table([heading for heading, _ in QUOTA_COLUMNS], lines)


# --- GPU utilization: idle GPUs and GPU-hours (issue 13) -------------------------------------------------------

IDLE_COLUMNS = (
    ("NAMESPACE", 0),
    ("POD", 0),
    ("USER", 0),
    ("PROJECT", 0),
    ("POOL", 0),
    ("GPUS", 0),
    ("IDLE GPUS", 0),
    ("IDLE FOR", 0),
)


def duration(seconds: int | None) -> str:
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


def idle_workloads_text(rows: list[dict]) -> str:
    """``get idle``: a workload holding idle GPUs per line, longest idle first; unknown user or project ``-``."""
    if not rows:
        return "No idle GPUs."
    lines = [
        [
            row["namespace"],
            row["pod"],
            row["user"] or "-",
            row["project"] or "-",
            row["pool"] or "-",
            _amount(row["gpus"]),
            _amount(row["idle_gpus"]),
            duration(row["idle_for_seconds"]),
        ]
        for row in rows
    ]
    return gpuctl_table(IDLE_COLUMNS, lines)


def _hours(value: float) -> str:
    return f"{value:.2f}"


def consumption_text(report: dict) -> str:
    """``get consumption``: GPU-hours per group, largest first, then the total and the period counted."""
    by = report["by"]
    lines = [
        [row[by] or "-", _hours(row["allocated_gpu_hours"]), _hours(row["idle_gpu_hours"]), f"{row['idle_share']:.1%}"]
        for row in report["rows"]
    ]
    total = report["total"]
    lines.append(
        ["TOTAL", _hours(total["allocated_gpu_hours"]), _hours(total["idle_gpu_hours"]), f"{total['idle_share']:.1%}"]
    )
    columns = ((by.upper(), 0), ("GPU-HOURS", 0), ("IDLE GPU-HOURS", 0), ("IDLE %", 0))
    period = f"from {report['since']} to {report['until']}, counted in whole {report['resolution']}s"
    return gpuctl_table(columns, lines) + "\n\n" + period
