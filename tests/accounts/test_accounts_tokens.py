"""API credentials: personal access tokens (shown once, hashed, expiring, revocable) and Keycloak bearer JWTs."""

from __future__ import annotations

import time
from datetime import timedelta

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client
from django.utils import timezone
from people import person

from accounts import oidc
from accounts.models import ApiToken, ExternalIdentity
from accounts.services import api_token_create
from accounts.tokens import parse_lifetime, token_digest

ISSUER = "https://keycloak.example/realms/gpupool"


def bearer(secret: str) -> Client:
    return Client(headers={"authorization": f"Bearer {secret}"})


def me(client) -> tuple[int, dict]:
    """Status and body of ``/accounts/api/me/``."""
    response = client.get("/accounts/api/me/")
    return response.status_code, response.json()


def refusal(client) -> str:
    """The message of a refused credential (so a refusal for being anonymous does not pass for one)."""
    response = client.get("/accounts/api/me/")
    status, body = response.status_code, response.json()
    assert status == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"', body
    message = body["errors"][0]["message"]
    assert "token" in message, message
    return message


def test_a_token_is_shown_once_stored_hashed_and_acts_with_its_owners_current_roles(team_pools):
    bob = person("bob", "osmo-team-a")
    client = Client()
    client.force_login(bob)
    page = client.post("/accounts/profile/tokens/", {"name": "ci", "lifetime": "30d"})
    assert page.status_code == 201
    secret = page.context["new_token"]["secret"]
    stored = ApiToken.objects.get(user=bob)
    assert stored.digest == token_digest(secret) and secret not in str(vars(stored))
    assert secret not in client.get("/accounts/profile/").content.decode()  # never shown again

    status, body = me(bearer(secret))
    assert status == 200 and body["username"] == "bob"
    assert [pool["name"] for pool in body["pools"]] == ["team-a", "team-a-gpu"]
    assert [row["name"] for row in bearer(secret).get("/api/pools/").json()["results"]] == ["team-a", "team-a-gpu"]
    stored.refresh_from_db()
    assert stored.last_used_at is not None

    bob.groups.clear()  # roles change: the same token now sees nothing
    assert me(bearer(secret))[1]["pools"] == []


def test_revoked_expired_unknown_and_inactive_tokens_are_refused(team_pools):
    bob = person("bob", "osmo-team-a")
    token, secret = api_token_create(user=bob, name="laptop", lifetime=timedelta(days=1))
    assert me(bearer(secret))[0] == 200
    assert refusal(bearer(secret + "x"))

    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert refusal(bearer(secret))

    token2, secret2 = api_token_create(user=bob, name="ci", lifetime=timedelta(days=1))
    owner = Client()
    owner.force_login(bob)
    assert owner.post(f"/accounts/profile/tokens/{token2.pk}/revoke/").status_code == 302
    assert refusal(bearer(secret2))

    _, secret3 = api_token_create(user=bob, name="cron", lifetime=timedelta(days=1))
    bob.is_active = False
    bob.save()
    assert refusal(bearer(secret3))


def test_someone_elses_token_cannot_be_revoked_and_forms_need_csrf(team_pools):
    bob = person("bob", "osmo-team-a")
    carol = person("carol")
    token, _ = api_token_create(user=bob, name="ci", lifetime=timedelta(days=1))
    other = Client()
    other.force_login(carol)
    assert other.post(f"/accounts/profile/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(bob)
    assert strict.post("/accounts/profile/tokens/", {"name": "x", "lifetime": "7d"}).status_code == 403
    assert strict.post(f"/accounts/profile/tokens/{token.pk}/revoke/").status_code == 403
    assert strict.post("/accounts/logout/").status_code == 403


def test_lifetimes_are_bounded_and_poolctl_creates_a_working_token(team_pools, poolctl):
    assert parse_lifetime("30d") == timedelta(days=30) and parse_lifetime("12h") == timedelta(hours=12)
    for bad in ("never", "0d", "5y", "400d", ""):
        with pytest.raises(ValueError):
            parse_lifetime(bad)
    person("bob", "osmo-team-a")
    result = poolctl("token", "create", "--user", "bob", "--expires", "2w")
    assert result.code == 0, result.err
    secret = result.out.strip()
    assert me(bearer(secret))[1]["username"] == "bob"
    assert poolctl("token", "create", "--user", "nobody").code == 1
    assert "is not a lifetime" in poolctl("token", "create", "--user", "bob", "--expires", "forever").err


# --- Keycloak bearer tokens -------------------------------------------------------------------------------


@pytest.fixture
def realm_keys(settings, monkeypatch):
    """A realm signing key served as the JWKS, with endpoints set explicitly (no discovery)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    jwks = {"keys": [{**public, "kid": "realm-key", "alg": "RS256", "use": "sig"}]}
    settings.OIDC_RP_CLIENT_ID = "gpupool-console"
    settings.OIDC_OP_ISSUER = ISSUER
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{ISSUER}/protocol/openid-connect/auth"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{ISSUER}/protocol/openid-connect/certs"
    monkeypatch.setattr(jwt.PyJWKClient, "fetch_data", lambda self: jwks)
    oidc.forget_provider()
    yield key
    oidc.forget_provider()


def access_token(key, **claims) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "sub": "kc-bob", "azp": "gpupool-console", "typ": "Bearer", "iat": now, "exp": now + 300}
    body.update(claims)
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "realm-key"})


def test_a_keycloak_access_token_signs_the_user_in_with_roles_from_its_claims(team_pools, realm_keys):
    token = access_token(realm_keys, preferred_username="bob", groups=["/team-a"])
    status, body = me(bearer(token))
    assert status == 200 and body["username"] == "bob" and "osmo-team-a" in body["roles"]
    assert [pool["name"] for pool in body["pools"]] == ["team-a", "team-a-gpu"]
    assert ExternalIdentity.objects.get(subject="kc-bob").issuer == ISSUER


@pytest.mark.parametrize(
    "claims, why",
    [
        ({"iss": "https://evil.example/realms/gpupool"}, "another issuer"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"azp": "another-client", "aud": "account"}, "issued for another client"),
        ({"typ": "ID"}, "an ID token"),
    ],
)
def test_bearer_tokens_that_fail_a_check_are_refused(team_pools, realm_keys, claims, why):
    assert refusal(bearer(access_token(realm_keys, **claims))), why


def test_a_token_signed_by_another_key_or_with_hs256_is_refused(team_pools, realm_keys):
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert refusal(bearer(access_token(stranger)))
    forged = jwt.encode(
        {"iss": ISSUER, "sub": "x", "exp": int(time.time()) + 60},
        "a-shared-secret-of-thirty-two-bytes!",
        algorithm="HS256",
    )
    assert refusal(bearer(forged))


def test_a_keycloak_access_token_scrapes_metrics_only_with_the_metrics_role(team_pools, realm_keys):
    scraper = access_token(realm_keys, sub="kc-scraper", preferred_username="scraper", roles=["osmo-metrics"])
    response = bearer(scraper).get("/metrics")
    assert response.status_code == 200 and "gpupool_pool_gpu_capacity" in response.content.decode()
    assert bearer(access_token(realm_keys, groups=["/team-a"])).get("/metrics").status_code == 403
