"""Config writes: one path for every change, its history, rollback, tags and built-ins.

``config_apply`` builds the state a change would produce, checks it as a whole (``pools.configs``),
writes only what changed, records one revision per changed config type, and recomputes membership for
the backends the change touches, all in one transaction. Callers (web, API, ``poolctl``, the Django
admin, tasks) pass an ``Actor`` so each revision says who and from where.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Max

from accounts.models import Role
from accounts.services import access_config_changed
from pools import selectors
from pools.builtins import BUILTINS
from pools.choices import ConfigType, RevisionAction
from pools.configs import TYPE_LABELS, normalize_body, split_document, users_of, validate_state
from pools.engine.errors import ConfigError, Problem
from pools.engine.permissions import pool_role_policy_data
from pools.models import Backend, ConfigRevision, PodTemplate, Pool, ResourceValidation

from .actors import Actor
from .inventory import membership_recompute


def config_apply(
    *,
    changes: dict[ConfigType, dict[str, Any]],
    actor: Actor,
    description: str = "",
    tags: Iterable[str] = (),
    action: str | None = None,
    normalized: bool = False,
    dry_run: bool = False,
) -> list[ConfigRevision]:
    """Apply ``{type: {name: body or None}}`` (None deletes) as one all-or-nothing change.

    Raises ConfigError, with every problem found, before anything is written. Returns the revisions
    recorded (none when nothing actually changed). ``dry_run`` checks everything and writes nothing.
    """
    problems: list[Problem] = []
    proposed: dict[ConfigType, dict[str, Any]] = {}
    for config_type, entries in changes.items():
        config_type = ConfigType(config_type)
        for name, body in entries.items():
            if body is None:
                proposed.setdefault(config_type, {})[name] = None
                continue
            try:
                proposed.setdefault(config_type, {})[name] = (
                    body if normalized else normalize_body(config_type, name, body)
                )
            except ConfigError as exc:
                problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)

    with transaction.atomic():
        current = selectors.config_state()
        state = copy.deepcopy(current)
        for config_type, entries in proposed.items():
            for name, body in entries.items():
                problems.extend(_check_change(config_type, name, body, current))
                if body is None:
                    state[config_type].pop(name, None)
                else:
                    state[config_type][name] = body
        if problems:
            raise ConfigError(problems)
        validate_state(state)
        if dry_run:
            return []

        revisions = []
        touched_backends: set[str] = set()
        for config_type in ConfigType:
            before, after = current[config_type], state[config_type]
            if before == after:
                continue
            changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
            for name in changed:
                _write(config_type, name, after.get(name))
            touched_backends |= _backends_touched(config_type, changed, current, state)
            revisions.append(
                _record_revision(
                    config_type=config_type,
                    changed=changed,
                    before=before,
                    after=after,
                    actor=actor,
                    description=description,
                    tags=tags,
                    action=action,
                )
            )
        for backend in Backend.objects.filter(name__in=touched_backends):
            membership_recompute(backend=backend)
        access_config_changed(config_types=[revision.config_type for revision in revisions])
    return revisions


def _check_change(config_type: ConfigType, name: str, body: Any, current: dict) -> list[Problem]:
    """Rules about the change itself (not the resulting state): built-ins, immutable roles, deletes in use."""
    label = f"{TYPE_LABELS[config_type]} '{name}'"
    existing = current[config_type].get(name)
    if body is None:
        if existing is None:
            return [Problem("", f"{label} does not exist")]
        if name in BUILTINS.get(config_type, {}):
            return [
                Problem(
                    "", f"{label} is built in and cannot be deleted (restore it with 'poolctl config restore-builtins')"
                )
            ]
        users = users_of(current, config_type, name)
        if users:
            return [Problem("", f"{label} is used by pool{'s' if len(users) > 1 else ''} {', '.join(users)}")]
    if config_type == ConfigType.ROLE and existing and existing["immutable"] and body is not None:
        # An immutable role's policies are fixed, but which IdP groups grant it is each site's to decide.
        mapping = ("external_roles", "sync_mode")
        if {k: v for k, v in body.items() if k not in mapping} != {
            k: v for k, v in existing.items() if k not in mapping
        }:
            return [Problem("", f"{label} is immutable (only its external_roles and sync_mode can change)")]
    if config_type == ConfigType.ROLE and existing and existing["immutable"] and body is None:
        return [Problem("", f"{label} is immutable")]
    return []


def _backends_touched(config_type: ConfigType, changed: list[str], before: dict, after: dict) -> set[str]:
    """The backends whose node membership a change of these objects can alter."""
    if config_type == ConfigType.BACKEND:
        return set(changed)
    if config_type == ConfigType.POOL:
        return {
            state[ConfigType.POOL][name]["backend"]
            for state in (before, after)
            for name in changed
            if name in state[ConfigType.POOL]
        }
    if config_type == ConfigType.POD_TEMPLATE:
        return {
            after[ConfigType.POOL][pool]["backend"] for name in changed for pool in users_of(after, config_type, name)
        }
    return set()


def _write(config_type: ConfigType, name: str, body: Any) -> None:
    """Make the database row(s) of one object match its canonical body (None deletes)."""
    model = {
        ConfigType.BACKEND: Backend,
        ConfigType.POD_TEMPLATE: PodTemplate,
        ConfigType.RESOURCE_VALIDATION: ResourceValidation,
        ConfigType.POOL: Pool,
        ConfigType.ROLE: Role,
    }[config_type]
    if config_type == ConfigType.ROLE:
        # A role is held through the Django group of the same name (accounts.access).
        if body is None:
            Group.objects.filter(name=name).delete()
        else:
            Group.objects.get_or_create(name=name)
    if body is None:
        model.objects.filter(name=name).delete()
    elif config_type == ConfigType.POD_TEMPLATE:
        PodTemplate.objects.update_or_create(name=name, defaults={"spec": body})
    elif config_type == ConfigType.RESOURCE_VALIDATION:
        ResourceValidation.objects.update_or_create(name=name, defaults={"rules": body})
    elif config_type == ConfigType.POOL:
        _write_pool(name, body)
    else:
        model.objects.update_or_create(name=name, defaults=body)


def _write_pool(name: str, body: dict) -> None:
    fields = {key: value for key, value in body.items() if key != "platforms"}
    fields["backend"] = Backend.objects.get(name=body["backend"])
    pool, _ = Pool.objects.update_or_create(name=name, defaults=fields)
    pool.platforms.exclude(name__in=body["platforms"].keys()).delete()
    existing = {platform.name: platform for platform in pool.platforms.all()}
    for platform_name, platform_body in body["platforms"].items():
        platform = existing.get(platform_name)
        if platform is None:
            pool.platforms.create(name=platform_name, **platform_body)
        else:
            for key, value in platform_body.items():
                setattr(platform, key, value)
            platform.save()


def _record_revision(*, config_type, changed, before, after, actor, description, tags, action) -> ConfigRevision:
    if action is None:
        if len(changed) == 1:
            name = changed[0]
            action = (
                RevisionAction.CREATE
                if name not in before
                else RevisionAction.DELETE
                if name not in after
                else RevisionAction.UPDATE
            )
        else:
            action = RevisionAction.UPDATE
    latest = ConfigRevision.objects.filter(config_type=config_type).aggregate(n=Max("revision"))["n"] or 0
    return ConfigRevision.objects.create(
        config_type=config_type,
        revision=latest + 1,
        name=changed[0] if len(changed) == 1 else "",
        action=action,
        username=actor.username,
        origin=actor.origin,
        description=description or _describe(action, config_type, changed),
        tags=sorted(set(tags)),
        snapshot=after,
    )


def _describe(action: str, config_type: ConfigType, changed: list[str]) -> str:
    label = TYPE_LABELS[config_type]
    names = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return f"{RevisionAction(action).label} {label}{'s' if len(changed) > 1 else ''} {names}"


def _resolve_paths(changes: dict, base_dir: str | None) -> dict:
    """Backend file paths in a document are relative to the document, like kubectl's ``-f``."""
    if not base_dir:
        return changes
    for body in changes.get(ConfigType.BACKEND, {}).values():
        if isinstance(body, dict):
            for key in ("source", "kubeconfig"):
                value = body.get(key)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    body[key] = os.path.normpath(os.path.join(base_dir, value))
    return changes


