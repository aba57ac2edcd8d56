"""Departments and projects created and edited from their pages (SEMANTICS §9.4), through the service the API uses;
the quota grid's and the dashboard's one vocabulary and the above-limit mark; the navigation the gate decides; the
console's own 404 and 403 pages with DEBUG on; the icon."""

from __future__ import annotations

import re

import pytest
from kube_objects import node, pod
from people import member, person, role
from rest_framework.test import APIClient

from pools import selectors, services
from pools.choices import ConfigType
from pools.models import ConfigRevision

POOLS = {"actions": ["pool:Read"], "resources": ["pool/*"]}


def gpu(pool, deserved, limit=-1, weight=2):
    return {"nodePool": pool, "gpu": {"deserved": deserved, "limit": limit, "overQuotaWeight": weight}}


@pytest.fixture
def lab(cluster, actor):
    """Pools a100 (8 GPUs) and v100 (4): rnd's project vision holds 4 on a100, ops's project infer holds 3 of a limit
    of 3 there; vision also has a CPU quota and a priority, which the form does not show."""
    cluster(
        [
            node("a-0", gpu=8, labels={"gpu-type": "A100"}),
            node("v-0", gpu=4, labels={"gpu-type": "V100"}),
            pod("train", node="a-0", gpu=4, namespace="runai-vision"),
            pod("serve", node="a-0", gpu=3, namespace="runai-infer"),
        ],
        name="lab",
    )
    vision = {**gpu("a100", 2), "priority": 120, "cpu": {"deserved": 16, "limit": 32}}
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}},
                "v100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "V100"}},
            },
            ConfigType.DEPARTMENT: {"rnd": {"resources": [gpu("a100", 6)]}, "ops": {"resources": [gpu("a100", 2)]}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": [vision, gpu("v100", 1)]},
                "infer": {"department": "ops", "resources": [gpu("a100", 2, limit=3)]},
            },
        },
        actor=actor,
    )


