"""When a waiting workload will start (SEMANTICS §10.1).

The pool is played forward: each running workload frees its GPUs at ``started + expected runtime``; at each moment
GPUs free up, the waiting workloads, in the scheduler's order, start where their pods fit (a workload behind one
that does not fit may start first, on GPUs the other cannot use), and hold their GPUs for their own expected
runtime. Played once with the learned runtimes' medians (the likely start) and once with their 90th percentiles
(the late bound). Runtimes are learned per project and kind from finished workloads, never beyond the pool's
``max_exec_timeout``.

With ``units``, the order between units moves as the play goes, as the scheduler's does (§9.1): the unit holding
the smallest part of its fair share goes first, and each workload that starts or ends moves its unit. With
``arrivals``, the workloads each unit is expected to submit (learned from how often its workloads started lately)
join the queue as the play goes: a unit below its share takes GPUs ahead of those waiting now, as it will.

Whole GPUs: a pod asking a fraction of a GPU needs a GPU with room, counted as one; a node's free GPUs are counted
down to whole ones. A workload's pending pods start together (a gang's must; other workloads' nearly always have
one pending pod).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

# A workload that has run past every learned runtime (and has no max_exec_timeout) is taken to end this soon.
OVERDUE_SECONDS = 60.0
# How far ahead the pool is played; what would start later is left without an estimate.
HORIZON_SECONDS = 30 * 86400.0
# How far ahead the workloads units are expected to submit join the play.
ARRIVALS_SECONDS = 86400.0
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
    epoch), its kind's runtimes (None: nothing learned, it is taken to run past the horizon), its unit and kind."""

    nodes: Mapping[str, int]
    started: float
    runtimes: Runtimes | None
    unit: Hashable | None = None
    kind: Hashable | None = None


@dataclass(frozen=True, slots=True)
class Waiter:
    """A waiting workload: its key, its place in the scheduler's order (smaller first; with units, its place within
    its unit, beginning with when it started waiting in seconds since the epoch), the whole GPUs of each pending pod,
    the nodes it fits, its kind's runtimes, its unit and kind."""

    key: Hashable
    order: tuple
    pods: tuple[int, ...]
    nodes: frozenset[str]
    runtimes: Runtimes | None
    unit: Hashable | None = None
    kind: Hashable | None = None


@dataclass(frozen=True, slots=True)
class Share:
    """A unit of the scheduler's order: the GPUs its running workloads hold now, its fair share of them, the most it
    may hold (``limit``, -1: no limit) and the unit it belongs to (``parent``, a key of the same mapping: a
    department, whose limit its projects' workloads share)."""

    held: float
    fair_share: float
    limit: float = -1
    parent: Hashable | None = None


@dataclass(frozen=True, slots=True)
class Arrival:
    """Workloads a unit is expected to submit: one every ``interval`` seconds from now on, their pods' whole GPUs
    taken in turn from ``shapes``, fitting ``nodes``, running as ``runtimes`` say."""

    unit: Hashable | None
    interval: float
    shapes: tuple[tuple[int, ...], ...]
    nodes: frozenset[str]
    runtimes: Runtimes | None


@dataclass(frozen=True, slots=True)
class Estimate:
    """When a waiting workload is expected to start (seconds since the epoch): ``likely`` with the median runtimes,
    ``late`` with the 90th percentiles; None when it would not start within the horizon, or what it waits for
    has no learned runtime."""

    likely: float | None
    late: float | None


