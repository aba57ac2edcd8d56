"""API authentication for scripts: personal access tokens and Keycloak bearer tokens.

Both arrive as ``Authorization: Bearer <token>``. A personal token (``gpc_...``) is looked up by its
digest; anything else is taken as a Keycloak access token: a JWT checked against the realm's keys whose
claims are mapped to roles the way sign-in maps them. Either way the request acts with the owner's
current roles.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from rest_framework import authentication, exceptions

from . import oidc
from .services import api_token_use, identity_sign_in
from .tokens import looks_like_token

logger = logging.getLogger(__name__)


def bearer_credential(request) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header, or None without one."""
    parts = authentication.get_authorization_header(request).split()
    if len(parts) != 2 or parts[0].lower() != b"bearer":
        return None
    try:
        return parts[1].decode()
    except UnicodeError:
        raise exceptions.AuthenticationFailed("invalid bearer credential") from None


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer gpc_...``: a personal access token created on the profile page or with poolctl."""

    def authenticate(self, request):
        """The token's owner, or None when the header carries something else."""
        credential = bearer_credential(request)
        if credential is None or not looks_like_token(credential):
            return None
        user = api_token_use(secret=credential)
        if user is None:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked token")
        return user, None

    def authenticate_header(self, request):
        """Makes an unauthenticated API call answer 401 with a Bearer challenge."""
        return 'Bearer realm="api"'


class KeycloakBearerAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <JWT>``: an access token the Keycloak realm signed for this client."""

    def authenticate(self, request):
        """The user behind a valid access token (created or updated like at sign-in), or None."""
        credential = bearer_credential(request)
        if credential is None or looks_like_token(credential) or not oidc.oidc_enabled():
            return None
        try:
            claims = oidc.verify_jwt(credential)
        except SuspiciousOperation as exc:
            raise exceptions.AuthenticationFailed(f"bearer token rejected: {exc}") from None
        except oidc.ProviderError as exc:
            logger.warning("cannot check a bearer token: %s", exc)
            raise exceptions.AuthenticationFailed("the identity provider cannot be reached") from None
        if claims.get("typ") == "ID":
            raise exceptions.AuthenticationFailed("an ID token is not an access token")
        client_id = settings.OIDC_RP_CLIENT_ID
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if claims.get("azp") != client_id and client_id not in audiences:
            raise exceptions.AuthenticationFailed("bearer token was issued for another client")
        user = identity_sign_in(claims=claims, issuer=claims.get("iss", ""), client_id=client_id, record_login=False)
        if not user.is_active:
            raise exceptions.AuthenticationFailed("user inactive")
        return user, claims

    def authenticate_header(self, request):
        """The Bearer challenge, as for personal tokens."""
        return 'Bearer realm="api"'
