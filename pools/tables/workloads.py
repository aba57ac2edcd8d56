"""The table of workloads (SEMANTICS §10): the Workloads page, its CSV and JSON, the API's CSV and
``poolctl get workloads``."""

from __future__ import annotations

from .base import CSV, Column, Table
from .formats import amount, dash


def workload_gpus(row) -> str:
    """A workload's GPUs as people name them (SEMANTICS §6.1): whole GPUs as a number, MIG slices by their profile."""
    parts = [amount(row["gpus"])] if row["gpus"] or not row["mig"] else []
    parts += [f"{count} × {profile}" for profile, count in sorted(row["mig"].items())]
    return " + ".join(parts)


def pod_counts(row) -> str:
    """Pods running / pending / done."""
    pods = row["pods"]
    return f"{pods['running']}/{pods['pending']}/{pods['done']}"


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
    ),
    empty="No workloads.",
    style="gpuctl",
)


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
    verdict = workload.get("verdict")
    if verdict:
        lines += ["", f"Waits:           {verdict.get('reason', '')}"]
        for check in verdict.get("checks", []):
            figures = ", ".join(f"{key}={value}" for key, value in sorted((check.get("figures") or {}).items()))
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
