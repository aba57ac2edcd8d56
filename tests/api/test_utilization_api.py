"""``GET /api/idle_gpus/`` and ``GET /api/consumption/``: the rows of ``selectors.idle_workloads`` and
the report of ``selectors.consumption_report``, JSON or CSV, counted only in the pools the caller may read."""

from __future__ import annotations

import collections
import csv
import io

import pytest
from django.utils import timezone
from people import person, role
from utilization_rows import idle_and_hours

from accounts.access import SYSTEM
from pools import selectors, services

IDLE_COLUMNS = "backend,namespace,pod,user,project,pool,node,gpus,idle_gpus,idle_since,idle_for_seconds"


@pytest.fixture
def now(two_pools):
    moment = timezone.now()
    idle_and_hours(two_pools, moment)
    return moment


@pytest.fixture
def team_a(db, client_for):
    """An API client of someone who may read pool team-a only."""
    return client_for(person("team-a-reader", role("team-a", {"actions": ["pool:Read"], "resources": ["pool/team-a"]})))


def rows_of(response) -> list[list[str]]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def about(seconds: int, expected: int) -> bool:
    return expected <= seconds <= expected + 30


def test_idle_gpus_answers_a_row_per_workload_longest_idle_first(now, admin_api):
    response = admin_api.get("/api/idle_gpus/")
    assert response.status_code == 200
    rows = response.json()
    assert [row["pod"] for row in rows] == ["train-2", "train-1"]
    train_2, train_1 = rows
    assert about(train_2.pop("idle_for_seconds"), 2 * 86400 + 4 * 3600)
    assert about(train_1.pop("idle_for_seconds"), 2 * 3600)
    assert train_1 == {
        "backend": "test-cluster",
        "namespace": "default",
        "pod": "train-1",
        "user": "alice",
        "project": "vision",
        "pool": "team-a",
        "node": "n1",
        "gpus": 4,  # the pod holds four; two of them are idle, both for two hours at least
        "idle_gpus": 2,
        "mig": {},
        "idle_mig": {},
        "idle_since": (now - timezone.timedelta(hours=2)).isoformat(),
    }
    assert train_2 | {"idle_since": ""} == {
        "backend": "test-cluster",
        "namespace": "default",
        "pod": "train-2",
        "user": "bob",
        "project": "",
        "pool": "team-b",
        "node": "n3",
        "gpus": 2,
        "idle_gpus": 1,
        "mig": {},
        "idle_mig": {},
        "idle_since": "",
    }


@pytest.mark.parametrize(
    ("query", "pods"),
    [
        ("pool=team-a", ["train-1"]),
        ("user=bob", ["train-2"]),
        ("project=vision", ["train-1"]),
        ("backend=test-cluster", ["train-2", "train-1"]),
        ("q=TRAIN-2", ["train-2"]),
        ("namespace=elsewhere", []),
    ],
)
def test_idle_gpus_takes_the_filters_of_the_idle_list(now, admin_api, query, pods):
    response = admin_api.get(f"/api/idle_gpus/?{query}")
    assert [row["pod"] for row in response.json()] == pods


def test_idle_gpus_as_csv_has_the_documented_columns(now, admin_api):
    rows = rows_of(admin_api.get("/api/idle_gpus/?format=csv"))
    assert rows[0] == IDLE_COLUMNS.split(",")
    assert [row[:9] for row in rows[1:]] == [
        ["test-cluster", "default", "train-2", "bob", "", "team-b", "n3", "2", "1"],
        ["test-cluster", "default", "train-1", "alice", "vision", "team-a", "n1", "4", "2"],
    ]
    # No rows: still the header, so a spreadsheet knows the columns.
    assert admin_api.get("/api/idle_gpus/?format=csv&pool=none").content.decode() == IDLE_COLUMNS + "\n"


def test_consumption_counts_gpu_hours_per_pool_largest_first(now, admin_api):
    report = admin_api.get("/api/consumption/?period=24h").json()
    assert report["by"] == "pool"
    assert report["resolution"] == "hour"
    assert report["rows"] == [
        {"pool": "team-a", "allocated_gpu_hours": 10.0, "idle_gpu_hours": 2.5, "idle_share": 0.25},
        {"pool": "team-b", "allocated_gpu_hours": 7.0, "idle_gpu_hours": 4.0, "idle_share": 0.5714},
    ]
    assert report["total"] == {"allocated_gpu_hours": 17.0, "idle_gpu_hours": 6.5, "idle_share": 0.3824}
    assert report == selectors.consumption_report(user=SYSTEM, filters={"period": "24h"}) | {"until": report["until"]}


def test_consumption_by_user_as_csv_is_a_row_per_user(now, admin_api):
    rows = rows_of(admin_api.get("/api/consumption/?by=user&period=24h&format=csv"))
    assert rows == [
        ["user", "allocated_gpu_hours", "idle_gpu_hours", "idle_share"],
        ["alice", "14.0", "3.5", "0.25"],
        ["bob", "3.0", "3.0", "1.0"],
    ]
    assert rows_of(admin_api.get("/api/consumption/?by=namespace&pool=none&format=csv")) == [
        ["namespace", "allocated_gpu_hours", "idle_gpu_hours", "idle_share"]
    ]


