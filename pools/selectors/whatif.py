"""The what-if check's quota and topology parts (beyond Run:ai and OSMO): would a request of a project on a pool
stay within its deserved quota, run over it (and so be preemptible), or go past a limit (SEMANTICS §9)? Could a gang
of such pods start now inside one domain of a topology level, or would it be split (SEMANTICS §11)?

The check's rules and free resources are ``inventory.pool_check``'s; the quota part reads the project's figures on
the pool, the same rows as ``quota_figures``, and compares them with the GPUs the request asks for; the topology
part hands the platform's available nodes to the engine's ``gang_fit``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from accounts.access import SYSTEM

from ..engine.errors import ConfigError, NotFound, TopologyError
from ..engine.topology import MAX_SHAPE_NUMBER, Shape, TopologyNode, gang_fit, topology_levels
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


def gang_pods(pods) -> int:
    """The what-if's ``pods`` (a gang's pod count; None: one pod) as an int, or a ConfigError naming ``pods``."""
    if pods is None:
        return 1
    if isinstance(pods, bool) or not isinstance(pods, int) or not 1 <= pods <= MAX_SHAPE_NUMBER:
        raise ConfigError(f"pods must be a whole number from 1 to {MAX_SHAPE_NUMBER:,}", field="pods")
    return pods


def gang_topology_check(*, pool, nodes: Iterable, gpu: Decimal, pods: int, topology: Mapping) -> dict:
    """Where a gang of ``pods`` pods of ``gpu`` GPUs each could start now at ``topology["level"]`` of ``pool``'s
    levels: required (``topology["required"]``), in one domain; preferred, anywhere, split over domains or not.

    ``nodes`` are the platform's member ``Node`` rows; only the available ones count. A topology that is not
    ``{level, required}``, a level the pool does not have, or a request of no or fractional GPUs is a ConfigError
    naming ``topology``.
    """
    if not isinstance(topology, Mapping) or set(topology) - {"level", "required"}:
        raise ConfigError("topology must be {level, required}", field="topology")
    level, required = topology.get("level"), topology.get("required", False)
    if not isinstance(level, str) or not level or not isinstance(required, bool):
        raise ConfigError("topology must be {level, required}: a level's key and true or false", field="topology")
    if gpu < 1 or gpu != int(gpu):
        raise ConfigError(
            f"a gang by topology needs pods of whole GPUs; this request asks {_text(gpu)} GPUs a pod", field="topology"
        )
    try:
        fit = gang_fit(
            [
                TopologyNode(node.name, node.labels or {}, node.gpu_product, node.gpu, node.gpu_used)
                for node in nodes
                if node.available and not node.unschedulable
            ],
            topology_levels(pool.topology_keys),
            Shape(pods, int(gpu)),
            level=level,
            required=required,
        )
    except TopologyError as exc:
        raise ConfigError(f"pool '{pool.name}': {exc}", field="topology") from None
    gang = f"a gang of {pods} pod{'s' if pods != 1 else ''} × {int(gpu)} GPU{'s' if gpu != 1 else ''}"
    taking = f"{len(fit.domains)} {level} domain{'s' if len(fit.domains) != 1 else ''} could take it whole"
    if required and fit.fits:
        message = f"Fits in one {level} now: {taking}"
    elif required:
        message = f"No {level} could take {gang} now; the whole pool offers {fit.pool_slots} such pods"
    elif fit.split:
        message = f"Fits now, split over several {level} domains: none offers {pods} such pods"
    elif fit.fits:
        message = f"Fits now without a split: {taking}"
    else:
        message = f"Does not fit now: the whole pool offers {fit.pool_slots} pods of {int(gpu)} GPUs"
    return {
        "level": level,
        "required": required,
        "pods": pods,
        "gpus_per_pod": int(gpu),
        "fits": fit.fits,
        "split": fit.split,
        "pool_slots": fit.pool_slots,
        "domains": [{"path": domain.path, "slots": domain.slots} for domain in fit.domains],
        "message": message,
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