def expected_arrivals(
    started: Mapping[tuple[Hashable, Hashable], float],
    span: float,
    holders: Iterable[Holder],
    waiters: Iterable[Waiter],
    nodes: frozenset[str],
    runtimes: Callable[[Hashable, Hashable], Runtimes | None],
) -> list[Arrival]:
    """What each unit is expected to submit, per kind: as many workloads as ``started[unit, kind]`` started over the
    last ``span`` seconds, evenly spread, shaped as its workloads of that kind on the pool are (running: their GPUs on
    each node; waiting: their pods), fitting the nodes its first waiting one does (else ``nodes``). A kind with no
    workload on the pool has no known shape and is left out."""
    shapes: dict[tuple, list[tuple[int, ...]]] = {}
    fits: dict[tuple, frozenset[str]] = {}
    for holder in holders:
        shapes.setdefault((holder.unit, holder.kind), []).append(tuple(sorted(holder.nodes.values(), reverse=True)))
    for waiter in waiters:
        shapes.setdefault((waiter.unit, waiter.kind), []).append(waiter.pods)
        fits.setdefault((waiter.unit, waiter.kind), waiter.nodes)
    found = []
    for key, seen in sorted(shapes.items(), key=lambda item: repr(item[0])):
        count = started.get(key, 0)
        if count > 0:
            found.append(Arrival(key[0], span / count, tuple(seen), fits.get(key, nodes), runtimes(*key)))
    return found


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
    units: Mapping[Hashable, Share] | None = None,
    arrivals: Iterable[Arrival] = (),
) -> dict[Hashable, Estimate]:
    """Every waiter's estimate on a pool whose nodes have ``free`` whole GPUs now, ``holders`` running on them.
    ``cap`` is the pool's ``max_exec_timeout`` in seconds: no workload runs longer. ``units`` (each unit's share) put
    the units in the scheduler's order as the play goes; ``arrivals`` add the workloads units are expected to submit
    over the next ``ARRIVALS_SECONDS``. ``draws`` above 0 plays the pool that many times with runtimes drawn from the
    learned runs (``_drawn``); 0 plays it twice, with the medians and with the 90th percentiles."""
    pool = _Pool(now, free, list(holders), sorted(waiters, key=lambda waiter: waiter.order), units, list(arrivals))
    if draws:
        return _drawn(pool, cap, draws)
    ends = dict(zip(map(id, pool.holders), ordered_ends(pool.holders, now, cap), strict=True))
    likely = _play(pool, lambda holder: ends[id(holder)], partial(_runtime, cap=cap, late=False))
    late = _play(pool, partial(holder_end, now=now, cap=cap, late=True), partial(_runtime, cap=cap, late=True))
    return {waiter.key: Estimate(likely.get(waiter.key), late.get(waiter.key)) for waiter in pool.waiters}


# How many points of each running workload's runtimes stand for their spread in ``ordered_ends``.
SPREAD_POINTS = 10


def ordered_ends(holders: Sequence[Holder], now: float, cap: float | None) -> list[float | None]:
    """The likely end of each running workload: among the running workloads of its kind, the k-th to end ends when
    k - ½ of them are expected to have ended.

    Each ends at some time its learned runtimes spread over (those longer than it has run so far); what frees GPUs
    first is the first of many to end, and that comes well before any one's median: 1,500 workloads each ending at
    its own median free their GPUs later than they do. So the ends are the order statistics of the workloads' spreads
    added up, handed out in the order of the workloads' own medians: the one expected first gets the first end.

    - **Per kind**: the workloads of a kind free the room the waiting workloads of that kind need (a gang's whole
      nodes, not a one-GPU job's GPU); pooled with every kind, the first ends would all go to the kind with the
      shortest runs, and a gang's nodes would be freed later than the first gang really ends.
    - **Each spread as ``SPREAD_POINTS`` mid-quantiles** (the 5th, 15th, …, 95th percentile of its runs longer than it
      has run), each counting for that part of a workload: a point stands for the runs around it, not for those
      below it (the upper quantiles, the 10th to the 100th, put every end late by up to a tenth of the spread, and
      the first ends most). One workload alone ends at its 45th percentile, about its median.

    One that has outlived every learned run, or has nothing learned, ends as ``holder_end`` says; the late bound keeps
    each workload's own 90th percentile."""
    ends: list[float | None] = []
    kinds: dict[Hashable, tuple[list[float], list[int]]] = {}  # kind: (its points, the workloads spread)
    # (runtimes, runs outlived): the median and mid-quantiles of the runs left
    quantiles: dict[tuple[int, int], tuple[float, tuple[float, ...]]] = {}
    soon = now + OVERDUE_SECONDS
    for index, holder in enumerate(holders):
        runtimes = holder.runtimes
        runs = runtimes.runs if runtimes is not None else ()
        first = bisect.bisect_right(runs, max(0.0, now - holder.started)) if runs else 0
        if first >= len(runs):
            ends.append(holder_end(holder, now, cap, late=False))
            continue
        known = quantiles.get((id(runs), first))
        if known is None:
            # The runs it has not outlived: their median and mid-quantiles by nearest rank (the rank counted in whole
            # numbers: (point - ½) / SPREAD_POINTS is not exact in floating point), each capped.
            longer, limit = runs[first:], cap or math.inf
            known = quantiles[id(runs), first] = (
                min(_rank(longer, 0.5), limit),
                tuple(
                    min(longer[max(0, math.ceil((point - 0.5) * len(longer) / SPREAD_POINTS) - 1)], limit)
                    for point in range(1, SPREAD_POINTS + 1)
                ),
            )
        median, spread_of = known
        started = holder.started
        points, spread = kinds.setdefault(holder.kind, ([], []))
        points.extend(max(started + runtime, soon) for runtime in spread_of)
        ends.append(max(started + median, soon))  # its own median, as holder_end's: its place in the order
        spread.append(index)
    for points, spread in kinds.values():
        points.sort()
        spread.sort(key=ends.__getitem__)
        for k, index in enumerate(spread, start=1):
            ends[index] = points[math.ceil((k - 0.5) * SPREAD_POINTS) - 1]  # (k - ½) workloads' worth of points
    return ends