@pytest.fixture
def people(lab):
    """rnd's admin (its projects, on a100 only), ops's admin who reads every project, a viewer who reads
    everything, someone with no role, and a superuser."""
    return {
        "rnd-admin": person(
            "rnd-admin",
            role(
                "rnd-admin",
                {"actions": ["pool:Read"], "resources": ["pool/a100"]},
                {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
                {"actions": ["department:Read", "department:Update"], "resources": ["department/rnd"]},
                {"actions": ["project:Read"], "resources": ["project/vision*"]},
            ),
            password=None,
        ),
        "ops-admin": person(
            "ops-admin",
            role(
                "ops-admin",
                POOLS,
                {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
                {"actions": ["department:Read", "department:Update"], "resources": ["department/ops"]},
                {"actions": ["project:Read"], "resources": ["project/*"]},
            ),
            password=None,
        ),
        "viewer": person("viewer", "osmo-user", password=None),
        "nobody": person("nobody", password=None),
        "admin": person("root", password=None, is_superuser=True, is_staff=True),
    }


def signed_in(client, user):
    client.force_login(user)
    return client


def body(config_type, name):
    return selectors.config_state([config_type])[config_type].get(name)


def form_of(response) -> dict:
    """The form as the browser posts it: every field's value as shown (checkboxes only when checked)."""
    form = response.context["form"]
    data = {}
    for field in form:
        value = field.value()
        if isinstance(value, bool):
            if value:
                data[field.html_name] = "on"
        elif value is not None and not field.field.disabled:
            data[field.html_name] = value
    if response.context.get("version"):
        data["version"] = response.context["version"]
    return data


# --- creating and editing ----------------------------------------------------------------------------------------


def test_a_department_admin_creates_a_project_of_its_department_from_the_form(client, people):
    client = signed_in(client, people["rnd-admin"])
    page = client.get("/projects/new/?department=rnd")
    assert page.status_code == 200
    assert [choice for choice, _ in page.context["form"].fields["department"].choices] == ["rnd"]
    assert set(page.context["form"].pools) == {"a100"}  # the pools they may see
    form = form_of(page)
    assert form["department"] == "rnd" and form["deserved__a100"] == "0" and form["over_quota__a100"] == "on"
    before = ConfigRevision.objects.count()
    form.update(
        name="vision-labs",
        namespaces="labs, labs-eval",
        deserved__a100="1.5",
        limit__a100="4",
        weight__a100="3",
        change_description="a lab for vision",
    )
    saved = client.post("/projects/new/", form)
    assert saved.status_code == 302 and saved["Location"] == "/projects/"
    assert body(ConfigType.PROJECT, "vision-labs") == {
        "description": "",
        "department": "rnd",
        "namespaces": ["labs", "labs-eval"],
        "resources": [
            {
                "nodePool": "a100",
                "priority": 100,
                "gpu": {"deserved": 1.5, "limit": 4, "overQuotaWeight": 3},
                "cpu": {"deserved": 0, "limit": -1},
                "memory": {"deserved": 0, "limit": -1},
            }
        ],
        "members": [],
    }
    assert ConfigRevision.objects.count() == before + 1
    assert ConfigRevision.objects.latest("created_at").description == "a lab for vision"
    assert "Saved project vision-labs." in client.get("/projects/").content.decode()


def test_the_form_and_the_api_write_the_same_project(client, people):
    client = signed_in(client, people["admin"])
    form = {**form_of(client.get("/projects/new/")), "name": "from-page", "department": "ops", "deserved__a100": "2"}
    assert client.post("/projects/new/", form).status_code == 302
    api = APIClient()
    api.force_authenticate(people["admin"])
    created = api.post(
        "/api/projects/",
        {"name": "from-api", "department": "ops", "resources": [{"nodePool": "a100", "gpu": {"deserved": 2}}]},
        format="json",
    )
    assert created.status_code == 201
    page, rest = body(ConfigType.PROJECT, "from-page"), body(ConfigType.PROJECT, "from-api")
    assert page["namespaces"] == ["runai-from-page"] and rest["namespaces"] == ["runai-from-api"]
    assert {**page, "namespaces": []} == {**rest, "namespaces": []}


def test_editing_keeps_what_the_form_does_not_show(client, people):
    client = signed_in(client, people["rnd-admin"])
    page = client.get("/projects/vision/edit/")
    assert page.status_code == 200 and page.context["form"].fields["name"].disabled
    form = form_of(page)
    assert (form["deserved__a100"], form["limit__a100"], form["weight__a100"]) == ("2", "", "2")
    form.update(deserved__a100="3", limit__a100="6")
    del form["over_quota__a100"]  # no over-quota: at most what it deserves
    assert client.post("/projects/vision/edit/", form).status_code == 302
    resources = {entry["nodePool"]: entry for entry in body(ConfigType.PROJECT, "vision")["resources"]}
    assert resources["a100"]["gpu"] == {"deserved": 3, "limit": 6, "overQuotaWeight": None}
    assert (resources["a100"]["priority"], resources["a100"]["cpu"]) == (120, {"deserved": 16, "limit": 32})
    assert resources["v100"]["gpu"]["deserved"] == 1  # a pool hidden from the editor keeps its quota


def test_a_department_edited_and_created_by_an_administrator(client, people):
    client = signed_in(client, people["admin"])
    form = form_of(client.get("/departments/ops/edit/"))
    form.update(description="serving", deserved__v100="2")
    assert client.post("/departments/ops/edit/", form).status_code == 302
    ops = body(ConfigType.DEPARTMENT, "ops")
    assert ops["description"] == "serving"
    assert [(entry["nodePool"], entry["gpu"]["deserved"]) for entry in ops["resources"]] == [("a100", 2), ("v100", 2)]
    created = client.post("/departments/new/", {"name": "labs", "deserved__a100": "1", "over_quota__a100": "on"})
    assert created.status_code == 302 and body(ConfigType.DEPARTMENT, "labs")["resources"][0]["gpu"]["deserved"] == 1


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"deserved__a100": "lots"}, "deserved__a100", "is not a number"),
        ({"deserved__a100": "1e999999999"}, "deserved__a100", ""),
        ({"deserved__a100": "5", "limit__a100": "4"}, "deserved__a100", "must not exceed gpu.limit (4)"),
        ({"limit__a100": "-3"}, "limit__a100", "must be -1 or a number from 0"),
        ({"deserved__a100": "0.0001"}, "deserved__a100", "at most 3 decimal places"),
        ({"weight__a100": "-2"}, "weight__a100", "must be a number from 0 to 1000"),
        ({"namespaces": "Not A Namespace"}, "namespaces", "a namespace is at most 63"),
        ({"namespaces": "runai-infer"}, "__all__", "namespace 'runai-infer' belongs to project"),
        ({"name": "vision"}, "name", "project 'vision' already exists"),
        ({"name": "bad name!"}, "name", ""),
        ({"department": "nowhere"}, "department", "not one of the available choices"),
    ],
)
def test_bad_input_gets_a_clear_error_next_to_its_field_and_changes_nothing(client, people, change, field, message):
    client = signed_in(client, people["admin"])
    form = {**form_of(client.get("/projects/new/")), "name": "fresh", "department": "rnd", **change}
    before = ConfigRevision.objects.count()
    refused = client.post("/projects/new/", form)
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert "The project was not saved." in refused.content.decode()
    assert ConfigRevision.objects.count() == before and body(ConfigType.PROJECT, "fresh") is None


