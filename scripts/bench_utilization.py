#!/usr/bin/env python
"""Benchmark: GPU utilization rounds, the idle list and the consumption report at 5,000 nodes x 8 GPUs.

The fleet of ``scripts/bench_prometheus.py`` (5,000 H100 nodes, 40,000 GPUs, 12,500 pods in 40 namespaces) is
served by the simulated DCGM exporter in a child process (its text made once a second at most) and scraped by
Debian's ``prometheus`` every ``--scrape-interval`` seconds. The same nodes and pods are in a fresh database (a
temporary SQLite file; with ``DATABASE_URL`` pointing at PostgreSQL, a temporary database on that server, dropped at
the end) as a file backend whose ``prometheus_url`` is that Prometheus: 10 label pools of 500 nodes, 200 users (the
pods' ``osmo.user``), a project per namespace. The idle rule is the default one (0 % for 300 s); the exporter's model
makes about a third of the pods quiet (the fifth that never works, and bursty ones between bursts).

Once Prometheus holds five scrapes (more than the 60 s a round asks about) it times, in the same run:

a) ``services.utilization_record`` end to end (four queries for the gauges and one for the quiet devices over the
   time since the last round, then the quiet devices, a sample per pool and the GPU-hours written): a first round
   (no round before it: it asks about the whole idle duration), a second one (the quiet devices found), then
   ``--runs`` more, as a worker runs them, with the read part (``read_seconds``) apart; and the naive read: one
   query per GPU and one per pod (``bench_prometheus.naive_per_gpu`` / ``naive_per_pod``) on a sample of
   ``--sample``, extrapolated.
b) with 30 days of ``GpuConsumption`` rows for every (pool, dimension, value) the rounds wrote (hourly rows for the
   last 8 days, daily ones for 30, bulk-created from the current hour's figures with some noise):
   the quiet devices made quiet for an hour (so every one of them is idle), ``selectors.idle_workloads`` and
   ``selectors.consumption_report`` (by user and by pool over 30 days, by user over
   7 days) for ``SYSTEM``, ``--runs`` runs of ``--iterations`` calls; and the naive ways: the idle list with one query
   per idle GPU for its pod, and the report summed in Python over every row of the period read as objects. Both are
   checked to give the selectors' answers.

Prints medians, spread, SQL query counts and the load average (``/proc/loadavg``) before and after. Not a test.

    .venv/bin/python scripts/bench_utilization.py [--nodes 5000] [--runs 3] [--sample 200] [--scrape-interval 15]
        [--profile]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict, deque
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

import bench_prometheus  # noqa: E402
from bench_node_pools import ListSource, loadavg, setup_django  # noqa: E402
from bench_node_pools import timed as timed_calls  # noqa: E402
from prometheus_server import PrometheusServer, wait_until  # noqa: E402

from pools.telemetry.prometheus import FB_USED, PrometheusClient, gpu_utilization, idle_since  # noqa: E402

POOLS, USERS = 10, 200
POOL_LABEL = "example.com/pool"
BACKEND = "bench"
HOURLY_DAYS, DAILY_DAYS = 8, 30


def fleet(nodes: int) -> tuple[list[dict], list[dict]]:
    """``bench_prometheus.fleet`` (what the exporter serves) with a pool label on each node (10 blocks of nodes) and
    a user on each pod; neither changes what the exporter serves."""
    node_objects, pod_objects = bench_prometheus.fleet(nodes)
    for index, node in enumerate(node_objects):
        node["metadata"]["labels"][POOL_LABEL] = f"pool-{index * POOLS // nodes}"
    for index, pod in enumerate(pod_objects):
        pod["metadata"]["labels"]["osmo.user"] = f"user-{(index * 7919) % USERS:03d}"
    return node_objects, pod_objects


def postgres_database() -> tuple[str, str] | None:
    """With DATABASE_URL on PostgreSQL: a new empty database on that server for this run (DATABASE_URL now names
    it); returns (the server's maintenance URL, the database) to drop it at the end."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    import psycopg

    parts = urlsplit(url)
    name = f"bench_utilization_{os.getpid()}"
    maintenance = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
    return maintenance, name


def postgres_drop(database: tuple[str, str]) -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    maintenance, name = database
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')


def build(inventory: Path, nodes: int, prometheus_url: str):
    """The backend (with its Prometheus), 10 label pools, a department and a project per namespace, then one sync."""
    import json

    from pools import services
    from pools.choices import ConfigType
    from pools.models import Backend

    node_objects, pod_objects = fleet(nodes)
    path = inventory / "bench.json"
    with path.open("w") as out:  # what `poolctl` would look at; the sync is handed the whole List
        json.dump({"apiVersion": "v1", "kind": "List", "items": node_objects}, out)
    namespaces = sorted({pod["metadata"]["namespace"] for pod in pod_objects})
    services.config_apply(
        changes={
            ConfigType.BACKEND: {BACKEND: {"kind": "file", "source": str(path), "prometheus_url": prometheus_url}},
            ConfigType.POOL: {
                f"pool-{index}": {"backend": BACKEND, "node_label": {"key": POOL_LABEL, "value": f"pool-{index}"}}
                for index in range(POOLS)
            },
            ConfigType.DEPARTMENT: {"research": {}},
            ConfigType.PROJECT: {
                namespace: {"department": "research", "namespaces": [namespace]} for namespace in namespaces
            },
        },
        actor=services.Actor.system("bench"),
    )
    backend = Backend.objects.get(name=BACKEND)
    document = {"apiVersion": "v1", "kind": "List", "items": node_objects + pod_objects}
    services.backend_sync(backend=backend, source=ListSource(document))
    backend.refresh_from_db()
    return backend


def history(backend, now, idle_share: float) -> int:
    """Hourly GpuConsumption rows for the last 8 days and daily ones for 30, for every (pool, dimension, value) of
    the current hour's rows: per hour, the GPUs the pods hold shared out as the current rows share them (x 0.8-1.2),
    ``idle_share`` of them idle (x 0.5-1.5); a day's row is its hours' sum where there are hourly rows, as the rounds
    write them. Bulk-created; returns the rows made."""
    from django.db.models import Sum

    from pools.models import GpuConsumption, Pod

    this_hour = now.replace(minute=0, second=0, microsecond=0)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    current = list(
        GpuConsumption.objects.filter(backend=backend, resolution=GpuConsumption.Resolution.HOUR, start=this_hour)
    )
    held = float(Pod.objects.filter(backend=backend).exclude(node_name="").aggregate(gpus=Sum("gpu"))["gpus"])
    by_pool = sum(row.allocated for row in current if row.dimension == "pool")
    scale = held / by_pool  # GPU-hours in an hour per GPU-hour counted in the current rows
    rng = random.Random(13)
    rows = []
    days: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])

    def add(resolution, start, row, hours):
        allocated = round(row.allocated * scale * hours * rng.uniform(0.8, 1.2), 4)
        idle = round(min(allocated, allocated * idle_share * rng.uniform(0.5, 1.5)), 4)
        rows.append(
            GpuConsumption(
                backend=backend,
                resolution=resolution,
                start=start,
                pool=row.pool,
                dimension=row.dimension,
                value=row.value,
                allocated=allocated,
                idle=idle,
            )
        )
        return allocated, idle

    for row in current:
        for hours_back in range(1, HOURLY_DAYS * 24 + 1):
            start = this_hour - timedelta(hours=hours_back)
            allocated, idle = add(GpuConsumption.Resolution.HOUR, start, row, 1)
            day = days[(start.replace(hour=0), row.pool, row.dimension, row.value)]
            day[0] += allocated
            day[1] += idle
        for days_back in range(1, DAILY_DAYS + 1):
            start = today - timedelta(days=days_back)
            summed = days.get((start, row.pool, row.dimension, row.value))
            if summed is None:
                add(GpuConsumption.Resolution.DAY, start, row, 24)
            else:
                rows.append(
                    GpuConsumption(
                        backend=backend,
                        resolution=GpuConsumption.Resolution.DAY,
                        start=start,
                        pool=row.pool,
                        dimension=row.dimension,
                        value=row.value,
                        allocated=round(summed[0], 4),
                        idle=round(summed[1], 4),
                    )
                )
    GpuConsumption.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def naive_idle(now) -> list[tuple]:
    """The idle list the naive way: every quiet GPU read as an object, the idle ones kept, then one query per idle
    GPU for its pod (the GPUs it holds); grouped per pod in Python, longest idle first."""
    from pools.engine import utilization as engine
    from pools.models import Pod, QuietGpu

    groups: dict[tuple, dict] = {}
    for row in QuietGpu.objects.select_related("backend"):
        if engine.idle_for(row.quiet_since.timestamp(), now.timestamp(), duration=300) is None:
            continue
        pod = Pod.objects.filter(backend_id=row.backend_id, namespace=row.namespace, name=row.pod).first()
        held = 0.0
        if pod is not None:
            slices = sum(
                engine.device_share(mig_profile=profile) * int(count)
                for profile, count in (pod.mig_devices or {}).items()
            )
            held = float(pod.gpu or 0) + float(slices)
        entry = groups.setdefault(
            (row.backend_id, row.namespace, row.pod),
            {"backend": row.backend.name, "idle_gpus": 0.0, "gpus": held, "since": row.quiet_since},
        )
        entry["idle_gpus"] += row.gpus
        entry["since"] = max(entry["since"], row.quiet_since)
    found = sorted(groups.items(), key=lambda item: (item[1]["since"], item[0][1], item[0][2]))
    return [(namespace, pod, max(entry["gpus"], entry["idle_gpus"])) for (_, namespace, pod), entry in found]


