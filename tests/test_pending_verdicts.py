"""Why pending workloads wait (SEMANTICS §10), read from synced state: a small cluster worked by hand, and the
demo, whose load shows every reason."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone
from kube_objects import node, pod
from people import person
from prometheus_client.parser import text_string_to_metric_families

from pools import services
from pools.choices import ConfigType
from pools.engine.permissions import METRICS_ROLE
from pools.models import Backend, Pod, Pool
from pools.selectors.verdicts import (
    pending_verdicts,
    pool_waiting_summary,
    request_verdict,
)


@pytest.fixture
def lab(cluster, actor):
    """Pool ``p`` of two 8-GPU nodes; department rnd (deserved 16) with projects vision (14) and nlp (2, limit 9).

    nlp holds a preemptible 8-GPU job filling n1; vision holds 4 GPUs of n2. vision's 8-GPU gang waits (it may
    take n1 back), nlp's 2-GPU job passes its limit, a 16-GPU pod never fits, a 2-GPU pod fits now.
    """
    backend = cluster(
        [
            node("n1", gpu=8),
            node("n2", gpu=8),
            pod(
                "nlp-sweep", node="n1", gpu=8, namespace="nlp", pool="p", priority="LOW", started="2026-11-27T10:00:00Z"
            ),
            pod("vision-serve", node="n2", gpu=4, namespace="vision", pool="p"),
            *(
                pod(
                    f"vision-train-{n}",
                    gpu=4,
                    namespace="vision",
                    pool="p",
                    phase="Pending",
                    annotations={"pod-group-name": "vision-train"},
                    unschedulable="0/2 nodes are available",
                )
                for n in (1, 2)
            ),
            pod("nlp-more", gpu=2, namespace="nlp", pool="p", phase="Pending"),
            pod("vision-huge", gpu=16, namespace="vision", pool="p", phase="Pending"),
            pod("vision-small", gpu=2, namespace="vision", pool="p", phase="Pending"),
            pod("stray", gpu=1, namespace="elsewhere", phase="Pending"),
        ],
        name="lab",
    )

    def gpu(deserved, limit=-1):
        return [{"nodePool": "p", "gpu": {"deserved": deserved, "limit": limit}}]

    services.config_apply(
        changes={
            ConfigType.POOL: {"p": {"backend": "lab"}},
            ConfigType.DEPARTMENT: {"rnd": {"resources": gpu(16)}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "namespaces": ["vision"], "resources": gpu(14)},
                "nlp": {"department": "rnd", "namespaces": ["nlp"], "resources": gpu(2, 9)},
            },
        },
        actor=actor,
    )
    return backend


def test_each_pending_workload_of_the_lab_gets_its_reason(lab):
    found = pending_verdicts(backend_ids=[lab.pk])
    by_name = {name: verdict for (_, _, _, name), verdict in found.items()}
    assert by_name["vision-huge"]["reason"] == "never_fits"
    assert by_name["vision-huge"]["checks"][0]["message"].startswith("no node has 16 GPUs")
    assert by_name["nlp-more"]["reason"] == "project_limit"
    assert by_name["nlp-more"]["checks"][0]["figures"] == {"unit": "nlp", "allocated": 8, "request": 2, "limit": 9}
    assert by_name["vision-small"]["reason"] == "scheduling"
    assert by_name["stray"]["reason"] == "scheduling"  # no pool claims it, and it still has a reason
    train = by_name["vision-train"]
    assert train["reason"] == "reclaim", train
    assert train["victims"] == [{"namespace": "nlp", "name": "nlp-sweep", "kind": "Pod", "project": "nlp", "gpus": 8}]
    # every workload with a pending pod has exactly one verdict
    pending = set(Pod.objects.filter(backend=lab, node_name="").values_list("workload_name", flat=True))
    assert set(by_name) == pending


def test_the_verdicts_take_a_fixed_number_of_queries(lab, cluster, django_assert_max_num_queries):
    # 14 for the verdicts; the start estimates read the running workloads and the learned runtimes, the fair
    # shares the projects' past usage.
    with django_assert_max_num_queries(17):
        small = pending_verdicts()
    cluster(
        [node(f"m{n}", gpu=8) for n in range(20)]
        + [pod(f"w{n}", gpu=4, namespace="vision", pool="p", phase="Pending") for n in range(40)],
        name="more",
    )
    with django_assert_max_num_queries(17):
        assert len(pending_verdicts()) == len(small) + 40


def test_one_workloads_verdict_reads_only_its_pool_and_equals_the_backends(
    lab, cluster, django_assert_max_num_queries, monkeypatch
):
    cluster([node("o1", gpu=8), pod("other-wait", gpu=4, namespace="vision", pool="p", phase="Pending")], name="other")
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # a start estimate of "now" is the same second each time
    found = pending_verdicts()
    assert len(found) == 6
    for key, verdict in found.items():
        # The verdicts' 17, and the pool's other waiting workloads, which its start estimate plays forward.
        with django_assert_max_num_queries(18):
            assert workload_pending_verdict(key) == verdict, key
    some = sorted(found, key=str)[:3]  # a page's few, of two backends: judged on their own pools only
    assert pending_verdicts(keys=some) == {key: found[key] for key in some}
    running = Pod.objects.get(name="vision-serve")
    assert workload_pending_verdict((lab.pk, "vision", running.workload_kind, running.workload_name)) is None
    assert workload_pending_verdict((lab.pk, "vision", "Pod", "none")) is None


def _rule(operator, left, right, message):
    return {"operator": operator, "left_operand": left, "right_operand": right, "assert_message": message}


def test_a_validation_rule_that_refuses_a_synced_pod_makes_it_never_fit(lab, actor):
    """The pool's rules judge a pending pod by what it asks, on nodes as if empty; a rule reading what the pod does
    not say (a submission variable, what a node has free now) cannot say it never fits, and is left out."""
    rules = [
        _rule("LE", "{{USER_GPU}}", "{{K8_FREE_GPU}}", "no GPUs free now"),
        _rule("LE", "{{USER_EXEC_TIMEOUT}}", "10", "too long"),
        _rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "Requested {{USER_GPU}} GPUs but the node has only {{K8_GPU}}"),
    ]
    services.config_apply(
        changes={
            ConfigType.RESOURCE_VALIDATION: {"lab-rules": rules},
            ConfigType.POOL: {"p": {"backend": "lab", "common_resource_validations": ["lab-rules"]}},
        },
        actor=actor,
    )
    by_name = {name: verdict for (_, _, _, name), verdict in pending_verdicts(backend_ids=[lab.pk]).items()}
    huge = by_name["vision-huge"]
    assert huge["reason"] == "never_fits"
    assert huge["checks"][0]["message"] == "Requested 16 GPUs but the node has only 8"
    assert by_name["vision-small"]["reason"] == "scheduling"  # the free-GPU and timeout rules are not judged
    assert by_name["vision-train"]["reason"] == "reclaim" and by_name["nlp-more"]["reason"] == "project_limit"

    cap = _rule("LE", "{{USER_GPU}}", "1", "At most 1 GPU a pod (requested {{USER_GPU}})")
    services.config_apply(changes={ConfigType.RESOURCE_VALIDATION: {"lab-rules": [*rules, cap]}}, actor=actor)
    found = pending_verdicts(backend_ids=[lab.pk])
    by_name = {name: verdict for (_, _, _, name), verdict in found.items()}
    assert by_name["vision-small"]["checks"][0]["message"] == "At most 1 GPU a pod (requested 2)"
    assert {name for name, verdict in by_name.items() if verdict["reason"] == "never_fits"} == {
        "vision-huge",
        "vision-small",
        "vision-train",
        "nlp-more",
    }
    assert by_name["stray"]["reason"] == "scheduling"  # no pool, no pool's rules
    for key, verdict in found.items():  # a workload's own page says the same
        assert workload_pending_verdict(key) == verdict


def test_a_gang_that_requires_one_rack_waits_for_a_rack_with_room(cluster, actor, monkeypatch):
    """KAI's ``topology-required-placement`` annotation, kept by the sync, confines a gang to one domain of the pool's
    level with that label (SEMANTICS §11); the verdict, the workload's own verdict and the what-if agree."""
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # a start estimate of "now" is the same second each time
    rack = "topology.kubernetes.io/rack"
    required = {"pod-group-name": "allreduce", "kai.scheduler/topology-required-placement": rack}
    backend = cluster(
        [
            node("r1-a", gpu=8, labels={rack: "r1"}),
            node("r1-b", gpu=8, labels={rack: "r1"}),
            node("r2-a", gpu=8, labels={rack: "r2"}),
            pod("busy-1", node="r1-a", gpu=4, pool="p"),
            pod("busy-2", node="r2-a", gpu=4, pool="p"),
            *(pod(f"allreduce-{n}", gpu=4, pool="p", phase="Pending", annotations=required) for n in range(3)),
        ],
        name="racks",
    )
    services.config_apply(
        changes={ConfigType.POOL: {"p": {"backend": "racks", "topology_keys": [{"key": "rack", "label": rack}]}}},
        actor=actor,
    )
    assert (
        Pod.objects.get(name="allreduce-0").annotations["kai.scheduler/topology-required-placement"] == rack
    )  # kept by the sync
    # 16 GPUs free: r1 has 12 (4 + 8), r2 4: three pods of 4 fit in r1
    found = pending_verdicts(backend_ids=[backend.pk])
    ((key, verdict),) = found.items()
    assert verdict["reason"] == "scheduling", verdict
    assert workload_pending_verdict(key) == verdict
    cluster(
        [
            node("r1-a", gpu=8, labels={rack: "r1"}),
            node("r1-b", gpu=8, labels={rack: "r1"}),
            node("r2-a", gpu=8, labels={rack: "r2"}),
            pod("busy-1", node="r1-a", gpu=4, pool="p"),
            pod("busy-2", node="r2-a", gpu=4, pool="p"),
            pod("busy-3", node="r1-b", gpu=4, pool="p"),
            *(pod(f"allreduce-{n}", gpu=4, pool="p", phase="Pending", annotations=required) for n in range(3)),
        ],
        name="racks",
    )
    # 12 free (r1 8, r2 4): enough overall, but no rack holds the three pods at once
    verdict = pending_verdicts(backend_ids=[backend.pk])[key]
    assert verdict["reason"] == "no_capacity"
    assert verdict["checks"][0]["figures"]["topology"] == rack
    assert verdict["checks"][0]["figures"]["largest_domain"] == "r1"
    assert workload_pending_verdict(key) == verdict


