#!/usr/bin/env python
"""Benchmark: the web console's overview page with 200 pools over a simulated fleet of 5,000 nodes.

Builds the configuration through ``pools.services`` on a fresh database (a temporary SQLite file unless
DATABASE_URL is set): one simulated backend of 5,000 nodes, one pod template per (zone, instance type) and
200 pools spread over them (so many pools share nodes, as in real clusters), syncs the backend, then times
``GET /`` for a superuser with Django's test client and prints the median, p95 and the SQL query count;
then times the pool summaries the page reads against the naive way (every membership to the engine).

    .venv/bin/python scripts/bench_overview.py [--pools 200] [--nodes 5000] [--iterations 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django() -> None:
    if not os.environ.get("DATABASE_URL"):
        os.environ["VAR_DIR"] = tempfile.mkdtemp(prefix="bench-overview-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")  # plain HTTP, as behind the TLS proxy of a deployment
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(pools: int, nodes: int) -> None:
    """The fleet and the pools, through the services like any other configuration."""
    from pools import services
    from pools.choices import ConfigType
    from pools.fleet.nodes import catalogue_nodes
    from pools.models import Backend

    actor = services.Actor.system("bench")
    sample = catalogue_nodes(seed=7, size=nodes)  # the nodes the backend below is made of
    groups = sorted(
        {
            (
                node["metadata"]["labels"]["topology.kubernetes.io/zone"],
                node["metadata"]["labels"]["node.kubernetes.io/instance-type"],
            )
            for node in sample
        }
    )
    templates = {
        f"sel-{index}": {
            "spec": {
                "nodeSelector": {"topology.kubernetes.io/zone": zone, "node.kubernetes.io/instance-type": instance},
                "tolerations": [{"operator": "Exists"}],
            }
        }
        for index, (zone, instance) in enumerate(groups)
    }
    bodies = {
        f"pool-{index:03d}": {
            "backend": "bench",
            "description": f"benchmark pool {index}",
            "common_pod_template": [f"sel-{index % len(groups)}"],
            "common_resource_validations": ["default_cpu", "default_gpu"],
            "resources": {"gpu": {"guarantee": 8 * (index % 4) - 1 if index % 4 else -1}},
        }
        for index in range(pools)
    }
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"bench": {"kind": "simulated", "seed": 7, "size": nodes}},
            ConfigType.POD_TEMPLATE: templates,
            ConfigType.POOL: bodies,
        },
        actor=actor,
    )
    services.backend_sync(backend=Backend.objects.get(name="bench"))


def measure(iterations: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)
    client.get("/")  # warm-up: templates compiled, caches filled
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        response = client.get("/")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    reset_queries()  # the query log holds at most 9,000 entries; a full one would hide what is captured
    with CaptureQueriesContext(connection) as captured:
        client.get("/")
    # Counted now: ``captured`` slices the connection's query log, which the next request clears.
    queries = len(captured)
    fragment = []
    for _ in range(iterations):
        started = time.perf_counter()
        client.get("/", HTTP_HX_REQUEST="true")
        fragment.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "median": statistics.median(times),
        "p95": times[max(0, round(0.95 * len(times)) - 1)],
        "fragment_median": statistics.median(fragment),
        "queries": queries,
        "bytes": len(response.content),
    }


OTHER_PAGES = (
    "/nodes/",
    "/nodes/?page=5",
    "/nodes/?status=cordoned",
    "/nodes/?q=zone",
    "/pools/pool-000/",
    "/what-if/?pool=pool-000&cpu=4&gpu=1&memory=16Gi&storage=10Gi",
    "/api/pool_quota/",
    "/api/resources/?pools=pool-000",
)


def other_pages(iterations: int) -> list[tuple[str, float, int]]:
    """The other pages that read the whole fleet: median milliseconds and SQL queries of each."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    figures = []
    for url in OTHER_PAGES:
        assert client.get(url).status_code == 200, url
        times = []
        for _ in range(iterations):
            started = time.perf_counter()
            client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        figures.append((url, statistics.median(times), len(captured)))
    return figures


def compare_summaries(iterations: int) -> dict:
    """The pool summaries as the page reads them (nodes grouped in SQL) and the naive way (every membership)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from naive_summary import naive_gpu_summary, naive_node_summary

    from pools import selectors
    from pools.models import Backend, Pool

    backend_ids = list(Backend.objects.values_list("pk", flat=True))
    names = list(Pool.objects.values_list("name", flat=True))

    def median_ms(function) -> float:
        times = []
        for _ in range(iterations):
            started = time.perf_counter()
            function()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    assert selectors.pool_gpu_summary(backend_ids) == naive_gpu_summary()
    assert selectors.pool_node_summary(names) == naive_node_summary()
    return {
        "grouped": median_ms(lambda: (selectors.pool_gpu_summary(backend_ids), selectors.pool_node_summary(names))),
        "naive": median_ms(lambda: (naive_gpu_summary(), naive_node_summary())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=15)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings

    from pools.models import NodeMembership, Pod

    started = time.perf_counter()
    build(args.pools, args.nodes)
    print(
        f"built {args.pools} pools over {args.nodes} nodes in {time.perf_counter() - started:.1f} s "
        f"({NodeMembership.objects.count()} memberships, {Pod.objects.count()} pods) "
        f"on {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
    )
    from config.startup import objects_settle

    objects_settle()  # the pages are served as by the web server's entry point (config/wsgi.py)
    figures = measure(args.iterations)
    print(
        f"GET / (overview page): median {figures['median']:.1f} ms, p95 {figures['p95']:.1f} ms, "
        f"{figures['queries']} SQL queries, {figures['bytes'] / 1024:.0f} KiB; "
        f"htmx fragment median {figures['fragment_median']:.1f} ms ({args.iterations} iterations)"
    )
    for url, median, queries in other_pages(max(3, args.iterations // 3)):
        print(f"  GET {url}: median {median:.1f} ms, {queries} SQL queries")
    summaries = compare_summaries(max(3, args.iterations // 3))
    print(
        f"pool GPU + node summaries (same numbers): grouped nodes {summaries['grouped']:.1f} ms, "
        f"naive (every membership) {summaries['naive']:.1f} ms"
    )


if __name__ == "__main__":
    main()
