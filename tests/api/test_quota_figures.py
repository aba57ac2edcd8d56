"""Figures per (department or project, pool) (SEMANTICS §9): allocated, pending, request, allocation ratio, over
quota, fair share and over fair share, from the pods of each project's namespaces or ``runai/queue`` label, with
Run:ai's GPU fractions; the same rows from ``poolctl quota list --json`` and ``GET /api/quotas/``."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.doors import http_doors
from pools.management.commands.poolctl import cli_doors

A100 = {"gpu-type": "A100"}


@pytest.fixture
def lab(cluster, actor):
    """Pools a100 (a-0 ready, a-1 NotReady: capacity 8) and v100; departments rnd and ops; three projects."""
    cluster(
        [
            node("a-0", gpu=8, labels=A100),
            node("a-1", gpu=8, labels=A100, ready="False"),
            node("v-0", gpu=4, labels={"gpu-type": "V100"}),
            pod("train-1", node="a-0", gpu=4, namespace="runai-vision"),
            pod("train-2", node="a-1", namespace="runai-vision", annotations={"gpu-fraction": "0.5"}),
            pod("queued", node="a-1", gpu=3, namespace="shared", labels={"runai/queue": "nlp"}),
            pod("waiting", gpu=6, namespace="runai-vision", phase="Pending", pool="a100"),
            pod("serve", node="a-0", gpu=2, namespace="runai-infer"),
            pod("other", node="v-0", gpu=2, namespace="runai-infer"),
            pod("stray", node="a-0", gpu=1, namespace="default"),
            pod("done", node="a-0", gpu=8, namespace="runai-vision", phase="Succeeded"),
        ],
        name="lab",
    )

    def gpu(pool, deserved, weight=2):
        return {"nodePool": pool, "gpu": {"deserved": deserved, "overQuotaWeight": weight}}

    services.config_apply(
        changes={
            ConfigType.POOL: {
                "a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}},
                "v100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "V100"}},
            },
            ConfigType.DEPARTMENT: {"rnd": {"resources": [gpu("a100", 8)]}, "ops": {"resources": [gpu("a100", 4, 1)]}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": [gpu("a100", 6)]},
                "nlp": {"department": "rnd", "namespaces": ["nlp-team"], "resources": [gpu("a100", 2)]},
                "infer": {"department": "ops", "resources": [gpu("a100", 4)]},
            },
        },
        actor=actor,
    )


def rows(user, pool=None) -> dict[tuple[str, str], dict]:
    return {(row["pool"], row["unit"]): row for row in selectors.quota_figures(user=user, pool=pool)}


def test_each_units_figures_on_a_pool_follow_section_9(lab):
    found = rows(SYSTEM, "a100")
    pick = ("allocated", "pending", "request", "deserved", "allocation_ratio", "over_quota", "fair_share")
    figures = {unit: tuple(row[key] for key in pick) for (_, unit), row in found.items()}
    # Capacity 8 (a-1 is not ready). Departments ask 13.5 and 2, deserve 8 and 4: the deserved phase gives
    # min(8, 13.5) + min(4, 2) = 10 > 8, nothing remains. rnd's 8 go to vision and nlp by their deserved 6 and 2.
    assert figures == {
        # unit: allocated, pending, request, deserved, ratio, over quota, fair share
        "rnd": (7.5, 6, 13.5, 8, 0.9375, 0, 8),
        "vision": (4.5, 6, 10.5, 6, 0.75, 0, 6),  # 4 GPUs + half a GPU (gpu-fraction); 6 waiting
        "nlp": (3, 0, 3, 2, 1.5, 1, 2),  # its runai/queue label, in another namespace
        "ops": (2, 0, 2, 4, 0.5, 0, 2),
        "infer": (2, 0, 2, 4, 0.5, 0, 2),
    }
    assert found[("a100", "nlp")]["over_fair_share"] == 1
    # Each department, then its projects, in creation order (one change creates them in name order).
    assert list(found) == [("a100", unit) for unit in ("ops", "infer", "rnd", "nlp", "vision")]


def test_a_pool_without_quota_gives_run_ais_defaults(lab):
    infer = rows(SYSTEM, "v100")[("v100", "infer")]
    assert (infer["deserved"], infer["limit"], infer["over_quota_weight"], infer["priority"]) == (0, -1, 2, 100)
    assert (infer["allocated"], infer["allocation_ratio"], infer["over_quota"], infer["fair_share"]) == (2, None, 2, 2)


def test_the_cli_and_the_api_give_the_same_rows(lab, poolctl, admin_api):
    assert poolctl("quota", "list", "--json").json() == admin_api.get("/api/quotas/").json()
    text = poolctl("quota", "list", "--pool", "a100").out.splitlines()
    assert text[0].split()[:4] == ["POOL", "UNIT", "DEPARTMENT", "DESERVED"]
    assert text[3].startswith("a100") and "  infer" in text[3]
    assert admin_api.get("/api/quotas/?pool=nowhere").status_code == 404


def test_a_reader_sees_the_units_and_pools_they_may_see_with_the_same_shares(lab, client_for):
    reader = person(
        "reader",
        role("vision-only", {"actions": ["project:Read", "pool:Read"], "resources": ["project/vision", "pool/a100"]}),
        password=None,
    )
    seen = client_for(reader).get("/api/quotas/").json()["quotas"]
    assert [(row["pool"], row["unit"]) for row in seen] == [("a100", "vision")]
    assert seen[0] == rows(SYSTEM)[("a100", "vision")]  # shares count the units the reader cannot see
    assert client_for(reader).get("/api/quotas/?pool=v100").status_code == 404


def test_the_quota_list_is_a_door_of_the_catalogue():
    assert {"GET /api/quotas/", "poolctl quota list"} <= {entry.door for entry in http_doors() + cli_doors()}


def test_over_subscription_is_a_warning_never_a_refusal(lab, poolctl, client_for):
    assert poolctl("quota", "set", "nlp", "--pool", "a100", "--gpu-deserved", "3").code == 0
    result = poolctl("quota", "list", "--pool", "a100")
    assert result.code == 0
    assert result.err.splitlines() == [
        "warning: pool 'a100': the projects of department 'rnd' deserve 9 GPUs, more than its 8",
        "warning: pool 'a100' is over-subscribed: departments deserve 12 GPUs, its capacity is 8",
    ]
    assert poolctl("quota", "list", "--json").json()["warnings"] == [line[9:] for line in result.err.splitlines()]
    # Someone who sees one department hears about it, not about the pool's other departments.
    reader = person(
        "rnd-reader",
        role("rnd-read", {"actions": ["department:Read", "pool:Read"], "resources": ["department/rnd", "pool/a100"]}),
        password=None,
    )
    assert client_for(reader).get("/api/quotas/").json()["warnings"] == [result.err.splitlines()[0][9:]]


def test_a_starting_pod_is_allocated_and_a_label_pools_waiting_pod_is_pending_there(cluster, actor):
    """A pod bound to a node but not running yet holds its GPUs (as the scheduler and the pool's usage count it);
    a waiting pod asking for a label pool by its ``nodeSelector`` only (what the pool's template renders) is
    pending in that pool. Each is one of the project's workloads there."""
    starting = pod("starting", node="a-0", gpu=2, namespace="runai-vision", phase="Pending")
    waiting = pod("waiting", gpu=3, namespace="runai-vision", phase="Pending")
    waiting["spec"]["nodeSelector"] = {"kubernetes.io/arch": "amd64", "gpu-type": "A100"}
    elsewhere = pod("elsewhere", gpu=5, namespace="runai-vision", phase="Pending")
    elsewhere["spec"]["nodeSelector"] = {"gpu-type": "H100"}  # no pool takes these nodes: counted nowhere
    cluster([node("a-0", gpu=8, labels=A100), starting, waiting, elsewhere], name="lab")
    services.config_apply(
        changes={
            ConfigType.POOL: {"a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}}},
            ConfigType.DEPARTMENT: {"rnd": {}},
            ConfigType.PROJECT: {"vision": {"department": "rnd"}},
        },
        actor=actor,
    )
    found = rows(SYSTEM)
    vision, rnd = found[("a100", "vision")], found[("a100", "rnd")]
    assert (vision["allocated"], vision["pending"], vision["workloads"]) == (2, 3, 2)
    assert (rnd["allocated"], rnd["pending"], rnd["workloads"]) == (2, 3, 2)
    assert selectors.pool_list(names=["a100"], user=SYSTEM)[0]["gpu"]["total_usage"] == 2  # the same as the pool's
