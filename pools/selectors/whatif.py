"""The what-if check's quota part (beyond Run:ai and OSMO): would a request of a project on a pool stay within
its deserved quota, run over it (and so be preemptible), or go past a limit (SEMANTICS §9)?

The check's rules and free resources are ``inventory.pool_check``'s; this module only reads the project's
figures on the pool, the same rows as ``quota_figures``, and compares them with the GPUs the request asks for.
"""

from __future__ import annotations

from decimal import Decimal

from accounts.access import SYSTEM

from ..engine.errors import NotFound
from .quotas import quota_figures

WITHIN_QUOTA = "within_quota"
OVER_QUOTA = "over_quota"
EXCEEDS_LIMIT = "exceeds_limit"
UNLIMITED = -1


def project_quota_check(*, user, pool_name: str, project: str, gpu: Decimal) -> dict:
    """Where ``gpu`` more GPUs would put ``project`` on ``pool_name``, against its quota and its department's.

    - ``within_quota``: allocated + requested ≤ deserved (a deserved of -1 is the whole of its department's
      fair share, as in ``quota_figures``);
    - ``over_quota``: above deserved, but within the project's limit (-1: none) and its department's: the
      workload may run, and be preempted when others claim their deserved GPUs;
    - ``exceeds_limit``: above the project's limit (or above deserved with an over-quota weight of None, which
      allows no over-quota) or its department's; ``exceeded`` says which (``"project"``, ``"department"``).

    A project ``user`` may not see is ``NotFound`` like one that does not exist (field ``project``). The
    department's limit counts even when ``user`` may not see the department; its figures are then ``None``.
    """
    rows = quota_figures(user=user, pool=pool_name)
    unit = next((row for row in rows if row["kind"] == "project" and row["unit"] == project), None)
    if unit is None:
        raise NotFound(f"project '{project}' does not exist", field="project")
    department = _department_row(rows, unit["department"])
    shown = department is not None
    if not shown:  # its limit binds the project all the same, so the verdict reads it without showing it
        department = _department_row(quota_figures(user=SYSTEM, pool=pool_name), unit["department"])

    allocated = _decimal(unit["allocated"])
    wanted = allocated + gpu
    deserved = _decimal(department["fair_share"]) if unit["deserved"] == UNLIMITED else _decimal(unit["deserved"])
    limit = _decimal(unit["limit"])
    department_limit = _decimal(department["limit"])
    department_wanted = _decimal(department["allocated"]) + gpu
    verdict, exceeded = WITHIN_QUOTA, ""
    who = f"project '{project}' on pool '{pool_name}'"
    if limit != UNLIMITED and wanted > limit:
        verdict, exceeded = EXCEEDS_LIMIT, "project"
        message = f"{who} would hold {_text(wanted)} GPUs, more than its limit of {_text(limit)}"
    elif wanted > deserved and unit["over_quota_weight"] is None:
        verdict, exceeded = EXCEEDS_LIMIT, "project"
        message = (
            f"{who} would hold {_text(wanted)} GPUs, more than its {_text(deserved)} deserved, "
            "and its over-quota weight None allows no over-quota"
        )
    elif department_limit != UNLIMITED and department_wanted > department_limit:
        verdict, exceeded = EXCEEDS_LIMIT, "department"
        message = f"department '{unit['department']}' on pool '{pool_name}' would go over its limit"
        if shown:
            message += f": {_text(department_wanted)} GPUs, more than {_text(department_limit)}"
    elif wanted <= deserved:
        message = f"{who} would hold {_text(wanted)} of its {_text(deserved)} deserved GPUs"
    else:
        verdict = OVER_QUOTA
        message = (
            f"{who} would hold {_text(wanted)} GPUs, {_text(wanted - deserved)} over its {_text(deserved)} "
            "deserved, so it may be preempted"
        )
    return {
        "project": project,
        "department": unit["department"],
        "pool": pool_name,
        "verdict": verdict,
        "exceeded": exceeded,
        "message": f"{_HEADLINES[verdict]}: {message}",
        "requested": _figure(gpu),
        "allocated": unit["allocated"],
        "pending": unit["pending"],
        "deserved": _figure(deserved),
        "limit": unit["limit"],
        "over_quota_weight": unit["over_quota_weight"],
        "fair_share": unit["fair_share"],
        "department_limit": department["limit"] if shown else None,
        "department_allocated": department["allocated"] if shown else None,
    }


_HEADLINES = {WITHIN_QUOTA: "Within quota", OVER_QUOTA: "Over quota", EXCEEDS_LIMIT: "Exceeds the limit"}


def _department_row(rows: list[dict], name: str) -> dict | None:
    return next((row for row in rows if row["kind"] == "department" and row["unit"] == name), None)


def _decimal(value) -> Decimal:
    """A figure of ``quota_figures`` (an int, or a float for fractions) as the Decimal it was summed as."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _figure(value: Decimal) -> int | float:
    """A GPU amount for JSON: an int when whole, else a float (as ``quota_figures`` gives its figures)."""
    whole = int(value)
    return whole if whole == value else float(value)


def _text(value: Decimal) -> str:
    """A GPU amount for a sentence: ``8``, ``12.5``."""
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text
