#!/usr/bin/env python
"""Benchmark: sync and watch a 5,000-node / 150,000-pod cluster served in Kubernetes wire format.

On PostgreSQL, in one run, it measures:
- the first full sync (wall time, peak RSS of this process), through the product's Kubernetes source;
- a resync after 1 % of the pods changed;
- the watch: pod events at 1,000/s for 20 s, the rate applied and the latency from an event's creation
  to the moment a reader of the pool list sees it (commit time plus a pool-list query), end to end and
  the product's part alone (from the moment the watch received the event);
- the naive way: the official client's typed ``list_pod_for_all_namespaces()`` / ``list_node()``, and
  row-by-row ORM saves (timed on a sample and scaled to the whole cluster).

The fake API server (scripts/bench/fake_apiserver.py) runs in a child process so its memory and CPU are
not counted as the product's, at niceness 10 (``--server-nice``) so that it takes less of the two cores
from the product. The load average is printed before and after; run it three times for a median.

    make bench-sync            # or: .venv/bin/python scripts/bench_sync.py [--nodes N --pods N] [--skip-naive]
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import os
import pstats
import random
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/gpupool_bench"
EMITTED = "bench.example.com/emitted-at"


# --- the API server process ---------------------------------------------------------------------------------


def serve(connection, nodes: int, pods: int, seed: int, niceness: int = 0) -> None:
    """Child process: generate the cluster, serve it, and run the driver's commands.

    ``niceness`` lowers its priority, so that on a small machine it takes less CPU from the product it
    measures (a real API server runs on machines of its own).
    """
    from fake_apiserver import FakeApiServer

    if niceness:
        os.nice(niceness)

    from pools.fleet.layouts import POOL_LABEL, pool_cluster

    node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, seed=seed)
    pool_nodes = {}
    for node in node_objects:
        pool = node["metadata"]["labels"].get(POOL_LABEL)
        if pool:
            pool_nodes.setdefault(pool, []).append(node)
    server = FakeApiServer(node_objects, pod_objects, event_log_size=200_000).start()
    connection.send(server.url)
    rng = random.Random(seed)
    while True:
        command, *args = connection.recv()
        if command == "modify":
            connection.send(len(server.modify_random_pods(args[0], rng)))
        elif command == "stream":
            rate, seconds = args
            connection.send(stream_pods(server, pool_nodes, rate, seconds, rng))
        elif command == "stop":
            server.stop()
            connection.send("stopped")
            return


def stream_pods(server, pool_nodes: dict, rate: float, seconds: float, rng: random.Random) -> int:
    """Create GPU pods of random pools at ``rate`` per second, in 10 ms slices; returns how many."""
    pools = sorted(pool_nodes)
    started, sent, index = time.monotonic(), 0, 0
    while (elapsed := time.monotonic() - started) < seconds:
        due = int(elapsed * rate) - sent
        batch = []
        for _ in range(max(0, due)):
            pool = rng.choice(pools)
            node = rng.choice(pool_nodes[pool])
            index += 1
            batch.append(
                (
                    "Pod",
                    "ADDED",
                    {
                        "metadata": {
                            "name": f"bench-{index}",
                            "namespace": f"osmo-{pool}",
                            "labels": {"osmo.pool": pool, "osmo.priority": "NORMAL", EMITTED: repr(time.time())},
                        },
                        "spec": {
                            "nodeName": node["metadata"]["name"],
                            "containers": [
                                {
                                    "name": "main",
                                    "resources": {
                                        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                                        "limits": {"cpu": "1", "nvidia.com/gpu": "1"},
                                    },
                                }
                            ],
                        },
                        "status": {"phase": "Running"},
                    },
                )
            )
        if batch:
            server.apply_many(batch, copy_obj=False)
            sent += len(batch)
        time.sleep(0.01)
    return sent


def naive_typed_list(connection, url: str) -> None:
    """Child process: the official client's typed lists, as the naive way reads a cluster."""
    from kubernetes import client

    api = client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))
    started = time.perf_counter()
    nodes = api.list_node().items
    pods, token = [], None
    while True:
        page = api.list_pod_for_all_namespaces(limit=500, _continue=token)
        pods.extend(page.items)
        token = page.metadata._continue
        if not token:
            break
    connection.send(
        {
            "seconds": time.perf_counter() - started,
            "nodes": len(nodes),
            "pods": len(pods),
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        }
    )


# --- the driver ----------------------------------------------------------------------------------------------


