"""Why a pending workload waits (SEMANTICS §10): every check it fails, in order, each with its figures; the first is
its reason.

The checks, in the order §10 gives them:

1. ``pool_maintenance`` — its pool is in maintenance;
2. ``backend_offline`` — its backend has not been reached within the online window;
3. ``never_fits`` — no node of the pool could hold one of its pods even empty: a validation rule refuses it, its
   ``nodeSelector`` leaves no node, or no node has that many GPUs;
4. ``project_limit``, ``department_limit`` — allocated + request would pass the unit's limit;
5. ``reclaim`` — it does not fit in the free GPUs, its project may reclaim and victims exist (§9.2);
6. ``over_fair_share`` — it does not fit and its project's allocated + request is above its fair share;
7. ``no_capacity`` — within its fair share, but the free GPUs cannot take its pods;
8. ``scheduling`` — it fits now: the scheduler has not placed it yet.

A workload failing none of 1-7 gets ``scheduling``, so a pending workload never has no reason.

All the pending workloads of a pool are judged in one pass (``pool_verdicts``): the nodes a ``nodeSelector`` leaves,
their free blocks and the reclaim candidates of every unit are worked out once per pool, not per workload.

Where §10 leaves a point open:

- A workload fits now when one of its pending pods could start on the free GPUs of the nodes its ``nodeSelector``
  leaves; a gang (``gang``: the pods of one pod group) only when all its pending pods could start at once.
- Victims are preemptible running workloads of other projects of the pool, taken as KAI orders them (units
  farthest above their fair share first; inside a unit the lowest priority first, then the most recently started),
  and only GPUs they hold on nodes the workload's ``nodeSelector`` leaves count as freed. The set is shown only
  when ``engine.reclaim`` says ``can_reclaim`` and ``reclaimable`` for it.
- A workload of no project (none of its pods is a project's) skips the quota checks (4-6); one asking no GPU is
  judged by its pool's status and the scheduler only.
- A workload with a required topology (``topology``: the node label KAI's ``topology-required-placement`` names)
  fits only inside one domain of that label (SEMANTICS §11: the nodes sharing its value and the values of the pool's
  coarser levels): it never fits when no domain could hold it even empty, and victims must free GPUs in one domain.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from numbers import Real

from .errors import ConfigError
from .reclaim import Reclaimer, Unit, reclaim_verdict

POOL_MAINTENANCE = "pool_maintenance"
BACKEND_OFFLINE = "backend_offline"
NEVER_FITS = "never_fits"
PROJECT_LIMIT = "project_limit"
DEPARTMENT_LIMIT = "department_limit"
RECLAIM = "reclaim"
OVER_FAIR_SHARE = "over_fair_share"
NO_CAPACITY = "no_capacity"
SCHEDULING = "scheduling"
# §10's order: the first failing check is the reason.
REASONS = (
    POOL_MAINTENANCE,
    BACKEND_OFFLINE,
    NEVER_FITS,
    PROJECT_LIMIT,
    DEPARTMENT_LIMIT,
    RECLAIM,
    OVER_FAIR_SHARE,
    NO_CAPACITY,
    SCHEDULING,
)
# After this long unplaced while it fits, the scheduler may not be running (§10, check 8).
SCHEDULER_GRACE_SECONDS = 60
UNLIMITED = -1
PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, slots=True)
class NodeState:
    """An available, schedulable node of the pool: its labels, GPU product, allocatable and free GPUs."""

    name: str
    product: str
    allocatable: Real
    free: Real
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UnitState:
    """A department (``parent`` None) or a project with its GPU figures on the pool (§9); -1 is unlimited for
    ``deserved``, ``limit`` and ``fair_share``, as ``engine.reclaim`` reads them."""

    name: str
    parent: str | None
    deserved: Real
    limit: Real
    fair_share: Real
    allocated: Real
    allocated_nonpreemptible: Real


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A preemptible running workload of the pool: a reclaim candidate. ``nodes`` maps the nodes it runs on to the
    GPUs it holds there; ``priority`` ranks it (lower goes first), ``started`` is when it started (seconds)."""

    namespace: str
    name: str
    kind: str
    project: str
    gpus: Real
    priority: int = 0
    started: float = 0.0
    nodes: Mapping[str, Real] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    """A workload with pending pods: ``pods`` are the GPUs each pending pod asks for; ``refused`` is the message of a
    validation rule that refuses it on every node (empty: none); ``waiting_seconds`` how long its pods have waited,
    ``scheduled_message`` its pod's ``PodScheduled`` message."""

    key: Hashable
    project: str | None
    pods: tuple[Real, ...]
    preemptible: bool = False
    gang: bool = False
    node_selector: Mapping[str, str] = field(default_factory=dict)
    refused: str = ""
    waiting_seconds: float = 0.0
    scheduled_message: str = ""
    topology: str = ""

    @property
    def request(self) -> Real:
        """The GPUs of all its pending pods."""
        return sum(self.pods, Decimal(0))