def test_a_stale_form_is_refused_and_changes_nothing(client, people):
    client = signed_in(client, people["admin"])
    form = form_of(client.get("/projects/infer/edit/"))
    services.quota_set(unit="infer", pool="a100", figures={"gpu": {"deserved": 1}}, actor=services.Actor.system("t"))
    refused = client.post("/projects/infer/edit/", {**form, "deserved__a100": "3"})
    assert refused.status_code == 400 and "changed since it was read" in refused.content.decode()
    assert body(ConfigType.PROJECT, "infer")["resources"][0]["gpu"]["deserved"] == 1


# --- who may: the same 404 as for nothing there, 403 where one may read but not change ----------------------------

FORMS = ["/projects/{}/edit/", "/departments/{}/edit/"]


def not_found_text(response, name: str) -> str:
    """The page without the name asked for and the session's CSRF token, which differ from request to request."""
    return re.sub(r"\b[A-Za-z0-9]{64}\b", "TOKEN", response.content.decode()).replace(name, "NAME")


@pytest.mark.parametrize("who", ["nobody", "rnd-admin"])
def test_a_unit_one_may_not_see_answers_as_one_that_does_not_exist(client, people, who):
    client = signed_in(client, people[who])
    hidden = {"nobody": ("vision", "rnd"), "rnd-admin": ("infer", "ops")}[who]
    before = ConfigRevision.objects.count()
    for url, name in zip(FORMS, hidden, strict=True):
        seen, missing = client.get(url.format(name)), client.get(url.format("nowhere"))
        assert (seen.status_code, missing.status_code) == (404, 404)
        assert not_found_text(seen, name) == not_found_text(missing, "nowhere")
        posted = client.post(url.format(name), {"deserved__a100": "7"})
        assert posted.status_code == 404 and not_found_text(posted, name) == not_found_text(missing, "nowhere")
    assert ConfigRevision.objects.count() == before


def test_who_may_read_but_not_change_gets_403_and_changes_nothing(client, people):
    before = ConfigRevision.objects.count()
    viewer = signed_in(client, people["viewer"])
    for url in ("/projects/new/", "/departments/new/", "/projects/vision/edit/", "/departments/rnd/edit/"):
        assert viewer.get(url).status_code == 403, url
        assert viewer.post(url, {"name": "x", "department": "rnd", "deserved__a100": "1"}).status_code in (403, 404)
    # ops's admin reads rnd's project but changes only ops's projects: refused before the form opens, and on save.
    other = signed_in(client, people["ops-admin"])
    page = other.get("/projects/vision/edit/")
    assert page.status_code == 403 and "changing the projects of department &#x27;rnd&#x27;" in page.content.decode()
    assert other.post("/projects/vision/edit/", {"department": "rnd", "deserved__a100": "8"}).status_code == 403
    moved = other.post("/projects/new/", {"name": "sneak", "department": "rnd", "deserved__a100": "1"})
    assert moved.status_code == 400 and "department" in moved.context["form"].errors  # not one of theirs to choose
    assert other.get("/departments/ops/edit/").status_code == 403  # departments are changed by config:Update on them
    assert ConfigRevision.objects.count() == before and body(ConfigType.PROJECT, "sneak") is None


def test_the_forms_are_linked_only_for_those_who_may_use_them(client, people):
    def links(user, url):
        html = signed_in(client, user).get(url).content.decode()
        return sorted(set(re.findall(r'href="(/(?:projects|departments)/[^"?]*(?:new|edit)/)', html)))

    assert links(people["rnd-admin"], "/projects/") == ["/projects/new/", "/projects/vision/edit/"]
    assert links(people["ops-admin"], "/projects/") == ["/projects/infer/edit/", "/projects/new/"]
    assert links(people["viewer"], "/projects/") == [] and links(people["viewer"], "/departments/") == []
    assert links(people["rnd-admin"], "/departments/") == []
    assert links(people["admin"], "/departments/") == [
        "/departments/new/",
        "/departments/ops/edit/",
        "/departments/rnd/edit/",
    ]


# --- the quota grid and the dashboard: one vocabulary, the above-limit mark ------------------------------------


def test_weights_and_limits_read_the_same_on_every_page(client, people):
    client = signed_in(client, people["viewer"])
    grid = client.get("/quotas/").content.decode()
    board = client.get("/quotas/a100/").content.decode()
    # A read-only cell and the dashboard's row say the same: the weight as its number, -1 as "no limit".
    assert "2 deserved · no limit · weight 2" in grid  # vision on a100
    assert re.search(
        r'data-unit="project/vision">.*?<td class="num">2</td>\s*<td class="num">no limit</td>'
        r'\s*<td class="num">2</td>',
        board,
        re.S,
    )
    for page in (grid, board):
        assert "Medium" not in page and ">none<" not in page and ">-1<" not in page
    editable = signed_in(client, people["admin"]).get("/quotas/").content.decode()
    assert '<option value="2" selected>2</option>' in editable and ">Medium<" not in editable
    assert 'placeholder="no limit"' in editable