def test_a_rule_too_costly_to_render_refuses_no_synced_pod(lab, actor):
    bomb = "{{USER_GPU}}{% for i in range(100000) %}{% for j in range(100) %}" + "z" * 100 + "{% endfor %}{% endfor %}"
    services.config_apply(
        changes={
            ConfigType.RESOURCE_VALIDATION: {"bomb": [_rule("LE", bomb, "8", "never read")]},
            ConfigType.POOL: {"p": {"backend": "lab", "common_resource_validations": ["bomb"]}},
        },
        actor=actor,
    )
    by_name = {name: verdict for (_, _, _, name), verdict in pending_verdicts(backend_ids=[lab.pk]).items()}
    assert by_name["vision-small"]["reason"] == "scheduling" and by_name["vision-huge"]["reason"] == "never_fits"
    assert "never read" not in str(by_name)


def workload_pending_verdict(key):
    """One workload's verdict, as its page reads it: judged on its own pool only."""
    return pending_verdicts(keys=[key]).get(key)


def test_an_offline_backend_and_a_pool_in_maintenance_come_first(lab, actor):
    Backend.objects.filter(pk=lab.pk).update(last_heartbeat=None)
    found = pending_verdicts(backend_ids=[lab.pk])
    assert {verdict["reason"] for verdict in found.values() if verdict["checks"][0]["figures"].get("pool")} == {
        "backend_offline"
    }
    services.pool_maintenance_set(name="p", enable=True, actor=actor)
    summary = pool_waiting_summary(Pool.objects.get(name="p"))
    assert summary["workloads"] == 4 and summary["reasons"] == [("pool_maintenance", 4)]
    assert summary["text"] == "waiting: 4 workloads, 28 GPUs — 4 pool maintenance"


