"""The tables of GPU utilization: the workloads holding idle GPUs and the GPU-hours consumed and wasted (their
pages' CSV and JSON, the API's CSV, ``poolctl get idle|consumption``)."""

from __future__ import annotations

from ..choices import ConsumptionBy
from .base import CSV, Column, Table
from .formats import amount, dash, hours, kubectl_duration


def _held(whole: str, slices: str):
    """GPUs as people name them (SEMANTICS §6.1): whole GPUs as a number, MIG slices by their profile
    (``2 × 3g.40gb``), never as a decimal of a GPU."""

    def shown(row) -> str:
        parts = [amount(row[whole])] if row[whole] or not row[slices] else []
        parts += [f"{count} × {profile}" for profile, count in sorted(row[slices].items())]
        return " + ".join(parts)

    return shown


held_gpus = _held("gpus", "mig")  # what an idle workload's row holds, as people read it
idle_gpus = _held("idle_gpus", "idle_mig")  # the idle part of it

IDLE = Table(
    "idle-gpus",
    (
        Column("backend", "BACKEND", where=frozenset({CSV})),
        Column("namespace", "NAMESPACE"),
        Column("pod", "POD"),
        Column("user", "USER", text=dash),
        Column("project", "PROJECT", text=dash),
        Column("pool", "POOL", text=dash),
        Column("node", "NODE", where=frozenset({CSV})),
        Column("gpus", "GPUS", value=held_gpus, numeric=True),
        Column("idle_gpus", "IDLE GPUS", value=idle_gpus, numeric=True),
        Column("idle_since", "IDLE SINCE", where=frozenset({CSV})),
        Column("idle_for_seconds", "IDLE FOR", text=kubectl_duration, numeric=True),
    ),
    empty="No idle GPUs.",
    style="gpuctl",
)

_HOURS = (
    Column("allocated_gpu_hours", "GPU-HOURS", text=hours, numeric=True),
    Column("idle_gpu_hours", "IDLE GPU-HOURS", text=hours, numeric=True),
    Column("idle_share", "IDLE %", text=lambda value: f"{value:.1%}", numeric=True),
)

# One table per ``by``: the first column is what the hours are counted by.
CONSUMPTION = {
    by: Table(f"gpu-consumption-{by}", (Column(by, by.upper(), text=dash), *_HOURS), empty="", style="gpuctl")
    for by in ConsumptionBy.values
}
