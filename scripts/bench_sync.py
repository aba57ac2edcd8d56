#!/usr/bin/env python
"""Benchmark: sync and watch a 5,000-node / 150,000-pod cluster served in Kubernetes wire format, three runs.

On PostgreSQL, each run (``--runs``, default 3) measures, on a fresh database and a fresh cluster:
- the first full sync (wall time) and the peak RSS of the product's process;
- a resync after 1 % of the pods changed, and the metadata-only and full listings it chooses between;
- the watch: pods created at 1,000/s for 20 s, the rate applied and the latency from a pod's creation to the
  moment a reader of the pool list sees it (commit time plus a pool-list read), end to end and the product's
  part alone (from the moment the watch received the event).
Then the median and spread (min-max) of each measure against the targets of docs/performance.md, with the load
average before and after each run. Once, after the last run: the naive way, the official client's typed
``list_pod_for_all_namespaces()`` / ``list_node()`` and row-by-row ORM saves (timed on a sample and scaled).

The product runs in a child process per run (``spawn``: a fresh interpreter, Django set up there), so that its
peak RSS is that run's and no run inherits another's memory. It reads the cluster through its real
``KubernetesSource``, from a kubeconfig the script writes.

``--apiserver fake`` (default): the stand-in server (scripts/bench/fake_apiserver.py), a new one per run in a
child process at niceness 10 (``--server-nice``), so that its memory and CPU are not the product's and it takes
less of the two cores from the product.
``--apiserver kube``: the real kube-apiserver and etcd of the integration tests (scripts/kube-apiserver.sh) at a
reduced size (default 200 nodes / 6,000 pods, pods streamed at 150/s), loaded once through the API by
scripts/bench/kube_load.py; between runs the streamed pods are deleted. The API server, etcd and the loader run
at ``--server-nice``; the API server is stopped at the end, also on Ctrl-C or an error.
``--busy 0.5``: other work on the machine throughout, one process keeping a CPU busy half the time at the
default niceness (``workload.other_work``), for the targets that must hold on a normally busy machine.

    make bench-sync            # or: .venv/bin/python scripts/bench_sync.py [--runs 3] [--skip-naive] [--json FILE]
    make bench-sync-kube       # or: .venv/bin/python scripts/bench_sync.py --apiserver kube
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
sys.path.append(str(ROOT / "tests" / "integration"))  # kube_cluster: the integration tests' kube-apiserver

from run_figures import Measure, format_value, summarise, summary_table  # noqa: E402
from workload import EMITTED, nodes_by_pool, other_work, serve_commands, stream_pod  # noqa: E402

KUBE_SCRIPT = ROOT / "scripts" / "kube-apiserver.sh"
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/gpupool_bench"
SERVERS = {"fake": "stand-in API server", "kube": "kube-apiserver"}
SIZES = {"fake": (5000, 150_000, 1000), "kube": (200, 6000, 150)}  # nodes, pods, events per second
WATCH_GRACE = 30  # seconds the watch may take, after the stream ends, to apply every event
RECOVERY_SECONDS = 10  # the steady stream after a burst (--burst), in which the latency must come back


def measures(rate: float) -> list[Measure]:
    """What a run measures, with the targets of docs/performance.md (for one 5,000-node / 150,000-pod cluster)."""
    return [
        Measure("first_sync_s", "first full sync", "s", 15),
        Measure("peak_rss_mb", "peak RSS of the product process", "MB", 1000),
        Measure("resync_s", "resync, 1 % of pods changed", "s", 2),
        Measure("metadata_listing_s", "  a metadata-only listing, alone", "s"),
        Measure("full_listing_s", "  a full listing and decoding, alone", "s"),
        Measure("pool_list_ms", "pool list read (median of 10)", "ms"),
        Measure("created_per_s", "watch: pods created per second", "/s"),
        Measure("applied_per_s", "watch: events applied per second", "/s", rate, at_least=True),
        Measure("received_p95_ms", "event -> received by the watch, p95", "ms"),
        Measure("product_p50_ms", "event -> visible, p50, product part", "ms"),
        Measure("product_p95_ms", "event -> visible, p95, product part", "ms", 500),
        Measure("latency_p50_ms", "event -> visible, p50, end to end", "ms"),
        Measure("latency_p95_ms", "event -> visible, p95, end to end", "ms", 1000),
        Measure("burst_drain_s", "burst: until all of it was visible", "s"),
        Measure("burst_p95_ms", "burst: p95, end to end", "ms"),
        Measure("recovery_p95_ms", "after the burst: p95, end to end", "ms"),
        Measure("recovered_after_s", "after the burst: back within 1 s after", "s"),
    ]


def rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile_ms(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def line(label: str, value: str = "", note: str = "") -> None:
    print(f"  {label:<44} {value:>10}  {note}".rstrip(), flush=True)


# --- the stand-in API server process --------------------------------------------------------------------------


def serve(connection, nodes: int, pods: int, seed: int, niceness: int = 0) -> None:
    """Child process: generate the cluster, serve it, and run the driver's commands (``modify``, ``stream``).

    ``niceness`` lowers its priority, so that on a small machine it takes less CPU from the product it
    measures (a real API server runs on machines of its own).
    """
    if niceness:
        os.nice(niceness)
    state = {}
    rng = random.Random(seed)

    def ready() -> dict:
        from fake_apiserver import FakeApiServer

        from pools.fleet.layouts import pool_cluster

        started = time.perf_counter()
        node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, seed=seed)
        state["pools"] = nodes_by_pool(node_objects)
        state["server"] = FakeApiServer(node_objects, pod_objects, event_log_size=200_000).start()
        return {"url": state["server"].url, "ready_s": time.perf_counter() - started}

    def stop() -> None:
        state["server"].stop()

    serve_commands(
        connection,
        ready,
        {
            "modify": lambda fraction: len(state["server"].modify_random_pods(fraction, rng)),
            "stream": lambda rate, seconds, prefix="bench": stream_pods(
                state["server"], state["pools"], rate, seconds, rng, prefix
            ),
            "burst": lambda count: burst_pods(state["server"], state["pools"], count, rng),
            "stop": stop,
        },
    )


def stream_pods(
    server, pools: dict[str, list[str]], rate: float, seconds: float, rng: random.Random, prefix: str = "bench"
) -> dict:
    """Create ``rate * seconds`` GPU pods of random pools (``<prefix>-<n>``), ``rate`` per second, in 10 ms slices."""
    names = sorted(pools)
    total = round(rate * seconds)
    began, started, sent = time.time(), time.monotonic(), 0
    while sent < total:
        batch = []
        for _ in range(min(total, int((time.monotonic() - started) * rate)) - sent):
            pool = rng.choice(names)
            pod = stream_pod(f"{prefix}-{sent + len(batch) + 1}", f"osmo-{pool}", pool, rng.choice(pools[pool]))
            batch.append(("Pod", "ADDED", pod))
        if batch:
            server.apply_many(batch, copy_obj=False)
            sent += len(batch)
        time.sleep(0.01)
    return {"sent": sent, "seconds": time.monotonic() - started, "not_sent": 0, "from": began}


def burst_pods(server, pools: dict[str, list[str]], count: int, rng: random.Random) -> dict:
    """Create ``count`` GPU pods at once (one write of the server's): a burst the watch must absorb."""
    names = sorted(pools)
    started = time.time()
    batch = []
    for index in range(count):
        pool = rng.choice(names)
        pod = stream_pod(f"burst-{index + 1}", f"osmo-{pool}", pool, rng.choice(pools[pool]))
        batch.append(("Pod", "ADDED", pod))
    server.apply_many(batch, copy_obj=False)
    return {"sent": count, "from": started, "to": time.time()}


def write_kubeconfig(path: Path, url: str) -> str:
    """A kubeconfig for the stand-in server (plain HTTP, no credentials), so the product reads it as a cluster."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "bench", "cluster": {"server": url}}],
                "users": [{"name": "bench", "user": {}}],
                "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
                "current-context": "bench",
            }
        )
    )
    return str(path)


# --- the product process, one per run ---------------------------------------------------------------------------


def product(connection, settings: dict) -> None:
    """Child process: the product on the run's fresh database, measuring what the driver asks for."""
    state = {}

    def ready() -> dict:
        state["run"] = ProductRun(settings)
        return {"rss_mb": rss_mb()}

    serve_commands(
        connection,
        ready,
        {
            "sync": lambda: state["run"].first_sync(),
            "resync": lambda changed: state["run"].resync(changed),
            "watch": lambda: state["run"].watch_start(),
            "watched": lambda stream: state["run"].watch_finish(stream),
            "naive": lambda: state["run"].naive(),
            "stop": lambda: None,
        },
    )


class ProductRun:
    """One run's measures, taken in the product's process through its services and its ``KubernetesSource``."""

    def __init__(self, settings: dict):
        os.environ["DATABASE_URL"] = settings["database_url"]
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        os.environ.setdefault("LOG_LEVEL", "ERROR")
        import django

        django.setup()

        from pools import services
        from pools.choices import ConfigType
        from pools.fleet.layouts import pool_config
        from pools.models import Backend
        from pools.services import inventory

        if settings["full_resync"]:
            inventory.MAX_OBJECT_READS = 0  # any change at all then falls back to the full list
        self.settings, self.kubeconfig = settings, settings["kubeconfig"]
        body = {"kind": "kubernetes", "kubeconfig": self.kubeconfig}
        services.config_apply(changes={ConfigType.BACKEND: {"bench": body}}, actor=services.SYSTEM)
        services.config_import(data=pool_config(backend="bench"), actor=services.SYSTEM)
        self.backend = Backend.objects.get(name="bench")
        self.watch = None

    def source(self):
        from pools.inventory.sources import KubernetesSource

        return KubernetesSource(kubeconfig=self.kubeconfig)

    def first_sync(self) -> dict:
        from pools import services
        from pools.models import NodeMembership

        before = rss_mb()
        started = time.perf_counter()
        counts = services.backend_sync(backend=self.backend)
        return {
            "first_sync_s": time.perf_counter() - started,
            "rss_after_sync_mb": rss_mb(),
            "rss_before_mb": before,
            "synced_nodes": counts["nodes"],
            "synced_pods": counts["pods"],
            "memberships": NodeMembership.objects.count(),
        }

    def resync(self, changed: int) -> dict:
        from accounts.access import SYSTEM
        from pools import selectors, services

        profiler = cProfile.Profile() if self.settings["profile"] else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        counts = services.backend_sync(backend=self.backend)
        seconds = time.perf_counter() - started
        if profiler:
            profiler.disable()
            print(f"\nwhere the resync after {changed} changed pods spends its time:")
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(35)
            sys.stdout.flush()
        started = time.perf_counter()
        listing = self.source().list_versions()
        metadata = time.perf_counter() - started
        listed = len(listing.pods)
        del listing
        started = time.perf_counter()
        inventory = self.source().list_inventory()
        full = time.perf_counter() - started
        del inventory
        reads = []
        for _ in range(10):
            started = time.perf_counter()
            selectors.pool_list(user=SYSTEM)
            reads.append(time.perf_counter() - started)
        return {
            "resync_s": seconds,
            "resync_listing": counts["listing"],
            "resync_pods_written": counts["pods_changed"],
            "metadata_listing_s": metadata,
            "full_listing_s": full,
            "listed_pods": listed,
            "pool_list_ms": statistics.median(reads) * 1000,
        }

    def watch_start(self) -> dict:
        self.watch = WatchRecorder(self.backend, self.kubeconfig)
        return {"ready_s": self.watch.start()}

    def watch_finish(self, stream: dict) -> dict:
        figures = self.watch.finish(stream, timeout=WATCH_GRACE)
        figures["peak_rss_mb"] = rss_mb()
        return figures

    def naive(self) -> dict:
        from pools.models import Node, Pod

        return naive_benchmark(self.kubeconfig, Pod, Node, self.backend)


class WatchRecorder:
    """Runs the product's watch (``services.backend_watch``) and times each streamed pod's event.

    Three latencies per event: emitted -> received by the watch (delivery), emitted -> committed (end to
    end) and received -> committed (the product's part). "Received" is when the watch read the event off
    the connection (``WatchEvent.received``) where the source records it, else when its batch came out of
    the source. The source is the product's ``KubernetesSource``, subclassed only to see each batch go by.
    ``backend_watch`` calls ``on_batch`` once per batch with changes, in order, after its commit: each call
    completes the oldest such batch not yet committed.
    """

    def __init__(self, backend, kubeconfig: str):
        from pools.inventory.sources import KubernetesSource

        self.backend = backend
        self.received: list[float] = []
        self.end_to_end: list[float] = []
        self.product: list[float] = []
        self.applied = 0
        self.samples: list[tuple[float, float, float]] = []  # (emitted, received, committed) of each streamed pod
        self.pending: deque[list[tuple[float, float]]] = deque()  # per batch with changes: (emitted, received)
        self.lock = threading.Lock()
        self.watching = threading.Event()
        self.stop = threading.Event()
        recorder = self

        class Recording(KubernetesSource):
            def watch(self, resource_versions, stop):
                for batch in super().watch(resource_versions, stop):
                    recorder.arrived(batch)
                    yield batch

        self.source = Recording(kubeconfig=kubeconfig)
        self.thread = None

    def arrived(self, batch: list) -> None:
        now = time.time()
        changes = [item for item in batch if getattr(item, "type", "BOOKMARK") != "BOOKMARK"]
        stamps = [
            (float(emitted), getattr(item, "received", 0.0) or now)
            for item in changes
            if item.type == "ADDED" and (emitted := (item.object.get("metadata", {}).get("labels") or {}).get(EMITTED))
        ]
        with self.lock:
            self.received.extend(received - emitted for emitted, received in stamps)
            if changes:
                self.pending.append(stamps)
        self.watching.set()

    def committed(self, counts: dict) -> None:
        now = time.time()
        with self.lock:
            stamps = self.pending.popleft() if self.pending else []
            self.end_to_end.extend(now - emitted for emitted, _ in stamps)
            self.product.extend(now - received for _, received in stamps)
            self.samples.extend((emitted, received, now) for emitted, received in stamps)
            self.applied += len(stamps)

    def start(self, timeout: float = 120) -> float:
        """Start watching; returns once the watch loop is running (its first batch, events or not, came)."""
        from pools import services

        started = time.perf_counter()
        self.thread = threading.Thread(
            target=services.backend_watch,
            daemon=True,
            kwargs={
                "backend": self.backend,
                "stop": self.stop,
                "owner": "bench",
                "on_batch": self.committed,
                "source": self.source,
            },
        )
        self.thread.start()
        if not self.watching.wait(timeout):
            raise RuntimeError(f"the watch did not start within {timeout:.0f} s")
        time.sleep(1)  # the first batch comes at the latest 1 s after the watches were sent: let them connect
        return time.perf_counter() - started

    def finish(self, stream: dict, timeout: float) -> dict:
        """Wait until the streamed events are applied (at most ``timeout`` s), stop, and return the figures.

        With a burst (``stream["burst"]``), the steady figures are those of the pods made before it, and
        ``burst_figures`` describes the burst and the steady stream after it.
        """
        burst, recovery = stream.get("burst"), stream.get("recovery")
        sent = stream["sent"] + (burst["sent"] + recovery["sent"] if burst else 0)
        deadline = time.monotonic() + timeout
        while self.applied < sent and time.monotonic() < deadline:
            time.sleep(0.1)
        self.stop.set()
        self.thread.join(timeout=30)
        with self.lock:
            if burst:
                steady = [sample for sample in self.samples if sample[0] < burst["from"]]
                self.end_to_end = [committed - emitted for emitted, _, committed in steady]
                self.product = [committed - received for _, received, committed in steady]
                self.received = [received - emitted for emitted, received, _ in steady]
                extra = burst_figures(self.samples, burst, recovery)
            else:
                extra = {}
            return {
                **extra,
                "events_applied": len(self.end_to_end),
                "received_p50_ms": percentile_ms(self.received, 0.5),
                "received_p95_ms": percentile_ms(self.received, 0.95),
                "commit_p50_ms": percentile_ms(self.end_to_end, 0.5),
                "commit_p95_ms": percentile_ms(self.end_to_end, 0.95),
                "product_commit_p50_ms": percentile_ms(self.product, 0.5),
                "product_commit_p95_ms": percentile_ms(self.product, 0.95),
            }


# --- the naive way ---------------------------------------------------------------------------------------------


def naive_typed_list(connection, kubeconfig: str) -> None:
    """Child process: the official client's typed lists, as the naive way reads a cluster."""
    from kubernetes import client, config

    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
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
        {"seconds": time.perf_counter() - started, "nodes": len(nodes), "pods": len(pods), "rss_mb": rss_mb()}
    )


