"""Config writes: one path for every change, its history, rollback, tags and built-ins.

``config_apply`` builds the state a change would produce, checks it as a whole (``pools.configs``),
writes only what changed, records one revision per changed config type, and recomputes membership for
the backends the change touches, all in one transaction. Callers (web, API, ``poolctl``, the Django
admin, tasks) pass an ``Actor`` so each revision says who and from where.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.db.models import Max, Subquery

from accounts.access import allows, forget_roles, is_system, require, user_roles
from accounts.models import Role
from pools import selectors
from pools.builtins import BUILTINS
from pools.choices import TYPE_LABELS, ConfigType, RevisionAction
from pools.configs import (
    Sees,
    body_etag,
    default_pool_of,
    department_projects,
    listed,
    named,
    normalize_body,
    pool_references,
    quota_holders,
    quota_pools,
    sees_everything,
    split_document,
    users_of,
    validate_state,
)
from pools.engine.errors import AccessDenied, ConfigError, Conflict, NotFound, Problem, Stale
from pools.engine.members import members_added, unit_policies
from pools.engine.permissions import CHANGE_CONFIG, CONFIRM_CREDENTIALS, MANAGE_DEPARTMENT, pool_role_policy_data
from pools.engine.policy import parse_policies, ungranted
from pools.models import Backend, ConfigRevision, Department, PodTemplate, Pool, Project, ResourceValidation
from pools.querysets import hidden_quota_pools, visible_object

from .access import pool_permissions_sync
from .actors import Actor
from .membership import membership_recompute
from .utilization import quiet_gpus_reattribute

HIDDEN_NODES_MOVED = (
    "the change would select or move nodes that are not yours to move (nodes of pools you may not see); "
    "nothing was changed"
)


def _credentials_confirm(principal, saved: list[str], backends: dict) -> None:
    """Backends saved (changed or not) by someone who may confirm their credentials send them to the URL now set;
    a change of ``prometheus_url`` or ``prometheus_token_env`` by anyone else leaves them unsent until that is done."""
    for name in saved:
        body = backends.get(name)
        if body is not None and allows(principal, CONFIRM_CREDENTIALS, name):
            Backend.objects.filter(name=name).update(
                prometheus_confirmed_url=body["prometheus_url"], prometheus_confirmed_env=body["prometheus_token_env"]
            )


@dataclass(frozen=True)
class Expected:
    """What a change assumes about one object: absent (a create), present, or at one of ``etags`` (If-Match)."""

    exists: bool = True
    etags: frozenset[str] = frozenset()


ABSENT = Expected(exists=False)
PRESENT = Expected()

Changes = dict[ConfigType, dict[str, Any]]
# ``hashtext('gpupool:config')``-like constant: the PostgreSQL advisory lock every config write takes.
CONFIG_LOCK_KEY = 7_446_901_372


def config_write_lock() -> None:
    """Serialise config writes for the rest of the transaction (SEMANTICS.md §7.1).

    One lock for every type, because a change of one type checks references into the others (a template
    deleted while a pool starts using it). PostgreSQL: a transaction-scoped advisory lock. SQLite takes its
    write lock when the transaction begins (``transaction_mode=IMMEDIATE``), so it needs nothing more.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CONFIG_LOCK_KEY])


