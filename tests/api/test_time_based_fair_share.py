"""SEMANTICS §9.3 on live data: a backend's ``fair_share`` settings are config (revisions, rollback, the gate), the
worker records each project's allocations minute by minute, and the fair share on every door divides the idle GPUs
by weight and past usage as the scheduler does; a planner's what-if shows the shares with another k, writing
nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from kube_objects import node, pod
from parallel_clients import at_once
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine import fairshare, pastusage
from pools.models import ConfigRevision, ProjectUsageMinute, ProjectUsageSums

# The recorded minutes are read as of now: they start three hours ago.
START = (datetime.now(tz=UTC) - timedelta(hours=3)).replace(second=0, microsecond=0)


def gpu(pool, deserved, weight=2):
    return {"nodePool": pool, "gpu": {"deserved": deserved, "overQuotaWeight": weight}}


@pytest.fixture
def lab(cluster, actor):
    """Pool a100 (8 GPUs), one department rnd (deserved 0) with two projects of equal weight and no deserved GPUs:
    vision holds 6 GPUs and asks 8 more, nlp asks 8. By weight alone each gets 4."""
    backend = cluster(
        [
            node("a-0", gpu=8, labels={"gpu-type": "A100"}),
            pod("train", node="a-0", gpu=6, namespace="runai-vision"),
            pod("more", gpu=8, namespace="runai-vision", phase="Pending", pool="a100"),
            pod("waiting", gpu=8, namespace="runai-nlp", phase="Pending", pool="a100"),
        ],
        name="lab",
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {"a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}}},
            ConfigType.DEPARTMENT: {"rnd": {"resources": [gpu("a100", 0)]}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": [gpu("a100", 0)]},
                "nlp": {"department": "rnd", "resources": [gpu("a100", 0)]},
            },
        },
        actor=actor,
    )
    return backend


def record(minutes: int, start: datetime = START) -> None:
    for index in range(minutes):
        services.project_usage_record(at=start + timedelta(minutes=index))


def shares(pool="a100", **kwargs) -> dict[str, dict]:
    return {row["unit"]: row for row in selectors.quota_figures(user=SYSTEM, pool=pool, **kwargs)}


def set_fair_share(admin_api, **settings):
    response = admin_api.patch("/api/backends/lab/", {"fair_share": settings}, format="json")
    assert response.status_code == 200, response.content
    return response


def test_usage_is_each_projects_gpu_seconds_over_the_backends(lab):
    record(10)
    assert ProjectUsageMinute.objects.filter(backend=lab).count() == 10
    figures = shares()
    # vision held 6 of 8 GPUs every minute; nlp nothing; the department is its projects' sum.
    assert (figures["vision"]["usage"], figures["nlp"]["usage"], figures["rnd"]["usage"]) == (0.75, 0, 0.75)


def test_with_k_zero_the_fair_share_is_by_weight_alone(lab):
    record(10)
    figures = shares()
    assert (figures["vision"]["fair_share"], figures["nlp"]["fair_share"]) == (4, 4)


def test_with_k_one_the_heavy_past_user_gets_less(lab, admin_api):
    record(10)
    set_fair_share(admin_api, k_value=1)
    figures = shares()
    # nW = 1/2 each; s(vision) = 1/2 + (1/2 − 3/4) = 1/4, s(nlp) = 1/2 + 1/2 = 1. Offers of 8: vision 1.6, nlp
    # 6.4; neither is satisfied, so each takes its floor (1 and 6) and the one GPU left goes to the largest
    # fraction lost (vision's 0.6).
    assert (figures["vision"]["fair_share"], figures["nlp"]["fair_share"]) == (2, 6)
    queues = [
        fairshare.Queue("rnd", None, 0, -1, 2, 100, 22, 0, 0.75),
        fairshare.Queue("vision", "rnd", 0, -1, 2, 100, 14, 1, 0.75),
        fairshare.Queue("nlp", "rnd", 0, -1, 2, 100, 8, 2, 0),
    ]
    assert fairshare.fair_shares(8, queues, k_value=1) == {"rnd": 8, "vision": 2, "nlp": 6}


def test_the_settings_are_config_with_revisions_and_rollback(lab, admin_api, poolctl):
    before = ConfigRevision.objects.filter(config_type=ConfigType.BACKEND).count()
    response = set_fair_share(admin_api, k_value=1, window="168h", half_life="PT12H")
    assert response.json()["fair_share"] == {"k_value": 1, "window": "7d", "half_life": "12h"}
    assert ConfigRevision.objects.filter(config_type=ConfigType.BACKEND).count() == before + 1
    latest = ConfigRevision.objects.filter(config_type=ConfigType.BACKEND).latest("revision")
    assert poolctl("config", "rollback", f"BACKEND:{latest.revision - 1}").code == 0
    assert admin_api.get("/api/backends/lab/").json()["fair_share"] == {"k_value": 0, "window": "7d", "half_life": None}


def test_bad_settings_are_refused_naming_the_field_and_change_nothing(lab, admin_api):
    response = admin_api.patch("/api/backends/lab/", {"fair_share": {"k_value": "lots", "window": "1m"}}, format="json")
    assert response.status_code == 400
    fields = {error["field"] for error in response.json()["errors"]}
    assert fields == {"fair_share.k_value", "fair_share.window"}, fields
    assert admin_api.get("/api/backends/lab/").json()["fair_share"]["k_value"] == 0


def test_a_user_who_may_not_change_the_backend_cannot_turn_it_on(lab, client_for):
    reader = person("reader", role("backend-reader", {"actions": ["backend:Read"], "resources": ["*"]}))
    response = client_for(reader).patch("/api/backends/lab/", {"fair_share": {"k_value": 1}}, format="json")
    assert response.status_code in (403, 404)
    assert shares()["vision"]["fair_share"] == 4


def test_the_kept_sums_equal_the_minutes_counted_again(lab):
    record(30)
    row = ProjectUsageSums.objects.get(backend=lab, window=7 * 86400)
    assert row.through == START + timedelta(minutes=29)
    samples = selectors.project_usage_minutes(lab.pk, since=START - timedelta(days=1), until=row.through)
    expected = pastusage.usage_over(samples, now=int(row.through.timestamp()), window=7 * 86400, half_life=None)
    assert selectors.project_usage({lab.pk: pastusage.Settings(0, 7 * 86400, None)}, now=row.through) == {
        lab.pk: expected
    }


def test_minutes_leave_the_window_and_new_settings_count_again(lab, admin_api, cluster):
    start = (datetime.now(tz=UTC) - timedelta(minutes=121)).replace(second=0, microsecond=0)
    record(90, start)  # vision 6 of 8 for an hour and a half
    lab_items = [
        node("a-0", gpu=8, labels={"gpu-type": "A100"}),
        pod("waiting", gpu=8, namespace="runai-nlp", node="a-0"),
    ]
    cluster(lab_items, name="lab")  # now nlp holds all 8, vision nothing
    set_fair_share(admin_api, k_value=1, window="1h")
    record(30, start + timedelta(minutes=90))
    # The last hour: 30 minutes of vision at 6/8, 30 of nlp at 8/8.
    figures = shares()
    assert (figures["vision"]["usage"], figures["nlp"]["usage"]) == (0.375, 0.5)
    # The backend's sums (an hour) and the planner's week.
    assert sorted(ProjectUsageSums.objects.filter(backend=lab).values_list("window", "half_life")) == [
        (3600, 0),
        (7 * 86400, 0),
    ]
    set_fair_share(admin_api, k_value=1, window="1h", half_life="30m")
    # Before the next minute, the sums are for other settings: the reader counts the minutes itself.
    weighted = shares()
    assert weighted["nlp"]["usage"] > 0.5 > weighted["vision"]["usage"]
    record(1, start + timedelta(minutes=120))
    assert sorted(ProjectUsageSums.objects.filter(backend=lab).values_list("window", "half_life")) == [
        (3600, 1800),
        (7 * 86400, 0),
    ]
    again = shares()
    assert again["nlp"]["usage"] > 0.5 > again["vision"]["usage"]


def test_a_minute_is_recorded_once(lab):
    record(1)
    record(1)
    assert ProjectUsageMinute.objects.filter(backend=lab).count() == 1
    assert shares()["vision"]["usage"] == 0.75


def test_sums_catch_up_with_a_minute_someone_else_recorded(lab):
    """A demo's backfill (or another worker) wrote this minute already: it is kept, and the sums count it."""
    ProjectUsageMinute.objects.create(backend=lab, at=START, seconds=60, capacity=8, allocated={"nlp": 2.0})
    record(1)
    assert ProjectUsageSums.objects.get(backend=lab, window=7 * 86400).through == START
    assert (shares()["nlp"]["usage"], shares()["vision"]["usage"]) == (0.25, 0)


