#!/usr/bin/env python
"""Benchmark: four large clusters synced and watched at once by Celery workers on Redis and PostgreSQL.

The "several clusters at once" measure of docs/performance.md. In one run, it:
- starts one stand-in API server per cluster (scripts/bench/fake_apiserver.py), each in a child process at
  niceness 10 (``--server-nice``) with a cluster of the fleet generator: 5,000 nodes / 150,000 pods by default.
  A pool belongs to one backend, so every cluster has pools of its own: the same 50 pool templates select the
  nodes in each (``pool.example.com/pool-01`` ...), and cluster ``i``'s pools are ``c<i>-pool-01`` ...
  (its pods' ``osmo.pool`` label says so);
- configures one ``kubernetes`` backend per cluster (a kubeconfig file each) and the pools, in a PostgreSQL
  database of its own (``--database-url``; dropped at the end unless ``--keep-database``);
- starts ``--workers`` Celery worker processes (``celery -A config worker``, ``--pool``, ``--concurrency``,
  ``--prefetch-multiplier=1``) on a Redis database of its own (``--redis-url``), without beat;
- sends ``sync_backend`` for every backend and measures the first sync of all of them (from sending to the
  last one done) and each worker's peak RSS (``VmHWM`` of its processes, the pool's children included);
- sends ``watch_backend`` for every backend, waits until every watch has listed, then streams pod creations
  into every server (``--rate`` per second each, for ``--seconds``) while this process reads the pool list
  (``selectors.pool_list(with_summary=True)``, what the overview page reads) in a loop: the read's latency
  p50/p95, and how long after its creation each new pod is visible to such a read (end to end: the stand-in
  server's delivery, the worker's commit, and the read; an upper bound, by one loop iteration);
- compares, in the same run, the naive way: the same pool list grouping every node on each read (as it did
  before the node groups' sums were kept), nothing streaming and every fourth read while streaming, after
  checking that both give the same rows.

The workers run at ``GPUPOOL_WORKER_NICE`` (10 unless the environment says otherwise), as deployed workers do.

The load average is printed before and after. ``--runs N`` runs the whole thing N times, each in a fresh
process (and servers, workers and database), and prints each run's figures, then the median and spread.
Workers, servers and the Redis database's keys are cleaned up at the end, also on Ctrl-C or an error.

    make bench-clusters      # or: .venv/bin/python scripts/bench_clusters.py [--nodes N --pods N] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/gpupool_bench_clusters"
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
EMITTED = "bench.example.com/emitted-at"
STREAMED_PREFIX = "bench-"  # the names of the pods the stream creates


# --- the stand-in API servers (child processes) ----------------------------------------------------------------


def cluster_objects(prefix: str, nodes: int, pods: int, seed: int) -> tuple[list[dict], list[dict]]:
    """``pool_cluster``'s nodes and pods, its jobs labelled with this cluster's pools (``<prefix>pool-01`` ...).

    The nodes keep the generator's membership labels: the pool templates select them in every cluster alike.
    """
    from pools.fleet import Fleet
    from pools.fleet.layouts import node_pools, pool_nodes
    from pools.fleet.streams import BASE_TIME
    from pools.inventory.records import paused_gc

    with paused_gc():
        node_objects = pool_nodes(nodes=nodes, seed=seed)
        pools = {name: [prefix + pool for pool in member_of] for name, member_of in node_pools(node_objects).items()}
        return Fleet(seed=seed, nodes=node_objects, pool_labels=pools).snapshot(BASE_TIME, pods)


def serve(connection, prefix: str, nodes: int, pods: int, seed: int, niceness: int) -> None:
    """Child process: generate one cluster, serve it, and run the driver's commands until ``stop``."""
    from fake_apiserver import FakeApiServer

    from pools.fleet.layouts import POOL_LABEL

    if niceness:
        os.nice(niceness)
    started = time.perf_counter()
    node_objects, pod_objects = cluster_objects(prefix, nodes, pods, seed)
    by_pool: dict[str, list[str]] = {}
    for node in node_objects:
        pool = node["metadata"]["labels"].get(POOL_LABEL)
        if pool:
            by_pool.setdefault(prefix + pool, []).append(node["metadata"]["name"])
    server = FakeApiServer(node_objects, pod_objects, event_log_size=200_000).start()
    connection.send((server.url, len(pod_objects), time.perf_counter() - started))
    rng = random.Random(seed)
    while True:
        try:
            command, *args = connection.recv()
        except EOFError:  # the driver is gone
            command = "stop"
        if command == "stream":
            connection.send(stream_jobs(server, by_pool, *args, rng))
        elif command == "rss":
            connection.send(memory_mb(os.getpid()))
        elif command == "stop":
            server.stop()
            with contextlib.suppress(OSError):
                connection.send("stopped")
            return


