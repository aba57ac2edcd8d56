"""The OpenID provider (Keycloak): its endpoints, its signing keys, and checking the tokens it signs.

Endpoints come from the realm's discovery document
(``<KEYCLOAK_URL>/realms/<KEYCLOAK_REALM>/.well-known/openid-configuration``); any of them can be set
explicitly instead (``OIDC_OP_*_ENDPOINT``). The document is fetched on first use, not at start-up, so
the console starts (and local accounts sign in) while Keycloak is down.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.views import View
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

logger = logging.getLogger(__name__)
DISCOVERY_TTL_SECONDS = 3600
SIGNING_ALGORITHMS = ["RS256"]

# Setting name -> key of the discovery document that provides it when the setting is empty.
DISCOVERED_SETTINGS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}

_lock = threading.Lock()
_documents: dict[str, tuple[float, dict]] = {}
_key_clients: dict[str, jwt.PyJWKClient] = {}


class ProviderError(Exception):
    """The provider could not be reached or answered something unusable."""


def oidc_enabled() -> bool:
    """Whether sign-in through the OpenID provider is configured (a client id and a realm or endpoints)."""
    if not getattr(settings, "OIDC_RP_CLIENT_ID", ""):
        return False
    return bool(discovery_url() or getattr(settings, "OIDC_OP_AUTHORIZATION_ENDPOINT", ""))


def local_login_enabled() -> bool:
    """Whether local accounts may sign in with a password: ``LOCAL_LOGIN``, by default on only without Keycloak."""
    configured = getattr(settings, "LOCAL_LOGIN", None)
    return (not oidc_enabled()) if configured is None else bool(configured)


def discovery_url() -> str:
    """The realm's discovery document URL, or "" when no Keycloak realm is configured."""
    base, realm = getattr(settings, "KEYCLOAK_URL", "").rstrip("/"), getattr(settings, "KEYCLOAK_REALM", "")
    return f"{base}/realms/{realm}/.well-known/openid-configuration" if base and realm else ""


def discovery_document() -> dict:
    """The realm's discovery document, fetched once an hour at most; {} without a configured realm."""
    url = discovery_url()
    if not url:
        return {}
    with _lock:
        cached = _documents.get(url)
        if cached and time.monotonic() - cached[0] < DISCOVERY_TTL_SECONDS:
            return cached[1]
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderError(f"cannot read the provider's discovery document at {url}: {exc}") from exc
    if not isinstance(document, dict):
        raise ProviderError(f"the discovery document at {url} is not a JSON object")
    with _lock:
        _documents[url] = (time.monotonic(), document)
    return document


def forget_provider() -> None:
    """Drop the cached discovery documents and signing keys (tests, or after the realm's keys rotated)."""
    with _lock:
        _documents.clear()
        _key_clients.clear()


def provider_setting(name: str, *default):
    """A setting, where an empty ``OIDC_OP_*`` endpoint is taken from the discovery document."""
    if name not in DISCOVERED_SETTINGS:
        return import_from_settings(name, *default)
    value = getattr(settings, name, "")
    if value or not oidc_enabled():
        return value
    return discovery_document().get(DISCOVERED_SETTINGS[name], "")


def signing_key(token: str):
    """The realm key that signed ``token`` (by its ``kid``); unknown ids refetch the key set once."""
    jwks_url = provider_setting("OIDC_OP_JWKS_ENDPOINT")
    if not jwks_url:
        raise ProviderError("the provider publishes no signing keys (jwks_uri)")
    with _lock:
        client = _key_clients.get(jwks_url)
        if client is None:
            # OIDC_VERIFY_SSL=0 is for a test realm with a self-signed certificate, as for the other requests.
            context = None if settings.OIDC_VERIFY_SSL else ssl._create_unverified_context()
            client = _key_clients[jwks_url] = jwt.PyJWKClient(
                jwks_url, lifespan=DISCOVERY_TTL_SECONDS, timeout=settings.OIDC_TIMEOUT, ssl_context=context
            )
    try:
        return client.get_signing_key_from_jwt(token).key
    except jwt.PyJWKClientConnectionError as exc:
        raise ProviderError(f"cannot read the provider's signing keys: {exc}") from exc
    except jwt.PyJWKClientError as exc:
        raise SuspiciousOperation(f"token signed by an unknown key: {exc}") from exc


def verify_jwt(token: str, *, audience: str | None = None) -> dict:
    """The claims of ``token`` after checking its RS256 signature against the realm's keys, issuer and expiry.

    ``audience``, when given, must be in ``aud``. Raises ``SuspiciousOperation`` for a token that fails a
    check and ``ProviderError`` when the keys cannot be read.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise SuspiciousOperation(f"not a JWT: {exc}") from exc
    if header.get("alg") not in SIGNING_ALGORITHMS:
        raise SuspiciousOperation(f"token algorithm {header.get('alg')!r} is not accepted (RS256 only)")
    issuer = provider_setting("OIDC_OP_ISSUER")
    options = {"require": ["exp", "iat", "sub"], "verify_aud": audience is not None}
    try:
        return jwt.decode(
            token,
            signing_key(token),
            algorithms=SIGNING_ALGORITHMS,
            audience=audience,
            issuer=issuer or None,
            options=options,
            leeway=30,
        )
    except jwt.PyJWTError as exc:
        raise SuspiciousOperation(f"token rejected: {exc}") from exc


def provider_logout_url(request) -> str:
    """Where sign-out sends the browser: the provider's end-session endpoint, then back to this site.

    Called before the Django session ends, while the ID token (the ``id_token_hint``) is still in it.
    Without a provider session it is simply ``LOGOUT_REDIRECT_URL``.
    """
    back = request.build_absolute_uri(settings.LOGOUT_REDIRECT_URL)
    id_token = request.session.get("oidc_id_token")
    if not id_token or not oidc_enabled():
        return settings.LOGOUT_REDIRECT_URL
    try:
        endpoint = provider_setting("OIDC_OP_LOGOUT_ENDPOINT")
    except ProviderError:
        return settings.LOGOUT_REDIRECT_URL
    if not endpoint:
        return settings.LOGOUT_REDIRECT_URL
    query = {"id_token_hint": id_token, "post_logout_redirect_uri": back, "client_id": settings.OIDC_RP_CLIENT_ID}
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


class KeycloakAuthenticationRequestView(OIDCAuthenticationRequestView):
    """Starts the authorization-code flow at the discovered authorization endpoint (404 without a provider).

    The endpoint is looked up when a sign-in starts, not when the view is built, so an unreachable
    provider sends the browser back to the login page with a message instead of failing every request.
    """

    get_settings = staticmethod(provider_setting)

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)
        self.OIDC_RP_CLIENT_ID = getattr(settings, "OIDC_RP_CLIENT_ID", "")

    def get(self, request):
        """Redirect to the provider's login page with a fresh state and nonce kept in the session."""
        if not oidc_enabled():
            raise Http404("sign-in through an identity provider is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderError as exc:
            logger.warning("cannot start a sign-in: %s", exc)
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        return super().get(request)
