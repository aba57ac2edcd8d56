"""Label-defined pools and the default pool (SEMANTICS §8), through the write path and a synced file backend.

A Run:ai-style backend: node pools `gpu-type=A100` and `gpu-type=V100`, and a default pool that takes every
node in no other pool.
"""

from decimal import Decimal

import pytest
from kube_objects import node, pod, write_list

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import ConfigError
from pools.inventory.records import gpu_type
from pools.models import Backend, ConfigRevision, Node, NodeMembership, Pool

A100 = {"gpu-type": "A100"}
V100 = {"gpu-type": "V100"}


def members(pool_name):
    return set(NodeMembership.objects.filter(pool__name=pool_name).values_list("node__name", flat=True))


def pool_gpu(name):
    return next(row for row in selectors.pool_list(user=SYSTEM) if row["name"] == name)["gpu"]


def backend_body(name="runai"):
    return selectors.config_state([ConfigType.BACKEND])[ConfigType.BACKEND][name]


@pytest.fixture
def runai(cluster, actor, inventory_dir):
    """Label pools a100 (gpu-type=A100) and v100 (gpu-type=V100) and the default pool `default` of backend runai."""
    items = [
        node("a1", gpu=8, labels=A100),
        node("a2", gpu=8, labels=A100),
        node("v1", gpu=4, labels=V100),
        node("plain", gpu=2),
        pod("train", node="a1", gpu="2.5"),
        pod("infer", node="v1", gpu=1),
        pod("notebook", node="plain", gpu="0.5"),
    ]
    backend = cluster(items, name="runai")
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "a100": {"backend": "runai", "node_label": {"key": "gpu-type", "value": "A100"}},
                "v100": {"backend": "runai", "node_label": "gpu-type=V100"},
                "default": {"backend": "runai"},
            },
        },
        actor=actor,
    )
    services.config_apply(
        changes={ConfigType.BACKEND: {"runai": {**backend_body(), "default_pool": "default"}}}, actor=actor
    )

    def resync(extra):
        write_list(inventory_dir / "runai.json", [*items, *extra])
        services.backend_sync(backend=Backend.objects.get(name="runai"))

    backend.resync = resync
    return backend


def test_a_label_pool_is_the_nodes_carrying_its_label_and_the_default_pool_takes_the_rest(runai):
    assert members("a100") == {"a1", "a2"}
    assert members("v100") == {"v1"}
    assert members("default") == {"plain"}


def test_the_label_acts_as_a_first_template_so_rendered_pods_land_on_the_pools_nodes(runai):
    rendered = selectors.pool_render(pool_name="a100", user=SYSTEM)
    assert rendered["pod_template"]["spec"]["nodeSelector"] == {"gpu-type": "A100"}


def test_new_unlabelled_nodes_appear_in_the_default_pool(runai):
    runai.resync([node("new-1", gpu=4), node("new-2", gpu=4, labels=A100)])
    assert members("default") == {"plain", "new-1"}
    assert members("a100") == {"a1", "a2", "new-2"}


def test_deleting_a_label_pool_moves_its_nodes_to_the_default_pool(runai, actor):
    services.config_apply(changes={ConfigType.POOL: {"v100": None}}, actor=actor)
    assert members("default") == {"plain", "v1"}


def test_label_and_default_pools_count_what_runs_on_their_nodes(runai):
    # The pods carry no pool label: usage is node-based, as gpuctl and Run:ai count it.
    assert pool_gpu("a100")["total_usage"] == 3  # 2.5 rounded up
    assert pool_gpu("a100")["total_capacity"] == 16
    assert pool_gpu("v100")["total_usage"] == 1
    assert pool_gpu("default")["total_usage"] == 1
    assert pool_gpu("default")["total_free"] == 1  # 2 - 0.5, rounded down


def test_the_default_pool_cannot_be_deleted(runai, actor):
    with pytest.raises(ConfigError, match="default pool of backend 'runai' and cannot be deleted"):
        services.config_apply(changes={ConfigType.POOL: {"default": None}}, actor=actor)
    assert Pool.objects.filter(name="default").exists()


def test_a_default_pool_must_be_a_pool_of_its_backend(runai, actor, cluster):
    cluster([node("x")], name="other")
    with pytest.raises(ConfigError, match="belongs to backend 'runai'"):
        services.config_apply(
            changes={ConfigType.BACKEND: {"other": {**backend_body("other"), "default_pool": "default"}}},
            actor=actor,
        )
    with pytest.raises(ConfigError, match="pool 'missing' does not exist"):
        services.config_apply(
            changes={ConfigType.BACKEND: {"runai": {**backend_body(), "default_pool": "missing"}}}, actor=actor
        )