@dataclass(frozen=True, slots=True)
class _Pool:
    """What a play starts from."""

    now: float
    free: Mapping[str, int]
    holders: list[Holder]
    waiters: list[Waiter]
    units: Mapping[Hashable, Share] | None
    arrivals: list[Arrival]


def _drawn(pool: _Pool, cap, draws: int) -> dict[Hashable, Estimate]:
    """The estimates as the median and 90th percentile of ``draws`` plays, each drawing every runtime from the
    learned runs (a running workload's from the runs longer than it has run so far): what the order statistics of
    many workloads ending make of the runtimes' spread, which one play with each workload's median misses (the first
    of many to end usually ends well before any one's median). Drawn from a fixed seed: the same state gives the
    same estimates."""
    rng = random.Random(DRAW_SEED)
    now = pool.now
    starts: dict[Hashable, list[float]] = {waiter.key: [] for waiter in pool.waiters}

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
        found = _play(pool, end_of, runtime_of)
        for waiter in pool.waiters:
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


# The key of a workload a unit is expected to submit: never an estimate's.
_EXPECTED = object()


def _play(
    pool: _Pool,
    end_of: Callable[[Holder], float | None],
    runtime_of: Callable[[Waiter], float | None],
) -> dict[Hashable, float]:
    """When each waiter starts if each holder ends at ``end_of(holder)`` and each waiter, once started, runs
    ``runtime_of(waiter)`` (None: past the horizon)."""
    now = pool.now
    gpus = FreeGpus(pool.free)
    order = _Order(pool.units)
    numbers = itertools.count()
    releases: list[tuple[float, int, str, int, Hashable]] = []  # (when, tie-breaker, node, GPUs, unit)
    for holder in pool.holders:
        end = end_of(holder)
        if end is not None and end - now <= HORIZON_SECONDS:
            for node, count in holder.nodes.items():
                if node in gpus.free and count > 0:
                    releases.append((end, next(numbers), node, count, holder.unit))
    heapq.heapify(releases)
    coming = [(now + arrival.interval, index, 0) for index, arrival in enumerate(pool.arrivals) if arrival.interval > 0]
    heapq.heapify(coming)
    # Waiters asking the same pods of the same nodes share a queue: when its first does not fit, none does.
    queues: dict[tuple, _Queue] = {}
    on_node: dict[str, list[_Queue]] = {}
    of_unit: dict[Hashable, list[_Queue]] = {}

    def join(waiter: Waiter) -> _Queue:
        queue = queues.get((waiter.nodes, waiter.pods))
        if queue is None:
            queue = queues[waiter.nodes, waiter.pods] = _Queue(waiter.nodes, waiter.pods)
            for node in waiter.nodes:
                on_node.setdefault(node, []).append(queue)
        if queue.add(waiter, order, next(numbers)):
            of_unit.setdefault(waiter.unit, []).append(queue)
        return queue

    for waiter in pool.waiters:
        join(waiter)
    started: dict[Hashable, float] = {}
    waiting = len(pool.waiters)
    trying = set(queues.values())
    moment = now
    while True:
        heads = []
        for queue in trying:
            head = queue.head(order)
            if head is not None:
                heads.append((head, next(numbers), queue))
        heapq.heapify(heads)
        while heads:
            key, _, queue = heapq.heappop(heads)
            head = queue.head(order)
            if head is None:
                continue
            if head != key:  # its unit took GPUs since: it may no longer go first
                heapq.heappush(heads, (head, next(numbers), queue))
                continue
            if not order.allows(queue.heads[0][2], queue.gpus):
                # Its unit is at its limit: its line waits until the unit gives GPUs back (its head enters again
                # then); the other units' lines of the queue go on.
                heapq.heappop(queue.heads)
                head = queue.head(order)
                if head is not None:
                    heapq.heappush(heads, (head, next(numbers), queue))
                continue
            taken = gpus.place(queue.nodes, queue.pods)
            if taken is None:
                continue  # blocked until some of its nodes free GPUs
            waiter = queue.take(order, next(numbers))
            if waiter.key is not _EXPECTED:
                started[waiter.key] = moment
                waiting -= 1
            if order.moves(waiter.unit, sum(taken.values())):
                for unit in order.touched(waiter.unit):
                    for other in of_unit.get(unit, ()):
                        other.refresh(unit, order, next(numbers))
            runtime = runtime_of(waiter)
            if runtime is not None and moment + runtime - now <= HORIZON_SECONDS:
                for node, count in taken.items():
                    heapq.heappush(releases, (moment + runtime, next(numbers), node, count, waiter.unit))
            head = queue.head(order)
            if head is not None:
                heapq.heappush(heads, (head, next(numbers), queue))
        if not waiting or not (releases or coming):
            return started
        moment = min(releases[0][0] if releases else math.inf, coming[0][0] if coming else math.inf)
        trying = set()
        moved = set()
        while releases and releases[0][0] == moment:
            _, _, node, count, unit = heapq.heappop(releases)
            gpus.give(node, count)
            trying.update(on_node.get(node, ()))
            if order.moves(unit, -count):
                moved.add(unit)
        for other in {touched for unit in moved for touched in order.touched(unit)}:
            limited = order.limited(other)
            for queue in of_unit.get(other, ()):
                queue.refresh(other, order, next(numbers))
                if limited:
                    trying.add(queue)  # a unit that was at its limit may have room again
        while coming and coming[0][0] == moment:
            _, index, number = heapq.heappop(coming)
            arrival = pool.arrivals[index]
            pods = arrival.shapes[number % len(arrival.shapes)]
            trying.add(join(Waiter(_EXPECTED, (moment,), pods, arrival.nodes, arrival.runtimes, arrival.unit)))
            if moment + arrival.interval - now <= ARRIVALS_SECONDS:
                heapq.heappush(coming, (moment + arrival.interval, index, number + 1))