def config_update(
    *,
    config_type: ConfigType,
    data: Any,
    actor: Actor,
    name: str | None = None,
    description: str = "",
    tags: Iterable[str] = (),
    base_dir: str | None = None,
    dry_run: bool = False,
) -> list[ConfigRevision]:
    """Create or replace objects of one type from a parsed document (``poolctl config update``)."""
    changes = _resolve_paths(split_document(data, config_type=config_type, name=name), base_dir)
    return config_apply(changes=changes, actor=actor, description=description, tags=tags, dry_run=dry_run)


def config_import(
    *, data: Any, actor: Actor, description: str = "", tags: Iterable[str] = (), base_dir: str | None = None
) -> list[ConfigRevision]:
    """Import a bundle, a name-keyed file or a single pool body; one error and nothing is written."""
    changes = _resolve_paths(split_document(data), base_dir)
    return config_apply(
        changes=changes,
        actor=actor,
        description=description,
        tags=tags,
        action=RevisionAction.IMPORT if len(changes) > 1 else None,
    )


def config_delete(
    *, config_type: ConfigType, name: str, actor: Actor, description: str = "", dry_run: bool = False
) -> list[ConfigRevision]:
    """Delete one object; refused while a pool refers to it (the error names the pools)."""
    return config_apply(changes={config_type: {name: None}}, actor=actor, description=description, dry_run=dry_run)