def config_apply(
    *,
    changes: Changes | Callable[[dict], Changes],
    actor: Actor,
    description: str = "",
    tags: Iterable[str] = (),
    action: str | None = None,
    normalized: bool = False,
    dry_run: bool = False,
    expect: Mapping[tuple[ConfigType, str], Expected] | None = None,
) -> list[ConfigRevision]:
    """Apply ``{type: {name: body or None}}`` (None deletes) as one all-or-nothing change, made by ``actor``.

    The one door every config change goes through (web, API, generic configs endpoint, import, rollback,
    ``poolctl``, admin). Under the config write lock it reads the current state, builds ``changes`` from it
    when given a function (a read-modify-write such as a merge patch), checks ``expect`` (409 ``Conflict``
    when a create finds the name taken, 412 ``Stale`` when If-Match names another version), asks the gate
    (``authorize_names`` and ``authorize_change``: 404 for what the actor may not see, 403 for what they may
    not do, no escalation),
    validates the resulting state, and writes only the difference with one revision per changed type.

    Raises before anything is written. Returns the revisions recorded (none when nothing changed);
    ``dry_run`` checks everything, writes nothing and answers a ``Preview``: no revision, and what the change
    would move (``selectors.config_change_effect``). The nodes' memberships, node groups and the pools of the
    workloads holding quiet GPUs are recomputed in the same transaction, so every page shows the change at once.
    """
    with transaction.atomic():
        config_write_lock()
        current = selectors.ConfigState()  # each type read when first needed, under the lock
        requested = changes(current) if callable(changes) else changes
        requested = {ConfigType(config_type): entries for config_type, entries in requested.items()}
        authorize_names(actor, requested)
        proposed = _keep_hidden_quotas(actor.principal, current, _normalized(requested, normalized))
        authorize_change(actor, current, proposed)
        _check_expectations(current, expect or {})
        state = selectors.ConfigState(base=current)
        problems: list[Problem] = []
        for config_type, entries in proposed.items():
            for name, body in entries.items():
                problems.extend(_check_change(config_type, name, body, current, sees_for(actor.principal)))
                if body is None:
                    state[config_type].pop(name, None)
                else:
                    state[config_type][name] = body
        if problems:
            raise ConfigError(problems)
        _validate_change(current, state, sees_for(actor.principal), changed=set(proposed))
        if dry_run:
            return _preview(actor, current, proposed)

        changes_by_type = {  # only the proposed types can differ
            config_type: sorted(
                name
                for name in current[config_type].keys() | state[config_type].keys()
                if current[config_type].get(name) != state[config_type].get(name)
            )
            for config_type in ConfigType
            if config_type in proposed
        }
        touched_backends = {
            backend
            for config_type, changed in changes_by_type.items()
            if changed
            for backend in _backends_touched(config_type, changed, current, state)
        }
        hidden_before = selectors.hidden_nodes(actor.principal, backends=touched_backends)
        written = [config_type for config_type in ConfigType if changes_by_type.get(config_type)]
        for config_type in written:  # in the types' order: backends before the pools naming them
            for name in changes_by_type[config_type]:
                _write(config_type, name, state[config_type].get(name))
        revisions = _record_revisions(
            [
                (config_type, changes_by_type[config_type], current[config_type], state[config_type])
                for config_type in written
            ],
            actor=actor,
            description=description,
            tags=tags,
            action=action,
        )
        if ConfigType.BACKEND in proposed:
            _credentials_confirm(actor.principal, list(proposed[ConfigType.BACKEND]), state[ConfigType.BACKEND])
        for backend in Backend.objects.filter(name__in=touched_backends):
            membership_recompute(backend=backend)
            quiet_gpus_reattribute(backend=backend)
        if selectors.hidden_nodes_moved(hidden_before):
            raise ConfigError(HIDDEN_NODES_MOVED)
        if {ConfigType.ROLE, ConfigType.POOL} & {ConfigType(revision.config_type) for revision in revisions}:
            pool_permissions_sync()
        if {ConfigType.DEPARTMENT, ConfigType.PROJECT} & set(written) and not is_system(actor.principal):
            # what the writer's memberships allow may have changed with the members they wrote
            forget_roles(actor.principal)
            selectors.forget_memberships(actor.principal)
    return revisions


class Preview(list):
    """What a dry run answers: no revision (an empty list, as every caller of ``config_apply`` reads it), and
    ``effect``, what the change would move as its writer may see it (``selectors.config_change_effect``)."""

    def __init__(self, effect: dict):
        super().__init__()
        self.effect = effect


def _preview(actor: Actor, current, proposed: Changes) -> Preview:
    """The dry run's answer, refused as the write would be when it would move nodes of pools hidden from ``actor``."""
    placements = selectors.change_placements(proposed, current=current)
    if selectors.hidden_nodes_would_move(placements, actor.principal):
        raise ConfigError(HIDDEN_NODES_MOVED)
    return Preview(selectors.config_change_effect(proposed, user=actor.principal, placements=placements))


def _normalized(changes: Changes, normalized: bool) -> Changes:
    """The changes with canonical bodies; raises ConfigError listing every problem of every body."""
    problems: list[Problem] = []
    proposed: Changes = {}
    for config_type, entries in changes.items():
        config_type = ConfigType(config_type)
        for name, body in entries.items():
            if body is None or normalized:
                proposed.setdefault(config_type, {})[name] = body
                continue
            try:
                proposed.setdefault(config_type, {})[name] = normalize_body(config_type, name, body)
            except ConfigError as exc:
                problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return proposed