def stream_jobs(server, by_pool: dict[str, list[str]], rate: float, seconds: float, rng: random.Random) -> int:
    """Create one-GPU job pods on random nodes of random pools, ``rate`` a second for ``seconds``; their
    creation time (``time.time()``) is in the label ``EMITTED``. Returns how many were created."""
    pools = sorted(by_pool)
    started, created = time.monotonic(), 0
    while (elapsed := time.monotonic() - started) < seconds:
        events = []
        for _ in range(int(elapsed * rate) - created):
            pool = rng.choice(pools)
            created += 1
            labels = {"osmo.pool": pool, "osmo.priority": "NORMAL", EMITTED: repr(time.time())}
            one_gpu = {"cpu": "1", "nvidia.com/gpu": "1"}
            pod = {
                "metadata": {"name": f"{STREAMED_PREFIX}{created}", "namespace": f"osmo-{pool}", "labels": labels},
                "spec": {
                    "nodeName": rng.choice(by_pool[pool]),
                    "containers": [{"name": "main", "resources": {"requests": one_gpu, "limits": one_gpu}}],
                },
                "status": {"phase": "Running"},
            }
            events.append(("Pod", "ADDED", pod))
        if events:
            server.apply_many(events, copy_obj=False)
        time.sleep(0.01)
    return created


# --- processes and memory -----------------------------------------------------------------------------------