def setup_django(database_url: str) -> None:
    import psycopg

    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        raise SystemExit("no watch event was applied: the watch did not keep up or did not start")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--rate", type=float, default=1000, help="watch events per second")
    parser.add_argument("--seconds", type=float, default=20, help="how long the event stream runs")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print where the 1 % resync spends its time")
    parser.add_argument(
        "--full-resync", action="store_true", help="resync by listing everything (as before metadata-only listing)"
    )
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    parser.add_argument(
        "--server-nice", type=int, default=10, help="the stand-in API server's niceness (0: as the product)"
    )
    options = parser.parse_args()
    print(f"load average before: {load_average()} ({os.cpu_count()} CPUs)")

    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(
        target=serve, args=(theirs, options.nodes, options.pods, 1, options.server_nice), daemon=True
    )
    started = time.perf_counter()
    server.start()
    setup_django(options.database_url)
    url = ours.recv()
    print(
        f"cluster: {options.nodes} nodes, {options.pods} pods served at {url} "
        f"(generated and serialised in {time.perf_counter() - started:.1f} s)"
    )

    from accounts.access import SYSTEM
    from pools import selectors, services
    from pools.choices import ConfigType
    from pools.fleet.layouts import pool_config
    from pools.inventory.sources import KubernetesSource
    from pools.models import Backend, Node, NodeMembership, Pod
    from pools.services import inventory as inventory_service

    if options.full_resync:
        inventory_service.MAX_OBJECT_READS = 0  # any change at all then falls back to the full list

    services.config_apply(changes={ConfigType.BACKEND: {"bench": {"kind": "kubernetes"}}}, actor=services.SYSTEM)
    services.config_import(data=pool_config(backend="bench"), actor=services.SYSTEM)
    backend = Backend.objects.get(name="bench")
    figures = {}

    def source():
        from kubernetes import client

        return KubernetesSource(api_client=client.ApiClient(client.Configuration(host=url)))

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    started = time.perf_counter()
    counts = services.backend_sync(backend=backend, source=source())
    figures["first_sync"] = time.perf_counter() - started
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        f"first full sync: {figures['first_sync']:.1f} s, peak RSS {figures['peak_rss_mb']} MB "
        f"(before: {rss_before} MB); {counts['nodes']} nodes, {counts['pods']} pods, "
        f"{NodeMembership.objects.count()} memberships"
    )

    ours.send(("modify", 0.01))
    changed = ours.recv()
    profiler = cProfile.Profile() if options.profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    counts = services.backend_sync(backend=backend, source=source())
    figures["resync"] = time.perf_counter() - started
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
    print(
        f"resync after {changed} pods changed (1 %): {figures['resync']:.2f} s, {counts['listing']} listing; "
        f"pods {counts['pods_changed']}"
    )
    started = time.perf_counter()
    listing = source().list_versions()
    print(f"  a metadata-only listing of {len(listing.pods)} pods takes {time.perf_counter() - started:.2f} s")
    del listing
    started = time.perf_counter()
    inventory = source().list_inventory()
    listing = time.perf_counter() - started
    print(f"  of which listing and decoding {len(inventory.pods)} pods: {listing:.2f} s")
    del inventory

    reads = []
    for _ in range(10):
        started = time.perf_counter()
        selectors.pool_list(user=SYSTEM)
        reads.append(time.perf_counter() - started)
    figures["pool_list"] = statistics.median(reads)
    print(f"pool list (150 pools' accounting) read: median {figures['pool_list'] * 1000:.0f} ms")

    latencies, product, applied = watch_benchmark(services, backend, source(), ours, options)
    window = options.seconds
    figures["product_p50"] = percentile(product, 0.5) + figures["pool_list"]
    figures["product_p95"] = percentile(product, 0.95) + figures["pool_list"]
    figures["watch_rate"] = applied / window
    figures["latency_p50"] = percentile(latencies, 0.5) + figures["pool_list"]
    figures["latency_p95"] = percentile(latencies, 0.95) + figures["pool_list"]
    print(
        f"watch: {len(latencies)} pod events sent at {options.rate:.0f}/s, applied {figures['watch_rate']:.0f}/s; "
        f"event -> visible in the pool list: p50 {figures['latency_p50'] * 1000:.0f} ms, "
        f"p95 {figures['latency_p95'] * 1000:.0f} ms (commit p95 {percentile(latencies, 0.95) * 1000:.0f} ms "
        f"+ one pool-list read)"
    )

    print(
        f"  of which the product (received -> visible): p50 {figures['product_p50'] * 1000:.0f} ms, "
        f"p95 {figures['product_p95'] * 1000:.0f} ms"
    )
    print(f"load average after: {load_average()}")

    if not options.skip_naive:
        naive = naive_benchmark(context, url, Pod, Node, backend)
        figures.update(naive)

    ours.send(("stop",))
    ours.recv()
    summary(figures, options)


