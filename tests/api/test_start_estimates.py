"""SEMANTICS §10.1 on live data: the worker notes each workload's runs every minute and learns runtimes from the
finished ones; each waiting workload's verdict carries when it is likely to start and its late bound, on the
workload page, the Workloads list, the API and ``poolctl``; each estimate is recorded when first made and compared
with the start that followed, per pool on the pool page and in ``/metrics``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from kube_objects import node, pod
from people import person, role, run_poolctl, signed_in

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Backend, Pool, StartEstimate, WorkloadRun

NOW = datetime.now(tz=UTC).replace(microsecond=0)
HOUR = timedelta(hours=1)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def job(name, *, node=None, gpu=8, started=None, phase="Running"):
    return pod(
        name,
        node=node,
        gpu=gpu,
        namespace="runai-vision",
        pool="a100",
        owner=("Job", name),
        phase=phase,
        started=iso(started) if started else None,
    )


@pytest.fixture
def lab(cluster, actor):
    """Pool a100: one 8-GPU node, held by vision's job ``train`` started an hour ago; vision's ``next`` (8 GPUs)
    waits. Project vision (department rnd) deserves the whole pool."""

    def make(items=None, **pool):
        backend = cluster(
            items
            or [
                node("a-0", gpu=8, labels={"gpu-type": "A100"}),
                job("train", node="a-0", started=NOW - HOUR),
                job("next", phase="Pending"),
            ],
            name="lab",
        )
        gpu = [{"nodePool": "a100", "gpu": {"deserved": 8}}]
        services.config_apply(
            changes={
                ConfigType.POOL: {"a100": {"backend": "lab", **pool}},
                ConfigType.DEPARTMENT: {"rnd": {"resources": gpu}},
                ConfigType.PROJECT: {"vision": {"department": "rnd", "resources": gpu}},
            },
            actor=actor,
        )
        return backend

    return make


def history(backend, *hours: float, project="vision", kind="Job"):
    """Finished runs of the project's kind, as the worker keeps them (``workload_runs_record``)."""
    for number, length in enumerate(hours):
        end = NOW - timedelta(days=1, minutes=number)
        WorkloadRun.objects.create(
            backend=backend,
            namespace="runai-vision",
            workload_kind=kind,
            workload_name=f"old-{number}",
            project=project,
            started=end - timedelta(hours=length),
            last_seen=end,
            finished=end,
        )


def verdict_of(name):
    found = selectors.pending_verdicts()
    return next(verdict for key, verdict in found.items() if key[3] == name)


def test_runs_are_learned_as_they_finish(lab, cluster):
    backend = lab()
    services.workload_runs_record(at=NOW)
    [run] = WorkloadRun.objects.all()
    assert (run.workload_name, run.project, run.started, run.finished) == ("train", "vision", NOW - HOUR, None)
    services.workload_runs_record(at=NOW + timedelta(minutes=1))
    cluster([node("a-0", gpu=8), job("train", node="a-0", started=NOW - HOUR, phase="Succeeded")], name="lab")
    services.workload_runs_record(at=NOW + timedelta(minutes=2))
    run.refresh_from_db()
    # It ends at the last minute it was seen running.
    assert run.finished == NOW + timedelta(minutes=1)
    assert selectors.estimates.LearnedRuntimes([backend.pk], NOW + HOUR).of(backend.pk, "vision", "Job", None)[
        0
    ].median == pytest.approx(3660)


def test_a_waiting_workload_starts_when_the_holder_is_expected_to_end(lab):
    backend = lab()
    history(backend, 2, 2, 3, 2, 4)  # median 2 h, 90th percentile 4 h
    start = verdict_of("next")["start"]
    # train started an hour ago: likely done in an hour, at the latest in three.
    assert datetime.fromisoformat(start["likely"]) == NOW + HOUR
    assert datetime.fromisoformat(start["late"]) == NOW + 3 * HOUR
    assert start["runtime"] == {"median": 7200, "p90": 14400, "finished": 5, "basis": "project"}