def naive_consumption(by: str, since: str, until: str, resolution: str) -> list[tuple]:
    """The consumption report the naive way: every row of the period read as an object (the days' rows of whole days,
    the hours' of the parts around them), summed in Python."""
    from datetime import datetime

    from pools.models import GpuConsumption

    low, high = datetime.fromisoformat(since), datetime.fromisoformat(until)
    first_day = low.replace(hour=0, minute=0, second=0, microsecond=0)
    first_day += timedelta(days=1) if first_day != low else timedelta(0)
    last_day = high.replace(hour=0, minute=0, second=0, microsecond=0)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in GpuConsumption.objects.filter(start__gte=low, start__lt=high):
        if resolution == "day" or first_day >= last_day:
            counted = row.resolution == resolution
        elif row.resolution == "day":
            counted = first_day <= row.start < last_day
        else:
            counted = row.start < first_day or row.start >= last_day
        if counted and row.dimension == by:
            totals[row.value][0] += row.allocated
            totals[row.value][1] += row.idle
    ordered = sorted(totals.items(), key=lambda item: (-item[1][0], item[0]))
    return [(value, round(allocated, 2), round(idle, 2)) for value, (allocated, idle) in ordered]


def serve_niced(connection, nodes: int) -> None:
    """The stand-in exporter at the lowest priority: real exporters run on the GPU nodes, not beside the console, so
    its 40 MB of text every scrape should take what the console and Prometheus leave."""
    os.nice(19)
    bench_prometheus.serve(connection, nodes)


