"""Every list endpoint costs the same number of queries for a few rows and for many (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from kube_objects import node, pod
from people import person, role

from pools import services
from pools.choices import ConfigType
from pools.models import UsageSample

LISTS = [
    "/api/backends/",
    "/api/pools/",
    "/api/platforms/",
    "/api/pools/pool-0/platforms/",
    "/api/pod_templates/",
    "/api/resource_validations/",
    "/api/roles/",
    "/api/nodes/",
    "/api/pods/",
    "/api/memberships/",
    "/api/usage/",
    "/api/usage/?format=csv",
    "/api/pool_quota/",
    "/api/resources/",
    "/api/resources/?format=csv",
    "/api/configs/history/",
]


def populate(cluster, actor, size: int, name: str) -> None:
    """``size`` nodes, pods, pools (two platforms each), templates, validations, roles and samples."""
    backend = cluster(
        [node(f"{name}-n{i}", labels={"pool": f"pool-{i}"}) for i in range(size)]
        + [pod(f"{name}-p{i}", node=f"{name}-n{i}", gpu=1, pool=f"pool-{i}") for i in range(size)],
        name=name,
    )
    services.config_apply(
        changes={
            ConfigType.BACKEND: {f"{name}-extra-{i}": {"kind": "file"} for i in range(size)},
            ConfigType.POD_TEMPLATE: {
                f"sel-{i}": {"spec": {"nodeSelector": {"pool": f"pool-{i}"}}} for i in range(size)
            },
            ConfigType.RESOURCE_VALIDATION: {f"val-{i}": [] for i in range(size)},
            ConfigType.ROLE: {f"role-{i}": {"policies": [{"actions": ["pool:Read"]}]} for i in range(size)},
            ConfigType.POOL: {
                f"pool-{i}": {
                    "backend": name,
                    "common_pod_template": [f"sel-{i}"],
                    "platforms": {"a": {}, "b": {}},
                }
                for i in range(size)
            },
        },
        actor=actor,
    )
    now = timezone.now()
    UsageSample.objects.bulk_create(
        UsageSample(scope="pool", key=f"pool-{i}", backend=backend, at=now, used=1, capacity=8) for i in range(size)
    )


def query_counts(client, urls) -> dict[str, int]:
    client.get(urls[0])  # the user's roles are read once and then cached on the (forced) user object
    counts = {}
    for url in urls:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200, url
        counts[url] = len(queries)
    return counts


@pytest.mark.parametrize("who", ["admin", "scoped"])
def test_list_endpoints_cost_a_constant_number_of_queries(who, cluster, actor, client_for):
    if who == "admin":
        user = person("admin", is_superuser=True)
    else:
        granted = role("reader", {"actions": ["*:Read"], "resources": ["pool/pool-*", "backend/*", "role/*"]})
        user = person("scoped", granted)
    client = client_for(user)
    populate(cluster, actor, 3, "small")
    small = query_counts(client, LISTS)
    populate(cluster, actor, 30, "large")
    large = query_counts(client, LISTS)
    assert large == small
