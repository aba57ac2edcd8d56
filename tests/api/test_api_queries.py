"""Every list endpoint makes at most a stated number of queries, and as many for a few rows as for many (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from kube_objects import node, pod
from people import person, role

from pools import services
from pools.choices import ConfigType
from pools.doors import http_doors
from pools.models import GpuConsumption, QuietGpu, UsageSample

# The most queries each list may make, after the caller's roles were read once (the API caches them on the
# user for the request). The comment says how many it makes today, the higher of the two callers' counts.
CEILINGS = {
    "/api/backends/": 6,  # 3
    "/api/pools/": 7,  # 4
    "/api/platforms/": 6,  # 3
    "/api/pools/pool-0/platforms/": 9,  # 6
    "/api/pod_templates/": 5,  # 2
    "/api/resource_validations/": 5,  # 2
    "/api/roles/": 6,  # 3
    "/api/nodes/": 6,  # 3
    "/api/pods/": 7,  # 4
    "/api/memberships/": 6,  # 3
    "/api/usage/": 8,  # 5
    "/api/usage/?format=csv": 7,  # 4
    "/api/pool_quota/": 8,  # 5
    "/api/resources/": 6,  # 3
    "/api/resources/?format=csv": 6,  # 3
    "/api/node_pools/": 6,  # 3
    "/api/node_pools/?sort=-allocated_gpus&status=Ready": 6,  # 3
    "/api/configs/history/": 6,  # 3
    "/api/configs/POOL/": 5,  # 2
    "/api/configs/POOL/diff/?from=1": 7,  # 4
    "/api/users/": 7,  # 4
    "/api/departments/": 6,  # 3
    "/api/projects/": 6,  # 3
    "/api/quotas/": 13,  # 11
    "/api/idle_gpus/": 7,  # 4
    "/api/idle_gpus/?format=csv": 7,  # 4
    "/api/consumption/": 6,  # 3
    "/api/consumption/?by=user&period=24h&format=csv": 6,  # 3
}
LISTS = list(CEILINGS)
# Lists the catalogue names with a path parameter, and the value the URLs above give it.
LIST_PARAMETERS = {"pool_name": "pool-0", "config_type": "POOL"}


def populate(cluster, actor, size: int, name: str) -> None:
    """``size`` nodes, pods, pools (two platforms each), templates, validations, roles, people and samples."""
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
    quota = [{"nodePool": "pool-0", "gpu": {"deserved": 1}}]
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {f"{name}-dept-{i}": {"resources": quota} for i in range(size)},
            ConfigType.PROJECT: {
                f"{name}-proj-{i}": {"department": f"{name}-dept-{i}", "resources": quota} for i in range(size)
            },
        },
        actor=actor,
    )
    for i in range(size):
        person(f"{name}-person-{i}", f"role-{i}", password=None)
    now = timezone.now()
    UsageSample.objects.bulk_create(
        UsageSample(scope="pool", key=f"pool-{i}", backend=backend, at=now, used=1, capacity=8) for i in range(size)
    )
    QuietGpu.objects.bulk_create(
        QuietGpu(
            backend=backend,
            node_name=f"{name}-n{i}",
            device=f"GPU-{i}",
            namespace="default",
            pod=f"{name}-p{i}",
            user=f"{name}-person-{i}",
            pool=f"pool-{i}",
            quiet_since=now - timezone.timedelta(hours=1),
        )
        for i in range(size)
    )
    GpuConsumption.objects.bulk_create(
        GpuConsumption(
            backend=backend,
            resolution=resolution,
            start=now.replace(hour=0, minute=0, second=0, microsecond=0),
            pool=f"pool-{i}",
            dimension=dimension,
            value=value,
            allocated=1,
            idle=0.5,
        )
        for i in range(size)
        for resolution in GpuConsumption.Resolution.values
        for dimension, value in (("pool", f"pool-{i}"), ("user", f"{name}-person-{i}"))
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
def test_list_endpoints_stay_under_their_ceiling_for_few_rows_and_many(who, cluster, actor, client_for):
    if who == "admin":
        user = person("admin", is_superuser=True)
    else:
        resources = ["pool/pool-*", "backend/*", "role/*", "department/*", "project/*"]
        granted = role("reader", {"actions": ["*:Read"], "resources": resources})
        user = person("scoped", granted)
    client = client_for(user)
    populate(cluster, actor, 3, "small")
    small = query_counts(client, LISTS)
    populate(cluster, actor, 30, "large")
    large = query_counts(client, LISTS)
    assert large == small
    assert {url: count for url, count in large.items() if count > CEILINGS[url]} == {}


def test_every_list_of_the_api_has_a_ceiling():
    lists = {
        door.path.format(**LIST_PARAMETERS)
        for door in http_doors()
        if door.method == "GET" and door.rows and door.path.startswith("/api/")
    }
    assert sorted(lists - {url.split("?")[0] for url in CEILINGS}) == []
