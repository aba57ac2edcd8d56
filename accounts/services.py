"""Writes for accounts: the local administrator, sign-in from identity-provider claims, users and service
accounts with the roles they hold (held to the no-escalation rule), and API tokens."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from pools.engine.errors import AccessDenied, ConfigError, Conflict, NotFound
from pools.engine.identity import RoleMapping, claim_groups, reconcile_roles, roles_from_claims
from pools.engine.permissions import ADMIN_ROLE, CHANGE_USER, VIEW_USER
from pools.engine.policy import parse_policies, ungranted

from .access import forget_roles, is_system, require, require_visible, user_role_names, user_roles
from .models import ApiToken, ExternalIdentity, Role, ServiceAccount
from .signals import roles_changed
from .tokens import DISPLAY_PREFIX_LENGTH, token_digest, token_generate

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
    groups = claim_groups(claims)
    if identity is None:
        user = users(username=_free_username(wanted_name, subject))
        user.set_unusable_password()
        _copy_profile(user, claims)
        user.save()
        identity = ExternalIdentity.objects.create(user=user, issuer=issuer, subject=subject, groups=groups)
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
        if identity.groups != groups:
            ExternalIdentity.objects.filter(pk=identity.pk).update(groups=groups)
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
        roles_changed.send(sender=Role, users=[user])
    return set(change.roles)


# --- personal access tokens -----------------------------------------------------------------------------


def api_token_create(*, user, name: str, lifetime: timedelta, principal=None) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the stored row and the token itself, which is never shown again.

    ``principal`` is who asks, when not the user themself (an administrator making a service account's
    token): since the token acts as the user, they need everything the user may do (``_require_acting_on``).
    """
    name = name.strip()
    if not name:
        raise ConfigError("give the token a name (what script or machine uses it)", field="name")
    if principal is not None and principal != user:
        _require_acting_on(principal, user, what=f"making a token for '{user.get_username()}'")
    secret = token_generate()
    token = ApiToken.objects.create(
        user=user,
        name=name[:128],
        prefix=secret[:DISPLAY_PREFIX_LENGTH],
        digest=token_digest(secret),
        expires_at=timezone.now() + lifetime,
    )
    return token, secret


def api_token_create_for(*, username: str, name: str, lifetime: timedelta, principal) -> tuple[ApiToken, str]:
    """``api_token_create`` for the user named ``username``, as someone else asks it (the access page, the API,
    ``poolctl token create --user``): a user ``principal`` may not see does not exist for them."""
    require_visible(principal, VIEW_USER, username, label="user")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"user '{username}' does not exist")
    return api_token_create(user=user, name=name, lifetime=lifetime, principal=principal)


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


# --- users and service accounts (SEMANTICS.md §7.2) -------------------------------------------------------


def _require_user_change(principal, username: str, *, what: str) -> None:
    """404 for a user the principal may not see, 403 without ``CHANGE_USER`` on them."""
    require_visible(principal, VIEW_USER, username, label="user")
    require(principal, CHANGE_USER, username, what=what)


def _require_acting_on(principal, user, *, what: str) -> None:
    """What any act on another user needs (SEMANTICS §7.4): ``CHANGE_USER`` on them (404 when they are hidden)
    and everything they can do: every Allow of every role they hold, and for a superuser, being one (403).

    A token made for someone acts as them, and roles changed for someone change what they can do: without this
    rule a user manager could become an administrator through the administrator's own account.
    """
    username = user.get_username()
    _require_user_change(principal, username, what=what)
    if is_system(principal):
        return
    if user.is_superuser and not principal.is_superuser:
        raise AccessDenied(f"{what} needs being a superuser, as '{username}' is one")
    held = sorted(user_role_names(user))
    roles = Role.objects.filter(name__in=held).order_by("name")
    writer = user_roles(principal)
    for role in roles:
        missing = ungranted(writer, parse_policies(role.policies, role=role.name))
        if missing:
            raise AccessDenied(
                f"{what} needs everything '{username}' may do; their role '{role.name}' allows {missing[0]}, "
                "which you are not allowed yourself"
            )


