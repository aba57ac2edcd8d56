"""Departments, projects and their quotas per node pool (SEMANTICS §9), and the fair-share simulator planners use
before they change anything."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal

from django.db import connection
from django.db.models import Count

from accounts.access import visible

from ..configs.fields import DEFAULT_OVER_QUOTA_WEIGHT, DEFAULT_QUOTA_PRIORITY, department_body, project_body
from ..engine import fairshare, pastusage, reclaim
from ..engine.errors import NotFound
from ..engine.permissions import VIEW_DEPARTMENT, VIEW_POOL, VIEW_PROJECT
from ..models import Department, Node, NodeMembership, Pod, Pool, Project
from ..querysets import quotas_visible
from .project_usage import project_usage


def quota_simulate(document: Mapping) -> dict:
    """KAI's fair-share simulator (§9.1; §9.3 with ``k_value`` and each queue's ``usage``): ``{"capacity", "queues":
    [...]}`` in, ``{"fair_share": {name: n}}`` out.

    Reads and writes no data, so it needs nothing but a signed-in caller; ``POST /api/quotas/simulate/`` and
    ``poolctl quota simulate`` both answer with it. Bad input raises ``ConfigError`` naming each field.
    """
    return fairshare.simulate(document)


def quota_reclaim(document: Mapping) -> dict:
    """KAI's reclaim check (§9.2), what-if: ``{"queues", "reclaimer", "victims", "multiplier"}`` in,
    ``{"can_reclaim", "reclaimable", "reasons"}`` out.

    Reads and writes no data, like the simulator; ``POST /api/quotas/reclaim/`` and ``poolctl quota reclaim`` both
    answer with it. Bad input raises ``ConfigError`` naming each field.
    """
    return reclaim.reclaim(document)


def departments_queryset(*, user):
    """Departments ``user`` may read (the API's list and detail)."""
    return Department.objects.restrict(user)


def projects_queryset(*, user):
    """Projects ``user`` may read, with their department (the API's list and detail)."""
    return Project.objects.restrict(user).select_related("department")


def _quota_totals(resources: list[dict]) -> dict:
    """What a unit's quotas add up to over its node pools (``-1`` entries count as nothing)."""
    totals = {}
    for resource in ("gpu", "cpu", "memory"):
        totals[resource] = sum(max(0, entry[resource]["deserved"]) for entry in resources)
    return totals


def _unit_row(name: str, body: dict, created_at) -> dict:
    totals = _quota_totals(body["resources"])
    return {
        "name": name,
        "description": body["description"],
        "node_pools": [entry["nodePool"] for entry in body["resources"]],
        "gpu_quota": totals["gpu"],
        "cpu_quota": totals["cpu"],
        "memory_quota_mib": totals["memory"],
        "resources": body["resources"],
        "created_at": created_at.isoformat() if created_at else None,
    }


def departments_visible(*, user) -> list[dict]:
    """Every department ``user`` may see with its quotas and how many projects it has; two queries."""
    departments = Department.objects.restrict(user).annotate(project_count=Count("projects")).order_by("name")
    return [
        {**_unit_row(d.name, quotas_visible(user, department_body(d)), d.created_at), "projects": d.project_count}
        for d in departments
    ]


def projects_visible(*, user, department: str | None = None) -> list[dict]:
    """Every project ``user`` may see (of ``department`` when given) with its department, namespaces and quotas."""
    projects = Project.objects.restrict(user).select_related("department").order_by("name")
    if department:
        projects = projects.filter(department__name=department)
    return [
        {
            **_unit_row(p.name, quotas_visible(user, project_body(p)), p.created_at),
            "department": p.department.name,
            "namespaces": p.namespaces,
        }
        for p in projects
    ]


# --- figures per (unit, pool) (SEMANTICS §9) ---------------------------------------------------------------------

QUEUE_LABEL = "runai/queue"
# A unit's GPU quota on a pool, in the order of ``fairshare.Queue``'s fields: deserved, limit, over-quota weight,
# priority. A pool a unit has no entry for gives Run:ai's defaults.
NO_QUOTA = (0, -1, DEFAULT_OVER_QUOTA_WEIGHT, DEFAULT_QUOTA_PRIORITY)
SHARE_PLACES = Decimal("0.001")
ZERO = Decimal(0)
NOTHING_USED = (ZERO, ZERO)


def _figure(value: Decimal) -> int | float:
    """A summed GPU figure for JSON: an int when whole, else a float (fractions such as 0.5 stay exact)."""
    whole = int(value)
    return whole if whole == value else float(value)


def _sql(query: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            query.format(pod=Pod._meta.db_table, node=Node._meta.db_table, member=NodeMembership._meta.db_table), params
        )
        return cursor.fetchall()


def _gpus(value) -> Decimal:
    """A GPU sum as the database returns it (PostgreSQL: a Decimal; SQLite: a float, read by its shortest form)."""
    return value if isinstance(value, Decimal) else Decimal(repr(value or 0))


def _pool_capacity() -> dict[int, Decimal]:
    """Each pool's capacity: allocatable GPUs of its available nodes, each node once. One query."""
    rows = _sql(
        "SELECT m.pool_id, SUM(n.gpu) FROM (SELECT DISTINCT pool_id, node_id FROM {member}) m "
        "JOIN {node} n ON n.id = m.node_id WHERE n.available GROUP BY m.pool_id",
        [],
    )
    return {pool_id: _gpus(gpu) for pool_id, gpu in rows}


def _queue_label() -> tuple[str, str]:
    """The SQL reading a pod's ``runai/queue`` label, and its parameter, on this database."""
    if connection.vendor == "postgresql":
        return "p.labels ->> %s", QUEUE_LABEL
    return "json_extract(p.labels, %s)", f'$."{QUEUE_LABEL}"'


def _read_quotas(quotas: dict[str, dict[int, tuple]], position: int, resources: list[dict]) -> None:
    """Note in ``quotas`` (``pool -> unit position -> quota``, shaped as ``NO_QUOTA``) the GPU quotas of the unit at
    ``position`` from its ``resources``, on the pools ``quotas`` has."""
    for entry in resources:
        of_pool = quotas.get(entry["nodePool"])
        if of_pool is not None:
            gpu = entry["gpu"]
            of_pool[position] = (gpu["deserved"], gpu["limit"], gpu["overQuotaWeight"], entry["priority"])


def _usage(
    namespaces: dict[str, list[str]],
    pools: list[tuple[int, str, int]],
    label_pools: dict[tuple[int, str, str], int],
    *,
    some: bool = False,
) -> tuple[dict[int, dict[str, list[Decimal]]], dict[int, dict[str, int]]]:
    """``pool id -> project -> [allocated, pending]`` GPUs, and ``pool id -> project -> workloads`` (pods asking for
    GPUs); two queries, summed in the database.

    A project's workloads are the pods labelled ``runai/queue=<project>``, else those of its namespaces. A pod bound
    to a node (running, or still starting) counts as allocated in every pool holding its node (each pool once,
    whatever its platforms), as the scheduler counts it; a pending one (no node yet) in the pool its pool label
    names, else in the label pool its ``nodeSelector`` asks for (``label_pools``: (backend id, key, value) -> pool
    id). SQL of its own: the pods join their nodes by (backend, name), which the ORM cannot say, and 150,000 pods
    must be summed where they are, not read. ``some``: ``pools`` are some of the pools (one pool's report), whose
    members alone are joined.
    """
    labelled = {(backend_id, name): pool_id for pool_id, name, backend_id in pools}
    owner = {namespace: project for project, names in namespaces.items() for namespace in names}
    queue, key = _queue_label()
    selector = "p.node_selector::text" if connection.vendor == "postgresql" else "p.node_selector"
    # The pool members lead and find their nodes' pods by name: ``+`` keeps the planners (SQLite's, and
    # PostgreSQL's before an ANALYZE) from looking them up by backend, which every pod shares, instead.
    members, ids = "SELECT DISTINCT node_id, pool_id FROM {member}", []
    if some:
        ids = [pool_id for pool_id, _, _ in pools]
        members += f" WHERE pool_id IN ({', '.join(['%s'] * len(ids))})"
    running = _sql(
        f"SELECT p.namespace, {queue}, m.pool_id, SUM(p.gpu), COUNT(*) FROM ({members}) m "
        "JOIN {node} n ON n.id = m.node_id JOIN {pod} p ON p.node_name = n.name AND +p.backend_id = n.backend_id "
        f"WHERE p.phase NOT IN ('Succeeded', 'Failed') AND p.gpu > 0 GROUP BY p.namespace, {queue}, m.pool_id",
        [key, *ids, key],
    )
    pending = _sql(
        f"SELECT p.namespace, {queue}, p.backend_id, p.pool_name, {selector}, SUM(p.gpu), COUNT(*) FROM {{pod}} p "
        f"WHERE p.node_name = '' AND p.gpu > 0 GROUP BY p.namespace, {queue}, p.backend_id, p.pool_name, {selector}",
        [key, key],
    )
    used: dict[int, dict[str, list[Decimal]]] = {pool_id: {} for pool_id, _, _ in pools}
    workloads: dict[int, dict[str, int]] = {pool_id: {} for pool_id, _, _ in pools}

    def add(namespace: str, label: str | None, pool_id: int | None, slot: int, gpu, count: int) -> None:
        project = label if label in namespaces else owner.get(namespace)
        if project is not None and pool_id in used:
            used[pool_id].setdefault(project, [ZERO, ZERO])[slot] += _gpus(gpu)
            workloads[pool_id][project] = workloads[pool_id].get(project, 0) + count

    for namespace, label, pool_id, gpu, count in running:
        add(namespace, label, pool_id, 0, gpu, count)
    for namespace, label, backend_id, pool_name, node_selector, gpu, count in pending:
        pool_id = labelled.get((backend_id, pool_name))
        if pool_id is None and label_pools and node_selector not in (None, "", "{}"):
            pool_id = _selected_pool(backend_id, node_selector, label_pools)
        add(namespace, label, pool_id, 1, gpu, count)
    return used, workloads


def project_allocations() -> dict[int, tuple[float, dict[str, float]]]:
    """Per backend: its capacity (allocatable GPUs of its available nodes) and the GPUs each project's running pods
    hold on it, every pod once: what one minute of time-based fair share's history records (SEMANTICS §9.3). Two
    queries, summed in the database; a project's pods as ``_usage`` finds them."""
    namespaces = dict(Project.objects.values_list("name", "namespaces"))
    owner = {namespace: project for project, names in namespaces.items() for namespace in names}
    queue, key = _queue_label()
    held = _sql(
        f"SELECT p.backend_id, p.namespace, {queue}, SUM(p.gpu) FROM {{pod}} p WHERE p.node_name <> '' "
        f"AND p.phase NOT IN ('Succeeded', 'Failed') AND p.gpu > 0 GROUP BY p.backend_id, p.namespace, {queue}",
        [key, key],
    )
    capacity = _sql("SELECT backend_id, SUM(gpu) FROM {node} WHERE available GROUP BY backend_id", [])
    found = {backend_id: (float(gpus or 0), {}) for backend_id, gpus in capacity}
    for backend_id, namespace, label, gpus in held:
        project = label if label in namespaces else owner.get(namespace)
        if project is not None:
            allocated = found.setdefault(backend_id, (0.0, {}))[1]
            allocated[project] = allocated.get(project, 0.0) + float(gpus)
    return found


def _selected_pool(backend_id: int, node_selector, label_pools: dict[tuple[int, str, str], int]) -> int | None:
    """The label pool a waiting pod's ``nodeSelector`` asks for (a label pool's key and value among its pairs)."""
    pairs = json.loads(node_selector) if isinstance(node_selector, str) else node_selector
    if not isinstance(pairs, dict):
        return None
    for pair in sorted(pairs.items()):
        pool_id = label_pools.get((backend_id, *pair))
        if pool_id is not None:
            return pool_id
    return None


def quota_figures(*, user, pool: str | None = None) -> list[dict]:
    """One row per (department or project, pool) ``user`` may see, with every figure of SEMANTICS §9
    (``quota_report``'s rows)."""
    return quota_report(user=user, pool=pool)["quotas"]


def quota_warnings(*, user) -> list[str]:
    """SEMANTICS §9's warnings about what ``user`` may see, without the figures: what a change's answer carries."""
    units = _quota_units(user=user)
    if units is None:
        return []
    pools, _, capacity, quotas, _, _, members, seen, _ = units
    return _oversubscribed(pools, capacity, members, quotas, seen)


def _quota_units(*, user, pool: str | None = None):
    """What the figures and the warnings start from: the pools ``user`` may see (of ``pool`` only, when given), the
    label pools, the capacities, every unit's GPU quotas per pool, the departments, the projects, each
    department's projects' positions, the units ``user`` may see, and the time-based fair share settings of the
    pools' backends. None when there is no unit at all."""
    pool_rows = list(
        Pool.objects.order_by("name").values_list("id", "name", "backend_id", "node_label", "backend__fair_share")
    )
    shown_pools = set(visible(user, VIEW_POOL, [row[1] for row in pool_rows]))
    pools, label_pools, settings = [], {}, {}
    for pool_id, name, backend_id, node_label, fair_share in pool_rows:
        if name not in shown_pools:
            continue
        settings[backend_id] = fair_share
        pools.append((pool_id, name, backend_id))
        if node_label:
            label_pools[backend_id, node_label["key"], node_label["value"]] = pool_id
    if pool is not None:
        pools = [row for row in pools if row[1] == pool]
        if not pools:
            raise NotFound(f"pool '{pool}' does not exist")
    capacity = _pool_capacity()
    # Every unit, seen or not, at a position: the departments, then the projects, each in creation order. Their
    # ``resources`` are read one unit at a time and only the GPU quotas of the pools shown kept: held all at once,
    # the decoded JSON (tens of thousands of dicts) made the garbage collector walk the whole heap.
    quotas: dict[str, dict[int, tuple]] = {name: {} for _, name, _ in pools}
    departments = []
    for name, resources in Department.objects.order_by("created_at", "id").values_list("name", "resources").iterator():
        _read_quotas(quotas, len(departments), resources)
        departments.append(name)
    projects = []
    for name, department, namespaces, resources in (
        Project.objects.order_by("created_at", "id")
        .values_list("name", "department__name", "namespaces", "resources")
        .iterator()
    ):
        _read_quotas(quotas, len(departments) + len(projects), resources)
        projects.append((name, department, namespaces))
    if not departments and not projects:
        return None
    members: dict[str, list[int]] = {name: [] for name in departments}  # each department's projects' positions
    for position, (_, department, _) in enumerate(projects, start=len(departments)):
        members[department].append(position)
    seen = {("department", name) for name in visible(user, VIEW_DEPARTMENT, departments)}
    seen |= {("project", name) for name in visible(user, VIEW_PROJECT, [name for name, _, _ in projects])}
    settings = {backend_id: pastusage.read_settings(value)[1] for backend_id, value in settings.items()}
    return pools, label_pools, capacity, quotas, departments, projects, members, seen, settings


def quota_report(*, user, pool: str | None = None, what_if: pastusage.Settings | None = None) -> dict:
    """``{"quotas": rows, "warnings": [...]}``: one row per (department or project, pool) ``user`` may see, with
    every figure of SEMANTICS §9, and §9's warnings about what they may see (never refusals).

    Fair shares are computed per pool over every unit, seen or not (a share depends on its siblings), against
    the pool's capacity, with the pool's backend's time-based fair share (§9.3: its ``k_value`` and each unit's
    ``usage`` over its window); then the rows are cut to the units and pools ``user`` may see. A fixed number of
    queries, whatever the number of units, pools and pods.

    ``what_if`` (a planner's "with k = 1 and last week's usage"): each row also gets ``what_if_fair_share``, the
    share under those settings instead of the backend's, with the usage they read; nothing is written.
    """
    units = _quota_units(user=user, pool=pool)
    if units is None:
        return {"quotas": [], "warnings": []}  # no quota to divide, nothing to read: what /metrics costs without any
    pools, label_pools, capacity, quotas, departments, projects, members, seen, settings = units
    units = [("department", name, None) for name in departments]
    units += [("project", name, department) for name, department, _ in projects]
    used, workloads = _usage(
        {name: namespaces for name, _, namespaces in projects}, pools, label_pools, some=pool is not None
    )
    warnings = _oversubscribed(pools, capacity, members, quotas, seen)
    # What a unit's fair-share queue is whatever the pool: its name, its parent's, its creation order (by kind).
    identities = [(f"department/{name}", None, order) for order, name in enumerate(departments)]
    identities += [
        (f"project/{name}", f"department/{department}", order) for order, (name, department, _) in enumerate(projects)
    ]
    # The rows of a pool: each department, then its projects, those ``user`` may see. A department's position is
    # its place among the departments.
    shown = []  # (position, kind, name, department, parent's position)
    for top, (department, projects_of) in enumerate(members.items()):
        for position, parent in [(top, None), *((member, top) for member in projects_of)]:
            kind, name, _ = units[position]
            if (kind, name) in seen:
                shown.append((position, kind, name, department, parent))
    usage_of = project_usage(settings)
    planned = project_usage(dict.fromkeys(settings, what_if)) if what_if is not None else {}
    deserved_of = _ReadOnce(lambda deserved: Decimal(str(deserved)))
    # A fair share as a Decimal, and as a row shows it, by (numerator, denominator): a Fraction's own hash costs
    # more than the rest of a row.
    share_of = _ReadOnce(_share)
    rows = []
    for pool_id, pool_name, backend_id in pools:
        quota_of = quotas[pool_name]
        unit_quotas = [quota_of.get(position, NO_QUOTA) for position in range(len(units))]
        usages = _unit_usages(usage_of[backend_id], departments, projects, members)
        usage = used[pool_id]
        count_of = workloads[pool_id]
        department_count = (
            {
                department: sum(count_of.get(units[member][1], 0) for member in projects_of)
                for department, projects_of in members.items()
            }
            if count_of
            else {}
        )
        figures = [NOTHING_USED] * len(departments) + [
            tuple(usage[name]) if name in usage else NOTHING_USED for name, *_ in projects
        ]
        for department, projects_of in enumerate(members.values()):
            parts = [figures[member] for member in projects_of if figures[member] is not NOTHING_USED]
            if parts:
                figures[department] = (sum(a for a, _ in parts), sum(p for _, p in parts))
        # The usages go in only when the backend's k reads them (k 0 is §9.1 whatever the usage).
        queues = [
            fairshare.Queue(name, parent, *quota, allocated + pending, order, usage)
            for (name, parent, order), quota, (allocated, pending), usage in zip(
                identities, unit_quotas, figures, usages if settings[backend_id].k else [0] * len(units), strict=True
            )
        ]
        amount = capacity.get(pool_id, ZERO)
        shares = [
            share_of[share.numerator, share.denominator]
            for share in fairshare.fair_shares(amount, queues, k_value=settings[backend_id].k).values()
        ]
        if what_if is not None:
            planned_usages = _unit_usages(planned[backend_id], departments, projects, members)
            planned_shares = [
                share_of[share.numerator, share.denominator][1]
                for share in fairshare.fair_shares(
                    amount,
                    [queue._replace(usage=usage) for queue, usage in zip(queues, planned_usages, strict=True)],
                    k_value=what_if.k,
                ).values()
            ]
        for position, kind, name, department, parent in shown:
            deserved_as_given, limit, weight, priority = unit_quotas[position]
            allocated, pending = figures[position]
            share, fair_share = shares[position]  # the queues' order is the positions'
            # deserved -1 stands for the amount being divided: the pool for a department, its share for a project.
            if deserved_as_given != -1:
                deserved = deserved_of[deserved_as_given]
            else:
                deserved = amount if parent is None else shares[parent][0]
            rows.append(
                {
                    "unit": name,
                    "kind": kind,
                    "department": department,
                    "pool": pool_name,
                    "deserved": deserved_as_given,
                    "limit": limit,
                    "over_quota_weight": weight,
                    "priority": priority,
                    "allocated": _figure(allocated) if allocated else 0,
                    "pending": _figure(pending) if pending else 0,
                    "request": _figure(allocated + pending) if allocated or pending else 0,
                    "allocation_ratio": (round(float(allocated / deserved), 4) if allocated else 0.0)
                    if deserved > 0
                    else None,
                    "over_quota": _figure(allocated - deserved) if allocated > deserved else 0,
                    "fair_share": fair_share,
                    "usage": usages[position],
                    "over_fair_share": _figure((allocated - share).quantize(SHARE_PLACES)) if allocated > share else 0,
                    "workloads": count_of.get(name, 0) if kind == "project" else department_count.get(name, 0),
                }
            )
            if what_if is not None:
                rows[-1]["what_if_usage"] = planned_usages[position]
                rows[-1]["what_if_fair_share"] = planned_shares[position]
    return {"quotas": rows, "warnings": warnings}


def _unit_usages(
    usage: dict[str, float], departments: list[str], projects: list[tuple], members: dict[str, list[int]]
) -> list[float]:
    """Each unit's usage by position (departments, then projects): a project's own, a department's its projects'
    sum (the same denominator at every level, §9.3)."""
    found = [0.0] * len(departments) + [usage.get(name, 0.0) for name, _, _ in projects]
    if usage:
        for top, projects_of in enumerate(members.values()):
            found[top] = round(min(1.0, sum(found[member] for member in projects_of)), pastusage.USAGE_PLACES)
    return found


def _share(fraction: tuple[int, int]) -> tuple[Decimal, int | float]:
    """A fair share given as (numerator, denominator): as a Decimal, and as the figure a row shows (to SHARE_PLACES)."""
    numerator, denominator = fraction
    share = Decimal(numerator) / Decimal(denominator)
    return share, _figure(share.quantize(SHARE_PLACES))


class _ReadOnce(dict):
    """``read(key)`` for each key, worked out the first time it is asked for: rows repeat the same few numbers."""

    def __init__(self, read):
        super().__init__()
        self.read = read

    def __missing__(self, key):
        value = self[key] = self.read(key)
        return value


def _oversubscribed(pools, capacity, members: dict[str, list[int]], quotas, seen) -> list[str]:
    """SEMANTICS §9's warnings (never refusals), per pool: a department's projects deserving more than it does, and
    departments deserving more than the pool's capacity. Only about what the reader may see: the second only to
    those who see every department."""
    found = []
    every = all(("department", name) in seen for name in members)
    for pool_id, pool_name, _ in pools:
        quota_of = quotas[pool_name]
        deserved_of_departments = []
        for position, (name, projects) in enumerate(members.items()):
            deserved = quota_of.get(position, NO_QUOTA)[0]
            deserved_of_departments.append(deserved)
            if ("department", name) not in seen or deserved == -1:
                continue
            total = sum(max(0, quota_of.get(project, NO_QUOTA)[0]) for project in projects)
            if total > deserved:
                found.append(
                    f"pool '{pool_name}': the projects of department '{name}' deserve {total:g} GPUs, more than its "
                    f"{deserved:g}"
                )
        total = sum(max(0, deserved) for deserved in deserved_of_departments)
        amount = _figure(capacity.get(pool_id, ZERO))  # PostgreSQL's sum keeps the column's places: 8.000
        if every and total > amount:
            found.append(
                f"pool '{pool_name}' is over-subscribed: departments deserve {total:g} GPUs, its capacity is {amount:g}"
            )
    return found


def pool_quota_capacity() -> dict[str, int | float]:
    """Each pool's capacity as §9.1 counts it (allocatable GPUs of its available nodes), by pool name."""
    names = dict(Pool.objects.values_list("id", "name"))
    return {names[pool_id]: _figure(gpu) for pool_id, gpu in _pool_capacity().items() if pool_id in names}
