"""Workloads (SEMANTICS §10): the pods of the inventory grouped into what users submitted, and why each waits.

Pods are grouped in the database, by the workload key the sync keeps on each pod (``Pod.workload_kind`` and
``workload_name``, indexed with the backend and namespace): a 150,000-pod fleet is never read into Python. A list
is a ``WorkloadRows``, a lazy sequence: its length is one ``COUNT`` and a slice one grouped query of that page, then
the page's pools, MIG slices, projects and verdicts; the page, ``/api/workloads/`` and ``poolctl get workloads``
read the same sequence.

Who sees what: a user sees the workloads of the pools their roles show (a pod's pool label, the label pool its
``nodeSelector`` asks for, or a pool of its node) and, with ``LIST_FLEET``, those of no pool; and every workload of
the projects they are a member of (§9.4). A workload they may not see does not exist for them.

A workload's name in a URL leaves its kind out; should two kinds share a name in one namespace, a pod group is
meant first, then a controller (by kind's name), then a bare pod (``KIND_PREFERENCE``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import (
    Case,
    Count,
    DecimalField,
    Exists,
    F,
    Max,
    Min,
    OuterRef,
    Q,
    Sum,
    TextField,
    Value,
    When,
    Window,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.db.models.lookups import Exact

from accounts.access import allows, is_system, visible
from pools.engine.errors import ConfigError, NotFound
from pools.engine.permissions import LIST_FLEET, VIEW_POOL
from pools.engine.workloads import (
    FAILED,
    PARTIALLY_RUNNING,
    PENDING,
    PHASES,
    POD,
    POD_GROUP,
    RUNNING,
    SUCCEEDED,
    workload_phase,
)

from ..models import Backend, NodeMembership, Pod, Pool, Project, WorkloadSums
from .membership import projects_of
from .quotas import QUEUE_LABEL
from .verdicts import verdicts_of
from .workload_keys import workload_key_condition

TERMINATED = ("Succeeded", "Failed")
# The memory PostgreSQL may give one grouping of the pods (``work_mem``; a hash takes twice that): 150,000 pods in
# 120,000 workloads need about 120 MB, and with the default 4 MB the groups are sorted on disk, five times slower.
GROUPING_MEMORY = "128MB"
PEEK = 100  # the rows a count reads besides: the first page, which a page and the API ask for next
ZERO = Decimal(0)
FILTERS = ("pool", "project", "user", "phase", "reason", "pending", "backend", "namespace")


def kind_rank(kind: str) -> tuple[int, str]:
    """The order in which kinds sharing a name in a namespace are meant by it: pod group, controllers, pod."""
    return (0 if kind == POD_GROUP else 2 if kind == POD else 1, kind)


# --- who sees what -------------------------------------------------------------------------------------------------


def _pools() -> list[tuple[int, str, int, dict]]:
    return list(Pool.objects.values_list("id", "name", "backend_id", "node_label"))


def _projects() -> dict[str, list[str]]:
    """Each project's namespaces, as the quota figures read them."""
    return {name: list(namespaces or []) for name, namespaces in Project.objects.values_list("name", "namespaces")}


def _in_pools(pools: Sequence[tuple[int, str, int, dict]]) -> Q:
    """Pods of ``pools``: labelled with one on its backend, asking for a label pool by ``nodeSelector``, or on a
    node of one of them."""
    condition = Q(pk__in=[])
    by_backend: dict[int, list[str]] = {}
    for _, name, backend_id, node_label in pools:
        by_backend.setdefault(backend_id, []).append(name)
        if node_label and node_label.get("key"):
            selected = Exact(
                Cast(KeyTextTransform(node_label["key"], "node_selector"), TextField()), node_label["value"]
            )
            condition |= Q(backend_id=backend_id, pool_name="") & Q(selected)
    for backend_id, names in by_backend.items():
        condition |= Q(backend_id=backend_id, pool_name__in=names)
    if pools:
        on_nodes = NodeMembership.objects.filter(
            pool_id__in=[pool_id for pool_id, _, _, _ in pools],
            node__backend_id=OuterRef("backend_id"),
            node__name=OuterRef("node_name"),
        )
        condition |= Q(pool_name="") & ~Q(node_name="") & Exists(on_nodes)
    return condition


