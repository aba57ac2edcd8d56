"""The gate before every door: what the catalogue (``pools.engine.doors``) says a door needs, decided for one caller
and one request before the door's own code runs.

The base classes of the pages (``pools.views.base``), of the API (``pools.api.base``) and ``poolctl`` call
``door_check`` with the request's parameters (the URL's, the query string's, and the body's for names a change
takes from it); nothing behind a door checks a permission itself. ``offers`` tells a page which controls to show.
"""

from __future__ import annotations

from collections.abc import Mapping

from accounts.access import allows, allows_some, is_system, require
from pools.choices import TYPE_LABELS, ConfigType
from pools.configs import parse_config_type, parse_revision_number
from pools.engine.doors import CONFIG_OBJECT, JOB, NODE, REVISION, WORKLOAD, Door
from pools.engine.errors import ConfigError, NotFound
from pools.engine.permissions import (
    CHANGE_CONFIG,
    MANAGE_DEPARTMENT,
    VIEW_BACKEND,
    VIEW_CONFIG,
    Permission,
    ResourceType,
)
from pools.models import ConfigRevision, Node
from pools.querysets import visible_object
from pools.selectors.jobs import job_get
from pools.selectors.workloads import workload_missing, workload_seen

# The config type each object-read permission's objects are.
_TYPE_OF = {
    ResourceType.POOL: ConfigType.POOL,
    ResourceType.BACKEND: ConfigType.BACKEND,
    ResourceType.ROLE: ConfigType.ROLE,
    ResourceType.DEPARTMENT: ConfigType.DEPARTMENT,
    ResourceType.PROJECT: ConfigType.PROJECT,
}


def door_check(principal, door: Door, params: Mapping[str, object]) -> None:
    """Raise ``NotFound`` (404) when the object ``door`` names does not exist for ``principal`` (whether it exists or
    not), then ``AccessDenied`` (403) when the change it makes needs what ``principal`` does not hold.

    ``params`` holds the request's parameters by name; a door whose object or target is not among them (a name
    the body gives and the service reads) is left to the service, which decides every write again.
    """
    if door.public or door.signed_in or is_system(principal):
        return
    if door.checks_object:
        value = params.get(door.object) if not door.object.isupper() else door.object
        if value is not None and not _sees(principal, door, str(value), params):
            raise NotFound(_missing(door, str(value), params))
    if door.acts is not None:
        for target in _targets(principal, door, params):
            require(principal, door.acts, target)


def allowed(principal, permission: Permission, target: str = "") -> bool:
    """Whether to offer a control that needs ``permission`` on ``target`` (the door behind it decides again)."""
    return allows(principal, permission, target)


def may_enter(principal, door: Door) -> bool:
    """Whether to offer a way to ``door`` without naming an object (a link of the navigation): whether ``principal``
    holds what it reads on some object there could be (on its type, for a type read as a whole), and what it acts
    with on its type. The door decides again, object by object."""
    if door.public or door.signed_in or is_system(principal):
        return True
    if door.acts is not None:
        if door.acts.resource_type is None:
            targets = [""]
        elif door.acts_on and not door.acts_on.startswith("{"):
            targets = door.acts_on.split("|")  # a type, or either of two
        else:
            targets = []  # a name only the request gives: decided when it is sent
        if targets and not any(allows(principal, door.acts, target) for target in targets):
            return False
    if door.reads is None:
        return True
    if door.reads is VIEW_CONFIG:
        return allows(principal, VIEW_CONFIG, door.of_type or door.object)
    return allows_some(principal, door.reads)


def project_change_check(principal, department: str) -> None:
    """Raise ``AccessDenied`` (403) unless ``principal`` may change the projects of ``department``: asked when a
    project's editor opens, in the words the service uses when it decides the change itself."""
    require(principal, MANAGE_DEPARTMENT, department, what=f"changing the projects of department '{department}'")


