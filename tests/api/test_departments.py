"""Departments, projects and their quotas per node pool (SEMANTICS §9), as config documents: Run:ai's verbs in
``poolctl``, the API's ``resources`` lists, revisions and rollback, and the gate (a department's manager edits
only its projects; nobody sees a quota on a pool hidden from them, nor changes it by omission)."""

from __future__ import annotations

import json

import pytest
from kube_objects import node
from people import person, role

from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import AccessDenied, ConfigError, NotFound
from pools.models import ConfigRevision, Project

DEFAULTS = {"priority": 100, "cpu": {"deserved": 0, "limit": -1}, "memory": {"deserved": 0, "limit": -1}}


def quota(pool: str, deserved=0, limit=-1, weight=2, **extra) -> dict:
    return {
        "nodePool": pool,
        **DEFAULTS,
        "gpu": {"deserved": deserved, "limit": limit, "overQuotaWeight": weight},
        **extra,
    }


@pytest.fixture
def pools(cluster, actor):
    """Backend ``lab`` with pools a100 and v100 (label pools), and a third pool ``hidden`` some people may not see."""
    cluster([node("a-0", labels={"gpu-type": "A100"}), node("v-0", labels={"gpu-type": "V100"})], name="lab")
    services.config_apply(
        changes={
            ConfigType.POOL: {
                name: {"backend": "lab", "node_label": {"key": "gpu-type", "value": value}}
                for name, value in (("a100", "A100"), ("v100", "V100"), ("hidden", "H100"))
            }
        },
        actor=actor,
    )


@pytest.fixture
def rnd(pools, poolctl):
    """Department rnd (quotas on a100 and hidden) with projects vision and nlp."""
    assert poolctl(
        "department", "create", "rnd",
        "--resources", "nodepool=a100,gpu-deserved=8,gpu-limit=12,over-quota-weight=High",
        "--resources", "nodepool=hidden,gpu-deserved=2",
    ).code == 0  # fmt: skip
    assert (
        poolctl(
            "project", "create", "vision", "--department", "rnd", "--resources", "nodepool=a100,gpu-deserved=6"
        ).code
        == 0
    )
    assert poolctl("project", "create", "nlp", "--department", "rnd", "--namespace", "nlp-team").code == 0


def state(config_type: ConfigType) -> dict:
    return selectors.config_state([config_type])[config_type]


# --- documents and verbs --------------------------------------------------------------------------------------


def test_runai_verbs_create_documents_with_every_figure_defaulted(rnd):
    assert state(ConfigType.DEPARTMENT)["rnd"] == {
        "description": "",
        "resources": [quota("a100", 8, 12, 3), quota("hidden", 2)],
        "members": [],
    }
    assert state(ConfigType.PROJECT) == {
        "nlp": {"description": "", "department": "rnd", "namespaces": ["nlp-team"], "resources": [], "members": []},
        "vision": {
            "description": "",
            "department": "rnd",
            "namespaces": ["runai-vision"],
            "resources": [quota("a100", 6)],
            "members": [],
        },
    }


def test_quota_set_changes_the_figures_given_and_keeps_the_others(rnd, poolctl):
    result = poolctl("quota", "set", "vision", "--pool", "a100", "--gpu-limit", "10", "--over-quota-weight", "None")
    assert result.code == 0, result.err
    result = poolctl("quota", "set", "nlp", "--pool", "v100", "--gpu-deserved", "0.5", "--memory-deserved", "65536")
    assert result.code == 0, result.err
    projects = state(ConfigType.PROJECT)
    assert projects["vision"]["resources"] == [quota("a100", 6, 10, None)]
    assert projects["nlp"]["resources"] == [{**quota("v100", 0.5), "memory": {"deserved": 65536, "limit": -1}}]


def test_each_change_is_a_revision_that_rolls_back(rnd, poolctl):
    poolctl("quota", "set", "vision", "--pool", "a100", "--gpu-deserved", "1")
    revision = ConfigRevision.objects.filter(config_type=ConfigType.PROJECT).order_by("-revision").first()
    assert revision.changed == ["vision"] and revision.username
    assert poolctl("config", "rollback", f"PROJECT:{revision.revision - 1}").code == 0
    assert state(ConfigType.PROJECT)["vision"]["resources"] == [quota("a100", 6)]
    assert (
        '-        "deserved": 6,\n+        "deserved": 1,'
        in poolctl("config", "diff", f"PROJECT:{revision.revision - 1}", f"PROJECT:{revision.revision}").out
    )