def _of_projects(names: set[str], projects: Mapping[str, list[str]]) -> Q:
    """Pods of the projects ``names``: labelled ``runai/queue=<project>``, else in one of their namespaces."""
    if not names:
        return Q(pk__in=[])
    namespaces = [namespace for name in names for namespace in projects.get(name, [])]
    unlabelled = Q(queue__isnull=True) | Q(queue="") | ~Q(queue__in=list(projects))
    return Q(queue__in=sorted(names)) | (Q(namespace__in=namespaces) & unlabelled)


def _selection(pods):
    """``pods`` with the queue label (``runai/queue``) annotated, which the conditions and the rows read."""
    return pods.annotate(queue=Cast(KeyTextTransform(QUEUE_LABEL, "labels"), TextField()))


def _restricted(user, pools, projects):
    """The pods whose workloads ``user`` may see, as a condition (None: everything)."""
    if is_system(user):
        return None
    shown = set(visible(user, VIEW_POOL, [name for _, name, _, _ in pools]))
    condition = _in_pools([pool for pool in pools if pool[1] in shown])
    if allows(user, LIST_FLEET):  # the whole fleet but the pools hidden from them
        hidden = [pool for pool in pools if pool[1] not in shown]
        if not hidden:
            return None
        condition |= ~_in_pools(hidden)
    return condition | _of_projects(projects_of(user) & set(projects), projects)


# --- the rows ------------------------------------------------------------------------------------------------------

_GROUP = ("backend_id", "namespace", "workload_kind", "workload_name")
_GPU = DecimalField(max_digits=20, decimal_places=3)


_ORDER = ("-held", "-gpus", "backend_id", "namespace", "workload_name", "workload_kind")  # as WORKLOAD_ORDER
_SUMS = ("gpus", "held", "pods", "running", "pending", "failed")  # the figures of ``workload_sums``


def workload_sums(pods):
    """The sums of each workload of ``pods``, as ``WorkloadSums`` keeps them: its key, GPUs, GPUs held by its live
    pods bound to a node, and its pods, running, pending and failed. What orders and filters the list; the sync
    stores it (``services.workload_sums_refresh``), the list groups it itself for a reader of part of the fleet."""
    live = ~Q(phase__in=TERMINATED)
    return pods.values(*_GROUP).annotate(
        gpus=Sum("gpu", output_field=_GPU),
        held=Sum(Case(When(~Q(node_name="") & live, then=F("gpu")), default=Value(ZERO)), output_field=_GPU),
        pods=Count("id"),
        running=Count("id", filter=Q(phase="Running")),
        pending=Count("id", filter=Q(phase="Pending")),
        failed=Count("id", filter=Q(phase="Failed")),
    )


def _ordered(pods):
    """The workloads of ``pods`` in their order, with only what orders and filters them: the cheap first pass."""
    return workload_sums(pods).order_by(*_ORDER)


def _grouped(pods):
    """Every figure of the workloads of ``pods``, in their order."""
    return (
        workload_sums(pods)
        .annotate(
            done=Count("id", filter=Q(phase__in=TERMINATED)),
            preemptible_pods=Count("id", filter=Q(preemptible=True)),
            sliced=Count("id", filter=~Q(mig_devices={})),
            created_at=Min("created"),
            started_at=Min("started", filter=Q(phase="Running")),
            waiting_since=Min("created", filter=Q(phase="Pending")),
            queue_label=Max("queue"),
            pool_label=Max("pool_name"),
            selector=Max(Cast("node_selector", TextField()), filter=Q(pool_name="")),
            submitter=Max("user"),
            priority=Max("priority_class"),
        )
        .order_by(*_ORDER)
    )


_PHASE_HAVING = {
    PENDING: Q(running=0, pending__gt=0),
    RUNNING: Q(running__gt=0, pending=0),
    PARTIALLY_RUNNING: Q(running__gt=0, pending__gt=0),
    SUCCEEDED: Q(running=0, pending=0, failed=0),
    FAILED: Q(running=0, pending=0, failed__gt=0),
}


def _figure(value) -> int | float:
    value = value if isinstance(value, Decimal) else Decimal(repr(value or 0))
    whole = int(value)
    return whole if whole == value else float(value)