def test_old_minutes_are_dropped_past_every_window(lab):
    record(2)
    services.project_usage_compact(now=START + timedelta(days=8, hours=2))
    assert not ProjectUsageMinute.objects.exists()


def test_the_what_if_shows_the_shares_with_another_k_writing_nothing(lab, admin_api, poolctl):
    record(10)
    revisions = ConfigRevision.objects.count()
    body = admin_api.get("/api/quotas/?pool=a100&k_value=1").json()
    planned = {row["unit"]: row for row in body["quotas"]}
    assert (planned["vision"]["fair_share"], planned["vision"]["what_if_fair_share"]) == (4, 2)
    assert (planned["nlp"]["what_if_usage"], planned["nlp"]["what_if_fair_share"]) == (0, 6)
    assert ConfigRevision.objects.count() == revisions
    assert poolctl("quota", "list", "--pool", "a100", "--k-value", "1", "--json").json() == body
    text = poolctl("quota", "list", "--pool", "a100", "--k-value", "1").out
    assert "WHAT-IF FAIR SHARE" in text.splitlines()[0]
    bad = admin_api.get("/api/quotas/?k_value=much&window=2m")
    assert bad.status_code == 400
    assert {error["field"] for error in bad.json()["errors"]} == {"k_value"}
    assert poolctl("quota", "list", "--half-life", "1s").code != 0