def memory_mb(pid: int) -> dict[str, int]:
    """``{"rss": VmRSS, "peak": VmHWM}`` of a process in MB (empty once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values["rss" if key == "VmRSS" else "peak"] = int(rest.split()[0]) // 1024
    return values


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


class MemoryWatch:
    """Samples the memory of each worker's processes (the worker and its pool's children) four times a second.

    ``VmHWM`` only grows, so ``peak`` is each process's high-water mark since it started; ``rss`` is the highest
    ``VmRSS`` seen since the last ``reset_rss``, for a peak within one phase.
    """

    def __init__(self, workers: dict[str, int]):
        self.workers = workers
        self.peak: dict[str, dict[int, int]] = {name: {} for name in workers}
        self.rss: dict[str, dict[int, int]] = {name: {} for name in workers}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-watch", daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        for name, pid in self.workers.items():
            for process in (pid, *children(pid)):
                memory = memory_mb(process)
                if memory:
                    self.peak[name][process] = max(self.peak[name].get(process, 0), memory["peak"])
                    self.rss[name][process] = max(self.rss[name].get(process, 0), memory["rss"])

    def reset_rss(self) -> None:
        self.sample()
        self.rss = {name: {} for name in self.workers}

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.sample()


# --- the driver ----------------------------------------------------------------------------------------------


@dataclass
class Cluster:
    """One stand-in cluster: its server process and the pipe to it, its backend, and what the reader saw of it."""

    number: int
    connection: object = None
    process: object = None
    url: str = ""
    pods: int = 0
    backend: object = None
    kubeconfig: str = ""
    last_seen_id: int = 0
    visible: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"cluster-{self.number}"

    @property
    def prefix(self) -> str:
        return f"c{self.number}-"


class ReadParts:
    """Where a read's time goes: its SQL (the round trips to PostgreSQL, its execution included) and Python's
    garbage collections during it; the rest is the read's own Python. For the slowest reads' breakdown."""

    def __init__(self):
        self.sql = self.gc = 0.0
        self._gc_began = None
        self.parts: list[tuple[float, float, float]] = []  # (total, sql, gc) per read

    def _wrapper(self, execute, sql, params, many, context):
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.sql += time.perf_counter() - began

    def _gc(self, phase, info):
        if phase == "start":
            self._gc_began = time.perf_counter()
        elif self._gc_began is not None:
            self.gc += time.perf_counter() - self._gc_began
            self._gc_began = None

    @contextlib.contextmanager
    def timed(self, reads: list[float]):
        from django.db import connection

        self.sql = self.gc = 0.0
        gc.callbacks.append(self._gc)
        began = time.perf_counter()
        try:
            with connection.execute_wrapper(self._wrapper):
                yield
        finally:
            total = time.perf_counter() - began
            gc.callbacks.remove(self._gc)
            reads.append(total)
            self.parts.append((total, self.sql, self.gc))

    def slowest(self, fraction: float = 0.05) -> dict[str, float]:
        """The median SQL, GC and other time of the slowest ``fraction`` of the reads, in seconds."""
        ranked = sorted(self.parts, reverse=True)[: max(1, int(len(self.parts) * fraction))]
        return {
            "total": statistics.median(part[0] for part in ranked),
            "sql": statistics.median(part[1] for part in ranked),
            "gc": statistics.median(part[2] for part in ranked),
        }


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else float("nan")


def database_create(database_url: str) -> None:
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')


def database_drop(database_url: str) -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def kubeconfig_write(directory: str, cluster: Cluster) -> str:
    """A kubeconfig naming the cluster's stand-in server (plain HTTP, no credentials)."""
    path = os.path.join(directory, f"{cluster.name}.kubeconfig")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster.name, "cluster": {"server": cluster.url}}],
        "users": [{"name": "bench", "user": {}}],
        "contexts": [{"name": cluster.name, "context": {"cluster": cluster.name, "user": "bench"}}],
        "current-context": cluster.name,
    }
    Path(path).write_text(json.dumps(config))  # JSON is YAML
    return path


def configuration(clusters: list[Cluster]) -> dict:
    """One bundle: a ``kubernetes`` backend per cluster, the shared pool templates, and each cluster's pools."""
    from pools.fleet.layouts import pool_config

    bundle: dict = {"backends": {}, "podTemplates": {}, "pools": {}}
    for cluster in clusters:
        bundle["backends"][cluster.name] = {"kind": "kubernetes", "kubeconfig": cluster.kubeconfig}
        config = pool_config(backend=cluster.name)
        bundle["podTemplates"].update(config["podTemplates"])
        bundle["pools"].update({cluster.prefix + name: body for name, body in config["pools"].items()})
    return bundle


def workers_start(options, env: dict, clusters: list[Cluster], log_dir: str) -> dict[str, subprocess.Popen]:
    """Start the Celery workers, each in a session of its own (so that its pool's children can be ended with it).

    With ``--backend-queues`` the backends' queues are dealt out to the workers in turn.
    """
    workers = {}
    for index in range(options.workers):
        name = f"bench{index + 1}"
        queues = (
            ",".join(f"backend-{c.name}" for c in clusters[index :: options.workers])
            if options.backend_queues
            else "celery"
        )
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-n",
            f"{name}@%h",
            f"--pool={options.pool}",
            f"--concurrency={options.concurrency}",
            "--prefetch-multiplier=1",
            "-Q",
            queues,
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
        ]
        with open(os.path.join(log_dir, f"{name}.log"), "w") as log:  # the worker keeps its own descriptor
            workers[name] = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
    return workers


