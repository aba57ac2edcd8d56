"""Departments, projects and their quotas per node pool (SEMANTICS §9): Run:ai's verbs over ``config_apply``.

Each is one config change, so it is checked, authorised (a project by a manager of its department, members by
someone who administers the unit, never with more than they hold), recorded
as a revision and can be rolled back like every other; none writes a row itself.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from django.db import transaction

from pools import selectors
from pools.choices import TYPE_LABELS, ConfigType
from pools.engine.errors import ConfigError, NotFound
from pools.models import ConfigRevision

from .actors import Actor
from .config import ABSENT, config_apply


def department_create(
    *, name: str, actor: Actor, description: str = "", resources: list[dict] = (), members: list[dict] = ()
) -> list:
    """A new department with quotas per node pool and its members (409 when the name is taken)."""
    body = {"description": description, "resources": list(resources), "members": list(members)}
    return config_apply(
        changes={ConfigType.DEPARTMENT: {name: body}},
        actor=actor,
        expect={(ConfigType.DEPARTMENT, name): ABSENT},
    )


def project_create(
    *,
    name: str,
    department: str,
    actor: Actor,
    namespaces: list[str] = (),
    description: str = "",
    resources: list[dict] = (),
    members: list[dict] = (),
) -> list:
    """A new project of ``department`` (its namespaces default to ``runai-<name>``) with its members."""
    body = {
        "description": description,
        "department": department,
        "namespaces": list(namespaces),
        "resources": list(resources),
        "members": list(members),
    }
    return config_apply(
        changes={ConfigType.PROJECT: {name: body}},
        actor=actor,
        expect={(ConfigType.PROJECT, name): ABSENT},
    )


def unit_members_set(*, kind: str, name: str, members: list[dict], actor: Actor, description: str = "") -> list:
    """Replace who belongs to department or project ``name`` (``kind``), keeping the rest of its body: given only by
    someone who administers the unit, never with more than they hold (``config_apply`` decides, SEMANTICS §9.4)."""
    config_type = ConfigType.DEPARTMENT if kind == "department" else ConfigType.PROJECT

    def change(current: dict) -> dict:
        body = current[config_type].get(name)
        if body is None:
            raise NotFound(f"{TYPE_LABELS[config_type]} '{name}' does not exist")
        return {config_type: {name: {**copy.deepcopy(body), "members": list(members)}}}

    return config_apply(changes=change, actor=actor, description=description)


def quota_set(*, unit: str, pool: str, figures: dict, actor: Actor, description: str = "") -> list[ConfigRevision]:
    """Set some figures of ``unit``'s quota on ``pool``, keeping the others (Run:ai's defaults for a new entry).

    ``unit`` is a department or a project, or ``department/NAME`` / ``project/NAME`` when both exist.
    ``figures`` is part of a quota entry: ``{"priority": 100, "gpu": {"deserved": 4}, "cpu": {...}}``.
    """
    return quota_bulk_set(
        quotas=[{"unit": unit, "pool": pool, "figures": figures}], actor=actor, description=description
    )


def quota_bulk_set(
    *, quotas: list[dict], actor: Actor, description: str = "", tags: Iterable[str] = ()
) -> list[ConfigRevision]:
    """Set many quotas in one change, all or nothing: ``[{"unit", "pool", "figures"}]`` as for ``quota_set``.

    The quota grid's bulk save and ``PUT /api/quotas/``: one revision per changed type (departments, projects),
    every entry checked before anything is written, so a bad one leaves every quota as it was.
    """

    def change(current: dict) -> dict:
        changed: dict[ConfigType, dict[str, dict]] = {}
        for index, item in enumerate(quotas):
            try:
                config_type, name = _unit(current, item["unit"])
            except ConfigError as exc:  # NotFound too, keeping its kind (404)
                raise type(exc)(exc.problems[0].message, field=f"quotas[{index}].unit") from None
            body = changed.setdefault(config_type, {}).setdefault(name, copy.deepcopy(current[config_type][name]))
            entries = {entry["nodePool"]: entry for entry in body["resources"]}
            entry = entries.setdefault(item["pool"], {"nodePool": item["pool"]})
            for key, value in item["figures"].items():
                if isinstance(value, dict) and isinstance(entry.get(key), dict):
                    entry[key] = {**entry[key], **value}
                else:
                    entry[key] = value
            body["resources"] = list(entries.values())
        return changed

    return config_apply(changes=change, actor=actor, description=description, tags=tags)


def quota_bulk_preview(*, quotas: list[dict], actor: Actor) -> list[str]:
    """The warnings of SEMANTICS §9 after a bulk change, the change itself not kept: the quota grid's check as one
    types. The change is made as ``quota_bulk_set`` makes it (the gate and every check included), the warnings
    read with ``quota_report``, the one function that knows them, and the transaction rolled back."""
    with transaction.atomic():
        quota_bulk_set(quotas=quotas, actor=actor)
        warnings = selectors.quota_report(user=actor.principal)["warnings"]
        transaction.set_rollback(True)
    return warnings


def _unit(current: dict, unit: str) -> tuple[ConfigType, str]:
    kind, sep, name = unit.partition("/")
    if sep:
        types = {"department": ConfigType.DEPARTMENT, "project": ConfigType.PROJECT}
        if kind not in types:
            raise ConfigError(f"'{unit}' is not NAME, department/NAME or project/NAME")
        if name not in current[types[kind]]:
            raise NotFound(f"{TYPE_LABELS[types[kind]]} '{name}' does not exist")
        return types[kind], name
    found = [t for t in (ConfigType.DEPARTMENT, ConfigType.PROJECT) if unit in current[t]]
    if not found:
        raise NotFound(f"no department or project is named '{unit}'")
    if len(found) > 1:
        raise ConfigError(f"'{unit}' is both a department and a project: say department/{unit} or project/{unit}")
    return found[0], unit
