"""What a caller without a good credential gets: 401 with a Bearer challenge, 403 only for a known caller.

And pages that show a token or take a password are never kept by a cache (``Cache-Control: no-store``).
"""

from __future__ import annotations

import pytest
from django.test import Client
from people import person

CHALLENGE = 'Bearer realm="api"'


def assert_unauthenticated(response):
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == CHALLENGE
    errors = response.json()["errors"]
    assert errors and all(set(error) == {"field", "message"} for error in errors)


@pytest.mark.parametrize("url", ["/api/pools/", "/api/pools/team-a/", "/accounts/api/me/"])
def test_a_call_without_credentials_answers_401_with_a_bearer_challenge(team_pools, url):
    assert_unauthenticated(Client().get(url))
    assert_unauthenticated(Client().post(url, {}, content_type="application/json"))


@pytest.mark.parametrize("credential", ["gpc_not-a-real-token", "not.a.jwt", "a.b.c"])
def test_a_bad_bearer_credential_answers_401(team_pools, settings, credential):
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_OP_AUTHORIZATION_ENDPOINT = "console", "https://kc.example/auth"
    assert_unauthenticated(Client(headers={"authorization": f"Bearer {credential}"}).get("/api/pools/"))


def test_a_signed_in_caller_without_the_permission_gets_403(team_pools):
    session = Client()
    session.force_login(person("reader", "osmo-user"))
    response = session.post("/api/configs/POD_TEMPLATE/", {"x": {}}, content_type="application/json")
    assert response.status_code == 403 and "WWW-Authenticate" not in response
    assert set(response.json()["errors"][0]) == {"field", "message"}
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(person("bob", "osmo-team-a"))
    assert strict.post("/api/pools/", {}, content_type="application/json").status_code == 403  # no CSRF token


def no_store(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


def test_the_login_page_and_the_page_showing_a_new_token_are_never_cached(team_pools):
    assert no_store(Client().get("/accounts/login/"))
    client = Client()
    client.force_login(person("bob", "osmo-team-a"))
    created = client.post("/accounts/profile/tokens/", {"name": "ci", "lifetime": "30d"})
    assert created.status_code == 201 and created.context["new_token"]["secret"] in created.content.decode()
    assert no_store(created)
    assert no_store(client.get("/accounts/profile/"))
