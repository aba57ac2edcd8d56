"""When a waiting workload will start (SEMANTICS §10.1).

The pool is played forward: each running workload frees its GPUs at ``started + expected runtime``; at each moment
GPUs free up, the waiting workloads, in the scheduler's order, start where their pods fit (a workload behind one
that does not fit may start first, on GPUs the other cannot use), and hold their GPUs for their own expected
runtime. Played once with the learned runtimes' medians (the likely start) and once with their 90th percentiles
(the late bound). Runtimes are learned per project and kind from finished workloads, never beyond the pool's
``max_exec_timeout``.

Whole GPUs: a pod asking a fraction of a GPU needs a GPU with room, counted as one; a node's free GPUs are counted
down to whole ones. A workload's pending pods start together (a gang's must; other workloads' nearly always have
one pending pod).
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# A workload that has run past every learned runtime (and has no max_exec_timeout) is taken to end this soon.
OVERDUE_SECONDS = 60.0
# How far ahead the pool is played; what would start later is left without an estimate.
HORIZON_SECONDS = 30 * 86400.0
DRAW_SEED = 20261128


@dataclass(frozen=True, slots=True)
class Runtimes:
    """Learned runtimes (seconds) of one kind of workload: their median and 90th percentile, from ``finished``
    runs (``runs``: the runtimes themselves, sorted)."""

    median: float
    p90: float
    finished: int
    runs: tuple[float, ...] = ()

    def as_dict(self) -> dict:
        return {"median": round(self.median), "p90": round(self.p90), "finished": self.finished}

    def beyond(self, elapsed: float) -> tuple[float, float] | None:
        """The median and 90th percentile of the runtimes longer than ``elapsed``: what a workload that has already
        run that long is expected to run in all. None when no run lasted that long."""
        first = bisect.bisect_right(self.runs, elapsed)
        longer = self.runs[first:]
        if not longer:
            return None
        return _rank(longer, 0.5), _rank(longer, 0.9)


def learned(runtimes: Iterable[float], cap: float | None = None) -> Runtimes | None:
    """The median and 90th percentile (nearest rank) of ``runtimes``, each capped at ``cap``; None when empty."""
    values = tuple(sorted(min(value, cap) if cap else value for value in runtimes))
    if not values:
        return None
    return Runtimes(_rank(values, 0.5), _rank(values, 0.9), len(values), values)


def _rank(values: Sequence[float], quantile: float) -> float:
    """The nearest-rank quantile of sorted ``values``."""
    return values[max(0, math.ceil(quantile * len(values)) - 1)]


@dataclass(frozen=True, slots=True)
class Holder:
    """A running workload on the pool's nodes: the whole GPUs it holds on each, when it started (seconds since the
    epoch) and its kind's runtimes (None: nothing learned, it is taken to run past the horizon)."""

    nodes: Mapping[str, int]
    started: float
    runtimes: Runtimes | None


@dataclass(frozen=True, slots=True)
class Waiter:
    """A waiting workload: its key, its place in the scheduler's order (smaller first), the whole GPUs of each
    pending pod, the nodes it fits, and its kind's runtimes."""

    key: Hashable
    order: tuple
    pods: tuple[int, ...]
    nodes: frozenset[str]
    runtimes: Runtimes | None


@dataclass(frozen=True, slots=True)
class Estimate:
    """When a waiting workload is expected to start (seconds since the epoch): ``likely`` with the median runtimes,
    ``late`` with the 90th percentiles; None when it would not start within the horizon, or what it waits for
    has no learned runtime."""

    likely: float | None
    late: float | None


def whole_gpus(value) -> int:
    """GPUs a pod asks for, whole: a fraction takes a GPU of its own here."""
    return math.ceil(value) if value > 0 else 0


