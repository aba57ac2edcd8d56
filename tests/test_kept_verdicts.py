"""The worker's kept verdicts (``WorkloadVerdict``): read instead of judging everything again, only while they are
what judging now would give for the workloads they name.

A round (``services.workload_verdicts_keep``) judges every pending workload of a backend; the doors read it while it
is recent and no config changed since, judge live the workloads it did not see, and drop those no longer waiting.
"""

from __future__ import annotations

from datetime import timedelta

import test_workloads as workload_tests
from django.utils import timezone
from kube_objects import pod
from test_pending_verdicts import lab  # noqa: F401 (the fixture)
from test_workloads import estate  # noqa: F401 (the fixture)

from pools import selectors, services
from pools.choices import ConfigType
from pools.inventory.sources import WatchEvent
from pools.models import Backend, Pool, VerdictRound, WorkloadVerdict
from pools.selectors import verdicts as verdicts_selectors
from pools.selectors.verdicts import pending_verdicts, pending_workload_counts, pool_waiting_summary

VERSION = iter(range(500, 10**6))
STALE = {"reason": "stale", "checks": [], "victims": []}


def event(kind: str, obj: dict, type_: str = "ADDED") -> WatchEvent:
    obj["metadata"]["resourceVersion"] = str(next(VERSION))
    return WatchEvent(type_, kind, obj)


def by_name(found: dict) -> dict:
    return {name: verdict for (_, _, _, name), verdict in found.items()}


def test_a_round_keeps_every_verdict_and_the_doors_read_it(lab, monkeypatch):  # noqa: F811
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # a start estimate of "now" is the same second each time
    live = pending_verdicts()
    summary, counts = pool_waiting_summary(Pool.objects.get(name="p")), pending_workload_counts()
    outcome = services.workload_verdicts_keep(backend=lab)
    assert outcome["workloads"] == len(live) == 5
    assert VerdictRound.objects.get(backend=lab).workloads == 5
    assert pending_verdicts() == live
    assert pending_verdicts(backend_ids=[lab.pk]) == live
    some = sorted(live, key=str)[:2]
    assert pending_verdicts(keys=some) == {key: live[key] for key in some}
    assert pool_waiting_summary(Pool.objects.get(name="p")) == summary
    assert pending_workload_counts() == counts
    # What is read is the kept row: changed by hand, it shows (the test would pass on live judging otherwise).
    kept = WorkloadVerdict.objects.get(workload_name="vision-huge")
    kept.verdict = {**kept.verdict, "checks": [{"reason": "never_fits", "message": "kept", "figures": {}}]}
    kept.save()
    assert by_name(pending_verdicts())["vision-huge"]["checks"][0]["message"] == "kept"
    # The counts read the kept row's reason column: changed by hand, it shows there too.
    WorkloadVerdict.objects.filter(workload_name="vision-huge").update(reason="project_limit")
    assert pending_workload_counts()["p", "project_limit"] == counts.get(("p", "project_limit"), 0) + 1
    assert dict(pool_waiting_summary(Pool.objects.get(name="p"))["reasons"]).get("never_fits", 0) == (
        dict(summary["reasons"]).get("never_fits", 0) - 1
    )


def test_a_kept_verdict_waits_on_as_the_clock_goes(lab):  # noqa: F811
    """A workload that fits now has waited longer when read than when judged: past a minute, its verdict says the
    scheduler may not be running, quoting its pods' PodScheduled message, as judging it now would."""
    services.workload_verdicts_keep(backend=lab)
    judged = by_name(pending_verdicts())["vision-small"]["checks"][0]
    assert judged["message"] == "it fits now: the scheduler has not placed it yet"
    VerdictRound.objects.update(judged_at=timezone.now() - timedelta(seconds=10))
    WorkloadVerdict.objects.filter(workload_name="vision-small").update(scheduled_message="0/2 nodes are available")
    WorkloadVerdict.objects.filter(workload_name="vision-small").update(
        verdict={
            "reason": "scheduling",
            "checks": [{"reason": "scheduling", "message": "", "figures": {"waiting_seconds": 55}}],
            "victims": [],
        }
    )
    aged = by_name(pending_verdicts())["vision-small"]["checks"][0]
    assert aged["figures"]["waiting_seconds"] >= 65
    assert "scheduler may not be running (PodScheduled: 0/2 nodes are available)" in aged["message"]


