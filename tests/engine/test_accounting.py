"""SEMANTICS §6: effective pod requests, node sets and per-pool GPU numbers."""

import time
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.accounting import (
    TERMINATED_PHASES,
    NodeGpu,
    PoolGpu,
    PoolGpuInput,
    node_sets,
    pod_resource_requests,
    pool_gpu_accounting,
    resource_type,
    usage_pair,
)
from pools.engine.errors import QuantityError

GPU = "nvidia.com/gpu"


def container(name, requests=None, limits=None, **extra):
    return {"name": name, "resources": {"requests": requests or {}, "limits": limits or {}}, **extra}


def test_terminated_phases_are_succeeded_and_failed():
    assert TERMINATED_PHASES == {"Succeeded", "Failed"}


# effective pod requests


def test_app_container_requests_add_up():
    spec = {"containers": [container("a", {"cpu": "500m", GPU: "2"}), container("b", {"cpu": "1", GPU: "1"})]}
    assert pod_resource_requests(spec) == {"cpu": Decimal("1.5"), GPU: 3}


def test_the_largest_init_container_wins_when_it_exceeds_the_app_sum():
    spec = {
        "initContainers": [container("i1", {GPU: "4"}), container("i2", {GPU: "1"})],
        "containers": [container("a", {GPU: "1"}), container("b", {GPU: "2"})],
    }
    assert pod_resource_requests(spec)[GPU] == 4


def test_the_app_sum_wins_when_it_exceeds_every_init_container():
    spec = {"initContainers": [container("i", {GPU: "2"})], "containers": [container("a", {GPU: "3"})]}
    assert pod_resource_requests(spec)[GPU] == 3


def test_overhead_is_added():
    spec = {"containers": [container("a", {"cpu": "1"})], "overhead": {"cpu": "250m"}}
    assert pod_resource_requests(spec) == {"cpu": Decimal("1.25")}


def test_a_missing_request_falls_back_to_the_limit():
    spec = {"containers": [container("a", {"cpu": "1"}, {"cpu": "2", GPU: "8"})]}
    assert pod_resource_requests(spec) == {"cpu": 1, GPU: 8}


def test_sidecars_run_alongside_app_and_later_init_containers():
    spec = {
        "initContainers": [container("sidecar", {"cpu": "1"}, restartPolicy="Always"), container("init", {"cpu": "2"})],
        "containers": [container("a", {"cpu": "1"})],
    }
    # The init container runs next to the sidecar (1 + 2 = 3), more than the app phase (1 + 1 = 2).
    assert pod_resource_requests(spec) == {"cpu": 3}


def test_unparsable_values_are_skipped_with_a_warning():
    warnings: list[str] = []
    spec = {"containers": [container("a", {"cpu": "lots", "memory": "1Gi"})]}
    assert pod_resource_requests(spec, warnings=warnings) == {"memory": 1024**3}
    assert warnings == ["container 'a' requests: cpu 'lots' is not a quantity; ignored"]
    assert pod_resource_requests(spec) == {"memory": 1024**3}


def test_empty_or_malformed_pod_specs_request_nothing():
    assert pod_resource_requests({}) == {}
    assert pod_resource_requests({"containers": "x", "initContainers": [1], "overhead": []}) == {}


# node sets


def test_pools_sharing_a_node_directly_or_through_a_chain_form_one_set():
    sets = node_sets({"a": ["n1"], "b": ["n1", "n2"], "c": ["n2"], "d": ["n3"], "e": []})
    assert sets == {"a": ("a", "b", "c"), "b": ("a", "b", "c"), "c": ("a", "b", "c"), "d": ("d",), "e": ("e",)}


# pool accounting


def nodes(*entries):
    return {entry.name: entry for entry in entries}


def test_a_pool_alone_on_its_nodes():
    result = pool_gpu_accounting(
        [PoolGpuInput("a", frozenset({"n1", "n2"}), pod_requests=((Decimal(2), False), (Decimal(3), True)))],
        nodes(NodeGpu("n1", Decimal(8), Decimal(5)), NodeGpu("n2", Decimal(8), Decimal(0))),
    )
    assert result["a"] == PoolGpu(
        quota_used=2,
        quota_limit=16,
        quota_free=14,
        total_usage=5,
        total_capacity=16,
        total_free=11,
        shared=False,
        node_set=("a",),
        used_on_nodes=5,  # what pods hold on its nodes: with the free GPUs, its capacity
    )


def test_shared_pools_count_each_node_of_their_node_set_once():
    pools = [PoolGpuInput("a", frozenset({"n1", "n2"})), PoolGpuInput("b", frozenset({"n2", "n3"}))]
    result = pool_gpu_accounting(pools, nodes(*(NodeGpu(name, Decimal(8), Decimal(1)) for name in ("n1", "n2", "n3"))))
    for name in ("a", "b"):
        assert (result[name].total_capacity, result[name].total_free) == (24, 21)
        assert result[name].shared
        assert result[name].node_set == ("a", "b")


def test_unavailable_nodes_add_no_capacity_and_join_no_pools():
    pools = [PoolGpuInput("a", frozenset({"n1", "down"})), PoolGpuInput("b", frozenset({"down"}))]
    result = pool_gpu_accounting(
        pools, nodes(NodeGpu("n1", Decimal(8), Decimal(0)), NodeGpu("down", Decimal(8), Decimal(0), available=False))
    )
    assert result["a"].total_capacity == 8
    assert not result["a"].shared
    assert result["b"].total_capacity == 0


