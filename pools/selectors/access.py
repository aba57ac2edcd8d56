"""Reads about roles: what a role's policies allow, which pools each role reaches, and what a profile shows."""

from __future__ import annotations

from collections.abc import Iterable

from accounts.models import Role

from ..configs import role_body
from ..engine.errors import EngineError, NotFound
from ..engine.permissions import VIEW_POOL
from ..engine.policy import RoleDefinition, evaluate_access, parse_policies, visible_names
from .capacity import pool_list


def role_definitions(names: Iterable[str]) -> list[RoleDefinition]:
    """Roles by name as engine definitions; ``osmo-default`` is always held. Unknown names are an error."""
    wanted = set(names) | {"osmo-default"}
    roles = {role.name: role for role in Role.objects.filter(name__in=wanted)}
    missing = sorted(wanted - roles.keys())
    if missing:
        raise NotFound(f"role '{missing[0]}' does not exist")
    return [
        RoleDefinition(name=name, policies=parse_policies(roles[name].policies, role=name)) for name in sorted(roles)
    ]


def role_check(*, roles: Iterable[str], action: str, resource: str = "") -> dict:
    """Would a user holding ``roles`` be allowed ``action`` on ``resource``, and by which policy."""
    decision = evaluate_access(role_definitions(roles), action, resource)
    return {"action": action, "resource": resource, **decision.as_dict()}


def role_reach(*, user, pool_names: Iterable[str]) -> list[dict]:
    """The roles ``user`` may see, with their policies and the pools each one alone lets a holder see."""
    pool_names = list(pool_names)
    rows = []
    for role in Role.objects.restrict(user).order_by("name"):
        try:
            definition = RoleDefinition(name=role.name, policies=parse_policies(role.policies, role=role.name))
            reach = visible_names([definition], VIEW_POOL.action, VIEW_POOL.resource_type, pool_names)
        except EngineError:
            reach = []
        rows.append({"role": role, "body": role_body(role), "pools": sorted(reach)})
    return rows


def roles_visible(*, user):
    """Roles ``user`` may read."""
    return Role.objects.restrict(user)


def profile_pools(user) -> dict:
    """The profile's section on pools (``accounts.selectors.PROFILE_SECTIONS``): the pools ``user`` may see."""
    return {
        "pools": [
            {"name": row["name"], "status": row["status"], "backend": row["backend"]} for row in pool_list(user=user)
        ]
    }