def naive_benchmark(kubeconfig: str, Pod, Node, backend) -> dict:  # noqa: N803 - the models
    """The typed lists in a process of their own (for their RSS), then row-by-row saves timed on a sample."""
    import multiprocessing

    ours, theirs = multiprocessing.get_context("spawn").Pipe()
    child = multiprocessing.get_context("spawn").Process(target=naive_typed_list, args=(theirs, kubeconfig))
    child.start()
    typed = ours.recv()
    child.join()
    fields = ("node_name", "phase", "labels", "pool_name", "preemptible", "cpu", "memory", "storage", "gpu", "uid")
    sample = list(Pod.objects.filter(backend=backend).values("namespace", "name", *fields)[:2000])
    Pod.objects.filter(backend=backend, name__in=[p["name"] for p in sample]).delete()
    started = time.perf_counter()
    for row in sample:
        Pod.objects.update_or_create(
            backend=backend, namespace=row.pop("namespace"), name=row.pop("name"), defaults=row
        )
    per_row = (time.perf_counter() - started) / len(sample)
    rows = Pod.objects.filter(backend=backend).count() + Node.objects.filter(backend=backend).count()
    return {
        "typed_list_s": typed["seconds"],
        "typed_list_pods": typed["pods"],
        "typed_list_rss_mb": typed["rss_mb"],
        "row_save_ms": per_row * 1000,
        "sample_rows": len(sample),
        "rows": rows,
        "row_saves_s": per_row * rows,
        "total_s": typed["seconds"] + per_row * rows,
    }