def test_lists_show_departments_and_projects_with_their_quotas(rnd, poolctl):
    departments = poolctl("department", "list", "--json").json()["departments"]
    assert [(d["name"], d["projects"], d["node_pools"], d["gpu_quota"]) for d in departments] == [
        ("rnd", 2, ["a100", "hidden"], 10)
    ]
    text = poolctl("project", "list").out.splitlines()
    assert text[0].split()[:3] == ["PROJECT", "DEPARTMENT", "NAMESPACES"]
    assert [line.split()[:3] for line in text[2:]] == [["nlp", "rnd", "nlp-team"], ["vision", "rnd", "runai-vision"]]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("project", "create", "p", "--department", "nowhere"), "department 'nowhere' does not exist"),
        (("project", "create", "p", "--department", "rnd", "--namespace", "Bad_NS"), "namespace"),
        (("project", "create", "p", "--department", "rnd", "--namespace", "nlp-team"), "belongs to project 'nlp'"),
        (("project", "create", "vision", "--department", "rnd"), "already exists"),
        (("department", "create", "d", "--resources", "nodepool=nowhere"), "pool 'nowhere' does not exist"),
        (("department", "create", "d", "--resources", "gpu-deserved=1"), "names no nodepool"),
        (("department", "create", "d", "--resources", "nodepool=a100,gpus=1"), "unknown --resources key 'gpus'"),
        (("department", "create", "d", "--resources", "nodepool=a100,gpu-deserved=9,gpu-limit=4"), "must not exceed"),
        (("department", "create", "d", "--resources", "nodepool=a100,gpu-deserved=lots"), "must be a number"),
        (("department", "create", "d", "--resources", "nodepool=a100,gpu-deserved=1e9"), "must be"),
        (("department", "create", "d", "--resources", "nodepool=a100,over-quota-weight=Huge"), "overQuotaWeight"),
        (("quota", "set", "nobody", "--pool", "a100", "--gpu-deserved", "1"), "no department or project"),
        (("quota", "set", "vision", "--pool", "a100"), "at least one figure"),
        (("config", "delete", "DEPARTMENT", "rnd"), "still has projects (nlp, vision)"),
        (("config", "delete", "POOL", "a100"), "holds quotas of department 'rnd', project 'vision'"),
    ],
)
def test_bad_input_is_one_clear_error_and_changes_nothing(rnd, poolctl, args, words):
    before = ConfigRevision.objects.count()
    result = poolctl(*args)
    assert result.code == 1 and words in result.err and "Traceback" not in result.err, result.err
    assert ConfigRevision.objects.count() == before


def test_a_unit_named_like_both_kinds_is_named_with_its_kind(rnd, poolctl):
    assert poolctl("project", "create", "rnd", "--department", "rnd").code == 0
    assert (
        "department/rnd or project/rnd" in poolctl("quota", "set", "rnd", "--pool", "a100", "--gpu-deserved", "1").err
    )
    assert poolctl("quota", "set", "project/rnd", "--pool", "a100", "--gpu-deserved", "1").code == 0
    assert state(ConfigType.PROJECT)["rnd"]["resources"] == [quota("a100", 1)]


def test_a_bundle_imports_departments_and_projects_all_or_nothing(pools, poolctl, tmp_path):
    bundle = {
        "departments": {"ops": {"resources": [{"nodePool": "v100", "gpu": {"deserved": 4}}]}},
        "projects": {"infer": {"department": "ops"}, "broken": {"department": "missing"}},
    }
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert poolctl("config", "import", str(path)).code == 1
    assert state(ConfigType.DEPARTMENT) == {}
    del bundle["projects"]["broken"]
    path.write_text(json.dumps(bundle))
    assert poolctl("config", "import", str(path)).code == 0
    assert Project.objects.get(name="infer").department.name == "ops"


# --- the gate -------------------------------------------------------------------------------------------------


