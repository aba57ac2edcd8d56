"""Fixtures of the API tests: API clients (people come from ``people.py``), and a small cluster with two pools."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from people import person

from pools import services
from pools.choices import ConfigType


def pytest_configure(config):
    config.addinivalue_line("markers", "schemathesis: property-based run over the whole OpenAPI schema")


@pytest.fixture
def admin_api(db, client_for):
    return client_for(person("admin", password=None, is_superuser=True))


@pytest.fixture
def two_pools(cluster, actor):
    """A backend with four GPU nodes and pods, templates selecting team a or b, pools ``team-a`` and ``team-b``."""
    backend = cluster(
        [
            node("n1", labels={"team": "a"}, gpu=8),
            node("n2", labels={"team": "a"}, gpu=8),
            node("n3", labels={"team": "b"}, gpu=4),
            node("n4", labels={"team": "x"}, gpu=2),
            pod("train-1", node="n1", gpu=4, pool="team-a"),
            pod("train-2", node="n3", gpu=2, pool="team-b"),
        ]
    )
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "a": {"spec": {"nodeSelector": {"team": "a"}}},
                "b": {"spec": {"nodeSelector": {"team": "b"}}},
            },
            ConfigType.POOL: {
                "team-a": {"backend": backend.name, "common_pod_template": ["a"], "platforms": {"gpu": {}}},
                "team-b": {"backend": backend.name, "common_pod_template": ["b"]},
            },
        },
        actor=actor,
    )
    return backend