def two_projects(lab, actor):
    """Pool a100 of two nodes: nlp's ``serve`` on a-0 (started an hour ago), vision's ``train`` on a-1 (half an hour
    ago), vision's ``next`` waiting. vision deserves 4 GPUs and holds 8, nlp deserves 12 and holds 8: nlp is ahead of
    vision in the scheduler's order. Both kinds run 2 h."""
    backend = lab(
        [
            node("a-0", gpu=8, labels={"gpu-type": "A100"}),
            node("a-1", gpu=8, labels={"gpu-type": "A100"}),
            pod("serve", node="a-0", gpu=8, namespace="runai-nlp", pool="a100", owner=("Job", "serve"),
                phase="Running", started=iso(NOW - HOUR)),
            job("train", node="a-1", started=NOW - HOUR / 2),
            job("next", phase="Pending"),
        ]
    )  # fmt: skip
    deserved = {name: [{"nodePool": "a100", "gpu": {"deserved": gpus}}] for name, gpus in (("vision", 4), ("nlp", 12))}
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {"rnd": {"resources": [{"nodePool": "a100", "gpu": {"deserved": 16}}]}},
            ConfigType.PROJECT: {name: {"department": "rnd", "resources": found} for name, found in deserved.items()},
        },
        actor=actor,
    )
    history(backend, 2, 2, 2)
    history(backend, 2, 2, 2, project="nlp")
    return backend


def test_a_project_below_its_share_that_submits_often_goes_ahead_of_a_waiting_workload(lab, actor):
    backend = two_projects(lab, actor)
    # serve ends in an hour: next takes a-0.
    assert datetime.fromisoformat(verdict_of("next")["start"]["likely"]) == NOW + HOUR
    # nlp started a job about every half hour over the last day: the one it submits by then takes a-0 (nlp holds
    # nothing of its share then, vision twice its own); next starts when train ends and vision holds nothing.
    for number in range(48):
        WorkloadRun.objects.create(
            backend=backend,
            namespace="runai-nlp",
            workload_kind="Job",
            workload_name=f"lately-{number}",
            project="nlp",
            started=NOW - HOUR / 2 * number,
            last_seen=NOW,
        )
    assert datetime.fromisoformat(verdict_of("next")["start"]["likely"]) == NOW + 1.5 * HOUR


def test_nothing_learned_gives_no_time(lab):
    lab()
    assert verdict_of("next")["start"] == {"likely": None, "late": None, "runtime": None}


def test_runtimes_never_pass_the_pools_max_exec_timeout(lab):
    backend = lab(max_exec_timeout="90m")
    history(backend, 2, 2, 3)
    start = verdict_of("next")["start"]
    assert start["runtime"]["median"] == 5400
    assert datetime.fromisoformat(start["likely"]) == NOW + HOUR / 2


def test_every_door_shows_the_estimate(lab, admin_api, admin_client, poolctl):
    backend = lab()
    history(backend, 2, 2, 3, 2, 4)
    rows = admin_api.get("/api/workloads/?pool=a100").json()["results"]
    waiting = next(row for row in rows if row["name"] == "next")
    assert datetime.fromisoformat(waiting["likely_start"].replace("Z", "+00:00")) == NOW + HOUR
    assert datetime.fromisoformat(waiting["late_start"].replace("Z", "+00:00")) == NOW + 3 * HOUR
    detail = admin_api.get("/api/workloads/lab/runai-vision/next/").json()
    assert detail["verdict"]["start"]["runtime"]["basis"] == "project"
    text = poolctl("get", "workloads", "--pool", "a100").out
    assert "LIKELY START" in text.splitlines()[0]
    described = poolctl("describe", "workload", "runai-vision/next").out
    assert "Starts:          likely " in described and "its project's 5 finished runs" in described
    page = admin_client.get("/workloads/lab/runai-vision/next/").content.decode()
    assert 'data-testid="start-estimate"' in page and "at the latest" in page
    listing = admin_client.get("/workloads/?pool=a100").content.decode()
    assert "data-likely-start><time" in listing