def _time(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


@contextmanager
def _grouping() -> Iterator[None]:
    """Where the pods are grouped: on PostgreSQL, in a transaction with ``GROUPING_MEMORY`` to do it in."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL work_mem = '{GROUPING_MEMORY}'")
        yield


class WorkloadRows(Sequence):
    """The workloads ``user`` may see, filtered, GPU holders first: a lazy sequence (see the module docstring).

    Its length is one grouped ``COUNT``; a slice is two passes: the workloads' keys in order (``_ordered``: sums
    and counts only), then every figure of those workloads alone (``_grouped`` over their pods)."""

    def __init__(
        self,
        pods,
        having: Q,
        *,
        pools,
        projects,
        backends: dict[int, str],
        reason: str = "",
        shown=None,
        sums=None,
        judged: bool = True,
    ):
        self._pods, self._having, self._shown, self._sums = pods, having, shown, sums
        self._judged = judged
        # The verdicts of the pending workloads of the rows read so far, by key (a workload's page reuses its own).
        self.verdicts: dict[tuple, dict] = {}
        self._pools, self._projects, self._backends = pools, projects, backends
        self._reason = reason
        self._count: int | None = None
        self._all: list[dict] | None = None
        self._peeked: tuple[int, int | None, list[dict]] | None = None

    def _everything(self) -> list[dict]:
        if self._all is None:
            with _grouping():
                groups = list(_grouped(self._pods).filter(self._having))
            rows = self._rows(groups)
            self._all = [row for row in rows if not self._reason or row["reason"] == self._reason]
        return self._all

    def __len__(self) -> int:
        if self._reason:
            return len(self._everything())
        if self._count is None:
            self._ordered_page(slice(0, PEEK))
        if self._count is None:
            with _grouping():
                self._count = self._ordering().count()
        return self._count

    def _ordering(self):
        """The workloads' keys and sums in their order: read from ``WorkloadSums`` where those serve the reader and
        the filters, else grouped from the pods."""
        if self._sums is not None:
            return self._sums.filter(self._having).values(*_GROUP, *_SUMS).order_by(*_ORDER)
        return _ordered(self._pods).filter(self._having)

    def _ordered_page(self, index: slice) -> list[dict]:
        """The keys and sums of the workloads of ``index``, in order, with how many there are in all (one grouping
        of the pods: ``COUNT(*) OVER ()``), kept for the slice asked next: a paginator counts, then slices."""
        start, stop = index.start or 0, index.stop
        if self._peeked is not None and self._peeked[:2] == (start, stop):
            return self._peeked[2]
        if self._sums is not None:  # an index gives the page in order; the count is a second, cheap query
            groups = list(self._ordering()[index])
            if start == 0 and stop is not None and len(groups) < stop:
                self._count = len(groups)
        else:
            ordered = self._ordering().annotate(total=Window(Count(Value(1))))
            with _grouping():
                groups = list(ordered[index])
            if groups:
                self._count = groups[0]["total"]
            elif start == 0:
                self._count = 0
        self._peeked = (start, stop, groups)
        return groups

    def count(self, value=None) -> int:  # what DRF's pagination asks a queryset for
        return len(self) if value is None else super().count(value)

    def __getitem__(self, index):
        if self._reason or self._all is not None:
            return self._everything()[index]
        if isinstance(index, slice):
            if index.step not in (None, 1) or (index.start or 0) < 0 or (index.stop is not None and index.stop < 0):
                return self._everything()[index]
            keys = [tuple(group[field] for field in _GROUP) for group in self._ordered_page(index)]
            if not keys:
                return []
            found = {
                tuple(group[field] for field in _GROUP): group
                for group in _grouped(self._pods.filter(workload_key_condition(keys)))
            }
            return self._rows([found[key] for key in keys if key in found])
        rows = self[index : index + 1] if index >= 0 else self._everything()[index : index + 1 or None]
        if not rows:
            raise IndexError(index)
        return rows[0]

    def __iter__(self):
        return iter(self._everything())

    def _judge(self, keys: list[tuple]) -> dict[tuple, dict]:
        """The verdicts of the pending workloads ``keys``: a page's few judged on their own pools only, a whole list's
        (a reason filter, an export) with every pool of their backends."""
        if not keys or not self._judged:
            return {}
        found = verdicts_of(keys)
        self.verdicts.update(found)
        return found

    def _rows(self, groups: list[dict]) -> list[dict]:
        """The rows of ``groups`` (as ``_grouped`` gives them): their pools, MIG slices, projects and verdicts."""
        if not groups:
            return []
        keys = [tuple(group[field] for field in _GROUP) for group in groups]
        node_pools, slices = _pods_details(
            [key for key, group in zip(keys, groups, strict=True) if not group["pool_label"]],
            [key for key, group in zip(keys, groups, strict=True) if group["sliced"]],
            self._pools,
        )
        verdicts = self._judge([key for key, group in zip(keys, groups, strict=True) if group["pending"]])
        label_pools = {
            (backend_id, node_label["key"], node_label["value"]): name
            for _, name, backend_id, node_label in self._pools
            if node_label and node_label.get("key")
        }
        owner = {namespace: project for project, namespaces in self._projects.items() for namespace in namespaces}
        rows = []
        for key, group in zip(keys, groups, strict=True):
            backend_id, namespace, kind, name = key
            label = group["queue_label"]
            verdict = verdicts.get(key) if group["pending"] else None
            rows.append(
                {
                    "backend": self._backends.get(backend_id, ""),
                    "namespace": namespace,
                    "name": name,
                    "kind": kind,
                    "project": label if label in self._projects else owner.get(namespace, ""),
                    "pools": _pools_of(group, backend_id, label_pools, node_pools.get(key, ()), self._shown),
                    "user": group["submitter"] or namespace,
                    "priority_class": group["priority"] or "",
                    "preemptible": group["preemptible_pods"] == group["pods"],
                    "gpus": _figure(group["gpus"]),
                    "gpus_held": _figure(group["held"]),
                    "mig": slices.get(key, {}),
                    "pods": {
                        "running": group["running"],
                        "pending": group["pending"],
                        "done": group["done"],
                        "total": group["pods"],
                    },
                    "phase": workload_phase(
                        group["running"], group["pending"], group["done"] - group["failed"], group["failed"]
                    ),
                    "reason": (verdict or {}).get("reason", ""),
                    "created": _time(group["created_at"]),
                    "started": _time(group["started_at"]),
                    "waiting_since": _time(group["waiting_since"]),
                    "likely_start": ((verdict or {}).get("start") or {}).get("likely"),
                    "late_start": ((verdict or {}).get("start") or {}).get("late"),
                }
            )
            rows[-1]["pool"] = ", ".join(rows[-1]["pools"])
        return rows


def _pools_of(group: dict, backend_id: int, label_pools: dict, on_nodes, shown: set | None) -> list[str]:
    """A workload's pools (§10): its pool label, else the label pool its ``nodeSelector`` asks for, else its nodes'
    (of ``shown``, the (backend id, name) of the pools the reader may see, unless None)."""
    if group["pool_label"]:
        visible_label = shown is None or (backend_id, group["pool_label"]) in shown
        return [group["pool_label"]] if visible_label else []
    if group["selector"]:
        try:
            pairs = json.loads(group["selector"])
        except (TypeError, ValueError):
            pairs = {}
        if isinstance(pairs, dict):
            for pair in sorted(pairs.items()):
                pool = label_pools.get((backend_id, *pair))
                if pool:
                    return [pool]
    return sorted(on_nodes)


def _pods_details(unplaced_keys, sliced_keys, pools) -> tuple[dict, dict]:
    """For the workloads of a page: the pools of the nodes of those without a pool label or selector, and the MIG
    slices (profile -> count) of those asking for some. Two queries at most, over those workloads' pods only."""
    node_pools: dict[tuple, set[str]] = {}
    if unplaced_keys:
        names = {pool_id: name for pool_id, name, _, _ in pools}
        placed = set(
            Pod.objects.filter(workload_key_condition(unplaced_keys))
            .exclude(node_name="")
            .values_list(*_GROUP, "node_name")
            .distinct()
        )
        wanted = {(key[0], key[4]) for key in placed}
        of_node: dict[tuple[int, str], set[str]] = {}
        for backend_id, node_name, pool_id in NodeMembership.objects.filter(
            node__backend_id__in={backend_id for backend_id, _ in wanted},
            node__name__in={node_name for _, node_name in wanted},
        ).values_list("node__backend_id", "node__name", "pool_id"):
            if pool_id in names:
                of_node.setdefault((backend_id, node_name), set()).add(names[pool_id])
        for *key, node_name in placed:
            node_pools.setdefault(tuple(key), set()).update(of_node.get((key[0], node_name), ()))
    slices: dict[tuple, dict[str, int]] = {}
    if sliced_keys:
        for *key, devices in (
            Pod.objects.filter(workload_key_condition(sliced_keys))
            .exclude(mig_devices={})
            .values_list(*_GROUP, "mig_devices")
        ):
            profiles = slices.setdefault(tuple(key), {})
            for profile, count in (devices or {}).items():
                profiles[profile] = profiles.get(profile, 0) + int(count)
    return node_pools, slices


