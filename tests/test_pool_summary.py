"""The pool numbers the database aggregates equal what the engine gives from every node (SEMANTICS.md §6).

``selectors.pool_gpu_summary`` and ``selectors.pool_node_summary`` group nodes in SQL so that the overview
reads a few rows instead of every membership. These tests build random fleets with overlapping pools,
unavailable and cordoned nodes, GPU-less nodes and busy nodes, and compare against the straightforward way:
every node and every membership handed to the engine, or counted one by one.
"""

from __future__ import annotations

import random

import pytest
from kube_objects import node, pod
from naive_summary import naive_gpu_summary, naive_node_summary

from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Node, NodeMembership

TEMPLATES = {
    "zone-a": {"spec": {"nodeSelector": {"zone": "a"}}},
    "zone-b": {"spec": {"nodeSelector": {"zone": "b"}}},
    "rack-x": {"spec": {"nodeSelector": {"rack": "x"}}},
    "rack-y": {"spec": {"nodeSelector": {"rack": "y"}}},
    "nowhere": {"spec": {"nodeSelector": {"zone": "nowhere"}}},
    "anywhere": {"spec": {"tolerations": [{"operator": "Exists"}]}},
}
POOLS = {
    "zone-a": {"common_pod_template": ["zone-a"], "resources": {"gpu": {"guarantee": 12}}},
    "zone-b": {
        "common_pod_template": ["zone-b"],
        "platforms": {"x": {"override_pod_template": ["rack-x"]}, "all": {}},
    },
    "rack-y": {"common_pod_template": ["rack-y"]},
    "everything": {"common_pod_template": ["anywhere"], "resources": {"gpu": {"guarantee": 4}}},
    "empty": {"common_pod_template": ["nowhere"]},
}


def random_fleet(seed: int) -> list[dict]:
    rng = random.Random(seed)
    items = []
    for index in range(rng.randint(20, 50)):
        gpu = rng.choice([0, 2, 4, 8, 8])
        items.append(
            node(
                f"node-{index}",
                gpu=gpu,
                product=rng.choice(["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", ""]) if gpu else "",
                labels={"zone": rng.choice("abc"), "rack": rng.choice("xyz")},
                ready=rng.choice(["True", "True", "True", "False"]),
                unschedulable=rng.random() < 0.15,
            )
        )
        for slot in range(rng.randint(0, 3)):
            items.append(
                pod(
                    f"pod-{index}-{slot}",
                    node=f"node-{index}",
                    gpu=rng.randint(0, 4),
                    pool=rng.choice([None, *POOLS]),
                    priority=rng.choice([None, "LOW", "HIGH"]),
                )
            )
    return items


@pytest.mark.parametrize("seed", range(6))
def test_grouped_numbers_equal_the_engine_over_every_node(cluster, actor, seed):
    backend = cluster(random_fleet(seed))
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: TEMPLATES,
            ConfigType.POOL: {name: {"backend": "test-cluster", **body} for name, body in POOLS.items()},
        },
        actor=actor,
    )
    assert NodeMembership.objects.exists() and Node.objects.filter(available=False).exists()

    assert selectors.pool_gpu_summary([backend.pk]) == naive_gpu_summary()
    assert selectors.pool_node_summary(POOLS) == naive_node_summary()


def test_the_groups_follow_config_changes_and_resyncs(cluster, actor):
    """Node placements are kept with the memberships: a pool deleted, a template changed, nodes relabelled."""
    backend = cluster(random_fleet(1))
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: TEMPLATES,
            ConfigType.POOL: {name: {"backend": "test-cluster", **body} for name, body in POOLS.items()},
        },
        actor=actor,
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {"rack-y": None},
            ConfigType.POD_TEMPLATE: {"zone-a": {"spec": {"nodeSelector": {"zone": "c"}}}},
        },
        actor=actor,
    )
    assert selectors.pool_gpu_summary([backend.pk]) == naive_gpu_summary()
    assert selectors.pool_node_summary(POOLS) == naive_node_summary()
    cluster(random_fleet(2))  # the same node names with other labels, states and pods
    assert selectors.pool_gpu_summary([backend.pk]) == naive_gpu_summary()
    assert selectors.pool_node_summary(POOLS) == naive_node_summary()


def test_no_backend_means_no_numbers(db):
    assert selectors.pool_gpu_summary([]) == {}
    assert selectors.pool_node_summary([]) == {}