# --- the driver --------------------------------------------------------------------------------------------------


class Child:
    """A spawned child process and its pipe: ``ask`` sends a command and waits for the answer."""

    def __init__(self, context, name: str, target, *args):
        self.name = name
        self.busy = True  # until its first answer (ready)
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=target, args=(theirs, *args), name=name)
        self.process.start()
        theirs.close()  # only the child holds its end: if it dies, reading ours ends instead of waiting forever

    def receive(self, timeout: float):
        deadline = time.monotonic() + timeout
        while not self.connection.poll(1):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no answer within {timeout:.0f} s")
        try:
            status, value = self.connection.recv()
        except EOFError:
            self.process.join(5)
            raise RuntimeError(f"{self.name} ended (exit code {self.process.exitcode})") from None
        self.busy = False
        if status == "error":
            raise RuntimeError(f"{self.name} failed:\n{value}")
        return value

    def ask(self, *command, timeout: float = 3600):
        self.connection.send(command)
        self.busy = True
        return self.receive(timeout)

    def close(self) -> None:
        """Stop the child: politely if it is waiting for a command, else (or if it does not end) terminate it."""
        if self.process.is_alive() and not self.busy:
            try:
                self.ask("stop", timeout=30)
            except (RuntimeError, OSError):
                pass
            self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
        self.connection.close()