def test_a_config_change_or_an_old_round_is_judged_live_again(lab, actor):  # noqa: F811
    services.workload_verdicts_keep(backend=lab)
    WorkloadVerdict.objects.filter(workload_name="nlp-more").update(verdict=STALE)
    assert by_name(pending_verdicts())["nlp-more"] == STALE
    # nlp's limit raised: its verdict changes at once, not when the worker next judges
    services.config_apply(
        changes={
            ConfigType.PROJECT: {
                "nlp": {
                    "department": "rnd",
                    "namespaces": ["nlp"],
                    "resources": [{"nodePool": "p", "gpu": {"deserved": 2, "limit": 20}}],
                }
            }
        },
        actor=actor,
    )
    assert by_name(pending_verdicts())["nlp-more"]["reason"] != "project_limit"
    services.workload_verdicts_keep(backend=lab)
    WorkloadVerdict.objects.filter(workload_name="nlp-more").update(verdict=STALE)
    VerdictRound.objects.update(judged_at=timezone.now() - timedelta(seconds=verdicts_selectors.KEPT_SECONDS + 1))
    assert by_name(pending_verdicts())["nlp-more"]["reason"] != "stale"


def test_workloads_new_since_the_round_are_judged_and_those_started_are_dropped(lab):  # noqa: F811
    services.workload_verdicts_keep(backend=lab)
    services.watch_events_apply(
        backend=lab,
        events=[
            event("pods", pod("vision-late", gpu=16, namespace="vision", pool="p", phase="Pending")),
            event("pods", pod("vision-small", node="n2", gpu=2, namespace="vision", pool="p"), "MODIFIED"),
        ],
    )
    found = by_name(pending_verdicts())
    assert found["vision-late"]["reason"] == "never_fits"  # not in the round: judged by its key
    assert "vision-small" not in found  # bound to n2 since: no longer waiting
    summary = pool_waiting_summary(Pool.objects.get(name="p"))
    assert summary["workloads"] == 4 and summary["gpus"] == 8 + 2 + 16 + 16  # "stray" is of no pool


def test_a_freed_node_has_its_pools_judged_again_without_the_rest_of_the_round(lab):  # noqa: F811
    """nlp's job ends on n1: the verdicts of pool p's workloads, judged again alone, are what judging the whole
    backend now gives; the round keeps its stamp (its other rows are as old as it is)."""
    services.workload_verdicts_keep(backend=lab)
    stamp = VerdictRound.objects.get(backend=lab).judged_at
    before = by_name(pending_verdicts())
    assert before["vision-train"]["reason"] == "reclaim" and before["nlp-more"]["reason"] == "project_limit"
    counts = services.watch_events_apply(
        backend=lab, events=[event("pods", pod("nlp-sweep", node="n1", gpu=8, namespace="nlp", pool="p"), "DELETED")]
    )
    assert counts["gpu_nodes"] == {"n1"}
    pools = selectors.pools_of_nodes(lab.pk, counts["gpu_nodes"])
    assert pools == {Pool.objects.get(name="p").pk}
    assert selectors.verdict_round_fresh(lab.pk)
    services.workload_verdicts_keep(backend=lab, pool_ids=pools)
    assert VerdictRound.objects.get(backend=lab).judged_at == stamp
    kept = by_name(pending_verdicts())
    live = by_name(verdicts_selectors._judged_live(verdicts_selectors._Live([lab.pk]))[0])
    assert kept == live
    assert kept["vision-train"]["reason"] != "reclaim" and kept["nlp-more"]["reason"] != "project_limit"
    # Read from the rows just kept, each stamped with its own time: changed by hand, they show.
    assert WorkloadVerdict.objects.filter(pool__name="p", judged_at__gt=stamp).count() == 4
    WorkloadVerdict.objects.filter(workload_name="nlp-more").update(verdict=STALE)
    assert by_name(pending_verdicts())["nlp-more"] == STALE