def test_consumption_counts_the_period_asked_for(now, admin_api):
    start = (now - timezone.timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)
    since, until = start + timezone.timedelta(hours=1), start + timezone.timedelta(hours=3)
    query = f"since={since.isoformat()}&until={until.isoformat()}".replace("+", "%2B")
    assert admin_api.get(f"/api/consumption/?{query}").json()["rows"] == []  # the hour began before
    query = f"since={start.isoformat()}&until={until.isoformat()}&by=namespace".replace("+", "%2B")
    assert admin_api.get(f"/api/consumption/?{query}").json()["rows"] == [
        {"namespace": "default", "allocated_gpu_hours": 17.0, "idle_gpu_hours": 6.5, "idle_share": 0.3824}
    ]


def test_a_reader_of_one_pool_sees_only_its_idle_gpus_and_gpu_hours(now, team_a):
    assert [row["pod"] for row in team_a.get("/api/idle_gpus/").json()] == ["train-1"]
    assert team_a.get("/api/idle_gpus/?pool=team-b").json() == []
    assert "team-b" not in team_a.get("/api/idle_gpus/?format=csv").content.decode()
    assert "train-2" not in team_a.get("/api/idle_gpus/?format=csv").content.decode()
    report = team_a.get("/api/consumption/?by=user&period=24h").json()
    # alice's four hours on team-b are not counted, nor bob, who worked on team-b only.
    assert report["rows"] == [{"user": "alice", "allocated_gpu_hours": 10.0, "idle_gpu_hours": 2.5, "idle_share": 0.25}]
    assert report["total"] == {"allocated_gpu_hours": 10.0, "idle_gpu_hours": 2.5, "idle_share": 0.25}
    assert rows_of(team_a.get("/api/consumption/?period=24h&format=csv")) == [
        ["pool", "allocated_gpu_hours", "idle_gpu_hours", "idle_share"],
        ["team-a", "10.0", "2.5", "0.25"],
    ]
    assert team_a.get("/api/consumption/?period=24h&pool=team-b").json()["rows"] == []


def test_signing_in_is_required(client_for, db):
    for url in ("/api/idle_gpus/", "/api/consumption/", "/api/consumption/?format=csv"):
        response = client_for(None).get(url)
        assert response.status_code == 401
        assert response.json()["errors"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("by=team", "by: Select a valid choice. team is not one of the available choices."),
        ("period=2d", "period: Select a valid choice. 2d is not one of the available choices."),
        ("since=yesterday", "since: Enter a valid date/time."),
        ("until=2026-13-01T00:00:00Z", "until: Enter a valid date/time."),
        ("since=2030-01-01T00:00:00Z&until=2029-01-01T00:00:00Z", "since: the period's start must be before its end."),
        ("until=0001-01-02T00:00:00Z", "until: the period would start before year 1."),
        ("since=0001-01-01T00:00:00%2B05:00", "since: the moment is out of range."),
        ("since=2030-01-01T00:00:00Z&format=csv", "since: the period's start must be before its end."),
    ],
)
def test_a_bad_parameter_is_a_400_that_names_it(now, admin_api, query, message):
    response = admin_api.get(f"/api/consumption/?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": [{"field": "", "message": message}]}


def test_after_real_rounds_a_reader_of_one_pool_sees_nothing_of_the_others(demo, client_for):
    """The demo's simulated fleets read by a round: some of their GPUs are idle, GPU-hours counted in every pool.
    Which pools have idle workloads depends on the moment the fleet is read: the reader is given one of them."""
    services.utilization_record_all()
    everything = selectors.idle_workloads(user=SYSTEM)
    assert everything, "the demo's fleets hold idle GPUs"
    pool = collections.Counter(row["pool"] for row in everything).most_common(1)[0][0]
    granted = role("one-pool", {"actions": ["pool:Read"], "resources": [f"pool/{pool}"]})
    api = client_for(person("reader", granted))
    mine = [(row["backend"], row["namespace"], row["pod"]) for row in everything if row["pool"] == pool]
    shown = api.get("/api/idle_gpus/").json()
    assert [(row["backend"], row["namespace"], row["pod"]) for row in shown] == mine
    text = api.get("/api/idle_gpus/?format=csv").content.decode()
    assert {line.split(",")[5] for line in text.splitlines()[1:]} == {pool}
    by_pool = selectors.consumption_report(user=SYSTEM, filters={"period": "24h"})
    assert len(by_pool["rows"]) > 1
    (counted,) = [row for row in by_pool["rows"] if row["pool"] == pool]
    for by in ("pool", "user", "namespace"):
        report = api.get(f"/api/consumption/?by={by}&period=24h").json()
        assert report["total"]["allocated_gpu_hours"] == pytest.approx(counted["allocated_gpu_hours"], abs=0.05)
    # By project, only the projects the reader may read (none here): the hours of workloads in no project.
    report = api.get("/api/consumption/?by=project&period=24h").json()
    assert {row["project"] for row in report["rows"]} <= {""}
    assert report["total"]["allocated_gpu_hours"] == pytest.approx(
        sum(row["allocated_gpu_hours"] for row in report["rows"]), abs=0.05
    )
    assert api.get("/api/consumption/?period=24h").json()["rows"] == [counted]