def _check_expectations(current: dict, expect: Mapping[tuple[ConfigType, str], Expected]) -> None:
    """409 when a create finds the name taken, 404 when an object to change is gone, 412 on a stale version."""
    for (config_type, name), expected in expect.items():
        label = f"{TYPE_LABELS[config_type]} '{name}'"
        body = current[config_type].get(name)
        if not expected.exists:
            if body is not None:
                raise Conflict([Problem("name", f"{label} already exists")])
            continue
        if body is None:
            raise NotFound(f"{label} does not exist")
        if expected.etags and body_etag(body) not in expected.etags:
            raise Stale(f"{label} changed since it was read (If-Match does not match its ETag); read it again")


def authorize_names(actor: Actor, requested: Changes) -> None:
    """The gate's first verdict on a change (SEMANTICS.md §7.1), before its bodies are even read.

    - An object the actor may not see does not exist for them: a change naming it is a 404 (``NotFound``),
      whether it exists or not, so the answer tells nothing about what the actor may not see.
    - Changing a config type needs ``CHANGE_CONFIG`` on it (403).
    """
    principal = actor.principal
    if is_system(principal):
        return
    for config_type, entries in requested.items():
        label = TYPE_LABELS[config_type]
        for name in entries:
            if not visible_object(principal, config_type, str(name)):
                raise NotFound(f"{label} '{name}' does not exist")
        require(principal, CHANGE_CONFIG, config_type, what=f"changing {label}s")


def authorize_change(actor: Actor, current: dict, proposed: Changes) -> None:
    """The gate's verdict on what the change's bodies say, the same whatever door the change came through.

    - A pool may newly refer only to backends, templates and validations the actor may see (their absence
      is reported as for a missing object).
    - Departments and projects may newly hold quotas only on pools the actor may see; a project is changed
      only by someone who manages its department (``MANAGE_DEPARTMENT``), before and after the change (403).
    - Members of a unit are given by someone who administers it, never more than they hold themself (403).
    - No escalation: a role after the change may allow nothing the actor is not allowed (403).
    """
    principal = actor.principal
    if is_system(principal):
        return
    problems = []
    for name, body in proposed.get(ConfigType.POOL, {}).items():
        if body is None:
            continue
        before = current[ConfigType.POOL].get(name)
        known = {(t, ref) for t, refs in pool_references(before).items() for _, ref in refs} if before else set()
        for ref_type, refs in pool_references(body).items():
            for field, ref in refs:
                if (ref_type, ref) not in known and not visible_object(principal, ref_type, ref):
                    missing = f"{TYPE_LABELS[ref_type]} '{ref}' does not exist"
                    problems.append(Problem(f"pool '{name}'.{field}", missing))
    problems.extend(_authorize_quota_change(principal, current, proposed))
    if problems:
        raise ConfigError(problems)
    writer = user_roles(principal)
    _authorize_members_change(principal, writer, current, proposed)
    for name, body in proposed.get(ConfigType.ROLE, {}).items():
        if body is None or body == current[ConfigType.ROLE].get(name):
            continue
        missing = ungranted(writer, parse_policies(body["policies"], role=name))
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise AccessDenied(f"role '{name}' would allow {missing[0]}{more}, which you are not allowed yourself")


def _keep_hidden_quotas(principal, current: dict, proposed: Changes) -> Changes:
    """A unit's quotas on pools hidden from the writer stay as they are, whatever the change says of them.

    The writer never saw them (``quotas_visible``), so a body they send lacks them: they are taken from the
    current body. A quota newly naming a hidden pool is left for ``authorize_change`` to refuse.
    """
    for config_type in (ConfigType.DEPARTMENT, ConfigType.PROJECT):
        for name, body in proposed.get(config_type, {}).items():
            before = current[config_type].get(name)
            if body is None or before is None:
                continue
            hidden = hidden_quota_pools(principal, before)
            if not hidden:
                continue
            entries = {entry["nodePool"]: entry for entry in body["resources"]}
            entries.update({entry["nodePool"]: entry for entry in before["resources"] if entry["nodePool"] in hidden})
            proposed[config_type][name] = {**body, "resources": [entries[pool] for pool in sorted(entries)]}
    return proposed