def workers_stop(workers: dict[str, subprocess.Popen]) -> None:
    """Cold shutdown (SIGQUIT: running watches are not waited for), then SIGKILL of each worker's session."""
    for process in workers.values():
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGQUIT)
    deadline = time.monotonic() + 15
    for process in workers.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
    for process in workers.values():  # the pool's children too, which share the worker's session
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def workers_wait(app, workers: dict[str, subprocess.Popen], log_dir: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in workers.items():
            if process.poll() is not None:
                log = Path(log_dir, f"{name}.log").read_text()[-3000:]
                raise SystemExit(f"worker {name} exited with {process.returncode}:\n{log}")
        replies = app.control.ping(timeout=1.0)
        answered = {name.split("@")[0] for reply in replies for name in reply}
        if answered >= set(workers):
            return
    raise SystemExit(f"the workers did not answer within {timeout:.0f} s")


def results_wait(results: dict[str, object], timeout: float) -> dict[str, tuple[float, dict]]:
    """Wait for every task; returns ``{backend: (monotonic time it was seen done, its result)}``."""
    done: dict[str, tuple[float, dict]] = {}
    deadline = time.monotonic() + timeout
    while len(done) < len(results):
        if time.monotonic() > deadline:
            missing = sorted(set(results) - set(done))
            raise SystemExit(f"tasks not done after {timeout:.0f} s: {', '.join(missing)}")
        for name, result in results.items():
            if name not in done and result.ready():
                if result.failed():
                    raise SystemExit(f"the task of {name} failed:\n{result.traceback}")
                done[name] = (time.monotonic(), result.get())
        time.sleep(0.05)
    return done


def streamed_pods_committed(cluster: Cluster) -> list[float]:
    """The creation times (``EMITTED``) of the streamed pods of ``cluster`` committed since the last call.

    One watcher writes a backend at a time and each batch commits before the next starts, so a backend's new
    rows get increasing ids and ``id > last seen`` misses none.
    """
    from pools.models import Pod

    rows = list(
        Pod.objects.filter(backend_id=cluster.backend.pk, id__gt=cluster.last_seen_id, name__startswith=STREAMED_PREFIX)
        .order_by("id")
        .values_list("id", "labels")
    )
    if rows:
        cluster.last_seen_id = rows[-1][0]
    return [float(labels[EMITTED]) for _, labels in rows if EMITTED in (labels or {})]


def naive_node_groups(backend_ids):
    """The way before the groups' sums were kept: every read groups every node of the backends in SQL."""
    from django.db.models import Count, DecimalField, F, Sum, Value
    from django.db.models.functions import Greatest

    from pools.models import Node, placements_pairs, placements_pool_ids
    from pools.selectors.capacity import NODE_GROUP_COLUMNS, NodeGroup

    free = Greatest(F("gpu") - F("gpu_used"), Value(0), output_field=DecimalField(max_digits=14, decimal_places=3))
    sums = {"nodes": Count("id"), "free": Sum(free)}
    sums.update({column: Sum(column) for column in NODE_GROUP_COLUMNS[3:] if column not in sums})
    rows = (
        Node.objects.filter(backend_id__in=list(backend_ids))
        .exclude(placements="")
        .order_by()
        .values_list("placements", *NODE_GROUP_COLUMNS[:3])
        .annotate(**{f"sum_{column}": sums[column] for column in NODE_GROUP_COLUMNS[3:]})
    )
    return [NodeGroup(placements_pairs(row[0]), placements_pool_ids(row[0]), *row[1:]) for row in rows]


def naive_pool_list(user):
    """``selectors.pool_list(with_summary=True)`` reading ``naive_node_groups`` instead of the kept sums."""
    from pools import selectors
    from pools.selectors import capacity

    kept, capacity.node_groups = capacity.node_groups, naive_node_groups
    try:
        return selectors.pool_list(user=user, with_summary=True)
    finally:
        capacity.node_groups = kept


def run(options) -> dict:
    figures: dict = {"load_before": load_average()}
    print(f"load average before: {figures['load_before']} ({os.cpu_count()} CPUs)", flush=True)
    clusters = [Cluster(number) for number in range(1, options.clusters + 1)]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": options.database_url,
        "CELERY_BROKER_URL": options.redis_url,
        "CELERY_RESULT_BACKEND": options.redis_url,
        # Longer than the watch's list, the stream and its drain: the workers are shut down cold at the end.
        "GPUPOOL_WATCH_TASK_SECONDS": str(options.seconds + 600),
        "GPUPOOL_BACKEND_QUEUES": "1" if options.backend_queues else "0",
        "LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)  # this process sends the tasks and reads the pool list with the same settings

    with contextlib.ExitStack() as cleanup:
        context = multiprocessing.get_context("spawn")
        started = time.perf_counter()
        for cluster in clusters:
            cluster.connection, theirs = context.Pipe()
            cluster.process = context.Process(
                target=serve,
                args=(theirs, cluster.prefix, options.nodes, options.pods, cluster.number, options.server_nice),
                daemon=True,
            )
            cluster.process.start()
        cleanup.callback(servers_stop, clusters)

        database_create(options.database_url)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        if not options.keep_database:
            cleanup.callback(database_drop, options.database_url)

        import redis

        broker = redis.Redis.from_url(options.redis_url)
        broker.flushdb()
        cleanup.callback(broker.flushdb)

        from django.utils import timezone

        from accounts.access import SYSTEM
        from config.celery import app
        from pools import selectors, services, tasks
        from pools.models import Backend, Lease, NodeMembership, Pod
        from pools.services.watching import watch_lease

        directory = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="bench-clusters-"))
        for cluster in clusters:
            cluster.url, cluster.pods, _generated_in = cluster.connection.recv()
            cluster.kubeconfig = kubeconfig_write(directory, cluster)
        figures["servers_ready"] = time.perf_counter() - started
        figures["server_rss_mb"] = [server_rss(cluster) for cluster in clusters]
        print(
            f"{len(clusters)} clusters of {options.nodes} nodes and {clusters[0].pods} pods served, "
            f"ready {figures['servers_ready']:.1f} s after start; servers' RSS "
            f"{', '.join(str(mb) for mb in figures['server_rss_mb'])} MB",
            flush=True,
        )
        services.config_import(data=configuration(clusters), actor=services.SYSTEM)
        for cluster in clusters:
            cluster.backend = Backend.objects.get(name=cluster.name)

        workers = workers_start(options, env, clusters, directory)
        cleanup.callback(workers_stop, workers)
        workers_wait(app, workers, directory)
        memory = cleanup.enter_context(MemoryWatch({name: process.pid for name, process in workers.items()}))
        print(
            f"{options.workers} workers, --pool={options.pool} --concurrency={options.concurrency}"
            f"{', a queue per backend' if options.backend_queues else ', one queue'}; load {load_average()}",
            flush=True,
        )

        # -- first sync of every backend
        started = time.monotonic()
        sent = {
            c.name: tasks.sync_backend.apply_async((c.backend.pk,), **tasks.backend_queue(c.name)) for c in clusters
        }
        done = results_wait(sent, timeout=1800)
        figures["first_sync_all"] = max(at for at, _ in done.values()) - started
        memory.sample()
        figures["sync_peak_rss_mb"] = {name: max(peaks.values(), default=0) for name, peaks in memory.peak.items()}
        for name, (at, result) in sorted(done.items()):
            if "duration" not in result:
                raise SystemExit(f"the sync of {name} did not run: {result}")
            print(
                f"  {name}: done {at - started:.1f} s after sending (its sync {result['duration']:.1f} s), "
                f"{result['nodes']} nodes, {result['pods']} pods, listing {result['listing']}"
            )
        print(
            f"first sync of all {len(clusters)}: {figures['first_sync_all']:.1f} s; peak RSS per worker "
            f"(its largest process) {figures['sync_peak_rss_mb']} MB; "
            f"{NodeMembership.objects.count()} memberships; load {load_average()}",
            flush=True,
        )

        # Each first sync analysed the tables it loaded (services.inventory._statistics_refresh).
        if not options.no_settle:  # this process reads as the web server does, whose entry point settles
            from config.startup import objects_settle

            objects_settle()
        reads = []
        for _ in range(10):
            began = time.perf_counter()
            rows = selectors.pool_list(user=SYSTEM, with_summary=True)
            reads.append(time.perf_counter() - began)
        figures["pool_list_quiet"] = statistics.median(reads)
        if naive_pool_list(SYSTEM) != rows:  # nothing writes now: the kept sums and every node agree
            raise SystemExit("the pool list from the kept node groups differs from the one grouping every node")
        naive = []
        for _ in range(10):
            began = time.perf_counter()
            naive_pool_list(SYSTEM)
            naive.append(time.perf_counter() - began)
        figures["pool_list_quiet_naive"] = statistics.median(naive)
        print(
            f"pool list ({len(rows)} pools), nothing streaming: median {figures['pool_list_quiet'] * 1000:.0f} ms "
            f"(the naive way, grouping every node on each read: {figures['pool_list_quiet_naive'] * 1000:.0f} ms)"
        )

        # -- watches, and the stream
        memory.reset_rss()
        sent_at, started = timezone.now(), time.monotonic()
        watches = {
            c.name: tasks.watch_backend.apply_async((c.backend.pk,), **tasks.backend_queue(c.name)) for c in clusters
        }
        waiting = {c.name: c.backend.pk for c in clusters}
        while waiting:
            for name, result in watches.items():
                if result.ready():
                    raise SystemExit(f"the watch of {name} ended early: {result.get(propagate=False)}")
            for name, pk in list(waiting.items()):
                listed = Backend.objects.filter(pk=pk, last_sync_at__gte=sent_at).exists()
                if listed and Lease.objects.filter(name=watch_lease(pk)).exists():
                    del waiting[name]
            if time.monotonic() - started > 900:
                raise SystemExit(f"watches not listed after 900 s: {', '.join(waiting)}")
            time.sleep(0.1)
        figures["watches_listed"] = time.monotonic() - started
        print(
            f"all {len(clusters)} watches listed (their first resync) {figures['watches_listed']:.1f} s after sending"
        )
        for cluster in clusters:
            cluster.last_seen_id = (
                Pod.objects.filter(backend_id=cluster.backend.pk).order_by("-id").values_list("id", flat=True).first()
                or 0
            )
        time.sleep(1)  # the watch connections open

        load_at_stream = load_average()
        for cluster in clusters:
            cluster.connection.send(("stream", options.rate, options.seconds))
        streaming, reads, naive, created = set(range(len(clusters))), [], [], 0
        stream_started, parts = time.monotonic(), ReadParts()
        while streaming:
            committed = [(cluster, streamed_pods_committed(cluster)) for cluster in clusters]
            with parts.timed(reads):
                selectors.pool_list(user=SYSTEM, with_summary=True)
            shown = time.time()  # the read began after the poll: it shows what the poll found
            for cluster, emitted in committed:
                cluster.visible.extend(shown - value for value in emitted)
            if len(reads) % 4 == 0:  # the naive way now and then, in the same conditions
                began = time.perf_counter()
                naive_pool_list(SYSTEM)
                naive.append(time.perf_counter() - began)
            for index in list(streaming):
                if clusters[index].connection.poll():
                    created += clusters[index].connection.recv()
                    streaming.discard(index)
        stream_seconds = time.monotonic() - stream_started
        # What is still to come is counted as seen by a poll plus a median read (none runs meanwhile).
        deadline, read = time.monotonic() + 60, statistics.median(reads)
        while sum(len(cluster.visible) for cluster in clusters) < created and time.monotonic() < deadline:
            time.sleep(0.1)
            for cluster in clusters:
                polled = time.time()
                cluster.visible.extend(polled + read - value for value in streamed_pods_committed(cluster))
        seen = sum(len(cluster.visible) for cluster in clusters)
        memory.sample()
        visible = [latency for cluster in clusters for latency in cluster.visible]
        figures.update(
            {
                "events_sent": created,
                "events_visible": seen,
                "stream_seconds": stream_seconds,
                "pool_list_reads": len(reads),
                "pool_list_p50": percentile(reads, 0.5),
                "pool_list_p95": percentile(reads, 0.95),
                "pool_list_naive_p50": percentile(naive, 0.5),
                "pool_list_naive_p95": percentile(naive, 0.95),
                "visible_p50": percentile(visible, 0.5),
                "visible_p95": percentile(visible, 0.95),
                "watch_peak_rss_mb": {name: max(rss.values(), default=0) for name, rss in memory.rss.items()},
                "load_stream": load_at_stream,
                "pool_list_slowest": parts.slowest(),
            }
        )
        print(
            f"stream: {created} pods created in {stream_seconds:.1f} s ({options.rate:.0f}/s into each of "
            f"{len(clusters)} servers), {seen} visible in the database"
        )
        print(
            f"  pool list while streaming ({len(reads)} reads): p50 {figures['pool_list_p50'] * 1000:.0f} ms, "
            f"p95 {figures['pool_list_p95'] * 1000:.0f} ms; the naive way ({len(naive)} reads): p50 "
            f"{figures['pool_list_naive_p50'] * 1000:.0f} ms, p95 {figures['pool_list_naive_p95'] * 1000:.0f} ms"
        )
        slowest = figures["pool_list_slowest"]
        print(
            f"  the slowest 5 % of those reads, median: {slowest['total'] * 1000:.0f} ms, of which SQL "
            f"{slowest['sql'] * 1000:.0f} ms and garbage collection {slowest['gc'] * 1000:.0f} ms"
        )
        print(
            f"  pod created -> visible in the pool list: p50 {figures['visible_p50'] * 1000:.0f} ms, "
            f"p95 {figures['visible_p95'] * 1000:.0f} ms (each backend's p95: "
            + ", ".join(f"{percentile(c.visible, 0.95) * 1000:.0f}" for c in clusters)
            + " ms)"
        )
        print(f"  peak RSS per worker while watching: {figures['watch_peak_rss_mb']} MB")
        figures["server_rss_end_mb"] = [server_rss(cluster) for cluster in clusters]
        figures["load_after"] = load_average()
        print(
            f"servers' RSS at the end: {figures['server_rss_end_mb']} MB; load average after: {figures['load_after']}"
        )
    return figures


