"""Throttling of local password sign-ins: the hooks django-axes calls (settings ``AXES_*``).

django-axes counts failed password sign-ins per (username, client address) and, past
``AXES_FAILURE_LIMIT``, refuses that pair until ``AXES_COOLOFF_TIME`` has passed, even with the right
password. Only password attempts count: the OIDC callback also goes through ``authenticate``, but a
failure there guesses nothing (it needs a state this browser's session started), and Keycloak throttles
its own sign-ins.
"""

from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers

LOCKED_OUT_STATUS = 429


def not_a_password_attempt(request, credentials) -> bool:
    """Whether an ``authenticate`` call carries no username, i.e. is not a password sign-in (never locked out)."""
    return not (credentials or {}).get("username")


def locked_out_response(request, original_response, credentials):
    """The answer to a sign-in refused for too many failures: 429 with the sign-in page's message.

    ``Retry-After`` is the whole cool-off: a bound, since the lockout started at the last counted failure.
    """
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds())
    context = {"minutes": max(1, math.ceil(seconds / 60))}
    response = render(request, "registration/locked_out.html", context, status=LOCKED_OUT_STATUS)
    response["Retry-After"] = str(seconds)
    add_never_cache_headers(response)
    return response
