"""The quota pages (SEMANTICS §9): Run:ai's projects and departments tables, the quota grid with its bulk save and
live warnings, and a pool's quota dashboard; each shows only what its reader may see and changes only what they
may change."""

from __future__ import annotations

import csv
import io
from html import unescape

import pytest
from kube_objects import node, pod
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import ConfigRevision, UsageSample


def gpu(pool, deserved, limit=-1, weight=2):
    return {"nodePool": pool, "gpu": {"deserved": deserved, "limit": limit, "overQuotaWeight": weight}}


@pytest.fixture
def lab(cluster, actor):
    """Pools a100 (capacity 8) and v100 (4); rnd holds vision (4.5 GPUs, 6 waiting) and nlp; ops holds infer."""
    cluster(
        [
            node("a-0", gpu=8, labels={"gpu-type": "A100"}),
            node("v-0", gpu=4, labels={"gpu-type": "V100"}),
            pod("train-1", node="a-0", gpu=4, namespace="runai-vision"),
            pod("train-2", node="a-0", namespace="runai-vision", annotations={"gpu-fraction": "0.5"}),
            pod("waiting", gpu=6, namespace="runai-vision", phase="Pending", pool="a100"),
            pod("serve", node="a-0", gpu=3, namespace="runai-infer"),
        ],
        name="lab",
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}},
                "v100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "V100"}},
            },
            ConfigType.DEPARTMENT: {"rnd": {"resources": [gpu("a100", 6)]}, "ops": {"resources": [gpu("a100", 2)]}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": [gpu("a100", 4)]},
                "nlp": {"department": "rnd", "resources": [gpu("a100", 2)]},
                "infer": {"department": "ops", "resources": [gpu("a100", 2)]},
            },
        },
        actor=actor,
    )


@pytest.fixture
def people(lab):
    pools = {"actions": ["pool:Read"], "resources": ["pool/*"]}
    return {
        "manager": person(
            "manager",
            role(
                "rnd-admin",
                pools,
                {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
                {"actions": ["department:Update", "department:Read"], "resources": ["department/rnd"]},
                {"actions": ["project:Read"], "resources": ["project/*"]},
            ),
            password=None,
        ),
        "researcher": person(
            "researcher",
            role("vision-reader", pools, {"actions": ["project:Read"], "resources": ["project/vision"]}),
            password=None,
        ),
        "admin": person("root", password=None, is_superuser=True, is_staff=True),
    }


def page(client, user, url, **kwargs):
    client.force_login(user)
    return client.get(url, **kwargs)


def deserved(config_type, name, pool="a100"):
    body = selectors.config_state([config_type])[config_type][name]
    return {entry["nodePool"]: entry["gpu"]["deserved"] for entry in body["resources"]}.get(pool)


# --- projects and departments ----------------------------------------------------------------------------------


def test_the_projects_page_has_runais_columns_with_the_quota_figures(client, people):
    response = page(client, people["admin"], "/projects/")
    assert response.status_code == 200
    rows = {row["name"]: row for row in response.context["rows"]}
    assert list(rows) == ["infer", "nlp", "vision"]
    vision = rows["vision"]
    assert (vision["department"], vision["node_pools"], vision["gpu_quota"]) == ("rnd", ["a100"], 4)
    assert (vision["allocated_gpus"], vision["pending_gpus"], vision["allocation_ratio"]) == (4.5, 6, 1.125)
    assert vision["status"] == "Over quota" and rows["nlp"]["status"] == "Idle"
    assert rows["infer"]["status"] == "Over quota"  # 3 held, 2 deserved
    assert vision["workloads"] == 3  # two running, one waiting
    html = response.content.decode()
    for heading in (
        "Project",
        "Department",
        "Status",
        "Node pools with quota",
        "Allocated GPUs",
        "GPU allocation ratio",
    ):
        assert f">{heading}<" in html
    assert "113 %" in html or "112 %" in html  # 4.5 of 4


def test_the_projects_table_downloads_as_csv_and_filters_by_department(client, people):
    response = page(client, people["admin"], "/projects/?format=csv&department=rnd")
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["name"] for row in table] == ["nlp", "vision"]
    assert table[1]["allocated_gpus"] == "4.5" and table[1]["node_pools"] == "a100"