def test_each_estimate_is_measured_against_the_start_that_followed(lab, cluster, admin_client):
    backend = lab()
    history(backend, 2, 2, 3, 2, 4)
    services.workload_verdicts_keep(backend=Backend.objects.get(name="lab"))
    [estimate] = StartEstimate.objects.all()
    assert estimate.likely == NOW + HOUR and estimate.started is None
    services.workload_verdicts_keep(backend=Backend.objects.get(name="lab"))
    assert StartEstimate.objects.count() == 1  # recorded as first made
    # next started 90 minutes after the estimate was made: it waited 1.5 h against 1 h estimated.
    began = estimate.made_at + 1.5 * HOUR
    cluster([node("a-0", gpu=8), job("next", node="a-0", started=began)], name="lab")
    services.workload_runs_record(at=began + timedelta(minutes=1))
    estimate.refresh_from_db()
    assert estimate.started == began
    rows = {row["period"]: row for row in selectors.estimate_accuracy(user=SYSTEM, now=began + timedelta(minutes=5))}
    estimated = (estimate.likely - estimate.made_at).total_seconds()  # an hour, less the moments since NOW
    assert rows["1d"] == {
        "pool": "a100",
        "period": "1d",
        "started": 1,
        "median_relative_error": round(abs(1.5 * 3600 - estimated) / (1.5 * 3600), 4),
        "before_late_bound": 1.0,
    }


def test_the_pool_page_and_metrics_give_the_accuracy(lab, admin_client):
    backend = lab()
    pool = Pool.objects.get(name="a100")
    made = NOW - 2 * HOUR
    for number, (waited, estimated, late) in enumerate([(60, 30, 90), (60, 60, 50), (120, 60, 180)]):
        StartEstimate.objects.create(
            backend=backend,
            namespace="runai-vision",
            workload_kind="Job",
            workload_name=f"done-{number}",
            pool=pool,
            made_at=made,
            likely=made + timedelta(minutes=estimated),
            late=made + timedelta(minutes=late),
            started=made + timedelta(minutes=waited),
        )
    # Errors 0.5, 0 and 0.5: median 0.5; two of three started by the late bound.
    page = admin_client.get("/pools/a100/").content.decode()
    assert "median error 50.0 %, 66.7 % by the late bound" in page
    metrics = admin_client.get("/metrics").content.decode()
    assert 'gpupool_start_estimate_median_relative_error{period="1d",pool="a100"} 0.5' in metrics
    assert 'gpupool_start_estimate_before_late_bound{period="7d",pool="a100"} 0.6667' in metrics
    assert 'gpupool_start_estimates_measured{period="1d",pool="a100"} 3.0' in metrics


def test_a_reader_of_another_pool_sees_neither_estimates_nor_accuracy(lab, client_for):
    backend = lab()
    history(backend, 2, 2)
    outsider = person(
        "outsider",
        role("other-pool", {"actions": ["pool:Read", "workload:Read"], "resources": ["pool/elsewhere"]}),
        password=None,
    )
    api = client_for(outsider)
    assert api.get("/api/workloads/lab/runai-vision/next/").status_code == 404
    assert all(row["name"] != "next" for row in api.get("/api/workloads/").json()["results"])
    assert selectors.estimate_accuracy(user=outsider) == []
    # Through every other door, as if it did not exist: the pages, the export, poolctl.
    browser = signed_in(outsider)
    assert browser.get("/workloads/lab/runai-vision/next/").status_code == 404
    assert browser.get("/workloads/lab/runai-vision/no-such-workload/").status_code == 404
    assert browser.get("/pools/a100/").status_code == browser.get("/pools/no-such-pool/").status_code == 404
    exported = browser.get("/workloads/", {"format": "json"}).json()
    assert all(row["name"] != "next" for row in exported)
    listed = run_poolctl("--as", "outsider", "get", "workloads")
    assert "next" not in listed.out
    hidden = run_poolctl("--as", "outsider", "describe", "workload", "runai-vision/next")
    missing = run_poolctl("--as", "outsider", "describe", "workload", "runai-vision/no-such-workload")
    assert hidden.code == missing.code != 0
    assert hidden.err.replace("next", "X") == missing.err.replace("no-such-workload", "X")