def server_rss(cluster: Cluster) -> int:
    cluster.connection.send(("rss",))
    return cluster.connection.recv().get("rss", 0)


def servers_stop(clusters: list[Cluster]) -> None:
    for cluster in clusters:
        if cluster.process is not None and cluster.process.is_alive():
            with contextlib.suppress(OSError, EOFError):
                cluster.connection.send(("stop",))
    for cluster in clusters:
        if cluster.process is not None:
            cluster.process.join(timeout=10)
            if cluster.process.is_alive():
                cluster.process.kill()


# --- several runs ---------------------------------------------------------------------------------------------

SUMMARY = (
    # (label, key, unit scale, format, target)
    ("first sync of all clusters", "first_sync_all", 1, "{:.1f} s", "<= 60 s"),
    ("peak RSS of a syncing process", "sync_peak_rss_max", 1, "{:.0f} MB", "<= 1,000 MB"),
    ("watches listed after sending", "watches_listed", 1, "{:.1f} s", ""),
    ("pool list, nothing streaming, median", "pool_list_quiet", 1000, "{:.0f} ms", ""),
    ("pool list while streaming, p50", "pool_list_p50", 1000, "{:.0f} ms", ""),
    ("pool list while streaming, p95", "pool_list_p95", 1000, "{:.0f} ms", "<= 200 ms"),
    ("  naive: nothing streaming, median", "pool_list_quiet_naive", 1000, "{:.0f} ms", ""),
    ("  naive: while streaming, p50", "pool_list_naive_p50", 1000, "{:.0f} ms", ""),
    ("  naive: while streaming, p95", "pool_list_naive_p95", 1000, "{:.0f} ms", ""),
    ("pod created -> visible in the pool list, p95", "visible_p95", 1000, "{:.0f} ms", ""),
    ("peak RSS of a watching process", "watch_peak_rss_max", 1, "{:.0f} MB", ""),
)


