"""Who belongs to which department and project (SEMANTICS §9.4), and the My projects view of a member.

Membership is part of each unit's config (``members``); this module reads it for one user: the units they belong
to (``units_of``, ``projects_of``), the roles the gate counts for them (``membership_roles``, plugged into
``accounts.access`` by ``pools.apps``), and what their units hold and wait for on each pool (``my_projects``), whose
figures are ``quota_report``'s own rows, never recomputed here.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import CharField, Count, Max, Min, Q, Sum, Value
from django.db.models.fields.json import KT

from accounts.access import is_system

from ..engine.members import DEPARTMENT, PROJECT, Identity, Membership, membership_policies, memberships
from ..engine.policy import RoleDefinition
from ..models import Department, Pod, Pool, Project
from .quotas import QUEUE_LABEL, quota_report

# The name the gate gives what memberships allow (in a decision's reason); no role can be named so (NAME_RE).
MEMBERSHIP_ROLE = "(membership)"
_CACHE = "_gpupool_memberships"


def _signed_in(user) -> bool:
    return user is not None and not is_system(user) and user.is_authenticated and user.is_active


def _identity(user) -> Identity:
    """``user`` as membership matches it: username, service account or person, the provider's groups. One query."""
    row = (
        get_user_model().objects.filter(pk=user.pk).values("service_account__id", "external_identity__groups").first()
        or {}
    )
    groups = row.get("external_identity__groups") or []
    return Identity(
        username=user.get_username(),
        service_account=row.get("service_account__id") is not None,
        groups=frozenset(group for group in groups if isinstance(group, str)),
    )


def _memberships(user) -> tuple[list[Membership], dict[str, list[str]]]:
    """The units ``user`` belongs to, and the projects of each department among them; cached on the user object
    for the request. One query when no unit has members (what every request pays), two otherwise, whatever the
    number of units."""
    cached = getattr(user, _CACHE, None)
    if cached is not None:
        return cached
    # The departments with members, and the projects with members or of such a department, in one query.
    no_department = Value("", output_field=CharField())
    departments_listed = (
        Department.objects.exclude(members=[])
        .order_by()
        .values_list(Value(DEPARTMENT, output_field=CharField()), "name", no_department, "members")
    )
    projects_listed = (
        Project.objects.filter(~Q(members=[]) | ~Q(department__members=[]))
        .order_by()
        .values_list(Value(PROJECT, output_field=CharField()), "name", "department__name", "members")
    )
    departments: dict[str, list] = {}
    projects: dict[str, tuple[str, list]] = {}
    for kind, name, department, members in departments_listed.union(projects_listed, all=True):
        if kind == DEPARTMENT:
            departments[name] = members
        else:
            projects[name] = (department, members)
    found: list[Membership] = []
    if departments or projects:
        found = memberships(_identity(user), departments, projects)
    department_projects: dict[str, list[str]] = {}
    for name, (department, _) in sorted(projects.items()):
        if department in departments:
            department_projects.setdefault(department, []).append(name)
    setattr(user, _CACHE, (found, department_projects))
    return found, department_projects