class _Order:
    """The scheduler's order between units as the play goes: the GPUs each holds, against its fair share; and their
    limits (a unit's workload starts only while it, and its parent, stay within theirs)."""

    def __init__(self, units: Mapping[Hashable, Share] | None):
        units = units or {}
        self.held = {unit: share.held for unit, share in units.items()}
        self.shares = {unit: share.fair_share for unit, share in units.items()}
        self.limits = {unit: share.limit for unit, share in units.items() if share.limit >= 0}
        self.parents = {unit: share.parent for unit, share in units.items() if share.parent in units}
        self.children: dict[Hashable, list[Hashable]] = {}
        for unit, parent in self.parents.items():
            self.children.setdefault(parent, []).append(unit)

    def allows(self, unit: Hashable, gpus: float) -> bool:
        """Whether ``unit`` may take ``gpus`` more: it and its parent stay within their limits."""
        for limited in (unit, self.parents.get(unit)):
            limit = self.limits.get(limited)
            if limit is not None and self.held[limited] + gpus > limit:
                return False
        return True

    def limited(self, unit: Hashable) -> bool:
        """Whether ``unit`` or its parent has a limit."""
        return unit in self.limits or self.parents.get(unit) in self.limits

    def touched(self, unit: Hashable) -> list[Hashable]:
        """The units whose standing or room ``unit`` taking or giving back GPUs moves: it, and its siblings when
        their parent has a limit."""
        parent = self.parents.get(unit)
        if parent in self.limits:
            return self.children[parent]
        return [unit]

    def standing(self, unit: Hashable) -> float:
        """The part of its fair share ``unit`` holds (0 for a unit out of the order, infinite for a unit holding GPUs
        with no share)."""
        if unit not in self.shares:
            return 0.0
        share = self.shares[unit]
        if share > 0:
            return self.held[unit] / share
        return math.inf if self.held[unit] > 0 else 0.0

    def moves(self, unit: Hashable, gpus: float) -> bool:
        """``unit`` takes (or gives back, negative) ``gpus``: whether its standing may have moved."""
        if unit not in self.held:
            return False
        self.held[unit] += gpus
        parent = self.parents.get(unit)
        if parent is not None:
            self.held[parent] += gpus
        return True


