#!/usr/bin/env python
"""Benchmark: Run:ai's node-pools view at 5,000 nodes, 150,000 pods and 200 pools.

Builds the fleet of ``pools.fleet.layouts.pool_cluster`` (the one the sync benchmark serves) as a file backend on
a fresh database (a temporary SQLite file unless DATABASE_URL is set), with the pools of ``pool_config``: half of
them (100) turned into label pools (``node_label`` = the nodes' ``pool.example.com/name``), and a default pool
that takes the nodes no other pool selects. Then, in the same run, it times server-side, for a superuser:

- ``GET /node-pools/`` (the page), ``GET /node-pools/?format=csv`` and ``GET /api/node_pools/``;
- ``selectors.node_pool_list`` alone;
- the naive way: per pool, its memberships' distinct nodes summed, then its nodes' non-terminated pods summed
  (two queries per pool), checked to give the same numbers.

Each is run ``--runs`` times (3 by default) of ``--iterations`` requests; it prints the median of the run
medians and their spread, the SQL query count and the load average (``/proc/loadavg``) before and after.

    .venv/bin/python scripts/bench_node_pools.py [--nodes 5000] [--pods 150000] [--pools 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_POOL = "pool-default"
TERMINATED = ("Succeeded", "Failed")


def setup_django() -> Path:
    inventory = Path(tempfile.mkdtemp(prefix="bench-node-pools-"))
    if not os.environ.get("DATABASE_URL"):
        os.environ["VAR_DIR"] = str(inventory)
    os.environ["GPUPOOL_INVENTORY_DIR"] = str(inventory)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return inventory


def build(inventory: Path, nodes: int, pods: int, pools: int) -> None:
    """The cluster as a Kubernetes List file, the pools through the services, one sync."""
    from pools import services
    from pools.choices import ConfigType
    from pools.fleet.layouts import POOL_LABEL, pool_cluster, pool_config
    from pools.models import Backend

    node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, pools=pools)
    # The backend is a file backend; the List is handed to the sync directly, as it is larger than the 256 MiB
    # a file backend reads (the file holds only the nodes, for ``poolctl`` to look at).
    path = inventory / "bench.json"
    with path.open("w") as out:
        json.dump({"apiVersion": "v1", "kind": "List", "items": node_objects}, out)
    document = {"apiVersion": "v1", "kind": "List", "items": node_objects + pod_objects}
    config = pool_config(pools=pools)
    bodies = config["pools"]
    for index, name in enumerate(sorted(bodies)):
        if index % 2 == 0:  # every other pool: a label pool, as gpuctl and Run:ai define them
            bodies[name] = {
                "backend": "bench",
                "node_label": {"key": POOL_LABEL, "value": name},
                "gpu_placement_strategy": "spread" if index % 4 == 0 else "binpack",
            }
    bodies[DEFAULT_POOL] = {"backend": "bench"}
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"bench": {"kind": "file", "source": str(path), "default_pool": DEFAULT_POOL}},
            ConfigType.POD_TEMPLATE: config["podTemplates"],
            ConfigType.POOL: bodies,
        },
        actor=services.Actor.system("bench"),
    )
    services.backend_sync(backend=Backend.objects.get(name="bench"), source=ListSource(document))


class ListSource:
    """A Kubernetes List already in memory, read as a file backend reads its file."""

    def __init__(self, document: dict):
        self.document = document

    def list_inventory(self):
        from pools.inventory.records import inventory_from_list

        return inventory_from_list(self.document)


def naive_node_pool_numbers() -> dict[str, dict]:
    """The node-pools numbers the naive way: for each pool, its nodes from its memberships, then their pods."""
    from django.db.models import Count, Sum

    from pools.models import Node, NodeMembership, Pod, Pool

    result = {}
    for pool in Pool.objects.order_by("name"):
        node_ids = NodeMembership.objects.filter(pool=pool).values("node_id").distinct()
        nodes = Node.objects.filter(id__in=node_ids)
        sums = nodes.aggregate(
            nodes=Count("id"), gpu=Sum("gpu"), gpu_memory=Sum("gpu_memory"), cpu=Sum("cpu"), memory=Sum("memory")
        )
        used = (
            Pod.objects.filter(backend_id=pool.backend_id, node_name__in=nodes.values("name"))
            .exclude(phase__in=TERMINATED)
            .aggregate(gpu=Sum("gpu"), cpu=Sum("cpu"), memory=Sum("memory"), pods=Count("id"))
        )
        result[pool.name] = {
            "nodes": sums["nodes"],
            "gpu_devices": float(sums["gpu"] or 0),
            "gpu_memory": int(sums["gpu_memory"] or 0),
            "allocated_gpus": float(used["gpu"] or Decimal(0)),
            "cpus": float(sums["cpu"] or 0),
            "cpu_memory": int(sums["memory"] or 0),
            "allocated_cpus": float(used["cpu"] or 0),
            "allocated_cpu_memory": int(used["memory"] or 0),
            "workloads": used["pods"],
        }
    return result


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def timed(function, runs: int, iterations: int) -> dict:
    """``runs`` runs of ``iterations`` calls: the median of the run medians, the spread of them, the queries."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    function()  # warm-up
    medians = []
    for _ in range(runs):
        times = []
        for _ in range(iterations):
            started = time.perf_counter()
            function()
            times.append((time.perf_counter() - started) * 1000)
        medians.append(statistics.median(times))
    reset_queries()
    with CaptureQueriesContext(connection) as captured:
        function()
    queries = len(captured)
    return {"median": statistics.median(medians), "low": min(medians), "high": max(medians), "queries": queries}