def test_metrics_count_the_pending_workloads_of_each_pool_by_reason(lab, client):
    client.force_login(person("prometheus", METRICS_ROLE, password=None))
    response = client.get("/metrics")
    assert response.status_code == 200
    samples = {
        sample.labels["reason"]: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        if family.name == "gpupool_pool_pending_workloads"
        for sample in family.samples
        if sample.labels["pool"] == "p"
    }
    assert samples == {
        "pool_maintenance": 0,
        "backend_offline": 0,
        "never_fits": 1,
        "project_limit": 1,
        "department_limit": 0,
        "reclaim": 1,
        "over_fair_share": 0,
        "no_capacity": 0,
        "scheduling": 1,
    }


def test_the_pool_page_says_how_many_wait_and_why(lab, admin_client):
    page = admin_client.get("/pools/p/").content.decode()
    assert "waiting: 4 workloads, 28 GPUs — 1 never fits, 1 project limit, 1 reclaim, 1 scheduling" in page


def test_the_what_if_gives_the_verdict_a_request_would_get(lab):
    pool = Pool.objects.get(name="p")
    assert request_verdict(pool=pool, project="vision", gpu=Decimal(2), pods=1)["reason"] == "scheduling"
    assert request_verdict(pool=pool, project="vision", gpu=Decimal(4), pods=2)["reason"] == "reclaim"
    assert request_verdict(pool=pool, project="nlp", gpu=Decimal(4), pods=1)["reason"] == "project_limit"
    refused = request_verdict(pool=pool, project=None, gpu=Decimal(1), pods=1, refused="GPU must be ≤ 0")
    assert refused["checks"][0] == {
        "reason": "never_fits",
        "message": "GPU must be ≤ 0",
        "figures": {"rule": "GPU must be ≤ 0"},
    }


