"""Reads of the configuration documents: canonical bodies, the current state, history, revisions and diffs.

A reader sees only the objects of types and names they may read (``redacted``); every revision is cut
down to those objects before it leaves here.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from accounts.access import is_system
from accounts.models import Role

from ..choices import TYPE_LABELS, ConfigType, RevisionAction
from ..configs.fields import backend_body, department_body, pool_body, project_body, role_body
from ..configs.state import users_of
from ..engine.errors import NotFound
from ..filtersets import ConfigRevisionFilterSet, filtered
from ..models import (
    Backend,
    ConfigRevision,
    Department,
    PodTemplate,
    Pool,
    Project,
    ResourceValidation,
)
from ..querysets import visible_object, visible_objects


class ConfigState(MutableMapping):
    """The configuration as ``{type: {name: canonical body}}``, each type read the first time it is asked for: a
    change of quotas never reads the roles or the templates. ``ConfigState(base=other)`` is a deep copy of
    ``other``, type by type as asked for (the state a change builds from the current one)."""

    def __init__(self, base: Mapping | None = None):
        self._types: dict[ConfigType, dict[str, Any]] = {}
        self._base = base

    def __getitem__(self, key) -> dict[str, Any]:
        try:
            config_type = ConfigType(key)
        except ValueError:
            raise KeyError(key) from None
        if config_type not in self._types:
            if self._base is not None:
                self._types[config_type] = copy.deepcopy(self._base[config_type])
            else:
                self._types[config_type] = config_state([config_type])[config_type]
        return self._types[config_type]

    def __setitem__(self, key, value) -> None:
        self._types[ConfigType(key)] = value

    def __delitem__(self, key) -> None:
        raise TypeError("a config type cannot be removed from the state")

    def __iter__(self):
        return iter(ConfigType)

    def __len__(self) -> int:
        return len(ConfigType)


def config_state(types: Iterable[ConfigType] | None = None) -> dict[ConfigType, dict[str, Any]]:
    """The current configuration as ``{type: {name: canonical body}}``."""
    types = list(types) if types is not None else list(ConfigType)
    state: dict[ConfigType, dict[str, Any]] = {}
    for config_type in types:
        if config_type == ConfigType.BACKEND:
            state[config_type] = {b.name: backend_body(b) for b in Backend.objects.all()}
        elif config_type == ConfigType.POD_TEMPLATE:
            state[config_type] = dict(PodTemplate.objects.values_list("name", "spec"))
        elif config_type == ConfigType.RESOURCE_VALIDATION:
            state[config_type] = dict(ResourceValidation.objects.values_list("name", "rules"))
        elif config_type == ConfigType.POOL:
            pools = Pool.objects.select_related("backend").prefetch_related("platforms")
            state[config_type] = {p.name: pool_body(p) for p in pools}
        elif config_type == ConfigType.DEPARTMENT:
            state[config_type] = {d.name: department_body(d) for d in Department.objects.all()}
        elif config_type == ConfigType.PROJECT:
            state[config_type] = {p.name: project_body(p) for p in Project.objects.select_related("department")}
        else:
            state[config_type] = {r.name: role_body(r) for r in Role.objects.all()}
    return state


def config_revision_get(*, config_type: ConfigType, revision: int, user) -> ConfigRevision:
    """One revision as ``user`` may see it (``redacted``); one that changed nothing they may see is NotFound."""
    found = ConfigRevision.objects.restrict(user).filter(config_type=config_type, revision=revision).first()
    if found is None:
        raise NotFound(f"revision {config_type}:{revision} does not exist")
    return redacted(found, user)


def redacted(revision: ConfigRevision, user) -> ConfigRevision:
    """The revision with only what ``user`` may see: its snapshot, changed names, name and description.

    Returns a detached copy when anything is hidden (never saved); the description then names only the
    visible objects, since a hand-written or generated one may name the others.
    """
    if is_system(user):
        return revision
    changed = [name for name in revision.changed if visible_object(user, revision.config_type, name)]
    if changed == revision.changed and "snapshot" in revision.get_deferred_fields():
        return revision
    shown = copy.copy(revision)
    if "snapshot" not in revision.get_deferred_fields():
        shown.snapshot = visible_objects(user, revision.config_type, revision.snapshot)
    if changed != revision.changed:
        shown.changed = changed
        shown.name = changed[0] if len(changed) == 1 else ""
        shown.description = describe_change(revision.action, ConfigType(revision.config_type), changed)
    return shown


def describe_change(action: str, config_type: ConfigType, changed: list[str]) -> str:
    """``Updated pools a, b and 3 more``: the description a revision gets when its author gives none."""
    label = TYPE_LABELS[config_type]
    names = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return f"{RevisionAction(action).label} {label}{'s' if len(changed) > 1 else ''} {names}"


def config_history(*, user, filters: Mapping | None = None):
    """Revisions ``user`` may see, newest first, filtered as ``ConfigRevisionFilterSet`` says.

    A queryset (for paging); pass each row shown through ``redacted``. Bad filters raise ``ConfigError``.
    """
    revisions = ConfigRevision.objects.restrict(user).defer("snapshot")
    filterset = filtered(ConfigRevisionFilterSet, filters, revisions)
    return filterset.qs.order_by("-created_at", "config_type", "-revision")


def revision_summary(revision: ConfigRevision) -> dict:
    return {
        "config_type": revision.config_type,
        "revision": revision.revision,
        "name": revision.name,
        "username": revision.username,
        "created_at": revision.created_at.isoformat(),
        "description": revision.description,
        "tags": revision.tags,
    }


def config_objects(*, config_type: ConfigType, user, revision: int | None = None) -> dict:
    """``{name: body}`` of a type's objects ``user`` may see, as they are now or were at ``revision``."""
    if revision is None:
        return visible_objects(user, config_type, config_state([config_type])[config_type])
    return config_revision_get(config_type=config_type, revision=revision, user=user).snapshot


