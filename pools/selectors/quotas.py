"""Departments, projects and their quotas per node pool (SEMANTICS §9), and the fair-share simulator planners use
before they change anything."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.db import connection
from django.db.models import Count

from ..configs.fields import DEFAULT_OVER_QUOTA_WEIGHT, DEFAULT_QUOTA_PRIORITY, department_body, project_body
from ..engine import fairshare
from ..engine.errors import NotFound
from ..models import Department, Node, NodeMembership, Pod, Pool, Project
from ..querysets import quotas_visible


def quota_simulate(document: Mapping) -> dict:
    """KAI's fair-share simulator (§9.1): ``{"capacity", "queues": [...]}`` in, ``{"fair_share": {name: n}}`` out.

    Reads and writes no data, so it needs nothing but a signed-in caller; ``POST /api/quotas/simulate/`` and
    ``poolctl quota simulate`` both answer with it. Bad input raises ``ConfigError`` naming each field.
    """
    return fairshare.simulate(document)


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
DEFAULT_GPU_QUOTA = {"deserved": 0, "limit": -1, "overQuotaWeight": DEFAULT_OVER_QUOTA_WEIGHT}


def _gpu_quotas(resources: list[dict]) -> dict[str, tuple[dict, int]]:
    """A unit's GPU quota and priority by pool (a pool it has no entry for gives Run:ai's defaults)."""
    return {entry["nodePool"]: (entry["gpu"], entry["priority"]) for entry in resources}


NO_QUOTA = (DEFAULT_GPU_QUOTA, DEFAULT_QUOTA_PRIORITY)


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


def _usage(projects: dict, pools: list[tuple[int, str, int]]) -> dict[tuple[str, int], list[Decimal]]:
    """``(project, pool id) -> [allocated, pending]`` GPUs; two queries, summed in the database.

    A project's workloads are the pods labelled ``runai/queue=<project>``, else those of its namespaces. A running
    pod counts in every pool holding its node (each pool once, whatever its platforms); a pending one (no node yet)
    in the pool its pool label names. SQL of its own: the pods join their nodes by (backend, name), which the ORM
    cannot say, and 150,000 pods must be summed where they are, not read.
    """
    shown = {pool_id for pool_id, _, _ in pools}
    labelled = {(backend_id, name): pool_id for pool_id, name, backend_id in pools}
    owner = {namespace: name for name, project in projects.items() for namespace in project.namespaces}
    queue, key = _queue_label()
    running = _sql(
        "SELECT namespace, queue, pool_id, SUM(gpu) FROM ("
        f"SELECT DISTINCT p.id, p.namespace AS namespace, {queue} AS queue, m.pool_id AS pool_id, p.gpu AS gpu "
        "FROM {pod} p JOIN {node} n ON n.backend_id = p.backend_id AND n.name = p.node_name "
        "JOIN {member} m ON m.node_id = n.id WHERE p.phase = 'Running' AND p.gpu > 0"
        ") pools GROUP BY namespace, queue, pool_id",
        [key],
    )
    pending = _sql(
        f"SELECT p.namespace, {queue}, p.backend_id, p.pool_name, SUM(p.gpu) FROM {{pod}} p "
        f"WHERE p.node_name = '' AND p.gpu > 0 GROUP BY p.namespace, {queue}, p.backend_id, p.pool_name",
        [key, key],
    )
    used: dict[tuple[str, int], list[Decimal]] = {}

    def add(namespace: str, label: str | None, pool_id: int | None, slot: int, gpu) -> None:
        project = label if label in projects else owner.get(namespace)
        if project is not None and pool_id in shown:
            used.setdefault((project, pool_id), [Decimal(0), Decimal(0)])[slot] += _gpus(gpu)

    for namespace, label, pool_id, gpu in running:
        add(namespace, label, pool_id, 0, gpu)
    for namespace, label, backend_id, pool_name, gpu in pending:
        add(namespace, label, labelled.get((backend_id, pool_name)), 1, gpu)
    return used


def _decimal(value) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value.numerator) / Decimal(value.denominator)


def quota_figures(*, user, pool: str | None = None, warnings: list[str] | None = None) -> list[dict]:
    """One row per (department or project, pool) ``user`` may see, with every figure of SEMANTICS §9.

    Fair shares are computed per pool over every unit, seen or not (a share depends on its siblings), against
    the pool's capacity; then the rows are cut to the units and pools ``user`` may see. A fixed number of
    queries, whatever the number of units, pools and pods.
    """
    pools = list(Pool.objects.restrict(user).order_by("name").values_list("id", "name", "backend_id"))
    if pool is not None:
        pools = [row for row in pools if row[1] == pool]
        if not pools:
            raise NotFound(f"pool '{pool}' does not exist")
    capacity = _pool_capacity()
    departments = {d.name: d for d in Department.objects.order_by("created_at", "id")}
    projects = {p.name: p for p in Project.objects.select_related("department").order_by("created_at", "id")}
    quotas = {
        (kind, name): _gpu_quotas(unit.resources)
        for kind, units in (("department", departments), ("project", projects))
        for name, unit in units.items()
    }
    members: dict[str, list[str]] = {name: [] for name in departments}
    for name, project in projects.items():
        members[project.department.name].append(name)
    used = _usage(projects, pools)
    seen = {
        "department": set(Department.objects.restrict(user).values_list("name", flat=True)),
        "project": set(Project.objects.restrict(user).values_list("name", flat=True)),
    }
    zero = (Decimal(0), Decimal(0))
    rows = []
    if warnings is not None:
        warnings.extend(_oversubscribed(pools, capacity, members, quotas, seen))
    for pool_id, pool_name, _ in pools:
        figures = {("project", name): tuple(used.get((name, pool_id), zero)) for name in projects}
        for name, names in members.items():
            parts = [figures[("project", p)] for p in names]
            figures[("department", name)] = (sum(a for a, _ in parts), sum(p for _, p in parts))
        queues = []
        for kind, units in (("department", departments), ("project", projects)):
            for order, (name, unit) in enumerate(units.items()):
                quota, priority = quotas[(kind, name)].get(pool_name, NO_QUOTA)
                queues.append(
                    fairshare.Queue(
                        name=f"{kind}/{name}",
                        parent=f"department/{unit.department.name}" if kind == "project" else None,
                        deserved=quota["deserved"],
                        limit=quota["limit"],
                        over_quota_weight=quota["overQuotaWeight"],
                        priority=priority,
                        request=sum(figures[(kind, name)]),
                        creation_order=order,
                    )
                )
        amount = capacity.get(pool_id, Decimal(0))
        shares = {name: _decimal(share) for name, share in fairshare.fair_shares(amount, queues).items()}
        by_name = {queue.name: queue for queue in queues}
        ordered = [
            by_name[unit]
            for department, names in members.items()
            for unit in (f"department/{department}", *(f"project/{project}" for project in names))
        ]
        for queue in ordered:  # each department, then its projects
            kind, _, name = queue.name.partition("/")
            if name not in seen[kind]:
                continue
            allocated, pending = figures[(kind, name)]
            share = shares[queue.name]
            # deserved -1 stands for the amount being divided: the pool for a department, its share for a project.
            whole = amount if kind == "department" else shares[queue.parent]
            deserved = whole if queue.deserved == -1 else Decimal(str(queue.deserved))
            rows.append(
                {
                    "unit": name,
                    "kind": kind,
                    "department": name if kind == "department" else projects[name].department.name,
                    "pool": pool_name,
                    "deserved": queue.deserved,
                    "limit": queue.limit,
                    "over_quota_weight": queue.over_quota_weight,
                    "priority": queue.priority,
                    "allocated": _figure(allocated),
                    "pending": _figure(pending),
                    "request": _figure(allocated + pending),
                    "allocation_ratio": round(float(allocated / deserved), 4) if deserved > 0 else None,
                    "over_quota": _figure(max(ZERO, allocated - deserved)),
                    "fair_share": _figure(share.quantize(SHARE_PLACES)),
                    "over_fair_share": _figure(max(ZERO, allocated - share).quantize(SHARE_PLACES)),
                }
            )
    return rows


def _oversubscribed(pools, capacity, members: dict[str, list[str]], quotas, seen) -> list[str]:
    """SEMANTICS §9's warnings (never refusals), per pool: a department's projects deserving more than it does, and
    departments deserving more than the pool's capacity. Only about what the reader may see: the second only to
    those who see every department."""
    found = []
    every = len(seen["department"]) == len(members)
    for pool_id, pool_name, _ in pools:
        deserved = {key: quota.get(pool_name, NO_QUOTA)[0]["deserved"] for key, quota in quotas.items()}
        for name, projects in members.items():
            if name not in seen["department"] or deserved[("department", name)] == -1:
                continue
            total = sum(max(0, deserved[("project", project)]) for project in projects)
            if total > deserved[("department", name)]:
                found.append(
                    f"pool '{pool_name}': the projects of department '{name}' deserve {total:g} GPUs, more than its "
                    f"{deserved[('department', name)]:g}"
                )
        total = sum(max(0, deserved[("department", name)]) for name in members)
        amount = _figure(capacity.get(pool_id, ZERO))  # PostgreSQL's sum keeps the column's places: 8.000
        if every and total > amount:
            found.append(
                f"pool '{pool_name}' is over-subscribed: departments deserve {total:g} GPUs, its capacity is {amount:g}"
            )
    return found


SHARE_PLACES = Decimal("0.001")
ZERO = Decimal(0)
