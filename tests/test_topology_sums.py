"""The pools' topology sums (``TopologySums``) stay what counting the pool's nodes gives, whatever writes the nodes.

The capacity by topology (SEMANTICS §11) reads these sums instead of every member node; a watch's pod events count
again only the domains of the nodes whose GPUs moved, everything else counts a backend's pools again whole. Each
test writes through a service, then compares the kept rows with a whole recount and the API's answer with the one
made from the nodes one by one.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection
from kube_objects import node, pod
from parallel_clients import at_once
from topology_pools import RACK, ZONE, racked_pool

from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.topology import shapes_to_show, topology_capacity, topology_levels
from pools.inventory.sources import WatchEvent
from pools.models import Pool, TopologySums
from pools.selectors import topology as topology_selectors
from pools.services.topology_sums import topology_sums_refresh

VERSION = iter(range(100, 10**6))


def event(kind: str, obj: dict, type_: str = "MODIFIED") -> WatchEvent:
    obj["metadata"]["resourceVersion"] = str(next(VERSION))
    return WatchEvent(type_, kind, obj)


def kept(pool_name: str = "racked") -> list[tuple]:
    return sorted(
        TopologySums.objects.filter(pool__name=pool_name).values_list(
            "levels", "domain", "gpu_product", "gpus", "free", "nodes"
        )
    )


def answer_from_the_nodes(pool_name: str = "racked") -> list:
    """The capacity as the nodes one by one give it: no kept sums read."""
    pool = Pool.objects.get(name=pool_name)
    levels = topology_levels(pool.topology_keys)
    nodes = topology_selectors._member_nodes(pool, [level.label for level in levels])
    return list(topology_capacity(pool.name, nodes, levels, shapes_to_show(["3x2", "1x4"])))


def answer_from_the_sums(pool_name: str = "racked") -> list:
    pool = Pool.objects.get(name=pool_name)
    levels = topology_levels(pool.topology_keys)
    nodes = topology_selectors._kept_nodes(pool, [level.label for level in levels])
    assert nodes is not None, "no whole set of sums kept"
    return list(topology_capacity(pool.name, nodes, levels, shapes_to_show(["3x2", "1x4"])))


def assert_kept_as_recounted(backend):
    rows = kept()
    assert rows, "no sums kept"
    assert answer_from_the_sums() == answer_from_the_nodes()
    topology_sums_refresh(backend=backend)
    assert kept() == rows


@pytest.fixture
def racks(cluster, actor):
    backend = cluster(
        [
            *(node(f"a{i}", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8) for i in range(4)),
            *(node(f"b{i}", labels={"team": "a", ZONE: "b", RACK: "r1"}, gpu=4, product="GB200") for i in range(3)),
            node("loose", labels={"team": "a", ZONE: "b"}, gpu=8),
            node("cpu", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=0),
            pod("train-1", node="a0", gpu=2, pool="racked"),
            pod("train-2", node="b0", gpu=4, pool="racked"),
        ]
    )
    racked_pool(backend, actor, others=("flat",))
    return backend


def test_a_sync_and_a_config_change_count_each_pool_with_levels(racks):
    rows = kept()
    levels = json.dumps([ZONE, RACK])
    assert (levels, TopologySums.COMPLETE, "", 0, 0, 0) in rows
    assert (levels, json.dumps(["a", "r1"]), "NVIDIA-H100-80GB-HBM3", 8, 6, 1) in rows  # a0, with 2 in use
    assert (levels, json.dumps(["a", "r1"]), "NVIDIA-H100-80GB-HBM3", 8, 8, 3) in rows
    assert (levels, json.dumps(["b", None]), "NVIDIA-H100-80GB-HBM3", 8, 8, 1) in rows  # loose: in no rack
    assert not kept("flat")  # a pool without levels keeps nothing
    assert_kept_as_recounted(racks)
    body = selectors.pool_capacity("racked", user=services.SYSTEM.principal)
    rack = body["levels"][2]
    assert rack["domains"] == [
        {"value": "r1", "path": "a/r1", "nodes": 5, "gpus": 32, "free": 30},
        {"value": "r1", "path": "b/r1", "nodes": 3, "gpus": 12, "free": 8},
    ]


def test_pod_events_count_again_only_the_domains_of_the_nodes_whose_gpus_moved(racks):
    untouched = set(
        TopologySums.objects.filter(pool__name="racked", domain=json.dumps(["b", "r1"])).values_list("pk", flat=True)
    )
    batches = [
        [event("pods", pod("train-3", node="a1", gpu=8, pool="racked"), "ADDED")],
        [
            event("pods", pod("train-1", node="a0", gpu=2, pool="racked"), "DELETED"),
            event("pods", pod("cpu-only", node="a2", gpu=0), "ADDED"),  # no GPU moved
        ],
        [event("pods", pod("train-3", node="a1", gpu=8, pool="racked", phase="Succeeded"))],
    ]
    for batch in batches:
        services.watch_events_apply(backend=racks, events=batch)
        assert answer_from_the_sums() == answer_from_the_nodes()
    kept_b = set(
        TopologySums.objects.filter(pool__name="racked", domain=json.dumps(["b", "r1"])).values_list("pk", flat=True)
    )
    assert kept_b == untouched  # rack b/r1's rows were not written again
    services.watch_events_apply(backend=racks, events=[event("pods", pod("b", node="b1", gpu=3), "ADDED")])
    assert_kept_as_recounted(racks)


def test_node_events_move_nodes_between_domains_and_out_of_the_pool(racks):
    batches = [
        [event("nodes", node("a3", labels={"team": "a", ZONE: "b", RACK: "r1"}, gpu=8))],  # to rack b/r1
        [event("nodes", node("a2", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8, unschedulable=True))],
        [event("nodes", node("loose", labels={"team": "b", ZONE: "b"}, gpu=8))],  # out of the pool
        [event("nodes", node("b2", gpu=4), "DELETED")],
        [event("nodes", node("new", labels={"team": "a", ZONE: "a", RACK: "r2"}, gpu=8), "ADDED")],
        [event("pods", pod("on-new", node="new", gpu=5, pool="racked"), "ADDED")],
    ]
    for batch in batches:
        services.watch_events_apply(backend=racks, events=batch)
        assert_kept_as_recounted(racks)
    assert json.dumps(["a", "r2"]) in {row[1] for row in kept()}


def test_new_levels_are_counted_and_a_reader_never_reads_a_set_kept_for_other_levels(racks, actor):
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "racked": {
                    "backend": racks.name,
                    "common_pod_template": ["a"],
                    "topology_keys": [{"key": "rack", "label": RACK}],
                }
            }
        },
        actor=actor,
    )
    assert {row[0] for row in kept()} == {json.dumps([RACK])}
    assert_kept_as_recounted(racks)
    # Sums kept for levels the pool no longer has (an upgrade, a missed write) are not read: the nodes are.
    TopologySums.objects.filter(pool__name="racked").update(levels=json.dumps(["gone"]))
    pool = Pool.objects.get(name="racked")
    assert topology_selectors._kept_nodes(pool, [RACK]) is None
    body = selectors.pool_capacity("racked", user=services.SYSTEM.principal)
    assert body["levels"][1]["domains"] == [{"value": "r1", "path": "r1", "nodes": 8, "gpus": 44, "free": 38}]
    # A pod event on a pool without a whole set counts it whole again.
    services.watch_events_apply(backend=racks, events=[event("pods", pod("x", node="a1", gpu=1), "ADDED")])
    assert {row[0] for row in kept()} == {json.dumps([RACK])}
    assert_kept_as_recounted(racks)
    services.config_apply(
        changes={ConfigType.POOL: {"racked": {"backend": racks.name, "common_pod_template": ["a"]}}}, actor=actor
    )
    assert not kept()


@pytest.mark.django_db(transaction=True)
def test_parallel_pod_batches_keep_the_sums(inventory_dir, actor, cluster):
    """Real parallel clients: two streams of pod events on the same racks, each counting its domains again."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    backend = cluster([node(f"n{i}", gpu=8, labels={"team": "a", ZONE: "z", RACK: f"r{i % 3}"}) for i in range(12)])
    racked_pool(backend, actor)

    def stream(prefix: str):
        def run():
            for round_ in range(12):
                batch = [
                    event("pods", pod(f"{prefix}{round_}-{i}", node=f"n{(round_ + i) % 12}", gpu=1), "ADDED")
                    for i in range(3)
                ]
                services.watch_events_apply(backend=backend, events=batch)

        return run

    errors = at_once(stream("x"), stream("y"))
    assert not errors, errors
    assert answer_from_the_sums() == answer_from_the_nodes()
    whole = answer_from_the_sums()[0].domains[0]
    assert (whole.gpus, whole.free) == (96, 96 - 72)
