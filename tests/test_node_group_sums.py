"""The node groups' sums (``NodeGroupSums``) stay what recomputing them from the nodes gives, whatever writes the nodes.

The pool list, the overview and the node pools read these sums instead of the nodes; a watch's pod events add their
usage to them as deltas, everything else recomputes a backend's groups. Each test writes through a service and
then compares the kept sums with a recompute (``node_groups_refresh``) and the pool numbers with the naive
summary over every node.
"""

from __future__ import annotations

import pytest
from django.db import connection
from kube_objects import node, pod
from naive_summary import naive_gpu_summary, naive_node_summary
from parallel_clients import at_once

from pools import selectors, services
from pools.choices import ConfigType
from pools.inventory.sources import WatchEvent
from pools.models import NodeGroupSums

TEMPLATES = {
    "h100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}},
    "rack-a": {"spec": {"nodeSelector": {"rack": "a"}}},
}
POOLS = {
    "training": {"backend": "test-cluster", "common_pod_template": ["h100"]},
    "rack": {"backend": "test-cluster", "common_pod_template": ["rack-a"]},
}
VERSION = iter(range(100, 10**6))


def kept_sums(backend) -> list[tuple]:
    return sorted(
        NodeGroupSums.objects.filter(backend=backend).values_list(
            "placements", "available", "unschedulable", "gpu_product", "nodes", "gpu", "free", "gpu_used",
            "gpu_memory", "cpu", "cpu_used", "memory", "memory_used", "pods",
        )
    )  # fmt: skip


def recomputed_sums(backend) -> list[tuple]:
    services.node_groups_refresh(backend=backend)
    return kept_sums(backend)


def assert_kept_as_recomputed(backend):
    kept = kept_sums(backend)
    assert kept, "no groups kept"
    assert kept == recomputed_sums(backend)
    assert selectors.pool_gpu_summary([backend.pk]) == naive_gpu_summary()
    assert selectors.pool_node_summary(POOLS) == naive_node_summary()


def event(kind: str, obj: dict, type_: str = "MODIFIED") -> WatchEvent:
    obj["metadata"]["resourceVersion"] = str(next(VERSION))
    return WatchEvent(type_, kind, obj)


@pytest.fixture
def fleet(cluster, actor):
    backend = cluster(
        [
            node("small", gpu=2, labels={"rack": "a"}),
            node("big", gpu=8, labels={"rack": "a"}, unschedulable=True),
            node("other", gpu=4, product="NVIDIA-A100-SXM4-80GB", labels={"rack": "a"}),
            node("lone", gpu=8, labels={"rack": "b"}),
            node("spare", gpu=8, labels={"rack": "b"}),
            pod("p1", node="small", gpu=1, pool="training"),
            pod("p2", node="big", gpu=4, pool="training"),
        ]
    )
    services.config_apply(changes={ConfigType.POD_TEMPLATE: TEMPLATES, ConfigType.POOL: POOLS}, actor=actor)
    return backend