def config_show(*, config_type: ConfigType, user, name: str | None = None, revision: int | None = None) -> dict:
    """A type's objects (or one, name-keyed) as they are now or were at ``revision``, as ``user`` may see them."""
    objects = config_objects(config_type=config_type, user=user, revision=revision)
    if name is None:
        return objects
    if name not in objects:
        when = f" at revision {revision}" if revision else ""
        raise NotFound(f"{config_type} '{name}' does not exist{when}")
    return {name: objects[name]}


def config_diff(*, config_type: ConfigType, user, revision: int, other: int | None = None) -> str:
    """A unified diff from ``revision`` to ``other`` (or to the current state), object by object, of what
    ``user`` may see."""
    before = config_objects(config_type=config_type, user=user, revision=revision)
    after = config_objects(config_type=config_type, user=user, revision=other)
    return snapshot_diff(config_type, before, after, str(revision), "current" if other is None else str(other))


def revision_changes(*, revision: ConfigRevision, user) -> tuple[int | None, str]:
    """What ``revision`` (as ``config_revision_get`` gave it) changed: the number of the revision before it and
    the diff from that one, of the objects ``user`` may see. ``(None, "")`` for a type's first revision."""
    previous = (
        ConfigRevision.objects.filter(config_type=revision.config_type, revision__lt=revision.revision)
        .order_by("-revision")
        .first()
    )
    if previous is None:
        return None, ""
    before = visible_objects(user, revision.config_type, previous.snapshot)
    config_type = ConfigType(revision.config_type)
    return previous.revision, snapshot_diff(
        config_type, before, revision.snapshot, str(previous.revision), str(revision.revision)
    )


def snapshot_diff(config_type: ConfigType, before: dict, after: dict, before_label: str, after_label: str) -> str:
    """A unified diff between two ``{name: body}`` states, object by object."""
    revision = before_label
    lines: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        old = json.dumps(before[name], indent=2, sort_keys=True).splitlines() if name in before else []
        new = json.dumps(after[name], indent=2, sort_keys=True).splitlines() if name in after else []
        lines.extend(
            difflib.unified_diff(
                old,
                new,
                fromfile=f"{config_type}:{revision}/{name}",
                tofile=f"{config_type}:{after_label}/{name}",
                lineterm="",
            )
        )
    return "\n".join(lines)


def pod_templates_visible(*, user):
    """Every pod template for a reader of the type, else none."""
    return PodTemplate.objects.restrict(user)


def resource_validations_visible(*, user):
    """Every validation set for a reader of the type, else none."""
    return ResourceValidation.objects.restrict(user)


def config_object(*, config_type: ConfigType, name: str, user) -> Any:
    """One object's canonical body as ``user`` may see it; NotFound for one that is missing or hidden from them."""
    objects = config_objects(config_type=config_type, user=user)
    if name not in objects:
        raise NotFound(f"{TYPE_LABELS[config_type]} '{name}' does not exist")
    return objects[name]


def pools_using(*, config_type: ConfigType, name: str, user) -> list[str]:
    """The pools ``user`` may see that refer to object ``name`` (the others are not named)."""
    return users_of({ConfigType.POOL: config_objects(config_type=ConfigType.POOL, user=user)}, config_type, name)


def document_list(*, config_type: ConfigType, user) -> list[dict]:
    """The objects of a type ``user`` may see, by name, each with the visible pools that use it (the pools read once
    for the whole list)."""
    objects = config_objects(config_type=config_type, user=user)
    pools = {ConfigType.POOL: config_objects(config_type=ConfigType.POOL, user=user)}
    return [
        {"name": name, "body": body, "used_by": users_of(pools, config_type, name)}
        for name, body in sorted(objects.items())
    ]