def _authorize_quota_change(principal, current: dict, proposed: Changes) -> list[Problem]:
    """Quotas newly only on visible pools; a project changed only by a manager of its department (SEMANTICS §9)."""
    problems = []
    for config_type in (ConfigType.DEPARTMENT, ConfigType.PROJECT):
        label = TYPE_LABELS[config_type]
        for name, body in proposed.get(config_type, {}).items():
            before = current[config_type].get(name)
            known = set(quota_pools(before)) if before else set()
            for index, pool in enumerate(quota_pools(body) if body else []):
                if pool not in known and not visible_object(principal, ConfigType.POOL, pool):
                    where = f"{label} '{name}'.resources[{index}].nodePool"
                    problems.append(Problem(where, f"pool '{pool}' does not exist"))
            if config_type != ConfigType.PROJECT:
                continue
            for department in sorted({state["department"] for state in (before, body) if state}):
                if not visible_object(principal, ConfigType.DEPARTMENT, department):
                    where = f"{label} '{name}'.department"
                    problems.append(Problem(where, f"department '{department}' does not exist"))
                    continue
                what = f"changing the projects of department '{department}'"
                require(principal, MANAGE_DEPARTMENT, department, what=what)
    return problems


def _authorize_members_change(principal, writer, current: dict, proposed: Changes) -> None:
    """Who belongs to a unit is given only by someone who administers it (SEMANTICS §9.4): a department's members by
    a manager of the department (``MANAGE_DEPARTMENT``; a project's are changed only by a manager of its department
    already), and no member may be given what the writer does not hold themself (the no-escalation rule, §7.1)."""
    for config_type, kind in ((ConfigType.DEPARTMENT, "department"), (ConfigType.PROJECT, "project")):
        for name, body in proposed.get(config_type, {}).items():
            before = current[config_type].get(name)
            old, new = (before or {}).get("members", []), (body or {}).get("members", [])
            if old == new:
                continue
            if config_type == ConfigType.DEPARTMENT:
                require(principal, MANAGE_DEPARTMENT, name, what=f"changing the members of department '{name}'")
            projects = department_projects(current, name) if config_type == ConfigType.DEPARTMENT else ()
            for member in members_added(old, new):
                missing = ungranted(writer, unit_policies(kind, name, member["role"], projects=projects))
                if missing:
                    raise AccessDenied(
                        f"making {member['kind']} '{member['name']}' {member['role']} of {kind} '{name}' would "
                        f"allow {missing[0]}, which you are not allowed yourself"
                    )


def sees_for(principal) -> Sees:
    """Which other objects a refusal may name to ``principal``: those they may see (SEMANTICS §7.4)."""
    if is_system(principal):
        return sees_everything
    return lambda config_type, name: visible_object(principal, config_type, name)


def _validate_change(current: Mapping, state: Mapping, sees: Sees, *, changed: set[ConfigType]) -> None:
    """The whole-state rules that read the ``changed`` types, holding the change responsible only for the
    problems it brings.

    A problem already present before (data from an older version, say) does not block unrelated changes.
    """

    def problems_of(candidate: Mapping) -> list[Problem]:
        try:
            validate_state(candidate, sees, changed)
        except ConfigError as exc:
            return exc.problems
        return []

    before = set(problems_of(current))
    new = [problem for problem in problems_of(state) if problem not in before]
    if new:
        raise ConfigError(new)


def _check_change(config_type: ConfigType, name: str, body: Any, current: dict, sees: Sees) -> list[Problem]:
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
        if config_type == ConfigType.POOL and default_pool_of(current, name):
            backend = named(sees, ConfigType.BACKEND, default_pool_of(current, name))
            return [Problem("", f"{label} is the default pool of {backend} and cannot be deleted")]
        if config_type == ConfigType.POOL and quota_holders(current, name):
            holders = ", ".join(
                f"{TYPE_LABELS[holder_type]} {listed(sees, holder_type, names, quoted=True)}"
                for holder_type, names in quota_holders(current, name).items()
            )
            return [Problem("", f"{label} holds quotas of {holders}; remove them first")]
        if config_type == ConfigType.DEPARTMENT and department_projects(current, name):
            projects = listed(sees, ConfigType.PROJECT, department_projects(current, name))
            return [Problem("", f"{label} still has projects ({projects}); delete or move them first")]
        users = users_of(current, config_type, name)
        if users:
            plural = "s" if len(users) > 1 else ""
            return [Problem("", f"{label} is used by pool{plural} {listed(sees, ConfigType.POOL, users)}")]
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
        ConfigType.DEPARTMENT: Department,
        ConfigType.PROJECT: Project,
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
        _update_or_create(PodTemplate, name, {"spec": body})
    elif config_type == ConfigType.RESOURCE_VALIDATION:
        _update_or_create(ResourceValidation, name, {"rules": body})
    elif config_type == ConfigType.POOL:
        _write_pool(name, body)
    elif config_type == ConfigType.PROJECT:
        fields = {key: value for key, value in body.items() if key != "department"}
        department = Department.objects.filter(name=body["department"])
        if not Project.objects.filter(name=name).update(**fields, department_id=Subquery(department.values("id"))):
            Project.objects.create(name=name, **fields, department=department.get())
    else:
        _update_or_create(model, name, body)


