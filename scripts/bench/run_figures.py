"""Several runs' figures summed up: the median and the spread of each measure, against its target.

Plain Python, no Django: `scripts/bench_sync.py` prints and writes these, and a test checks them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """One figure of a run: ``key`` in the run's figures, its unit (``s``, ``ms``, ``MB``, ``/s``) and target.

    The target is a bound the figure must stay under (``at_least``: reach); None when there is none.
    """

    key: str
    label: str
    unit: str
    target: float | None = None
    at_least: bool = False

    def meets(self, value: float) -> bool:
        return value >= self.target if self.at_least else value <= self.target

    def target_text(self) -> str:
        if self.target is None:
            return ""
        bound = f"{self.target:,.0f}" if float(self.target).is_integer() else f"{self.target:g}"
        return f"{'>=' if self.at_least else '<='} {bound}{_suffix(self.unit)}"


def _number(value: float, unit: str, scale: float | None = None) -> str:
    """``value`` as precise as it is worth reading in ``unit``: 0.41 s, 21.1 s, 1,113 MB, 637 ms.

    Seconds get two decimals under 10 (of ``scale`` when given, so that a range's two ends match), else one.
    """
    if unit == "s":
        return f"{value:.2f}" if (value if scale is None else scale) < 10 else f"{value:,.1f}"
    return f"{value:,.0f}"


def _suffix(unit: str) -> str:
    return unit if unit == "/s" else f" {unit}"


def format_value(value: float | None, unit: str) -> str:
    """``value`` with its unit, or ``n/a`` for a figure the run does not have."""
    return "n/a" if value is None else _number(value, unit) + _suffix(unit)


def format_spread(low: float, high: float, unit: str) -> str:
    """``low-high unit``: the unit once, both ends as precise."""
    return f"{_number(low, unit, high)}-{_number(high, unit)}{_suffix(unit)}"


def summarise(runs: list[dict], measures: list[Measure]) -> dict[str, dict]:
    """Per measure: ``median``, ``min``, ``max`` over the runs that have it, ``runs`` (how many) and ``met``.

    ``met`` counts the runs within the target (None without a target). A run without the figure (its watch
    applied no event, say) is left out of that measure; a measure no run has is left out altogether.
    """
    summary = {}
    for measure in measures:
        values = [run[measure.key] for run in runs if run.get(measure.key) is not None]
        if not values:
            continue
        summary[measure.key] = {
            "median": statistics.median(values),
            "min": min(values),
            "max": max(values),
            "runs": len(values),
            "met": None if measure.target is None else sum(measure.meets(value) for value in values),
        }
    return summary


def summary_table(summary: dict[str, dict], measures: list[Measure]) -> list[str]:
    """The summary as aligned text lines: measure, median, spread (min-max), target, runs meeting it."""
    lines = [f"{'measure':<44} {'median':>10}  {'spread (min-max)':<20} {'target':<12} met"]
    for measure in measures:
        row = summary.get(measure.key)
        if row is None:
            continue
        spread = format_spread(row["min"], row["max"], measure.unit)
        met = "" if row["met"] is None else f"{row['met']} of {row['runs']}"
        lines.append(
            f"{measure.label:<44} {format_value(row['median'], measure.unit):>10}  {spread:<20} "
            f"{measure.target_text():<12} {met}".rstrip()
        )
    return lines
