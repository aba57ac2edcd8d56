"""What a config change moves, seen before it is saved (SEMANTICS §5, §6.1), and seen at once after it is saved.

A Run:ai-style file backend: nodes labelled ``gpu-type=A100`` or ``gpu-type=V100`` with pods on them. The dry run of
a change answers what it would move without writing; the write itself recomputes memberships, node groups and the
pools of the workloads holding quiet GPUs in its own transaction, so pages show it without a sync.
"""

from datetime import UTC, datetime

import pytest
from kube_objects import node, pod
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ChangeOrigin, ConfigType
from pools.engine.errors import ConfigError
from pools.models import ConfigRevision, NodeMembership, Pool, QuietGpu

A100 = {"gpu-type": "A100"}
V100 = {"gpu-type": "V100"}
LABEL_POOL = {"backend": "runai", "node_label": {"key": "gpu-type", "value": "A100"}}


def members(pool_name):
    return set(NodeMembership.objects.filter(pool__name=pool_name).values_list("node__name", flat=True))


@pytest.fixture
def runai(cluster):
    return cluster(
        [
            node("a1", gpu=8, labels=A100),
            node("a2", gpu=8, labels=A100),
            node("v1", gpu=4, labels=V100),
            pod("train", node="a1", gpu=2, namespace="team-a", labels={"osmo.user": "ana"}),
            pod("tune", node="a1", gpu=1, namespace="team-a", labels={"osmo.user": "ana"}),
            pod("infer", node="v1", gpu=1, namespace="team-b"),
            pod("cpu-only", node="a2", namespace="team-a"),
        ],
        name="runai",
    )


def test_a_new_label_pool_shows_its_nodes_and_workloads_without_a_sync(runai, actor):
    QuietGpu.objects.create(
        backend=runai,
        node_name="a1",
        device="GPU-1",
        namespace="team-a",
        pod="train",
        pool="",
        gpus=1,
        quiet_since=datetime(2025, 1, 1, tzinfo=UTC),
    )

    services.config_apply(changes={ConfigType.POOL: {"a100": LABEL_POOL}}, actor=actor)

    pool = Pool.objects.get(name="a100")
    assert members("a100") == {"a1", "a2"}
    nodes = selectors.resource_list(user=SYSTEM, filters={"pool": "a100"})
    assert {row["node"] for row in nodes} == {"a1", "a2"}
    assert selectors.pool_workloads(pool) == [
        {"namespace": "team-a", "user": "", "running": 1, "pending": 0, "gpu": 0.0},
        {"namespace": "team-a", "user": "ana", "running": 2, "pending": 0, "gpu": 3.0},
    ]
    row = next(row for row in selectors.node_pool_list(user=SYSTEM) if row["node_pool"] == "a100")
    assert (row["nodes"], row["gpu_devices"], row["allocated_gpus"], row["workloads"]) == (2, 16, 3, 3)
    assert QuietGpu.objects.get(pod="train").pool == "a100"  # its idle GPU shows under the new pool at once


def test_the_dry_run_answers_what_would_move_and_writes_nothing(runai, actor):
    services.config_apply(changes={ConfigType.POOL: {"a100": LABEL_POOL}}, actor=actor)
    revisions = ConfigRevision.objects.count()

    preview = services.config_apply(
        changes={ConfigType.POOL: {"a100": {**LABEL_POOL, "node_label": {"key": "gpu-type", "value": "V100"}}}},
        actor=actor,
        dry_run=True,
    )

    assert preview == [] and ConfigRevision.objects.count() == revisions and members("a100") == {"a1", "a2"}
    (row,) = preview.effect["pools"]
    assert row["pool"] == "a100" and row["backend"] == "runai"
    assert (row["nodes_out"], row["nodes_in"]) == (["a1", "a2"], ["v1"])
    assert (row["gpus_out"], row["gpus_in"], row["nodes_before"], row["nodes_after"]) == (16, 4, 2, 1)
    assert row["workloads_affected"] == 2 and row["workload_gpus"] == 3
    assert row["workloads"] == [
        {"pool_label": "", "namespace": "team-a", "user": "ana", "pods": 2, "gpu": 3, "nodes": ["a1"]}
    ]
    assert row["summary"] == "2 nodes, 16 GPUs leave a100, 2 workloads running; 1 node, 4 GPUs join a100"


def test_a_change_that_moves_no_node_has_an_empty_effect(runai, actor):
    preview = services.config_apply(
        changes={ConfigType.POD_TEMPLATE: {"unused": {"spec": {"nodeSelector": {"x": "y"}}}}},
        actor=actor,
        dry_run=True,
    )
    assert preview.effect == {"pools": [], "warnings": []}


def test_the_dry_run_warns_of_a_guarantee_the_pool_could_no_longer_hold(runai, actor):
    guaranteed = {**LABEL_POOL, "resources": {"gpu": {"guarantee": 12}}}
    services.config_apply(changes={ConfigType.POOL: {"a100": guaranteed}}, actor=actor)
    preview = services.config_apply(
        changes={ConfigType.POOL: {"a100": {**guaranteed, "node_label": {"key": "gpu-type", "value": "V100"}}}},
        actor=actor,
        dry_run=True,
    )
    assert preview.effect["warnings"] == [
        "pool 'a100': its GPU guarantee (12) would be more than the 4 GPUs of its available nodes"
    ]


def test_a_reader_sees_only_the_pools_they_may_see_and_hidden_moves_are_refused(runai, actor):
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "a100": LABEL_POOL,
                "team-v": {"backend": "runai", "node_label": {"key": "gpu-type", "value": "V100"}},
                "hidden-all": {"backend": "runai", "common_pod_template": ["everything"]},
            },
            ConfigType.POD_TEMPLATE: {"everything": {"spec": {}}},
        },
        actor=actor,
    )
    writer = person(
        "writer",
        role(
            "a100-writer",
            {"actions": ["pool:Read"], "resources": ["pool/a100", "pool/team-v"]},
            {"actions": ["config:Update", "config:Read"], "resources": ["config/POOL"]},
        ),
    )
    as_writer = services.Actor.of(writer, ChangeOrigin.CLI)

    # a1 and a2 leave a100 but stay in the hidden pool: allowed, and only a100 is shown, without hidden pools' pods
    preview = services.config_apply(
        changes={ConfigType.POOL: {"a100": {**LABEL_POOL, "node_label": {"key": "gpu-type", "value": "H100"}}}},
        actor=as_writer,
        dry_run=True,
    )
    assert [row["pool"] for row in preview.effect["pools"]] == ["a100"]

    # a template change that takes nodes out of a pool hidden from its writer is refused, as the write itself is
    hidden_template = {"everything": {"spec": {"nodeSelector": {"gpu-type": "V100"}}}}
    with pytest.raises(ConfigError, match="not yours to move"):
        services.config_apply(
            changes={ConfigType.POD_TEMPLATE: hidden_template}, actor=actor_of_templates(), dry_run=True
        )


def actor_of_templates():
    """Someone who may change templates and see only pool team-v (the hidden pool uses the template)."""
    user = person(
        "templater",
        role(
            "templater",
            {"actions": ["pool:Read"], "resources": ["pool/team-v"]},
            {"actions": ["config:Update", "config:Read"], "resources": ["config/POD_TEMPLATE"]},
        ),
    )
    return services.Actor.of(user, ChangeOrigin.CLI)
