"""The GPU utilization pages: idle GPUs, GPU consumption, a pool's utilization chart, a node's GPUs and
the backends' utilization status. Each answers what its reader may see, says why it is empty, and never fails on
bad parameters or a Prometheus that does not answer."""

from __future__ import annotations

import csv
import io
import json

import pytest
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.models import Backend
from pools.tables.formats import human_duration as duration

READ_TEAM_A = {"actions": ["pool:Read"], "resources": ["pool/team-a"]}


def node_of(pool: str) -> str:
    return next(row.node for row in selectors.resource_index(user=SYSTEM, filters={"pool": pool}))


@pytest.fixture
def rounds(console):
    """Two utilization rounds over the demo: idle GPUs, GPU-hours and a sample per pool."""
    services.utilization_record_all()
    services.utilization_record_all()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "—"), (5, "5s"), (720, "12m"), (3600, "1h"), (3 * 3600 + 5 * 60, "3h 5m"), (2 * 86400 + 4 * 3600, "2d 4h")],
)
def test_idle_times_read_as_people_say_them(seconds, text):
    assert duration(seconds) == text


def test_the_idle_page_says_utilization_has_not_been_read_yet(as_admin):
    response = as_admin.get("/idle/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "Utilization not read yet." in text and "the worker reads utilization once a minute" in text


def test_the_idle_page_lists_the_idle_workloads_longest_idle_first_with_a_csv_export(as_admin, rounds):
    rows = selectors.idle_workloads(user=SYSTEM)
    assert rows, "the demo's fleet has idle GPUs after a round"
    response = as_admin.get("/idle/")
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    text = response.content.decode()
    shown = [text.index(f'data-idle="{row["namespace"]}/{row["pod"]}"') for row in rows]
    assert shown == sorted(shown)  # as the selector orders them: longest idle first
    first = rows[0]
    fragment = as_admin.get(f"/idle/?pool={first['pool']}", headers={"HX-Request": "true"}).content.decode()
    assert '<div id="idle-table" hx-history="false">' in fragment and "<html" not in fragment
    exported = as_admin.get(f"/idle/?format=csv&pool={first['pool']}")
    assert exported["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {row["pool"] for row in table} == {first["pool"]}
    assert len(table) == len([row for row in rows if row["pool"] == first["pool"]])


def test_the_overview_shows_the_five_longest_idle_workloads_and_links_to_the_idle_page(as_admin, rounds):
    rows = selectors.idle_workloads(user=SYSTEM)
    text = as_admin.get("/").content.decode()
    assert "Workloads with idle GPUs" in text and 'href="/idle/"' in text
    assert text.count("data-idle=") == min(5, len(rows))


def test_the_overview_hides_the_panel_when_no_gpu_is_idle(as_admin):
    assert "Workloads with idle GPUs" not in as_admin.get("/").content.decode()


def test_a_pool_reader_sees_the_idle_workloads_of_their_pools_only(client, rounds):
    client.force_login(person("reader", role("reader-role", READ_TEAM_A), password=None))
    text = client.get("/idle/").content.decode()
    for row in selectors.idle_workloads(user=SYSTEM):
        if row["pool"] != "team-a":
            assert f'data-idle="{row["namespace"]}/{row["pod"]}"' not in text


def test_the_consumption_report_has_a_total_row_and_csv_and_json_exports(as_admin, rounds):
    response = as_admin.get("/consumption/?by=user&period=24h")
    assert response.status_code == 200
    text = response.content.decode()
    report = selectors.consumption_report(user=SYSTEM, filters={"by": "user", "period": "24h"})
    assert report["rows"]
    assert 'class="total"' in text and "GPU-hours allocated" in text
    assert "?by=user&amp;period=24h&amp;format=csv" in text and "?by=user&amp;period=24h&amp;format=json" in text
    exported = as_admin.get("/consumption/?by=user&period=24h&format=csv")
    table = list(csv.reader(io.StringIO(exported.content.decode())))
    assert table[0] == ["user", "allocated_gpu_hours", "idle_gpu_hours", "idle_share"]
    assert len(table) == len(report["rows"]) + 1
    answer = json.loads(as_admin.get("/consumption/?by=namespace&period=1h&format=json").content)
    assert answer["by"] == "namespace" and "total" in answer and "rows" in answer


@pytest.mark.parametrize(
    "query",
    [
        "by=team",
        "period=2y",
        "since=yesterday",
        "since=2030-01-01T00:00:00Z&until=2029-01-01T00:00:00Z",
        "until=0001-01-01T00:00:00Z",
        "since=9999-12-31T23:59:59Z",
    ],
)
def test_bad_consumption_parameters_are_an_inline_error_never_a_crash(as_admin, query):
    response = as_admin.get(f"/consumption/?{query}")
    assert response.status_code == 400
    assert 'class="form-errors" role="alert"' in response.content.decode()
    assert as_admin.get(f"/consumption/?{query}&format=csv").status_code == 400


def test_the_pool_chart_spans_the_chosen_window_whatever_the_samples(as_admin, console):
    for period, seconds in (("1h", 3600), ("24h", 86400), ("7d", 7 * 86400), ("30d", 30 * 86400)):
        answer = json.loads(as_admin.get(f"/pools/team-a/utilization/?range={period}").content)
        assert round(answer["end"] - answer["start"]) == seconds
        assert answer["times"] == []
        assert answer["empty"] == (
            "No utilization samples in this period yet: the worker reads utilization once a minute."
        )
    usage = json.loads(as_admin.get("/pools/team-a/usage/?range=1h").content)
    assert round(usage["end"] - usage["start"]) == 3600


def test_the_pool_page_shows_utilization_its_distribution_and_a_link_to_its_idle_gpus(as_admin, rounds):
    name = next(row["pool"] for row in selectors.idle_workloads(user=SYSTEM) if row["pool"])
    text = as_admin.get(f"/pools/{name}/").content.decode()
    assert "GPU utilization distribution" in text
    for bucket in ("0-25 %", "25-50 %", "50-75 %", "75-100 %"):
        assert bucket in text
    assert f'href="/idle/?pool={name}"' in text
    answer = json.loads(as_admin.get(f"/pools/{name}/utilization/?range=1h").content)
    assert answer["times"] and all(answer["start"] <= at <= answer["end"] for at in answer["times"])
    assert [series["label"] for series in answer["series"]] == ["GPU utilization %", "GPU memory used %"]


def test_a_backend_without_a_source_says_why_its_charts_are_empty(as_admin, console):
    Backend.objects.filter(pools__name="team-a").update(kind="file", prometheus_url="")
    answer = json.loads(as_admin.get("/pools/team-a/utilization/?range=24h").content)
    assert "has no Prometheus and is not simulated" in answer["empty"]


def test_the_node_page_lists_its_gpus_and_links_from_the_node_table(as_admin, rounds):
    node = node_of("robotics-training")
    response = as_admin.get(f"/nodes/{node}/gpus/")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'id="node-gpus"' in text and "data-device=" in text
    assert f"/nodes/{node}/gpus/history/" in text
    answer = json.loads(as_admin.get(f"/nodes/{node}/gpus/history/?range=1h").content)
    assert round(answer["end"] - answer["start"]) == 3600 and answer["times"]
    assert f'href="/nodes/{node}/gpus/?backend=' in as_admin.get("/nodes/?pool=robotics-training").content.decode()
    assert f'href="/nodes/{node}/gpus/?backend=' in as_admin.get(f"/nodes/{node}/labels/").content.decode()


def test_a_prometheus_that_does_not_answer_is_a_status_line_not_an_error_page(as_admin, console):
    node = node_of("robotics-training")
    Backend.objects.filter(nodes__name=node).update(prometheus_url="http://127.0.0.1:9")  # nothing listens there
    response = as_admin.get(f"/nodes/{node}/gpus/")
    assert response.status_code == 200
    assert "Prometheus did not answer" in response.content.decode()
    answer = json.loads(as_admin.get(f"/nodes/{node}/gpus/history/?range=1h").content)
    assert answer["times"] == [] and answer["empty"].startswith("Prometheus did not answer")
    assert as_admin.get("/backends/").status_code == 200


def test_the_backends_page_shows_where_utilization_comes_from(as_admin, rounds):
    text = as_admin.get("/backends/").content.decode()
    assert 'data-utilization="simulated"' in text and "read " in text
