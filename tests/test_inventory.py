"""The file backend: sync, membership (SEMANTICS.md §5) and GPU accounting (§6) through the database."""

from datetime import timedelta
from decimal import Decimal

import pytest
from kube_objects import node, pod, write_list

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.inventory.records import InventoryError
from pools.models import Backend, Node, NodeMembership, Pod

TAINT_A100 = {"key": "nvidia.com/gpu.product", "value": "NVIDIA-A100", "effect": "NoSchedule"}
TOLERATE_A100 = {"key": "nvidia.com/gpu.product", "operator": "Equal", "value": "NVIDIA-A100", "effect": "NoSchedule"}


def template(actor, name, spec):
    services.config_apply(changes={ConfigType.POD_TEMPLATE: {name: {"spec": spec}}}, actor=actor)


def pool(actor, name, *, backend="test-cluster", templates=(), platforms=None, guarantee=-1, **extra):
    body = {
        "backend": backend,
        "common_pod_template": list(templates),
        "resources": {"gpu": {"guarantee": guarantee}},
        **extra,
    }
    if platforms is not None:
        body["platforms"] = {p: {"override_pod_template": t} for p, t in platforms.items()}
    services.config_apply(changes={ConfigType.POOL: {name: body}}, actor=actor)


def pools_by_name():
    return {row["name"]: row for row in selectors.pool_list(user=SYSTEM)}


def members(pool_name):
    return set(NodeMembership.objects.filter(pool__name=pool_name).values_list("node__name", "platform_name"))


