"""``/metrics`` answers only to a principal holding ``READ_METRICS`` (built-in role ``osmo-metrics``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from people import person

from accounts.services import api_token_create
from pools.engine.permissions import METRICS_ROLE, READ_METRICS

SCRAPER_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"


def token_of(user) -> str:
    return api_token_create(user=user, name="prometheus", lifetime=timedelta(days=365))[1]


def bearer(secret: str) -> Client:
    return Client(headers={"authorization": f"Bearer {secret}"})


@pytest.fixture
def prometheus(team_pools):
    """What Prometheus scrapes with: the token of an account holding only osmo-metrics."""
    return token_of(person("prometheus", METRICS_ROLE))


def assert_metrics(response):
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'gpupool_pool_gpu_capacity{backend="test-cluster",pool="team-a"}' in text
    assert 'gpupool_backend_nodes{backend="test-cluster",state="available"}' in text


def test_a_holder_of_the_metrics_role_scrapes_with_a_token(prometheus):
    assert_metrics(bearer(prometheus).get("/metrics", HTTP_ACCEPT=SCRAPER_ACCEPT))
    assert_metrics(bearer(prometheus).get("/metrics", HTTP_ACCEPT="text/plain"))  # never a 406


def test_a_signed_in_holder_sees_them_too(team_pools):
    session = Client()
    session.force_login(person("ops", METRICS_ROLE))
    assert_metrics(session.get("/metrics"))


@pytest.mark.parametrize("authorization", [None, "Bearer gpc_not-a-real-token", "Basic cHJvbWV0aGV1czpwdw=="])
def test_without_a_valid_credential_the_answer_is_401_with_a_bearer_challenge(team_pools, authorization):
    client = Client(headers={"authorization": authorization}) if authorization else Client()
    response = client.get("/metrics", HTTP_ACCEPT="text/plain")
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert "gpupool_" not in response.content.decode() and "team-a" not in response.content.decode()
    assert set(response.json()["errors"][0]) == {"field", "message"}


@pytest.mark.parametrize("roles", [(), ("osmo-user",), ("osmo-team-a",)])
def test_a_known_caller_without_the_permission_gets_403(team_pools, roles):
    user = person("someone", *roles)
    session = Client()
    session.force_login(user)
    for client in (session, bearer(token_of(user))):
        response = client.get("/metrics")
        assert response.status_code == 403 and "WWW-Authenticate" not in response
        message = response.json()["errors"][0]["message"]
        assert str(READ_METRICS.action) in message and "team-a" not in message