def test_the_what_if_api_and_page_carry_the_verdict(lab, admin_client):
    body = {"variables": {"USER_GPU": 4}, "project": "vision", "pods": 2}
    answer = admin_client.post("/api/pools/p/check/", body, content_type="application/json")
    assert answer.status_code == 200, answer.content
    waits = answer.json()["pending_verdict"]
    assert waits["reason"] == "reclaim" and [v["name"] for v in waits["victims"]] == ["nlp-sweep"]
    page = admin_client.get("/what-if/", {"pool": "p", "gpu": 16}).content.decode()
    assert 'data-testid="pending-verdict"' in page and "never_fits" in page


def test_the_demo_shows_every_reason(demo, actor):
    found = pending_verdicts()
    reasons = {verdict["reason"] for verdict in found.values()}
    assert reasons >= {
        "never_fits",
        "project_limit",
        "department_limit",
        "reclaim",
        "over_fair_share",
        "no_capacity",
        "scheduling",
    }
    by_name = {name.rsplit("-", 1)[0] if kind == "Pod" else name: v for (_, _, kind, name), v in found.items()}
    assert "embed-backfill" in {victim["name"].rsplit("-", 1)[0] for victim in by_name["triton-canary"]["victims"]}
    assert by_name["sdg-render"]["reason"] == "department_limit"
    assert by_name["sdg-sweep"]["reason"] == "over_fair_share"
    assert by_name["llm-finetune-16x"]["reason"] == "never_fits"
    assert by_name["triton-b"]["reason"] == "no_capacity"
    assert by_name["tokenizer-warmup"]["reason"] == "scheduling"
    assert by_name["sdg-batch"]["reason"] == "project_limit"
    line = pool_waiting_summary(Pool.objects.get(name="robotics-inference"))["text"]
    assert line.startswith("waiting: ") and " reclaim" in line and " no capacity" in line, line

    services.pool_maintenance_set(name="l40s-nodes", enable=True, actor=actor)
    after = pending_verdicts(backend_ids=[Pool.objects.get(name="l40s-nodes").backend_id])
    waiting = [v for v in after.values() if v["checks"][0]["figures"].get("pool") == "l40s-nodes"]
    assert waiting and {v["reason"] for v in waiting} == {"pool_maintenance"}
