#!/usr/bin/env python
"""Benchmark: the Workloads page and ``GET /api/workloads/?pending=1`` (SEMANTICS §10) over 150,000 pods.

Builds the cluster of ``pools.fleet.layouts.pool_cluster`` (5,000 nodes, 150,000 pods, 50 pools) as
``bench_quotas.py`` does, its pods synced through ``backend_sync`` (so each carries its workload key, as the sync
writes it); each job pod is its Job's, one GPU pod in eight is made a member of a four-pod KAI gang, and 10,000 more
GPU pods wait unbound (Pending, ``PodScheduled`` False) in 2,000 gangs of five of 500 projects (their ``runai/queue``
label; 50 departments with a share of every pool, each project a share of one). Then, in the same run, server-side
for a superuser:

- ``GET /workloads/`` (the first page of 100 rows, GPU holders first) and ``GET /api/workloads/?pending=1`` (the
  first page of the pending workloads and their count), with the verdicts left out (``--verdicts`` keeps them: they
  are their own benchmark);
- the naive way: every pod read into Python and grouped there, for the pending rows; checked to find the same
  number of pending workloads;
- with ``--verdicts``, also ``selectors.pending_verdicts()`` for every pending workload, their counts by pool and
  reason as ``/metrics`` reads them, and how the verdicts move with watch events: three times, the running pods of a
  full node of a pool where a workload waits for capacity are deleted through ``watch_events_apply``, the pools of
  that node judged and kept again as the watch's judging thread does at once
  (``services.workload_verdicts_keep(pool_ids=...)``), then its verdicts are read and compared with a whole round's
  judgement (the database it leaves has those pods gone:
  build it again for the figures of the other cases). The cases are timed twice: judged live (no round kept, as
  without a worker), then read from the worker's round, whose own cost is timed between.

Each is run ``--runs`` times (3) of ``--iterations`` calls; it prints the median of the run medians, their spread,
the SQL query count and the load average before and after. Use PostgreSQL (``DATABASE_URL``) for the figures of
docs/performance.md: the script migrates the database it is given, so give it one of its own.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_workloads \\
        .venv/bin/python scripts/bench_workloads.py [--nodes 5000] [--pods 150000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.timing import loadavg, timed  # noqa: E402
from bench_node_pools import ListSource, setup_django  # noqa: E402

GANG_SIZE = 4


def build(inventory: Path, nodes: int, pods: int, pools: int, waiting: int = 10_000, projects: int = 500) -> None:
    from pools import services
    from pools.choices import ConfigType
    from pools.engine.workloads import POD_GROUP_ANNOTATION
    from pools.fleet.layouts import POOL_LABEL, pool_cluster, pool_config
    from pools.models import Backend

    node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, pools=pools)
    gpu_pods = [
        pod
        for pod in pod_objects
        if (pod["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "Job"
        and any("nvidia.com/gpu" in (c.get("resources") or {}).get("requests", {}) for c in pod["spec"]["containers"])
    ]
    for index, pod in enumerate(gpu_pods[: len(gpu_pods) // 8]):
        metadata = pod["metadata"] = dict(pod["metadata"])  # the fleet shares what pods have alike
        metadata["annotations"] = {**(metadata.get("annotations") or {}), POD_GROUP_ANNOTATION: f"gang-{index // 4}"}
    # ``waiting`` GPU pods, not bound to a node, in gangs of five of ``projects`` projects (their runai/queue label):
    # what the verdicts judge (SEMANTICS §10).
    unbound = gpu_pods[len(gpu_pods) // 8 :][:waiting]
    for index, pod in enumerate(unbound):
        metadata = pod["metadata"] = dict(pod["metadata"])
        metadata["annotations"] = {**(metadata.get("annotations") or {}), POD_GROUP_ANNOTATION: f"wait-{index // 5}"}
        metadata["labels"] = {**(metadata.get("labels") or {}), "runai/queue": _project(index // 5, projects)}
        pod["spec"] = {key: value for key, value in pod["spec"].items() if key != "nodeName"}
        message = f"0/{nodes} nodes are available: Insufficient nvidia.com/gpu"
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        pod["status"] = {"phase": "Pending", "conditions": [condition]}
    path = inventory / "bench.json"
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    config = pool_config(pools=pools)
    departments = max(1, projects // 10)
    pool_names = sorted(config["pools"])
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"bench": {"kind": "file", "source": str(path)}},
            ConfigType.POD_TEMPLATE: config["podTemplates"],
            ConfigType.POOL: {
                name: {**body, "node_label": {"key": POOL_LABEL, "value": name}}
                for name, body in config["pools"].items()
            },
        },
        actor=services.SYSTEM,
    )
    # 50 departments with a share of every pool, 500 projects with a share of one pool each.
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {
                f"dept-{d:02d}": {"resources": [{"nodePool": pool, "gpu": {"deserved": 40}} for pool in pool_names]}
                for d in range(departments)
            },
            ConfigType.PROJECT: {
                _project(p, projects): {
                    "department": f"dept-{p % departments:02d}",
                    "resources": [{"nodePool": pool_names[p % len(pool_names)], "gpu": {"deserved": 8 + p % 3 * 8}}],
                }
                for p in range(projects)
            },
        },
        actor=services.SYSTEM,
    )
    document = {"apiVersion": "v1", "kind": "List", "items": node_objects + pod_objects}
    services.backend_sync(backend=Backend.objects.get(name="bench"), source=ListSource(document))


def _judged(verdict: dict | None) -> tuple:
    """What a verdict says (its checks' reasons and its victims), not how long the workload has waited."""
    if verdict is None:
        return ()
    return tuple(check["reason"] for check in verdict["checks"]), tuple(v["name"] for v in verdict["victims"])


def _project(index: int, projects: int) -> str:
    return f"proj-{index % projects:03d}"


def freed_node_moves_verdicts(rounds: int) -> list[dict]:
    """A node freed by watch events moves the verdicts it affects: for ``rounds`` pools with a workload waiting for
    capacity, the running pods on the pool's busiest node are deleted through ``watch_events_apply`` (as a watch
    applies them), then the backend's verdicts are read again. Returns, per round, the apply and the verdicts' times
    (ms) and how many verdicts changed."""
    from django.utils import timezone

    from pools import selectors, services
    from pools.inventory.sources import WatchEvent
    from pools.models import Backend, Node, Pod

    backend = Backend.objects.get(name="bench")
    rounds_done = []
    used_pools: set[str] = set()
    for _ in range(rounds):
        Backend.objects.filter(pk=backend.pk).update(last_heartbeat=timezone.now())  # as a watch keeps it
        before = selectors.pending_verdicts(backend_ids=[backend.pk])
        # a workload waiting for capacity, if any: then the freed node changes its verdict; else any waiting one
        waiting = sorted(
            before.items(), key=lambda item: not any(c["reason"] == "no_capacity" for c in item[1]["checks"])
        )
        pool = None
        for key, _ in waiting:
            pod = Pod.objects.filter(backend=backend, namespace=key[1], workload_kind=key[2], workload_name=key[3])
            pool = pod.values_list("pool_name", flat=True).first()
            if pool and pool not in used_pools:
                break
        if not pool:
            break
        used_pools.add(pool)
        node = (
            Node.objects.filter(backend=backend, memberships__pool__name=pool, available=True)
            .order_by("-gpu_used", "name")
            .first()
        )
        pods = list(Pod.objects.filter(backend=backend, node_name=node.name).values("namespace", "name"))
        events = [
            WatchEvent("DELETED", "pods", {"metadata": {"namespace": p["namespace"], "name": p["name"]}}) for p in pods
        ]
        started = time.perf_counter()
        counts = services.watch_events_apply(backend=backend, events=events, trusted_versions=False)
        applied = time.perf_counter()
        # What the watch's judging thread does after the batch: the pools of the nodes it changed, judged and kept.
        pool_ids = selectors.pools_of_nodes(backend.pk, counts["gpu_nodes"])
        services.workload_verdicts_keep(backend=backend, pool_ids=pool_ids)
        judged = time.perf_counter()
        after = selectors.pending_verdicts(backend_ids=[backend.pk])
        read = time.perf_counter()
        changed = sum(1 for key, verdict in after.items() if _judged(before.get(key)) != _judged(verdict))
        # The same verdicts as a whole round judging the backend now gives.
        whole = selectors.judged_verdicts(backend.pk)[0]
        differ = sum(1 for key, verdict in whole.items() if _judged(after.get(key)) != _judged(verdict))
        rounds_done.append(
            {
                "pool": pool,
                "node": node.name,
                "pods": len(pods),
                "pools": len(pool_ids),
                "apply_ms": (applied - started) * 1000,
                "verdicts_ms": (judged - applied) * 1000,
                "read_ms": (read - judged) * 1000,
                "changed": changed,
                "differ": differ,
            }
        )
        kept_round(backend)  # the whole round the watch keeps after it
    return rounds_done


def kept_round(backend) -> None:
    """A round of the backend judged and kept, as its watch keeps them, then its verdict table vacuumed as
    autovacuum does after each round (the table's own settings: after 5,000 dead rows), were it on."""
    from django.db import connection

    from pools import services

    services.workload_verdicts_keep(backend=backend)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) pools_workloadverdict")


