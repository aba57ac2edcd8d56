"""Departments and projects as the quota pages show them: Run:ai's projects and departments tables, the quota
grid (units x pools) and a pool's quota dashboard.

Every figure comes from ``quota_figures`` (SEMANTICS §9), the one function the API, ``poolctl`` and ``/metrics``
read too; this module only groups its rows per unit or per pool, so a page never computes a figure of its own.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from accounts.access import SYSTEM

from .. import gate
from ..choices import ConfigType, UnitStatus
from ..configs import body_etag, department_body, project_body
from ..engine import pastusage
from ..engine.errors import ConfigError, NotFound
from ..models import Department, Pool, Project, UsageSample
from .capacity import usage_series
from .configs import config_object
from .project_usage import fair_share_what_if
from .quotas import departments_visible, pool_quota_capacity, projects_visible, quota_figures, quota_report

BELOW_ABOVE_SHOWN = 5


def _ratio(allocated: float, deserved: float) -> float | None:
    return round(allocated / deserved, 4) if deserved > 0 else None


def _sum(values) -> int | float:
    total = sum((Decimal(str(value)) for value in values), Decimal(0))
    return int(total) if total == int(total) else float(total)


def _unit_status(allocated, pending, quota) -> str:
    """How a unit stands over the pools shown, by the totals its row shows (``UnitStatus``): holding more GPUs
    than its quota adds up to (the excess is preemptible), waiting for GPUs, running within it, or idle."""
    if allocated > quota:
        return UnitStatus.OVER_QUOTA
    if pending > 0:
        return UnitStatus.WAITING
    if allocated > 0:
        return UnitStatus.WITHIN_QUOTA
    return UnitStatus.IDLE


def _per_unit(rows: list[dict], kind: str) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row["kind"] == kind:
            grouped[row["unit"]].append(row)
    return grouped


def _totals(figures: list[dict]) -> dict:
    """A unit's GPU figures added up over its pools (a deserved of -1, the whole amount, counts as nothing)."""
    deserved = _sum(max(0, row["deserved"]) for row in figures)
    allocated = _sum(row["allocated"] for row in figures)
    pending = _sum(row["pending"] for row in figures)
    return {
        "node_pools": [row["pool"] for row in figures if row["deserved"] != 0],
        "gpu_quota": deserved,
        "allocated_gpus": allocated,
        "pending_gpus": pending,
        "allocation_ratio": _ratio(allocated, deserved),
        "over_quota_gpus": _sum(row["over_quota"] for row in figures),
        "fair_share_gpus": _sum(row["fair_share"] for row in figures),
        "workloads": sum(row["workloads"] for row in figures),
        "status": _unit_status(allocated, pending, deserved),
    }


def project_table(*, user, department: str | None = None) -> list[dict]:
    """Run:ai's projects view: each project ``user`` may see, its department, status, node pools with quota,
    GPUs allocated and quota, allocation ratio, CPU and memory quota and its workloads. Fixed query count."""
    figures = _per_unit(quota_figures(user=user), "project")
    return [
        {**project, **_totals(figures.get(project["name"], []))}
        for project in projects_visible(user=user, department=department)
    ]


def department_table(*, user) -> list[dict]:
    """Each department ``user`` may see with its projects, quotas and what it holds, over every pool."""
    figures = _per_unit(quota_figures(user=user), "department")
    return [
        {**department, **_totals(figures.get(department["name"], []))} for department in departments_visible(user=user)
    ]


def quota_grid(*, user, department: str | None = None) -> dict:
    """The quota grid: one row per department (then its projects) ``user`` may see, one cell per visible pool
    with its quota (deserved, limit, over-quota weight) and what it holds; ``editable`` per row by the gate.

    Also ``warnings`` (SEMANTICS §9) for the current quotas.
    """
    report = quota_report(user=user)
    rows, warnings = report["quotas"], report["warnings"]
    pools = list(dict.fromkeys(row["pool"] for row in rows))
    units: dict[tuple[str, str], dict] = {}
    editable: dict[tuple[str, str], bool] = {}
    for row in rows:
        if department and row["department"] != department:
            continue
        key = (row["kind"], row["unit"])
        if key not in units:
            rights = (row["kind"], row["department"])
            if rights not in editable:
                editable[rights] = gate.may_change_quota(user, *rights)
            units[key] = {
                "kind": row["kind"],
                "unit": row["unit"],
                "department": row["department"],
                "editable": editable[rights],
                "cells": [],
            }
        units[key]["cells"].append(row)
    return {"pools": pools, "rows": list(units.values()), "warnings": warnings}


def departments_managed(*, user) -> list[str]:
    """The departments ``user`` may see whose projects they may create and change (``gate.may_change_quota``), by
    name: where a new project may go, and whose projects' forms to link."""
    names = Department.objects.restrict(user).order_by("name").values_list("name", flat=True)
    return [name for name in names if gate.may_change_quota(user, "project", name)]


