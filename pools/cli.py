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


def check_text(result: dict) -> str:
    head = f"Pool {result['pool']}, platform {result['platform']}: {'PASSED' if result['passed'] else 'FAILED'}"
    lines = [head] + [f"  - {error}" for error in result["errors"]]
    if result["nodes"]:
        rows = [[n["node"], "pass" if n["passed"] else "fail", "; ".join(n["errors"])] for n in result["nodes"]]
        lines += ["", table(["Node", "Result", "Failed rules"], rows)]
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