def naive_pending() -> list[dict]:
    """The pending workloads the naive way: every pod read as a row and grouped in Python."""
    from pools.models import Pod

    groups: dict[tuple, dict] = defaultdict(lambda: {"pods": 0, "pending": 0, "running": 0, "gpu": 0})
    for pod in Pod.objects.all().iterator(chunk_size=5000):
        group = groups[(pod.backend_id, pod.namespace, pod.workload_kind, pod.workload_name)]
        group["pods"] += 1
        group["gpu"] += pod.gpu
        group["pending" if pod.phase == "Pending" else "running"] += 1
    return sorted(
        ({"key": key, **group} for key, group in groups.items() if group["pending"]),
        key=lambda row: (-row["gpu"], row["key"]),
    )


def learned_history(backend) -> int:
    """Ten finished runs of every project and kind with a workload on the backend, of 20 minutes to 6 hours, as
    the worker keeps them (``WorkloadRun``): what the estimates learn runtimes from."""
    import random
    from datetime import timedelta

    from django.utils import timezone

    from pools.models import Project, WorkloadRun, WorkloadSums

    rng = random.Random(7)
    kinds = sorted(set(WorkloadSums.objects.values_list("workload_kind", flat=True)))
    now = timezone.now()
    runs = []
    for project in Project.objects.values_list("name", flat=True):
        for kind in kinds:
            for number in range(10):
                end = now - timedelta(hours=rng.uniform(1, 200))
                runs.append(
                    WorkloadRun(
                        backend=backend,
                        namespace=f"runai-{project}",
                        workload_kind=kind,
                        workload_name=f"done-{project}-{kind}-{number}",
                        project=project,
                        started=end - timedelta(minutes=rng.uniform(20, 360)),
                        last_seen=end,
                        finished=end,
                    )
                )
    WorkloadRun.objects.bulk_create(runs, batch_size=2000)
    return len(runs)


