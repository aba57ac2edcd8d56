"""The authorization-code flow over plain HTTP against the test OpenID provider: state, nonce and PKCE.

A ``requests.Session`` plays the browser: it signs in at the provider like a person would and hands the
provider's redirect to the console (or, for the attacks, hands a code somewhere else). Codes are real:
the provider issued them for alice, as it would to anyone who signs in as her.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
import requests
from axes.models import AccessAttempt
from keycloak_realm import CLIENT_ID, REALM_USERS

from accounts.models import ExternalIdentity

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

CALLBACK = "/accounts/oidc/callback/"


def follow_to_console(session: requests.Session, url: str, console: str) -> str:
    """Follow the provider's redirects (signing in as alice when it asks) until one points at the console."""
    for _ in range(10):
        if url.startswith(console):
            return url
        response = session.get(url, allow_redirects=False, timeout=10)
        if response.status_code == 200 and 'id="kc-login"' in response.text:
            action = re.search(r'<form method="post" action="([^"]+)"', response.text).group(1)
            response = session.post(
                requests.compat.urljoin(url, action),
                data={"username": "alice", "password": "alice-password"},
                allow_redirects=False,
                timeout=10,
            )
        assert response.status_code in (302, 303), (response.status_code, response.text[:500])
        url = requests.compat.urljoin(url, response.headers["Location"])
    pytest.fail("the provider never sent the browser back to the console")


def provider_code(issuer: str, console: str, **params) -> dict:
    """Ask the provider for a code for alice directly (as an attacker can), with only the ``params`` given.

    Returns the query of the redirect to the console's callback (``code``, ``state``, ``iss``).
    """
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": f"{console}{CALLBACK}",
        "scope": "openid email profile",
        "state": "attacker",
        **params,
    }
    back = follow_to_console(requests.Session(), f"{issuer}/protocol/openid-connect/auth?{urlencode(query)}", console)
    return {key: values[0] for key, values in parse_qs(urlparse(back).query).items()}


def start_sign_in(browser: requests.Session, console: str) -> dict:
    """Start a sign-in at the console; the query of the authorization request it redirects to."""
    response = browser.get(f"{console}/accounts/oidc/authenticate/", allow_redirects=False, timeout=10)
    assert response.status_code == 302
    return {key: values[0] for key, values in parse_qs(urlparse(response.headers["Location"]).query).items()}


def signed_in_as(browser: requests.Session, console: str) -> str | None:
    """Who the console thinks this browser is (None when not signed in)."""
    response = browser.get(f"{console}/accounts/api/me/", timeout=10)
    return response.json()["username"] if response.status_code == 200 else None


def local_password_post(console: str, query: dict, username: str, password: str) -> tuple[requests.Session, int]:
    """Post the local password form to ``/accounts/login/?<query>`` with a fresh browser and its CSRF token."""
    browser = requests.Session()
    page = browser.get(f"{console}/accounts/login/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    response = browser.post(
        f"{console}/accounts/login/?{urlencode(query)}",
        data={"csrfmiddlewaretoken": token, "username": username, "password": password},
        headers={"Referer": f"{console}/accounts/login/"},
        allow_redirects=False,
        timeout=10,
    )
    return browser, response.status_code


@pytest.fixture
def console(team_pools, oidc_provider, live_server, settings, login_throttling):
    """The live console with Keycloak and local passwords both on (``LOCAL_LOGIN=1``), as a break-glass set-up."""
    settings.LOCAL_LOGIN = True
    return live_server.url


def test_a_code_posted_to_the_password_form_signs_nobody_in(console, oidc_provider, django_user_model):
    users_before = django_user_model.objects.count()
    for params in ({}, {"nonce": "attacker-nonce"}):
        code = provider_code(oidc_provider, console, **params)["code"]
        for username in ("alice", "mallory", ""):
            browser, status = local_password_post(console, {"code": code, "state": "x"}, username, "wrong")
            assert status == 200, "the form answers with its error, it does not sign in"
            assert signed_in_as(browser, console) is None
    assert django_user_model.objects.count() == users_before
    assert not ExternalIdentity.objects.exists()


def test_the_authorization_request_carries_state_nonce_and_an_s256_pkce_challenge(console):
    browser = requests.Session()
    query = start_sign_in(browser, console)
    assert query["code_challenge_method"] == "S256"
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", query["code_challenge"])
    assert len(query["state"]) >= 32 and len(query["nonce"]) >= 32
    assert start_sign_in(browser, console)["code_challenge"] != query["code_challenge"]  # one per sign-in


def test_a_sign_in_over_http_redeems_the_code_with_the_pkce_verifier(console, oidc_provider):
    browser = requests.Session()
    query = start_sign_in(browser, console)
    back = follow_to_console(browser, f"{oidc_provider}/protocol/openid-connect/auth?{urlencode(query)}", console)
    assert parse_qs(urlparse(back).query)["state"] == [query["state"]]
    # The provider holds the code to the challenge it was sent: the token request succeeds only with the verifier.
    response = browser.get(back, allow_redirects=False, timeout=10)
    assert (response.status_code, response.headers["Location"]) == (302, "/")
    assert signed_in_as(browser, console) == "alice"
    assert ExternalIdentity.objects.get().subject == REALM_USERS["alice"]["sub"]
    # A callback works once: the state was used up.
    assert browser.get(back, allow_redirects=False, timeout=10).status_code == 400


def test_a_callback_with_a_state_this_browser_did_not_start_fails(console, oidc_provider):
    browser = requests.Session()
    query = start_sign_in(browser, console)
    back = follow_to_console(browser, f"{oidc_provider}/protocol/openid-connect/auth?{urlencode(query)}", console)
    code = parse_qs(urlparse(back).query)["code"][0]
    forged = f"{console}{CALLBACK}?{urlencode({'code': code, 'state': 'not-the-state'})}"
    assert browser.get(forged, allow_redirects=False, timeout=10).status_code == 400
    assert signed_in_as(browser, console) is None
    # Another browser that started no sign-in at all is sent back to the login page.
    stranger = requests.Session()
    response = stranger.get(back, allow_redirects=False, timeout=10)
    assert (response.status_code, response.headers["Location"]) == (302, "/accounts/login/?failed=1")
    assert signed_in_as(stranger, console) is None
    assert not ExternalIdentity.objects.exists()


def pkce_challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@pytest.mark.parametrize("attacker_pkce", [True, False], ids=["attacker-pkce", "no-pkce"])
def test_a_code_injected_into_another_browsers_sign_in_is_refused(console, oidc_provider, attacker_pkce):
    # The attacker's code (with their own PKCE challenge or none, and no nonce) on a victim's callback with
    # the victim's own state: the victim's verifier does not fit the code, and the ID token lacks the
    # victim's nonce.
    params = {"code_challenge": pkce_challenge(secrets.token_urlsafe(48)), "code_challenge_method": "S256"}
    code = provider_code(oidc_provider, console, **(params if attacker_pkce else {}))["code"]
    victim = requests.Session()
    state = start_sign_in(victim, console)["state"]
    response = victim.get(f"{console}{CALLBACK}?{urlencode({'code': code, 'state': state})}", allow_redirects=False)
    assert (response.status_code, response.headers["Location"]) == (302, "/accounts/login/?failed=1")
    assert signed_in_as(victim, console) is None
    assert not ExternalIdentity.objects.exists()
    assert not AccessAttempt.objects.exists()  # a failed callback is no password guess: nothing is throttled
