"""The watch's judging thread (``services.watching.VerdictJudging``): the verdicts follow the watch's batches on a
thread of their own, a freed node's pool at once, the whole backend at most every ``JUDGE_SECONDS``.

Transactional tests, in a module of their own: the thread's connection must see what the test's has committed (a
module-scoped fixture's open transaction, as ``test_workloads``' estate holds, would hide it).
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone
from kube_objects import pod
from test_kept_verdicts import by_name, event
from test_pending_verdicts import lab  # noqa: F401 (the fixture)

from pools import services
from pools.choices import ConfigType
from pools.models import Backend, VerdictRound, WorkloadVerdict
from pools.selectors.verdicts import pending_verdicts
from pools.services import watching


def test_a_watch_batch_that_frees_a_node_moves_its_verdicts_before_the_next_round(
    transactional_db,
    lab,  # noqa: F811
    monkeypatch,
):
    """The watch's judging thread: a whole round first, then (the next whole round an hour away) the batch that ends
    nlp's job on n1 has pool p judged again at once, while the watch goes on."""
    monkeypatch.setattr(watching, "JUDGE_SECONDS", 3600.0)
    with watching.VerdictJudging(lab) as judging:
        judging.note({"pods": 1, "gpu_nodes": set()})
        assert _within(10, lambda: VerdictRound.objects.filter(backend=lab).exists())
        assert by_name(pending_verdicts())["vision-train"]["reason"] == "reclaim"
        counts = services.watch_events_apply(
            backend=lab,
            events=[event("pods", pod("nlp-sweep", node="n1", gpu=8, namespace="nlp", pool="p"), "DELETED")],
        )
        judging.note(counts)
        assert _within(10, lambda: WorkloadVerdict.objects.filter(judged_at__isnull=False).exists())
        assert by_name(pending_verdicts())["vision-train"]["reason"] != "reclaim"
    assert not judging.thread.is_alive()


def _within(seconds: float, condition) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


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
