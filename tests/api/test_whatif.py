"""The what-if check knows free capacity and quotas (beyond Run:ai and OSMO): per node, whether a request could
start now on the free resources or would wait; with a project, whether it fits the project's deserved quota, runs
over it (preemptible) or goes past its or its department's limit. The same answer on every door: the selector,
``POST /api/pools/{name}/check/``, ``poolctl pool check --project`` and the what-if page."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import NotFound

A100 = {"gpu-type": "A100"}
H100 = {"gpu-type": "H100"}


def gpu_quota(pool, deserved, limit=-1, weight=2):
    return {"nodePool": pool, "gpu": {"deserved": deserved, "limit": limit, "overQuotaWeight": weight}}


@pytest.fixture
def lab(cluster, actor):
    """Pool a100: a-0's 8 GPUs all held by vision, a-1 with 2 of 8 free (nlp 2, infer 4); pool h100: h-0 all free.

    Department rnd (a100: deserved 12, limit 13) holds vision (deserved 10, limit 12) and nlp (deserved 2);
    ops (a100: deserved 4) holds infer (deserved -1: all of ops' share) and strict (deserved 1, no over-quota).
    """
    cluster(
        [
            node("a-0", gpu=8, labels=A100),
            node("a-1", gpu=8, labels=A100),
            node("h-0", gpu=8, labels=H100),
            pod("train-1", node="a-0", gpu=4, namespace="runai-vision"),
            pod("train-2", node="a-0", gpu=4, namespace="runai-vision"),
            pod("tune", node="a-1", gpu=2, namespace="runai-nlp"),
            pod("serve", node="a-1", gpu=4, namespace="runai-infer"),
        ],
        name="lab",
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {
                name: {
                    "backend": "lab",
                    "node_label": {"key": "gpu-type", "value": value},
                    "common_resource_validations": ["default_gpu"],
                }
                for name, value in (("a100", "A100"), ("h100", "H100"))
            }
        },
        actor=actor,
    )
    services.department_create(name="rnd", actor=services.SYSTEM, resources=[gpu_quota("a100", 12, 13)])
    services.department_create(name="ops", actor=services.SYSTEM, resources=[gpu_quota("a100", 4)])
    services.project_create(name="vision", department="rnd", actor=services.SYSTEM)
    services.quota_set(
        unit="vision", pool="a100", figures={"gpu": {"deserved": 10, "limit": 12}}, actor=services.SYSTEM
    )
    services.project_create(name="nlp", department="rnd", actor=services.SYSTEM, resources=[gpu_quota("a100", 2)])
    services.project_create(name="infer", department="ops", actor=services.SYSTEM, resources=[gpu_quota("a100", -1)])
    services.project_create(
        name="strict", department="ops", actor=services.SYSTEM, resources=[gpu_quota("a100", 1, weight=None)]
    )


@pytest.fixture
def reader(lab):
    """Sees pools a100 and h100 and project vision only: not rnd, nlp, ops or their projects."""
    policy = {"actions": ["pool:Read", "project:Read"], "resources": ["pool/a100", "pool/h100", "project/vision"]}
    return person("reader", role("vision-reader", policy), password=None)


def check(pool, gpu, project=None, user=SYSTEM):
    return selectors.pool_check(user=user, pool_name=pool, user_values={"USER_GPU": gpu}, project=project)


# --- starting now or waiting -------------------------------------------------------------------------------


def test_eight_gpus_on_nodes_whose_gpus_are_all_in_use_fit_the_rules_but_wait(lab):
    result = check("a100", 8)
    assert result["passed"] is True  # each node has 8 allocatable GPUs: the rules accept it
    assert (result["starts"], result["start_now_nodes"]) == ("wait", 0)
    assert [(n["node"], n["start"], n["shortfalls"]) for n in result["nodes"]] == [
        ("a-0", "wait", ["needs 8 GPUs, 0 free"]),
        ("a-1", "wait", ["needs 8 GPUs, 2 free"]),
    ]


def test_a_node_with_the_gpus_free_starts_the_request_now(lab):
    assert [(n["node"], n["start"]) for n in check("a100", 2)["nodes"]] == [("a-0", "wait"), ("a-1", "now")]
    idle = check("h100", 8)
    assert (idle["starts"], idle["start_now_nodes"], idle["nodes"][0]["start"]) == ("now", 1, "now")


def test_a_request_no_node_may_hold_starts_nowhere(lab):
    result = check("a100", 9)
    assert result["passed"] is False and result["starts"] == ""
    assert all(n["start"] == "" for n in result["nodes"])


# --- the project's quota -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("project", "gpu", "verdict", "exceeded"),
    [
        ("vision", 2, "within_quota", ""),  # 8 + 2 = its 10 deserved
        ("vision", 3, "over_quota", ""),  # 11 > 10, within its limit 12 and rnd's 13 (10 + 3)
        ("vision", 5, "exceeds_limit", "project"),  # 13 > its limit 12
        ("vision", 4, "exceeds_limit", "department"),  # 12 is its limit, but rnd would hold 14 > 13
        ("nlp", 3, "over_quota", ""),  # no limit of its own; rnd 13, at its limit
        ("nlp", 4, "exceeds_limit", "department"),
        ("infer", 0, "within_quota", ""),  # deserved -1: all of ops' fair share, 4, which it holds
        ("infer", 1, "over_quota", ""),
        ("strict", 2, "exceeds_limit", "project"),  # over its deserved 1 with weight None: no over-quota
        ("strict", 1, "within_quota", ""),
    ],
)
def test_the_quota_verdict(lab, project, gpu, verdict, exceeded):
    quota = check("a100", gpu, project)["quota"]
    assert (quota["verdict"], quota["exceeded"]) == (verdict, exceeded), quota["message"]


def test_the_quota_part_holds_the_numbers_and_a_sentence(lab):
    quota = check("a100", 3, "vision")["quota"]
    assert quota == {
        "project": "vision",
        "department": "rnd",
        "pool": "a100",
        "verdict": "over_quota",
        "exceeded": "",
        "message": (
            "Over quota: project 'vision' on pool 'a100' would hold 11 GPUs, 1 over its 10 deserved, "
            "so it may be preempted"
        ),
        "requested": 3,
        "allocated": 8,
        "pending": 0,
        "deserved": 10,
        "limit": 12,
        "over_quota_weight": 2,
        "fair_share": 8,
        "department_limit": 13,
        "department_allocated": 10,
    }
    assert check("a100", 1, "infer")["quota"]["deserved"] == 4  # -1 read as the whole of ops' share
    assert check("a100", 1)["quota"] is None
    department = check("a100", 4, "vision")["quota"]["message"]
    assert department == (
        "Exceeds the limit: department 'rnd' on pool 'a100' would go over its limit: 14 GPUs, more than 13"
    )


def test_a_project_without_quota_on_the_pool_has_run_ais_defaults(lab):
    quota = check("h100", 1, "vision")["quota"]
    assert (quota["deserved"], quota["limit"], quota["verdict"]) == (0, -1, "over_quota")


def test_an_unknown_project_is_not_found(lab):
    with pytest.raises(NotFound, match="project 'ghost' does not exist"):
        check("a100", 1, "ghost")


def test_a_hidden_project_is_refused_like_a_missing_one_and_a_hidden_departments_limit_still_binds(reader):
    for name in ("nlp", "ghost"):
        with pytest.raises(NotFound) as refused:
            check("a100", 1, name, user=reader)
        assert str(refused.value) == f"project: project '{name}' does not exist"
    quota = check("a100", 4, "vision", user=reader)["quota"]
    assert (quota["verdict"], quota["exceeded"]) == ("exceeds_limit", "department")
    assert quota["message"] == "Exceeds the limit: department 'rnd' on pool 'a100' would go over its limit"
    assert (quota["department_limit"], quota["department_allocated"]) == (None, None)


# --- the doors ----------------------------------------------------------------------------------------------


def test_the_api_and_the_cli_give_the_same_answer(lab, admin_api, poolctl):
    answer = admin_api.post(
        "/api/pools/a100/check/", {"variables": {"USER_GPU": 8}, "project": "vision"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    cli = poolctl("pool", "check", "a100", "--set", "USER_GPU=8", "--project", "vision", "--format", "json")
    assert cli.code == 0 and cli.json() == answer.json()
    assert answer.json()["starts"] == "wait" and answer.json()["quota"]["verdict"] == "exceeds_limit"
    plain = admin_api.post("/api/pools/a100/check/", {"variables": {"USER_GPU": 1}}, format="json")
    assert plain.json()["quota"] is None


def test_the_cli_prints_the_quota_verdict_and_the_start_column(lab, poolctl):
    result = poolctl("pool", "check", "a100", "--set", "USER_GPU=2", "--project", "vision")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "Pool a100, platform default: PASSED, starts now"
    assert lines[1] == "Quota: Within quota: project 'vision' on pool 'a100' would hold 10 of its 10 deserved GPUs"
    assert lines[3].split() == ["Node", "Result", "Start", "Failed", "rules"]
    assert lines[5].split() == ["a-0", "pass", "wait", "(needs", "2", "GPUs,", "0", "free)"]
    assert lines[6].split() == ["a-1", "pass", "now"]
    waits = poolctl("pool", "check", "a100", "--set", "USER_GPU=8").out.splitlines()[0]
    assert waits == "Pool a100, platform default: PASSED, would wait: no node has it free now"


def test_every_door_refuses_a_hidden_project_like_a_missing_one(reader, client_for, poolctl, client):
    api = client_for(reader)
    client.force_login(reader)
    answers = {}
    for name in ("nlp", "ghost"):
        refused = api.post("/api/pools/a100/check/", {"variables": {"USER_GPU": 1}, "project": name}, format="json")
        assert refused.status_code == 404
        assert refused.json() == {"errors": [{"field": "project", "message": f"project '{name}' does not exist"}]}
        cli = poolctl("--as", "reader", "pool", "check", "a100", "--set", "USER_GPU=1", "--project", name)
        assert cli.code == 1 and f"project '{name}' does not exist" in cli.err
        page = client.get("/what-if/", {"pool": "a100", "gpu": "1", "cpu": "1", "project": name})
        assert page.status_code == 200
        result = page.content.decode().split('<section id="what-if-result"', 1)[1].split("</section>", 1)[0]
        answers[name] = result.replace(name, "NAME")
        assert "Select a valid choice" in answers[name]
    assert answers["nlp"] == answers["ghost"]
    assert (
        api.post("/api/pools/a100/check/", {"variables": {"USER_GPU": 1}, "project": "vision"}, format="json").json()[
            "quota"
        ]["verdict"]
        == "within_quota"
    )


def test_the_page_offers_visible_projects_and_shows_the_quota_and_the_start_column(reader, client):
    client.force_login(reader)
    form = client.get("/what-if/?pool=a100").content.decode()
    assert '<label for="id_project">Project</label>' in form
    assert '<option value="vision">vision</option>' in form and "nlp" not in form
    page = client.get(
        "/what-if/", {"pool": "a100", "cpu": "1", "gpu": "3", "memory": "1Gi", "storage": "1Gi", "project": "vision"}
    ).content.decode()
    assert "over quota (preemptible)" in page
    assert "project &#x27;vision&#x27; on pool &#x27;a100&#x27; would hold 11 GPUs, 1 over its 10 deserved" in page
    assert "starts now" not in page  # a-1 has only 2 GPUs free
    assert "needs 3 GPUs, 0 free" in page and "needs 3 GPUs, 2 free" in page
    assert "Would wait: no node has the resources free now." in page