def test_a_first_sync_and_a_config_change_make_the_groups(fleet):
    kept = kept_sums(fleet)
    # small/lone/spare share the H100 product; rack a adds the rack pool; big is cordoned; other is an A100.
    assert {row[3] for row in kept} == {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"}
    assert sum(row[4] for row in kept) == 5
    assert_kept_as_recomputed(fleet)


def test_pod_events_add_their_usage_as_deltas_past_a_nodes_capacity_and_back(fleet):
    batches = [
        # small (2 GPUs) takes 3 more: 4 in use, its free GPUs stop at 0, not -2
        [event("pods", pod("p3", node="small", gpu=3, pool="training"), "ADDED")],
        # one leaves: still over capacity; a pod on a node of no pool, one on a node not synced
        [
            event("pods", pod("p1", node="small", gpu=1, pool="training"), "DELETED"),
            event("pods", pod("p4", node="lone", gpu=2), "ADDED"),
            event("pods", pod("p5", node="ghost", gpu=2), "ADDED"),
        ],
        # a pod moves from the cordoned node to another group, and finishes there
        [event("pods", pod("p2", node="other", gpu=4, pool="training"))],
        [event("pods", pod("p2", node="other", gpu=4, pool="training", phase="Succeeded"))],
        # the rest leave
        [
            event("pods", pod("p3", node="small", gpu=3, pool="training"), "DELETED"),
            event("pods", pod("p4", node="lone", gpu=2), "DELETED"),
        ],
    ]
    for batch in batches:
        services.watch_events_apply(backend=fleet, events=batch)
        assert_kept_as_recomputed(fleet)
    assert NodeGroupSums.objects.filter(backend=fleet, free__lt=0).count() == 0


def test_node_events_move_nodes_between_groups(fleet):
    batches = [
        [event("nodes", node("small", gpu=2, labels={"rack": "b"}))],  # out of the rack pool
        [event("nodes", node("lone", gpu=8, labels={"rack": "a"}, unschedulable=True))],  # into it, cordoned
        [event("nodes", node("spare", gpu=8, labels={"rack": "b"}, ready="False"))],  # unavailable
        [event("nodes", node("big", gpu=8), "DELETED")],  # with its pod's usage
        [event("nodes", node("new", gpu=16, labels={"rack": "a"}), "ADDED")],
        [event("pods", pod("p6", node="new", gpu=5, pool="rack"), "ADDED")],
    ]
    for batch in batches:
        services.watch_events_apply(backend=fleet, events=batch)
        assert_kept_as_recomputed(fleet)


def test_a_config_change_regroups_and_a_deleted_pool_leaves_its_groups(fleet, actor):
    services.config_apply(changes={ConfigType.POOL: {"rack": None}}, actor=actor)
    kept = kept_sums(fleet)
    assert all(":" in row[0] for row in kept) and len({row[0] for row in kept}) == 1  # training's placement only
    assert_kept_as_recomputed(fleet)


def test_a_resync_and_deleted_pools(fleet, cluster, actor):
    cluster([node("small", gpu=4, labels={"rack": "a"}), pod("p9", node="small", gpu=1, pool="rack")])
    assert_kept_as_recomputed(fleet)
    assert sum(row[4] for row in kept_sums(fleet)) == 1
    services.config_apply(changes={ConfigType.POOL: dict.fromkeys(POOLS)}, actor=actor)
    assert not NodeGroupSums.objects.exists()  # no node has a placement left
    assert not NodeGroupSums.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_parallel_watch_batches_and_config_changes_keep_the_sums(inventory_dir, actor, cluster):
    """Real parallel clients: one applies pod events while another changes the pools that place the nodes.

    Without the backend's write lock, a batch's deltas go to groups a concurrent recompute replaces.
    """
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    fleet = cluster([node(f"n{i}", gpu=4, labels={"rack": "a" if i % 2 else "b"}) for i in range(12)])
    services.config_apply(changes={ConfigType.POD_TEMPLATE: TEMPLATES, ConfigType.POOL: POOLS}, actor=actor)

    def watching():
        for round_ in range(15):
            batch = [
                event("pods", pod(f"w{round_}-{i}", node=f"n{(round_ + i) % 12}", gpu=1 + i % 3), "ADDED")
                for i in range(6)
            ]
            services.watch_events_apply(backend=fleet, events=batch)

    def configuring():
        for round_ in range(8):
            rack = "a" if round_ % 2 else "b"
            services.config_apply(
                changes={ConfigType.POD_TEMPLATE: {"rack-a": {"spec": {"nodeSelector": {"rack": rack}}}}},
                actor=actor,
            )

    errors = at_once(watching, configuring)
    assert not errors, errors
    assert kept_sums(fleet) == recomputed_sums(fleet)
    assert sum(row[13] for row in kept_sums(fleet)) == 90  # every pod counted once