@dataclass(frozen=True, slots=True)
class PoolState:
    """What the verdicts of one pool read: its status, nodes, units (departments and projects) and candidates."""

    name: str
    maintenance: bool = False
    online: bool = True
    nodes: Sequence[NodeState] = ()
    units: Sequence[UnitState] = ()
    running: Sequence[RunningJob] = ()
    multiplier: Real = 1
    topology_labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    """One failing check: its reason, a sentence with the figures, and the figures themselves."""

    reason: str
    message: str
    figures: dict


@dataclass(frozen=True, slots=True)
class Verdict:
    """Every failing check in §10's order (never empty) and, for ``reclaim``, the victims."""

    checks: tuple[Check, ...]
    victims: tuple[RunningJob, ...] = ()

    @property
    def reason(self) -> str:
        """The first failing check's reason."""
        return self.checks[0].reason

    def as_dict(self) -> dict:
        """The verdict as the selector and the doors give it."""
        return {
            "reason": self.reason,
            "checks": [{"reason": c.reason, "message": c.message, "figures": c.figures} for c in self.checks],
            "victims": [
                {"namespace": v.namespace, "name": v.name, "kind": v.kind, "project": v.project, "gpus": _json(v.gpus)}
                for v in self.victims
            ],
        }


def scheduling_check(waiting_seconds: float, scheduled_message: str) -> Check:
    """The ``scheduling`` check of a workload that fits now and has waited ``waiting_seconds``: past a minute it
    says the scheduler may not be running, quoting the pods' ``PodScheduled`` message (in its figures too)."""
    figures = {"waiting_seconds": int(waiting_seconds)}
    message = "it fits now: the scheduler has not placed it yet"
    if waiting_seconds > SCHEDULER_GRACE_SECONDS:
        said = scheduled_message or "no PodScheduled message"
        message = (
            f"it fits now but has waited {int(waiting_seconds)} s: the scheduler may not be running "
            f"(PodScheduled: {said})"
        )
        figures["scheduled_message"] = scheduled_message
    return Check(SCHEDULING, message, figures)


def aged_verdict(verdict: dict, seconds: float, scheduled_message: str) -> dict:
    """A verdict (``Verdict.as_dict``) judged ``seconds`` ago, as judging it now would say it when nothing else
    changed: its ``scheduling`` check has waited that much longer (``scheduled_message``: its pods' message). A
    verdict has that check only when it is its reason (it is the check of a workload nothing else holds back)."""
    if seconds <= 0 or verdict["reason"] != SCHEDULING:
        return verdict
    checks = []
    for check in verdict["checks"]:
        if check["reason"] == SCHEDULING:
            aged = scheduling_check(check["figures"].get("waiting_seconds", 0) + int(seconds), scheduled_message)
            check = {"reason": aged.reason, "message": aged.message, "figures": aged.figures}
        checks.append(check)
    return {**verdict, "checks": checks}


def pool_verdicts(pool: PoolState, workloads: Iterable[PendingWorkload]) -> dict[Hashable, Verdict]:
    """The verdict of each pending workload of ``pool``, by its key (see the module's docstring)."""
    judge = _PoolJudge(pool)
    return {workload.key: judge.verdict(workload) for workload in workloads}


def workload_verdict(pool: PoolState, workload: PendingWorkload) -> Verdict:
    """The verdict of one workload (a request not yet submitted, for the what-if)."""
    return _PoolJudge(pool).verdict(workload)


def unpooled_verdict(workload: PendingWorkload) -> Verdict:
    """The verdict of a workload no pool claims (no pool label, no label pool's selector): no pool's nodes or quota
    to judge it by, so only whether the scheduler has had time to place it."""
    return Verdict((_PoolJudge(PoolState(""))._scheduling(workload),))