def test_two_pools_of_a_backend_cannot_share_one_label(runai, actor):
    with pytest.raises(ConfigError, match="pool 'a100' of backend 'runai' is already the pool of gpu-type=A100"):
        services.config_apply(
            changes={ConfigType.POOL: {"a100-bis": {"backend": "runai", "node_label": "gpu-type=A100"}}}, actor=actor
        )


@pytest.mark.parametrize(
    "label, message",
    [
        ({"key": "bad key", "value": "x"}, "not a valid label key"),
        ({"key": "k", "value": "no spaces"}, "not a valid label value"),
        ({"key": "k", "value": "v", "extra": 1}, 'must be {"key"'),
        (["k", "v"], 'must be {"key"'),
    ],
)
def test_a_bad_node_label_is_refused_with_its_field_and_changes_nothing(runai, actor, label, message):
    with pytest.raises(ConfigError, match=message) as error:
        services.config_apply(
            changes={ConfigType.POOL: {"a100": {"backend": "runai", "node_label": label}}}, actor=actor
        )
    assert "node_label" in str(error.value)
    assert Pool.objects.get(name="a100").node_label == {"key": "gpu-type", "value": "A100"}


def test_a_bad_placement_strategy_is_refused(runai, actor):
    with pytest.raises(ConfigError, match="'pack' is not one of binpack, spread"):
        services.config_apply(
            changes={ConfigType.POOL: {"a100": {"backend": "runai", "gpu_placement_strategy": "pack"}}}, actor=actor
        )


def test_label_default_pool_and_placement_changes_are_revisions_that_roll_back(runai, actor):
    body = selectors.config_state([ConfigType.POOL])[ConfigType.POOL]["v100"]
    before = ConfigRevision.objects.filter(config_type=ConfigType.POOL).order_by("-revision").first().revision
    services.config_apply(
        changes={
            ConfigType.POOL: {"v100": {**body, "node_label": "gpu-type=A100-80", "gpu_placement_strategy": "spread"}}
        },
        actor=actor,
    )
    assert members("v100") == set() and "v1" in members("default")
    services.config_rollback(config_type=ConfigType.POOL, revision=before, actor=actor)
    assert members("v100") == {"v1"}
    assert Pool.objects.get(name="v100").gpu_placement_strategy == "binpack"


def test_a_revision_recorded_before_label_pools_existed_still_rolls_back(runai, actor):
    """Snapshots from older versions lack the new fields; rolling back to one gives them their defaults."""
    old = ConfigRevision.objects.filter(config_type=ConfigType.POOL).order_by("-revision").first()
    for body in old.snapshot.values():
        for field in ("node_label", "gpu_placement_strategy", "cpu_placement_strategy"):
            body.pop(field, None)
    old.save()
    services.config_apply(
        changes={ConfigType.POOL: {"extra": {"backend": "runai", "node_label": "gpu-type=T4"}}}, actor=actor
    )
    services.config_rollback(config_type=ConfigType.POOL, revision=old.revision, actor=actor)
    assert not Pool.objects.filter(name="extra").exists()
    assert Pool.objects.get(name="v100").node_label == {}  # the old body had no label: the default, none
    assert Pool.objects.get(name="v100").gpu_placement_strategy == "binpack"


def test_gpu_type_is_read_from_the_first_label_found():
    assert gpu_type({"nvidia.com/gpu.product": "H100", "runwhere.ai/gpu-type": "A100-100G"}) == "H100"
    assert gpu_type({"nvidia.com/gpuType": "L4"}) == "L4"
    assert gpu_type({"runwhere.ai/gpu-type": "A100-100G"}) == "A100-100G"
    assert gpu_type({}) == ""


def test_nodes_keep_gpu_memory_and_their_pod_count(runai):
    a1 = Node.objects.get(name="a1")
    assert a1.pods == 1 and a1.gpu_used == Decimal("2.5")
    plain = Node.objects.get(name="plain", backend__name="runai")
    assert plain.pods == 1


def test_gpu_memory_comes_from_gfd_labels(cluster):
    cluster([node("m", gpu=8, labels={"nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.count": "8"})])
    assert Node.objects.get(name="m").gpu_memory == 81559 * 8 * 2**20