def test_a_researcher_sees_their_project_only_and_no_department(client, people):
    response = page(client, people["researcher"], "/projects/")
    assert [row["name"] for row in response.context["rows"]] == ["vision"]
    assert "infer" not in response.content.decode()
    assert page(client, people["researcher"], "/departments/").context["rows"] == []


def test_the_departments_page_adds_up_each_departments_projects(client, people):
    rows = {row["name"]: row for row in page(client, people["admin"], "/departments/").context["rows"]}
    assert (rows["rnd"]["projects"], rows["rnd"]["allocated_gpus"], rows["rnd"]["gpu_quota"]) == (2, 4.5, 6)
    assert rows["rnd"]["status"] == "Waiting" and rows["ops"]["status"] == "Over quota"  # rnd: 4.5 of 6, 6 waiting
    manager = {row["name"] for row in page(client, people["manager"], "/departments/").context["rows"]}
    assert manager == {"rnd"}


# --- the quota grid ----------------------------------------------------------------------------------------------


def grid_form(response) -> dict:
    """The grid's form as the browser posts it, with the cell of (unit, pool) addressable by name."""
    form = {"department": response.context["department"]}
    cells = {}
    for column, pool in enumerate(response.context["pools"]):
        form[f"pool-{column}"] = pool
    for row in response.context["rows"]:
        if not row["editable"]:
            continue
        form[f"unit-{row['index']}"] = f"{row['kind']}/{row['unit']}"
        for cell in row["cells"]:
            for field, value in cell["shown"].items():
                form[f"{cell['prefix']}-{field}"] = value
            cells[(row["unit"], cell["pool"])] = cell["prefix"]
    return form, cells


def test_the_grid_saves_only_the_changed_cells_in_one_change(client, people):
    form, cells = grid_form(page(client, people["admin"], "/quotas/"))
    before = ConfigRevision.objects.count()
    form[f"{cells[('vision', 'a100')]}-deserved"] = "5"
    form[f"{cells[('ops', 'v100')]}-limit"] = "3"
    form[f"{cells[('ops', 'v100')]}-weight"] = ""  # None: no over-quota
    form["description"] = "grid test"
    response = client.post("/quotas/", form)
    assert response.status_code == 302
    assert ConfigRevision.objects.count() == before + 2  # DEPARTMENT and PROJECT, once each
    assert deserved(ConfigType.PROJECT, "vision") == 5
    ops = selectors.config_state([ConfigType.DEPARTMENT])[ConfigType.DEPARTMENT]["ops"]["resources"]
    assert [entry for entry in ops if entry["nodePool"] == "v100"][0]["gpu"] == {
        "deserved": 0,
        "limit": 3,
        "overQuotaWeight": None,
    }
    # nlp and infer were posted unchanged: no entry appears for a pool they had none on.
    assert [
        e["nodePool"] for e in selectors.config_state([ConfigType.PROJECT])[ConfigType.PROJECT]["nlp"]["resources"]
    ] == ["a100"]
    again = client.post("/quotas/", grid_form(client.get("/quotas/"))[0], follow=True)
    assert "Nothing changed." in again.content.decode() and ConfigRevision.objects.count() == before + 2


def test_a_bad_cell_saves_nothing_and_keeps_what_was_typed(client, people):
    form, cells = grid_form(page(client, people["admin"], "/quotas/"))
    before = ConfigRevision.objects.count()
    form[f"{cells[('vision', 'a100')]}-deserved"] = "7"
    form[f"{cells[('nlp', 'a100')]}-deserved"] = "-5"
    response = client.post("/quotas/", form)
    assert response.status_code == 400 and ConfigRevision.objects.count() == before
    html = response.content.decode()
    assert "Nothing was saved." in html and 'value="7"' in html and 'value="-5"' in html
    form[f"{cells[('nlp', 'a100')]}-deserved"] = "lots"
    response = client.post("/quotas/", form)
    assert response.status_code == 400 and "is not a number" in response.content.decode()
    assert deserved(ConfigType.PROJECT, "vision") == 4


def test_the_grid_previews_the_warnings_of_a_change_and_writes_nothing(client, people):
    form, cells = grid_form(page(client, people["admin"], "/quotas/"))
    before = ConfigRevision.objects.count()
    form[f"{cells[('vision', 'a100')]}-deserved"] = "9"
    response = client.post("/quotas/", {**form, "preview": "1"}, HTTP_HX_REQUEST="true")
    html = unescape(response.content.decode())
    assert response.status_code == 200 and "After this change" in html
    assert "department 'rnd' deserve 11 GPUs, more than its 6" in html
    assert ConfigRevision.objects.count() == before and deserved(ConfigType.PROJECT, "vision") == 4


