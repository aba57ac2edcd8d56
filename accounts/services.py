"""Writes for accounts: the local administrator, sign-in from identity-provider claims, API tokens, and
the guardian object permissions on pools that mirror the role policies."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone
from guardian.models import UserObjectPermission

from pools.engine.errors import NotFound
from pools.engine.identity import RoleMapping, reconcile_roles, roles_from_claims
from pools.engine.permissions import USE_POOL, VIEW_POOL
from pools.models import Pool

from .access import allows, forget_roles
from .models import ApiToken, ExternalIdentity, Role
from .tokens import DISPLAY_PREFIX_LENGTH, token_digest, token_generate

# Guardian permission on a pool -> the policy action it mirrors (on resource ``pool/<name>``).
POOL_PERMISSIONS = {"view_pool": VIEW_POOL, "use_pool": USE_POOL}
POOL_PERMISSION_NAMES = {"view_pool": "Can view pool", "use_pool": "Can use pool (run workflows)"}
# A token's last-used time is written at most this often, so scripts do not write on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def local_admin_ensure(*, username: str = "admin") -> tuple[str, str | None]:
    """Make sure a local superuser exists; returns (username, password if known).

    The generated password is kept in ``var/admin-password`` (mode 600) so ``make run`` can print it
    again; an administrator who changed it keeps their own.
    """
    users = get_user_model()
    password_file = Path(settings.VAR_DIR) / "admin-password"
    if users.objects.filter(is_superuser=True).exists():
        existing = users.objects.filter(is_superuser=True).order_by("pk").first()
        known = password_file.read_text().strip() if password_file.exists() else None
        if known and not existing.check_password(known):
            known = None
        return existing.get_username(), known
    password = secrets.token_urlsafe(12)
    users.objects.create_superuser(username=username, email="", password=password)
    password_file.write_text(password)
    password_file.chmod(0o600)
    return username, password


# --- sign-in from an identity provider ------------------------------------------------------------------


def role_mappings() -> list[RoleMapping]:
    """Every role as the engine's identity mapping: name, external roles and sync mode."""
    return [
        RoleMapping(name=name, external_roles=tuple(external or ()), sync_mode=sync_mode)
        for name, external, sync_mode in Role.objects.values_list("name", "external_roles", "sync_mode")
    ]


@transaction.atomic
def identity_sign_in(*, claims: Mapping, issuer: str, client_id: str, record_login: bool = True):
    """The user behind verified ``claims``, created on first sight, matched by ``(issuer, sub)`` after that.

    Username (``preferred_username``), email and names follow the claims at each sign-in; roles follow
    the claims' groups and roles per each role's ``sync_mode`` (SEMANTICS.md §7). A username already
    taken by another account gets a suffix rather than joining that account.
    """
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise ValueError("the claims carry no subject (sub)")
    users = get_user_model()
    identity = ExternalIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    wanted_name = str(claims.get("preferred_username") or claims.get("email") or subject)[:150]
    if identity is None:
        user = users(username=_free_username(wanted_name, subject))
        user.set_unusable_password()
        _copy_profile(user, claims)
        user.save()
        identity = ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject)
    else:
        user = identity.user
        before = (user.username, user.email, user.first_name, user.last_name)
        if user.username != wanted_name:
            user.username = _free_username(wanted_name, subject, exclude=user.pk)
        _copy_profile(user, claims)
        if (user.username, user.email, user.first_name, user.last_name) != before:
            user.save(update_fields=["username", "email", "first_name", "last_name"])
        if record_login:
            ExternalIdentity.objects.filter(pk=identity.pk).update(last_login_at=timezone.now())
    user_roles_reconcile(user=user, claims=claims, client_id=client_id)
    return user


def _copy_profile(user, claims: Mapping) -> None:
    user.email = str(claims.get("email") or "")[:254]
    user.first_name = str(claims.get("given_name") or "")[:150]
    user.last_name = str(claims.get("family_name") or "")[:150]


def _free_username(wanted: str, subject: str, *, exclude: int | None = None) -> str:
    taken = get_user_model().objects.filter(username=wanted)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if not taken.exists():
        return wanted
    return f"{wanted[:140]}.{token_digest(subject)[:8]}"


