"""The table of workloads (SEMANTICS §10): the Workloads page, its CSV and JSON, the API's CSV and
``poolctl get workloads``."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from .base import CSV, Column, Table
from .formats import amount, count, dash, human_duration


def workload_gpus(row) -> str:
    """A workload's GPUs as people name them (SEMANTICS §6.1): whole GPUs as a number, MIG slices by their profile."""
    parts = [amount(row["gpus"])] if row["gpus"] or not row["mig"] else []
    parts += [f"{count} × {profile}" for profile, count in sorted(row["mig"].items())]
    return " + ".join(parts)


def pod_counts(row) -> str:
    """Pods running / pending / done."""
    pods = row["pods"]
    return f"{pods['running']}/{pods['pending']}/{pods['done']}"


def start_time(value) -> str:
    """A start estimate's time (ISO) as the list shows it: to the minute; ``—`` when there is none."""
    return value[:16].replace("T", " ") if value else "—"


def start_text(start) -> str:
    """A workload's start estimate (SEMANTICS §10.1) in a sentence, with what it was learned from."""
    if not start:
        return ""
    if not start.get("likely"):
        return "no estimate: nothing it waits for has a learned runtime, or it would not start within 30 days"
    text = f"likely {start_time(start['likely'])}, at the latest {start_time(start.get('late'))}"
    runtime = start.get("runtime")
    if runtime:
        basis = {"project": "its project's", "kind": "the backend's", "backend": "all the backend's"}.get(
            runtime.get("basis"), ""
        )
        text += (
            f" (it runs {human_duration(runtime['median'])}, at most {human_duration(runtime['p90'])}: "
            f"{basis} {runtime['finished']} finished runs)"
        )
    return text


WORKLOADS = Table(
    "workloads",
    (
        Column("backend", "BACKEND", where=frozenset({CSV})),
        Column("namespace", "NAMESPACE"),
        Column("name", "NAME"),
        Column("kind", "KIND"),
        Column("project", "PROJECT", text=dash),
        Column("pool", "POOL", text=dash),
        Column("user", "USER", text=dash),
        Column("priority_class", "PRIORITY", text=dash),
        Column("preemptible", "PREEMPTIBLE", text=lambda value: "yes" if value else "no"),
        Column("gpus", "GPUS", value=workload_gpus, numeric=True),
        Column("pods", "RUN/PEND/DONE", value=pod_counts),
        Column("phase", "PHASE"),
        Column("reason", "REASON", text=dash),
        Column("created", "CREATED", where=frozenset({CSV})),
        Column("started", "STARTED", where=frozenset({CSV})),
        Column("waiting_since", "WAITING SINCE", text=dash),
        Column("likely_start", "LIKELY START", text=start_time),
        Column("late_start", "LATE START", text=start_time, where=frozenset({CSV})),
    ),
    empty="No workloads.",
    style="gpuctl",
)


# The names the workload page gives a verdict's figures (``engine.verdicts``); any other reads as its key.
FIGURE_LABELS = {
    "free": "free GPUs",
    "largest_free": "largest free block",
    "largest": "largest node",
    "largest_by_product": "largest node per product",
    "gpus": "GPUs one pod asks",
    "fair_share": "fair share",
    "freed": "GPUs taken back",
    "node_selector": "nodeSelector",
    "waiting_seconds": "waiting",
    "scheduled_message": "PodScheduled",
}
# Figures that are a time in seconds, and mappings whose entries read ``key=value`` (labels) rather than ``key value``.
DURATION_FIGURES = {"waiting_seconds"}
LABEL_FIGURES = {"node_selector"}


def _figure_text(value) -> str:
    """One figure as people read it: a number with separators, a list joined, a free block as ``8 on a, b``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float | Decimal):
        return count(value)
    if isinstance(value, list | tuple):
        return ", ".join(_figure_text(item) for item in value) or "—"
    if isinstance(value, Mapping):
        if "gpus" in value and "nodes" in value:  # a free block: its GPUs and the nodes holding it
            nodes = list(value["nodes"])
            more = (value.get("node_count") or len(nodes)) - len(nodes)
            on = ", ".join(nodes) + (f" and {more} more" if more > 0 else "")
            return f"{count(value['gpus'])} on {on}" if on else count(value["gpus"])
        return ", ".join(f"{key or 'GPUs'} {_figure_text(item)}" for key, item in value.items()) or "—"
    return str(value) if value not in (None, "") else "—"


def verdict_figures(figures: Mapping) -> list[dict]:
    """A verdict check's figures (``engine.verdicts.Check.figures``) as ``{"label", "value"}`` texts, in their order:
    a mapping per GPU product reads ``H100 8, A100 4``, a list is joined, seconds read as a duration."""
    laid_out = []
    for key, value in (figures or {}).items():
        if key in DURATION_FIGURES:
            text = human_duration(value)
        elif key in LABEL_FIGURES and isinstance(value, Mapping):
            text = ", ".join(f"{name}={label}" for name, label in value.items()) or "—"
        else:
            text = _figure_text(value)
        laid_out.append({"label": FIGURE_LABELS.get(key, key.replace("_", " ")), "value": text})
    return laid_out


def workload_text(workload) -> str:
    """``poolctl describe workload``: a workload's figures, why it waits, its pods and its phases."""
    pods = workload["pods"]
    lines = [
        f"Name:            {workload['namespace']}/{workload['name']}",
        f"Kind:            {workload['kind']}",
        f"Backend:         {workload['backend']}",
        f"Project:         {workload['project'] or '-'}",
        f"Pool:            {workload['pool'] or '-'}",
        f"User:            {workload['user'] or '-'}",
        f"Priority class:  {workload['priority_class'] or '-'}{' (preemptible)' if workload['preemptible'] else ''}",
        f"GPUs:            {workload_gpus(workload)}",
        f"Pods:            {pods['running']} running, {pods['pending']} pending, {pods['done']} done",
        f"Phase:           {workload['phase']}",
        f"Created:         {workload['created'] or '-'}",
        f"Started:         {workload['started'] or '-'}",
        f"Waiting since:   {workload['waiting_since'] or '-'}",
    ]
    start = (workload.get("verdict") or {}).get("start")
    if start:
        lines.append(f"Starts:          {start_text(start)}")
    verdict = workload.get("verdict")
    if verdict:
        lines += ["", f"Waits:           {verdict.get('reason', '')}"]
        for check in verdict.get("checks", []):
            figures = "; ".join(f"{f['label']}: {f['value']}" for f in verdict_figures(check.get("figures")))
            lines.append(
                f"  {check.get('reason', '')}: {check.get('message', '')}" + (f" ({figures})" if figures else "")
            )
        if workload["victims"]:
            lines.append("Victims:")
            lines += [
                f"  {v.get('namespace', '')}/{v.get('name', '')} ({v.get('kind', '')}, "
                f"project {v.get('project') or '-'}, {amount(v.get('gpus', 0))} GPUs)"
                for v in workload["victims"]
            ]
    lines += ["", "Pods:"]
    for pod in workload["pod_list"]:
        waiting = f"  {pod['scheduled_reason']}: {pod['scheduled_message']}" if pod["scheduled_reason"] else ""
        lines.append(f"  {pod['name']}  {pod['phase']}  node {pod['node'] or '-'}  GPUs {amount(pod['gpus'])}{waiting}")
    lines += ["", "History:"]
    lines += [f"  {step['at']}  {step['phase']}: {step['event']} ({step['pods']})" for step in workload["history"]]
    return "\n".join(lines)