def seconds_summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s (runs {min(values):.3f}-{max(values):.3f}, n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sample", type=int, default=200, help="GPUs and pods read the naive way")
    parser.add_argument("--scrape-interval", type=float, default=15)
    parser.add_argument("--profile", action="store_true", help="print cProfile's figures of one more round")
    args = parser.parse_args()
    devices = args.nodes * bench_prometheus.GPUS_PER_NODE
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop Prometheus and the exporter on the way out

    parent, child = multiprocessing.Pipe()
    exporter = multiprocessing.Process(target=serve_niced, args=(child, args.nodes), daemon=True)
    exporter.start()
    target = parent.recv()
    directory = Path(tempfile.mkdtemp(prefix="bench-utilization-"))
    prometheus = PrometheusServer(directory, [target], scrape_interval=args.scrape_interval).start()
    client = PrometheusClient(prometheus.url, read_timeout=30)
    database = postgres_database()
    inventory = None
    try:
        inventory = setup_django()
        from django.conf import settings
        from django.utils import timezone

        from accounts.access import SYSTEM
        from pools import selectors, services
        from pools.models import GpuConsumption, Pod, QuietGpu, UtilizationSample

        engine_name = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        started = time.perf_counter()
        backend = build(inventory, args.nodes, prometheus.url)
        print(
            f"{args.nodes} nodes x {bench_prometheus.GPUS_PER_NODE} GPUs = {devices} devices, "
            f"{Pod.objects.count()} pods, {POOLS} pools, {USERS} users in the database ({engine_name}) "
            f"in {time.perf_counter() - started:.0f} s; Prometheus scrapes every {args.scrape_interval:g} s, "
            f"idle after {settings.GPUPOOL['IDLE_SECONDS']:g} s at {settings.GPUPOOL['IDLE_THRESHOLD_PERCENT']:g} %"
        )
        one = f'count_over_time({FB_USED}{{Hostname="gpu-00000",gpu="0"}}[10m])'
        wait_until(
            lambda: (client.query(one) or [None])[0] and client.query(one)[0].value >= 5,
            timeout=120 + 4 * args.scrape_interval,
            what="five scrapes",
            interval=1,
        )
        print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")

        # a) the round
        first = services.utilization_record(backend=backend)
        assert first.get("devices") == devices, first
        second = services.utilization_record(backend=backend)
        quiet_pods = QuietGpu.objects.values("namespace", "pod").distinct().count()
        print(
            f"a) utilization_record, first round (asks about the idle duration): {first['seconds']:.3f} s (read "
            f"{first['read_seconds']:.3f} s); second round (the quiet devices found): {second['seconds']:.3f} s; "
            f"{second['devices']} devices, {second['quiet']} quiet GPUs of {quiet_pods} pods "
            f"({100 * quiet_pods / Pod.objects.count():.0f} % of the pods), {second['pools']} pool samples, "
            f"{second['consumption_rows']} GPU-hour rows"
        )
        assert second["quiet"], "no quiet GPU found: the rounds below would measure a fleet without any"
        rounds, reads = [], []
        for _ in range(args.runs):
            result = services.utilization_record(backend=backend)
            assert result.get("devices") == devices and result["quiet"], result
            rounds.append(result["seconds"])
            reads.append(result["read_seconds"])
        if args.profile:
            import cProfile
            import pstats

            profile = cProfile.Profile()
            profile.runcall(services.utilization_record, backend=backend)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        print(f"   utilization_record, one round (target <= 2 s): {seconds_summary(rounds)}")
        print(f"     of which reading Prometheus (5 queries): {seconds_summary(reads)}")
        writes = [total - read for total, read in zip(rounds, reads, strict=True)]
        print(f"     of which the database (workloads, idle rows, samples, GPU-hours): {seconds_summary(writes)}")
        at = time.time()
        alone = [bench_prometheus.timed(lambda: gpu_utilization(client, at=at))[0] for _ in range(args.runs)]
        print(f"     the four gauges' queries alone (gpu_utilization): {seconds_summary(alone)}")
        from pools.services.utilization import MIN_QUIET_WINDOW as window

        alone = [
            bench_prometheus.timed(lambda: idle_since(client, window_seconds=window, at=at))[0]
            for _ in range(args.runs)
        ]
        print(f"     the quiet devices' query alone (idle_since, {window:g} s window): {seconds_summary(alone)}")
        readings = gpu_utilization(client, at=at)
        rng = random.Random(1)
        per_gpu = bench_prometheus.naive_per_gpu(client, readings, args.sample, at, rng)
        print(
            f"   naive read, one query per GPU: {len(per_gpu)} GPUs in {sum(per_gpu):.2f} s (median "
            f"{statistics.median(per_gpu) * 1000:.1f} ms each); extrapolated to {devices} GPUs: "
            f"{sum(per_gpu) * devices / len(per_gpu):.0f} s"
        )
        per_pod, pods = bench_prometheus.naive_per_pod(client, readings, args.sample, at, rng)
        print(
            f"   naive read, one query per pod: {len(per_pod)} pods in {sum(per_pod):.2f} s (median "
            f"{statistics.median(per_pod) * 1000:.1f} ms each); extrapolated to {len(pods)} pods: "
            f"{sum(per_pod) * len(pods) / len(per_pod):.0f} s"
        )
        print(f"   load average: {loadavg()}")

        # b) the idle list and the consumption report over 30 days
        started = time.perf_counter()
        made = history(backend, timezone.now(), second["quiet"] / devices)
        print(
            f"b) {made} GpuConsumption rows bulk-created in {time.perf_counter() - started:.0f} s "
            f"({GpuConsumption.objects.count()} in all, {UtilizationSample.objects.count()} utilization samples)"
        )
        QuietGpu.objects.update(quiet_since=timezone.now() - timedelta(hours=1))  # a fleet that has been running
        idle_rows = selectors.idle_workloads(user=SYSTEM)
        assert [(r["namespace"], r["pod"], r["gpus"]) for r in idle_rows] == naive_idle(timezone.now())
        reports = {
            "by user, 30d": {"by": "user", "period": "30d"},
            "by pool, 30d": {"by": "pool", "period": "30d"},
            "by user, 7d": {"by": "user", "period": "7d"},
        }
        for name, filters in reports.items():
            report = selectors.consumption_report(user=SYSTEM, filters=filters)
            expected = [
                (row[filters["by"]], row["allocated_gpu_hours"], row["idle_gpu_hours"]) for row in report["rows"]
            ]
            naive = naive_consumption(filters["by"], report["since"], report["until"], report["resolution"])
            assert len(naive) == len(expected) and all(
                a[0] == b[0] and abs(a[1] - b[1]) <= 0.011 and abs(a[2] - b[2]) <= 0.011
                for a, b in zip(sorted(naive), sorted(expected), strict=True)
            ), (name, naive[:3], expected[:3])
            print(
                f"   report {name}: {len(report['rows'])} rows from {report['resolution']} rows, "
                f"{report['total']['allocated_gpu_hours']:.0f} GPU-hours, {report['total']['idle_gpu_hours']:.0f} idle"
            )
        print(f"   {len(idle_rows)} idle workloads; the naive ways give the same answers")
        cases = [
            ("selectors.idle_workloads", lambda: selectors.idle_workloads(user=SYSTEM)),
            ("naive idle list: one query per idle GPU", lambda: naive_idle(timezone.now())),
        ]
        for name, filters in reports.items():
            cases.append(
                (
                    f"selectors.consumption_report {name}",
                    lambda filters=filters: selectors.consumption_report(user=SYSTEM, filters=filters),
                )
            )
            report = selectors.consumption_report(user=SYSTEM, filters=filters)
            cases.append(
                (
                    f"naive report {name}: every row summed in Python",
                    lambda filters=filters, report=report: naive_consumption(
                        filters["by"], report["since"], report["until"], report["resolution"]
                    ),
                )
            )
        print(f"   load average before: {loadavg()}")
        from django.db import connection

        connection.queries_limit = 10**6  # the naive idle list makes more queries than Django logs by default
        connection.queries_log = deque(maxlen=connection.queries_limit)
        for name, function in cases:
            iterations = 1 if name.startswith("naive") else args.iterations
            figures = timed_calls(function, args.runs, iterations)
            print(
                f"   {name}: median {figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, "
                f"{args.runs}x{iterations}), {figures['queries']} SQL queries"
            )
        print(f"load average after: {loadavg()}")
    finally:
        client.close()
        parent.send("stop")
        exporter.join(timeout=10)
        prometheus.stop()
        if database is not None:
            postgres_drop(database)
        for path in (directory, inventory):  # Prometheus's data, the SQLite file
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