def test_usage_counts_the_pools_own_pods_rounded_up():
    pools = [PoolGpuInput("a", frozenset({"n1"}), pod_requests=((Decimal("0.5"), True), (Decimal("1.25"), False)))]
    result = pool_gpu_accounting(pools, nodes(NodeGpu("n1", Decimal(8), Decimal(2))))
    assert (result["a"].total_usage, result["a"].quota_used) == (2, 2)


def test_quota_limit_is_the_guarantee_or_the_node_set_capacity():
    pools = [PoolGpuInput("g", frozenset({"n1"}), guarantee=4), PoolGpuInput("u", frozenset({"n2"}))]
    result = pool_gpu_accounting(pools, nodes(NodeGpu("n1", Decimal(8), 0), NodeGpu("n2", Decimal(16), 0)))
    assert (result["g"].quota_limit, result["u"].quota_limit) == (4, 16)
    assert pool_gpu_accounting([PoolGpuInput("z", frozenset(), guarantee=0)], {})["z"].quota_limit == 0


def test_preemptible_pods_do_not_count_toward_the_quota():
    pools = [PoolGpuInput("a", frozenset({"n1"}), guarantee=4, pod_requests=((Decimal(3), True), (Decimal(1), False)))]
    result = pool_gpu_accounting(pools, nodes(NodeGpu("n1", Decimal(8), Decimal(4))))
    assert (result["a"].quota_used, result["a"].quota_free, result["a"].total_usage) == (1, 3, 4)


def test_quota_free_never_goes_below_zero():
    pools = [PoolGpuInput("a", frozenset({"n1"}), guarantee=2, pod_requests=((Decimal(5), False),))]
    result = pool_gpu_accounting(pools, nodes(NodeGpu("n1", Decimal(8), Decimal(5))))
    assert (result["a"].quota_used, result["a"].quota_limit, result["a"].quota_free) == (5, 2, 0)


def test_capacity_and_free_are_rounded_down_and_free_never_negative_per_node():
    result = pool_gpu_accounting(
        [PoolGpuInput("a", frozenset({"n1", "n2"}))],
        nodes(NodeGpu("n1", Decimal("7.5"), Decimal(9)), NodeGpu("n2", Decimal("1.5"), Decimal("0.25"))),
    )
    assert (result["a"].total_capacity, result["a"].total_free) == (9, 1)


def test_as_dict_gives_osmos_six_numbers_and_what_the_node_set_holds():
    result = pool_gpu_accounting([PoolGpuInput("a", frozenset())], {})["a"]
    assert result.as_dict() == {
        "quota_used": 0,
        "quota_limit": 0,
        "quota_free": 0,
        "total_usage": 0,
        "total_capacity": 0,
        "total_free": 0,
        "used_on_nodes": 0,
    }


def test_accounting_is_linear_for_thousands_of_pools_and_nodes():
    node_count = 20_000
    all_nodes = {f"n{i}": NodeGpu(f"n{i}", Decimal(8), Decimal(i % 9)) for i in range(node_count)}
    # Pool i holds nodes 10i .. 10i+10, so neighbours share a node and everything chains into one set.
    pools = [
        PoolGpuInput(f"p{i}", frozenset(f"n{j}" for j in range(10 * i, min(10 * i + 11, node_count))))
        for i in range(2000)
    ]
    start = time.perf_counter()
    result = pool_gpu_accounting(pools, all_nodes)
    assert time.perf_counter() - start < 2
    assert result["p0"].total_capacity == 8 * node_count
    assert len(result["p0"].node_set) == 2000


@given(
    st.dictionaries(
        st.sampled_from("abcdef"), st.frozensets(st.sampled_from(["n1", "n2", "n3", "n4", "n5"])), min_size=1
    )
)
def test_node_sets_partition_the_pools_and_share_no_node_across_sets(pool_nodes):
    sets = node_sets(pool_nodes)
    for pool, members in sets.items():
        assert pool in members
        assert all(sets[member] == members for member in members)
    for first, second in ((p, q) for p in pool_nodes for q in pool_nodes):
        if pool_nodes[first] & pool_nodes[second]:
            assert sets[first] == sets[second]


# resource listing helpers


@pytest.mark.parametrize(("count", "kind"), [(0, "UNUSED"), (1, "RESERVED"), (2, "SHARED"), (7, "SHARED")])
def test_resource_type_follows_the_number_of_pools(count, kind):
    assert resource_type(count) == kind


def test_usage_pair_rounds_used_up_capacity_down_and_clamps():
    assert usage_pair(Decimal("1.2"), Decimal("7.9")) == (2, 7)
    assert usage_pair(Decimal(9), Decimal(8)) == (8, 8)
    assert usage_pair(Decimal(3 * 1024**3 + 1), Decimal(16 * 1024**3 - 1), Decimal(1024**3)) == (4, 15)
    assert usage_pair(Decimal(-1), Decimal(8)) == (0, 8)


def test_usage_pair_needs_a_positive_unit():
    with pytest.raises(QuantityError):
        usage_pair(Decimal(1), Decimal(1), Decimal(0))