def test_a_department_manager_edits_its_projects_rows_only(client, people):
    response = page(client, people["manager"], "/quotas/")
    editable = {(row["kind"], row["unit"]): row["editable"] for row in response.context["rows"]}
    assert editable == {
        ("department", "rnd"): False,
        ("project", "nlp"): True,
        ("project", "vision"): True,
        ("project", "infer"): False,  # read, of another department
    }
    form, cells = grid_form(response)
    form[f"{cells[('nlp', 'a100')]}-deserved"] = "1"
    assert client.post("/quotas/", form).status_code == 302
    assert deserved(ConfigType.PROJECT, "nlp") == 1
    # A forged row of another department: refused, nothing written.
    form["unit-99"], form["q-99-0-deserved"] = "project/infer", "8"
    form[f"{cells[('nlp', 'a100')]}-deserved"] = "2"
    refused = client.post("/quotas/", form)
    assert refused.status_code in (400, 403, 404), refused.context["errors"]  # ops is not even shown to them
    assert deserved(ConfigType.PROJECT, "infer") == 2
    assert deserved(ConfigType.PROJECT, "nlp") == 1


def test_a_reader_gets_a_read_only_grid_and_cannot_post_to_it(client, people):
    response = page(client, people["researcher"], "/quotas/")
    assert [(row["unit"], row["editable"]) for row in response.context["rows"]] == [("vision", False)]
    assert b'type="number"' not in response.content and b"save-quotas" not in response.content
    refused = client.post("/quotas/", {"pool-0": "a100", "unit-0": "project/vision", "q-0-0-deserved": "40"})
    assert refused.status_code in (403, 404) and deserved(ConfigType.PROJECT, "vision") == 4


# --- a pool's quota dashboard --------------------------------------------------------------------------------------


def test_the_dashboard_shows_capacity_quotas_allocations_and_fair_share_extremes(client, people):
    response = page(client, people["admin"], "/quotas/a100/")
    assert response.status_code == 200
    board = response.context
    assert (board["capacity"], board["deserved"], board["allocated"], board["pending"]) == (8, 8, 7.5, 6)
    assert [row["unit"] for row in board["pending_by_project"]] == ["vision"]
    # vision asks 10.5 and is given rnd's whole share; infer holds 3 of a fair 2.
    assert [row["unit"] for row in board["below_fair_share"]] == ["vision"]
    assert [(row["unit"], row["over_fair_share"]) for row in board["above_fair_share"]] == [("infer", 1)]


def test_the_dashboard_of_a_hidden_or_missing_pool_is_a_404(client, people):
    services.config_apply(
        changes={ConfigType.POOL: {"secret": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "H100"}}}},
        actor=services.SYSTEM,
    )
    reader = person("reader", role("a100-only", {"actions": ["pool:Read"], "resources": ["pool/a100"]}), password=None)
    assert page(client, reader, "/quotas/secret/").status_code == 404
    assert page(client, reader, "/quotas/secret/usage/").status_code == 404
    assert page(client, reader, "/quotas/nowhere/").status_code == 404
    assert page(client, reader, "/quotas/a100/").status_code == 200


def test_the_dashboard_chart_reads_the_minute_quota_samples(client, people):
    services.usage_sample_record()
    sample = UsageSample.objects.get(scope=UsageSample.Scope.QUOTA, key="a100")
    assert (sample.used, sample.quota_limit, sample.capacity) == (7.5, 8, 8)
    data = page(client, people["admin"], "/quotas/a100/usage/").json()
    assert len(data["times"]) == 1
    assert {series["label"]: series["values"] for series in data["series"]} == {
        "Allocated": [7.5],
        "Deserved": [8],
        "Capacity": [8],
    }
    assert selectors.quota_pool_totals() == [
        {"pool": "a100", "capacity": 8, "deserved": 8, "allocated": 7.5},
        {"pool": "v100", "capacity": 4, "deserved": 0, "allocated": 0},
    ]
    assert SYSTEM  # the samples are taken as the system: every department counts