def user_roles_reconcile(*, user, claims: Mapping, client_id: str) -> set[str]:
    """Give ``user`` the roles the claims grant (and take away ``force`` roles they no longer grant).

    Returns the roles held afterwards. Pool permissions are recomputed when anything changed.
    """
    mappings = role_mappings()
    granted = roles_from_claims(claims, mappings, client_id=client_id)
    held = set(user.groups.values_list("name", flat=True))
    change = reconcile_roles(held, granted, mappings)
    if change.added:
        user.groups.add(*Group.objects.filter(name__in=change.added))
    if change.removed:
        user.groups.remove(*Group.objects.filter(name__in=change.removed))
    if change.added or change.removed:
        forget_roles(user)
        pool_permissions_sync(users=[user])
    return set(change.roles)


# --- personal access tokens -----------------------------------------------------------------------------


def api_token_create(*, user, name: str, lifetime: timedelta) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the stored row and the token itself, which is never shown again."""
    name = name.strip()
    if not name:
        raise ValueError("give the token a name (what script or machine uses it)")
    secret = token_generate()
    token = ApiToken.objects.create(
        user=user,
        name=name[:128],
        prefix=secret[:DISPLAY_PREFIX_LENGTH],
        digest=token_digest(secret),
        expires_at=timezone.now() + lifetime,
    )
    return token, secret


def api_token_revoke(*, user, token_id: int) -> ApiToken:
    """Revoke one of ``user``'s tokens (revoking twice keeps the first time). Another user's token is NotFound."""
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound(f"token {token_id} does not exist")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_use(*, secret: str):
    """The active owner of a usable token (recording when it was last used), or None."""
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(secret)).first()
    now = timezone.now()
    if token is None or not token.is_usable(now) or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


# --- guardian permissions mirroring the policies --------------------------------------------------------


def pool_permissions() -> dict[str, Permission]:
    """The guardian permissions on pools (``view_pool`` and the custom ``use_pool``), created when missing."""
    content_type = ContentType.objects.get_for_model(Pool)
    return {
        codename: Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": POOL_PERMISSION_NAMES[codename]}
        )[0]
        for codename in POOL_PERMISSIONS
    }


@transaction.atomic
def pool_permissions_sync(*, users: Iterable | None = None) -> dict[str, int]:
    """Make the guardian object permissions on pools equal what the role policies decide.

    Per user (not per role group): a Deny in one role takes away what another role allows, which
    a union of group permissions cannot express. ``users`` limits the work to those users (after their
    roles changed); None recomputes everyone (after a role or pool changed). Returns counts added and removed.
    """
    permissions = pool_permissions()
    permission_ids = {permission.pk: codename for codename, permission in permissions.items()}
    content_type = ContentType.objects.get_for_model(Pool)
    pools = list(Pool.objects.values_list("pk", "name"))
    people = get_user_model().objects.all() if users is None else [user for user in users]
    wanted: set[tuple[int, int, str]] = set()
    for person in people:
        forget_roles(person)
        for codename, action in POOL_PERMISSIONS.items():
            wanted.update(
                (person.pk, permissions[codename].pk, str(pool_pk))
                for pool_pk, pool_name in pools
                if allows(person, action, pool_name)
            )
    existing_rows = UserObjectPermission.objects.filter(content_type=content_type, permission_id__in=permission_ids)
    if users is not None:
        existing_rows = existing_rows.filter(user_id__in=[person.pk for person in people])
    existing = {
        (row[1], row[2], row[3]): row[0]
        for row in existing_rows.values_list("pk", "user_id", "permission_id", "object_pk")
    }
    stale = [pk for key, pk in existing.items() if key not in wanted]
    UserObjectPermission.objects.filter(pk__in=stale).delete()
    missing = wanted - existing.keys()
    UserObjectPermission.objects.bulk_create(
        UserObjectPermission(user_id=user_id, permission_id=permission_id, content_type=content_type, object_pk=pk)
        for user_id, permission_id, pk in missing
    )
    return {"added": len(missing), "removed": len(stale)}


def access_config_changed(*, config_types: Iterable[str]) -> None:
    """Call after a configuration change: a changed role or pool changes who may see and use which pool."""
    if {"ROLE", "POOL"} & {str(config_type) for config_type in config_types}:
        pool_permissions_sync()