def test_the_dashboard_and_the_grid_show_usage_and_the_what_if(lab, admin_client):
    record(10)
    page = admin_client.get("/quotas/a100/?k_value=1").content.decode()
    assert "Fair share with k = 1" in page and "75.0 %" in page
    assert "data-what-if-fair-share>2<" in page.replace(" ", "")
    bad = admin_client.get("/quotas/a100/?k_value=much").content.decode()
    assert "k_value: must be a number" in bad and "Fair share with k" not in bad
    grid = admin_client.get("/quotas/").content.decode()
    assert "used 75.0 %" in grid


def test_metrics_give_each_units_usage(lab, admin_client):
    record(10)
    text = admin_client.get("/metrics").content.decode()
    assert 'gpupool_quota_usage{department="rnd",kind="project",pool="a100",unit="vision"} 0.75' in text


def test_a_limited_reader_sees_usage_only_of_the_units_they_may_see(lab, client_for):
    record(10)
    reader = person(
        "reader",
        role("nlp-only", {"actions": ["project:Read", "pool:Read"], "resources": ["project/nlp", "pool/a100"]}),
        password=None,
    )
    seen = client_for(reader).get("/api/quotas/?k_value=1").json()["quotas"]
    assert [(row["unit"], row["usage"], row["what_if_fair_share"]) for row in seen] == [("nlp", 0, 6)]
    assert client_for(reader).get("/api/backends/lab/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_workers_recording_the_same_minutes_fold_each_once(lab):
    """Real parallel clients: two workers' beats record the same minutes; each minute is kept and folded once."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    errors = at_once(lambda: record(20), lambda: record(20))
    assert not errors, errors
    assert ProjectUsageMinute.objects.filter(backend=lab).count() == 20
    row = ProjectUsageSums.objects.get(backend=lab, window=7 * 86400)
    assert row.through == START + timedelta(minutes=19)
    # 20 minutes of 8 GPUs, vision holding 6 of them: folded twice, the sums would say 40 minutes.
    assert (row.capacity, row.allocated) == (20 * 60 * 8, {"vision": 20 * 60 * 6})
