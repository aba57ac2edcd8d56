"""A scheduler-like start order for a simulated fleet: waiting jobs start, in §9.1's order (the project holding the
least of its share first, then the longest waiting), as soon as GPUs free up on nodes they fit, and run for their
own runtime. What ``scripts/bench_estimates.py`` replays a day of a fleet with, to measure the start estimates
(SEMANTICS §10.1) against starts that really follow a scheduler's rules.

Whole GPUs on each node, pods of a job placed together (a gang), largest first on the node with the fewest free GPUs
that holds each (bin packing), as ``engine.estimates`` places them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ..engine.estimates import FreeGpus


@dataclass(slots=True)
class Job:
    """A job of the replay: its project and kind, the GPUs of each pod, when it was submitted, how long it really
    runs (unknown to the estimator), and when it started (None while it waits)."""

    name: str
    project: str
    kind: str
    pods: tuple[int, ...]
    submitted: float
    runtime: float
    started: float | None = None
    taken: dict[str, int] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return sum(self.pods)


class Scheduler:
    """The fleet's nodes, its running jobs and its waiting ones, moved forward in time by ``advance``."""

    def __init__(self, nodes: dict[str, int], shares: dict[str, float], *, fifo: bool = False):
        self.fifo = fifo  # first come, first served instead: no job goes ahead of one that waits longer
        self.nodes = dict(nodes)
        self.pool = FreeGpus(nodes)
        self.shares = shares  # each project's fair share of the fleet (GPUs): the order's yardstick
        self.held: dict[str, int] = dict.fromkeys(shares, 0)
        self.waiting: list[Job] = []
        self.ending: list[tuple[float, int, Job]] = []
        self.finished: list[Job] = []
        self._count = 0
        self.now = 0.0

    def order(self, job: Job) -> tuple:
        """§9.1's order: the project holding the smallest part of its fair share first, then the longest waiting."""
        if self.fifo:
            return (job.submitted, job.name)
        return (self.held.get(job.project, 0) / (self.shares.get(job.project) or 1), job.submitted, job.name)

    def submit(self, job: Job) -> None:
        """``job`` comes at its ``submitted`` time: the fleet runs to then, and it starts at once if it fits."""
        self.advance(job.submitted)
        self.waiting.append(job)
        self._start()

    def advance(self, until: float) -> None:
        """Run the fleet to ``until``: jobs end at their start plus runtime, and at each moment GPUs free up the
        waiting jobs that fit start, in order (between those moments nothing new fits: a job that comes is tried as
        it comes, by ``submit``)."""
        while self.ending and self.ending[0][0] <= until:
            moment = self.ending[0][0]
            while self.ending and self.ending[0][0] == moment:
                _, _, job = heapq.heappop(self.ending)
                for node, gpus in job.taken.items():
                    self.pool.give(node, gpus)
                self.held[job.project] -= job.gpus
                self.finished.append(job)
            self.now = moment
            self._start()
        self.now = until

    def _start(self) -> None:
        if not self.waiting:
            return
        every = frozenset(self.nodes)
        blocked: set[tuple[int, ...]] = set()  # shapes that did not fit at this moment: none behind them fits either
        left = []
        for job in sorted(self.waiting, key=self.order):
            if job.pods in blocked:
                left.append(job)
                continue
            taken = self.pool.place(every, job.pods)
            if taken is None:
                blocked.add(job.pods)
                left.append(job)
                continue
            job.started, job.taken = self.now, taken
            self.held[job.project] = self.held.get(job.project, 0) + job.gpus
            self._count += 1
            heapq.heappush(self.ending, (self.now + job.runtime, self._count, job))
        self.waiting = left

    @property
    def running(self) -> list[Job]:
        return [job for _, _, job in self.ending]