def _one(filters: Mapping, key: str) -> str:
    value = filters.get(key) if hasattr(filters, "get") else None
    return str(value).strip() if value not in (None, "") else ""


def workloads_visible(
    *, user, filters: Mapping | None = None, key: tuple[str, str] | None = None, judged: bool = True
) -> WorkloadRows:
    """The workloads ``user`` may see, as ``WorkloadRows``; ``filters``: pool, project, user, phase, reason,
    pending (``1``/``true``), backend, namespace. A bad filter value is a ``ConfigError`` naming it; a pool or
    project ``user`` may not see (or that does not exist) leaves no row. ``key``: only the workloads of that
    ``(kind, name)``. ``judged=False`` leaves the verdicts out (the rows' ``reason`` is empty): whether a workload
    is seen does not depend on why it waits."""
    filters = filters or {}
    pools = _pools()
    projects = _projects()
    pods = _selection(Pod.objects.all())
    restriction = _restricted(user, pools, projects)
    if restriction is not None:
        pods = pods.filter(restriction)
    pool = _one(filters, "pool")
    if pool:
        pods = pods.filter(_in_pools([row for row in pools if row[1] == pool]))
    project = _one(filters, "project")
    if project:
        pods = pods.filter(_of_projects({project}, projects) if project in projects else Q(pk__in=[]))
    for field, column in (("user", "user"), ("backend", "backend__name"), ("namespace", "namespace")):
        value = _one(filters, field)
        if value:
            pods = pods.filter(**{column: value})
    if key is not None:
        pods = pods.filter(workload_kind=key[0], workload_name=key[1])
    having = Q()
    phase = _one(filters, "phase")
    if phase:
        matching = [known for known in PHASES if known.lower() == phase.lower()]
        if not matching:
            raise ConfigError(f"phase: '{phase}' is not one of {', '.join(PHASES)}")
        phase = matching[0]
        having &= _PHASE_HAVING[phase]
    pending = _one(filters, "pending").lower()
    if pending not in ("", "0", "1", "true", "false", "yes", "no"):
        raise ConfigError(f"pending: '{pending}' is not 1 or 0")
    reason = _one(filters, "reason")
    # A reader of the whole fleet, filtering by what a workload's sums hold: the order comes from WorkloadSums.
    sums = None
    if restriction is None and key is None and not (pool or project or _one(filters, "user")):
        sums = WorkloadSums.objects.all()
        for field, column in (("backend", "backend__name"), ("namespace", "namespace")):
            if _one(filters, field):
                sums = sums.filter(**{column: _one(filters, field)})
    if pending in ("1", "true", "yes"):
        having &= Q(pending__gt=0)
    elif pending in ("0", "false", "no"):
        having &= Q(pending=0)
    if pending in ("1", "true", "yes") or reason or phase in (PENDING, PARTIALLY_RUNNING):
        # Only the pods of workloads with a pending pod are grouped: a few thousand of 150,000.
        waiting = Pod.objects.filter(
            phase="Pending",
            backend_id=OuterRef("backend_id"),
            namespace=OuterRef("namespace"),
            workload_kind=OuterRef("workload_kind"),
            workload_name=OuterRef("workload_name"),
        )
        pods = pods.filter(Exists(waiting))
    backends = dict(Backend.objects.values_list("id", "name"))
    shown = None
    if not is_system(user):  # a row names only the pools its reader may see
        names = set(visible(user, VIEW_POOL, [name for _, name, _, _ in pools]))
        pools = [pool for pool in pools if pool[1] in names]
        shown = {(backend_id, name) for _, name, backend_id, _ in pools}
    return WorkloadRows(
        pods,
        having,
        pools=pools,
        projects=projects,
        backends=backends,
        reason=reason,
        shown=shown,
        sums=sums,
        judged=judged or bool(reason),
    )


