"""Fixtures of the web console tests: the demo plus two team-a pools, and users with and without roles."""

from __future__ import annotations

import pytest
from console_data import add_team_pools
from people import person

from pools import services


@pytest.fixture
def console(demo):
    """The demo with pools ``team-a`` and ``team-a-gpu`` and the generated role ``osmo-team-a``."""
    add_team_pools("team-a", "team-a-gpu")
    services.pool_role_generate(name="osmo-team-a", actor=services.Actor.system("tester"))


@pytest.fixture
def admin_user(console):
    return person("root", password=None, is_superuser=True, is_staff=True)


@pytest.fixture
def team_user(console):
    return person("alice", "osmo-team-a", password=None)


@pytest.fixture
def nobody(console):
    return person("nobody", password=None)


@pytest.fixture
def as_admin(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def as_team(client, team_user):
    client.force_login(team_user)
    return client


@pytest.fixture
def as_nobody(client, nobody):
    client.force_login(nobody)
    return client
