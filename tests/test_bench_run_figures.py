"""The sync benchmark's summary of several runs (scripts/bench/run_figures.py): median, spread, runs on target."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts" / "bench"))

from run_figures import Measure, format_spread, summarise, summary_table  # noqa: E402

MEASURES = [
    Measure("sync_s", "first sync", "s", 15),
    Measure("applied_per_s", "events applied", "/s", 1000, at_least=True),
    Measure("read_ms", "pool list read", "ms"),
]
RUNS = [
    {"sync_s": 14.0, "applied_per_s": 1000, "read_ms": 40},
    {"sync_s": 21.5, "applied_per_s": 990, "read_ms": 50},
    {"sync_s": 15.0, "applied_per_s": 1000, "read_ms": 45},
]


def test_median_spread_and_the_runs_within_each_target():
    summary = summarise(RUNS, MEASURES)

    assert summary["sync_s"] == {"median": 15.0, "min": 14.0, "max": 21.5, "runs": 3, "met": 2}
    assert summary["applied_per_s"]["met"] == 2  # a rate must reach its target, not stay under it
    assert summary["read_ms"] == {"median": 45, "min": 40, "max": 50, "runs": 3, "met": None}


def test_a_run_without_a_figure_is_left_out_of_that_measure_only():
    runs = [{"p95_ms": 100, "sync_s": 3.0}, {"p95_ms": None, "sync_s": 4.0}, {"p95_ms": 700, "sync_s": 5.0}]
    measures = [Measure("p95_ms", "p95", "ms", 500), Measure("sync_s", "sync", "s"), Measure("rss_mb", "RSS", "MB")]

    summary = summarise(runs, measures)

    assert summary["p95_ms"] == {"median": 400, "min": 100, "max": 700, "runs": 2, "met": 1}
    assert summary["sync_s"]["runs"] == 3
    assert "rss_mb" not in summary


def test_the_table_shows_median_spread_target_and_runs_meeting_it():
    lines = summary_table(summarise(RUNS, MEASURES), MEASURES)

    rows = {line.split("  ")[0]: line.split() for line in lines[1:]}
    assert rows["first sync"][2:] == ["15.0", "s", "14.0-21.5", "s", "<=", "15", "s", "2", "of", "3"]
    assert rows["events applied"][2:] == ["1,000/s", "990-1,000/s", ">=", "1,000/s", "2", "of", "3"]
    assert rows["pool list read"][3:] == ["45", "ms", "40-50", "ms"]


def test_both_ends_of_a_spread_are_as_precise():
    assert format_spread(8.234, 10.71, "s") == "8.2-10.7 s"
    assert format_spread(0.41, 0.883, "s") == "0.41-0.88 s"
    assert format_spread(990, 1000, "/s") == "990-1,000/s"