def workload_missing(backend: str | None, namespace: str, name: str) -> str:
    """The words for a workload that does not exist, or that the caller may not see."""
    where = f" on backend '{backend}'" if backend else ""
    return f"workload '{namespace}/{name}' does not exist{where}"


def workload_seen(*, user, backend: str | None, namespace: str, name: str) -> bool:
    """Whether ``user`` sees a workload of that name (the gate's question before a workload's door)."""
    try:
        workload_get(user=user, backend=backend, namespace=namespace, name=name, detail=False)
    except NotFound:
        return False
    except ConfigError:  # on several backends: the door says which to name
        return True
    return True


def workload_get(*, user, backend: str | None, namespace: str, name: str, detail: bool = True) -> dict:
    """One workload ``user`` may see, with its pods, nodes, verdict, victims and the history of its phases.

    Without ``backend``, the one backend where ``user`` sees a workload of that name (a ``ConfigError`` naming them
    when there are several). ``NotFound`` when there is no such workload or ``user`` may not see it, in the same
    words."""
    missing = NotFound(workload_missing(backend, namespace, name))
    backends = dict(Backend.objects.values_list("id", "name"))
    if backend:
        backends = {pk: known for pk, known in backends.items() if known == backend}
    candidates = sorted(
        set(
            Pod.objects.filter(backend_id__in=list(backends), namespace=namespace, workload_name=name).values_list(
                "backend_id", "workload_kind"
            )
        ),
        key=lambda pair: (backends[pair[0]], kind_rank(pair[1])),
    )
    found: dict[int, tuple[dict, str, dict | None]] = {}
    for backend_id, kind in candidates:
        if backend_id in found:
            continue
        filters = {"backend": backends[backend_id], "namespace": namespace}
        # the first row, not list(): that would ask the rows' length first, a grouping of its own
        rows = workloads_visible(user=user, filters=filters, key=(kind, name), judged=detail)
        seen = next(iter(rows), None)
        if seen is not None:
            found[backend_id] = (seen, kind, rows.verdicts.get((backend_id, namespace, kind, name)))
    if not found:
        raise missing
    if len(found) > 1:
        names = ", ".join(sorted(backends[pk] for pk in found))
        raise ConfigError(f"backend: workload '{namespace}/{name}' exists on backends {names}; name one")
    backend_id, (row, kind, verdict) = next(iter(found.items()))
    return _detail(row, backend_id, kind, verdict) if detail else row