class _Queue:
    """The waiters asking the same pods of the same nodes: a line per unit in their order within it, and the lines'
    heads in the scheduler's order (a heap whose outdated entries are dropped as they come up)."""

    __slots__ = ("nodes", "pods", "gpus", "lines", "heads")

    def __init__(self, nodes: frozenset[str], pods: tuple[int, ...]):
        self.nodes, self.pods = nodes, pods
        self.gpus = sum(pods)
        self.lines: dict[Hashable, deque[Waiter]] = {}
        self.heads: list[tuple[tuple, int, Hashable]] = []

    def add(self, waiter: Waiter, order: _Order, number: int) -> bool:
        """Put ``waiter`` at the end of its unit's line: whether the unit is new to this queue."""
        line = self.lines.get(waiter.unit)
        new = line is None
        if new:
            line = self.lines[waiter.unit] = deque()
        line.append(waiter)
        if len(line) == 1:
            self.refresh(waiter.unit, order, number)
        return new

    def refresh(self, unit: Hashable, order: _Order, number: int) -> None:
        """Enter ``unit``'s head with its standing now."""
        line = self.lines.get(unit)
        if line:
            heapq.heappush(self.heads, ((order.standing(unit), line[0].order), number, unit))

    def head(self, order: _Order) -> tuple | None:
        """The key of the first waiter in the scheduler's order, None when none waits."""
        while self.heads:
            key, _, unit = self.heads[0]
            line = self.lines[unit]
            if line and key == (order.standing(unit), line[0].order):
                return key
            heapq.heappop(self.heads)
        return None

    def take(self, order: _Order, number: int) -> Waiter:
        """Take the first waiter (``head`` was just called) out of the queue."""
        _, _, unit = heapq.heappop(self.heads)
        line = self.lines[unit]
        waiter = line.popleft()
        self.refresh(unit, order, number)
        return waiter


def _runtime(waiter: Waiter, *, cap: float | None, late: bool) -> float | None:
    """How long ``waiter`` runs once started: its kind's median (``late``: 90th percentile), else the pool's cap."""
    if waiter.runtimes is None:
        return cap or None
    return waiter.runtimes.p90 if late else waiter.runtimes.median


class FreeGpus:
    """The nodes' free whole GPUs, with the nodes of each free count at hand (a placement reads the few counts
    above what a pod asks, not every node), each count's nodes in the order they came to it: the same state places
    the same way in every process (a set's order of strings is not)."""

    def __init__(self, free: Mapping[str, int]):
        self.free = dict(free)
        self.top = max(self.free.values(), default=0)
        self.by_free: dict[int, dict[str, None]] = {}
        for node, gpus in self.free.items():
            self.by_free.setdefault(gpus, {})[node] = None

    def _move(self, node: str, gpus: int) -> None:
        old = self.free[node]
        del self.by_free[old][node]
        self.free[node] = gpus
        self.by_free.setdefault(gpus, {})[node] = None
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
                for node in self.by_free.get(count, ()):
                    if node in nodes and node not in taken:
                        best, room = node, count
                        break
                else:
                    continue
                break
            if best is None:
                return None
            taken[best] = taken.get(best, 0) + pod
        for node, gpus in taken.items():
            self._move(node, self.free[node] - gpus)
        return taken