class StandInCluster:
    """``--apiserver fake``: a new stand-in server process per run, the cluster generated again from the seed."""

    kind = "fake"

    def __init__(self, context, options, directory: Path):
        self.context, self.options, self.directory = context, options, directory
        self.server: Child | None = None

    def open(self) -> None:
        pass

    def begin_run(self, run: int) -> dict:
        self.server = Child(
            self.context,
            "the stand-in API server",
            serve,
            self.options.nodes,
            self.options.pods,
            1,
            self.options.server_nice,
        )
        info = self.server.receive(timeout=1800)
        kubeconfig = write_kubeconfig(self.directory / "kubeconfig", info["url"])
        note = f"stand-in server at {info['url']}, generated and serialised in {info['ready_s']:.1f} s"
        return {"kubeconfig": kubeconfig, "note": note}

    def modify(self, fraction: float) -> int:
        return self.server.ask("modify", fraction)

    def stream(self, rate: float, seconds: float, prefix: str = "bench") -> dict:
        return self.server.ask("stream", rate, seconds, prefix)

    def burst(self, count: int) -> dict:
        return self.server.ask("burst", count)

    def end_run(self) -> None:
        self.close()

    def close(self) -> None:
        if self.server:
            self.server.close()
            self.server = None


class RealCluster:
    """``--apiserver kube``: kube-apiserver and etcd started and loaded once; streamed pods removed between runs."""

    kind = "kube"

    def __init__(self, context, options, directory: Path):
        self.context, self.options, self.directory = context, options, directory
        self.kube_directory = directory / "kube"
        self.cluster = None
        self.loader: Child | None = None
        self.note = ""

    def open(self) -> None:
        from kube_cluster import KubeCluster
        from kube_load import serve as load_and_serve

        if subprocess.run([str(KUBE_SCRIPT), "path"], capture_output=True).returncode != 0:
            raise SystemExit("kube-apiserver is not built: run scripts/kube-apiserver.sh build")
        started = time.perf_counter()
        self.cluster = KubeCluster.start(self.kube_directory)
        print(f"kube-apiserver and etcd started in {time.perf_counter() - started:.1f} s", flush=True)
        if self.options.server_nice:
            renice(self.cluster, self.options.server_nice)
        options = self.options
        self.loader = Child(
            self.context,
            "the cluster loader",
            load_and_serve,
            self.cluster.kubeconfig,
            options.nodes,
            options.pods,
            1,
            options.server_nice,
        )
        info = self.loader.receive(timeout=3600)
        print(
            f"loaded {options.nodes:,} nodes and {options.pods:,} pods ({info['live_pods']:,} not terminated) through "
            f"the API in {info['load_s']:.1f} s: {info['requests']:,} requests, "
            f"{info['requests'] / info['load_s']:,.0f}/s",
            flush=True,
        )
        self.note = f"kube-apiserver at {self.cluster.api.api_client.configuration.host}"

    def begin_run(self, run: int) -> dict:
        if run > 1:
            started = time.perf_counter()
            removed = self.loader.ask("reset")
            seconds = time.perf_counter() - started
            self.note = f"kube-apiserver, the {removed:,} pods the previous run streamed deleted in {seconds:.0f} s"
        return {"kubeconfig": self.cluster.kubeconfig, "note": self.note}

    def modify(self, fraction: float) -> int:
        return self.loader.ask("modify", fraction)

    def stream(self, rate: float, seconds: float) -> dict:
        return self.loader.ask("stream", rate, seconds)

    def end_run(self) -> None:
        pass

    def close(self) -> None:
        if self.loader:
            self.loader.close()
            self.loader = None
        # Also when the start itself was interrupted: the script stops whatever its pid file names.
        subprocess.run([str(KUBE_SCRIPT), "stop", str(self.kube_directory)], capture_output=True, timeout=60)
        self.cluster = None


