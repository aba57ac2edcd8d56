#!/usr/bin/env python
"""Benchmark: how right the start estimates are (SEMANTICS §10.1), on a replayed day of a 500-node fleet.

For each seed: 500 nodes of 8 GPUs, 20 projects with equal shares, three kinds of jobs (``train`` gangs of 1-4 8-GPU
pods, ``finetune`` of 1-4 GPUs, ``batch`` of one GPU), each (project, kind) with a runtime of its own scale and a
log-normal spread (σ 0.5: the 90th percentile is 1.9 × the median), arriving as a Poisson stream that follows a
daily wave around the fleet's capacity. ``pools.fleet.scheduler`` starts waiting jobs in §9.1's order whenever GPUs
free up where they fit, and each job as it comes if it fits. A day of warm-up teaches the runtimes (finished jobs
per project and kind, as the worker's runs do), then for one measured day every job still waiting after its first
minute gets its estimate from ``engine.estimates.start_estimates`` with the state of that minute (running jobs, the
waiting ones, the learned runtimes), as the worker's round makes it; the fleet runs on (with arrivals) until every
measured job has started. Printed per seed: jobs, how many waited, the median and 90th-percentile relative error of
the likely start (|actual wait − estimated wait| / actual wait), by the actual wait with the median of estimated
minus actual wait, the share started by the late bound, and the time the replay took.

    .venv/bin/python scripts/bench_estimates.py [--seeds 1 2 3] [--nodes 500] [--load 1.0]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pools.engine import estimates  # noqa: E402
from pools.fleet.scheduler import Job, Scheduler  # noqa: E402

DAY = 86400.0
MINUTE = 60.0
SIGMA = 0.5
DRAWS = int(os.environ.get("DRAWS", "0"))
BUCKETS = {"under 10 min": (0, 600), "10-60 min": (600, 3600), "1 h or more": (3600, math.inf)}
WAYS = ("arrivals", "order", "static", "oracle", "oracle-arrivals")
KINDS = {  # kind: (share of the jobs, pods' GPUs chooser, median runtime in seconds)
    "train": (0.2, lambda rng: (8,) * rng.choice((1, 1, 2, 4)), 3 * 3600.0),
    "finetune": (0.4, lambda rng: (rng.choice((1, 2, 4)),), 3600.0),
    "batch": (0.4, lambda rng: (1,), 1200.0),
}


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def replay(seed: int, nodes: int, projects: int, load: float, fifo: bool = False, way: str = "arrivals") -> dict:
    rng = random.Random(seed)
    fleet = {f"node-{index:04d}": 8 for index in range(nodes)}
    capacity = 8 * nodes
    names = [f"project-{index:02d}" for index in range(projects)]
    scheduler = Scheduler(fleet, {name: capacity / projects for name in names}, fifo=fifo)
    scale = {(name, kind): rng.uniform(0.5, 2.0) for name in names for kind in KINDS}
    mean_gpu_seconds = 0.0
    for share, pods, median in KINDS.values():
        sample = [sum(pods(random.Random(i))) for i in range(200)]
        mean_gpu_seconds += share * statistics.mean(sample) * median * 1.25 * math.exp(SIGMA**2 / 2)
    rate = load * capacity / mean_gpu_seconds  # jobs per second that keep the fleet this busy on average
    kinds = list(KINDS)
    weights = [KINDS[kind][0] for kind in kinds]
    learned: dict[tuple[str, str], list[float]] = {}
    seen = 0
    warm, measured_end = DAY, 2 * DAY
    records: list[tuple[Job, float, float | None, float | None]] = []
    clock = time.perf_counter()
    t, number = 0.0, 0
    next_arrival = rng.expovariate(rate)
    while True:
        minute_end = t + MINUTE
        while next_arrival < minute_end:
            kind = rng.choices(kinds, weights)[0]
            project = rng.choice(names)
            _, pods, median = KINDS[kind]
            runtime = median * scale[project, kind] * rng.lognormvariate(0, SIGMA)
            number += 1
            scheduler.submit(Job(f"job-{number}", project, kind, pods(rng), next_arrival, runtime))
            wave = 1 + 0.3 * math.sin(2 * math.pi * next_arrival / DAY)
            next_arrival += rng.expovariate(rate * wave)
        scheduler.advance(minute_end)
        t = minute_end
        for job in scheduler.finished[seen:]:
            learned.setdefault((job.project, job.kind), []).append(job.runtime)
        seen = len(scheduler.finished)
        fresh = [job for job in scheduler.waiting if t - MINUTE <= job.submitted < t]
        if warm <= t < measured_end and fresh:
            found = _estimate(scheduler, learned, t, way)
            records += [(job, t, found[job.name].likely, found[job.name].late) for job in fresh]
        if t >= measured_end and all(job.started is not None for job, *_ in records):
            break
        if t > measured_end + 5 * DAY:
            break
    seconds = time.perf_counter() - clock
    errors, signed, bounded, unestimated = [], [], [], 0
    buckets: dict[str, list[tuple[float, float]]] = {}  # (relative error, estimated minus actual wait in minutes)
    for job, made, likely, late in records:
        if job.started is None:
            continue
        if likely is None:
            unestimated += 1
            continue
        wait = job.started - made
        errors.append(abs(wait - (likely - made)) / max(wait, MINUTE))
        signed.append((likely - made - wait) / MINUTE)
        for name, (low, high) in BUCKETS.items():
            if low <= wait < high:
                buckets.setdefault(name, []).append((errors[-1], signed[-1]))
        bounded.append(late is not None and job.started <= late)
    submitted = sum(1 for job in scheduler.finished + scheduler.running if warm <= job.submitted < measured_end)
    return {
        "seed": seed,
        "jobs": submitted,
        "waited": len(records),
        "unestimated": unestimated,
        "median_error": statistics.median(errors) if errors else float("nan"),
        "p90_error": sorted(errors)[int(0.9 * (len(errors) - 1))] if errors else float("nan"),
        "buckets": {
            name: (
                len(buckets[name]),
                statistics.median(error for error, _ in buckets[name]),
                statistics.median(bias for _, bias in buckets[name]),
            )
            for name in BUCKETS
            if name in buckets
        },
        "bias_min": statistics.median(signed) if signed else float("nan"),
        "before_late": sum(bounded) / len(bounded) if bounded else float("nan"),
        "median_wait_min": statistics.median(job.started - made for job, made, *_ in records if job.started) / 60
        if records
        else 0.0,
        "seconds": seconds,
    }


def _estimate(scheduler: Scheduler, learned: dict, now: float, way: str) -> dict:
    """Every waiting job's estimate at ``now``, as the worker's round makes them from the state it reads: the running
    jobs, the waiting ones, the projects' shares and what each held, the learned runtimes, and how many jobs of each
    project and kind started over the last day. ``way`` "order" leaves out the jobs to come, "static" also keeps
    the order as it is at ``now`` (the way before), "oracle" is "order" with every job's true runtime (what the jobs
    to come and the order alone cost), "oracle-arrivals" the console's way with every running and waiting job's true
    runtime (what the jobs to come, not yet submitted, alone cost)."""
    runtimes: dict[tuple[str, str], estimates.Runtimes | None] = {}

    def of(project: str, kind: str):
        key = (project, kind)
        if key not in runtimes:
            runtimes[key] = estimates.learned(learned.get(key, [])[-200:])
        return runtimes[key]

    if way.startswith("oracle"):
        exact = {job.name: estimates.learned([job.runtime]) for job in [*scheduler.running, *scheduler.waiting]}
        of_job = lambda job: exact[job.name]  # noqa: E731
    else:
        of_job = lambda job: of(job.project, job.kind)  # noqa: E731
    free = dict(scheduler.pool.free)
    every = frozenset(scheduler.nodes)
    holders = [
        estimates.Holder(job.taken, job.started, of_job(job), job.project, job.kind) for job in scheduler.running
    ]
    if scheduler.fifo or way == "static":
        waiters = [
            estimates.Waiter(job.name, scheduler.order(job), job.pods, every, of_job(job)) for job in scheduler.waiting
        ]
        return estimates.start_estimates(now, free, holders, waiters, draws=DRAWS)
    waiters = [
        estimates.Waiter(job.name, (job.submitted, job.name), job.pods, every, of_job(job), job.project, job.kind)
        for job in scheduler.waiting
    ]
    units = {project: estimates.Share(scheduler.held[project], share) for project, share in scheduler.shares.items()}
    arrivals = []
    if way in ("arrivals", "oracle-arrivals"):
        started: dict[tuple[str, str], int] = {}
        for job in [*scheduler.running, *scheduler.finished[-20000:]]:
            if now - DAY <= job.started:
                started[job.project, job.kind] = started.get((job.project, job.kind), 0) + 1
        arrivals = estimates.expected_arrivals(started, DAY, holders, waiters, every, of)
    return estimates.start_estimates(now, free, holders, waiters, draws=DRAWS, units=units, arrivals=arrivals)


def play_figures(runs: int) -> None:
    """The play's own cost at the scale of the Workloads benchmark: 5,000 full 8-GPU nodes held by 5,000 running
    workloads, 2,000 waiting gangs of five 1-GPU pods (``bench_workloads.py``'s), runtimes learned from 200 runs per
    kind, 50 projects with equal shares in the scheduler's order, each expected to submit every kind (40,000 jobs
    started over the last day); the naive way plays the pool again for each waiting workload (100 of them, scaled to
    2,000)."""
    rng = random.Random(5)
    now = 10 * DAY
    runs_of = {kind: estimates.learned(rng.lognormvariate(math.log(median), SIGMA) for _ in range(200))
               for kind, (_, _, median) in KINDS.items()}  # fmt: skip
    nodes = {f"node-{index:04d}": 0 for index in range(5000)}
    projects = [f"project-{index:02d}" for index in range(50)]
    holders = []
    for name in nodes:
        kind = rng.choice(list(KINDS))
        started = now - rng.uniform(0, 4 * 3600)
        holders.append(estimates.Holder({name: 8}, started, runs_of[kind], rng.choice(projects), kind))
    every = frozenset(nodes)
    waiters = []
    for index in range(2000):
        kind = rng.choice(list(KINDS))
        order = (now - rng.uniform(0, 3600), index)
        waiters.append(estimates.Waiter(f"w{index}", order, (1,) * 5, every, runs_of[kind], rng.choice(projects), kind))
    held = {project: 0 for project in projects}
    for holder in holders:
        held[holder.unit] += 8
    units = {project: estimates.Share(held[project], 40000 / len(projects)) for project in projects}
    started = {(project, kind): 40000 / len(projects) / len(KINDS) for project in projects for kind in KINDS}
    arrivals = estimates.expected_arrivals(started, DAY, holders, waiters, every, lambda _, kind: runs_of[kind])

    def play():
        return estimates.start_estimates(now, nodes, holders, waiters, units=units, arrivals=arrivals)

    def static():
        return estimates.start_estimates(now, nodes, holders, waiters)

    def naive():
        for index in range(100):
            estimates.start_estimates(now, nodes, holders, waiters[: index + 1], units=units, arrivals=arrivals)

    for name, function, scale in (
        ("the play of 2,000 waiting workloads", play, 1),
        ("the same, the order as it is and no job to come", static, 1),
        ("naive (×20)", naive, 20),
    ):
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            function()
            times.append((time.perf_counter() - began) * 1000 * scale)
        print(f"  {name}: median {statistics.median(times):.0f} ms (runs {min(times):.0f}-{max(times):.0f} ms)")


def floor_figures() -> None:
    """The least median relative error any one estimate can have when the wait is the time until the m-th of a
    stream of ends no one can foresee (Poisson: the wait is Gamma(m)), whatever the estimator: a short wait behind
    the next one or two of many running jobs to end is such a wait when their runtimes are only known as a spread.
    20,000 draws per m; the estimate searched from 0.2 to 2 times the mean wait."""
    rng = random.Random(1)
    for m in (1, 2, 3, 5, 10, 20):
        waits = [sum(rng.expovariate(1.0) for _ in range(m)) for _ in range(20000)]
        best = min(
            (statistics.median(abs(wait - guess) / wait for wait in waits), guess / m)
            for guess in (m * step / 100 for step in range(20, 201, 2))
        )
        ends = f"{m} ends" if m > 1 else "the next end"
        print(f"  a wait for {ends}: least median relative error {best[0]:.1%} (estimating {best[1]:.2f} × the mean)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--load", type=float, default=1.0, help="offered GPU load as a share of the capacity")
    parser.add_argument(
        "--fifo", action="store_true", help="first come, first served: no later job goes ahead (a diagnosis)"
    )
    parser.add_argument(
        "--way",
        choices=WAYS,
        default="arrivals",
        help="the console's way (arrivals: the order moving as the play goes and the jobs each project is expected to "
        "submit), or for a diagnosis: order (without those jobs), static (the order as it is, the way before), "
        "oracle (order, with every job's true runtime), oracle-arrivals (the console's way with every true runtime)",
    )
    parser.add_argument("--play", action="store_true", help="time the play of 2,000 waiting workloads instead")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="print the least median relative error any estimate can have for a wait until the m-th unforeseen end",
    )
    args = parser.parse_args()
    if args.floor:
        floor_figures()
        return
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    if args.play:
        play_figures(3)
        print(f"load average after: {loadavg()}")
        return
    for seed in args.seeds:
        found = replay(seed, args.nodes, args.projects, args.load, args.fifo, args.way)
        print(
            f"seed {found['seed']}: {found['jobs']:,} jobs in the measured day, {found['waited']:,} waited "
            f"(median wait {found['median_wait_min']:.0f} min), {found['unestimated']} without an estimate; "
            f"relative error of the likely start: median {found['median_error']:.1%}, 90th percentile "
            f"{found['p90_error']:.1%}, estimated minus actual wait {found['bias_min']:+.1f} min (median); "
            f"started by the late bound: {found['before_late']:.1%}; "
            f"replayed in {found['seconds']:.0f} s"
        )
        print(
            "  median relative error by actual wait: "
            + "; ".join(
                f"{name}: {error:.1%}, {bias:+.1f} min ({count} jobs)"
                for name, (count, error, bias) in found["buckets"].items()
            )
        )
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