def _detail(row: dict, backend_id: int, kind: str, verdict: dict | None) -> dict:
    pods = list(
        Pod.objects.filter(
            backend_id=backend_id, namespace=row["namespace"], workload_kind=kind, workload_name=row["name"]
        )
        .order_by("name")
        .values(
            "name",
            "node_name",
            "phase",
            "gpu",
            "mig_devices",
            "created",
            "started",
            "scheduled_reason",
            "scheduled_message",
            "owner_kind",
            "owner_name",
        )
    )
    return {
        **row,
        "pod_list": [
            {
                "name": pod["name"],
                "node": pod["node_name"],
                "phase": pod["phase"],
                "gpus": _figure(pod["gpu"]),
                "mig": pod["mig_devices"] or {},
                "created": _time(pod["created"]),
                "started": _time(pod["started"]),
                "scheduled_reason": pod["scheduled_reason"],
                "scheduled_message": pod["scheduled_message"],
                "owner": f"{pod['owner_kind']}/{pod['owner_name']}" if pod["owner_kind"] else "",
            }
            for pod in pods
        ],
        "nodes": sorted({pod["node_name"] for pod in pods if pod["node_name"]}),
        "verdict": verdict,
        "victims": (verdict or {}).get("victims", []),
        "history": phase_history(pods),
    }


def phase_history(pods: Sequence[Mapping]) -> list[dict]:
    """The phases a workload went through, from its pods' times: created, then each start of a pod, ending in the
    phase its counts give; each step with when it began (ISO 8601) and what began it."""
    events: list[tuple] = []
    for pod in pods:
        if pod.get("created"):
            events.append((pod["created"], 0, pod["name"]))
        if pod.get("started") and pod.get("phase") != "Pending":
            events.append((pod["started"], 1, pod["name"]))
    events.sort()
    total = len(pods)
    created = running = 0
    history: list[dict] = []
    for at, what, pod_name in events:
        if what == 0:
            created += 1
        else:
            running += 1
        phase = workload_phase(running, max(0, created - running))
        if not history or history[-1]["phase"] != phase:
            history.append(
                {
                    "phase": phase,
                    "at": _time(at),
                    "event": f"pod {pod_name} {'created' if what == 0 else 'started'}",
                    "pods": f"{running}/{total} running",
                }
            )
        else:
            history[-1]["pods"] = f"{running}/{total} running"
    return history
