"""From an identity provider's claims to the roles a user holds (SEMANTICS §7, identity).

Keycloak puts groups in ``groups`` (full paths like ``/team-a`` or ``/org/team-a``, or plain names) and
roles in ``roles``, ``realm_access.roles`` and ``resource_access.<client>.roles``. A claim value equal
to a role's name grants that role; so does a value listed in the role's ``external_roles``. Values match
whole: ``/team-a/osmo-admin`` is that path and nothing shorter, so whoever may create a subgroup
somewhere in the realm cannot name it after a role and receive that role. Each role's
``sync_mode`` then decides what a login does to it: ``import`` only adds it, ``force`` also takes it
away when the provider stops granting it, ``ignore`` leaves it as it is.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

SYNC_MODES = ("import", "force", "ignore")


@dataclass(frozen=True)
class RoleMapping:
    """What identity needs of a role: its name, the provider names mapped to it, and its sync mode."""

    name: str
    external_roles: tuple[str, ...] = ()
    sync_mode: str = "import"


@dataclass(frozen=True)
class RoleChange:
    """The roles a login adds and removes, and the user's roles afterwards."""

    added: frozenset[str] = field(default_factory=frozenset)
    removed: frozenset[str] = field(default_factory=frozenset)
    roles: frozenset[str] = field(default_factory=frozenset)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def group_values(group: str) -> set[str]:
    """What one group of the ``groups`` claim counts as: its whole value, and a top-level path its plain name.

    ``/team-a`` gives ``/team-a`` and ``team-a``; ``team-a`` gives ``team-a``; ``/team-a/osmo-admin`` gives
    only ``/team-a/osmo-admin``, which grants a role only through that role's ``external_roles``.
    """
    values = {group}
    if group.startswith("/") and group.count("/") == 1 and len(group) > 1:
        values.add(group[1:])
    return values


# At most this many groups of one user are kept, each at most this long: a bound on what a token can make us store.
MAX_GROUPS, MAX_GROUP_LENGTH = 1000, 255


def claim_groups(claims: Mapping) -> list[str]:
    """The ``groups`` claim as kept with the user (sorted, each once, bounded): what unit members of kind
    ``group`` are matched against, whole value by whole value (``group_values``)."""
    groups = {group for group in _strings(claims.get("groups")) if 0 < len(group) <= MAX_GROUP_LENGTH}
    return sorted(groups)[:MAX_GROUPS]


def claim_values(claims: Mapping, *, client_id: str = "") -> set[str]:
    """Every group and role value the claims carry, each whole (a top-level group path also by its name)."""
    values: set[str] = set()
    for group in _strings(claims.get("groups")):
        values.update(group_values(group))
    values.update(_strings(claims.get("roles")))
    realm = claims.get("realm_access")
    if isinstance(realm, Mapping):
        values.update(_strings(realm.get("roles")))
    clients = claims.get("resource_access")
    if isinstance(clients, Mapping):
        wanted = [clients.get(client_id)] if client_id else list(clients.values())
        for client in wanted:
            if isinstance(client, Mapping):
                values.update(_strings(client.get("roles")))
    return values


def roles_from_claims(claims: Mapping, roles: Iterable[RoleMapping], *, client_id: str = "") -> set[str]:
    """The names of the roles these claims grant: by equal name or through ``external_roles``."""
    values = claim_values(claims, client_id=client_id)
    return {role.name for role in roles if role.name in values or values.intersection(role.external_roles)}


def reconcile_roles(held: Iterable[str], granted: Iterable[str], roles: Iterable[RoleMapping]) -> RoleChange:
    """Apply each role's ``sync_mode`` to a login: what to add, what to remove, and the result.

    Roles unknown to ``roles`` are left alone (they are not the provider's to manage).
    """
    held, granted = frozenset(held), frozenset(granted)
    added, removed = set(), set()
    for role in roles:
        if role.sync_mode == "ignore":
            continue
        if role.name in granted and role.name not in held:
            added.add(role.name)
        elif role.sync_mode == "force" and role.name in held and role.name not in granted:
            removed.add(role.name)
    return RoleChange(frozenset(added), frozenset(removed), (held | added) - removed)
