#!/usr/bin/env python
"""Benchmark: time-based fair share (SEMANTICS §9.3) for 550 units from a week of minute history.

On a fresh database (a temporary SQLite file unless DATABASE_URL is set): a backend with one pool, 50 departments
of 10 projects, and a week of recorded minutes (10,080 rows) in which every project holds some GPUs (its own
steady share, with a daily swing). Then, in the same run:

- the fair share with usage: each project's usage read from the backend's kept sums, then ``fair_shares`` of the
  pool's 550 units with ``k_value`` 1 (what every door computes per pool);
- the naive way: the usage counted from the week of minutes (what the sums spare; a planner's what-if with other
  settings reads this way), then the same fair shares; checked to give the same usage;
- one minute's recording: the row written and the sums folded forward (the worker's cost each minute);
- the same with the sums counted again from the week (the naive recording).

Each is run ``--runs`` times (3) of ``--iterations`` calls; it prints the median of the run medians, their spread,
the SQL query count, the history's size on disk (PostgreSQL) and the load average before and after.

    .venv/bin/python scripts/bench_fair_share_usage.py [--days 7] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_node_pools import report, setup_django  # noqa: E402

DEPARTMENTS, PROJECTS_PER_DEPARTMENT = 50, 10
CAPACITY = 800.0


def build(days: int, end: datetime):
    from pools import services
    from pools.choices import ConfigType
    from pools.engine import fairshare
    from pools.models import Backend, ProjectUsageMinute

    gpu = [{"nodePool": "bench", "gpu": {"deserved": 1, "overQuotaWeight": 2}}]
    projects = [f"proj-{d:02d}-{p}" for d in range(DEPARTMENTS) for p in range(PROJECTS_PER_DEPARTMENT)]
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"bench": {"kind": "file", "fair_share": {"k_value": 1, "window": f"{days}d"}}},
            ConfigType.POOL: {"bench": {"backend": "bench"}},
            ConfigType.DEPARTMENT: {f"dept-{d:02d}": {"resources": gpu} for d in range(DEPARTMENTS)},
            ConfigType.PROJECT: {
                name: {"department": f"dept-{name[5:7]}", "resources": gpu, "namespaces": [f"runai-{name}"]}
                for name in projects
            },
        },
        actor=services.SYSTEM,
    )
    backend = Backend.objects.get(name="bench")
    minutes = days * 1440
    start = end - timedelta(minutes=minutes - 1)
    rows = []
    for index in range(minutes):
        swing = 1 + 0.5 * ((index // 60) % 24 >= 12)
        allocated = {name: round(((number * 7) % 13 / 13) * 2.4 * swing, 1) for number, name in enumerate(projects)}
        rows.append(
            ProjectUsageMinute(
                backend=backend, at=start + timedelta(minutes=index), seconds=60, capacity=CAPACITY, allocated=allocated
            )
        )
    ProjectUsageMinute.objects.bulk_create(rows, batch_size=500)
    queues = [fairshare.Queue(f"dept-{d:02d}", None, 2, -1, 1 + d % 3, 100, 40) for d in range(DEPARTMENTS)]
    queues += [fairshare.Queue(name, f"dept-{name[5:7]}", 1, -1, 2, 100, 4.5) for name in projects]
    return backend, projects, queues


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings
    from django.db import connection

    from pools import selectors, services
    from pools.engine import fairshare, pastusage
    from pools.models import ProjectUsageMinute, ProjectUsageSums

    end = datetime.now(tz=UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    started = time.perf_counter()
    backend, projects, queues = build(args.days, end)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(
        f"built {ProjectUsageMinute.objects.count():,} minutes of {len(projects)} projects in "
        f"{time.perf_counter() - started:.0f} s on {engine}"
    )
    kept = pastusage.read_settings(backend.fair_share)[1]
    other = kept._replace(half_life=86400)  # settings the sums were not kept for: read from the minutes
    started = time.perf_counter()
    services.project_usage_record(at=end + timedelta(minutes=1))  # the first recording counts the week
    print(f"first recording (the week counted into the sums): {(time.perf_counter() - started) * 1000:.0f} ms")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_total_relation_size(%s)", [ProjectUsageMinute._meta.db_table])
            print(f"a week of minutes on disk: {cursor.fetchone()[0] / 2**20:.1f} MiB (with TOAST and index)")

    def with_kept_sums():
        usage = selectors.project_usage({backend.pk: kept})[backend.pk]
        return fairshare.fair_shares(CAPACITY, _with_usage(queues, usage), k_value=1)

    def from_the_minutes():
        usage = _naive_usage(backend.pk, kept)
        return fairshare.fair_shares(CAPACITY, _with_usage(queues, usage), k_value=1)

    sums_usage = selectors.project_usage({backend.pk: kept})[backend.pk]
    naive = _naive_usage(backend.pk, kept)
    assert sums_usage.keys() == naive.keys() and all(abs(sums_usage[k] - naive[k]) < 2e-6 for k in naive)
    assert with_kept_sums() == from_the_minutes()
    print(f"{len(sums_usage)} projects with usage; the kept sums and the minutes give the same usage and shares")
    moment = [end + timedelta(minutes=2)]

    def record_one():
        moment[0] += timedelta(minutes=1)
        services.project_usage_record(at=moment[0])

    def record_counting_again():
        ProjectUsageSums.objects.filter(backend=backend).update(half_life=None if kept.half_life else 1)
        record_one()

    cases = [
        ("fair share with usage from the kept sums, 550 units", with_kept_sums),
        ("naive: usage counted from the week of minutes, same shares", from_the_minutes),
        (
            "usage only, other settings (a what-if): from the minutes",
            lambda: selectors.project_usage({backend.pk: other}),
        ),
        ("one minute recorded and folded into the sums", record_one),
        ("naive: one minute recorded, the sums counted again", record_counting_again),
    ]
    report(cases, args.runs, args.iterations)


def _with_usage(queues, usage):
    from pools.engine import fairshare

    by_department: dict[str, float] = {}
    for name, value in usage.items():
        department = f"dept-{name[5:7]}"
        by_department[department] = by_department.get(department, 0.0) + value
    return [
        queue._replace(usage=round(min(1.0, usage.get(queue.name, by_department.get(queue.name, 0.0))), 6))
        if isinstance(queue, fairshare.Queue)
        else queue
        for queue in queues
    ]


def _naive_usage(backend_id, wanted):
    from pools import selectors
    from pools.engine import pastusage

    now = datetime.now(tz=UTC)
    samples = list(
        selectors.project_usage_minutes(backend_id, since=now - timedelta(seconds=wanted.window + 3600), until=now)
    )
    return pastusage.usage_over(samples, now=samples[-1].at, window=wanted.window, half_life=wanted.half_life)


if __name__ == "__main__":
    main()
