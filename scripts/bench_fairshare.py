#!/usr/bin/env python
"""Benchmark: one pool's fair shares (SEMANTICS §9.1) for 50 departments × 500 projects.

Builds the tree from a fixed seed (requests and projects' deserved as ``Decimal``s, the way GPU accounting and the
database give them, one request in ten with half a GPU; every weight Run:ai offers, three priorities, limits,
deserved -1), then times ``fair_shares`` and, in the same run,
the naive way: §9.1 transcribed literally with ``Fraction`` objects for every amount, each round recomputing the
unsatisfied members and their weight sum from the whole sibling list, the parents' requests summed again for each
division. Both are checked to give the same shares. ``--runs`` runs (3) of ``--iterations`` calls each: it prints
the median of the run medians, their spread (lowest and highest run median) and the load average, and how much of
``fair_shares``'s time goes to reading and checking the 25,050 queue objects. Pure engine, no database.

    .venv/bin/python scripts/bench_fairshare.py [--departments 50] [--projects 500] [--runs 3] [--iterations 15]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

from timing import loadavg, timed  # noqa: E402

from pools.engine.fairshare import Queue, _Tree, fair_shares  # noqa: E402

WEIGHTS = [0, 1, 2, 2, 2, 3, None]  # Lowest, Low, Medium (the default, three times as likely), High, no over-quota


def workload(departments: int, projects: int, seed: int = 7) -> tuple[int, list[Queue]]:
    rng = random.Random(seed)
    capacity = departments * 80  # 10 nodes of 8 GPUs per department
    queues = []
    for d in range(departments):
        name = f"dept-{d:03d}"
        queues.append(
            Queue(
                name=name,
                deserved=-1 if d == 0 else rng.choice([0, 40, 60, 80, 100]),
                limit=rng.choice([-1, -1, -1, 200, 1000]),
                over_quota_weight=rng.choice(WEIGHTS),
                priority=rng.choice([100, 100, 100, 50, 200]),
            )
        )
        busy = rng.random()  # some departments ask for far more than their share, some for less
        for p in range(projects):
            request = Decimal(rng.randint(0, int(4 * busy)))  # GPUs of running and pending pods
            if rng.random() < 0.1:
                request += Decimal("0.5")  # a fractional GPU
            queues.append(
                Queue(
                    name=f"{name}-proj-{p:03d}",
                    parent=name,
                    deserved=rng.choice([Decimal(0)] * 6 + [Decimal("0.5"), Decimal(1)]),
                    limit=rng.choice([-1, -1, -1, -1, 0, 4, 16]),
                    over_quota_weight=rng.choice(WEIGHTS),
                    priority=rng.choice([100, 100, 100, 100, 50, 200]),
                    request=request,
                )
            )
    return capacity, queues


# --- the naive way ------------------------------------------------------------------------------------------------


def naive_fair_shares(capacity, queues: list[Queue]) -> dict[str, Fraction]:
    children: dict[str | None, list[Queue]] = {}
    for queue in queues:
        children.setdefault(queue.parent, []).append(queue)
    order = {
        queue.name: queue.creation_order if queue.creation_order is not None else i for i, queue in enumerate(queues)
    }

    def request(queue: Queue) -> Fraction:
        kids = children.get(queue.name)
        return sum((request(kid) for kid in kids), Fraction(0)) if kids else Fraction(queue.request)

    shares: dict[str, Fraction] = {}

    def divide(amount: Fraction, members: list[Queue]) -> None:
        requestable = {}
        for queue in members:
            wanted = request(queue)
            if queue.limit != -1:
                wanted = min(wanted, Fraction(queue.limit))
            deserved = amount if queue.deserved == -1 else Fraction(queue.deserved)
            if queue.over_quota_weight is None:
                wanted = min(wanted, deserved)
            requestable[queue.name] = wanted
            shares[queue.name] = min(deserved, wanted)
        remaining = amount - sum(shares[queue.name] for queue in members)
        if remaining > 0:
            noted_by_group = []
            for priority in sorted({queue.priority for queue in members}, reverse=True):
                group = [queue for queue in members if queue.priority == priority]
                noted: dict[str, Fraction] = {}
                while True:
                    unsatisfied = [q for q in group if requestable[q.name] - shares[q.name] > 0]
                    total = sum((Fraction(q.over_quota_weight or 0) for q in unsatisfied), Fraction(0))
                    if total == 0 or remaining <= 0:
                        break
                    at_start, another = remaining, False
                    for queue in unsatisfied:
                        if not queue.over_quota_weight:
                            continue
                        offer = at_start * Fraction(queue.over_quota_weight) / total
                        missing = requestable[queue.name] - shares[queue.name]
                        if missing <= offer:
                            shares[queue.name] += missing
                            remaining -= missing
                            another = another or missing < offer
                            noted.pop(queue.name, None)
                        else:
                            whole = math.floor(offer)
                            shares[queue.name] += whole
                            remaining -= whole
                            if offer - whole:
                                noted[queue.name] = offer - whole
                    if not another:
                        break
                noted_by_group.append(noted)
            for noted in noted_by_group:
                for name in sorted(noted, key=lambda name: (-noted[name], order[name], name)):
                    if remaining <= 0:
                        break
                    gift = min(Fraction(1), remaining)
                    shares[name] += gift
                    remaining -= gift
        for queue in members:
            if queue.name in children:
                divide(shares[queue.name], children[queue.name])

    divide(Fraction(capacity), children.get(None, []))
    return {queue.name: shares[queue.name] for queue in queues}


# --- measuring ----------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--departments", type=int, default=50)
    parser.add_argument("--projects", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=15)
    args = parser.parse_args()
    capacity, queues = workload(args.departments, args.projects)
    shares = fair_shares(capacity, queues)
    assert naive_fair_shares(capacity, queues) == shares, "the naive way disagrees"
    top = sum(share for queue, share in zip(queues, shares.values(), strict=True) if queue.parent is None)
    print(
        f"workload: capacity {capacity} GPUs, {args.departments} departments x {args.projects} projects "
        f"({len(queues)} queues); departments' shares sum to {float(top):g}; the naive way gives the same shares"
    )
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    target = 20
    engine = timed(lambda: fair_shares(capacity, queues), args.runs, args.iterations)
    # The split of that time: reading and checking the queues alone (the engine's private reader), then the rest.
    reading = timed(lambda: _Tree(capacity, queues), args.runs, args.iterations)
    naive = timed(lambda: naive_fair_shares(capacity, queues), args.runs, max(1, args.iterations // 5))
    for name, figures, iterations in (
        ("fair_shares", engine, args.iterations),
        ("  of which reading and checking the queues", reading, args.iterations),
        ("naive", naive, max(1, args.iterations // 5)),
    ):
        print(
            f"  {name}: median {figures['median']:.1f} ms (runs {figures['low']:.1f}-{figures['high']:.1f} ms, "
            f"{args.runs}x{iterations})"
        )
    print(f"load average after: {loadavg()}")
    print(
        f"fair_shares is {naive['median'] / engine['median']:.1f}x faster than the naive way (median); "
        f"target <= {target} ms: {'met' if engine['median'] <= target else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
