"""Reads for accounts: what a user's profile shows, and access explanations."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from pools import selectors as pool_selectors
from pools.engine.errors import NotFound

from .access import user_can, user_role_names
from .models import ApiToken


def api_tokens_of(user) -> list[ApiToken]:
    """The user's tokens, newest first (revoked and expired ones included, marked by their fields)."""
    return list(ApiToken.objects.filter(user=user).order_by("-created_at"))


def profile_summary(user) -> dict:
    """What ``/accounts/profile/`` and ``/accounts/api/me/`` show: the user's roles and the pools they may see."""
    return {
        "username": user.get_username(),
        "email": user.email,
        "roles": sorted(user_role_names(user)),
        "pools": [
            {"name": row["name"], "status": row["status"], "backend": row["backend"]}
            for row in pool_selectors.pool_list(user=user)
        ],
    }


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
