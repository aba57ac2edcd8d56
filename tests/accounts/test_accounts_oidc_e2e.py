"""Sign-in end to end: Chromium follows the real redirect flow to an OpenID provider laid out like Keycloak.

alice (group /gpu-admins -> osmo-admin) sees every pool, bob (/team-a -> osmo-team-a) only team-a*,
carol (no group) none; what each sees is read off the profile page, the dashboard and ``/api/pools/``,
and sign-out ends the provider's session as well.
"""

import pytest
from browser import shoot
from keycloak_realm import POOLS, REALM_USERS
from people import person

from accounts.models import ExternalIdentity

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

EXPECTED = {"alice": POOLS, "bob": ["team-a", "team-a-gpu"], "carol": []}


def sign_in(page, base_url: str, username: str) -> None:
    """Open the profile page, get sent to sign-in, continue at the provider and come back signed in."""
    page.goto(f"{base_url}/accounts/profile/")
    assert "/accounts/login/" in page.url
    page.click("#sign-in-keycloak")
    page.wait_for_selector("#kc-login")
    assert "/realms/gpupool/" in page.url
    page.fill("#username", username)
    page.fill("#password", f"{username}-password")
    page.click("#kc-login")
    page.wait_for_url(f"{base_url}/accounts/profile/")


def visible_pools(page, scope: str = "#visible-pools") -> list[str]:
    """The pool names a page lists (rows marked ``data-pool``), by default the profile page's list."""
    return sorted({row.get_attribute("data-pool") for row in page.query_selector_all(f"{scope} [data-pool]")})


def test_each_user_signs_in_through_the_provider_and_sees_their_pools(team_pools, oidc_provider, live_server, browser):
    for username, expected in EXPECTED.items():
        context = browser.new_context()
        page = context.new_page()
        sign_in(page, live_server.url, username)
        shoot(page, f"oidc-profile-{username}")
        assert visible_pools(page) == expected, username
        roles = {item.get_attribute("data-role") for item in page.query_selector_all("#roles li[data-role]")}
        assert ("osmo-admin" in roles) == (username == "alice")
        assert ("osmo-team-a" in roles) == (username == "bob")
        page.goto(f"{live_server.url}/")
        assert visible_pools(page, "main") == expected, f"{username} on the dashboard"
        api = page.request.get(f"{live_server.url}/api/pools/")
        assert sorted(row["name"] for row in api.json()["results"]) == expected, f"{username} on /api/pools/"
        admin = page.goto(f"{live_server.url}/admin/")
        assert admin.status == (200 if username == "alice" else 403), username
        context.close()

    identities = {i.user.username: i.subject for i in ExternalIdentity.objects.select_related("user")}
    assert identities == {name: user["sub"] for name, user in REALM_USERS.items()}


def test_sign_out_ends_the_provider_session_too(team_pools, oidc_provider, live_server, browser):
    page = browser.new_context().new_page()
    sign_in(page, live_server.url, "bob")
    page.click("text=Sign out")
    page.wait_for_url(f"{live_server.url}/**")
    # Signed out here and at the provider: signing in again asks for the password again.
    page.goto(f"{live_server.url}/accounts/profile/")
    assert "/accounts/login/" in page.url
    page.click("#sign-in-keycloak")
    page.wait_for_selector("#kc-login")
    shoot(page, "oidc-after-sign-out")


def test_a_user_matched_by_subject_keeps_their_account_when_renamed_at_the_provider(
    team_pools, oidc_provider, live_server, browser, django_user_model
):
    # A local account named like a realm user must not be taken over by that realm user.
    person("carol", password="local-secret")
    page = browser.new_context().new_page()
    sign_in(page, live_server.url, "carol")
    carol = ExternalIdentity.objects.get(subject=REALM_USERS["carol"]["sub"]).user
    assert carol.username.startswith("carol.") and carol.email == "carol@example.com"
    assert (carol.first_name, carol.last_name) == ("Carol", "Cook")
    assert django_user_model.objects.get(username="carol").check_password("local-secret")