def config_rollback(
    *, config_type: ConfigType, revision: int, actor: Actor, description: str = ""
) -> list[ConfigRevision]:
    """Restore a config type to the state recorded at ``revision``, as a new revision.

    Refused, with the broken references named, when that state no longer fits the rest of the
    configuration (for example a template that a pool created since then uses).
    """
    target = selectors.config_revision_get(config_type=config_type, revision=revision)
    current = selectors.config_state([config_type])[config_type]
    changes = {name: None for name in current if name not in target.snapshot}
    changes.update(target.snapshot)
    try:
        revisions = config_apply(
            changes={config_type: changes},
            actor=actor,
            description=description or f"Rolled back to {config_type}:{revision}",
            action=RevisionAction.ROLLBACK,
            normalized=True,
        )
    except ConfigError as exc:
        raise ConfigError([Problem("", f"cannot roll back to {config_type}:{revision}: {exc}")]) from None
    if not revisions:
        raise ConfigError(f"{config_type}:{revision} is the current state; nothing to roll back")
    return revisions


def config_tag(
    *, config_type: ConfigType, revision: int, add: Iterable[str] = (), remove: Iterable[str] = ()
) -> ConfigRevision:
    """Add and remove tags on a revision (tags are labels; they change no configuration)."""
    target = selectors.config_revision_get(config_type=config_type, revision=revision)
    for tag in add:
        if not tag.strip():
            raise ConfigError("a tag cannot be empty")
    target.tags = sorted((set(target.tags) | {t.strip() for t in add}) - set(remove))
    target.save(update_fields=["tags"])
    return target


def builtins_restore(*, actor: Actor) -> list[ConfigRevision]:
    """Put every built-in object back to its original body (creating the missing ones)."""
    return config_apply(
        changes=copy.deepcopy(BUILTINS), actor=actor, description="Restored built-in configuration", normalized=True
    )


def pool_role_generate(*, name: str, actor: Actor, description: str = "") -> list[ConfigRevision]:
    """Create or refresh the role ``osmo-<prefix>`` granting ``workflow:*`` and ``pool:Read`` on ``pool/<prefix>*``."""
    if not name.startswith("osmo-") or len(name) == len("osmo-"):
        raise ConfigError(f"role name '{name}' must be osmo-<pool name prefix>")
    prefix = name[len("osmo-") :]
    body = {
        "description": description or f"Use of the pools whose names start with '{prefix}'",
        "policies": pool_role_policy_data(prefix),
    }
    existing = selectors.config_state([ConfigType.ROLE])[ConfigType.ROLE].get(name)
    if existing:
        body["external_roles"] = existing["external_roles"]
        body["sync_mode"] = existing["sync_mode"]
    return config_apply(changes={ConfigType.ROLE: {name: body}}, actor=actor)
