#!/usr/bin/env python
"""Benchmark: why every pending workload of a pool waits (SEMANTICS §10), 10,000 pending pods in 2,000 workloads
across 500 projects (50 departments), 5,000 nodes, 3,000 preemptible running workloads as reclaim candidates.

Builds the pool from a fixed seed (three GPU products, nearly every node full, every tenth workload selecting a product,
one in three a gang, figures as ``Decimal``s the way the database gives them), then times ``pool_verdicts`` — the
pool's indexes (nodes per ``nodeSelector``, their free blocks, the candidates in KAI's order) built once for all
workloads — and, in the same run, the naive way: each workload judged on its own (``workload_verdict``), the
indexes rebuilt for each one. Both are checked to give the same verdicts. The naive way is timed on
``--naive-sample`` workloads and scaled to all of them (it takes minutes otherwise). ``--runs`` runs (3) of
``--iterations`` calls each: it prints the median of the run medians, their spread (lowest and highest run median)
and the load average. Pure engine, no database.

    .venv/bin/python scripts/bench_verdicts.py [--runs 3] [--iterations 5] [--naive-sample 100]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

from timing import loadavg, timed  # noqa: E402

from pools.engine.verdicts import (  # noqa: E402
    PRODUCT_LABEL,
    NodeState,
    PendingWorkload,
    PoolState,
    RunningJob,
    UnitState,
    pool_verdicts,
    workload_verdict,
)

PRODUCTS = (("NVIDIA-H100-80GB-HBM3", 8), ("NVIDIA-A100-SXM4-80GB", 8), ("NVIDIA-L40S", 4))


def pool_state(nodes: int, departments: int, projects: int, running: int, seed: int = 11) -> PoolState:
    rng = random.Random(seed)
    node_states = []
    for index in range(nodes):
        product, gpus = PRODUCTS[index % len(PRODUCTS)]
        free = Decimal(rng.choice([0] * 200 + [1, 2]))  # a full pool: a few GPUs free here and there
        node_states.append(NodeState(f"node-{index:05d}", product, Decimal(gpus), free, {PRODUCT_LABEL: product}))
    names = [f"dept-{d:02d}-proj-{p:02d}" for d in range(departments) for p in range(projects // departments)]
    jobs = []
    preemptible: dict[str, Decimal] = {}
    # The candidates fill whole nodes, as a bin-packing scheduler leaves them: a node's GPUs to one job, or half to
    # each of two.
    full = [node for node in node_states if node.free == 0]
    rng.shuffle(full)
    for node in full:
        if len(jobs) >= running:
            break
        sizes = [node.allocatable] if rng.random() < 0.5 else [node.allocatable / 2] * 2
        for gpus in sizes:
            project = rng.choice(names)
            preemptible[project] = preemptible.get(project, Decimal(0)) + gpus
            jobs.append(
                RunningJob(
                    "ns",
                    f"job-{len(jobs):05d}",
                    "PodGroup",
                    project,
                    gpus,
                    rng.choice([50, 75, 100]),
                    rng.uniform(0, 1e6),
                    {node.name: gpus},
                )
            )
    units = []
    for d in range(departments):
        department = f"dept-{d:02d}"
        members = [name for name in names if name.startswith(f"{department}-")]
        figures = []
        for name in members:
            nonpreemptible = Decimal(rng.randint(0, 30))  # a unit's allocation: its preemptible jobs and the rest
            allocated = nonpreemptible + preemptible.get(name, Decimal(0))
            figures.append((name, allocated, nonpreemptible))
        allocated = sum(a for _, a, _ in figures)
        firm = sum(n for _, _, n in figures)
        units.append(
            UnitState(department, None, Decimal(300), Decimal(-1), Decimal(rng.randint(100, 500)), allocated, firm)
        )
        for name, allocated, nonpreemptible in figures:
            units.append(
                UnitState(
                    name,
                    department,
                    Decimal(rng.choice([0, 8, 16, 32])),
                    Decimal(rng.choice([-1, -1, -1, 64])),
                    Decimal(rng.randint(20, 120)),
                    allocated,
                    nonpreemptible,
                )
            )
    return PoolState("bench", nodes=tuple(node_states), units=tuple(units), running=tuple(jobs)), names


def pending(names: list[str], workloads: int, pods: int, seed: int = 12) -> list[PendingWorkload]:
    rng = random.Random(seed)
    found = []
    per = pods // workloads
    for index in range(workloads):
        selector = {PRODUCT_LABEL: PRODUCTS[index % 3][0]} if index % 10 == 0 else {}
        size = Decimal(rng.choice([2, 4, 8]))
        found.append(
            PendingWorkload(
                ("ns", "PodGroup", f"w-{index:05d}"),
                rng.choice(names),
                (size,) * per,
                preemptible=rng.random() < 0.5,
                gang=index % 3 == 0,
                node_selector=selector,
                waiting_seconds=rng.uniform(0, 600),
            )
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--departments", type=int, default=50)
    parser.add_argument("--projects", type=int, default=500)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--running", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--naive-sample", type=int, default=100)
    args = parser.parse_args()
    state, names = pool_state(args.nodes, args.departments, args.projects, args.running)
    workloads = pending(names, args.workloads, args.pods)
    print(
        f"{args.pods:,} pending pods in {len(workloads):,} workloads, {args.projects} projects, {args.nodes:,} nodes, "
        f"{args.running:,} reclaim candidates"
    )
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    found = pool_verdicts(state, workloads)
    sample = workloads[: args.naive_sample]
    assert all(workload_verdict(state, w) == found[w.key] for w in sample), "the two ways disagree"
    print("reasons:", dict(Counter(verdict.reason for verdict in found.values()).most_common()))
    engine = timed(lambda: pool_verdicts(state, workloads), args.runs, args.iterations)
    cpu = []  # the process's own CPU time: what the call costs when it has a core to itself
    for _ in range(args.runs * args.iterations):
        started = time.process_time()
        pool_verdicts(state, workloads)
        cpu.append((time.process_time() - started) * 1000)
    naive = timed(lambda: [workload_verdict(state, w) for w in sample], args.runs, 1)
    scale = len(workloads) / len(sample)
    print(
        f"pool_verdicts: median {engine['median']:.1f} ms (runs {engine['low']:.1f}-{engine['high']:.1f}); "
        f"target ≤ 300 ms; CPU time median {statistics.median(cpu):.1f} ms (lowest {min(cpu):.1f})"
    )
    print(
        f"naive, per workload: median {naive['median'] * scale:.0f} ms for all "
        f"(runs {naive['low'] * scale:.0f}-{naive['high'] * scale:.0f}; {len(sample)} timed, ×{scale:g}); "
        f"{naive['median'] * scale / engine['median']:.0f}× slower"
    )
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