def renice(cluster, niceness: int) -> None:
    """Lower the priority of every thread of the API server and etcd (Linux sets niceness per thread)."""
    for pid in (cluster.directory / "pids").read_text().split():
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)
            except (ProcessLookupError, PermissionError):
                pass


class Databases:
    """A migrated template database, copied afresh for every run (a copy takes a second; migrating, eight)."""

    def __init__(self, url: str):
        self.url = url
        self.server, self.name = url.rsplit("/", 1)
        self.template = f"{self.name}_template"

    def _execute(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(f"{self.server}/postgres", autocommit=True) as admin:
            for statement in statements:
                admin.execute(statement)

    def prepare(self, context) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)', f'CREATE DATABASE "{self.template}"')
        migrator = context.Process(target=migrate, args=(f"{self.server}/{self.template}",))
        migrator.start()
        migrator.join()
        if migrator.exitcode != 0:
            raise RuntimeError(f"migrating the template database failed (exit code {migrator.exitcode})")

    def fresh(self) -> None:
        self._execute(
            f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)',
            f'CREATE DATABASE "{self.name}" TEMPLATE "{self.template}"',
        )

    def drop_template(self) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{self.template}" WITH (FORCE)')


def migrate(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def measure_run(context, cluster, databases: Databases, options, run: int, naive: bool) -> dict:
    """One run: a fresh database and cluster, a product process of its own; prints each figure as it comes."""
    started = time.perf_counter()
    figures: dict = {"run": run, "load_before": load_average()}
    print(f"\nrun {run} of {options.runs}, load average {figures['load_before']}", flush=True)
    target = cluster.begin_run(run)
    databases.fresh()
    line("cluster", f"{options.nodes:,} nodes", f"{options.pods:,} pods, {target['note']}")
    settings = {
        "database_url": databases.url,
        "kubeconfig": target["kubeconfig"],
        "full_resync": options.full_resync,
        "profile": options.profile,
    }
    product_process = Child(context, "the product process", product, settings)
    try:
        product_process.receive(timeout=300)
        figures.update(product_process.ask("sync"))
        line(
            "first full sync",
            format_value(figures["first_sync_s"], "s"),
            f"{figures['synced_nodes']:,} nodes, {figures['synced_pods']:,} pods, "
            f"{figures['memberships']:,} memberships",
        )
        line(
            "peak RSS after the first sync",
            f"{figures['rss_after_sync_mb']:,} MB",
            f"({figures['rss_before_mb']} MB before it)",
        )
        changed = cluster.modify(0.01)
        figures["pods_changed"] = changed
        figures.update(product_process.ask("resync", changed))
        line(
            f"resync after {changed:,} pods changed (1 %)",
            format_value(figures["resync_s"], "s"),
            f"{figures['resync_listing']} listing; pods "
            + ", ".join(f"{count:,} {what}" for what, count in figures["resync_pods_written"].items()),
        )
        line(
            f"  a metadata-only listing of {figures['listed_pods']:,} pods",
            format_value(figures["metadata_listing_s"], "s"),
        )
        line("  a full listing and decoding", format_value(figures["full_listing_s"], "s"))
        line("pool list read (median of 10)", format_value(figures["pool_list_ms"], "ms"))
        product_process.ask("watch")
        stream = cluster.stream(options.rate, options.seconds)
        if options.burst:
            # Straight after the steady stream: a burst, then the steady rate again, to see the latency recover.
            stream["burst"] = cluster.burst(options.burst)
            stream["recovery"] = cluster.stream(options.rate, RECOVERY_SECONDS, "after-burst")
        figures.update(product_process.ask("watched", stream, timeout=WATCH_GRACE + 120))
        figures.update(watch_figures(figures, stream, options.seconds))
        report_watch(figures, options)
        if options.burst:
            report_burst(figures, options)
        line("peak RSS of the product process, whole run", f"{figures['peak_rss_mb']:,} MB")
        figures["load_after"] = load_average()
        figures["run_s"] = time.perf_counter() - started
        line("load average after", figures["load_after"], f"(the run took {figures['run_s']:.0f} s)")
        if naive:  # after the run's figures, in its process and on its database, so as not to disturb them
            figures["naive"] = product_process.ask("naive")
    finally:
        product_process.close()
    return figures


def watch_figures(figures: dict, stream: dict, seconds: float) -> dict:
    """The watch's latencies as a reader sees them (one pool-list read after the commit), and its rates.

    Rates are counted over the stream's nominal length (``--seconds``): the stream sends ``rate * seconds``
    pods unless the API server falls behind, and the watch has ``WATCH_GRACE`` more seconds to apply them.
    """
    read = figures["pool_list_ms"]

    def visible(key: str) -> float | None:
        return None if figures[key] is None else figures[key] + read

    return {
        "events_sent": stream["sent"],
        "stream_s": stream["seconds"],
        "created_per_s": stream["sent"] / seconds,
        "not_sent": stream["not_sent"],
        "applied_per_s": figures["events_applied"] / seconds,
        "latency_p50_ms": visible("commit_p50_ms"),
        "latency_p95_ms": visible("commit_p95_ms"),
        "product_p50_ms": visible("product_commit_p50_ms"),
        "product_p95_ms": visible("product_commit_p95_ms"),
    }


def report_watch(figures: dict, options) -> None:
    def pair(low_key: str, high_key: str) -> str:
        return f"p50 {format_value(figures[low_key], 'ms'):>8}   p95 {format_value(figures[high_key], 'ms'):>8}"

    note = f"{figures['events_applied']:,} applied, {format_value(figures['applied_per_s'], '/s')}"
    if figures["not_sent"]:
        note += f"; {figures['not_sent']:,} due pods not sent: the API server did not keep up"
    line(
        f"watch: {figures['events_sent']:,} pods created in {figures['stream_s']:.1f} s",
        format_value(figures["created_per_s"], "/s"),
        f"(asked {format_value(options.rate, '/s')}); {note}",
    )
    if figures["events_applied"] < figures["events_sent"]:
        line(f"  the watch applied {figures['events_applied']:,} of them within {WATCH_GRACE} s after the stream")
    line("  event -> received by the watch", "", pair("received_p50_ms", "received_p95_ms"))
    line("  event -> visible, end to end", "", pair("latency_p50_ms", "latency_p95_ms"))
    line("  event -> visible, the product's part", "", pair("product_p50_ms", "product_p95_ms"))
    read = format_value(figures["pool_list_ms"], "ms")
    line("", "", f"(visible: committed, plus one pool-list read of {read})")


def burst_figures(samples: list[tuple[float, float, float]], burst: dict, recovery: dict) -> dict:
    """How the watch absorbed a burst: how long until all of it was visible, and when the latency came back.

    ``recovered_after_s`` counts from the burst's end to the start of the first second of the steady stream
    after it from which every second's p95 (end to end) is within 1 s again.
    """
    burst_samples = [s for s in samples if burst["from"] <= s[0] <= burst["to"]]
    after = [s for s in samples if s[0] >= recovery["from"]]
    by_second: dict[int, list[float]] = {}
    for emitted, _, committed in after:
        by_second.setdefault(int(emitted - recovery["from"]), []).append(committed - emitted)
    recovered_at = None
    for second in sorted(by_second, reverse=True):
        if percentile_ms(by_second[second], 0.95) > 1000:
            break
        recovered_at = recovery["from"] + second
    return {
        "burst_events": burst["sent"],
        "burst_applied": len(burst_samples),
        "burst_drain_s": max((c for _, _, c in burst_samples), default=burst["to"]) - burst["to"],
        "burst_p95_ms": percentile_ms([c - e for e, _, c in burst_samples], 0.95),
        "recovery_p95_ms": percentile_ms([c - e for e, _, c in after], 0.95),
        "recovered_after_s": None if recovered_at is None else max(0.0, recovered_at - burst["to"]),
    }


def report_burst(figures: dict, options) -> None:
    line(
        f"burst: {figures['burst_events']:,} pods at once",
        format_value(figures["burst_drain_s"], "s"),
        f"until the last was visible; {figures['burst_applied']:,} applied, "
        f"p95 {format_value(figures['burst_p95_ms'], 'ms')} end to end",
    )
    recovered = figures["recovered_after_s"]
    line(
        f"  then {options.rate:,.0f} pods/s for {RECOVERY_SECONDS} s",
        format_value(figures["recovery_p95_ms"], "ms"),
        "p95 end to end; "
        + ("never back within 1 s" if recovered is None else f"every second within 1 s from {recovered:.1f} s on"),
    )


def report_naive(naive: dict, first_sync: float) -> None:
    print("\nthe naive way, once (the last run's cluster and database):", flush=True)
    line(
        "the official client's typed lists",
        format_value(naive["typed_list_s"], "s"),
        f"{naive['typed_list_pods']:,} pods, peak RSS {naive['typed_list_rss_mb']:,} MB",
    )
    line(
        "row-by-row update_or_create()",
        format_value(naive["row_saves_s"], "s"),
        f"{naive['row_save_ms']:.2f} ms per row on a sample of {naive['sample_rows']:,}, "
        f"scaled to {naive['rows']:,} rows",
    )
    line(
        "naive first sync, in all",
        format_value(naive["total_s"], "s"),
        f"{naive['total_s'] / first_sync:.1f}x the median first sync",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--apiserver", choices=("fake", "kube"), default="fake", help="the stand-in server or the real one"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, help="default 5,000 (fake) or 200 (kube)")
    parser.add_argument("--pods", type=int, help="default 150,000 (fake) or 6,000 (kube)")
    parser.add_argument("--rate", type=float, help="pods created per second while watching: 1,000 (fake), 150 (kube)")
    parser.add_argument("--seconds", type=float, default=20, help="how long the pods are streamed")
    parser.add_argument(
        "--burst",
        type=int,
        help="after the stream, this many pods at once, then the rate again for "
        f"{RECOVERY_SECONDS} s (default 5,000 on the stand-in server; 0: none)",
    )
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print where the 1 %% resync spends its time")
    parser.add_argument(
        "--full-resync", action="store_true", help="resync by listing everything (as before metadata-only listing)"
    )
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--server-nice", type=int, default=10, help="the API server's niceness (0: as the product's)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every run's figures and the summary")
    parser.add_argument(
        "--busy",
        type=float,
        default=0,
        metavar="FRACTION",
        help="other work throughout: one process keeping a CPU busy this fraction of the time (0.5: half)",
    )
    options = parser.parse_args()
    nodes, pods, rate = SIZES[options.apiserver]
    options.nodes = options.nodes or nodes
    options.pods = options.pods or pods
    options.rate = options.rate or rate
    if options.burst is None:
        options.burst = 5000 if options.apiserver == "fake" else 0
    if options.burst and options.apiserver != "fake":
        parser.error("--burst needs the stand-in server (the real one creates a few hundred pods a second)")
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    if not 0 <= options.busy < 1:
        parser.error("--busy must be at least 0 and less than 1")

    # A plain `kill` must stop the API server too: SIGTERM then unwinds like Ctrl-C, through the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    directory = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    cluster = (RealCluster if options.apiserver == "kube" else StandInCluster)(context, options, directory)
    databases = Databases(options.database_url)
    started = time.perf_counter()
    print(
        f"{plural(options.runs, 'run')}: {SERVERS[options.apiserver]}, {options.nodes:,} nodes, "
        f"{options.pods:,} pods, {options.rate:,.0f} pods/s for {options.seconds:.0f} s while watching; PostgreSQL; "
        f"{os.cpu_count()} CPUs, load average {load_average()}"
        + (f"; other work keeps a CPU {options.busy:.0%} busy throughout" if options.busy else ""),
        flush=True,
    )
    busy = None
    if options.busy:
        busy = context.Process(target=other_work, args=(options.busy,), daemon=True)
        busy.start()
    runs = []
    try:
        databases.prepare(context)
        cluster.open()
        for run in range(1, options.runs + 1):
            runs.append(
                measure_run(context, cluster, databases, options, run, not options.skip_naive and run == options.runs)
            )
            cluster.end_run()
    except KeyboardInterrupt:
        print("\ninterrupted: stopping the API server and the child processes", file=sys.stderr, flush=True)
        raise SystemExit(130) from None
    finally:
        if busy is not None:
            busy.terminate()
        cluster.close()
        databases.drop_template()
        shutil.rmtree(directory, ignore_errors=True)
    report(runs, options, time.perf_counter() - started)


def report(runs: list[dict], options, seconds: float) -> None:
    """The summary table, the naive way, and the JSON file."""
    measured = measures(options.rate)
    summary = summarise(runs, measured)
    print(
        f"\nsummary of {plural(len(runs), 'run')}: {SERVERS[options.apiserver]}, {options.nodes:,} nodes / "
        f"{options.pods:,} pods, {options.rate:,.0f} pods/s for {options.seconds:.0f} s"
    )
    for text in summary_table(summary, measured):
        print(text)
    print("load average (1, 5, 15 min) before -> after each run:")
    for run in runs:
        print(f"  run {run['run']}  {run['load_before']} -> {run['load_after']}  ({run['run_s']:.0f} s)")
    if (options.nodes, options.pods, options.rate) != SIZES["fake"]:
        print(
            "(the targets of docs/performance.md, for 5,000 nodes / 150,000 pods at 1,000 events/s: "
            "at this size they only indicate)"
        )
    naive = runs[-1].get("naive")
    if naive:
        report_naive(naive, summary["first_sync_s"]["median"])
    print(f"\n{plural(len(runs), 'run')} in {seconds / 60:.1f} min", flush=True)
    if options.json:
        options.json.write_text(
            json.dumps(
                {
                    "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "command": sys.argv,
                    "apiserver": options.apiserver,
                    "nodes": options.nodes,
                    "pods": options.pods,
                    "rate": options.rate,
                    "seconds": options.seconds,
                    "server_nice": options.server_nice,
                    "full_resync": options.full_resync,
                    "cpus": os.cpu_count(),
                    "targets": {m.key: m.target for m in measured if m.target is not None},
                    "summary": summary,
                    "runs": runs,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"figures written to {options.json}")


if __name__ == "__main__":
    main()
