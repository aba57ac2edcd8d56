"""Personal access tokens: their shape, their digest and how long they live.

A token is ``gpc_`` followed by 43 URL-safe random characters (256 bits). Only its SHA-256 digest is
stored; a fast hash is enough because the token itself is random, not a password someone chose.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta

TOKEN_PREFIX = "gpc_"
DISPLAY_PREFIX_LENGTH = 12
# ASCII digits only, few of them: "99999999999999999999d" or "٣d" must not reach timedelta.
_LIFETIME = re.compile(r"([0-9]{1,6})\s*([hdw])", re.ASCII)
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
MAX_LIFETIME = timedelta(days=366)


def token_generate() -> str:
    """A new random token."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_token(value: str) -> bool:
    """Whether ``value`` has the shape of a personal access token (rather than, say, a JWT)."""
    return value.startswith(TOKEN_PREFIX) and len(value) > len(TOKEN_PREFIX) + 20


def parse_lifetime(text: str) -> timedelta:
    """``30d``, ``12h``, ``2w`` as a duration, at most a year: every token expires.

    Raises ValueError with a message fit for the user.
    """
    text = text.strip().lower()
    match = _LIFETIME.fullmatch(text)
    if not match or int(match[1]) == 0:
        raise ValueError(f"'{text}' is not a lifetime like 30d, 12h or 2w")
    lifetime = timedelta(**{_UNITS[match[2]]: int(match[1])})
    if lifetime > MAX_LIFETIME:
        raise ValueError(f"'{text}' is longer than a year; create a new token when it expires")
    return lifetime
