"""The named fleets: the demo's backends and the cluster of pools, from the one catalogue, sized as asked."""

import json
from collections import Counter, defaultdict

import pytest

from pools.fleet import Fleet, blueprint_from_list, blueprint_namespaces, blueprint_pods
from pools.fleet.catalogue import GPUS, SHAPES
from pools.fleet.dcgm import ACTIVITY_LABEL
from pools.fleet.layouts import (
    DEMO_BACKENDS,
    DEMO_WORKLOADS,
    demo_blueprint,
    demo_nodes,
    node_pools,
    pool_cluster,
    pool_config,
    pool_nodes,
)
from pools.fleet.nodes import catalogue_nodes
from pools.inventory.records import node_record, pod_record
from pools.models import Backend, NodeMembership, Platform

T0 = 1_763_715_600.0


def records(nodes, pods=()):
    warnings: list[str] = []
    result = [node_record(n, warnings) for n in nodes], [pod_record(p, warnings) for p in pods]
    assert warnings == []
    return result


def test_the_same_seed_gives_the_same_objects_and_another_seed_others():
    assert pool_cluster(nodes=60, pods=1500, seed=3) == pool_cluster(nodes=60, pods=1500, seed=3)
    assert demo_nodes("gpu-cluster-01", seed=3) == demo_nodes("gpu-cluster-01", seed=3)
    nodes, pods = pool_cluster(nodes=60, pods=1500, seed=3)
    other_nodes, other_pods = pool_cluster(nodes=60, pods=1500, seed=4)
    assert json.dumps(nodes) != json.dumps(other_nodes) and json.dumps(pods) != json.dumps(other_pods)


def test_every_layout_takes_its_gpus_and_machines_from_the_one_catalogue():
    products = {gpu.product for gpu in GPUS.values()}
    everything = [
        *catalogue_nodes(seed=1, size=200),
        *pool_nodes(nodes=300, platforms=6, seed=1),
        *(node for backend in DEMO_BACKENDS for node in demo_nodes(backend)),
    ]
    node_records, _ = records(everything)
    assert {r.gpu_product for r in node_records} - {""} <= products
    assert {r.labels["node.kubernetes.io/instance-type"] for r in node_records} <= set(SHAPES)
    for node in everything:
        shape = SHAPES[node["metadata"]["labels"]["node.kubernetes.io/instance-type"]]
        assert node["status"]["capacity"]["cpu"] == str(shape.cpu)
        if shape.gpu:
            assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == GPUS[shape.gpu].product


def test_sizes_are_honoured():
    nodes, pods = pool_cluster(nodes=120, pods=2_500, pools=7, platforms=2)
    assert len(nodes) == 120 and len(pods) == 2_500
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == 2_500
    assert len(Fleet(seed=2, size=7).nodes(T0)) == 7
    with pytest.raises(ValueError, match="at least"):
        pool_cluster(nodes=10, pods=5)
    with pytest.raises(ValueError, match="at most"):
        pool_cluster(nodes=2, pods=10_000)


def test_the_cluster_of_pools_labels_nodes_and_pods_by_pool_and_never_overcommits():
    nodes, pods = pool_cluster(nodes=200, pods=4_000, pools=12, platforms=3, seed=5)
    membership = node_pools(nodes)
    assert {pool for pools in membership.values() for pool in pools} == {f"pool-{i:02d}" for i in range(1, 13)}
    assert any(len(pools) == 2 for pools in membership.values())  # every sixth pool shares some nodes
    assert {p["status"]["phase"] for p in pods} == {"Pending", "Running", "Succeeded", "Failed"}
    for pod in pods:
        labels = pod["metadata"]["labels"]
        if "osmo.priority" in labels:
            assert labels["osmo.pool"] in membership[pod["spec"]["nodeName"]] and labels["osmo.user"]
    node_records, pod_records = records(nodes, pods)  # finished pods have no record: they use nothing
    used = defaultdict(int)
    for record in filter(None, pod_records):
        used[record.node_name] += record.gpu
    assert all(used[n.name] <= n.gpu for n in node_records)
    bundle = pool_config(pools=12, platforms=3)
    assert len(bundle["pools"]) == 12 and set(bundle["pools"]["pool-01"]["platforms"]) == {"h100", "a100", "l40s"}


def test_the_demo_backends_have_the_nodes_the_demo_and_its_tests_name():
    counts = {backend: len(demo_nodes(backend)) for backend in DEMO_BACKENDS}
    assert counts == {
        "gpu-cluster-01": 38,
        "graphics-cluster-01": 12,
        "inference-cluster-01": 10,
        "dev-cluster-01": 8,
        "runai-cluster-01": 11,
        "default": 8,
        "gpuctl-cluster": 7,
    }
    by_name = {r.name: r for backend in DEMO_BACKENDS for r in records(demo_nodes(backend))[0]}
    prefixes = Counter(name.rsplit("-", 1)[0] for name in by_name)
    assert prefixes == {
        "h100-a": 8,
        "a100-b": 8,
        "gb200-c": 18,
        "cpu-sys": 4,
        "l40-s": 6,
        "l40s-s": 5,
        "cpu-sim": 1,
        "t4-i": 6,
        "cpu-i": 4,
        "a10g-d": 3,
        "cpu-d": 5,
        "l40s-d": 4,
        "a100-d": 4,
        "l40s-r": 4,
        "a10g-r": 3,
        "l40-r": 2,
        "cpu-r": 2,
        "gpu-node": 5,
        "cpu-node": 2,
    }
    unavailable = {
        name
        for name, r in by_name.items()
        if r.unschedulable or any(c["type"] == "Ready" and c["status"] != "True" for c in r.conditions)
    }
    assert unavailable == {"h100-a-006", "a100-b-005", "l40-s-003", "cpu-d-004", "a100-d-004", "a10g-r-003"}
    assert by_name["a100-b-007"].mig_devices and by_name["a100-b-008"].mig_devices["1g.10gb"] == 56
    assert by_name["l40s-s-005"].gpu_replicas == 4 and by_name["l40s-s-005"].gpu == 32