def report(cases, runs: int, iterations: int, naive_iterations: int = 1) -> None:
    """Time each (name, function) of ``cases`` (``timed``; a "naive" one ``naive_iterations`` calls a run) and print
    its figures, between the machine's load before and after."""
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    for name, function in cases:
        calls = naive_iterations if name.startswith("naive") else iterations
        figures = timed(function, runs, calls)
        print(
            f"  {name}: median {figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, "
            f"{runs}x{calls}), {figures['queries']} SQL queries"
        )
    print(f"load average after: {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--pools", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=9)
    args = parser.parse_args()
    inventory = setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import override_settings

    # Pages link static files by their plain names: the hashed ones exist only after ``collectstatic``.
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}).enable()

    from accounts.access import SYSTEM
    from pools import selectors
    from pools.models import Node, NodeMembership, Pod, Pool

    started = time.perf_counter()
    build(inventory, args.nodes, args.pods, args.pools)
    label_pools = Pool.objects.exclude(node_label={}).count()
    print(
        f"built {Pool.objects.count()} pools ({label_pools} label pools, default pool {DEFAULT_POOL}) over "
        f"{Node.objects.count()} nodes, {Pod.objects.count()} pods, {NodeMembership.objects.count()} memberships "
        f"in {time.perf_counter() - started:.0f} s on {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
    )
    rows = {row["node_pool"]: row for row in selectors.node_pool_list(user=SYSTEM)}
    naive = naive_node_pool_numbers()
    mismatched = [
        name
        for name, numbers in naive.items()
        if any(abs(rows[name][key] - value) > 1e-6 for key, value in numbers.items())
    ]
    assert not mismatched, f"the naive way disagrees on {mismatched[:5]}"
    print(f"default pool: {rows[DEFAULT_POOL]['nodes']} nodes; the naive way gives the same numbers for every pool")

    user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)

    def get(url):
        def call():
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return call

    cases = [
        ("GET /node-pools/", get("/node-pools/")),
        (
            "GET /node-pools/ (htmx, sort=-allocated_gpus)",
            lambda: client.get("/node-pools/?sort=-allocated_gpus", HTTP_HX_REQUEST="true"),
        ),
        ("GET /node-pools/?format=csv", get("/node-pools/?format=csv")),
        ("GET /api/node_pools/", get("/api/node_pools/")),
        ("selectors.node_pool_list", lambda: selectors.node_pool_list(user=user)),
        ("naive (2 queries per pool)", naive_node_pool_numbers),
    ]
    report(cases, args.runs, args.iterations, naive_iterations=max(1, args.iterations // 3))


if __name__ == "__main__":
    main()
