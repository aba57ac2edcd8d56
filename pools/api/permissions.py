"""Who may write: each endpoint names the action and resource a change needs (SEMANTICS.md §7).

Reads are not decided here: the selectors restrict every queryset to what the user may read, so an
object the user may not see answers 404 before any permission check could tell it exists.
"""

from __future__ import annotations

from rest_framework.exceptions import PermissionDenied

from accounts.access import user_can


def require(user, action: str, resource: str) -> None:
    """Raise PermissionDenied (403) unless ``user`` may do ``action`` on ``resource``, saying which."""
    decision = user_can(user, action, resource)
    if not decision.allowed:
        raise PermissionDenied(f"{action} on {resource or '(unscoped)'} is not allowed: {decision.reason}")