def unit_editor(*, user, kind: str, name: str | None = None) -> dict:
    """What a department's or project's form opens with: its body as ``user`` may see it and the version it was read
    at (nothing for a new one), the pools ``user`` may see (a quota on each), and for a project the departments it
    may belong to. A project of a department ``user`` may not manage is refused (``AccessDenied``, 403) before its
    form opens, in the words its change would be refused with."""
    config_type = ConfigType.DEPARTMENT if kind == "department" else ConfigType.PROJECT
    body = config_object(config_type=config_type, name=name, user=user) if name else {}
    if name and kind == "project":
        gate.project_change_check(user, body["department"])
    return {
        "body": body,
        "version": _version(config_type, name) if name else "",
        "pools": list(Pool.objects.restrict(user).order_by("name").values_list("name", flat=True)),
        "departments": departments_managed(user=user) if kind == "project" else [],
    }


def _version(config_type: ConfigType, name: str) -> str:
    """The version a change is held to (the API's ETag): of the whole body, quotas on pools hidden from the reader
    included, which the change keeps as they are."""
    if config_type == ConfigType.DEPARTMENT:
        return body_etag(department_body(Department.objects.get(name=name)))
    return body_etag(project_body(Project.objects.select_related("department").get(name=name)))


def quota_dashboard(*, user, pool: str, what_if: dict | None = None) -> dict:
    """A pool's quota dashboard: its capacity against the quotas given on it, allocated against deserved per
    department and project, what waits per project, and the units farthest below and above their fair share.

    ``what_if`` (``k_value``, ``window``, ``half_life`` as a form gives them) adds each unit's fair share with
    those time-based fair share settings and its usage over that window (§9.3), nothing written; bad ones are
    said in ``what_if_problems`` and the rest of the dashboard answers as without them."""
    pool_obj = Pool.objects.restrict(user).select_related("backend").filter(name=pool).first()
    if pool_obj is None:
        raise NotFound(f"pool '{pool}' does not exist")
    what_if = dict(what_if or {})
    try:
        planned = fair_share_what_if(what_if.get("k_value"), what_if.get("window"), what_if.get("half_life"))
        problems = []
    except ConfigError as exc:
        planned, problems = None, [str(problem) for problem in exc.problems]
    report = quota_report(user=user, pool=pool, what_if=planned)
    rows, warnings = report["quotas"], report["warnings"]
    departments = [row for row in rows if row["kind"] == "department"]
    projects = [row for row in rows if row["kind"] == "project"]
    capacity = pool_quota_capacity().get(pool_obj.name, 0)
    deserved = _sum(capacity if row["deserved"] == -1 else row["deserved"] for row in departments)
    allocated = _sum(row["allocated"] for row in departments)
    # Below their fair share: what they could still get (they ask for more); above: what they hold beyond it.
    gaps = [
        {**row, "gap": _sum([row["fair_share"], -row["allocated"]])}
        for row in projects
        if row["allocated"] or row["pending"] or row["fair_share"]
    ]
    below = sorted((row for row in gaps if row["gap"] > 0), key=lambda row: (-row["gap"], row["unit"]))
    above = sorted((row for row in gaps if row["gap"] < 0), key=lambda row: (row["gap"], row["unit"]))
    return {
        "pool": pool_obj.name,
        "capacity": capacity,
        "deserved": deserved,
        "allocated": allocated,
        "pending": _sum(row["pending"] for row in departments),
        "quota_ratio": _ratio(deserved, capacity),
        "allocation_ratio": _ratio(allocated, deserved),
        "rows": rows,
        "pending_by_project": sorted(
            (row for row in projects if row["pending"] > 0), key=lambda row: (-row["pending"], row["unit"])
        ),
        "below_fair_share": below[:BELOW_ABOVE_SHOWN],
        "above_fair_share": above[:BELOW_ABOVE_SHOWN],
        "warnings": warnings,
        "fair_share_settings": pastusage.read_settings(pool_obj.backend.fair_share)[0],
        "what_if": what_if if planned is not None else None,
        "what_if_form": what_if,
        "what_if_problems": problems,
    }


def quota_pool_totals() -> list[dict]:
    """Per pool of the fleet: its capacity, the GPUs its departments deserve (-1 counting as the whole pool) and
    hold. The minute's quota sample of each pool (``usage_sample_record``); read as the system, every unit."""
    totals: dict[str, dict] = {}
    capacity = pool_quota_capacity()
    for row in quota_figures(user=SYSTEM):
        if row["kind"] != "department":
            continue
        entry = totals.setdefault(
            row["pool"],
            {"pool": row["pool"], "capacity": capacity.get(row["pool"], 0), "deserved": [], "allocated": []},
        )
        entry["deserved"].append(entry["capacity"] if row["deserved"] == -1 else row["deserved"])
        entry["allocated"].append(row["allocated"])
    return [
        {**entry, "deserved": _sum(entry["deserved"]), "allocated": _sum(entry["allocated"])}
        for entry in totals.values()
    ]


def quota_series(*, user, pool: str, since) -> list[dict]:
    """A pool's departments' allocation against their deserved quota and the pool's capacity over time."""
    if not Pool.objects.restrict(user).filter(name=pool).exists():
        raise NotFound(f"pool '{pool}' does not exist")
    return [
        {
            "at": sample["at"],
            "allocated": sample["used"],
            "deserved": sample["quota_limit"],
            "capacity": sample["capacity"],
        }
        for sample in usage_series(scope=UsageSample.Scope.QUOTA, key=pool, since=since)
    ]