def test_every_demo_platform_selects_at_least_one_node(demo):
    platforms = set(Platform.objects.values_list("pool__name", "name"))
    selected = set(NodeMembership.objects.values_list("pool__name", "platform_name"))
    assert len(platforms) == 11 and platforms <= selected
    assert set(Backend.objects.values_list("name", flat=True)) == set(DEMO_BACKENDS)


def test_the_gpuctl_cluster_has_the_guides_nodes_unlabelled_and_the_default_backend_the_walk_throughs_products():
    by_name = {r.name: r for r in records(demo_nodes("gpuctl-cluster"))[0]}
    assert {name: (r.gpu, r.gpu_product) for name, r in by_name.items()} == {
        "gpu-node-1": (8, "NVIDIA-A100-SXM4-80GB"),
        "gpu-node-2": (8, "NVIDIA-A100-SXM4-80GB"),
        "gpu-node-3": (4, "NVIDIA-A10"),
        "gpu-node-4": (4, "NVIDIA-A10"),
        "gpu-node-5": (4, "NVIDIA-GeForce-RTX-4090"),
        "cpu-node-1": (0, ""),
        "cpu-node-2": (0, ""),
    }
    assert not any(key.startswith("runwhere.ai/") for r in by_name.values() for key in r.labels)
    # OSMO's heterogeneous-pool walk-through: nodes labelled NVIDIA-L40S, and NVIDIA-A100 ones tainted as its
    # a100 template tolerates.
    default = records(demo_nodes("default"))[0]
    assert {r.gpu_product for r in default} == {"NVIDIA-L40S", "NVIDIA-A100"}
    a100 = [r for r in default if r.gpu_product == "NVIDIA-A100"]
    assert all(
        {"key": "nvidia.com/gpu.product", "value": "NVIDIA-A100", "effect": "NoSchedule"} in r.taints for r in a100
    )


def test_the_demo_blueprints_carry_their_load_and_read_back_as_a_fleet():
    for backend in DEMO_BACKENDS:
        document = json.loads(json.dumps(demo_blueprint(backend)))
        assert blueprint_from_list(document) == json.loads(json.dumps(demo_nodes(backend)))
        load = DEMO_WORKLOADS.get(backend)
        assert blueprint_namespaces(document) == (dict(load.namespaces) if load else None)
        assert len(blueprint_pods(document)) == (len(load.standing) if load else 0)
    document = demo_blueprint("gpu-cluster-01")
    pods = {p["metadata"]["name"]: p for p in blueprint_pods(document)}
    assert pods["sdg-replicator"]["spec"]["nodeName"] == "h100-a-008"
    assert "nodeName" not in pods["sdg-batch"]["spec"]
    assert pods["notebook-priya"]["metadata"]["labels"][ACTIVITY_LABEL] == "idle"
    assert {p["metadata"]["labels"]["osmo.pool"] for p in pods.values()} == {"robotics-training"}


def test_the_demo_fleet_writes_what_workloads_read():
    """Job pods are owned by their Job, daemonset pods by their DaemonSet, the notebook by its Deployment's
    ReplicaSet, the 8-GPU pretraining gangs carry KAI's pod group; running pods have a start, waiting ones the
    scheduler's Unschedulable condition (SEMANTICS §10)."""
    document = json.loads(json.dumps(demo_blueprint("gpu-cluster-01")))
    fleet = Fleet(
        seed=11,
        nodes=blueprint_from_list(document),
        workloads=blueprint_pods(document),
        namespaces=blueprint_namespaces(document),
        system_pods=True,
    )
    records = [pod_record(obj, []) for obj in fleet.pods(T0)]
    kinds = Counter(record.workload_kind for record in records)
    assert kinds["Job"] > 0 and kinds["DaemonSet"] > 0 and kinds["Deployment"] == 1
    gangs = Counter(record.workload_name for record in records if record.workload_kind == "PodGroup")
    assert gangs == {"locomotion-pretrain": 6, "vla-pretrain": 2, "world-model-nvl": 16}
    nvl = [record for record in records if record.workload_name == "world-model-nvl"]
    assert {r.annotations["kai.scheduler/topology-required-placement"] for r in nvl} == {"nvidia.com/gpu.clique"}
    assert {r.owner_kind for r in records if r.workload_kind == "Deployment"} == {"ReplicaSet"}
    assert all(record.started for record in records if record.phase == "Running")
    unscheduled = [record for record in records if record.phase == "Pending" and not record.node_name]
    assert unscheduled and all(r.scheduled_reason == "Unschedulable" and r.scheduled_message for r in unscheduled)
    assert [pod_record(obj, []) for obj in fleet.pods(T0)] == records  # deterministic