def _update_or_create(model, name: str, fields: dict) -> None:
    """One UPDATE of the row named ``name`` (an INSERT when there is none): the config write lock is held, so
    nobody else writes it meanwhile, and the caller's transaction makes the whole change all-or-nothing."""
    if not model.objects.filter(name=name).update(**fields):
        model.objects.create(name=name, **fields)


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


def _record_revisions(changes: list[tuple], *, actor, description, tags, action) -> list[ConfigRevision]:
    """One revision per changed type, ``changes`` giving each type's changed names and its objects before and
    after; numbered after each type's latest (one query for all) and written at once."""
    if not changes:
        return []
    types = [config_type for config_type, *_ in changes]
    latest = dict(
        ConfigRevision.objects.filter(config_type__in=types)
        .values("config_type")
        .annotate(n=Max("revision"))
        .values_list("config_type", "n")
    )
    revisions = []
    for config_type, changed, before, after in changes:
        kind = action
        if kind is None:
            if len(changed) == 1:
                name = changed[0]
                kind = (
                    RevisionAction.CREATE
                    if name not in before
                    else RevisionAction.DELETE
                    if name not in after
                    else RevisionAction.UPDATE
                )
            else:
                kind = RevisionAction.UPDATE
        revisions.append(
            ConfigRevision(
                config_type=config_type,
                revision=(latest.get(config_type) or 0) + 1,
                name=changed[0] if len(changed) == 1 else "",
                action=kind,
                username=actor.username,
                origin=actor.origin,
                description=description or selectors.describe_change(kind, config_type, changed),
                tags=sorted(set(tags)),
                changed=changed,
                snapshot=dict(after),
            )
        )
    return ConfigRevision.objects.bulk_create(revisions)


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


