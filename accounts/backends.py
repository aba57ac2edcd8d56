"""Authentication backends: Keycloak (OIDC), local passwords when allowed, and permissions from role policies."""

from __future__ import annotations

import logging

import requests
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import BaseBackend, ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from pools.engine.permissions import (
    CHANGE_CONFIG,
    CHANGE_USER,
    OPERATE_BACKEND,
    VIEW_BACKEND,
    VIEW_CONFIG,
    VIEW_USER,
)

from . import oidc
from .access import user_can
from .services import identity_sign_in

logger = logging.getLogger(__name__)


class KeycloakBackend(OIDCAuthenticationBackend):
    """Signs users in through the authorization-code flow of mozilla-django-oidc.

    Differences from the stock backend: a code is redeemed only for the OIDC callback view, with the nonce
    and PKCE verifier of a sign-in this session started (the stock backend redeems a ``code`` found in the
    query string of any request that calls ``authenticate``, the password form's included); endpoints come
    from the realm's discovery document (looked up at sign-in, not when Django builds the backend for every
    request); the ID token's RS256 signature, issuer, audience, expiry and nonce are checked, and a nonce is
    required; users are matched by ``sub``; claims become roles.
    """

    OIDC_RP_SIGN_ALGO = "RS256"
    OIDC_RP_IDP_SIGN_KEY = None
    get_settings = staticmethod(oidc.provider_setting)

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()

    @property
    def OIDC_RP_CLIENT_ID(self):  # noqa: N802 - the name the stock backend reads
        return settings.OIDC_RP_CLIENT_ID

    @property
    def OIDC_RP_CLIENT_SECRET(self):  # noqa: N802
        return settings.OIDC_RP_CLIENT_SECRET

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self):  # noqa: N802
        return oidc.provider_setting("OIDC_OP_TOKEN_ENDPOINT")

    @property
    def OIDC_OP_USER_ENDPOINT(self):  # noqa: N802
        return oidc.provider_setting("OIDC_OP_USER_ENDPOINT")

    @property
    def OIDC_OP_JWKS_ENDPOINT(self):  # noqa: N802
        return oidc.provider_setting("OIDC_OP_JWKS_ENDPOINT")

    def authenticate(self, request, *, nonce=None, code_verifier=None):
        """Finish a sign-in started at the provider; None for every caller but the OIDC callback view.

        mozilla-django-oidc's callback view calls ``authenticate(request, nonce=..., code_verifier=...)`` only
        after finding the callback's ``state`` among the sign-ins this session started, and takes that
        sign-in's nonce and PKCE verifier from the session (removing them, so a callback works once). Other
        callers pass other credentials (``username``, ``password``), which Django does not bind to this
        signature, so it skips the backend; without both values the code in the query string is not
        redeemed either.
        """
        if request is None or not nonce or not code_verifier or not oidc.oidc_enabled():
            return None
        try:
            return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        except (oidc.ProviderError, requests.RequestException) as exc:
            # An unreachable provider or a refused code (expired, used, wrong verifier) is a failed sign-in.
            logger.warning("sign-in failed: %s", exc)
            return None

    def verify_token(self, token, **kwargs):
        """The token's claims after checking signature, issuer, audience (this client) and expiry.

        An ID token (called with the sign-in's ``nonce``) must carry exactly that nonce: one without a nonce,
        or with another sign-in's, is refused. A signed userinfo response is called without one.
        """
        payload = oidc.verify_jwt(token, audience=self.OIDC_RP_CLIENT_ID)
        if "nonce" in kwargs and (not kwargs["nonce"] or payload.get("nonce") != kwargs["nonce"]):
            raise SuspiciousOperation("the ID token does not carry the nonce this sign-in sent")
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        """The user for these tokens: userinfo claims over ID-token claims, matched by ``sub``."""
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo is about another subject than the ID token")
        claims = {**payload, **userinfo}
        return identity_sign_in(claims=claims, issuer=payload.get("iss", ""), client_id=self.OIDC_RP_CLIENT_ID)


class LocalLoginBackend(ModelBackend):
    """Username and password of local Django accounts, only while local login is enabled (``LOCAL_LOGIN``)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        """Check the password of a local account; None whenever local login is switched off."""
        if not oidc.local_login_enabled():
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


# Model -> the config type whose policies govern it in the Django admin.
CONFIG_MODELS = {
    "pools.backend": "BACKEND",
    "pools.podtemplate": "POD_TEMPLATE",
    "pools.resourcevalidation": "RESOURCE_VALIDATION",
    "pools.pool": "POOL",
    "pools.platform": "POOL",
    "accounts.role": "ROLE",
}
# Django's model verbs: "view" reads, the others change.
MODEL_VERBS = {"view": False, "add": True, "change": True, "delete": True}
# App -> the catalogue permissions (read, change) its other models stand for.
APP_PERMISSIONS = {
    "pools": (VIEW_BACKEND, OPERATE_BACKEND),
    "auth": (VIEW_USER, CHANGE_USER),
    "accounts": (VIEW_USER, CHANGE_USER),
    "axes": (VIEW_USER, CHANGE_USER),
}


def policy_request_for(permission: str) -> tuple[str, str] | None:
    """The policy request (action, resource) that a Django model permission (``app.verb_model``) stands for.

    Config models map to ``VIEW_CONFIG`` / ``CHANGE_CONFIG`` on their type; other console models
    (inventory, history) to ``VIEW_BACKEND`` / ``OPERATE_BACKEND`` on every backend; users, tokens and
    sign-in records to ``VIEW_USER`` / ``CHANGE_USER`` on every user.
    """
    app_label, _, codename = permission.partition(".")
    verb, _, model = codename.partition("_")
    if verb not in MODEL_VERBS or not model:
        return None
    changes = MODEL_VERBS[verb]
    key = f"{app_label}.{model}"
    if key in CONFIG_MODELS:
        return (CHANGE_CONFIG if changes else VIEW_CONFIG).on(CONFIG_MODELS[key])
    if app_label in APP_PERMISSIONS:
        return APP_PERMISSIONS[app_label][changes].on("*")
    return None


class RolePermissionBackend(BaseBackend):
    """Django model permissions granted by role policies, so ``osmo-admin`` can run the admin without being staff."""

    def has_perm(self, user_obj, perm, obj=None):
        """Whether the user's roles allow what ``perm`` stands for (object permissions are guardian's)."""
        if obj is not None or not user_obj.is_active:
            return False
        request = policy_request_for(perm)
        return request is not None and user_can(user_obj, *request).allowed

    def has_module_perms(self, user_obj, app_label):
        """Whether the roles allow viewing at least one model of the app."""
        try:
            models = apps.get_app_config(app_label).get_models()
        except LookupError:
            return False
        return any(self.has_perm(user_obj, f"{app_label}.view_{model._meta.model_name}") for model in models)
