"""Reads for accounts: what a user's profile shows, and access explanations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone
from guardian.conf import settings as guardian_settings

from pools.engine.errors import NotFound
from pools.engine.permissions import VIEW_USER

from .access import is_system, user_can, user_role_names, visible
from .models import ApiToken


def api_tokens_of(user) -> list[ApiToken]:
    """The user's tokens, newest first (revoked and expired ones included, marked by their fields)."""
    return list(ApiToken.objects.filter(user=user).order_by("-created_at"))


# What the apps above accounts add to a profile, each ``section(user) -> dict``; they register here from their
# ``AppConfig.ready`` (pools adds the pools the user may see), since accounts does not import them.
PROFILE_SECTIONS: list[Callable[[Any], dict]] = []


def profile_summary(user) -> dict:
    """What ``/accounts/profile/`` and ``/accounts/api/me/`` show: the user's roles and what the sections add."""
    summary = {"username": user.get_username(), "email": user.email, "roles": sorted(user_role_names(user))}
    for section in PROFILE_SECTIONS:
        summary.update(section(user))
    return summary


def access_explain(*, username: str, action: str, resource: str = "") -> dict:
    """Whether ``username`` may do ``action`` on ``resource``, the roles considered and the deciding policy."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"user '{username}' does not exist")
    decision = user_can(user, action, resource)
    return {
        "user": username,
        "roles": sorted(user_role_names(user)),
        "action": action,
        "resource": resource,
        **decision.as_dict(),
    }


def users_visible(*, principal, username: str | None = None) -> list[dict]:
    """The users and service accounts ``principal`` may see (``VIEW_USER``), with the roles each holds.

    ``username`` narrows the list to that one user. Three queries whatever the number of users.
    """
    users = (
        get_user_model()
        .objects.exclude(username=guardian_settings.ANONYMOUS_USER_NAME)  # guardian's stand-in, not a person
        .order_by("username")
        .select_related("service_account", "external_identity")
    )
    if username is not None:
        users = users.filter(username=username)
    if not is_system(principal):
        users = users.filter(username__in=visible(principal, VIEW_USER, users.values_list("username", flat=True)))
    users = list(users.prefetch_related("groups"))
    now = timezone.now()
    tokens: dict[int, int] = {}
    for user_id, expires_at, revoked_at in ApiToken.objects.filter(user__in=users).values_list(
        "user_id", "expires_at", "revoked_at"
    ):
        if revoked_at is None and (expires_at is None or expires_at > now):
            tokens[user_id] = tokens.get(user_id, 0) + 1
    return [
        {
            "username": user.username,
            "kind": "service account" if hasattr(user, "service_account") else "person",
            "roles": sorted(group.name for group in user.groups.all()),
            "superuser": user.is_superuser,
            "active": user.is_active,
            "signs_in_with": _sign_in(user),
            "last_login": user.last_login.isoformat() if user.last_login else None,
            "tokens": tokens.get(user.pk, 0),
        }
        for user in users
    ]


def user_visible(*, principal, username: str) -> dict:
    """One user as ``users_visible`` shows them; NotFound when ``principal`` may not see them."""
    found = users_visible(principal=principal, username=username)
    if not found:
        raise NotFound(f"user '{username}' does not exist")
    return found[0]


def _sign_in(user) -> str:
    if hasattr(user, "service_account"):
        return "tokens"
    if hasattr(user, "external_identity"):
        return "identity provider"
    return "password" if user.has_usable_password() else "nothing yet"