def _require_grantable(principal, role_names, *, verb: str = "giving") -> list[Role]:
    """The roles named, refusing any the principal may not see (404) or does not hold entirely (403).

    The no-escalation rule (SEMANTICS.md §7.1): one may give only roles whose every Allow one holds.
    """
    roles = {role.name: role for role in Role.objects.restrict(principal).filter(name__in=list(role_names))}
    for name in role_names:
        if name not in roles:
            raise NotFound(f"role '{name}' does not exist")
    if is_system(principal):
        return list(roles.values())
    writer = user_roles(principal)
    for name, role in sorted(roles.items()):
        missing = ungranted(writer, parse_policies(role.policies, role=name))
        if missing:
            raise AccessDenied(f"{verb} role '{name}' would allow {missing[0]}, which you are not allowed yourself")
    return list(roles.values())


def _valid_username(username: str) -> str:
    username = (username or "").strip()
    field = get_user_model()._meta.get_field("username")
    try:
        field.run_validators(username)
    except ValidationError as exc:
        raise ConfigError(" ".join(exc.messages), field="username") from None
    if not username or len(username) > field.max_length:
        raise ConfigError(f"a username has 1 to {field.max_length} characters", field="username")
    return username


@transaction.atomic
def user_create(
    *, principal, username: str, service_account: bool = False, roles=(), email: str = "", description: str = ""
):
    """Create a person's local account or a service account, holding ``roles``.

    Needs ``CHANGE_USER`` on ``user/<username>``; the roles are held to the no-escalation rule. Neither kind
    gets a password here: people sign in through Keycloak (or an operator sets a local password with
    ``manage.py changepassword``); service accounts never sign in, they use tokens.
    """
    username = _valid_username(username)
    require(principal, CHANGE_USER, username, what=f"creating user '{username}'")
    granted = _require_grantable(principal, sorted(set(roles)))
    users = get_user_model()
    if users.objects.filter(username=username).exists():
        raise Conflict(f"user '{username}' already exists", field="username")
    user = users(username=username, email=(email or "").strip()[:254])
    user.set_unusable_password()
    user.save()
    if service_account:
        ServiceAccount.objects.create(
            user=user, description=description.strip(), created_by=principal.get_username() if principal else ""
        )
    user.groups.set(Group.objects.filter(name__in=[role.name for role in granted]))
    roles_changed.send(sender=Role, users=[user])
    return user


@transaction.atomic
def user_roles_set(*, principal, username: str, roles) -> set[str]:
    """Make ``username`` hold exactly ``roles``; returns the roles held afterwards.

    Needs ``CHANGE_USER`` on the user; nobody changes their own roles; every role newly given is held to
    the no-escalation rule. Acting on another user needs everything they may do (``_require_acting_on``), and
    taking roles from someone who holds ``osmo-admin`` or is a superuser needs ``osmo-admin``. Superuser status
    is not a role and is left alone.
    """
    users = get_user_model()
    require_visible(principal, VIEW_USER, username, label="user")
    user = users.objects.select_for_update().filter(username=username).first()
    if user is None:
        raise NotFound(f"user '{username}' does not exist")
    what = f"changing the roles of '{username}'"
    _require_user_change(principal, username, what=what)
    if not is_system(principal) and principal.pk == user.pk:
        raise AccessDenied("you may not change your own roles")
    _require_acting_on(principal, user, what=what)
    wanted = sorted(set(roles))
    held = set(user.groups.values_list("name", flat=True))
    removed = held - set(wanted)
    if removed and (user.is_superuser or ADMIN_ROLE in held) and ADMIN_ROLE not in user_role_names(principal):
        if not is_system(principal):
            raise AccessDenied(f"removing roles from '{username}', who administers the console, needs {ADMIN_ROLE}")
    _require_grantable(principal, [name for name in wanted if name not in held])
    unknown = set(wanted) - set(Role.objects.filter(name__in=wanted).values_list("name", flat=True))
    if unknown:
        raise NotFound(f"role '{sorted(unknown)[0]}' does not exist")
    user.groups.set(Group.objects.filter(name__in=wanted))
    forget_roles(user)
    roles_changed.send(sender=Role, users=[user])
    return set(wanted)
