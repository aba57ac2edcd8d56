"""Departments, projects and their quotas per node pool (SEMANTICS §9), and the fair-share simulator planners use
before they change anything."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.db.models import Count, Sum
from django.db.models.fields.json import KeyTextTransform

from ..configs.fields import DEFAULT_OVER_QUOTA_WEIGHT, DEFAULT_QUOTA_PRIORITY, department_body, project_body
from ..engine import fairshare
from ..engine.errors import NotFound
from ..models import Department, NodeMembership, Pod, Pool, Project
from ..querysets import quotas_visible
from .gpuctl import number


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


def _gpu_quota(resources: list[dict], pool: str) -> tuple[dict, int]:
    """A unit's GPU quota on ``pool`` and its priority (Run:ai's defaults when it has no entry there)."""
    for entry in resources:
        if entry["nodePool"] == pool:
            return entry["gpu"], entry["priority"]
    return DEFAULT_GPU_QUOTA, DEFAULT_QUOTA_PRIORITY


def _pool_nodes() -> tuple[dict[int, Decimal], dict[tuple[int, str], set[int]]]:
    """Each pool's capacity (allocatable GPUs of its available nodes, each node once) and the pools of each
    (backend, node name). One query."""
    capacity: dict[int, Decimal] = {}
    pools_of: dict[tuple[int, str], set[int]] = {}
    seen: set[tuple[int, int]] = set()
    rows = NodeMembership.objects.values_list(
        "pool_id", "node_id", "node__backend_id", "node__name", "node__gpu", "node__available"
    )
    for pool_id, node_id, backend_id, node_name, gpu, available in rows:
        pools_of.setdefault((backend_id, node_name), set()).add(pool_id)
        if (pool_id, node_id) not in seen:
            seen.add((pool_id, node_id))
            capacity[pool_id] = capacity.get(pool_id, Decimal(0)) + (gpu if available else 0)
    return capacity, pools_of


def _usage(
    projects: dict, pools: list[tuple[int, str, int]], pools_of: dict[tuple[int, str], set[int]]
) -> dict[tuple[str, int], list[Decimal]]:
    """``(project, pool id) -> [allocated, pending]`` GPUs; one query (pods summed by what decides their project and
    pool).

    A project's workloads are the pods labelled ``runai/queue=<project>``, else those of its namespaces. A running
    pod counts in every pool holding its node; a pending one (no node yet) in the pool its pool label names.
    """
    shown = {pool_id for pool_id, _, _ in pools}
    labelled = {(backend_id, name): pool_id for pool_id, name, backend_id in pools}
    owner = {namespace: name for name, project in projects.items() for namespace in project.namespaces}
    groups = (
        Pod.objects.values("backend_id", "namespace", "node_name", "phase", "pool_name")
        .annotate(queue=KeyTextTransform(QUEUE_LABEL, "labels"), gpu=Sum("gpu"))
        .values_list("backend_id", "namespace", "node_name", "phase", "pool_name", "queue", "gpu")
    )
    used: dict[tuple[str, int], list[Decimal]] = {}
    for backend_id, namespace, node_name, phase, pool_name, queue, gpu in groups:
        project = queue if queue in projects else owner.get(namespace)
        if project is None or not gpu:
            continue
        if node_name:
            if phase != "Running":
                continue  # bound and starting: it counts once it runs
            targets, slot = pools_of.get((backend_id, node_name), ()), 0
        else:
            targets, slot = [labelled.get((backend_id, pool_name))], 1
        for pool_id in targets:
            if pool_id in shown:
                used.setdefault((project, pool_id), [Decimal(0), Decimal(0)])[slot] += gpu
    return used


def _decimal(value) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value.numerator) / Decimal(value.denominator)


def quota_figures(*, user, pool: str | None = None) -> list[dict]:
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
    capacity, pools_of = _pool_nodes()
    departments = {d.name: d for d in Department.objects.order_by("created_at", "id")}
    projects = {p.name: p for p in Project.objects.select_related("department").order_by("created_at", "id")}
    members: dict[str, list[str]] = {name: [] for name in departments}
    for name, project in projects.items():
        members[project.department.name].append(name)
    used = _usage(projects, pools, pools_of)
    seen = {
        "department": set(Department.objects.restrict(user).values_list("name", flat=True)),
        "project": set(Project.objects.restrict(user).values_list("name", flat=True)),
    }
    zero = (Decimal(0), Decimal(0))
    rows = []
    for pool_id, pool_name, _ in pools:
        figures = {("project", name): tuple(used.get((name, pool_id), zero)) for name in projects}
        for name, names in members.items():
            parts = [figures[("project", p)] for p in names]
            figures[("department", name)] = (sum(a for a, _ in parts), sum(p for _, p in parts))
        queues = []
        for kind, units in (("department", departments), ("project", projects)):
            for order, (name, unit) in enumerate(units.items()):
                quota, priority = _gpu_quota(unit.resources, pool_name)
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
                    "deserved": number(queue.deserved),
                    "limit": number(queue.limit),
                    "over_quota_weight": queue.over_quota_weight,
                    "priority": queue.priority,
                    "allocated": number(allocated),
                    "pending": number(pending),
                    "request": number(allocated + pending),
                    "allocation_ratio": round(float(allocated / deserved), 4) if deserved > 0 else None,
                    "over_quota": number(max(Decimal(0), allocated - deserved)),
                    "fair_share": number(share.quantize(SHARE_PLACES)),
                    "over_fair_share": number(max(Decimal(0), allocated - share).quantize(SHARE_PLACES)),
                }
            )
    return rows


SHARE_PLACES = Decimal("0.001")