def may_change_quota(principal, kind: str, department: str) -> bool:
    """Whether to offer a change of a department's quota, or of a project's of ``department``: ``config:Update`` on
    the type, and for a project ``department:Update`` on its department (the service decides again)."""
    if kind == "department":
        return allows(principal, CHANGE_CONFIG, ConfigType.DEPARTMENT)
    return allows(principal, CHANGE_CONFIG, ConfigType.PROJECT) and allows(principal, MANAGE_DEPARTMENT, department)


def _sees(principal, door: Door, value: str, params: Mapping[str, object]) -> bool:
    if door.kind == NODE:
        nodes = Node.objects.restrict(principal).filter(name=value)
        backend = params.get("backend")
        return (nodes.filter(backend__name=backend) if backend else nodes).exists()
    if door.kind == REVISION:
        config_type, number = _revision(params)
        return ConfigRevision.objects.restrict(principal).filter(config_type=config_type, revision=number).exists()
    if door.kind == CONFIG_OBJECT:
        return visible_object(principal, _config_type(params), value)
    if door.kind == JOB:
        job = job_get(value)
        return job is not None and allows(principal, VIEW_BACKEND, job["backend"])
    if door.kind == WORKLOAD:
        return workload_seen(
            user=principal, backend=params.get("backend"), namespace=str(params.get("namespace", "")), name=value
        )
    if door.object.isupper():  # seen type by type: pod templates, validations
        return allows(principal, door.reads, door.object)
    config_type = _TYPE_OF.get(door.reads.resource_type)
    if config_type is not None:
        return visible_object(principal, config_type, value)
    return allows(principal, door.reads, value)


def _missing(door: Door, value: str, params: Mapping[str, object]) -> str:
    """The words a missing object gets from the selectors, so that a hidden one answers exactly the same."""
    if door.kind == NODE:
        return f"node '{value}' does not exist"
    if door.kind == REVISION:
        return f"revision {params.get('config_type', '')}:{params.get('revision', '')} does not exist"
    if door.kind == JOB:
        return f"job '{value}' does not exist"
    if door.kind == WORKLOAD:
        return workload_missing(params.get("backend"), str(params.get("namespace", "")), value)
    if door.kind == CONFIG_OBJECT:
        return f"{TYPE_LABELS[_config_type(params)]} '{value}' does not exist"
    if door.object.isupper():
        return f"{TYPE_LABELS[ConfigType(door.object)]}s do not exist"
    config_type = _TYPE_OF.get(door.reads.resource_type)
    label = TYPE_LABELS[config_type] if config_type else str(door.reads.resource_type)
    return f"{label} '{value}' does not exist"


def _config_type(params: Mapping[str, object]) -> ConfigType:
    try:
        return parse_config_type(str(params.get("config_type", "")))
    except ConfigError:
        raise NotFound(f"unknown config type '{params.get('config_type', '')}'") from None


def _revision(params: Mapping[str, object]) -> tuple[str, int]:
    """The config type and revision number a revision's door names; a type that does not exist answers as a missing
    revision, a number out of range is bad input (``ConfigError`` naming ``revision``)."""
    number = parse_revision_number(str(params.get("revision", "")), "revision")
    try:
        return parse_config_type(str(params.get("config_type", ""))), number
    except ConfigError:
        raise NotFound(
            f"revision {params.get('config_type', '')}:{params.get('revision', '')} does not exist"
        ) from None


def _targets(principal, door: Door, params: Mapping[str, object]) -> list[str]:
    """What ``door.acts`` is about for this request: none when unscoped; nothing to decide here (an empty list)
    when the target is a name only the service can read (a body's, a node's backend)."""
    if door.acts.resource_type is None:
        return [""]
    if not door.acts_on:
        return []
    if "|" in door.acts_on:  # either type: the one the change names is checked by the service
        choices = door.acts_on.split("|")
        return [] if any(allows(principal, door.acts, choice) for choice in choices) else [choices[0]]
    if door.acts_on.startswith("{"):
        value = params.get(door.acts_on[1:-1])
        if value is None:
            return []
        if door.acts_on == "{config_type}":
            try:
                return [parse_config_type(str(value))]
            except ConfigError:
                raise NotFound(f"unknown config type '{value}'") from None
        return [str(value)]
    return [door.acts_on]