def test_above_the_limit_is_marked_and_over_quota_is_drawn_as_normal(client, people):
    grid = signed_in(client, people["admin"]).get("/quotas/")
    cells = {(row["unit"], cell["pool"]): cell for row in grid.context["rows"] for cell in row["cells"]}
    assert cells[("vision", "a100")]["over_quota"] == 2 and cells[("infer", "a100")]["allocated"] == 3
    html = grid.content.decode()
    marks = re.findall(r'<tr class="(\w+)" data-unit="([^"]+)">(?:(?!</tr>).)*?data-testid="above-limit"', html, re.S)
    assert marks == []  # infer holds 3 of a limit of 3: at its limit, not above
    services.quota_set(unit="infer", pool="a100", figures={"gpu": {"limit": 2}}, actor=services.Actor.system("t"))
    html = client.get("/quotas/").content.decode()
    rows = dict(re.findall(r'data-unit="([^"]+)">(.*?)</tr>', html, re.S))
    assert 'data-testid="above-limit"' in rows["project/infer"] and "above limit" in rows["project/infer"]
    assert 'data-testid="above-limit"' not in rows["project/vision"]
    assert "2 over quota" in rows["project/vision"] and 'class="quota-held small"' in rows["project/vision"]
    assert "quota-held small over" not in html and "badge over" not in rows["project/vision"]
    board = client.get("/quotas/a100/").content.decode()
    assert board.count('data-testid="above-limit"') == 1


# --- navigation, error pages, icon ---------------------------------------------------------------------------------


def navigation(client, user) -> list[str]:
    html = signed_in(client, user).get("/accounts/profile/").content.decode()
    nav = re.search(r'<nav aria-label="Main".*?</nav>', html, re.S)
    return re.findall(r">([^<]+)</a></li>", nav.group(0)) if nav else []


def test_the_navigation_shows_only_the_pages_one_may_use(client, people):
    everything = [
        "Pools",
        "Nodes",
        "Node pools",
        "Quotas",
        "Workloads",
        "Idle GPUs",
        "Consumption",
        "Backends",
        "What-if",
    ]
    everything += ["Templates", "Validations", "History", "Access"]
    assert navigation(client, people["admin"]) == everything
    assert navigation(client, people["viewer"]) == everything  # osmo-user reads everything
    # Pools of a100 only: no pod templates, validations, backends or roles to read.
    assert navigation(client, people["rnd-admin"]) == [
        "Pools",
        "Nodes",
        "Node pools",
        "Quotas",
        "Workloads",
        "Idle GPUs",
        "Consumption",
        "What-if",
        "History",
    ]
    assert navigation(client, people["nobody"]) == ["History"]  # no pool, no fleet, no project: no workload to see
    denied = person(
        "denied",
        role("pools-then-none", POOLS, {"effect": "Deny", "actions": ["pool:Read"], "resources": ["pool/*"]}),
        password=None,
    )
    assert "Pools" not in navigation(client, denied)


def test_workloads_are_offered_to_those_who_would_find_some(client, people):
    assert "Workloads" not in navigation(client, people["nobody"])
    assert "Workloads" in navigation(client, people["rnd-admin"])  # the workloads of pool a100
    fleet = person("fleet", role("fleet-lister", {"actions": ["resource:List"], "resources": ["*"]}), password=None)
    assert "Workloads" in navigation(client, fleet)  # the pods of no pool too
    member("vision", "user:nobody:viewer")
    assert navigation(client, people["nobody"]) == ["My projects", "Workloads", "History"]  # their project's


def test_the_console_answers_its_own_404_and_403_pages_with_debug_on(client, people, settings):
    settings.DEBUG = True
    client = signed_in(client, people["rnd-admin"])
    for url in ("/no/such/page/", "/projects/infer/edit/", "/pools/nowhere/", "/quotas/nowhere/"):
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 404 and "<h1>Not found</h1>" in html, url
        assert "URLconf" not in html and "Django" not in html and 'aria-label="Main"' in html, url
    assert client.get("/quotas").status_code == 301  # a missing slash is still added first
    api = client.get("/api/pools/nowhere/")
    assert api.status_code == 404 and api["Content-Type"] == "application/json"
    assert client.get("/api/no-such-thing/").json()["errors"]
    refused = client.get("/departments/new/")
    assert refused.status_code == 403 and "<h1>Not allowed</h1>" in refused.content.decode()


def test_the_console_has_an_icon_at_favicon_ico_and_on_every_page(client, people):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 302 and icon["Location"] == "/static/favicon.svg"
    page = signed_in(client, people["viewer"]).get("/")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page.content.decode()
    from django.contrib.staticfiles import finders

    assert finders.find("favicon.svg")
