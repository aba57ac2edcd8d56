"""When each waiting workload will start (SEMANTICS §10.1), and how often the console was right.

``pool_start_estimates`` is called by the verdicts' judging pass (``selectors.verdicts``) with the state it has read
(the pool's nodes and their free GPUs, its units, its waiting workloads): it adds the running workloads on the
pool's nodes (one grouped query per judging pass) and the runtimes learned from finished runs (one query), and plays
the pool forward (``engine.estimates``). ``estimate_accuracy`` compares the estimates as first made with the starts
that followed.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from accounts.access import visible

from ..engine import estimates as engine
from ..engine.errors import DurationError
from ..engine.permissions import VIEW_POOL
from ..engine.quantities import parse_duration
from ..models import Pool, StartEstimate, WorkloadRun

# Runtimes are learned from the runs finished over this long.
LEARNED_OVER = timedelta(days=30)
# How often each project's workloads of each kind come is learned from the runs started over this long.
ARRIVALS_OVER = timedelta(days=1)
# Verdicts that a wait for GPUs to free up does not end: no estimate.
DEPARTMENT = "department"  # a department's key among the play's units (a project's is its name)
NOT_BY_WAITING = ("pool_maintenance", "backend_offline", "never_fits")
PERIODS = {"1d": timedelta(days=1), "7d": timedelta(days=7)}
# A wait shorter than this counts as this long when the error is divided by it (a start within the minute the
# estimate was made is not an infinite error).
SHORTEST_WAIT = 60.0


class LearnedRuntimes:
    """Finished runs' runtimes per (backend, project, kind), with what stands in where a project's kind has none:
    the backend's runs of that kind, then all the backend's runs."""

    def __init__(self, backend_ids, now: datetime):
        runs = WorkloadRun.objects.filter(Q(finished__gte=now - LEARNED_OVER) | Q(started__gte=now - ARRIVALS_OVER))
        if backend_ids is not None:
            runs = runs.filter(backend_id__in=list(backend_ids))
        self.seconds: dict[tuple, list[float]] = {}
        # Runs started lately per (backend, project, kind): how often each kind of workload comes.
        self.lately: dict[tuple, int] = {}
        for backend_id, project, kind, started, finished in runs.values_list(
            "backend_id", "project", "workload_kind", "started", "finished"
        ).order_by():
            if started >= now - ARRIVALS_OVER:
                self.lately[backend_id, project, kind] = self.lately.get((backend_id, project, kind), 0) + 1
            if finished is None or finished < now - LEARNED_OVER:
                continue
            runtime = max(0.0, (finished - started).total_seconds())
            for key in ((backend_id, project, kind), (backend_id, None, kind), (backend_id, None, None)):
                self.seconds.setdefault(key, []).append(runtime)
        self._learned: dict[tuple, tuple[engine.Runtimes | None, str]] = {}

    def of(
        self, backend_id: int, project: str | None, kind: str, cap: float | None
    ) -> tuple[engine.Runtimes | None, str]:
        """The runtimes a workload is expected to run, and what they were learned from: "project" (its project's
        runs of its kind), "kind" (the backend's runs of its kind), "backend" (every run), "" (none)."""
        key = (backend_id, project, kind, cap)
        if key not in self._learned:
            found = None, ""
            for basis, wanted in (
                ("project", (backend_id, project, kind)),
                ("kind", (backend_id, None, kind)),
                ("backend", (backend_id, None, None)),
            ):
                if wanted in self.seconds:
                    found = engine.learned(self.seconds[wanted], cap), basis
                    break
            self._learned[key] = found
        return self._learned[key]


def pool_cap(pool: Pool) -> float | None:
    """The pool's ``max_exec_timeout`` in seconds; None when it has none (or an unreadable one)."""
    if not pool.max_exec_timeout:
        return None
    try:
        return parse_duration(pool.max_exec_timeout).total_seconds() or None
    except DurationError:
        return None


def running_holders(live) -> dict[int, list[tuple[int, tuple, str, str | None, float, dict[str, int]]]]:
    """Per pool of ``live``: every workload holding GPUs on its nodes, as (backend id, its key (backend id,
    namespace, kind, name), kind, project, started, {node: whole GPUs}), from the judging pass's read of the GPU pods
    on nodes (``gpu_pods_on_nodes``)."""
    jobs: dict[tuple, dict] = {}
    for row in live.gpu_pods_on_nodes:
        pools = live.pools_of_node.get((row["backend_id"], row["node_name"]))
        if not pools:
            continue
        key = (row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"])
        job = jobs.get(key)
        if job is None:
            job = jobs[key] = {"pools": set(), "nodes": {}, "started": None, "project": None}
            job["project"] = live.project_of(row["namespace"], row["queue"])
        job["pools"].update(pools)
        job["nodes"][row["node_name"]] = job["nodes"].get(row["node_name"], 0) + engine.whole_gpus(row["gpus"])
        if row["earliest"] is not None and (job["started"] is None or row["earliest"] < job["started"]):
            job["started"] = row["earliest"]
    found: dict[int, list] = {}
    now = live.now.timestamp()
    for key, job in jobs.items():
        started = job["started"].timestamp() if job["started"] else now
        for pool_id in job["pools"]:
            found.setdefault(pool_id, []).append((key[0], key, key[2], job["project"], started, job["nodes"]))
    return found


def pool_start_estimates(live, pool_id: int, workloads, verdicts: Mapping) -> dict:
    """The start estimates of the judged workloads (``verdicts``) on one pool, as their verdicts carry them:
    ``{"likely", "late"}`` (ISO times, None when it would not start within the horizon or nothing is learned) and
    ``runtime`` (the learned runtimes it was played with, and their basis). ``workloads`` are every waiting workload
    of the pool, all played forward (those that never fit stay blocked and hold nothing back); a judged workload
    whose verdict a wait does not end gets none."""
    pool = live.pools[pool_id]
    now = live.now.timestamp()
    cap = pool_cap(pool)
    learned = live.learned_runtimes
    nodes = live.nodes[pool_id]
    free = {node.name: int(node.free) for node in nodes}
    holders = [
        engine.Holder(held, started, learned.of(backend_id, project, kind, cap)[0], project, kind)
        for backend_id, _, kind, project, started, held in live.holders.get(pool_id, ())
    ]
    # The projects in the scheduler's order, each within its limit and its department's (-1: none).
    units = {}
    for unit in live.units[pool_id]:
        if unit.parent is None:
            units[DEPARTMENT, unit.name] = engine.Share(unit.allocated, unit.fair_share, unit.limit)
        else:
            units[unit.name] = engine.Share(unit.allocated, unit.fair_share, unit.limit, (DEPARTMENT, unit.parent))
    eligible: dict[tuple, frozenset[str]] = {}
    waiters, bases = [], {}
    for workload in workloads:
        selector = tuple(sorted(workload.node_selector.items()))
        if selector not in eligible:
            eligible[selector] = frozenset(
                node.name for node in nodes if all(node.labels.get(key) == value for key, value in selector)
            )
        runtimes, basis = learned.of(workload.key[0], workload.project, workload.key[2], cap)
        bases[workload.key] = (runtimes, basis)
        # Within its project, the longest waiting first; between projects the play keeps §9.1's order.
        order = (now - workload.waiting_seconds, workload.key)
        pods = tuple(sorted((engine.whole_gpus(gpus) for gpus in workload.pods), reverse=True))
        waiters.append(
            engine.Waiter(workload.key, order, pods, eligible[selector], runtimes, workload.project, workload.key[2])
        )
    arrivals = expected_arrivals(live, pool_id, holders, waiters, frozenset(free), cap)
    found = engine.start_estimates(now, free, holders, waiters, cap=cap, units=units, arrivals=arrivals)
    return {
        key: {
            "likely": _moment(estimate.likely),
            "late": _moment(estimate.late),
            "runtime": (bases[key][0].as_dict() | {"basis": bases[key][1]}) if bases[key][0] else None,
        }
        for key, estimate in found.items()
        if key in verdicts and verdicts[key].reason not in NOT_BY_WAITING
    }


def expected_arrivals(live, pool_id: int, holders, waiters, every: frozenset[str], cap) -> list[engine.Arrival]:
    """The workloads each project is expected to submit to the pool, per kind (``engine.expected_arrivals``): as
    often as its runs of that kind started over the last day (``ARRIVALS_OVER``), in the part of them this pool runs
    now (its running workloads of that kind here against on every pool of the backend)."""
    pool = live.pools[pool_id]
    here: dict[tuple, int] = {}
    for holder in holders:
        here[holder.unit, holder.kind] = here.get((holder.unit, holder.kind), 0) + 1
    started = {}
    for (backend_id, project, kind), count in live.learned_runtimes.lately.items():
        if backend_id == pool.backend_id:
            everywhere = live.holders_per_kind.get((backend_id, project, kind))
            started[project, kind] = count * (here.get((project, kind), 0) / everywhere if everywhere else 1.0)
    return engine.expected_arrivals(
        started,
        ARRIVALS_OVER.total_seconds(),
        holders,
        waiters,
        every,
        lambda project, kind: live.learned_runtimes.of(pool.backend_id, project, kind, cap)[0],
    )


def _moment(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(round(seconds), tz=timezone.get_current_timezone()).isoformat()


def estimate_accuracy(*, user, pool: str | None = None, now: datetime | None = None) -> list[dict]:
    """Per pool ``user`` may see (``pool`` only, when given) and period (the last day, the last week): how many
    waiting workloads started that the console had estimated, the median relative error of the likely start
    (|actual wait − estimated wait| / actual wait, waits counted from when the estimate was first made) and the share
    that started by the late bound. None where nothing was measured."""
    now = now or timezone.now()
    names = dict(Pool.objects.values_list("id", "name"))
    shown = set(visible(user, VIEW_POOL, sorted(names.values())))
    if pool is not None:
        shown &= {pool}
    rows = StartEstimate.objects.filter(
        started__isnull=False, started__gte=now - max(PERIODS.values()), pool__name__in=sorted(shown)
    ).values_list("pool_id", "made_at", "likely", "late", "started")
    measured: dict[str, list[tuple[float, datetime, float | None, bool | None]]] = {name: [] for name in shown}
    for pool_id, made_at, likely, late, started in rows.order_by():
        wait = (started - made_at).total_seconds()
        if wait < 0:
            continue  # it was already starting when estimated
        error = None
        if likely is not None:
            error = abs(wait - (likely - made_at).total_seconds()) / max(wait, SHORTEST_WAIT)
        measured[names[pool_id]].append((wait, started, error, None if late is None else started <= late))
    found = []
    for name in sorted(shown):
        for period, span in PERIODS.items():
            within = [row for row in measured[name] if row[1] >= now - span]
            errors = [row[2] for row in within if row[2] is not None]
            bounded = [row[3] for row in within if row[3] is not None]
            found.append(
                {
                    "pool": name,
                    "period": period,
                    "started": len(within),
                    "median_relative_error": round(statistics.median(errors), 4) if errors else None,
                    "before_late_bound": round(sum(bounded) / len(bounded), 4) if bounded else None,
                }
            )
    return found
