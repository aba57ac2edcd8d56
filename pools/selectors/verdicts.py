"""Why each pending workload waits (SEMANTICS §10), read from the live state.

``pending_verdicts`` gathers, with a handful of grouped queries, what ``engine.verdicts`` judges: per pool its status,
its available nodes with their free GPUs, every unit's figures (``quota_report``'s rows: the one place §9's figures
come from), the preemptible running workloads (reclaim candidates) and the pending workloads; then judges each pool's
pending workloads in one pass. ``pool_waiting_summary`` is the pool page's line, ``pending_workload_counts`` the
``/metrics`` gauge, ``request_verdict`` the what-if's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cached_property

from django.db.models import Count, Exists, Max, Min, OuterRef, Q, Sum
from django.db.models.fields.json import KT, KeyTextTransform
from django.db.models.lookups import Exact
from django.utils import timezone

from accounts.access import SYSTEM

from ..choices import BackendStatus
from ..engine import validation
from ..engine import verdicts as engine
from ..engine.errors import RenderLimitError, TopologyError
from ..engine.topology import topology_levels
from ..engine.workloads import POD_GROUP, REQUIRED_PLACEMENT
from ..inventory.records import paused_gc
from ..models import (
    Backend,
    ConfigRevision,
    Node,
    NodeMembership,
    Platform,
    Pod,
    Pool,
    Project,
    ResourceValidation,
    VerdictRound,
    WorkloadSums,
    WorkloadVerdict,
    backend_status,
)
from . import estimates
from .pools import DEFAULT_PLATFORM, platform_validation_names
from .quotas import QUEUE_LABEL, _selected_pool, quota_report
from .workload_keys import workload_key_condition

TERMINATED = ("Succeeded", "Failed")
# Run:ai's and KAI's priority classes, lowest first: reclaim takes the lowest-priority jobs of a unit first.
PRIORITY_CLASSES = {"train": 50, "interactive-preemptible": 75, "build": 100, "inference": 125}
DEFAULT_PRIORITY = 50
ZERO = Decimal(0)
# The worker's kept verdicts of a backend are read while its last round is this recent (it judges again a few seconds
# after each watch batch, and after each sync): past it, or after any config change, they are judged live again.
KEPT_SECONDS = 15

WorkloadKey = tuple[int, str, str, str]


def _decimal(value) -> Decimal:
    """A GPU figure (a database sum, or a quota row's int or float) as a Decimal."""
    if value is None:
        return ZERO
    return value if isinstance(value, Decimal) else Decimal(repr(value) if isinstance(value, float) else value)


def _weightless(row: dict) -> bool:
    """Whether a unit's quota row holds nothing: no share, no limit, no fair share, nothing allocated."""
    return not row["deserved"] and row["limit"] == -1 and not row["fair_share"] and not row["allocated"]


def _unlimited_or(value) -> Decimal:
    """A quota figure where -1 means unlimited, as a Decimal (-1 kept)."""
    return Decimal(-1) if value == -1 else _decimal(value)


class _Live:
    """The state the verdicts of the pools of ``backend_ids`` (None: every backend) read, in a few queries."""

    def __init__(
        self,
        backend_ids=None,
        *,
        now=None,
        quota_rows: list[dict] | None = None,
        pool: Pool | None = None,
        keys: Iterable[WorkloadKey] | None = None,
        pool_ids: Iterable[int] | None = None,
    ):
        self.now = now or timezone.now()
        # One pool (its page, the what-if): only its state is read, and only its workloads are judged.
        self.only = pool
        # Every pool of the backends is read (not one pool, nor some of them): the pending workloads no pool takes are
        # judged too.
        self.whole = pool is None and pool_ids is None
        # Some workloads (a page of a list, one workload's page): only their pods are read as pending, then only the
        # state of their pools (``narrow``).
        self.keys = None if keys is None else set(keys)
        if self.keys is not None:
            backend_ids = sorted({key[0] for key in self.keys})
        if pool is not None:
            backend_ids = [pool.backend_id]
        self.quota_rows = quota_rows
        self.backend_ids = None if backend_ids is None else list(backend_ids)
        pools = Pool.objects.select_related("backend").order_by("name")
        if backend_ids is not None:
            pools = pools.filter(backend_id__in=self.backend_ids)
        every = {pool.pk: pool for pool in pools}
        if pool is not None:
            self.pools = {pool.pk: pool}
        elif pool_ids is not None:  # some pools of the backends (a watch's round of the pools a batch touched)
            self.pools = {pool_id: every[pool_id] for pool_id in pool_ids if pool_id in every}
            if len(self.pools) == 1:
                self.only = next(iter(self.pools.values()))
        else:
            self.pools = every
        self.pool_names = {pool_id: pool.name for pool_id, pool in every.items()}
        # A pending pod's pool is found among every pool of its backend, whichever are read: a nodeSelector two label
        # pools match is the same pool's whether one pool or all are judged.
        self.by_label = {(pool.backend_id, pool.name): pool.pk for pool in every.values()}
        self.label_pools = {
            (pool.backend_id, pool.node_label["key"], pool.node_label["value"]): pool.pk
            for pool in every.values()
            if pool.node_label
        }
        self.owner = {}
        self.projects = set()
        for name, namespaces in Project.objects.values_list("name", "namespaces"):
            self.projects.add(name)
            for namespace in namespaces or ():
                self.owner[namespace] = name
        self._refusals: dict[tuple, str] = {}
        # Each pending workload's pod shapes (GPUs, CPUs, memory, storage), which the validation rules judge.
        self.shapes: dict[WorkloadKey, set] = {}
        # The projects with a workload waiting on each pool (``pending``; the what-if's project): their units are read
        # even when they hold nothing there.
        self.waiting: dict[int, set[str]] = {}
        # Each judged workload's PodScheduled message (``_judge``), which a kept verdict needs to age (``_kept``).
        self.scheduled_messages: dict[WorkloadKey, str] = {}
        # Each judged workload's start estimate (SEMANTICS §10.1), made when every waiting workload of its pool is
        # judged (the workloads ahead of it are needed): the worker's rounds, a backend judged whole.
        self.starts: dict[WorkloadKey, dict] = {}

    def narrow(self, pool_ids: Iterable[int]) -> None:
        """Read the state of these pools only (the pools of the workloads judged): call before any state is read."""
        assert "nodes" not in self.__dict__, "narrow before the state is read"
        self.pools = {pool_id: self.pools[pool_id] for pool_id in pool_ids}
        self.only = next(iter(self.pools.values())) if len(self.pools) == 1 else None

    @cached_property
    def nodes(self) -> dict[int, list[engine.NodeState]]:
        return self._nodes()

    @cached_property
    def running(self) -> dict[int, list[engine.RunningJob]]:
        self.nodes  # noqa: B018 -- the running jobs are placed on the pools of their nodes, read with the nodes
        return self._running()

    @cached_property
    def holders(self) -> dict[int, list]:
        """Each pool's workloads holding GPUs on its nodes (``estimates.running_holders``), for the start estimates."""
        self.nodes  # noqa: B018 -- placed on the pools of their nodes, read with the nodes
        return estimates.running_holders(self)

    @cached_property
    def holders_per_kind(self) -> dict[tuple, int]:
        """How many workloads of each (backend, project, kind) hold GPUs on any node of the backend, whichever pools
        are read (a pool judged alone counts as it does in a round of every pool)."""
        counted: dict[tuple, set] = {}
        for row in self.gpu_pods_on_nodes:
            project = self.project_of(row["namespace"], row["queue"])
            key = (row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"])
            counted.setdefault((row["backend_id"], project, row["workload_kind"]), set()).add(key)
        return {key: len(workloads) for key, workloads in counted.items()}

    @cached_property
    def learned_runtimes(self) -> estimates.LearnedRuntimes:
        return estimates.LearnedRuntimes(self.backend_ids, self.now)

    @cached_property
    def units(self) -> dict[int, list[engine.UnitState]]:
        rows = self.quota_rows
        if rows is None:
            rows = quota_report(user=SYSTEM, pool=self.only.name if self.only is not None else None)["quotas"]
        return self._units(rows)

    def project_of(self, namespace: str, queue: str | None) -> str | None:
        """A pod's project as ``quota_report`` counts it: its ``runai/queue`` label, else its namespace's owner."""
        return queue if queue in self.projects else self.owner.get(namespace)

    def _nodes(self) -> dict[int, list[engine.NodeState]]:
        """Each pool's available, schedulable GPU nodes with their free GPUs. One query (a node once per pool)."""
        rows = (
            Node.objects.filter(memberships__pool_id__in=list(self.pools), available=True, unschedulable=False)
            .filter(gpu__gt=0)
            .values_list("memberships__pool_id", "id", "backend_id", "name", "gpu_product", "gpu", "gpu_used", "labels")
            .distinct()
            .order_by()
        )
        nodes: dict[int, list[engine.NodeState]] = {pool_id: [] for pool_id in self.pools}
        states: dict[int, engine.NodeState] = {}
        self.pools_of_node: dict[tuple[int, str], list[int]] = {}
        for pool_id, node_id, backend_id, name, product, gpu, used, labels in rows:
            state = states.get(node_id)
            if state is None:
                state = states[node_id] = engine.NodeState(name, product, gpu, max(ZERO, gpu - used), labels or {})
            self.pools_of_node.setdefault((backend_id, name), []).append(pool_id)
            nodes[pool_id].append(state)
        return nodes

    @cached_property
    def gpu_pods_on_nodes(self) -> list[dict]:
        """The GPU pods bound to a node and not ended, grouped by workload, node, priority class and whether they may
        be preempted, with their ``runai/queue`` label, their GPUs and their earliest and latest start: what the reclaim
        candidates (``running``) and the start estimates' holders (``holders``) are built from. One query."""
        return list(
            self.pods()
            .filter(~Q(node_name=""), gpu__gt=0)
            .exclude(phase__in=TERMINATED)
            .values(
                "backend_id",
                "namespace",
                "workload_kind",
                "workload_name",
                "node_name",
                "priority_class",
                "preemptible",
            )
            .annotate(
                queue=KT(f"labels__{QUEUE_LABEL}"), gpus=Sum("gpu"), earliest=Min("started"), latest=Max("started")
            )
            .order_by()
        )

    def _running(self) -> dict[int, list[engine.RunningJob]]:
        """Each pool's preemptible running GPU workloads, grouped by workload and node."""
        jobs: dict[tuple, dict] = {}
        for row in self.gpu_pods_on_nodes:
            if not row["preemptible"]:
                continue
            pools = self.pools_of_node.get((row["backend_id"], row["node_name"]))
            project = self.project_of(row["namespace"], row["queue"])
            if not pools or project is None:
                continue
            for pool_id in pools:
                key = (pool_id, row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"])
                job = jobs.setdefault(
                    key, {"project": project, "priority": DEFAULT_PRIORITY, "started": 0.0, "nodes": {}, "gpus": ZERO}
                )
                gpus = _decimal(row["gpus"])
                job["nodes"][row["node_name"]] = job["nodes"].get(row["node_name"], ZERO) + gpus
                job["gpus"] += gpus
                job["priority"] = PRIORITY_CLASSES.get(row["priority_class"], DEFAULT_PRIORITY)
                if row["latest"] is not None:
                    job["started"] = max(job["started"], row["latest"].timestamp())
        running: dict[int, list[engine.RunningJob]] = {pool_id: [] for pool_id in self.pools}
        for (pool_id, _, namespace, kind, name), job in jobs.items():
            running[pool_id].append(
                engine.RunningJob(
                    namespace, name, kind, job["project"], job["gpus"], job["priority"], job["started"], job["nodes"]
                )
            )
        return running

    def pods(self):
        """The pods of the backends asked for (every backend's when none were named)."""
        pods = Pod.objects.all()
        return pods if self.backend_ids is None else pods.filter(backend_id__in=self.backend_ids)

    def _units(self, quota_rows: list[dict]) -> dict[int, list[engine.UnitState]]:
        """Each pool's departments and projects with ``quota_report``'s figures; a unit's preemptible GPUs are its
        reclaim candidates' on the pool, the rest of its allocation is non-preemptible. A project with nothing on the
        pool (no share, limit, fair share or allocation) and no workload waiting there is left out: it weighs nothing
        in any check, and 500 projects × 50 pools of them cost more to build than the verdicts."""
        names = {pool.name: pool_id for pool_id, pool in self.pools.items()}
        preemptible: dict[tuple[int, str], Decimal] = {}
        for pool_id, jobs in self.running.items():
            for job in jobs:
                preemptible[pool_id, job.project] = preemptible.get((pool_id, job.project), ZERO) + job.gpus
        units: dict[int, list[engine.UnitState]] = {pool_id: [] for pool_id in self.pools}
        departments: dict[tuple[int, str], Decimal] = {}
        rows = [row for row in quota_rows if row["pool"] in names]
        for row in rows:
            if row["kind"] == "project":
                pool_id = names[row["pool"]]
                held = preemptible.get((pool_id, row["unit"]), ZERO)
                departments[pool_id, row["department"]] = departments.get((pool_id, row["department"]), ZERO) + held
        for row in rows:
            pool_id = names[row["pool"]]
            if row["kind"] == "project" and _weightless(row) and row["unit"] not in self.waiting.get(pool_id, ()):
                continue
            allocated = _decimal(row["allocated"])
            if row["kind"] == "project":
                held, parent = preemptible.get((pool_id, row["unit"]), ZERO), row["department"]
            else:
                held, parent = departments.get((pool_id, row["unit"]), ZERO), None
            units[pool_id].append(
                engine.UnitState(
                    row["unit"],
                    parent,
                    _unlimited_or(row["deserved"]),
                    _unlimited_or(row["limit"]),
                    _decimal(row["fair_share"]),
                    allocated,
                    max(ZERO, allocated - held),
                )
            )
        return units

    def pending(
        self, *, every: bool = False
    ) -> tuple[dict[int, list[engine.PendingWorkload]], list[engine.PendingWorkload]]:
        """The pending workloads by pool, and those of no pool. One query, grouped by workload and pod size.
        ``every``: those of every key, not only of ``keys`` (the workloads ahead of them, for their start estimates)."""
        keys = None if every else self.keys
        pods = self.pods().filter(node_name="")
        if keys is not None:
            pods = pods.filter(workload_key_condition(keys))
        elif not self.whole:  # the pods of the workloads with a pod that may wait on a pool read
            some = pods.filter(self._may_wait_on_pools_read()).exclude(phase__in=TERMINATED)
            keys = set(some.order_by().values_list("backend_id", "namespace", "workload_kind", "workload_name"))
            pods = pods.filter(workload_key_condition(keys)) if keys else pods.none()
        rows = (
            pods.exclude(phase__in=TERMINATED)
            .values(
                "backend_id",
                "namespace",
                "workload_kind",
                "workload_name",
                "pool_name",
                "node_selector",
                "gpu",
                "cpu",
                "memory",
                "storage",
            )
            .annotate(
                queue=KT(f"labels__{QUEUE_LABEL}"),
                placement=KT(f"annotations__{REQUIRED_PLACEMENT}"),
                pods=Count("id"),
                since=Min("created"),
                firm=Count("id", filter=Q(preemptible=False)),
                message=Max("scheduled_message"),
            )
            .order_by()
        )
        found: dict[WorkloadKey, dict] = {}
        for row in rows:
            key = (row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"])
            if keys is not None and key not in keys:
                continue  # one of the other workloads the key condition reads
            workload = found.setdefault(
                key,
                {
                    "pods": [],
                    "shapes": set(),
                    "firm": 0,
                    "since": None,
                    "message": "",
                    "pool": None,
                    "project": None,
                    "topology": "",
                },
            )
            workload["pods"] += [_decimal(row["gpu"])] * row["pods"]
            workload["shapes"].add((_decimal(row["gpu"]), _decimal(row["cpu"]), row["memory"], row["storage"]))
            workload["firm"] += row["firm"]
            workload["message"] = max(workload["message"], row["message"] or "")
            workload["topology"] = max(workload["topology"], row["placement"] or "")
            if row["since"] and (workload["since"] is None or row["since"] < workload["since"]):
                workload["since"] = row["since"]
            workload["project"] = workload["project"] or self.project_of(row["namespace"], row["queue"])
            # Pods of one workload waiting on two pools: it waits on the first by name, whichever pods are read first.
            pool_id = self.pool_of(row["backend_id"], row["pool_name"], row["node_selector"])
            if "selector" not in workload or (
                pool_id is not None
                and (workload["pool"] is None or self.pool_names[pool_id] < self.pool_names[workload["pool"]])
            ):
                workload["pool"] = pool_id
                workload["selector"] = row["node_selector"] or {}
        by_pool: dict[int, list[engine.PendingWorkload]] = {pool_id: [] for pool_id in self.pools}
        unpooled = []
        for key, workload in found.items():
            waiting = (self.now - workload["since"]).total_seconds() if workload["since"] else 0.0
            pending = engine.PendingWorkload(
                key,
                workload["project"],
                tuple(sorted(workload["pods"], reverse=True)),
                preemptible=workload["firm"] == 0,
                gang=key[2] == POD_GROUP,
                node_selector=workload["selector"] if isinstance(workload["selector"], Mapping) else {},
                waiting_seconds=waiting,
                scheduled_message=workload["message"],
                topology=workload["topology"],
            )
            self.shapes[key] = workload["shapes"]
            if workload["pool"] is not None and workload["project"]:
                self.waiting.setdefault(workload["pool"], set()).add(workload["project"])
            if workload["pool"] is not None:
                if workload["pool"] in self.pools:  # (a workload of a pool not read is not judged)
                    by_pool[workload["pool"]].append(pending)
            elif self.whole:
                unpooled.append(pending)
        return by_pool, unpooled

    def _may_wait_on_pools_read(self) -> Q:
        """The pending pods that may wait on a pool read: their pool label names one, or their ``nodeSelector`` asks
        for a label pool's key and value (which pool each waits on is then found as for every pod, ``pool_of``)."""
        condition = Q(pool_name__in=sorted({pool.name for pool in self.pools.values()}))
        for pool in self.pools.values():
            if pool.node_label:
                asked = KeyTextTransform(pool.node_label["key"], "node_selector")
                condition |= Q(Exact(asked, pool.node_label["value"]))
        return condition

    def with_refusal(self, pool_id: int, workload: engine.PendingWorkload) -> engine.PendingWorkload:
        """``workload`` with the message of a validation rule of its pool that refuses it (``refusal``), if any."""
        refused = self.refusal(pool_id, self.shapes.get(workload.key, ()))
        return replace(workload, refused=refused) if refused else workload

    def refusal(self, pool_id: int, shapes) -> str:
        """The message of the validation rule that refuses one of ``shapes`` (a pending pod's GPUs, CPUs, memory and
        storage) on every platform of the pool, even on empty nodes; "" when none does (SEMANTICS §10 ``never_fits``).
        Each distinct pod shape is judged once per pool."""
        platforms = self.rule_platforms.get(pool_id)
        if not platforms:
            return ""
        for shape in sorted(shapes):
            known = self._refusals.get((pool_id, shape))
            if known is None:
                gpu, cpu, memory, storage = shape
                variables = validation.pod_variables(gpu=gpu, cpu=cpu, memory=memory, storage=storage)
                try:
                    messages = [
                        validation.refusal_on_empty_nodes(rules, variables, nodes) for rules, nodes in platforms
                    ]
                except RenderLimitError:  # a rule too costly to render is the rule's fault (§7.3): it refuses nothing
                    messages = [""]
                known = self._refusals[pool_id, shape] = messages[0] if all(messages) else ""
            if known:
                return known
        return ""

    @cached_property
    def rule_platforms(self) -> dict[int, list[tuple[list, list]]]:
        """Per pool with rules a synced pod can be judged by (``validation.rule_judges_pods``), its platforms' rules
        and their available nodes, one node per distinct allocatable shape. A pool with a platform that has no such
        rule is left out: that platform takes any pod. Three queries."""
        sets = {
            name: [rule for rule in validation.parse_rules(rules, source=name) if validation.rule_judges_pods(rule)]
            for name, rules in ResourceValidation.objects.values_list("name", "rules")
        }
        if not any(sets.values()):
            return {}
        platforms: dict[int, list] = {pool_id: [] for pool_id in self.pools}
        for platform in Platform.objects.filter(pool_id__in=list(self.pools)).only(
            "pool_id", "name", "resource_validations"
        ):
            platforms[platform.pool_id].append(platform)
        ruled: dict[tuple[int, str], list] = {}
        for pool_id, pool in self.pools.items():
            mine = {}
            for platform in platforms[pool_id] or [None]:  # a pool without platforms has one, with its own rules
                names = platform_validation_names(pool, platform)
                rules = [rule for set_name in names for rule in sets.get(set_name, ())]
                if not rules:  # a platform without such rules takes any pod: the pool refuses none
                    mine = {}
                    break
                mine[pool_id, platform.name if platform else DEFAULT_PLATFORM] = rules
            ruled.update(mine)
        if not ruled:
            return {}
        shapes: dict[tuple[int, str], dict[tuple, validation.NodeResources]] = {key: {} for key in ruled}
        rows = (
            NodeMembership.objects.filter(pool_id__in={pool_id for pool_id, _ in ruled}, node__available=True)
            .values_list(
                "pool_id",
                "platform_name",
                "node__name",
                "node__cpu",
                "node__gpu",
                "node__memory",
                "node__storage",
                "node__gpu_product",
            )
            .order_by("node__name")
        )
        for pool_id, platform, name, cpu, gpu, memory, storage, product in rows:
            found = shapes.get((pool_id, platform))
            shape = (cpu, gpu, memory, storage, product)
            if found is not None and shape not in found:
                found[shape] = validation.NodeResources(
                    name,
                    cpu,
                    gpu,
                    Decimal(memory),
                    Decimal(storage),
                    cpu,
                    gpu,
                    Decimal(memory),
                    Decimal(storage),
                    product,
                )
        judged: dict[int, list[tuple[list, list]]] = {}
        for (pool_id, platform), rules in ruled.items():
            judged.setdefault(pool_id, []).append((rules, list(shapes[pool_id, platform].values())))
        return judged

    def pool_of(self, backend_id: int, pool_name: str, node_selector) -> int | None:
        """A pending pod's pool as ``quota_report`` finds it: its pool label, else the label pool its
        ``nodeSelector`` asks for."""
        pool_id = self.by_label.get((backend_id, pool_name))
        if pool_id is None and self.label_pools and node_selector:
            pool_id = _selected_pool(backend_id, node_selector, self.label_pools)
        return pool_id

    def pool_state(self, pool_id: int) -> engine.PoolState:
        pool = self.pools[pool_id]
        return engine.PoolState(
            pool.name,
            maintenance=pool.enable_maintenance,
            online=backend_status(pool.backend.last_heartbeat, self.now) == BackendStatus.ONLINE,
            nodes=tuple(self.nodes[pool_id]),
            units=tuple(self.units[pool_id]),
            running=tuple(self.running[pool_id]),
            topology_labels=_topology_labels(pool),
        )


def _topology_labels(pool: Pool) -> tuple[str, ...]:
    """The node labels of the pool's topology levels, coarsest first; none when its ``topology_keys`` are unreadable
    (its capacity page says why)."""
    try:
        return tuple(level.label for level in topology_levels(pool.topology_keys))
    except TopologyError:
        return ()


def _judge(live: _Live) -> tuple[dict[WorkloadKey, engine.Verdict], dict[WorkloadKey, tuple[int | None, Decimal]]]:
    """Every verdict, and each workload's pool id and GPUs asked. With keys, only the state of the pools those
    workloads wait on is read."""
    by_pool, unpooled = live.pending()
    everyone = by_pool  # the waiting workloads a start estimate plays forward: every one of the pool
    if live.keys is not None:
        live.narrow(pool_id for pool_id, workloads in by_pool.items() if workloads)
        by_pool = {pool_id: by_pool[pool_id] for pool_id in live.pools}
        if any(by_pool.values()):
            everyone = live.pending(every=True)[0]
    found: dict[WorkloadKey, engine.Verdict] = {}
    where: dict[WorkloadKey, tuple[int | None, Decimal]] = {}
    for pool_id, workloads in by_pool.items():
        if workloads:
            workloads = [live.with_refusal(pool_id, workload) for workload in workloads]
            judged = engine.pool_verdicts(live.pool_state(pool_id), workloads)
            found.update(judged)
            ahead = [live.with_refusal(pool_id, workload) for workload in everyone.get(pool_id, workloads)]
            live.starts.update(estimates.pool_start_estimates(live, pool_id, ahead, judged))
            where.update((w.key, (pool_id, w.request)) for w in workloads)
            live.scheduled_messages.update((w.key, w.scheduled_message) for w in workloads)
    for workload in unpooled:
        found[workload.key] = engine.unpooled_verdict(workload)
        where[workload.key] = (None, workload.request)
        live.scheduled_messages[workload.key] = workload.scheduled_message
    return found, where


def judged_verdicts(
    backend_id: int, pool_ids: Collection[int] | None = None
) -> tuple[dict[WorkloadKey, dict], dict[WorkloadKey, tuple]]:
    """Every pending workload of the backend (of its pools ``pool_ids`` only, when given) judged from the live state:
    the verdicts and, for each, its pool's id, the GPUs it asks and its pods' PodScheduled message. What
    ``services.workload_verdicts_keep`` keeps."""
    live = _Live([backend_id], pool_ids=pool_ids)
    found, where = _judge(live)
    return (
        {key: _with_start(verdict.as_dict(), live.starts.get(key)) for key, verdict in found.items()},
        {key: (*where[key], live.scheduled_messages.get(key, "")) for key in found},
    )


def pools_of_nodes(backend_id: int, names: Collection[str]) -> set[int]:
    """The pools of the backend's nodes ``names``: those whose verdicts a change of these nodes' GPUs may move."""
    return set(
        NodeMembership.objects.filter(node__backend_id=backend_id, node__name__in=list(names)).values_list(
            "pool_id", flat=True
        )
    )


def verdict_round_fresh(backend_id: int) -> bool:
    """Whether the backend's kept round is read by the doors now (recent, under the newest config revision): what a
    round of some of its pools amends."""
    return backend_id in _fresh_backends([backend_id])


def _judged_live(live: _Live) -> tuple[dict[WorkloadKey, dict], dict[WorkloadKey, tuple[int | None, Decimal]]]:
    found, where = _judge(live)
    return {key: _with_start(verdict.as_dict(), live.starts.get(key)) for key, verdict in found.items()}, where


def _with_start(verdict: dict, start: dict | None) -> dict:
    """A verdict with its start estimate (SEMANTICS §10.1): ``start`` is None where none was made (its pool's other
    waiting workloads were not judged with it, or a wait does not end its reason)."""
    verdict["start"] = start
    return verdict


def _fresh_backends(backend_ids: Iterable[int] | None) -> dict[int, datetime]:
    """The backends (of ``backend_ids``; None: any) whose kept verdicts may be read, with when their round judged:
    judged by the worker less than ``KEPT_SECONDS`` ago, under the newest config revision (a quota or pool changed
    since: judged live again)."""
    rounds = VerdictRound.objects.filter(judged_at__gte=timezone.now() - timedelta(seconds=KEPT_SECONDS))
    if backend_ids is not None:
        rounds = rounds.filter(backend_id__in=list(backend_ids))
    rounds = list(rounds.values_list("backend_id", "config_revision", "judged_at"))
    if not rounds:
        return {}
    newest = ConfigRevision.objects.aggregate(newest=Max("id"))["newest"] or 0
    return {backend_id: judged_at for backend_id, revision, judged_at in rounds if revision == newest}


def _kept(
    fresh: dict[int, datetime],
    *,
    keys: set[WorkloadKey] | None = None,
    pool: Pool | None = None,
    reasons_only: bool = False,
) -> tuple[dict[WorkloadKey, dict], dict[WorkloadKey, tuple[int | None, Decimal]], set[WorkloadKey]]:
    """The kept verdicts of the workloads that still wait on the backends ``fresh`` (only ``keys``, or only those
    on ``pool``), aged to now, their pools and GPUs, and the waiting workloads the round did not judge (new since):
    two queries, each joining the other table (``WorkloadSums`` says which workloads still wait). With
    ``reasons_only`` each verdict is only its ``reason`` (read from its column: nothing decoded, nothing aged)."""
    key_fields = ("backend_id", "namespace", "workload_kind", "workload_name")
    same = {field: OuterRef(field) for field in key_fields}
    waiting = WorkloadSums.objects.filter(backend_id__in=list(fresh), pending__gt=0)
    verdicts = WorkloadVerdict.objects.filter(backend_id__in=list(fresh)).exclude(reason="")
    verdicts = verdicts.filter(Exists(WorkloadSums.objects.filter(pending__gt=0, **same)))
    new = waiting.exclude(Exists(WorkloadVerdict.objects.filter(**same)))
    if keys is not None:
        verdicts = verdicts.filter(workload_key_condition(keys))
        new = new.filter(workload_key_condition(keys))
    if pool is not None:
        verdicts = verdicts.filter(pool=pool)
    now = timezone.now()
    found: dict[WorkloadKey, dict] = {}
    where: dict[WorkloadKey, tuple[int | None, Decimal]] = {}
    column = "reason" if reasons_only else "verdict"
    rows = verdicts.order_by().values_list(*key_fields, "pool_id", "gpus", column, "scheduled_message", "judged_at")
    with paused_gc():  # thousands of decoded verdicts, all kept: the collector would scan them again and again
        for *key, pool_id, gpus, verdict, said, judged_at in rows:
            key = tuple(key)
            if keys is None or key in keys:
                if reasons_only:
                    found[key] = {"reason": verdict}
                else:  # aged from when it was judged: its own time, else its backend's round's
                    age = (now - (judged_at or fresh[key[0]])).total_seconds()
                    found[key] = engine.aged_verdict(verdict, age, said)
                where[key] = (pool_id, _decimal(gpus))
    unjudged = set(new.order_by().values_list(*key_fields))
    return found, where, unjudged if keys is None else unjudged & keys


def _verdicts(
    *,
    backend_ids=None,
    keys: Iterable[WorkloadKey] | None = None,
    pool: Pool | None = None,
    quota_rows=None,
    reasons_only: bool = False,
) -> tuple[dict[WorkloadKey, dict], dict[WorkloadKey, tuple[int | None, Decimal]]]:
    """The verdicts (and each one's pool id and GPUs asked) of the pending workloads of ``backend_ids`` (None: every
    backend), or of ``keys``, or of those waiting on ``pool``: kept ones where the worker's round is fresh, the
    workloads it did not judge (new since) judged by their keys, and every backend without a fresh round live.
    ``reasons_only``: a caller that reads only each verdict's ``reason`` (counts) gets the kept ones undecoded."""
    if pool is not None:
        backend_ids = [pool.backend_id]
    if keys is not None:
        keys = set(keys)
        backend_ids = {key[0] for key in keys}
    fresh = _fresh_backends(backend_ids)
    found: dict[WorkloadKey, dict] = {}
    where: dict[WorkloadKey, tuple[int | None, Decimal]] = {}
    new: set[WorkloadKey] = set()
    if fresh:
        mine = None if keys is None else {key for key in keys if key[0] in fresh}
        found, where, new = _kept(fresh, keys=mine, pool=pool, reasons_only=reasons_only)
    if new:
        more, more_where = _judged_live(_Live(keys=new))
        found.update(more)
        where.update(more_where)
    if keys is not None:
        stale = {key for key in keys if key[0] not in fresh}
        live = _Live(keys=stale) if stale else None
    elif pool is not None:
        live = None if fresh else _Live(pool=pool)
    elif fresh:
        others = set(Backend.objects.values_list("id", flat=True)) - fresh.keys()
        if backend_ids is not None:
            others &= set(backend_ids)
        live = _Live(sorted(others), quota_rows=quota_rows) if others else None
    else:
        live = _Live(backend_ids, quota_rows=quota_rows)
    if live is not None:
        more, more_where = _judged_live(live)
        found.update(more)
        where.update(more_where)
    return found, where


def pending_verdicts(*, backend_ids=None, keys: Iterable[WorkloadKey] | None = None) -> dict[WorkloadKey, dict]:
    """Why each pending workload waits, keyed by (backend id, namespace, workload kind, workload name).

    Each value is ``{"reason": str, "checks": [{"reason", "message", "figures"}], "victims": [{"namespace", "name",
    "kind", "project", "gpus"}]}``: every failing check of SEMANTICS §10 in order, the first being the reason. A
    workload with a pending pod always has one. With ``keys``, only those workloads (those of them with a pending pod)
    are judged, reading only their pools' state: a page of a list. Restricted by the caller: this reads every pool
    of the backends.

    Where the worker judged a backend's workloads less than ``KEPT_SECONDS`` ago under the current config
    (``services.workload_verdicts_keep``, after its watch batches and syncs), those verdicts are read instead.
    """
    found, _ = _verdicts(backend_ids=backend_ids, keys=keys)
    return found


# Up to this many pending workloads are judged by their keys, reading only their pools' state; more (a whole list)
# are judged with every pool of their backends, which costs less than thousands of keys.
KEYED_VERDICTS = 500


def verdicts_of(keys: Collection[WorkloadKey]) -> dict[WorkloadKey, dict]:
    """``pending_verdicts`` of the workloads ``keys`` (those of them that wait): by their keys when they are few (a
    page of a list, a researcher's own), else with every pool of their backends (a whole list, an export)."""
    if not keys:
        return {}
    if len(keys) > KEYED_VERDICTS:
        found = pending_verdicts(backend_ids=sorted({key[0] for key in keys}))
    else:
        found = pending_verdicts(keys=keys)
    return {key: found[key] for key in keys if key in found}


def pending_workload_counts(*, quota_rows: list[dict] | None = None) -> dict[tuple[str, str], int]:
    """Pending workloads per (pool, reason), for ``/metrics``; workloads of no pool are left out. ``quota_rows`` are
    ``quota_report``'s rows for every unit and pool when the caller has them already (a scrape reads them once)."""
    found, where = _verdicts(quota_rows=quota_rows, reasons_only=True)
    names = dict(Pool.objects.values_list("id", "name"))
    counts: Counter = Counter()
    for key, verdict in found.items():
        pool_id = where[key][0]
        if pool_id in names:
            counts[names[pool_id], verdict["reason"]] += 1
    return dict(counts)


def pool_waiting_summary(pool: Pool) -> dict:
    """The pool page's line: how many workloads wait on ``pool``, the GPUs they ask, and how many for each reason
    (most first): ``{"workloads", "gpus", "reasons": [(reason, count)], "text"}``."""
    found, where = _verdicts(pool=pool, reasons_only=True)
    mine = [key for key, (pool_id, _) in where.items() if pool_id == pool.pk]
    gpus = sum((where[key][1] for key in mine), ZERO)
    reasons = Counter(found[key]["reason"] for key in mine)
    ordered = sorted(reasons.items(), key=lambda item: (-item[1], engine.REASONS.index(item[0])))
    figure = int(gpus) if gpus == int(gpus) else float(gpus)
    text = ""
    if mine:
        parts = ", ".join(f"{count} {reason.replace('_', ' ')}" for reason, count in ordered)
        text = f"waiting: {len(mine)} workload{'s' if len(mine) != 1 else ''}, {figure} GPUs — {parts}"
    return {"workloads": len(mine), "gpus": figure, "reasons": ordered, "text": text}


def request_verdict(
    *, pool: Pool, project: str | None, gpu: Decimal, pods: int, refused: str = "", topology: str = ""
) -> dict:
    """The verdict a request not yet submitted would get on ``pool``: ``pods`` pods of ``gpu`` GPUs each of
    ``project`` (a gang when more than one), ``refused`` being the message of a rule that refuses it everywhere and
    ``topology`` the node label of the level it requires to keep within (none: anywhere)."""
    live = _Live(pool=pool)
    if project:
        live.waiting[pool.pk] = {project}
    workload = engine.PendingWorkload(
        (pool.backend_id, "", POD_GROUP, "what-if"),
        project,
        (gpu,) * pods,
        gang=pods > 1,
        refused=refused,
        topology=topology,
    )
    return engine.workload_verdict(live.pool_state(pool.pk), workload).as_dict()