def watch_benchmark(services, backend, source, connection, options):
    """Run the product's watch while the server streams pod creations; collect event-to-commit latencies.

    Returns (emitted -> committed, received -> committed, events applied): the first is end to end (the
    stand-in server's delivery included), the second the product's part alone.
    """
    latencies: list[float] = []
    product: list[float] = []
    received: list[float] = []
    applied = [0]
    pending: list[tuple[float, list[float]]] = []

    class Recording(type(source)):
        def watch(self, resource_versions, stop):
            for batch in super().watch(resource_versions, stop):
                emitted = [
                    float((item.object["metadata"].get("labels") or {}).get(EMITTED, 0) or 0)
                    for item in batch
                    if getattr(item, "type", "") == "ADDED"
                ]
                now = time.time()
                received.extend(now - value for value in emitted if value)
                pending.append((now, [value for value in emitted if value]))
                yield batch

    recording = Recording(api_client=source._api_client)

    def on_batch(counts):
        now = time.time()
        for received_at, emitted in pending:
            latencies.extend(now - value for value in emitted)
            product.extend(now - received_at for _ in emitted)
            applied[0] += len(emitted)
        pending.clear()

    stop = threading.Event()
    watcher = threading.Thread(
        target=services.backend_watch,
        daemon=True,
        kwargs={"backend": backend, "stop": stop, "owner": "bench", "on_batch": on_batch, "source": recording},
    )
    try:
        watcher.start()
        time.sleep(3)  # the watch's initial list (the sync above already wrote everything) and connect
        connection.send(("stream", options.rate, options.seconds))
        sent = connection.recv()
        deadline = time.monotonic() + 30
        while applied[0] < sent and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        watcher.join(timeout=30)
    if received:
        print(
            f"  event -> received by the watch: p50 {percentile(received, 0.5) * 1000:.0f} ms, "
            f"p95 {percentile(received, 0.95) * 1000:.0f} ms"
        )
    return latencies, product, applied[0]


def naive_benchmark(context, url, Pod, Node, backend) -> dict:
    ours, theirs = context.Pipe()
    child = context.Process(target=naive_typed_list, args=(theirs, url))
    child.start()
    typed = ours.recv()
    child.join()
    print(
        f"naive: typed list_node() + paginated list_pod_for_all_namespaces(): {typed['seconds']:.1f} s "
        f"for {typed['pods']} pods (peak RSS {typed['rss_mb']} MB)"
    )
    sample = list(
        Pod.objects.filter(backend=backend).values(
            "namespace",
            "name",
            "uid",
            "node_name",
            "phase",
            "labels",
            "pool_name",
            "preemptible",
            "cpu",
            "memory",
            "storage",
            "gpu",
        )[:2000]
    )
    Pod.objects.filter(backend=backend, name__in=[p["name"] for p in sample]).delete()
    started = time.perf_counter()
    for row in sample:
        Pod.objects.update_or_create(
            backend=backend, namespace=row.pop("namespace"), name=row.pop("name"), defaults=row
        )
    per_row = (time.perf_counter() - started) / len(sample)
    total_rows = Pod.objects.filter(backend=backend).count() + Node.objects.filter(backend=backend).count()
    saves = per_row * total_rows
    print(
        f"naive: row-by-row update_or_create: {per_row * 1000:.2f} ms per row on a sample of {len(sample)}, "
        f"{saves:.0f} s for {total_rows} rows"
    )
    return {"naive_list": typed["seconds"], "naive_saves": saves, "naive_total": typed["seconds"] + saves}


def summary(figures: dict, options) -> None:
    print()
    print(f"{'measure':<46} {'figure':>12}  target")
    rows = [
        ("first full sync", f"{figures['first_sync']:.1f} s", "<= 15 s"),
        ("peak RSS of the syncing process", f"{figures['peak_rss_mb']} MB", "<= 1,000 MB"),
        ("resync, 1 % of pods changed", f"{figures['resync']:.2f} s", "<= 2 s"),
        ("watch events applied per second", f"{figures['watch_rate']:.0f}/s", f">= {options.rate:.0f}/s"),
        ("event -> pool list shows it, p95, product", f"{figures['product_p95'] * 1000:.0f} ms", "<= 500 ms"),
        ("event -> pool list shows it, p95, end to end", f"{figures['latency_p95'] * 1000:.0f} ms", "<= 1,000 ms"),
    ]
    if "naive_total" in figures:
        rows.append(("naive first sync (typed list + row saves)", f"{figures['naive_total']:.0f} s", ""))
        rows.append(("ours vs naive", f"{figures['naive_total'] / figures['first_sync']:.1f}x faster", ">= 5x"))
    for name, value, target in rows:
        print(f"{name:<46} {value:>12}  {target}")


if __name__ == "__main__":
    main()