def start_estimates(
    now: float,
    free: Mapping[str, int],
    holders: Iterable[Holder],
    waiters: Iterable[Waiter],
    *,
    cap: float | None = None,
    draws: int = 0,
) -> dict[Hashable, Estimate]:
    """Every waiter's estimate on a pool whose nodes have ``free`` whole GPUs now, ``holders`` running on them.
    ``cap`` is the pool's ``max_exec_timeout`` in seconds: no workload runs longer. ``draws`` above 0 plays the pool
    that many times with runtimes drawn from the learned runs (``_drawn``); 0 plays it twice, with the medians and
    with the 90th percentiles."""
    holders = list(holders)
    waiters = sorted(waiters, key=lambda waiter: waiter.order)
    if draws:
        return _drawn(now, free, holders, waiters, cap, draws)
    likely = _play(
        now,
        free,
        holders,
        waiters,
        lambda holder: holder_end(holder, now, cap, late=False),
        lambda waiter: _runtime(waiter.runtimes, cap, late=False),
    )
    late = _play(
        now,
        free,
        holders,
        waiters,
        lambda holder: holder_end(holder, now, cap, late=True),
        lambda waiter: _runtime(waiter.runtimes, cap, late=True),
    )
    return {waiter.key: Estimate(likely.get(waiter.key), late.get(waiter.key)) for waiter in waiters}


def _drawn(now, free, holders, waiters, cap, draws: int) -> dict[Hashable, Estimate]:
    """The estimates as the median and 90th percentile of ``draws`` plays, each drawing every runtime from the
    learned runs (a running workload's from the runs longer than it has run so far): what the order statistics of
    many workloads ending make of the runtimes' spread, which one play with each workload's median misses (the first
    of many to end usually ends well before any one's median). Drawn from a fixed seed: the same state gives the
    same estimates."""
    rng = random.Random(DRAW_SEED)
    starts: dict[Hashable, list[float]] = {waiter.key: [] for waiter in waiters}

    def end_of(holder: Holder) -> float | None:
        runtimes = holder.runtimes
        if runtimes is None:
            return holder.started + cap if cap and holder.started + cap > now else None
        elapsed = max(0.0, now - holder.started)
        first = bisect.bisect_right(runtimes.runs, elapsed)
        if first < len(runtimes.runs):
            runtime = runtimes.runs[rng.randrange(first, len(runtimes.runs))]
        else:
            runtime = cap if cap and holder.started + cap > now else 2 * elapsed
        return max(holder.started + (min(runtime, cap) if cap else runtime), now + OVERDUE_SECONDS)

    def runtime_of(waiter: Waiter) -> float | None:
        if waiter.runtimes is None:
            return cap or None
        return rng.choice(waiter.runtimes.runs)

    for _ in range(draws):
        found = _play(now, free, holders, waiters, end_of, runtime_of)
        for waiter in waiters:
            starts[waiter.key].append(found.get(waiter.key, math.inf))
    estimates = {}
    for key, moments in starts.items():
        moments.sort()
        likely, late = _rank(moments, 0.5), _rank(moments, 0.9)
        estimates[key] = Estimate(None if likely == math.inf else likely, None if late == math.inf else late)
    return estimates


def holder_end(holder: Holder, now: float, cap: float | None, *, late: bool) -> float | None:
    """When a running workload is expected to end: at its start plus the median (``late``: the 90th percentile) of
    the learned runtimes longer than it has run so far; past every learned runtime, at its ``cap``, else after as
    long again as it has run (a workload that has outlived its kind tends to run on); never within less than a
    minute."""
    if holder.runtimes is None:
        return holder.started + cap if cap and holder.started + cap > now else None
    elapsed = max(0.0, now - holder.started)
    beyond = holder.runtimes.beyond(elapsed)
    if beyond is not None:
        runtime = beyond[1] if late else beyond[0]
    elif cap and holder.started + cap > now:
        runtime = cap
    else:
        runtime = 2 * elapsed
    if cap:
        runtime = min(runtime, cap)
    return max(holder.started + runtime, now + OVERDUE_SECONDS)