def estimate_figures(args) -> None:
    """The start estimates (SEMANTICS §10.1) of every pending workload: the reads they add to a judging pass (the
    learned runtimes and the runs started lately; the running workloads on the pools' nodes are grouped from the
    pass's read of the GPU pods, which the reclaim candidates need anyway) and the play of every pool; the naive way
    plays a pool again for each waiting workload (timed for the first 100 of the busiest pool, then scaled)."""
    from django.utils import timezone

    from pools.engine import verdicts as engine
    from pools.models import Backend
    from pools.selectors import estimates, verdicts

    backend = Backend.objects.get(name="bench")
    Backend.objects.filter(pk=backend.pk).update(last_heartbeat=timezone.now())
    print(f"learned runtimes: {learned_history(backend):,} finished runs")
    live = verdicts._Live([backend.pk])
    by_pool, _ = live.pending()
    judged = {
        pool_id: engine.pool_verdicts(live.pool_state(pool_id), workloads)
        for pool_id, workloads in by_pool.items()
        if workloads
    }
    waiting = sum(len(workloads) for workloads in by_pool.values())
    print(f"{waiting:,} waiting workloads on {len(judged)} pools")

    live.gpu_pods_on_nodes  # noqa: B018 -- read by the judging pass for the reclaim candidates already

    def reads():
        estimates.running_holders(live)
        estimates.LearnedRuntimes([backend.pk], live.now)

    def play():
        found = {}
        for pool_id, verdicts_of in judged.items():
            found.update(estimates.pool_start_estimates(live, pool_id, by_pool[pool_id], verdicts_of))
        return found

    found = play()
    dated = sum(1 for estimate in found.values() if estimate["likely"])
    print(f"{len(found):,} estimates, {dated:,} with a time")
    busiest = max(judged, key=lambda pool_id: len(by_pool[pool_id]))
    sample = by_pool[busiest][:100]

    def naive():
        for workload in sample:  # each on its own: the pool played with only the workloads ahead of it
            ahead = [other for other in by_pool[busiest] if other.waiting_seconds >= workload.waiting_seconds]
            estimates.pool_start_estimates(live, busiest, ahead, {workload.key: judged[busiest][workload.key]})

    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    for name, function, iterations in (
        ("their reads: learned runtimes and runs started lately, the holders grouped", reads, args.iterations),
        (f"the play of every pool ({waiting:,} waiting workloads)", play, args.iterations),
        (f"naive: the pool played again for each waiting workload, 100 of {len(by_pool[busiest])}", naive, 1),
    ):
        figures = timed(function, args.runs, iterations)
        print(
            f"  {name}: median {figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, "
            f"{args.runs}x{iterations})"
        )
    print(f"load average after: {loadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--verdicts", action="store_true", help="keep the verdicts of the pending rows")
    parser.add_argument("--keep", action="store_true", help="time the cluster a last run left in the database")
    parser.add_argument("--estimates", action="store_true", help="time the start estimates of the pending workloads")
    args = parser.parse_args()
    inventory = setup_django()
    from django.conf import settings
    from django.test.utils import override_settings

    # Pages link static files by their plain names: the hashed ones exist only after ``collectstatic``.
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}).enable()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.access import SYSTEM
    from pools import selectors
    from pools.models import Pod
    from pools.selectors import verdicts as verdicts_module

    if not args.verdicts:
        verdicts_module.pending_verdicts = lambda **_: {}
    started = time.perf_counter()
    if not (args.keep and Pod.objects.exists()):
        build(inventory, args.nodes, args.pods, args.pools)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    pending = selectors.workloads_visible(user=SYSTEM, filters={"pending": "1"})
    every = selectors.workloads_visible(user=SYSTEM)
    print(
        f"built {Pod.objects.count()} pods in {time.perf_counter() - started:.0f} s on {engine}: {len(every)} "
        f"workloads, {len(pending)} with a pending pod"
    )
    naive = naive_pending()
    assert len(naive) == len(pending), (len(naive), len(pending))
    print("the naive way finds the same pending workloads")
    if args.estimates:
        estimate_figures(args)
        return

    user = get_user_model().objects.filter(username="bench").first()
    user = user or get_user_model().objects.create_superuser("bench", password="bench-password-1")
    one = pending[0]  # the pending workload holding the most GPUs
    client = Client()
    client.force_login(user)
    cases = [
        ("GET /workloads/ (first 100 rows)", lambda: client.get("/workloads/")),
        ("GET /api/workloads/?pending=1", lambda: client.get("/api/workloads/", {"pending": "1"})),
        (
            "GET a pending workload's page",
            lambda: client.get(f"/workloads/{one['backend']}/{one['namespace']}/{one['name']}/"),
        ),
        ("naive: every pod grouped in Python", naive_pending),
    ]
    if args.verdicts:
        cases[3:3] = [
            ("selectors.pending_verdicts() (every pending workload)", lambda: selectors.pending_verdicts()),
            (
                "pending workloads by pool and reason (/metrics' counts, pending_workload_counts)",
                lambda: verdicts_module.pending_workload_counts(),
            ),
        ]
    from django.utils import timezone

    from pools import services
    from pools.models import Backend, VerdictRound

    Backend.objects.update(last_heartbeat=timezone.now())  # online, as its watch would keep it
    bench = Backend.objects.get(name="bench")

    def measure(cases, before=lambda: None):
        for name, function in cases:
            iterations = 1 if name.startswith("naive") else args.iterations
            Backend.objects.update(last_heartbeat=timezone.now())  # still online, however long the cases took
            before()
            figures = timed(function, args.runs, iterations)
            with CaptureQueriesContext(connection) as captured:
                answer = function()
            if hasattr(answer, "status_code"):
                assert answer.status_code == 200, answer.status_code
            print(
                f"  {name}: median {figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, "
                f"{args.runs}x{iterations}), {len(captured)} SQL queries"
            )

    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    if args.verdicts:
        VerdictRound.objects.all().delete()
        print("judged live, as without a worker (no round kept):")
    measure(cases)
    if args.verdicts:
        Backend.objects.update(last_heartbeat=timezone.now())
        live = selectors.pending_verdicts()
        figures = timed(lambda: services.workload_verdicts_keep(backend=bench), args.runs, 1)
        print(
            f"the worker's round, services.workload_verdicts_keep (every pending workload judged and kept): median "
            f"{figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, {args.runs}x1)"
        )
        kept = selectors.pending_verdicts()
        assert {key: _judged(verdict) for key, verdict in kept.items()} == {
            key: _judged(verdict) for key, verdict in live.items()
        }, "the kept verdicts differ from the live ones"
        print("read from the round the worker kept (the same checks and victims as judged live):")
        measure(
            [case for case in cases if not case[0].startswith("naive")],
            before=lambda: kept_round(bench),  # fresh for each case, as a watch keeps it
        )
    if args.verdicts:
        print(
            "a node freed by watch events (its running pods deleted), its pools judged again and kept (as the watch's "
            "judging thread does at once), then the backend's verdicts read again:"
        )
        kept_round(bench)
        for done in freed_node_moves_verdicts(3):
            print(
                f"  pool {done['pool']}, node {done['node']} ({done['pods']} pods): applied in "
                f"{done['apply_ms']:.1f} ms, its {done['pools']} pool(s) judged and kept in {done['verdicts_ms']:.1f} "
                f"ms, read in {done['read_ms']:.1f} ms; {done['changed']} verdicts changed, {done['differ']} differ "
                f"from a whole round's"
            )
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