class TestSync:
    def test_sync_stores_nodes_and_only_non_terminated_pods(self, cluster):
        backend = cluster(
            [
                node("n1"),
                node("n2"),
                pod("running", node="n1", gpu=2),
                pod("pending", phase="Pending", gpu=1),
                pod("done", node="n1", gpu=4, phase="Succeeded"),
                pod("failed", node="n1", gpu=4, phase="Failed"),
            ]
        )
        assert set(Node.objects.values_list("name", flat=True)) == {"n1", "n2"}
        assert set(Pod.objects.values_list("name", flat=True)) == {"running", "pending"}
        backend.refresh_from_db()
        assert backend.last_sync_error == "" and backend.last_heartbeat is not None
        assert backend.last_sync_counts["nodes"] == 2

    def test_resync_writes_only_what_changed(self, cluster, tmp_path):
        backend = cluster([node("n1"), node("n2"), pod("p1", node="n1", gpu=1), pod("p2", node="n2", gpu=1)])
        write_list(
            tmp_path / "test-cluster.json", [node("n1"), node("n2", gpu=4), node("n3"), pod("p1", node="n1", gpu=1)]
        )
        counts = services.backend_sync(backend=backend)
        assert counts["nodes_changed"] == {"created": 1, "updated": 1, "deleted": 0}
        assert counts["pods_changed"] == {"created": 0, "updated": 0, "deleted": 1}
        assert Node.objects.get(name="n2").gpu == 4

    def test_a_missing_file_changes_nothing_and_records_the_error(self, cluster, tmp_path):
        backend = cluster([node("n1"), pod("p1", node="n1", gpu=1)])
        (tmp_path / "test-cluster.json").unlink()
        with pytest.raises(InventoryError, match="cannot read the inventory file"):
            services.backend_sync(backend=backend)
        backend.refresh_from_db()
        assert "cannot read the inventory file" in backend.last_sync_error
        assert Node.objects.count() == 1 and Pod.objects.count() == 1

    def test_malformed_objects_are_skipped_or_read_leniently(self, cluster):
        weird = node("weird", gpu="1.5k")
        weird["status"]["allocatable"]["memory"] = "lots"
        no_status = node("bare")
        del no_status["status"]
        cluster(
            [
                weird,
                no_status,
                {"kind": "Node", "metadata": {}},
                "not an object",
                pod("milli", node="weird", gpu="100m"),
                pod("odd", node="weird", cpu="many"),
            ]
        )
        assert Node.objects.get(name="weird").gpu == 1500
        assert Node.objects.get(name="weird").memory == 0
        assert Node.objects.get(name="bare").available is False
        assert Pod.objects.get(name="milli").gpu == Decimal("0.1")
        assert Pod.objects.get(name="odd").cpu == 0
        assert Backend.objects.get(name="test-cluster").last_sync_counts["warnings"] >= 4

    def test_mig_devices_and_time_slicing_are_recorded(self, cluster):
        cluster(
            [
                node("mig", gpu=0, extra_allocatable={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"}),
                node("sliced", gpu=16, labels={"nvidia.com/gpu.replicas": "4"}),
            ]
        )
        assert Node.objects.get(name="mig").mig_devices == {"1g.10gb": 7, "3g.40gb": 2}
        assert Node.objects.get(name="sliced").gpu_replicas == 4


class TestMembership:
    def test_node_selector_and_tolerations_place_nodes_in_platforms(self, cluster, actor):
        cluster(
            [
                node("l40s", product="NVIDIA-L40S"),
                node("a100", product="NVIDIA-A100", taints=[TAINT_A100]),
                node(
                    "a100-untolerated", product="NVIDIA-A100", taints=[TAINT_A100, {"key": "x", "effect": "NoExecute"}]
                ),
                node("soft", product="NVIDIA-L40S", taints=[{"key": "y", "effect": "PreferNoSchedule"}]),
            ]
        )
        template(actor, "l40s", {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}})
        template(
            actor, "a100", {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"}, "tolerations": [TOLERATE_A100]}
        )
        pool(actor, "mixed", platforms={"l40s": ["l40s"], "a100": ["a100"]})
        assert members("mixed") == {("l40s", "l40s"), ("soft", "l40s"), ("a100", "a100")}

    def test_required_node_affinity_is_honoured(self, cluster, actor):
        cluster([node("h100", product="NVIDIA-H100"), node("gb200", product="NVIDIA-GB200")])
        template(
            actor,
            "not-h100",
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "nvidia.com/gpu.product",
                                            "operator": "NotIn",
                                            "values": ["NVIDIA-H100"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
        )
        pool(actor, "big", templates=["not-h100"])
        assert members("big") == {("gb200", "default")}

    def test_a_pool_without_platforms_has_one_named_default(self, cluster, actor):
        cluster([node("n1")])
        pool(actor, "plain")
        assert members("plain") == {("n1", "default")}
        assert selectors.pool_render(user=SYSTEM, pool_name="plain")["platform"] == "default"

    def test_changing_a_template_recomputes_membership(self, cluster, actor):
        cluster([node("l40s", product="NVIDIA-L40S"), node("h100", product="NVIDIA-H100")])
        template(actor, "gpu", {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}})
        pool(actor, "p", templates=["gpu"])
        assert members("p") == {("l40s", "default")}
        template(actor, "gpu", {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100"}})
        assert members("p") == {("h100", "default")}

    def test_unavailable_nodes_are_members_with_a_reason_but_add_no_capacity(self, cluster, actor):
        cluster([node("ok", gpu=8), node("down", gpu=8, ready="False"), node("cordoned", gpu=8, unschedulable=True)])
        pool(actor, "p")
        rows = {r["node"]: r for r in selectors.resource_list(user=SYSTEM, filters={"pool": "p"})}
        assert rows["down"]["available"] is False and "Ready" in rows["down"]["reason"]
        assert rows["cordoned"]["available"] is False and "cordon" in rows["cordoned"]["reason"]
        assert pools_by_name()["p"]["gpu"]["total_capacity"] == 8

    def test_backend_condition_rules_decide_availability(self, cluster, actor):
        calm, pressured = node("calm"), node("pressured")
        calm["status"]["conditions"].append({"type": "MemoryPressure", "status": "False"})
        pressured["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})
        cluster([calm, pressured], node_conditions={"Ready": "True", "MemoryPressure": "False"})
        assert set(Node.objects.filter(available=True).values_list("name", flat=True)) == {"calm"}


class TestAccounting:
    @pytest.fixture
    def accounting_pools(self, cluster, actor):
        cluster(
            [
                node("a1", gpu=8, labels={"team": "a"}),
                node("a2", gpu=8, labels={"team": "a"}),
                node("b1", gpu=4, labels={"team": "b"}),
                pod("a-normal", node="a1", gpu=3, pool="team-a"),
                pod("a-low", node="a2", gpu=2, pool="team-a", priority="LOW"),
                pod("a-init", node="a2", gpu=1, init_gpu=4, pool="team-a"),
                pod("stranger", node="a1", gpu=1),
                pod("b-job", node="b1", gpu=1, pool="team-b", priority="HIGH"),
                pod("a-done", node="a1", gpu=8, pool="team-a", phase="Succeeded"),
            ]
        )
        template(actor, "team-a", {"nodeSelector": {"team": "a"}})
        template(actor, "team-b", {"nodeSelector": {"team": "b"}})
        pool(actor, "team-a", templates=["team-a"], guarantee=10)
        pool(actor, "team-b", templates=["team-b"])

    def test_usage_quota_and_capacity_of_separate_pools(self, accounting_pools):
        a, b = pools_by_name()["team-a"], pools_by_name()["team-b"]
        # init container rule: max(4, 1) = 4; LOW is usage but not quota; finished pods count for nothing.
        assert a["gpu"] == {
            "quota_used": 7,
            "quota_limit": 10,
            "quota_free": 3,
            "total_usage": 9,
            "total_capacity": 16,
            "total_free": 6,
            "used_on_nodes": 10,
        }
        assert (a["shared"], a["node_set"]) == (False, ["team-a"])
        assert b["gpu"]["quota_limit"] == 4  # guarantee -1: the node set's capacity
        assert b["gpu"]["total_free"] == 3

    def test_pools_sharing_nodes_form_one_node_set_counted_once(self, accounting_pools, actor):
        template(
            actor,
            "a-or-b",
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]}
                            ]
                        }
                    }
                }
            },
        )
        pool(actor, "bridge", templates=["a-or-b"])
        rows = pools_by_name()
        for name in ("team-a", "team-b", "bridge"):
            assert rows[name]["shared"] is True
            assert rows[name]["node_set"] == ["bridge", "team-a", "team-b"]
            assert rows[name]["gpu"]["total_capacity"] == 20
        assert rows["bridge"]["gpu"]["total_usage"] == 0
        types = {(r["node"], r["pool"]): r["type"] for r in selectors.resource_list(user=SYSTEM)}
        assert types[("a1", "team-a")] == "SHARED" and types[("b1", "bridge")] == "SHARED"

    def test_overhead_counts_toward_usage(self, cluster, actor):
        cluster([node("n", gpu=8), pod("kata", node="n", gpu=1, pool="p", overhead={"nvidia.com/gpu": "1"})])
        pool(actor, "p")
        assert pools_by_name()["p"]["gpu"]["total_usage"] == 2

    def test_nodes_in_no_pool_are_listed_as_unused(self, accounting_pools, actor):
        rows = [r for r in selectors.resource_list(user=SYSTEM) if r["type"] == "UNUSED"]
        assert rows == []
        template(actor, "team-b", {"nodeSelector": {"team": "nobody"}})  # team-b now selects no node
        assert not NodeMembership.objects.filter(node__name="b1").exists()
        unused = [r for r in selectors.resource_list(user=SYSTEM) if r["type"] == "UNUSED"]
        assert [(r["node"], r["pool"], r["platform"]) for r in unused] == [("b1", "", "")]

    def test_resource_numbers_round_used_up_and_capacity_down(self, cluster, actor):
        cluster(
            [node("n", gpu=8, cpu="7500m", memory="10.5Gi"), pod("p", node="n", gpu="100m", cpu="250m", memory="100Mi")]
        )
        pool(actor, "p")
        (row,) = selectors.resource_list(user=SYSTEM, filters={"pool": "p"})
        assert row["gpu"] == {"used": 1, "capacity": 8}
        assert row["cpu"] == {"used": 1, "capacity": 7}
        assert row["memory_gi"] == {"used": 1, "capacity": 10}

    def test_used_is_clamped_to_capacity(self, cluster, actor):
        cluster([node("n", gpu=2), pod("big", node="n", gpu=5)])
        pool(actor, "p")
        assert selectors.resource_list(user=SYSTEM, filters={"pool": "p"})[0]["gpu"] == {"used": 2, "capacity": 2}

    def test_status_follows_maintenance_and_the_last_contact(self, cluster, actor, settings):
        backend = cluster([node("n")])
        pool(actor, "p")
        assert pools_by_name()["p"]["status"] == "ONLINE"
        Backend.objects.filter(pk=backend.pk).update(last_heartbeat=backend.last_heartbeat - timedelta(minutes=3))
        assert pools_by_name()["p"]["status"] == "OFFLINE"
        pool(actor, "p", enable_maintenance=True)
        assert pools_by_name()["p"]["status"] == "MAINTENANCE"