def _play(now, free, holders, waiters, end_of, runtime_of) -> dict[Hashable, float]:
    """When each waiter starts if each holder ends at ``end_of(holder)`` and each waiter, once started, runs
    ``runtime_of(waiter)`` (None: past the horizon)."""
    pool = FreeGpus(free)
    releases: list[tuple[float, int, str, int]] = []  # (when, tie-breaker, node, GPUs)
    for number, holder in enumerate(holders):
        end = end_of(holder)
        if end is not None and end - now <= HORIZON_SECONDS:
            for node, gpus in holder.nodes.items():
                if node in pool.free and gpus > 0:
                    releases.append((end, number, node, gpus))
    heapq.heapify(releases)
    counter = len(holders)
    # Waiters asking the same pods of the same nodes queue behind each other: when the first does not fit, none
    # does. Their heads are tried in the scheduler's order.
    groups: dict[tuple, list[Waiter]] = {}
    for waiter in waiters:
        groups.setdefault((waiter.nodes, waiter.pods), []).append(waiter)
    queues = [(group[0].order, index, list(reversed(group))) for index, group in enumerate(groups.values())]
    node_groups: dict[str, list[int]] = {}
    for index, (_, _, queue) in enumerate(queues):
        for node in queue[0].nodes:
            node_groups.setdefault(node, []).append(index)
    started: dict[Hashable, float] = {}
    trying = list(range(len(queues)))
    moment = now
    while True:
        heads = [(queues[index][2][-1].order, index) for index in trying if queues[index][2]]
        heapq.heapify(heads)
        while heads:
            _, index = heapq.heappop(heads)
            queue = queues[index][2]
            waiter = queue[-1]
            taken = pool.place(waiter.nodes, waiter.pods)
            if taken is None:
                continue  # blocked until some of its nodes free GPUs
            queue.pop()
            started[waiter.key] = moment
            runtime = runtime_of(waiter)
            if runtime is not None and moment + runtime - now <= HORIZON_SECONDS:
                for node, gpus in taken.items():
                    counter += 1
                    heapq.heappush(releases, (moment + runtime, counter, node, gpus))
            if queue:
                heapq.heappush(heads, (queue[-1].order, index))
        if not releases or not any(queue for _, _, queue in queues):
            return started
        moment = releases[0][0]
        freed = set()
        while releases and releases[0][0] == moment:
            _, _, node, gpus = heapq.heappop(releases)
            pool.give(node, gpus)
            freed.add(node)
        trying = sorted({index for node in freed for index in node_groups.get(node, ())})


def _runtime(runtimes: Runtimes | None, cap: float | None, *, late: bool) -> float | None:
    if runtimes is None:
        return cap or None
    return runtimes.p90 if late else runtimes.median


class FreeGpus:
    """The nodes' free whole GPUs, with the nodes of each free count at hand (a placement reads the few counts
    above what a pod asks, not every node)."""

    def __init__(self, free: Mapping[str, int]):
        self.free = dict(free)
        self.top = max(self.free.values(), default=0)
        self.by_free: dict[int, set[str]] = {}
        for node, gpus in self.free.items():
            self.by_free.setdefault(gpus, set()).add(node)

    def _move(self, node: str, gpus: int) -> None:
        old = self.free[node]
        self.by_free[old].discard(node)
        self.free[node] = gpus
        self.by_free.setdefault(gpus, set()).add(node)
        self.top = max(self.top, gpus)

    def give(self, node: str, gpus: int) -> None:
        self._move(node, self.free[node] + gpus)

    def place(self, nodes: frozenset[str], pods: tuple[int, ...]) -> dict[str, int] | None:
        """Take GPUs for every pod (largest first, each on the node among ``nodes`` with the fewest free GPUs that
        hold it, as a bin-packing scheduler does): the GPUs taken per node, or None (nothing taken) when they do not
        all fit."""
        taken: dict[str, int] = {}
        for pod in pods:
            if pod <= 0:
                continue
            best, room = None, None
            for node, gpus in taken.items():
                left = self.free[node] - gpus
                if left >= pod and (room is None or left < room):
                    best, room = node, left
            for count in range(pod, self.top + 1):
                if room is not None and count >= room:
                    break
                found = next(
                    (node for node in self.by_free.get(count, ()) if node in nodes and node not in taken), None
                )
                if found is not None:
                    best, room = found, count
                    break
            if best is None:
                return None
            taken[best] = taken.get(best, 0) + pod
        for node, gpus in taken.items():
            self._move(node, self.free[node] - gpus)
        return taken