def forget_memberships(user) -> None:
    """Drop what was read of ``user``'s memberships (after a change of members made in the same request)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def membership_roles(user) -> list[RoleDefinition]:
    """What ``user``'s memberships allow, as one role the gate counts with the roles they hold (SEMANTICS §9.4):
    every member sees their unit (a department's, its projects too); a department's admin manages it."""
    if not _signed_in(user):
        return []
    found, department_projects = _memberships(user)
    policies = membership_policies(found, department_projects)
    return [RoleDefinition(name=MEMBERSHIP_ROLE, policies=policies)] if policies else []


def units_of(user) -> list[dict]:
    """The departments, then the projects, ``user`` belongs to, by name: ``{"kind", "name", "role", "via"}``
    (``via``: the department a project's membership comes from, when not listed in the project itself)."""
    if not _signed_in(user):
        return []
    return [membership.as_dict() for membership in _memberships(user)[0]]


def projects_of(user) -> set[str]:
    """The names of the projects ``user`` belongs to: listed in the project, in one of the provider's groups it
    lists (whole values), as a service account it lists, or a member of its department (any role)."""
    return {unit["name"] for unit in units_of(user) if unit["kind"] == PROJECT}


def has_units(user) -> bool:
    """Whether ``user`` belongs to at least one department or project (what the My projects page is offered by)."""
    return bool(units_of(user))


def _pending_verdicts(keys: list[tuple]) -> dict:
    """Why each of these pending workloads waits (SEMANTICS §10), where the console decides it yet."""
    if not keys:
        return {}
    try:
        from .verdicts import verdicts_of
    except ImportError:
        return {}
    return verdicts_of(keys)


def _pending_workloads(projects: dict[str, list[str]], every_project: list[str]) -> dict[str, list[dict]]:
    """``project -> its pending workloads`` (pods waiting for a node, grouped by workload in the database): each
    with backend, namespace, kind, name, pool, user, GPUs, pods waiting and since when, and its reason. One query,
    and the verdicts' own."""
    if not projects:
        return {}
    label = f"labels__{QUEUE_LABEL}"
    owned = Q()
    for project, namespaces in projects.items():
        # A pod labelled runai/queue=<project> is that project's; else its namespace's project's (as §9 counts).
        own_namespace = Q(namespace__in=namespaces) & (
            ~Q(**{"labels__has_key": QUEUE_LABEL}) | ~Q(**{f"{label}__in": every_project})
        )
        owned |= Q(**{label: project}) | own_namespace
    rows = list(
        Pod.objects.filter(owned, node_name="", gpu__gt=0)
        .exclude(phase__in=("Succeeded", "Failed"))
        .values("backend_id", "backend__name", "namespace", "workload_kind", "workload_name")
        .annotate(
            gpus=Sum("gpu"),
            pods=Count("id"),
            user=Max("user"),
            pool=Max("pool_name"),
            queue=Max(KT(label)),
            since=Min("created"),
        )
        .order_by("since", "namespace", "workload_name")
    )
    owner = {namespace: project for project, namespaces in projects.items() for namespace in namespaces}
    verdicts = _pending_verdicts(
        [(row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"]) for row in rows]
    )
    found: dict[str, list[dict]] = {}
    for row in rows:
        project = row["queue"] if row["queue"] in projects else owner.get(row["namespace"])
        if project is None:
            continue
        key = (row["backend_id"], row["namespace"], row["workload_kind"], row["workload_name"])
        verdict = verdicts.get(key) or {}
        found.setdefault(project, []).append(
            {
                "backend": row["backend__name"],
                "namespace": row["namespace"],
                "kind": row["workload_kind"],
                "name": row["workload_name"],
                "pool": row["pool"] or "",
                "user": row["user"] or "",
                "gpus": float(row["gpus"]) if row["gpus"] != int(row["gpus"]) else int(row["gpus"]),
                "pods": row["pods"],
                "since": row["since"].isoformat() if row["since"] else None,
                "reason": verdict.get("reason", ""),
                "checks": verdict.get("checks", []),
                "victims": verdict.get("victims", []),
            }
        )
    return found


FIGURES = ("deserved", "limit", "fair_share", "allocated", "pending", "request", "over_quota", "over_fair_share")


def my_projects(*, user) -> list[dict]:
    """``user``'s departments and projects (``units_of``), each with its figures per pool and, for a project, its
    pending workloads with the reason each waits.

    Per unit and pool ``user`` may see: the row ``quota_report`` computes for it (deserved, limit, fair share,
    allocated, pending…), never recomputed. Each pending workload of a project is shown, the project's own; the
    pool it waits in is named only when ``user`` may see it (a hidden pool does not exist for them, §7.4). Nothing
    of another unit is shown.
    """
    units = units_of(user)
    if not units:
        return []
    names = {(unit["kind"], unit["name"]) for unit in units}
    rows: dict[tuple[str, str], list[dict]] = {}
    for row in quota_report(user=user)["quotas"]:
        key = (row["kind"], row["unit"])
        if key in names:
            rows.setdefault(key, []).append({"pool": row["pool"], **{figure: row[figure] for figure in FIGURES}})
    mine = Project.objects.filter(name__in=[name for kind, name in names if kind == PROJECT])
    project_rows = {
        name: (namespaces, department)
        for name, namespaces, department in mine.values_list("name", "namespaces", "department__name")
    }
    namespaces = {name: namespaces for name, (namespaces, _) in project_rows.items()}
    every_project = list(Project.objects.values_list("name", flat=True))
    pending = _pending_workloads(namespaces, every_project)
    shown_pools = set(Pool.objects.restrict(user).values_list("name", flat=True))
    for workloads in pending.values():
        for workload in workloads:
            if workload["pool"] not in shown_pools:
                workload["pool"] = ""
    department_of = {name: department for name, (_, department) in project_rows.items()}
    return [
        {
            **unit,
            "department": department_of.get(unit["name"], "") if unit["kind"] == PROJECT else unit["name"],
            "pools": rows.get((unit["kind"], unit["name"]), []),
            "pending_workloads": pending.get(unit["name"], []) if unit["kind"] == PROJECT else [],
        }
        for unit in units
    ]
