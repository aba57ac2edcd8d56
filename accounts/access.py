"""The gate: who is asking, which roles they hold, and what the catalogue's permissions allow them.

Every decision of the product comes from here, for every door (page, htmx fragment, API, ``poolctl``,
Django admin, task). A *principal* is a Django user, or ``SYSTEM`` for the product's own work (tasks, the
demo, an operator's ``poolctl`` on the server without ``--as``), which may do everything. Decisions use the
engine's policy evaluation over the principal's roles (SEMANTICS.md §7), so a page, an API list, a write
service and ``poolctl role check`` can never disagree.

Each role is a Django group of the same name; a person holds ``osmo-default`` always, the roles of their
groups, and ``osmo-admin`` when they are a superuser.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.apps import apps
from django.db.models import Q

from pools.engine.errors import AccessDenied, NotFound
from pools.engine.permissions import ADMIN_ROLE, DEFAULT_ROLE, Permission
from pools.engine.policy import Decision, RoleDefinition, evaluate_access, parse_policies, visible_names
from pools.engine.policy import allows_some as roles_allow_some

_CACHE = "_gpupool_roles"
# Roles a user holds beyond their groups' (``user -> [RoleDefinition]``): what the pool domain makes of belonging to
# a department or a project (SEMANTICS §9.4), plugged in by ``pools.apps``, so every decision below counts them.
GRANTED_ROLES: list = []


class _System:
    """The product itself acting (tasks, migrations, the demo, the operator's CLI): every request is allowed."""

    is_authenticated = True
    is_active = True
    username = "system"

    def __repr__(self):
        return "SYSTEM"

    def get_username(self) -> str:
        return self.username


SYSTEM = _System()


def is_system(principal) -> bool:
    return principal is SYSTEM


def user_role_names(user) -> set[str]:
    """The names of the roles ``user`` holds (none for an anonymous or inactive user, or for SYSTEM)."""
    if user is None or is_system(user) or not user.is_authenticated or not user.is_active:
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
    roles = [
        RoleDefinition(name=name, policies=parse_policies(policies, role=name))
        for name, policies in _held_roles(user).order_by("name").values_list("name", "policies")
    ]
    if user is not None and not is_system(user) and user.is_authenticated and user.is_active:
        roles += [role for granted in GRANTED_ROLES for role in granted(user)]
    if user is not None and not is_system(user):
        setattr(user, _CACHE, roles)
    return roles


def _held_roles(user):
    """The roles ``user_role_names`` names, read with the user's groups in one query."""
    if user is None or is_system(user) or not user.is_authenticated or not user.is_active:
        return _roles().none()
    always = [DEFAULT_ROLE, ADMIN_ROLE] if user.is_superuser else [DEFAULT_ROLE]
    groups = apps.get_model("auth", "Group").objects.filter(user=user).values("name")
    return _roles().filter(Q(name__in=always) | Q(name__in=groups))


def forget_roles(user) -> None:
    """Drop the cached roles (after the user's roles changed)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def _roles():
    """The roles' table (the model is looked up, not imported: ``accounts.models`` builds on this module)."""
    return apps.get_model("accounts", "Role").objects


def user_can(user, action: str, resource: str = "") -> Decision:
    """Whether ``user`` may do ``action`` on ``resource``, and which role and policy decided it.

    For requests typed by people (``poolctl access explain``, ``role check``); code asks ``allows``.
    """
    if is_system(user):
        return Decision(True, None, None, None, "the system may do everything")
    return evaluate_access(user_roles(user), action, resource)


def allows(principal, permission: Permission, name: str = "") -> bool:
    """Whether ``principal`` holds ``permission`` on the object ``name`` (or unscoped)."""
    return user_can(principal, *permission.on(name)).allowed


def allows_some(principal, permission: Permission) -> bool:
    """Whether ``principal`` holds ``permission`` on at least one object of its type there could be (an unscoped
    permission: whether they hold it). What a way in is offered by; each object is decided by ``allows``."""
    if is_system(principal):
        return True
    if permission.resource_type is None:
        return allows(principal, permission)
    return roles_allow_some(user_roles(principal), str(permission.action), str(permission.resource_type))


def require(principal, permission: Permission, name: str = "", *, what: str = "") -> None:
    """Raise ``AccessDenied`` (403), naming the missing permission, unless ``principal`` holds it.

    ``what`` says what was being done (``"changing pools"``) for the message.
    """
    decision = user_can(principal, *permission.on(name))
    if not decision.allowed:
        doing = f"{what} needs " if what else "this needs "
        raise AccessDenied(f"{doing}{permission.describe(name)}: {decision.reason}")


def require_visible(principal, permission: Permission, name: str, *, label: str) -> None:
    """Raise ``NotFound`` (404) unless ``principal`` may see ``name``: what one may not see does not exist."""
    if not allows(principal, permission, name):
        raise NotFound(f"{label} '{name}' does not exist")


def visible(principal, permission: Permission, names: Iterable[str]) -> list[str]:
    """The names among ``names`` (in order) on which ``principal`` holds ``permission``."""
    names = list(names)
    if is_system(principal):
        return names
    return visible_names(user_roles(principal), str(permission.action), str(permission.resource_type), names)


def is_console_admin(user) -> bool:
    """Staff, superusers and holders of ``osmo-admin`` may use the Django admin."""
    return bool(user_role_names(user)) and (user.is_staff or ADMIN_ROLE in user_role_names(user))
