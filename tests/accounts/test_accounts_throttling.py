"""Local password sign-ins are throttled per (username, address) by django-axes (``accounts/throttling.py``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from people import PASSWORD, person

from accounts.throttling import not_a_password_attempt

LIMIT = 3


@pytest.fixture
def people(team_pools, login_throttling, settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)
    return {name: person(name, "osmo-team-a") for name in ("bob", "carol")}


def sign_in(username: str, password: str, address: str = "192.0.2.1") -> tuple[Client, object]:
    client = Client(REMOTE_ADDR=address)
    return client, client.post("/accounts/login/", {"username": username, "password": password})


def signed_in(client: Client) -> bool:
    return client.get("/accounts/profile/").status_code == 200


def lock_out(username: str) -> object:
    """Wrong passwords until the limit; returns the answer to the last one."""
    for _ in range(LIMIT - 1):
        assert sign_in(username, "wrong")[1].status_code == 200  # the form again, with its error
    return sign_in(username, "wrong")[1]


def test_failures_up_to_the_limit_lock_the_account_out_from_that_address(people):
    locked = lock_out("bob")
    assert locked.status_code == 429
    page = locked.content.decode()
    assert 'id="locked-out"' in page and "15 minutes" in page and "Traceback" not in page
    assert locked["Retry-After"] == "900" and "no-store" in locked["Cache-Control"]

    client, response = sign_in("bob", PASSWORD)  # the right password is refused while locked
    assert response.status_code == 429 and not signed_in(client)
    assert AccessAttempt.objects.get(username="bob").failures_since_start == LIMIT  # refusals are not counted


def test_another_user_or_another_address_is_not_affected(people):
    assert lock_out("bob").status_code == 429
    client, response = sign_in("carol", PASSWORD)
    assert response.status_code == 302 and signed_in(client)
    client, response = sign_in("bob", PASSWORD, address="198.51.100.7")
    assert response.status_code == 302 and signed_in(client)


def test_the_lockout_ends_after_the_cool_off(people, settings):
    assert lock_out("bob").status_code == 429
    # Time passes: the failures are now older than the cool-off.
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME)
    client, response = sign_in("bob", PASSWORD)
    assert response.status_code == 302 and signed_in(client)


def test_an_administrator_unlocks_an_account_and_a_success_clears_failures(people):
    assert lock_out("bob").status_code == 429
    call_command("axes_reset_username", "bob")
    client, response = sign_in("bob", PASSWORD)
    assert response.status_code == 302 and signed_in(client)

    for _ in range(LIMIT - 1):
        sign_in("carol", "wrong")
    assert sign_in("carol", PASSWORD)[1].status_code == 302  # a success starts the count again
    assert sign_in("carol", "wrong")[1].status_code == 200


def test_only_password_attempts_count():
    assert not_a_password_attempt(None, {"nonce": "n", "code_verifier": "v"})  # the OIDC callback
    assert not_a_password_attempt(None, {"username": None, "nonce": "n"})
    assert not not_a_password_attempt(None, {"username": "bob", "password": "********"})