def with_maxima(figures: dict) -> dict:
    figures["sync_peak_rss_max"] = max(figures["sync_peak_rss_mb"].values())
    figures["watch_peak_rss_max"] = max(figures["watch_peak_rss_mb"].values())
    return figures


def summary(runs: list[dict]) -> None:
    print()
    print(f"{len(runs)} run(s); load average before each: " + "; ".join(run["load_before"] for run in runs))
    print(f"{'measure':<46} {'median':>10}  {'runs':<22} target")
    for label, key, scale, form, target in SUMMARY:
        values = [run[key] * scale for run in runs]
        each = " / ".join(form.format(value).split()[0] for value in values)
        print(f"{label:<46} {form.format(statistics.median(values)):>10}  {each:<22} {target}")


def repeat(options, argv: list[str]) -> list[dict]:
    """Run the benchmark ``options.runs`` times, each in a fresh process."""
    runs, arguments, skip = [], [], False
    for argument in argv:  # every option but --runs and --json, in either form (--runs 3, --runs=3)
        if skip or argument.startswith(("--runs", "--json")):
            skip = argument in ("--runs", "--json")
            continue
        arguments.append(argument)
    for number in range(1, options.runs + 1):
        print(f"\n=== run {number} of {options.runs} ===", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json") as output:
            subprocess.run(
                [sys.executable, __file__, *arguments, "--runs=1", f"--json={output.name}"], check=True, cwd=ROOT
            )
            runs.append(json.loads(Path(output.name).read_text()))
    return runs


def interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=5000, help="nodes per cluster")
    parser.add_argument("--pods", type=int, default=150_000, help="pods per cluster")
    parser.add_argument("--rate", type=float, default=250, help="pods created per second in each cluster")
    parser.add_argument("--seconds", type=float, default=30, help="how long the pods are created")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--pool", default="prefork", choices=("prefork", "threads", "solo"), help="Celery's pool")
    parser.add_argument("--concurrency", type=int, default=2, help="tasks at once per worker")
    parser.add_argument(
        "--backend-queues", action="store_true", help="a queue per backend (GPUPOOL_BACKEND_QUEUES), dealt to workers"
    )
    parser.add_argument(
        "--no-settle", action="store_true", help="read without config.startup.objects_settle (gc.freeze), as before"
    )
    parser.add_argument("--server-nice", type=int, default=10, help="the stand-in servers' niceness")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_CLUSTERS_DATABASE_URL", DEFAULT_DB))
    parser.add_argument("--keep-database", action="store_true", help="leave the database for inspection")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS, help="broker and results (its keys are flushed)")
    parser.add_argument("--runs", type=int, default=1, help="run this many times, each in a fresh process")
    parser.add_argument("--json", help="write the figures to this file")
    options = parser.parse_args()

    if options.runs > 1:
        runs = repeat(options, sys.argv[1:])
    else:
        # SIGTERM unwinds like Ctrl-C, so that workers and servers are stopped either way.
        signal.signal(signal.SIGTERM, interrupted)
        runs = [with_maxima(run(options))]
    if options.json:
        Path(options.json).write_text(json.dumps(runs[0] if len(runs) == 1 else runs, indent=2))
    summary(runs)


if __name__ == "__main__":
    main()