# --- the pool's indexes, worked out once ----------------------------------------------------------------------------


class _Eligible:
    """The nodes one ``nodeSelector`` leaves, with what the checks read of them."""

    __slots__ = (
        "names",
        "largest",
        "by_free",
        "free_total",
        "largest_free",
        "free_of",
        "_figures",
        "_blocks",
        "_candidates",
        "_freed_by_all",
        "_fits_with_all",
        "_slots",
        "nodes",
        "_domains",
    )

    def __init__(self, nodes: list[NodeState]):
        self.nodes = nodes
        self._domains: dict[tuple[str, ...], list[tuple[str, _Eligible]]] = {}
        self.names = {node.name for node in nodes}
        self.free_of = {node.name: node.free for node in nodes}
        self._figures: dict | None = None
        self._blocks: str | None = None
        self._candidates: list[tuple[RunningJob, tuple[tuple[str, Real], ...]]] | None = None
        self._freed_by_all: dict[str, Real] = {}
        self._fits_with_all: dict[tuple, bool] = {}
        self._slots: dict[Real, Real] = {}
        # product -> largest allocatable; product -> (largest free, the nodes holding it)
        self.largest: dict[str, Real] = {}
        self.largest_free: dict[str, tuple[Real, list[str]]] = {}
        for node in nodes:
            if node.allocatable > self.largest.get(node.product, -1):
                self.largest[node.product] = node.allocatable
            best = self.largest_free.get(node.product)
            if best is None or node.free > best[0]:
                self.largest_free[node.product] = (node.free, [node.name])
            elif node.free == best[0]:
                best[1].append(node.name)
        self.by_free = sorted(((node.free, node.name) for node in nodes if node.free > 0), reverse=True)
        self.free_total = sum((free for free, _ in self.by_free), Decimal(0))

    def fits(self, pods: Sequence[Real], *, gang: bool, freed: Mapping[str, Real] | None = None) -> bool:
        """Whether one pod (``gang``: every pod at once) could start on the free GPUs, with ``freed`` GPUs more on
        some nodes. Pods are placed largest first on the node with the most free GPUs: with P pods only the P nodes
        with the most free GPUs can be touched, so only they are read."""
        asking = [pod for pod in pods if pod > 0]
        if not asking or (not gang and len(asking) < len(pods)):
            return True  # a pod asking no GPU is not held back by GPUs
        pods = asking if gang else [min(asking)]
        top = self.by_free[: len(pods)]
        if freed:
            frees = {name: free for free, name in top}
            for name, gpus in freed.items():
                if name in self.names:
                    frees[name] = frees.get(name, self.free_of[name]) + gpus
            heap = [(-free, name) for name, free in frees.items()]
        else:
            heap = [(-free, name) for free, name in top]
        heapq.heapify(heap)
        for pod in sorted(pods, reverse=True):
            if not heap or -heap[0][0] < pod:
                return False
            free, name = heapq.heappop(heap)
            heapq.heappush(heap, (free + pod, name))
        return True

    def domains(self, labels: tuple[str, ...]) -> list[tuple[str, _Eligible]]:
        """These nodes split into the domains ``labels`` identify (SEMANTICS §11: a node without one of them is in
        none), each by its path (``zone-a/rack-07``), the most free GPUs first; worked out once per labels."""
        found = self._domains.get(labels)
        if found is None:
            groups: dict[str, list[NodeState]] = {}
            for node in self.nodes:
                values = [node.labels.get(label) for label in labels]
                if all(values):
                    groups.setdefault("/".join(values), []).append(node)
            found = sorted(((path, _Eligible(nodes)) for path, nodes in groups.items()), key=_most_free_first)
            self._domains[labels] = found
        return found

    def fits_empty(self, pods: Sequence[Real]) -> bool:
        """Whether ``pods`` (all at once) would fit on these nodes were they empty."""
        heap = sorted(-node.allocatable for node in self.nodes)[: len(pods)]
        heapq.heapify(heap)
        for pod in sorted(pods, reverse=True):
            if not heap or -heap[0] < pod:
                return False
            heapq.heapreplace(heap, heap[0] + pod)
        return True

    def candidates(self, ordered: Sequence[RunningJob]) -> list[tuple[RunningJob, tuple[tuple[str, Real], ...]]]:
        """The reclaim candidates (in ``ordered``'s order) holding GPUs on these nodes, with the GPUs they hold here;
        worked out once per set of nodes."""
        if self._candidates is None:
            self._candidates = []
            for job in ordered:
                here = tuple((name, gpus) for name, gpus in job.nodes.items() if name in self.names)
                if here:
                    self._candidates.append((job, here))
                    for name, gpus in here:
                        self._freed_by_all[name] = self._freed_by_all.get(name, 0) + gpus
        return self._candidates

    def fits_with_all(self, pods: tuple[Real, ...]) -> bool:
        """Whether ``pods`` (all at once) would fit if every candidate gave its GPUs back here: when not, no set of
        victims can make them fit, and the search is not run."""
        found = self._fits_with_all.get(pods)
        if found is None:
            found = self._fits_with_all[pods] = self.fits(pods, gang=True, freed=self._freed_by_all)
        return found

    def slots(self, gpus: Real) -> Real:
        """Pods of ``gpus`` GPUs the free GPUs take at once, ``Σ floor(free / gpus)``."""
        found = self._slots.get(gpus)
        if found is None:
            found = self._slots[gpus] = sum((free // gpus for free, _ in self.by_free), Decimal(0))
        return found

    def figures(self) -> dict:
        """The free GPUs and the largest free block per product with the nodes holding it (the first ten)."""
        if self._figures is None:
            self._figures = {
                "free": _json(self.free_total),
                "largest_free": {
                    product: {"gpus": _json(gpus), "nodes": sorted(nodes)[:10], "node_count": len(nodes)}
                    for product, (gpus, nodes) in sorted(self.largest_free.items())
                },
            }
        return self._figures

    def blocks(self) -> str:
        """The largest free block per product as a sentence names it."""
        if self._blocks is None:
            self._blocks = "; ".join(
                f"{product or 'GPUs'}: {_text(gpus)} free on {', '.join(sorted(nodes)[:3])}"
                + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
                for product, (gpus, nodes) in sorted(self.largest_free.items())
            )
        return self._blocks


def _most_free_first(item: tuple[str, _Eligible]) -> tuple:
    return (-item[1].free_total, item[0])


class _PoolJudge:
    """One pool's indexes (eligible nodes per ``nodeSelector``, units, candidates in KAI's order) and the checks."""

    def __init__(self, pool: PoolState):
        self.pool = pool
        self.units = {unit.name: unit for unit in pool.units}
        self.children: dict[str, list[str]] = {}
        for unit in pool.units:
            if unit.parent is not None:
                self.children.setdefault(unit.parent, []).append(unit.name)
        self.eligible_of: dict[frozenset, _Eligible] = {}
        self._exact_units: dict[str, tuple] = {}
        self._exact_values: dict[Real, int | Fraction] = {}
        # Candidates in KAI's order: units farthest above their fair share first, then in each unit the lowest
        # priority, then the most recently started.
        by_unit: dict[str, list[RunningJob]] = {}
        for job in pool.running:
            by_unit.setdefault(job.project, []).append(job)
        order = sorted(by_unit, key=lambda name: (-self._above_fair_share(name), name))
        self.candidates = [
            job for name in order for job in sorted(by_unit[name], key=lambda job: (job.priority, -job.started))
        ]

    def _above_fair_share(self, name: str) -> Real:
        unit = self.units.get(name)
        if unit is None or unit.fair_share == UNLIMITED:
            return Decimal(0)
        return unit.allocated - unit.fair_share

    def eligible(self, selector: Mapping[str, str]) -> _Eligible:
        key = frozenset(selector.items())
        found = self.eligible_of.get(key)
        if found is None:
            nodes = [node for node in self.pool.nodes if all(node.labels.get(k) == v for k, v in key)]
            found = self.eligible_of[key] = _Eligible(nodes)
        return found

    def places(self, workload: PendingWorkload, eligible: _Eligible) -> list[tuple[str, _Eligible]]:
        """Where the workload's pods must start together: one domain of its required topology, else anywhere its
        ``nodeSelector`` leaves (one place, path "")."""
        if not workload.topology:
            return [("", eligible)]
        labels = self.pool.topology_labels
        wanted = labels[: labels.index(workload.topology) + 1] if workload.topology in labels else (workload.topology,)
        return eligible.domains(wanted)

    def verdict(self, workload: PendingWorkload) -> Verdict:
        checks: list[Check] = []
        pool = self.pool
        if pool.maintenance:
            checks.append(Check(POOL_MAINTENANCE, f"pool '{pool.name}' is in maintenance", {"pool": pool.name}))
        if not pool.online:
            checks.append(
                Check(
                    BACKEND_OFFLINE,
                    f"the backend of pool '{pool.name}' has not been reached within the online window; "
                    "these figures may be old",
                    {"pool": pool.name},
                )
            )
        eligible = self.eligible(workload.node_selector)
        places = self.places(workload, eligible)
        never = self._never_fits(workload, eligible) or self._never_fits_a_domain(workload, places)
        if never is not None:
            checks.append(never)
        request = workload.request
        project = self.units.get(workload.project) if workload.project else None
        department = self.units.get(project.parent) if project and project.parent else None
        for unit, reason in ((project, PROJECT_LIMIT), (department, DEPARTMENT_LIMIT)):
            if unit is not None and unit.limit != UNLIMITED and unit.allocated + request > unit.limit:
                kind = "project" if reason == PROJECT_LIMIT else "department"
                checks.append(
                    Check(
                        reason,
                        f"{kind} '{unit.name}' would hold {_text(unit.allocated + request)} GPUs (allocated "
                        f"{_text(unit.allocated)} + request {_text(request)}), more than its limit of "
                        f"{_text(unit.limit)}",
                        {
                            "unit": unit.name,
                            "allocated": _json(unit.allocated),
                            "request": _json(request),
                            "limit": _json(unit.limit),
                        },
                    )
                )
        victims: tuple[RunningJob, ...] = ()
        if never is None and not any(place.fits(workload.pods, gang=workload.gang) for _, place in places):
            free = eligible.figures()
            over = (
                project is not None
                and project.fair_share != UNLIMITED
                and project.allocated + request > project.fair_share
            )
            if project is not None and not over:
                victims = next(filter(None, (self._victims(workload, project, place) for _, place in places)), ())
                if victims:
                    names = ", ".join(f"{v.namespace}/{v.name}" for v in victims)
                    freed = sum((v.gpus for v in victims), Decimal(0))
                    checks.append(
                        Check(
                            RECLAIM,
                            f"project '{project.name}' may reclaim: the scheduler would take back {_text(freed)} "
                            f"GPUs from {names}",
                            {"project": project.name, "request": _json(request), "freed": _json(freed)},
                        )
                    )
            if over:
                checks.append(
                    Check(
                        OVER_FAIR_SHARE,
                        f"project '{project.name}' would hold {_text(project.allocated + request)} GPUs (allocated "
                        f"{_text(project.allocated)} + request {_text(request)}), above its fair share of "
                        f"{_text(project.fair_share)}: it waits for GPUs to free up and may take none back",
                        {
                            "project": project.name,
                            "allocated": _json(project.allocated),
                            "request": _json(request),
                            "fair_share": _json(project.fair_share),
                            **free,
                        },
                    )
                )
            else:
                message, figures = self._no_capacity(workload, eligible, places)
                checks.append(Check(NO_CAPACITY, message, {**free, **figures}))
        if not checks:
            checks.append(self._scheduling(workload))
        return Verdict(tuple(checks), victims)

    # --- the checks ---------------------------------------------------------------------------------------------

    def _never_fits(self, workload: PendingWorkload, eligible: _Eligible) -> Check | None:
        if workload.refused:
            return Check(NEVER_FITS, workload.refused, {"rule": workload.refused})
        if not workload.request:
            return None  # asking no GPU, it is not judged by the GPU nodes
        if not eligible.names:
            if workload.node_selector:
                pairs = ", ".join(f"{k}={v}" for k, v in sorted(workload.node_selector.items()))
                message = f"its nodeSelector ({pairs}) leaves no available node of pool '{self.pool.name}'"
            else:
                message = f"pool '{self.pool.name}' has no available node"
            return Check(NEVER_FITS, message, {"node_selector": dict(workload.node_selector), "nodes": 0})
        largest_pod = max(workload.pods, default=0)
        largest = max(eligible.largest.values())
        if largest_pod > largest:
            product = workload.node_selector.get(PRODUCT_LABEL) or (
                next(iter(eligible.largest)) if len(eligible.largest) == 1 else ""
            )
            of = f" of product {product}" if product else ""
            return Check(
                NEVER_FITS,
                f"no node has {_text(largest_pod)} GPUs{of} (largest: {_text(largest)})",
                {
                    "gpus": _json(largest_pod),
                    "product": product,
                    "largest": _json(largest),
                    "largest_by_product": {name: _json(value) for name, value in sorted(eligible.largest.items())},
                },
            )
        return None

    def _never_fits_a_domain(self, workload: PendingWorkload, places: list[tuple[str, _Eligible]]) -> Check | None:
        """A required topology no domain of which could hold the workload's pods at once, even empty."""
        asking = [pod for pod in workload.pods if pod > 0]
        if not workload.topology or not asking:
            return None
        if any(place.fits_empty(asking) for _, place in places):
            return None
        label = workload.topology
        if not places:
            message = f"no node it fits has the label {label}, which its required topology names"
            return Check(NEVER_FITS, message, {"topology": label, "domains": 0})
        path, largest = max(places, key=lambda item: (sum(node.allocatable for node in item[1].nodes), item[0]))
        total = sum((node.allocatable for node in largest.nodes), Decimal(0))
        return Check(
            NEVER_FITS,
            f"no {label} domain could hold its {len(asking)} pods ({_text(sum(asking, Decimal(0)))} GPUs) at once "
            f"even empty (largest: {path}, {_text(total)} GPUs on {len(largest.nodes)} nodes)",
            {"topology": label, "domains": len(places), "largest_domain": path, "largest_domain_gpus": _json(total)},
        )

    def _no_capacity(
        self, workload: PendingWorkload, eligible: _Eligible, places: list[tuple[str, _Eligible]]
    ) -> tuple[str, dict]:
        """The no-capacity sentence and, for a required topology, the domain with the most free GPUs."""
        if not workload.topology:
            return self._no_capacity_message(workload, eligible), {}
        path, best = places[0]
        return (
            f"its {len(workload.pods)} pods need {_text(workload.request)} GPUs at once inside one "
            f"{workload.topology} domain; the most free in one is {_text(best.free_total)} on {path} "
            f"({len(places)} domains)",
            {"topology": workload.topology, "largest_domain": path, "largest_domain_free": _json(best.free_total)},
        )

    def _no_capacity_message(self, workload: PendingWorkload, eligible: _Eligible) -> str:
        blocks = eligible.blocks()
        if workload.gang and len(workload.pods) > 1:
            return (
                f"its {len(workload.pods)} pods need {_text(workload.request)} GPUs at once; the nodes it fits have "
                f"{_text(eligible.free_total)} free, not in blocks that take them all (largest free block: {blocks})"
            )
        return f"no node has the {_text(min(workload.pods))} free GPUs one pod needs (largest free block: {blocks})"

    def _scheduling(self, workload: PendingWorkload) -> Check:
        return scheduling_check(workload.waiting_seconds, workload.scheduled_message)

    # --- reclaim (§9.2, last bullet) ------------------------------------------------------------------------------

    def _victims(self, workload: PendingWorkload, project: UnitState, eligible: _Eligible) -> tuple[RunningJob, ...]:
        """Victims in KAI's order until the GPUs they free on nodes the workload fits make it fit; shown only when
        ``engine.reclaim`` allows the set, else none."""
        request = workload.request
        if not _may_reclaim(project, request, workload.preemptible):
            return ()
        asking = sorted((pod for pod in workload.pods if pod > 0), reverse=True)
        pods = tuple(asking if workload.gang else asking[-1:])
        candidates = eligible.candidates(self.candidates)
        if not pods or not eligible.fits_with_all(pods):
            return ()
        # Victims are added one by one and the fit is judged again after each: for pods of one size by the slots
        # the freed GPUs add on the nodes they touch (no placement), else by a placement once the GPUs add up.
        size, uniform = pods[0], len(set(pods)) == 1
        slots, need, wanted = eligible.slots(size), len(pods), sum(pods, Decimal(0))
        available = eligible.free_total
        held: dict[str, Real] = {}  # free + freed GPUs of the nodes victims touched
        chosen: list[RunningJob] = []
        for job, here in candidates:
            if job.project == project.name:
                continue
            chosen.append(job)
            for name, gpus in here:
                before = held.get(name, eligible.free_of[name])
                held[name] = before + gpus
                available += gpus
                if uniform:
                    slots += (before + gpus) // size - before // size
            if uniform:
                if slots >= need:
                    break
            elif available >= wanted:
                freed = {name: gpus - eligible.free_of[name] for name, gpus in held.items()}
                if eligible.fits(pods, gang=True, freed=freed):
                    break
        else:
            return ()
        try:
            verdict = reclaim_verdict(
                self._reclaim_units(project, chosen),
                Reclaimer(project.name, _exact(request), workload.preemptible),
                [(job.project, self._exact(job.gpus)) for job in chosen],
                self.pool.multiplier,
            )
        except ConfigError:  # figures the check cannot read (a unit's victims above its preemptible GPUs): no set
            return ()
        return tuple(chosen) if verdict.can_reclaim and verdict.reclaimable else ()

    def _reclaim_units(self, project: UnitState, chosen: list[RunningJob]) -> list[Unit]:
        """The units ``engine.reclaim`` needs for this decision: the reclaimer's and the victims' projects, their
        departments, and per department one unit standing for its other projects (a parent's figures are its
        children's sums there), so that the check reads a handful of units, not the pool's hundreds."""
        projects = {project.name: project}
        for job in chosen:
            unit = self.units.get(job.project)
            projects[job.project] = unit or UnitState(job.project, None, 0, UNLIMITED, 0, job.gpus, 0)
        units: list[Unit] = []
        departments: dict[str, list[UnitState]] = {}
        for unit in projects.values():
            if unit.parent is not None and unit.parent in self.units:
                departments.setdefault(unit.parent, []).append(unit)
        for name, members in departments.items():
            parent = self.units[name]
            units.append(Unit(name, None, *self._exact_figures(parent)[:3]))
            rest_allocated = parent.allocated - sum((m.allocated for m in members), Decimal(0))
            rest_nonpreemptible = parent.allocated_nonpreemptible - sum(
                (m.allocated_nonpreemptible for m in members), Decimal(0)
            )
            if rest_allocated > 0:
                units.append(
                    Unit(
                        f"{name}: its other projects",
                        name,
                        0,
                        UNLIMITED,
                        UNLIMITED,
                        _exact(rest_allocated),
                        _exact(max(Decimal(0), min(rest_nonpreemptible, rest_allocated))),
                    )
                )
        for unit in projects.values():
            parent = unit.parent if unit.parent in departments else None
            units.append(
                Unit(
                    unit.name,
                    parent,
                    *self._exact_figures(unit),
                )
            )
        return units

    def _exact_figures(self, unit: UnitState) -> tuple:
        """The unit's deserved, limit, fair share, allocated and non-preemptible allocation as ``_exact`` gives
        them, worked out once per unit."""
        found = self._exact_units.get(unit.name)
        if found is None:
            found = self._exact_units[unit.name] = tuple(
                map(
                    self._exact,
                    (unit.deserved, unit.limit, unit.fair_share, unit.allocated, unit.allocated_nonpreemptible),
                )
            )
        return found

    def _exact(self, value: Real) -> int | Fraction:
        """``_exact(value)``, remembered: the same few figures come back with every victim."""
        found = self._exact_values.get(value)
        if found is None:
            found = self._exact_values[value] = _exact(value)
        return found


def _may_reclaim(project: UnitState, request: Real, preemptible: bool) -> bool:
    """``can_reclaim`` of §9.2 on the project's own figures: the cheap test before victims are looked for."""
    if project.fair_share != UNLIMITED and project.allocated + request > project.fair_share:
        return False
    if preemptible or project.deserved == UNLIMITED:
        return True
    return project.allocated_nonpreemptible + request <= project.deserved


def _exact(value: Real) -> int | Fraction:
    """A figure as ``engine.reclaim`` reads it at once: an int when whole, else a Fraction (a Decimal would be
    converted there on every call)."""
    if type(value) is int:
        return value
    whole = int(value)
    return whole if whole == value else Fraction(value)


def _json(value: Real) -> int | float:
    """A GPU figure for JSON: an int when whole, else a float."""
    whole = int(value)
    return whole if whole == value else float(value)


def _text(value: Real) -> str:
    """A GPU figure for a sentence: ``8``, ``12.5``."""
    return str(_json(value))
