#!/usr/bin/env python
"""Benchmark: GPU utilization for 5,000 nodes x 8 GPUs (40,000 devices) read from a real Prometheus.

A simulated DCGM exporter (``tests/prometheus_server.py``, in a child process as a real exporter is, its text made
once a second at most) serves the fleet; Debian's ``prometheus`` scrapes it every ``--scrape-interval`` seconds
on a free loopback port with its data in a temporary directory. Once Prometheus holds two scrapes, it times:

- one round of ``gpu_utilization`` (four queries, one per metric, sent together): the first one, then ``--runs``
  more;
- one ``idle_since`` (one query over a window of one scrape interval);
- the naive way in the same run: one query per GPU (all four metrics of that GPU), and one per pod, each on a
  sample of ``--sample`` GPUs or pods, one after the other, extrapolated to the whole fleet (and said so).

It checks that the bulk readings give the sampled GPUs the values the per-GPU queries give. Prints medians,
spread, the machine's load (``/proc/loadavg``) and Prometheus's memory. Not a test.

    .venv/bin/python scripts/bench_prometheus.py [--nodes 5000] [--runs 3] [--sample 200] [--scrape-interval 15]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from prometheus_server import PrometheusServer, SimulatedExporter, wait_until  # noqa: E402

from pools.telemetry.prometheus import (  # noqa: E402
    DEFAULT_READ_TIMEOUT,
    FB_FREE,
    FB_USED,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    PrometheusClient,
    gpu_utilization,
    idle_since,
)

GPUS_PER_NODE = 8
# The pods of a node by its index modulo 4 (GPUs each): every node full but the last kind, which leaves 2 free.
POD_SHAPES = ((8,), (4, 4), (4, 2, 1, 1), (2, 2, 2))
METRICS_MATCHER = "|".join((GPU_UTIL, FB_USED, FB_FREE, GR_ENGINE_ACTIVE))


def fleet(nodes: int) -> tuple[list[dict], list[dict]]:
    """``nodes`` H100 nodes of 8 GPUs and their pods (``tests/kube_objects.py``), 40 namespaces."""
    from kube_objects import node, pod

    node_objects, pod_objects = [], []
    for index in range(nodes):
        name = f"gpu-{index:05d}"
        node_objects.append(node(name, gpu=GPUS_PER_NODE))
        for number, gpus in enumerate(POD_SHAPES[index % len(POD_SHAPES)]):
            pod_objects.append(
                pod(f"job-{index:05d}-{number}", node=name, gpu=gpus, namespace=f"team-{index % 40:02d}")
            )
    return node_objects, pod_objects


def serve(connection, nodes: int) -> None:
    """Child process: the exporter of the fleet, until the parent says stop."""
    node_objects, pod_objects = fleet(nodes)
    with SimulatedExporter(node_objects, pod_objects, cache_seconds=1) as exporter:
        connection.send(exporter.target)
        connection.recv()


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"


def timed(call):
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def naive_per_gpu(client, readings, size: int, at: float, rng: random.Random) -> list[float]:
    """The naive way: one query per GPU (its four metrics), for ``size`` GPUs drawn from ``readings``, one after the
    other; the seconds of each. Checks each gives the values the bulk round read."""
    per_gpu = []
    for reading in rng.sample(readings, min(size, len(readings))):
        expr = f'{{__name__=~"{METRICS_MATCHER}",Hostname="{reading.hostname}",gpu="{reading.gpu}"}}'
        seconds, answer = timed(lambda expr=expr: client.query(expr, at=at))
        per_gpu.append(seconds)
        values = {sample.labels["__name__"]: sample.value for sample in answer}
        assert values[GPU_UTIL] == reading.util and values[FB_USED] == reading.fb_used, (reading, values)
    return per_gpu


def naive_per_pod(client, readings, size: int, at: float, rng: random.Random) -> tuple[list[float], list]:
    """The naive way: one query per pod (the four metrics of its GPUs), for ``size`` of the pods in ``readings``;
    the seconds of each, and every (namespace, pod) of the readings."""
    pods = sorted({(reading.namespace, reading.pod) for reading in readings if reading.pod})
    per_pod = []
    for namespace, pod in rng.sample(pods, min(size, len(pods))):
        expr = f'{{__name__=~"{METRICS_MATCHER}",namespace="{namespace}",pod="{pod}"}}'
        per_pod.append(timed(lambda expr=expr: client.query(expr, at=at))[0])
    return per_pod, pods


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample", type=int, default=200, help="GPUs and pods queried the naive way")
    parser.add_argument("--scrape-interval", type=float, default=15)
    args = parser.parse_args()
    devices = args.nodes * GPUS_PER_NODE
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop Prometheus and the exporter on the way out

    parent, child = multiprocessing.Pipe()
    exporter = multiprocessing.Process(target=serve, args=(child, args.nodes), daemon=True)
    exporter.start()
    target = parent.recv()
    directory = Path(tempfile.mkdtemp(prefix="bench-prometheus-"))
    prometheus = PrometheusServer(directory, [target], scrape_interval=args.scrape_interval).start()
    client = PrometheusClient(prometheus.url, read_timeout=max(DEFAULT_READ_TIMEOUT, 30))
    try:
        print(
            f"{args.nodes} nodes x {GPUS_PER_NODE} GPUs = {devices} devices, scraped every {args.scrape_interval:g} s"
        )
        started = time.monotonic()
        one = f'count_over_time({FB_USED}{{Hostname="gpu-00000",gpu="0"}}[10m])'
        wait_until(
            lambda: (client.query(one) or [None])[0] and client.query(one)[0].value >= 2,
            timeout=60 + 3 * args.scrape_interval,
            what="two scrapes",
            interval=1,
        )
        held = client.query(f"count({FB_USED})")
        print(f"two scrapes in Prometheus after {time.monotonic() - started:.0f} s: {held[0].value:.0f} devices")
        print(f"load average before: {load()}; Prometheus RSS {rss_mib(prometheus.process.pid):.0f} MiB")

        at = time.time()
        cold, readings = timed(lambda: gpu_utilization(client, at=at))
        print(f"gpu_utilization, first round after start (cold): {cold:.3f} s")
        rounds = []
        server_cpu, client_cpu = cpu_seconds(prometheus.process.pid), time.process_time()
        for _ in range(args.runs):
            seconds, readings = timed(lambda: gpu_utilization(client, at=at))
            rounds.append(seconds)
        server_cpu = (cpu_seconds(prometheus.process.pid) - server_cpu) / args.runs
        client_cpu = (time.process_time() - client_cpu) / args.runs
        assert len(readings) == devices, (len(readings), devices)
        print(f"gpu_utilization, one round (4 queries): {summary(rounds)}, {len(readings)} readings")
        print(f"  CPU per round: Prometheus {server_cpu:.2f} s (with its scrapes), this process {client_cpu:.2f} s")
        singles = [timed(lambda: client.query(GPU_UTIL, at=at))[0] for _ in range(args.runs)]
        print(f"  one metric through query(), labels as dicts ({GPU_UTIL}, {devices} series): {summary(singles)}")
        seconds, idle = timed(lambda: idle_since(client, window_seconds=args.scrape_interval, at=at))
        print(f"idle_since (window {args.scrape_interval:g} s, 1 query): {seconds:.3f} s, {len(idle)} idle devices")

        rng = random.Random(1)
        per_gpu = naive_per_gpu(client, readings, args.sample, at, rng)
        total = sum(per_gpu) * devices / len(per_gpu)
        print(
            f"naive, one query per GPU: {len(per_gpu)} GPUs in {sum(per_gpu):.2f} s "
            f"(median {statistics.median(per_gpu) * 1000:.1f} ms each); extrapolated to {devices} GPUs: {total:.0f} s"
        )
        per_pod, pods = naive_per_pod(client, readings, args.sample, at, rng)
        total = sum(per_pod) * len(pods) / len(per_pod)
        print(
            f"naive, one query per pod: {len(per_pod)} pods in {sum(per_pod):.2f} s "
            f"(median {statistics.median(per_pod) * 1000:.1f} ms each); extrapolated to {len(pods)} pods: {total:.0f} s"
        )
        print(f"load average after: {load()}; Prometheus RSS {rss_mib(prometheus.process.pid):.0f} MiB")
    finally:
        client.close()
        prometheus.stop()
        parent.send("stop")
        exporter.join(timeout=10)


if __name__ == "__main__":
    main()
