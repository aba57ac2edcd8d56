"""``poolctl get idle`` and ``poolctl get consumption``: gpuctl-style tables of the idle workloads and
the GPU-hours, or their JSON, as the operator or ``--as`` someone who may read one pool."""

from __future__ import annotations

import collections
import json

import pytest
from django.utils import timezone
from people import person, role
from utilization_rows import two_pools_with_idle_gpus

from accounts.access import SYSTEM
from pools import selectors, services
from pools.tables.formats import kubectl_duration


@pytest.fixture
def now(cluster, actor):
    moment = timezone.now()
    two_pools_with_idle_gpus(cluster, actor, moment)
    return moment


@pytest.fixture
def team_a(db):
    """Someone who may read pool team-a only."""
    return person("team-a-reader", role("team-a", {"actions": ["pool:Read"], "resources": ["pool/team-a"]})).username


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (60, "1m"), (12 * 60 + 59, "12m"), (3 * 3600, "3h"), (3 * 3600 + 5 * 60 + 7, "3h5m")]
    + [(86399, "23h59m"), (86400, "1d"), (2 * 86400 + 4 * 3600 + 59 * 60, "2d4h"), (None, "-")],
)
def test_idle_for_reads_like_kubectl(seconds, text):
    assert kubectl_duration(seconds) == text


def test_get_idle_lists_each_workload_with_its_idle_gpus(now, poolctl):
    result = poolctl("get", "idle")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "NAMESPACE  POD      USER   PROJECT  POOL    GPUS  IDLE GPUS  IDLE FOR",
        "default    train-2  bob    -        team-b  2     1          2d4h",
        "default    train-1  alice  vision   team-a  4     2          2h",
    ]
    assert poolctl("get", "idle", "--pool", "team-b").out.splitlines()[1:] == [
        "default    train-2  bob   -        team-b  2     1          2d4h"
    ]
    assert poolctl("get", "idle", "--pool", "none").out.strip() == "No idle GPUs."
    # The idle list's filters, as on the page and in the API (``--search`` is ``q``).
    for args, pods in (
        (("--user", "alice"), ["train-1"]),
        (("--project", "vision"), ["train-1"]),
        (("--search", "TRAIN-2"), ["train-2"]),
        (("--backend", "test-cluster", "--namespace", "default"), ["train-2", "train-1"]),
    ):
        result = poolctl("get", "idle", *args)
        assert [line.split()[1] for line in result.out.splitlines()[1:]] == pods, args


def test_get_idle_json_is_the_list_of_rows_of_the_api(now, poolctl):
    rows = json.loads(poolctl("get", "idle", "--json").out)
    expected = selectors.idle_workloads(user=SYSTEM)
    assert [row | {"idle_for_seconds": 0} for row in rows] == [row | {"idle_for_seconds": 0} for row in expected]
    assert [row["pod"] for row in rows] == ["train-2", "train-1"]


def test_get_consumption_is_a_table_with_a_total(now, poolctl):
    result = poolctl("get", "consumption", "--by", "user", "--period", "24h")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[:4] == [
        "USER   GPU-HOURS  IDLE GPU-HOURS  IDLE %",
        "alice  14.00      3.50            25.0%",
        "bob    3.00       3.00            100.0%",
        "TOTAL  17.00      6.50            38.2%",
    ]
    assert lines[5].endswith(", counted in whole hours")
    report = json.loads(poolctl("get", "consumption", "--period", "24h", "--json").out)
    assert [(row["pool"], row["allocated_gpu_hours"]) for row in report["rows"]] == [("team-a", 10), ("team-b", 7)]


def test_as_a_reader_of_one_pool_nothing_of_the_other_shows(now, poolctl, team_a):
    idle = poolctl("--as", team_a, "get", "idle")
    assert idle.code == 0, idle.err
    assert [line.split()[1] for line in idle.out.splitlines()[1:]] == ["train-1"]
    assert "team-b" not in poolctl("--as", team_a, "get", "idle", "--json").out
    assert poolctl("--as", team_a, "get", "idle", "--pool", "team-b").out.strip() == "No idle GPUs."
    for by in ("pool", "user", "namespace"):  # the rows have no project
        shown = poolctl("--as", team_a, "get", "consumption", "--by", by, "--period", "24h")
        assert shown.code == 0, shown.err
        assert "team-b" not in shown.out and "bob" not in shown.out
        assert ["TOTAL", "10.00", "2.50", "25.0%"] in [line.split() for line in shown.out.splitlines()]
    report = json.loads(poolctl("--as", team_a, "get", "consumption", "--by", "user", "--period", "24h", "--json").out)
    assert report["rows"] == [{"user": "alice", "allocated_gpu_hours": 10.0, "idle_gpu_hours": 2.5, "idle_share": 0.25}]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--since", "yesterday"), 1, "Error: since: Enter a valid date/time."),
        (("--since", "2030-01-01T00:00:00Z", "--until", "2029-01-01T00:00:00Z"), 1, "the period's start must be"),
        (("--until", "0001-01-02T00:00:00Z"), 1, "Error: until: the period would start before year 1."),
        (("--by", "team"), 1, "argument --by: invalid choice: 'team'"),  # exit 2 from a shell (argparse)
        (("--period", "2d"), 1, "argument --period: invalid choice: '2d'"),
    ],
)
def test_a_bad_option_is_one_line_on_stderr(now, poolctl, args, code, message):
    result = poolctl("get", "consumption", *args)
    assert result.code == code
    assert result.out == ""
    assert message in result.err and len(result.err.strip().splitlines()) == 1


def test_an_unknown_user_for_as_is_refused(now, poolctl):
    result = poolctl("--as", "nobody", "get", "idle")
    assert result.code == 1
    assert result.err.strip() == "Error: user 'nobody' does not exist"


def test_after_a_real_round_the_demo_shows_idle_workloads(demo, poolctl):
    services.utilization_record_all()
    rows = selectors.idle_workloads(user=SYSTEM)
    assert rows
    result = poolctl("get", "idle")
    assert result.code == 0, result.err
    assert [line.split()[1] for line in result.out.splitlines()[1:]] == [row["pod"] for row in rows]
    # Which pools hold idle workloads depends on the moment the fleet is read: the reader is given one of them.
    pool = collections.Counter(row["pool"] for row in rows).most_common(1)[0][0]
    granted = role("one-pool", {"actions": ["pool:Read"], "resources": [f"pool/{pool}"]})
    person("reader", granted, password=None)
    mine = [row["pod"] for row in rows if row["pool"] == pool]
    shown = poolctl("--as", "reader", "get", "idle")
    assert [line.split()[1] for line in shown.out.splitlines()[1:]] == mine
    assert {line.split()[4] for line in shown.out.splitlines()[1:]} == {pool}
