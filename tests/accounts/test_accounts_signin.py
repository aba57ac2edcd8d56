"""Sign-in: claims to users (by ``sub``) and roles (SEMANTICS.md §7), the login page, discovery and sign-out."""

from __future__ import annotations

import pytest
import requests
from django.contrib.auth import authenticate
from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.test import Client, RequestFactory
from people import PASSWORD, person

from accounts import oidc
from accounts.backends import KeycloakBackend
from accounts.services import identity_sign_in
from pools import services
from pools.choices import ConfigType

ISSUER = "https://keycloak.example/realms/gpupool"


def sign_in(**claims):
    return identity_sign_in(claims={"sub": "kc-1", **claims}, issuer=ISSUER, client_id="console")


def role_names(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


@pytest.fixture
def mapped_roles(team_pools, actor):
    """Roles mapped three ways: by name, through external_roles, and with each sync mode."""
    services.config_apply(
        changes={
            ConfigType.ROLE: {
                "ops": {"policies": [], "external_roles": ["/org/ops", "platform-admin"], "sync_mode": "force"},
                "auditors": {"policies": [], "sync_mode": "import"},
                "pinned": {"policies": [], "external_roles": ["pin"], "sync_mode": "ignore"},
            }
        },
        actor=actor,
    )


def test_users_are_matched_by_subject_and_their_profile_follows_the_claims(mapped_roles, django_user_model):
    before = django_user_model.objects.count()
    first = sign_in(preferred_username="bob", email="bob@old.example", given_name="Bob", family_name="B")
    again = sign_in(preferred_username="robert", email="robert@new.example", given_name="Robert", family_name="B")
    assert first.pk == again.pk and django_user_model.objects.count() == before + 1
    assert (again.username, again.email, again.first_name) == ("robert", "robert@new.example", "Robert")
    # Same email, another subject: another account, never a takeover by email.
    other = identity_sign_in(
        claims={"sub": "kc-2", "preferred_username": "robert", "email": "robert@new.example"},
        issuer=ISSUER,
        client_id="console",
    )
    assert other.pk != again.pk and other.username.startswith("robert.")
    assert not other.has_usable_password()


@pytest.mark.parametrize(
    "claims, role",
    [
        ({"groups": ["/team-a"]}, "osmo-team-a"),  # a Keycloak full path in external_roles
        ({"groups": ["/org/ops"]}, "ops"),  # nested path through external_roles
        ({"groups": ["auditors"]}, "auditors"),  # a plain group name equal to the role
        ({"groups": ["/auditors"]}, "auditors"),  # a top-level group named like the role
        ({"roles": ["platform-admin"]}, "ops"),
        ({"realm_access": {"roles": ["auditors"]}}, "auditors"),
        ({"resource_access": {"console": {"roles": ["auditors"]}}}, "auditors"),
    ],
)
def test_groups_and_roles_in_every_claim_grant_roles(mapped_roles, claims, role):
    assert role in role_names(sign_in(**claims))


def test_a_subgroup_named_like_a_role_does_not_grant_it(mapped_roles):
    user = sign_in(groups=["/dept/auditors", "/team-b/osmo-admin", "/dept/ops"])
    assert role_names(user) == set()


def test_roles_of_another_client_do_not_count(mapped_roles):
    user = sign_in(resource_access={"other-client": {"roles": ["auditors"]}})
    assert "auditors" not in role_names(user)


def test_sync_modes_decide_what_a_later_login_takes_away(mapped_roles):
    user = sign_in(groups=["/org/ops", "auditors"])
    user.groups.add(Group.objects.get(name="pinned"))
    assert role_names(user) == {"ops", "auditors", "pinned"}
    user = sign_in(groups=[])
    # force removes, import keeps, ignore is left alone
    assert role_names(user) == {"auditors", "pinned"}
    user.groups.remove(Group.objects.get(name="pinned"))
    assert "pinned" not in role_names(sign_in(groups=["pin"]))  # ignore: the IdP does not add it either


def test_the_login_page_offers_what_is_configured(team_pools, settings):
    person("local", "osmo-team-a")
    page = Client().get("/accounts/login/").content.decode()
    assert 'id="local-login"' in page and "sign-in-keycloak" not in page
    assert Client().post("/accounts/login/", {"username": "local", "password": PASSWORD}).status_code == 302

    settings.KEYCLOAK_URL, settings.KEYCLOAK_REALM, settings.OIDC_RP_CLIENT_ID = "https://kc.example", "r", "c"
    page = Client().get("/accounts/login/").content.decode()
    assert "sign-in-keycloak" in page and 'id="local-login"' not in page
    assert Client().post("/accounts/login/", {"username": "local", "password": PASSWORD}).status_code == 405
    client = Client()
    assert not client.login(username="local", password=PASSWORD)  # the backend refuses, not only the page

    settings.LOCAL_LOGIN = True
    page = Client().get("/accounts/login/").content.decode()
    assert "sign-in-keycloak" in page and 'id="local-login"' in page
    assert Client().login(username="local", password=PASSWORD)


class FakeResponse:
    def __init__(self, body):
        self.body = body

    def raise_for_status(self):
        return None

    def json(self):
        return self.body


def test_endpoints_come_from_discovery_unless_set(settings, monkeypatch):
    settings.KEYCLOAK_URL, settings.KEYCLOAK_REALM, settings.OIDC_RP_CLIENT_ID = "https://kc.example/", "r", "c"
    fetched = []
    document = {"issuer": "https://kc.example/realms/r", "token_endpoint": "https://kc.example/token"}

    def fake_get(url, **kwargs):
        fetched.append(url)
        return FakeResponse(document)

    monkeypatch.setattr(oidc.requests, "get", fake_get)
    oidc.forget_provider()
    assert oidc.provider_setting("OIDC_OP_TOKEN_ENDPOINT") == "https://kc.example/token"
    assert oidc.provider_setting("OIDC_OP_ISSUER") == "https://kc.example/realms/r"
    assert fetched == ["https://kc.example/realms/r/.well-known/openid-configuration"]  # fetched once
    settings.OIDC_OP_TOKEN_ENDPOINT = "https://proxy.example/token"
    assert oidc.provider_setting("OIDC_OP_TOKEN_ENDPOINT") == "https://proxy.example/token"
    oidc.forget_provider()


def test_an_unreachable_provider_sends_the_browser_back_to_sign_in(db, settings, monkeypatch):
    settings.KEYCLOAK_URL, settings.KEYCLOAK_REALM, settings.OIDC_RP_CLIENT_ID = "https://kc.example", "r", "c"

    def down(url, **kwargs):
        raise requests.ConnectionError("connection refused")

    monkeypatch.setattr(oidc.requests, "get", down)
    oidc.forget_provider()
    response = Client().get("/accounts/oidc/authenticate/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?failed=1"
    assert "did not succeed" in Client().get(response["Location"]).content.decode()
    oidc.forget_provider()


def test_without_a_provider_the_oidc_entry_point_does_not_exist(db):
    assert Client().get("/accounts/oidc/authenticate/").status_code == 404


def test_sign_out_ends_the_provider_session_with_the_id_token_as_hint(team_pools, settings):
    settings.OIDC_RP_CLIENT_ID = "console"
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "https://kc.example/auth"
    settings.OIDC_OP_LOGOUT_ENDPOINT = "https://kc.example/logout"
    client = Client()
    client.force_login(person("bob", "osmo-team-a"))
    session = client.session
    session["oidc_id_token"] = "the.id.token"
    session.save()
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"].startswith("https://kc.example/logout?id_token_hint=the.id.token&")
    assert "post_logout_redirect_uri=http%3A%2F%2Ftestserver%2F" in response["Location"]
    assert client.get("/accounts/profile/").status_code == 302  # signed out here too


def test_a_local_sign_out_stays_local(team_pools):
    client = Client()
    client.force_login(person("bob", "osmo-team-a"))
    response = client.post("/accounts/logout/")
    assert (response.status_code, response["Location"]) == (302, "/")
    assert client.get("/accounts/logout/").status_code == 405


@pytest.mark.parametrize("token_nonce", [None, "", "another-sign-in"])
def test_an_id_token_without_the_sign_ins_nonce_is_refused(settings, monkeypatch, token_nonce):
    settings.OIDC_RP_CLIENT_ID = "console"
    claims = {"sub": "kc-1"} if token_nonce is None else {"sub": "kc-1", "nonce": token_nonce}
    monkeypatch.setattr(oidc, "verify_jwt", lambda token, audience=None: dict(claims))
    with pytest.raises(SuspiciousOperation, match="nonce"):
        KeycloakBackend().verify_token("id.token", nonce="this-sign-in")
    with pytest.raises(SuspiciousOperation, match="nonce"):
        KeycloakBackend().verify_token("id.token", nonce=None)  # a sign-in that sent none proves nothing


def test_an_id_token_with_the_sign_ins_nonce_passes(settings, monkeypatch):
    settings.OIDC_RP_CLIENT_ID = "console"
    monkeypatch.setattr(oidc, "verify_jwt", lambda token, audience=None: {"sub": "kc-1", "nonce": "n"})
    assert KeycloakBackend().verify_token("id.token", nonce="n")["sub"] == "kc-1"


def test_the_oidc_backend_redeems_codes_only_for_the_callback_view(db, settings, monkeypatch):
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "console", "https://kc.example/auth"
    redeemed = []
    monkeypatch.setattr(KeycloakBackend, "get_token", lambda self, payload: redeemed.append(payload))
    request = RequestFactory().post("/accounts/login/?code=stolen&state=x")
    request.session = {}
    assert authenticate(request, username="alice", password="wrong") is None  # the password form
    assert KeycloakBackend().authenticate(request, nonce="n", code_verifier=None) is None  # no PKCE verifier
    assert KeycloakBackend().authenticate(request, nonce=None, code_verifier="v") is None  # no nonce
    assert redeemed == []
