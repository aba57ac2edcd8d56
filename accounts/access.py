"""Who may do what: a user's roles, access decisions and the pools they may see (SEMANTICS.md §7).

Each role is a Django group of the same name; a user holds ``osmo-default`` always, the roles of their
groups, and ``osmo-admin`` when they are a superuser. Decisions come from the engine's policy
evaluation, so a page, an API list and ``poolctl role check`` can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

from pools.engine.policy import Decision, RoleDefinition, evaluate_access, parse_policies, visible_pools

from .models import Role

DEFAULT_ROLE = "osmo-default"
ADMIN_ROLE = "osmo-admin"
_CACHE = "_gpupool_roles"


def user_role_names(user) -> set[str]:
    """The names of the roles ``user`` holds (none for an anonymous or inactive user)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    names = {DEFAULT_ROLE, *user.groups.values_list("name", flat=True)}
    if user.is_superuser:
        names.add(ADMIN_ROLE)
    return names


def user_roles(user) -> list[RoleDefinition]:
    """The user's roles as engine definitions; cached on the user object for the request."""
    cached = getattr(user, _CACHE, None)
    if cached is not None:
        return cached
    names = user_role_names(user)
    roles = [
        RoleDefinition(name=role.name, policies=parse_policies(role.policies, role=role.name))
        for role in Role.objects.filter(name__in=names).order_by("name")
    ]
    if user is not None:
        setattr(user, _CACHE, roles)
    return roles


def forget_roles(user) -> None:
    """Drop the cached roles (after the user's roles changed)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def user_can(user, action: str, resource: str = "") -> Decision:
    """Whether ``user`` may do ``action`` on ``resource``, and which role and policy decided it."""
    return evaluate_access(user_roles(user), action, resource)


def visible_pool_names(user, pool_names: Iterable[str], action: str = "pool:Read") -> set[str]:
    """The pools among ``pool_names`` that ``user`` may see (a cross-role Deny hides a pool here too)."""
    return set(visible_pools(user_roles(user), pool_names, action))


def is_console_admin(user) -> bool:
    """Staff, superusers and holders of ``osmo-admin`` may use the Django admin."""
    return bool(user_role_names(user)) and (user.is_staff or ADMIN_ROLE in user_role_names(user))
