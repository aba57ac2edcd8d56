#!/usr/bin/env python
"""Benchmark: capacity by topology (SEMANTICS §11) of a 5,000-node fleet as one pool, for the standard shapes.

Builds, from a fixed seed, 5,000 nodes in 300 racks over 3 zones: most racks hold 8-GPU nodes, and one rack in
fifteen is a GB200 NVL72 rack of 18 nodes × 4 GPUs sharing one ``nvidia.com/gpu.clique`` (the other nodes have no
clique label, so they are in no clique domain). The usage of 150,000 pods is given as each node's GPUs in use
(random: a third of the nodes full, the rest anywhere from idle to full, one node in ten with half a GPU more).
Levels: zone, rack, gpu-clique. It times ``pools.engine.topology.topology_capacity`` over the whole fleet for the
standard shapes (1x1, 1x8, 2x8, 4x8, 8x8, 16x4) and, in the same run, the naive way: for every shape and every
level, the domains grouped again from the nodes' labels and each node's slots divided again, checked to give the
same gangs, largest gangs and stranded GPUs.

With ``--database``, it also writes the same nodes (and one pool holding them all, with those topology keys) to a
fresh database (a temporary SQLite file unless DATABASE_URL is set), counts the pool's topology sums as a sync does,
and times the pool's page (its topology picture included) and the selector ``selectors.topology.pool_capacity`` as
the API calls it (the pool, its kept sums, the engine, the answer's dict), with, in the same run, the way before the
sums (the member nodes one by one) and the naive way there: every member read as a full ``Node`` object through
``pool.memberships``, then the naive engine loop above; all checked against the engine's figures. It times keeping
the sums after a pod event too: the domains of the node whose GPUs moved counted again, against the whole pool.

``--runs`` runs (3) of ``--iterations`` calls each: it prints the median of the run medians, their spread (lowest
and highest run median) and the load average before and after.

    .venv/bin/python scripts/bench_topology.py [--nodes 5000] [--racks 300] [--runs 3] [--iterations 20] [--database]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "bench"))

from timing import loadavg, timed  # noqa: E402

from pools.engine.topology import (  # noqa: E402
    WHOLE_POOL,
    TopologyNode,
    shapes_to_show,
    topology_capacity,
    topology_levels,
)

ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"
CLIQUE = "nvidia.com/gpu.clique"
TOPOLOGY_KEYS = [
    {"key": "zone", "label": ZONE},
    {"key": "rack", "label": RACK},
    {"key": "gpu-clique", "label": CLIQUE},
]
PODS = 150_000


def fleet(nodes: int, racks: int, zones: int = 3, seed: int = 11) -> list[TopologyNode]:
    """``nodes`` nodes in ``racks`` racks over ``zones`` zones; one rack in fifteen is an NVL72 rack of 18 nodes."""
    rng = random.Random(seed)
    nvl72 = [rack for rack in range(racks) if rack % 15 == 7]
    hgx = [rack for rack in range(racks) if rack % 15 != 7]
    plan = [(rack, 4, "NVIDIA-GB200") for rack in nvl72 for _ in range(18)]
    plan += [(hgx[index % len(hgx)], 8, "NVIDIA-H100-80GB-HBM3") for index in range(nodes - len(plan))]
    answer = []
    for index, (rack, gpus, product) in enumerate(plan):
        zone = f"zone-{'abcdefgh'[rack % zones]}"
        labels = {ZONE: zone, RACK: f"rack-{rack // zones:03d}", "kubernetes.io/hostname": f"node-{index:05d}"}
        if gpus == 4:
            labels[CLIQUE] = f"nvl72-{zone}-{rack:03d}.1"
        used = gpus if rng.random() < 1 / 3 else rng.randint(0, gpus)
        if used < gpus and rng.random() < 0.1:
            used += 0.5  # a pod with a gpu-fraction
        answer.append(TopologyNode(f"node-{index:05d}", labels, product, gpus, used))
    return answer


# --- the naive way ------------------------------------------------------------------------------------------------


def naive_capacity(pool: str, nodes: list[TopologyNode], levels, shapes) -> list[tuple]:
    """Per level and per shape, the domains grouped again and every node's free GPUs and slots computed again."""
    answer = []
    for depth, level in enumerate((WHOLE_POOL, *levels)):
        wanted = [each.label for each in levels[:depth]]
        for shape in shapes:
            domains: dict[tuple, int] = {}
            if depth == 0:
                domains[(pool,)] = 0
            for node in nodes:
                if depth == 0:
                    path = (pool,)
                elif all(label in node.labels for label in wanted):
                    path = tuple(node.labels[label] for label in wanted)
                else:
                    continue
                free = max(0, math.floor(node.gpus) - math.ceil(node.used))
                domains[path] = domains.get(path, 0) + free // shape.gpus_per_pod
            gangs = sum(slots // shape.pods for slots in domains.values())
            largest, where = 0, None
            for path in sorted(domains):
                if domains[path] > largest:
                    largest, where = domains[path], "/".join(path)
            stranded = sum(max(0, math.floor(n.gpus) - math.ceil(n.used)) % shape.gpus_per_pod for n in nodes)
            answer.append((level.key, shape.pods, shape.gpus_per_pod, gangs, largest, where, stranded))
    return answer


def flatten(capacity) -> list[tuple]:
    return [
        (level.key, s.pods, s.gpus_per_pod, s.gangs, s.largest_gang, s.largest_domain, s.stranded)
        for level in capacity
        for s in level.shapes
    ]


# --- on a database ------------------------------------------------------------------------------------------------


def setup_django() -> None:
    directory = Path(tempfile.mkdtemp(prefix="bench-topology-"))
    if not os.environ.get("DATABASE_URL"):
        os.environ["VAR_DIR"] = str(directory)
    os.environ["GPUPOOL_INVENTORY_DIR"] = str(directory)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def write_fleet(nodes: list[TopologyNode]) -> None:
    """The nodes, one backend and one pool ``fleet`` with every node as a member (placed in it, as the node table
    reads them), written directly."""
    from django.db import connection

    from pools.models import Backend, Node, NodeMembership, Pool, placements_text

    backend = Backend.objects.create(name="bench")
    pool = Pool.objects.create(name="fleet", backend=backend, topology_keys=TOPOLOGY_KEYS)
    rows = Node.objects.bulk_create(
        [
            Node(
                backend=backend,
                name=node.name,
                labels=node.labels,
                gpu_product=node.product,
                gpu=Decimal(node.gpus),
                gpu_used=Decimal(str(node.used)),
                allocatable={"nvidia.com/gpu": str(node.gpus)},
                placements=placements_text([(pool.pk, "default")]),
            )
            for node in nodes
        ],
        batch_size=500,
    )
    NodeMembership.objects.bulk_create(
        [NodeMembership(node=row, pool=pool, platform_name="default") for row in rows], batch_size=500
    )
    if connection.vendor == "postgresql":  # the planner's statistics, as autovacuum keeps them on a live database
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def pool_page_client():
    """A test client signed in as a superuser, serving static files by their plain names (no collectstatic)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import override_settings

    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}, ALLOWED_HOSTS=["*"]).enable()
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("bench", password="bench-password-1"))
    return client


def naive_selector(levels, shapes) -> list[tuple]:
    from pools.models import Pool

    pool = Pool.objects.get(name="fleet")
    members = [m.node for m in pool.memberships.select_related("node") if m.node.available and not m.node.unschedulable]
    nodes = [TopologyNode(n.name, n.labels or {}, n.gpu_product, n.gpu, n.gpu_used) for n in members]
    return naive_capacity(pool.name, nodes, levels, shapes)


def selector_rows(answer: dict) -> list[tuple]:
    return [
        (level["key"], s["pods"], s["gpus_per_pod"], s["gangs"], s["largest_gang"], s["largest_domain"], s["stranded"])
        for level in answer["levels"]
        for s in level["shapes"]
    ]


# --- measuring ----------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--racks", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--database", action="store_true", help="also time the selector on a database")
    args = parser.parse_args()
    nodes = fleet(args.nodes, args.racks)
    levels = topology_levels(TOPOLOGY_KEYS)
    shapes = shapes_to_show()
    capacity = topology_capacity("fleet", nodes, levels, shapes)
    assert flatten(capacity) == naive_capacity("fleet", nodes, levels, shapes), "the naive way disagrees"
    gpus = sum(node.whole_gpus for node in nodes)
    free = sum(node.free for node in nodes)
    print(
        f"fleet: {len(nodes)} nodes, {gpus} GPUs ({free} free; the usage of {PODS:,} pods), "
        + ", ".join(f"{level.key or 'pool'} {len(level.domains)} domains" for level in capacity)
        + f"; {len(shapes)} shapes; the naive way gives the same figures"
    )
    measures = []
    if args.database:
        setup_django()
        from django.conf import settings
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from accounts.access import SYSTEM
        from pools.models import Backend, Pool
        from pools.selectors.topology import _member_nodes, pool_capacity
        from pools.services.topology_sums import topology_sums_refresh

        started = time.perf_counter()
        write_fleet(nodes)
        engine_name = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(f"database: {engine_name}, fleet written in {time.perf_counter() - started:.1f} s")
        backend, pool = Backend.objects.get(name="bench"), Pool.objects.get(name="fleet")
        started = time.perf_counter()
        topology_sums_refresh(backend=backend)  # as the sync does once it has written the nodes
        print(
            f"topology sums counted whole in {(time.perf_counter() - started) * 1000:.0f} ms: "
            f"{pool.topology_sums.count()} rows for {len(nodes)} nodes"
        )
        one_node = [nodes[len(nodes) // 2].name]  # a pod event moved this node's GPUs

        def from_the_nodes():
            wanted = [level.label for level in levels]
            return topology_capacity("fleet", _member_nodes(pool, wanted), levels, shapes)

        expected = flatten(capacity)
        with CaptureQueriesContext(connection) as queries:
            assert selector_rows(pool_capacity("fleet", user=SYSTEM)) == expected, "the selector disagrees"
        assert naive_selector(levels, shapes) == expected, "the naive way on the database disagrees"
        print(f"the selector ({len(queries)} queries) and the naive way on the database give the same figures")
        page_client = pool_page_client()
        page = page_client.get("/pools/fleet/")
        assert page.status_code == 200 and b'data-testid="rack-picture"' in page.content, page.status_code
        print(f"the pool page: {len(page.content) / 1024:.0f} KiB of HTML")
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    target = 50
    naive_iterations = max(1, args.iterations // 5)
    measures.append(
        (
            "topology_capacity",
            timed(lambda: topology_capacity("fleet", nodes, levels, shapes), args.runs, args.iterations),
            args.iterations,
        )
    )
    measures.append(
        (
            "naive (domains and slots again per level and shape)",
            timed(lambda: naive_capacity("fleet", nodes, levels, shapes), args.runs, naive_iterations),
            naive_iterations,
        )
    )
    if args.database:
        measures.append(
            (
                f"selectors.topology.pool_capacity ({engine_name})",
                timed(lambda: pool_capacity("fleet", user=SYSTEM), args.runs, args.iterations),
                args.iterations,
            )
        )
        measures.append(
            (
                f"before the kept sums: the member nodes one by one, then the engine ({engine_name})",
                timed(from_the_nodes, args.runs, naive_iterations),
                naive_iterations,
            )
        )
        measures.append(
            (
                f"after a pod event: its node's domains counted again ({engine_name})",
                timed(lambda: topology_sums_refresh(backend=backend, node_names=one_node), args.runs, args.iterations),
                args.iterations,
            )
        )
        measures.append(
            (
                f"after a pod event, naive: the whole pool counted again ({engine_name})",
                timed(lambda: topology_sums_refresh(backend=backend), args.runs, naive_iterations),
                naive_iterations,
            )
        )
        measures.append(
            (
                f"GET /pools/fleet/, the pool page with its topology picture ({engine_name})",
                timed(lambda: page_client.get("/pools/fleet/"), args.runs, naive_iterations),
                naive_iterations,
            )
        )
        measures.append(
            (
                f"naive on the database (full Node objects, naive loop; {engine_name})",
                timed(lambda: naive_selector(levels, shapes), args.runs, naive_iterations),
                naive_iterations,
            )
        )
    engine, naive = measures[0][1], measures[1][1]
    for name, figures, iterations in measures:
        runs = ", ".join(f"{value:.1f}" for value in figures["runs"])
        print(
            f"  {name}: median {figures['median']:.1f} ms (runs {runs} ms; "
            f"spread {figures['low']:.1f}-{figures['high']:.1f}, {args.runs}x{iterations})"
        )
    print(f"load average after: {loadavg()}")
    print(
        f"topology_capacity is {naive['median'] / engine['median']:.1f}x faster than the naive way (median); "
        f"target <= {target} ms: {'met' if engine['median'] <= target else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
