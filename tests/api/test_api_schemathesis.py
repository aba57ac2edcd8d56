"""Schemathesis over the whole OpenAPI schema: no server error and no response outside the schema.

Bounded to run in a couple of minutes: few examples per operation, no shrinking, no example database.
Requests carry a signed-in session (and its CSRF token), so writes are exercised too; each operation runs
on the small two-pool cluster of ``conftest.py``, inside the test's transaction. Twice: as an admin, and
as a limited user (team-a's pools and pool changes only), whose answers must never show team-b.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings
from people import person, role
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CSRF_SECRET = "s" * 32  # a CSRF cookie and header of the same 32-character secret pass Django's check
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())
schema.config.generation.update(max_examples=10, no_shrink=True, database="none")
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])


def session_headers(user):
    """A signed-in session and CSRF headers for ``user``; requests keep the test's database connection open.

    Like Django's test client, the WSGI calls must not run ``close_old_connections`` at the end of each
    request: that would close the connection holding the test's transaction.
    """
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    return {"Cookie": f"sessionid={session}; csrftoken={CSRF_SECRET}", "X-CSRFToken": CSRF_SECRET}


@pytest.fixture
def kept_connection():
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def admin_headers(two_pools, kept_connection):
    return session_headers(person("admin", is_superuser=True))


@pytest.fixture
def limited_headers(two_pools, kept_connection):
    granted = role(
        "team-a-editor",
        {"actions": ["pool:Read", "workflow:*"], "resources": ["pool/team-a*"]},
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
    )
    return session_headers(person("limited", granted))


def never_shows_team_b(ctx, response, case) -> bool | None:
    """The limited user's answers never name team-b, unless their own request did."""
    asked = " ".join(str(part) for part in (case.path_parameters, case.query, case.body))
    if "team-b" not in asked and "team-b" in response.text:
        raise AssertionError(f"{case.method} {case.formatted_path} shows team-b: {response.text[:300]}")
    return None


@pytest.mark.schemathesis
@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_to_its_schema(case, admin_headers):
    case.call_and_validate(headers=admin_headers, checks=CHECKS)


@pytest.mark.schemathesis
@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_api_conforms_to_its_schema_for_a_limited_user(case, limited_headers):
    case.call_and_validate(headers=limited_headers, checks=[*CHECKS, never_shows_team_b])