def platform_change(
    *,
    pool: str,
    platform: str,
    edit: Callable[[dict | None], dict | None],
    actor: Actor,
    expected: Expected,
    description: str = "",
    tags: Iterable[str] = (),
) -> list[ConfigRevision]:
    """Change platform ``platform`` of pool ``pool``, as a change of the whole pool (one POOL revision), under the
    config lock: ``edit`` takes the platform's current body (None when the pool has none of that name) and returns
    the new one (None removes it). ``expected`` is about the platform itself: absent for an add (409 when it is
    there), present, or at one of the ETags of its body (412 otherwise).
    """

    def changes(state):
        body = state[ConfigType.POOL].get(pool)
        if body is None:
            return {}  # gone meanwhile (or hidden): the pool's expectation answers 404
        platforms = dict(body["platforms"])
        current = platforms.get(platform)
        if not expected.exists and current is not None:
            raise Conflict([Problem("name", f"pool '{pool}' already has platform '{platform}'")])
        if expected.exists and current is None:
            raise NotFound(f"pool '{pool}' has no platform '{platform}'")
        if expected.etags and body_etag(current) not in expected.etags:
            raise Stale(f"platform '{platform}' changed since it was read; read it again")
        new = edit(current)
        if new is None:
            platforms.pop(platform)
        else:
            platforms[platform] = new
        return {ConfigType.POOL: {pool: {**body, "platforms": platforms}}}

    return config_apply(
        changes=changes, actor=actor, expect={(ConfigType.POOL, pool): PRESENT}, description=description, tags=tags
    )


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
    expect: Mapping[tuple[ConfigType, str], Expected] | None = None,
) -> list[ConfigRevision]:
    """Create or replace objects of one type from a parsed document (``poolctl config update``)."""
    changes = _resolve_paths(split_document(data, config_type=config_type, name=name), base_dir)
    return config_apply(
        changes=changes, actor=actor, description=description, tags=tags, dry_run=dry_run, expect=expect
    )


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

    Only the objects that differ are changed, each held to the gate as any other change. Refused, with the
    broken references named, when that state no longer fits the rest of the configuration (for example a
    template that a pool created since then uses).
    """
    # A revision of nothing the actor may see does not exist for them. The differences are taken from the whole
    # state it recorded (not the actor's view of it, where every hidden object would look deleted): an object
    # the actor may not see then counts only when the rollback would change it, and that refuses it.
    selectors.config_revision_get(config_type=config_type, revision=revision, user=actor.principal)
    target = ConfigRevision.objects.get(config_type=config_type, revision=revision)

    recorded = {name: _upgraded(config_type, name, body) for name, body in target.snapshot.items()}

    def differences(state: dict) -> Changes:
        current = state[config_type]
        changes: dict[str, Any] = {name: None for name in current if name not in recorded}
        changes.update({name: body for name, body in recorded.items() if current.get(name) != body})
        return {config_type: changes}

    try:
        revisions = config_apply(
            changes=differences,
            actor=actor,
            description=description or f"Rolled back to {config_type}:{revision}",
            action=RevisionAction.ROLLBACK,
            normalized=True,
        )
    except NotFound:
        # The revision's state names objects the actor may not see; naming them here would show them.
        raise AccessDenied(
            f"rolling back to {config_type}:{revision} would change {TYPE_LABELS[config_type]}s you may not see"
        ) from None
    except (Conflict, Stale):
        raise
    except ConfigError as exc:
        raise ConfigError([Problem("", f"cannot roll back to {config_type}:{revision}: {exc}")]) from None
    if not revisions:
        raise ConfigError(f"{config_type}:{revision} is the current state; nothing to roll back")
    return revisions


def _upgraded(config_type: ConfigType, name: str, body: Any) -> Any:
    """A body recorded by an older version, with the fields added since at their defaults.

    Canonical bodies normalise to themselves, so this changes nothing else; a body that no longer passes is
    kept as recorded, and the rollback reports its problems.
    """
    if config_type not in (ConfigType.POOL, ConfigType.BACKEND):
        return body
    try:
        return normalize_body(config_type, name, body)
    except ConfigError:
        return body


def config_tag(
    *, config_type: ConfigType, revision: int, actor: Actor, add: Iterable[str] = (), remove: Iterable[str] = ()
) -> ConfigRevision:
    """Add and remove tags on a revision (tags are labels; they change no configuration)."""
    for tag in add:
        if not tag.strip():
            raise ConfigError("a tag cannot be empty")
    with transaction.atomic():
        config_write_lock()
        target = selectors.config_revision_get(config_type=config_type, revision=revision, user=actor.principal)
        require(actor.principal, CHANGE_CONFIG, config_type, what="tagging revisions")
        target.tags = sorted((set(target.tags) | {t.strip() for t in add}) - set(remove))
        target.save(update_fields=["tags"])
    return target


def pool_maintenance_set(*, name: str, enable: bool, actor: Actor) -> list[ConfigRevision]:
    """Start or end a pool's maintenance: a config change like any other, with its revision."""

    def switched(state: dict) -> Changes:
        body = state[ConfigType.POOL].get(name)
        return {ConfigType.POOL: {name: {**body, "enable_maintenance": enable}}} if body else {}

    return config_apply(
        changes=switched,
        actor=actor,
        normalized=True,
        expect={(ConfigType.POOL, name): PRESENT},
        description=f"{'Started' if enable else 'Ended'} maintenance of pool {name}",
    )


def builtins_restore(*, actor: Actor) -> list[ConfigRevision]:
    """Put every built-in object back to its original body (creating the missing ones)."""
    return config_apply(
        changes=copy.deepcopy(BUILTINS), actor=actor, description="Restored built-in configuration", normalized=True
    )


def pool_role_generate(
    *, name: str, actor: Actor, description: str = "", dry_run: bool = False
) -> list[ConfigRevision]:
    """Create or refresh the role ``osmo-<prefix>`` granting ``workflow:*`` and ``pool:Read`` on ``pool/<prefix>*``."""
    if not name.startswith("osmo-") or len(name) == len("osmo-"):
        raise ConfigError(f"role name '{name}' must be osmo-<pool name prefix>")
    prefix = name[len("osmo-") :]

    def generated(state: dict) -> Changes:
        body = {
            "description": description or f"Use of the pools whose names start with '{prefix}'",
            "policies": pool_role_policy_data(prefix),
        }
        existing = state[ConfigType.ROLE].get(name)
        if existing:
            body["external_roles"] = existing["external_roles"]
            body["sync_mode"] = existing["sync_mode"]
        return {ConfigType.ROLE: {name: body}}

    return config_apply(changes=generated, actor=actor, dry_run=dry_run)
