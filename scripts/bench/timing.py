"""How the benchmark scripts time a call and say how busy the machine was (docs/performance.md)."""

from __future__ import annotations

import os
import statistics
import time


def loadavg() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as the figures print them."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def timed(function, runs: int, iterations: int) -> dict:
    """``runs`` runs of ``iterations`` calls after one warm-up: the median of the run medians and their spread, in
    ms (``runs``: each run's median)."""
    function()
    medians = []
    for _ in range(runs):
        times = []
        for _ in range(iterations):
            started = time.perf_counter()
            function()
            times.append((time.perf_counter() - started) * 1000)
        medians.append(statistics.median(times))
    return {"median": statistics.median(medians), "low": min(medians), "high": max(medians), "runs": medians}
