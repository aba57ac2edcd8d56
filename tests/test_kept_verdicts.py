"""The worker's kept verdicts (``WorkloadVerdict``): read instead of judging everything again, only while they are
what judging now would give for the workloads they name.

A round (``services.workload_verdicts_keep``) judges every pending workload of a backend; the doors read it while it
is recent and no config changed since, judge live the workloads it did not see, and drop those no longer waiting.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import test_workloads as workload_tests
from django.utils import timezone
from kube_objects import pod
from test_pending_verdicts import lab  # noqa: F401 (the fixture)
from test_workloads import estate  # noqa: F401 (the fixture)

from pools import services
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


@pytest.mark.django_db(transaction=True)
def test_a_watch_judges_again_after_its_batches(actor):
    """A simulated fleet's watch streams its events; within its run the backend gets a fresh round of verdicts."""
    services.config_apply(
        changes={ConfigType.BACKEND: {"sim": {"kind": "simulated", "seed": 3, "size": 30}}}, actor=actor
    )
    backend = Backend.objects.get(name="sim")
    services.backend_sync(backend=backend)
    assert not VerdictRound.objects.filter(backend=backend).exists()
    services.backend_watch_for(backend=backend, seconds=7)  # past a tick of the simulated fleet (5 s)
    kept = VerdictRound.objects.get(backend=backend)
    assert timezone.now() - kept.judged_at < timedelta(seconds=7)
    assert kept.workloads == WorkloadVerdict.objects.filter(backend=backend).exclude(reason="").count()


def test_a_round_that_cannot_be_judged_leaves_the_watch_going(lab, monkeypatch, caplog):  # noqa: F811
    def broken(backend_id):
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
