#!/usr/bin/env python
"""Benchmark: gpuctl's ``create -f`` labelling 500 nodes of a real kube-apiserver, and ``get pools`` at scale.

1. Starts the kube-apiserver the integration tests use (``tests/integration/kube_cluster.py``), creates
   ``--nodes`` nodes, and times ``services.label_pool_apply`` (what ``poolctl create -f`` runs) labelling all
   of them, ``--runs`` times (the pool is deleted, its labels removed, between runs); then, in the same run,
   the naive way: one GET and one PATCH per node, one after the other.
2. With ``--scale``: the fleet of ``scripts/bench_overview.py`` (5,000 simulated nodes, their pods, 200 pools)
   and ``selectors.gpuctl_pools`` (``get pools``) timed server-side, with its query count.

Prints medians, spread and the machine load (``/proc/loadavg``). Not a test.

    .venv/bin/python scripts/bench_label_pool.py [--nodes 500] [--runs 3] [--scale]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

import bench_overview  # noqa: E402


def load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"


def label_bench(nodes: int, runs: int) -> None:
    from kube_cluster import KubeCluster

    from pools import services
    from pools.choices import ConfigType
    from pools.models import Backend

    cluster = KubeCluster.start(Path(tempfile.mkdtemp(prefix="bench-kube-")))
    try:
        names = [f"node-{index:04d}" for index in range(nodes)]
        started = time.monotonic()
        for name in names:
            cluster.api.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        print(f"created {nodes} nodes in {time.monotonic() - started:.1f} s")
        actor = services.Actor.system("bench")
        services.config_apply(
            changes={
                ConfigType.BACKEND: {
                    "bench": {"kind": "kubernetes", "kubeconfig": cluster.kubeconfig, "writable": True}
                }
            },
            actor=actor,
        )
        backend = Backend.objects.get(name="bench")
        services.backend_sync(backend=backend)
        document = {
            "kind": "pool",
            "version": "v0.1",
            "pool": {"name": "bench-pool", "description": "benchmark"},
            "nodes": {name: {"gpu-type": "A100-100G"} for name in names},
        }
        times = []
        for run in range(runs):
            started = time.monotonic()
            result = services.label_pool_apply(document=document, actor=actor, backend="bench")
            times.append(time.monotonic() - started)
            assert len(result["labelled"]) == nodes, result
            print(f"  run {run + 1}: create -f labelled {nodes} nodes in {times[-1]:.2f} s  load {load()}")
            services.label_pool_delete(name="bench-pool", actor=actor, force=True)
        print(f"create -f, {nodes} nodes (<=4 parallel merge patches with resourceVersion): {spread(times)}")

        api = cluster.api
        naive = []
        for run in range(runs):
            started = time.monotonic()
            for name in names:
                api.read_node(name)
                api.patch_node(name, {"metadata": {"labels": {"runwhere.ai/pool": f"naive-{run}"}}})
            naive.append(time.monotonic() - started)
            print(f"  run {run + 1}: naive GET+PATCH per node, sequential: {naive[-1]:.2f} s  load {load()}")
        print(f"naive, {nodes} nodes: {spread(naive)}")
        print(f"speed-up: {statistics.median(naive) / statistics.median(times):.1f}x  load {load()}")
    finally:
        cluster.stop()


def scale_bench(iterations: int) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.access import SYSTEM
    from pools import selectors, services
    from pools.models import Backend, Node, Pod, Pool

    started = time.monotonic()
    bench_overview.build(200, 5000)
    for backend in Backend.objects.exclude(kind="file"):
        services.backend_sync(backend=backend)
    print(
        f"fleet: {Node.objects.count()} nodes, {Pod.objects.count()} pods, {Pool.objects.count()} pools "
        f"(built in {time.monotonic() - started:.0f} s)"
    )
    selectors.gpuctl_pools(user=SYSTEM)
    times = []
    for _ in range(iterations):
        with CaptureQueriesContext(connection) as queries:
            started = time.monotonic()
            rows = selectors.gpuctl_pools(user=SYSTEM)
            times.append((time.monotonic() - started) * 1000)
    print(
        f"get pools (selectors.gpuctl_pools, {len(rows)} rows): median {statistics.median(times):.0f} ms "
        f"(min {min(times):.0f}, max {max(times):.0f}, n={iterations}), {len(queries)} queries  load {load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", action="store_true", help="also time get pools at 5,000 nodes / 200 pools")
    options = parser.parse_args()
    bench_overview.setup_django()
    print(f"load before: {load()}")
    label_bench(options.nodes, options.runs)
    if options.scale:
        scale_bench(15)


if __name__ == "__main__":
    main()