class TestCheck:
    def test_per_node_rules_use_free_resources_and_list_failures_per_node(self, cluster, actor):
        cluster([node("busy", gpu=8), node("idle", gpu=8), pod("job", node="busy", gpu=6)])
        services.config_apply(
            changes={
                ConfigType.RESOURCE_VALIDATION: {
                    "fits_now": [
                        {
                            "operator": "LE",
                            "left_operand": "{{USER_GPU}}",
                            "right_operand": "{{K8_FREE_GPU}}",
                            "assert_message": "{{USER_GPU}} GPUs do not fit on a node with {{K8_FREE_GPU}} free",
                        }
                    ]
                }
            },
            actor=actor,
        )
        pool(actor, "p", common_resource_validations=["fits_now"])
        result = selectors.pool_check(user=SYSTEM, pool_name="p", user_values={"USER_GPU": 4})
        assert result["passed"] is True
        assert {n["node"]: n["passed"] for n in result["nodes"]} == {"busy": False, "idle": True}
        busy = next(n for n in result["nodes"] if n["node"] == "busy")
        assert busy["errors"] == ["4 GPUs do not fit on a node with 2 free"]
        assert selectors.pool_check(user=SYSTEM, pool_name="p", user_values={"USER_GPU": 9})["passed"] is False

    def test_a_platform_without_nodes_fails_and_says_so(self, cluster, actor):
        cluster([node("n")])
        template(actor, "none", {"nodeSelector": {"no": "such"}})
        pool(actor, "p", templates=["none"])
        result = selectors.pool_check(user=SYSTEM, pool_name="p")
        assert result["passed"] is False and any("no available node" in e for e in result["errors"])