@pytest.fixture
def people(rnd):
    """A manager of rnd (who may change its projects, not the department), a reader denied pool 'hidden'."""
    manager = role(
        "rnd-admin",
        {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
        {"actions": ["department:Read", "department:Update"], "resources": ["department/rnd"]},
        {"actions": ["project:Read", "pool:Read"], "resources": ["project/*", "pool/a100", "pool/v100"]},
    )
    other = role(
        "ops-admin",
        {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
        {"actions": ["department:Update"], "resources": ["department/ops"]},
        {
            "actions": ["department:Read", "project:Read", "pool:Read"],
            "resources": ["department/*", "project/*", "pool/*"],
        },
    )
    services.config_apply(changes={ConfigType.DEPARTMENT: {"ops": {}}}, actor=services.SYSTEM)
    return {
        "manager": person("manager", manager, password=None),
        "other": person("other", other, password=None),
        "researcher": person(
            "researcher",
            role("vision-reader", {"actions": ["project:Read"], "resources": ["project/vision"]}),
            password=None,
        ),
    }


def act(user, changes):
    return services.config_apply(changes=changes, actor=services.Actor.of(user, "api"))


def test_a_department_manager_changes_its_projects_and_no_other_departments(people, poolctl):
    act(people["manager"], {ConfigType.PROJECT: {"speech": {"department": "rnd"}}})
    assert Project.objects.get(name="speech").department.name == "rnd"
    with pytest.raises(AccessDenied, match="department:Update on department/rnd"):
        act(people["other"], {ConfigType.PROJECT: {"vision": {"department": "rnd", "description": "mine now"}}})
    with pytest.raises(AccessDenied, match="department:Update on department/rnd"):
        act(people["other"], {ConfigType.PROJECT: {"nlp": {"department": "ops"}}})  # moving it out is a change of rnd's
    with pytest.raises(AccessDenied, match="config:Update on config/DEPARTMENT"):
        act(people["manager"], {ConfigType.DEPARTMENT: {"rnd": {"description": "bigger"}}})
    refused = poolctl("--as", "manager", "project", "create", "asr", "--department", "ops")
    assert refused.code == 1 and "department 'ops' does not exist" in refused.err  # not a department they may see
    assert state(ConfigType.PROJECT)["vision"]["description"] == ""


def test_a_researcher_reads_their_project_only(people, client_for):
    client = client_for(people["researcher"])
    assert [p["name"] for p in client.get("/api/projects/").json()["results"]] == ["vision"]
    assert client.get("/api/projects/nlp/").status_code == 404
    assert client.get("/api/departments/rnd/").status_code == 404
    assert client.patch("/api/projects/vision/", {"description": "x"}, format="json").status_code == 403
    assert [p["name"] for p in selectors.projects_visible(user=people["researcher"])] == ["vision"]


def test_quotas_on_a_pool_hidden_from_the_reader_are_left_out_on_every_door(people, client_for, poolctl):
    manager = people["manager"]
    shown = client_for(manager).get("/api/departments/rnd/").json()
    assert [entry["nodePool"] for entry in shown["resources"]] == ["a100"]
    assert "hidden" not in json.dumps(client_for(manager).get("/api/departments/").json())
    assert "hidden" not in json.dumps(client_for(manager).get("/api/configs/DEPARTMENT/").json())
    assert "hidden" not in poolctl("--as", "manager", "department", "list", "--json").out
    assert "hidden" not in poolctl("--as", "manager", "config", "history", "DEPARTMENT", "--format", "json").out
    first = ConfigRevision.objects.get(config_type=ConfigType.DEPARTMENT, revision=1)
    assert "hidden" not in json.dumps(client_for(manager).get("/api/configs/DEPARTMENT/1/").json())
    assert first.snapshot["rnd"]["resources"][1]["nodePool"] == "hidden"


def test_what_a_writer_cannot_see_they_cannot_change_by_leaving_it_out(people, client_for):
    manager = people["manager"]
    act(manager, {ConfigType.PROJECT: {"nlp": {"department": "rnd", "namespaces": ["nlp-team"]}}})
    services.quota_set(unit="nlp", pool="hidden", figures={"gpu": {"deserved": 3}}, actor=services.SYSTEM)
    # The manager never saw nlp's quota on 'hidden': a PUT without it keeps it, one naming it changes nothing.
    response = client_for(manager).put(
        "/api/projects/nlp/",
        {"department": "rnd", "namespaces": ["nlp-team"], "resources": [{"nodePool": "a100", "gpu": {"deserved": 1}}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert [entry["nodePool"] for entry in response.json()["resources"]] == ["a100"]
    assert state(ConfigType.PROJECT)["nlp"]["resources"] == [quota("a100", 1), quota("hidden", 3)]
    act(
        manager,
        {
            ConfigType.PROJECT: {
                "nlp": {
                    "department": "rnd",
                    "namespaces": ["nlp-team"],
                    "resources": [{"nodePool": "hidden", "gpu": {"deserved": 9}}],
                }
            }
        },
    )
    assert state(ConfigType.PROJECT)["nlp"]["resources"] == [quota("hidden", 3)]
    with pytest.raises(ConfigError, match="pool 'hidden' does not exist"):
        act(manager, {ConfigType.PROJECT: {"vision": {"department": "rnd", "resources": [{"nodePool": "hidden"}]}}})
    with pytest.raises(NotFound):
        act(people["researcher"], {ConfigType.PROJECT: {"nlp": None}})


def test_the_api_takes_runai_field_names_and_answers_them(pools, admin_api):
    body = {
        "name": "infra",
        "resources": [
            {"nodePool": {"id": 7, "name": "v100"}, "gpu": {"deserved": 2, "limit": 4, "overQuotaWeight": "Low"}},
            {"nodePool": "a100", "priority": 200, "cpu": {"deserved": 16.5}, "memory": {"deserved": 32768}},
        ],
    }
    response = admin_api.post("/api/departments/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["resources"] == [
        {
            **quota("a100", priority=200),
            "cpu": {"deserved": 16.5, "limit": -1},
            "memory": {"deserved": 32768, "limit": -1},
        },
        quota("v100", 2, 4, 1),
    ]
    project = admin_api.post("/api/projects/", {"name": "web", "department": "infra"}, format="json")
    assert project.status_code == 201 and project.json()["namespaces"] == ["runai-web"]
    bad = admin_api.post(
        "/api/projects/",
        {"name": "x", "department": "infra", "resources": [{"nodePool": "a100", "gpu": {"deserved": -2}}]},
        format="json",
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"].endswith("resources[0].gpu.deserved")


def test_a_bulk_quota_update_of_departments_and_projects_is_one_request_all_or_nothing(rnd, admin_api):
    bundle = {
        "departments": {"rnd": {"resources": [{"nodePool": "a100", "gpu": {"deserved": 10}}]}},
        "projects": {
            "vision": {"department": "rnd", "resources": [{"nodePool": "a100", "gpu": {"deserved": 7}}]},
            "nlp": {"department": "rnd", "namespaces": ["nlp-team"], "resources": [{"nodePool": "gone"}]},
        },
    }
    before = ConfigRevision.objects.count()
    refused = admin_api.post("/api/configs/import/", bundle, format="json")
    assert refused.status_code == 400 and "pool 'gone' does not exist" in refused.content.decode()
    assert ConfigRevision.objects.count() == before
    bundle["projects"]["nlp"]["resources"] = [{"nodePool": "v100", "gpu": {"deserved": 1}}]
    assert admin_api.post("/api/configs/import/", bundle, format="json").status_code == 200
    assert state(ConfigType.DEPARTMENT)["rnd"]["resources"] == [quota("a100", 10)]
    assert state(ConfigType.PROJECT)["vision"]["resources"] == [quota("a100", 7)]
    assert state(ConfigType.PROJECT)["nlp"]["resources"] == [quota("v100", 1)]
    assert ConfigRevision.objects.count() == before + 2  # one revision per type changed


def test_a_projects_default_namespace_is_a_valid_namespace_name(pools, poolctl):
    assert poolctl("department", "create", "rnd").code == 0
    assert poolctl("project", "create", "Speech_Team.v2", "--department", "rnd").code == 0
    assert state(ConfigType.PROJECT)["Speech_Team.v2"]["namespaces"] == ["runai-speech-team-v2"]


def test_patch_quotas_changes_many_units_figures_in_one_request_and_keeps_the_rest(rnd, admin_api):
    before = ConfigRevision.objects.count()
    response = admin_api.patch(
        "/api/quotas/?description=plan+q3",
        {
            "quotas": [
                {"unit": "rnd", "nodePool": "a100", "gpu": {"deserved": 10}},
                {"unit": "vision", "nodePool": "a100", "gpu": {"limit": 9}},
                {"unit": "nlp", "nodePool": "v100", "priority": 50, "gpu": {"deserved": 1.5}},
            ]
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    assert [r["config_type"] for r in response.json()["revisions"]] == ["DEPARTMENT", "PROJECT"]
    assert ConfigRevision.objects.count() == before + 2  # one revision per type changed
    assert state(ConfigType.DEPARTMENT)["rnd"]["resources"] == [quota("a100", 10, 12, 3), quota("hidden", 2)]
    assert state(ConfigType.PROJECT)["vision"]["resources"] == [quota("a100", 6, 9)]
    assert state(ConfigType.PROJECT)["nlp"]["resources"] == [quota("v100", 1.5, priority=50)]
    assert ConfigRevision.objects.latest("created_at").description == "plan q3"


def test_a_bulk_quota_change_makes_a_fixed_number_of_queries(rnd, admin_api, django_assert_max_num_queries):
    """The session, the roles, the units and pools it checks, one UPDATE per unit, the revisions at once, and the
    warnings after: 20 at most (16 today on SQLite, and PostgreSQL's lock), whatever else the configuration holds."""
    change = {"quotas": [{"unit": "rnd", "nodePool": "a100", "gpu": {"deserved": 9}}]}
    change["quotas"].append({"unit": "vision", "nodePool": "a100", "gpu": {"limit": 8}})
    with django_assert_max_num_queries(20):
        response = admin_api.patch("/api/quotas/", change, format="json")
    assert response.status_code == 200, response.content
    assert [r["config_type"] for r in response.json()["revisions"]] == ["DEPARTMENT", "PROJECT"]


@pytest.mark.parametrize(
    ("item", "status", "field"),
    [
        ({"unit": "nobody", "nodePool": "a100"}, 404, "quotas[1].unit"),
        ({"unit": "nlp", "nodePool": "gone"}, 400, ""),
        ({"unit": "nlp", "nodePool": "a100", "gpu": {"deserved": -2}}, 400, "gpu.deserved"),
        ({"unit": "nlp"}, 400, "quotas[1].nodePool"),
        ("nlp", 400, "quotas[1]"),
    ],
)
def test_one_bad_quota_in_a_bulk_change_writes_nothing(rnd, admin_api, item, status, field):
    before = ConfigRevision.objects.count()
    response = admin_api.patch(
        "/api/quotas/", {"quotas": [{"unit": "rnd", "nodePool": "a100", "gpu": {"deserved": 1}}, item]}, format="json"
    )
    assert response.status_code == status, response.content
    assert field in response.json()["errors"][0]["field"]
    assert ConfigRevision.objects.count() == before
    assert state(ConfigType.DEPARTMENT)["rnd"]["resources"][0]["gpu"]["deserved"] == 8


def test_a_bulk_quota_change_is_gated_per_unit(people, client_for):
    manager = client_for(people["manager"])
    mine = {"unit": "vision", "nodePool": "a100", "gpu": {"deserved": 2}}
    assert manager.patch("/api/quotas/", {"quotas": [mine]}, format="json").status_code == 200
    theirs = {"unit": "rnd", "nodePool": "a100", "gpu": {"deserved": 80}}
    refused = manager.patch("/api/quotas/", {"quotas": [{**mine, "gpu": {"deserved": 3}}, theirs]}, format="json")
    assert refused.status_code == 403
    assert state(ConfigType.PROJECT)["vision"]["resources"][0]["gpu"]["deserved"] == 2
    hidden = {"unit": "infer-x", "nodePool": "a100", "gpu": {"deserved": 1}}
    assert manager.patch("/api/quotas/", {"quotas": [hidden]}, format="json").status_code == 404
    researcher = client_for(people["researcher"])  # may change no quota at all: refused before any is read
    for change in (mine, {"unit": "nlp", "nodePool": "a100"}):
        refused = researcher.patch("/api/quotas/", {"quotas": [change]}, format="json")
        assert refused.status_code == 403 and "config:Update" in refused.json()["errors"][0]["message"]
