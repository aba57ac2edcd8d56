#!/usr/bin/env python
"""Benchmark: ``quota list`` (SEMANTICS §9) for 50 departments, 500 projects and 20 pools over 150,000 pods.

Builds the cluster of ``pools.fleet.layouts.pool_cluster`` (5,000 nodes) as in ``bench_node_pools.py``, with 20
label pools; the pods' namespaces are spread over the 500 projects' namespaces (one pod in ten labelled
``runai/queue`` instead, one in twenty a Run:ai ``gpu-fraction``), and every department and project has a quota
on every pool. Then, in the same run, server-side for a superuser:

- ``selectors.quota_figures`` and ``GET /api/quotas/`` (11,000 rows);
- ``GET /metrics``, whose quota series are those rows (88,000 samples);
- ``fairshare.fair_shares`` alone for one pool's tree (550 units);
- the naive way: per project, its pods read and summed by pool in Python (one query per project), then the same
  fair shares; checked to give the same allocated and pending figures.

Each is run ``--runs`` times (3) of ``--iterations`` calls; it prints the median of the run medians, their spread,
the SQL query count and the load average before and after.

    .venv/bin/python scripts/bench_quotas.py [--nodes 5000] [--pods 150000] [--pools 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_node_pools import ListSource, report, setup_django  # noqa: E402

DEPARTMENTS, PROJECTS_PER_DEPARTMENT = 50, 10


def build(inventory: Path, nodes: int, pods: int, pools: int) -> None:
    import json

    from pools import services
    from pools.choices import ConfigType
    from pools.fleet.layouts import POOL_LABEL, pool_cluster, pool_config
    from pools.models import Backend

    node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, pools=pools)
    projects = [f"proj-{d:02d}-{p}" for d in range(DEPARTMENTS) for p in range(PROJECTS_PER_DEPARTMENT)]
    for index, pod in enumerate(pod_objects):
        project = projects[(index * 7919) % len(projects)]
        metadata = pod["metadata"]
        if index % 10 == 0:
            metadata.setdefault("labels", {})["runai/queue"] = project
        else:
            metadata["namespace"] = f"runai-{project}"
        if index % 20 == 1:
            for container in pod["spec"].get("containers", []):
                container.get("resources", {}).get("requests", {}).pop("nvidia.com/gpu", None)
                container.get("resources", {}).get("limits", {}).pop("nvidia.com/gpu", None)
            metadata.setdefault("annotations", {})["gpu-fraction"] = "0.5"
    path = inventory / "bench.json"
    with path.open("w") as out:
        json.dump({"apiVersion": "v1", "kind": "List", "items": node_objects}, out)
    names = sorted(pool_config(pools=pools)["pools"])
    quota = [{"nodePool": name, "gpu": {"deserved": 2, "overQuotaWeight": 1 + i % 3}} for i, name in enumerate(names)]
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"bench": {"kind": "file", "source": str(path)}},
            ConfigType.POOL: {
                name: {"backend": "bench", "node_label": {"key": POOL_LABEL, "value": name}} for name in names
            },
        },
        actor=services.SYSTEM,
    )
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {f"dept-{d:02d}": {"resources": quota} for d in range(DEPARTMENTS)},
            ConfigType.PROJECT: {
                project: {"department": f"dept-{project[5:7]}", "resources": quota} for project in projects
            },
        },
        actor=services.SYSTEM,
    )
    document = {"apiVersion": "v1", "kind": "List", "items": node_objects + pod_objects}
    services.backend_sync(backend=Backend.objects.get(name="bench"), source=ListSource(document))


def naive_usage() -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    """(project, pool) -> (allocated, pending): every pod read as a row, summed in Python; one query per project for
    its namespaces' pods, and one for the pods labelled ``runai/queue``. A pod bound to a node and not finished is
    allocated in its node's pools; one waiting for a node is pending in the pool its pool label names, else in the
    label pool its ``nodeSelector`` asks for (one backend here, so names say it all)."""
    from pools.models import NodeMembership, Pod, Pool, Project

    pools_of: dict[str, set[str]] = {}
    for node, pool in NodeMembership.objects.values_list("node__name", "pool__name"):
        pools_of.setdefault(node, set()).add(pool)
    pool_names = set(Pool.objects.values_list("name", flat=True))
    label_pools = {
        (pool.node_label["key"], pool.node_label["value"]): pool.name for pool in Pool.objects.all() if pool.node_label
    }
    projects = list(Project.objects.all())
    names = {project.name for project in projects}
    result: dict[tuple[str, str], list[Decimal]] = {}

    def count(project: str, pod) -> None:
        if pod.node_name and pod.phase not in ("Succeeded", "Failed"):
            for pool in pools_of.get(pod.node_name, ()):
                result.setdefault((project, pool), [Decimal(0), Decimal(0)])[0] += pod.gpu
        elif not pod.node_name:
            asked = [label_pools[pair] for pair in sorted((pod.node_selector or {}).items()) if pair in label_pools]
            pool = pod.pool_name if pod.pool_name in pool_names else next(iter(asked), None)
            if pool is not None:
                result.setdefault((project, pool), [Decimal(0), Decimal(0)])[1] += pod.gpu

    labelled = [pod for pod in Pod.objects.filter(labels__has_key="runai/queue") if pod.labels["runai/queue"] in names]
    for pod in labelled:
        count(pod.labels["runai/queue"], pod)
    for project in projects:
        for pod in Pod.objects.filter(namespace__in=project.namespaces):
            if (pod.labels or {}).get("runai/queue") not in names:
                count(project.name, pod)
    return {key: (a, p) for key, (a, p) in result.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--pools", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    inventory = setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.access import SYSTEM
    from pools import selectors
    from pools.engine import fairshare
    from pools.models import Pod

    started = time.perf_counter()
    build(inventory, args.nodes, args.pods, args.pools)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"built {Pod.objects.count()} pods, {args.pools} pools in {time.perf_counter() - started:.0f} s on {engine}")
    rows = selectors.quota_figures(user=SYSTEM)
    naive = naive_usage()
    for row in rows:
        if row["kind"] == "project":
            allocated, pending = naive.get((row["unit"], row["pool"]), (0, 0))
            assert abs(row["allocated"] - float(allocated)) < 1e-6 and abs(row["pending"] - float(pending)) < 1e-6, row
    print(f"{len(rows)} rows; the naive way gives the same allocated and pending figures")

    user = get_user_model().objects.create_superuser("bench", password="bench-password-1")
    client = Client()
    client.force_login(user)
    one_pool = [
        fairshare.Queue(name=f"d{d}", deserved=2, over_quota_weight=1 + d % 3, request=40) for d in range(DEPARTMENTS)
    ] + [
        fairshare.Queue(name=f"p{d}-{p}", parent=f"d{d}", deserved=2, request=Decimal("4.5"))
        for d in range(DEPARTMENTS)
        for p in range(PROJECTS_PER_DEPARTMENT)
    ]
    cases = [
        ("selectors.quota_figures", lambda: selectors.quota_figures(user=SYSTEM)),
        ("GET /api/quotas/", lambda: client.get("/api/quotas/")),
        ("GET /metrics", lambda: client.get("/metrics")),
        ("fair_shares, one pool (550 units)", lambda: fairshare.fair_shares(800, one_pool)),
        ("naive: one query per project", naive_usage),
    ]
    report(cases, args.runs, args.iterations)


if __name__ == "__main__":
    main()