def test_a_judgement_older_than_the_round_kept_meanwhile_is_dropped(lab):  # noqa: F811
    services.workload_verdicts_keep(backend=lab)
    WorkloadVerdict.objects.filter(workload_name="nlp-more").update(verdict=STALE)
    VerdictRound.objects.update(judged_at=timezone.now() + timedelta(seconds=5))  # a round that began after this one
    pools = {Pool.objects.get(name="p").pk}
    assert services.workload_verdicts_keep(backend=lab, pool_ids=pools)["kept"] is False
    assert services.workload_verdicts_keep(backend=lab)["kept"] is False
    assert WorkloadVerdict.objects.get(workload_name="nlp-more").verdict == STALE


def test_a_round_that_cannot_be_judged_leaves_the_watch_going(lab, monkeypatch, caplog):  # noqa: F811
    def broken(backend_id, pool_ids=None):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(verdicts_selectors, "judged_verdicts", broken)
    monkeypatch.setattr("pools.selectors.judged_verdicts", broken)
    assert services.workload_verdicts_keep_quietly(backend=lab) is None
    assert "judging the pending workloads of backend lab failed" in caplog.text
    assert not VerdictRound.objects.exists()
    assert len(pending_verdicts()) == 5  # judged live meanwhile


def test_with_a_round_kept_the_doors_still_show_each_user_only_what_they_may_see(db, estate):  # noqa: F811
    """The kept verdicts are read for the rows a reader may see, never instead of that check: with a fresh round,
    a user manager, someone of no role and a member of another team still find nothing, as for a workload that does
    not exist (the same assertions as without a round, in ``test_workloads``)."""
    services.workload_verdicts_keep(backend=Backend.objects.get(name="test-cluster"))
    assert VerdictRound.objects.filter(backend__name="test-cluster", workloads__gt=0).exists()
    workload_tests.test_a_user_manager_sees_no_workload_through_any_door(db, estate)
    workload_tests.test_a_workload_of_a_pool_one_may_not_see_does_not_exist_for_them(db, estate)


def test_a_workload_waiting_on_two_pools_waits_on_the_first_by_name_whichever_pools_are_judged(lab, actor):  # noqa: F811
    """A gang whose pods name two pools is one workload of one pool, the first by name: judged with every pool, with
    one pool (the pool page's line) or with the pools a watch batch touched."""
    services.config_apply(changes={ConfigType.POOL: {"a-pool": {"backend": "lab"}}}, actor=actor)
    gang = {"pod-group-name": "split"}
    services.watch_events_apply(
        backend=lab,
        events=[
            event("pods", pod("split-1", gpu=1, namespace="vision", pool="p", phase="Pending", annotations=gang)),
            event("pods", pod("split-2", gpu=1, namespace="vision", pool="a-pool", phase="Pending", annotations=gang)),
        ],
    )
    first, other = Pool.objects.get(name="a-pool"), Pool.objects.get(name="p")
    found, where = selectors.judged_verdicts(lab.pk)
    split = next(key for key in found if key[3] == "split")
    assert where[split][0] == first.pk and where[split][1] == 2
    assert split in selectors.judged_verdicts(lab.pk, {first.pk})[0]
    assert split not in selectors.judged_verdicts(lab.pk, {other.pk})[0]
    assert pool_waiting_summary(first)["workloads"] == 1 and pool_waiting_summary(first)["gpus"] == 2
    assert pool_waiting_summary(other)["workloads"] == 4  # the lab's own, as before the gang came
