"""Members of departments and projects and what they see (SEMANTICS §9.4, §10's researcher, §7.4 on every door).

A researcher, a viewer, a department admin of another department and someone with no project and no role are
sent through every door that reaches a project or its workloads (the project pages, the quota API, My projects,
the workloads' when they exist, ``poolctl``): each sees their own units and nothing else, and what they may not see
answers exactly as what does not exist. Members are part of the unit's config: checked, given only by someone who
administers the unit and never with more than they hold, on the API, the form and ``poolctl`` alike.
"""

from __future__ import annotations

import json
import re

import pytest
from kube_objects import node, pod
from people import api_client, idp_person, member, person, run_poolctl, service_account, signed_in

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import ConfigError, Problem
from pools.engine.members import (
    Identity,
    member_matches,
    members_added,
    memberships,
    normalize_members,
    parse_member_spec,
    unit_policies,
)
from pools.engine.policy import RoleDefinition, evaluate_access, ungranted
from pools.models import ConfigRevision, Department, Project

# --- the pure rules ------------------------------------------------------------------------------------------------


def test_members_are_checked_and_put_in_one_order():
    members, problems = normalize_members(
        [{"kind": "user", "name": "rita", "role": "researcher"}, {"kind": "group", "name": "/a", "role": "viewer"}],
        unit_kind="project",
        where="project 'p'",
    )
    assert problems == [] and [m["kind"] for m in members] == ["group", "user"]
    _, problems = normalize_members(
        [
            {"kind": "robot", "name": "x", "role": "viewer"},
            {"kind": "user", "name": " x", "role": "viewer"},
            {"kind": "user", "name": "y", "role": "admin"},
            {"kind": "user", "name": "z", "role": "viewer", "extra": 1},
            {"kind": "user", "name": "w", "role": "viewer"},
            {"kind": "user", "name": "w", "role": "researcher"},
            "w",
        ],
        unit_kind="project",
        where="project 'p'",
    )
    assert [problem.field for problem in problems] == [
        "project 'p'.members[0].kind",
        "project 'p'.members[1].name",
        "project 'p'.members[2].role",
        "project 'p'.members[3].extra",
        "project 'p'.members[5].name",
        "project 'p'.members[6]",
    ]
    assert "a department's role" in problems[2].message
    assert normalize_members({"kind": "user"}, unit_kind="department", where="d")[1] == [
        Problem("d.members", 'must be a list of {"kind", "name", "role"}')
    ]
    assert normalize_members([{"name": "dana", "role": "admin"}], unit_kind="department", where="d")[1] == []


def test_groups_match_whole_values_and_service_accounts_only_as_such():
    gina = Identity("gina", groups=frozenset({"/rnd-team", "/org/ml"}))
    assert member_matches({"kind": "group", "name": "/rnd-team"}, gina)
    assert member_matches({"kind": "group", "name": "rnd-team"}, gina)  # a top-level group by its name
    assert member_matches({"kind": "group", "name": "/org/ml"}, gina)
    assert not member_matches({"kind": "group", "name": "ml"}, gina)  # never a part of a path
    assert not member_matches({"kind": "group", "name": "/org"}, gina)
    assert not member_matches({"kind": "user", "name": "rnd-team"}, gina)
    bot = Identity("ci-bot", service_account=True)
    assert member_matches({"kind": "service_account", "name": "ci-bot"}, bot)
    assert not member_matches({"kind": "user", "name": "ci-bot"}, bot)
    assert not member_matches({"kind": "service_account", "name": "ci-bot"}, Identity("ci-bot"))


def test_a_department_member_belongs_to_its_projects_with_the_strongest_role():
    found = memberships(
        Identity("dana"),
        {"rnd": [{"kind": "user", "name": "dana", "role": "admin"}], "ops": []},
        {
            "vision": ("rnd", [{"kind": "user", "name": "dana", "role": "viewer"}]),
            "nlp": ("rnd", []),
            "infra": ("ops", [{"kind": "user", "name": "dana", "role": "researcher"}]),
        },
    )
    assert [(m.kind, m.name, m.role, m.via) for m in found] == [
        ("department", "rnd", "admin", ""),
        ("project", "infra", "researcher", ""),
        ("project", "nlp", "admin", "rnd"),
        ("project", "vision", "admin", "rnd"),
    ]


def test_what_a_role_allows_and_who_may_give_it():
    admin = RoleDefinition("(membership)", unit_policies("department", "rnd", "admin", projects=["nlp", "vision"]))
    assert evaluate_access([admin], "department:Update", "department/rnd").allowed
    assert evaluate_access([admin], "project:Read", "project/vision").allowed
    assert not evaluate_access([admin], "project:Read", "project/infra").allowed
    assert not evaluate_access([admin], "department:Update", "department/ops").allowed
    viewer = RoleDefinition("(membership)", unit_policies("project", "vision", "viewer"))
    assert evaluate_access([viewer], "project:Read", "project/vision").allowed
    assert not evaluate_access([viewer], "config:Update", "config/PROJECT").allowed
    # the no-escalation rule: a viewer of vision cannot make anyone an admin of rnd
    assert ungranted([viewer], admin.policies) != []
    assert ungranted([admin], unit_policies("project", "vision", "researcher")) == []
    assert members_added(
        [{"kind": "user", "name": "a", "role": "viewer"}, {"kind": "user", "name": "b", "role": "viewer"}],
        [{"kind": "user", "name": "a", "role": "researcher"}, {"kind": "user", "name": "b", "role": "viewer"}],
    ) == [{"kind": "user", "name": "a", "role": "researcher"}]


def test_a_member_spec_is_kind_name_role():
    assert parse_member_spec("group:/org/team-a:viewer") == {"kind": "group", "name": "/org/team-a", "role": "viewer"}
    assert parse_member_spec("user:rita:researcher")["name"] == "rita"
    with pytest.raises(ConfigError, match="KIND:NAME:ROLE"):
        parse_member_spec("rita")


# --- the world the doors are tried on ----------------------------------------------------------------------------

RITA = {"kind": "user", "name": "rita", "role": "researcher"}


@pytest.fixture
def world(cluster, actor):
    """Pool a100 (8 GPUs); department rnd (admin dana, IdP group /rnd-team as viewers) with projects vision
    (researcher rita, viewer vic, service account ci-bot) and nlp; department ops (admin otto) with project infra.
    vision runs 2 GPUs and waits for 4; infra waits for 2. vic and the admins see the pool (a role); rita, gina,
    ci-bot and nobody hold no role at all."""
    cluster(
        [
            node("a-0", labels={"gpu-type": "A100"}, gpu=8),
            pod("vision-run", node="a-0", gpu=2, namespace="runai-vision"),
            pod("vision-wait", gpu=4, namespace="runai-vision", phase="Pending", pool="a100"),
            pod("infra-wait", gpu=2, namespace="runai-infra", phase="Pending", pool="a100"),
        ],
        name="lab",
    )
    a100 = {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}}
    services.config_apply(changes={ConfigType.POOL: {"a100": a100}}, actor=actor)
    quota = [{"nodePool": "a100", "gpu": {"deserved": 4}}]
    admin_of = {"kind": "user", "role": "admin"}
    services.department_create(
        name="rnd",
        actor=actor,
        resources=quota,
        members=[{**admin_of, "name": "dana"}, {"kind": "group", "name": "/rnd-team", "role": "viewer"}],
    )
    services.department_create(name="ops", actor=actor, resources=quota, members=[{**admin_of, "name": "otto"}])
    vision_members = [
        RITA,
        {"kind": "user", "name": "vic", "role": "viewer"},
        {"kind": "service_account", "name": "ci-bot", "role": "researcher"},
    ]
    services.project_create(
        name="vision",
        department="rnd",
        actor=actor,
        resources=[{"nodePool": "a100", "gpu": {"deserved": 2}}],
        members=vision_members,
    )
    services.project_create(name="nlp", department="rnd", actor=actor)
    services.project_create(name="infra", department="ops", actor=actor)
    # the admins see the pool (a quota is changed only on a pool one sees, SEMANTICS §7.1)
    sees_a100 = {"effect": "Allow", "actions": ["pool:Read"], "resources": ["pool/a100"]}
    services.config_apply(changes={ConfigType.ROLE: {"a100-readers": {"policies": [sees_a100]}}}, actor=actor)
    people = {name: person(name, password=None) for name in ("rita", "nobody")}
    people.update({name: person(name, "a100-readers", password=None) for name in ("vic", "dana", "otto")})
    people["gina"] = idp_person("gina", "/rnd-team", "/org/ml")
    people["ci-bot"] = service_account("ci-bot")
    return people


def test_projects_of_counts_users_groups_service_accounts_and_departments(world):
    assert selectors.projects_of(world["rita"]) == {"vision"}
    assert selectors.projects_of(world["vic"]) == {"vision"}
    assert selectors.projects_of(world["ci-bot"]) == {"vision"}
    assert selectors.projects_of(world["dana"]) == {"vision", "nlp"}
    assert selectors.projects_of(world["gina"]) == {"vision", "nlp"}  # through the IdP group /rnd-team
    assert selectors.projects_of(world["otto"]) == {"infra"}
    assert selectors.projects_of(world["nobody"]) == set()
    assert selectors.units_of(world["gina"]) == [
        {"kind": "department", "name": "rnd", "role": "viewer", "via": ""},
        {"kind": "project", "name": "nlp", "role": "viewer", "via": "rnd"},
        {"kind": "project", "name": "vision", "role": "viewer", "via": "rnd"},
    ]
    # the groups are those of the last sign-in: out of /rnd-team, out of rnd and its projects
    assert selectors.projects_of(idp_person("gina", "/org/rnd-team")) == set()


# What each person finds among the projects and the departments on every door that lists them, and whose waiting
# workloads on the workloads' doors (§10: their projects', and those of the pools their roles show).
SEES = {
    "rita": ({"vision"}, set(), {"vision"}),
    "vic": ({"vision"}, set(), {"vision", "infra"}),
    "otto": ({"infra"}, {"ops"}, {"vision", "infra"}),
    "nobody": (set(), set(), set()),
}


def _missing_like(client, url: str, hidden: str, absent: str):
    """A hidden object answers as one that does not exist: the same status and the same words."""
    shown, missing = client.get(url.format(hidden)), client.get(url.format(absent))
    assert shown.status_code == missing.status_code == 404
    assert _words(shown).replace(hidden, "X") == _words(missing).replace(absent, "X")


def _words(answer) -> str:
    """An answer's text without its per-response CSRF token."""
    return re.sub(r"[A-Za-z0-9]{64}", "TOKEN", answer.content.decode())


def test_each_person_sees_their_units_and_nothing_else_on_every_door(world):
    for who, (projects, departments, workloads) in SEES.items():
        _sees_only(world[who], who, projects, departments, workloads)


def _sees_only(user, who: str, projects: set[str], departments: set[str], workloads: set[str]) -> None:
    api, browser = api_client(user), signed_in(user)
    listed = api.get("/api/projects/").json()
    assert {row["name"] for row in listed.get("results", listed)} == projects
    listed = api.get("/api/departments/").json()
    assert {row["name"] for row in listed.get("results", listed)} == departments
    for project in ("vision", "nlp", "infra"):
        answer = api.get(f"/api/projects/{project}/")
        assert answer.status_code == (200 if project in projects else 404)
        if project not in projects:
            _missing_like(api, "/api/projects/{}/", project, "no-such-project")
            _missing_like(browser, "/projects/{}/edit/", project, "no-such-project")
    quota_units = {row["unit"] for row in api.get("/api/quotas/").json()["quotas"]}
    assert quota_units <= projects | departments
    page = browser.get("/projects/").content.decode()
    assert {name for name in ("vision", "nlp", "infra") if f'data-project="{name}"' in page} == projects
    mine = api.get("/api/my/projects/").json()["units"]
    assert {unit["name"] for unit in mine if unit["kind"] == "project"} == projects
    waiting = {w["name"] for unit in mine for w in unit["pending_workloads"]}
    assert waiting == {f"{project}-wait" for project in projects if project != "nlp"}
    page = browser.get("/my/projects/")
    assert page.status_code == 200
    assert ('href="/my/projects/"' in page.content.decode()) == bool(projects | departments)
    verb = run_poolctl("--as", who, "my", "projects", "--json")
    assert verb.code == 0 and verb.json()["units"] == mine
    verb = run_poolctl("--as", who, "project", "list", "--json")
    assert {row["name"] for row in verb.json()["projects"]} == projects
    _workloads_seen(api, workloads)


def _workloads_seen(api, projects: set[str]) -> None:
    """The workloads' API (SEMANTICS §10), where the console has it: the workloads of one's projects, and of the
    pools one's roles show, nothing else."""
    from django.urls import NoReverseMatch, reverse

    try:
        url = reverse("api:workload-list")
    except NoReverseMatch:
        return
    answer = api.get(url)
    assert answer.status_code == 200
    text = json.dumps(answer.json())
    for project in ("vision", "infra"):
        assert (f"{project}-wait" in text) == (project in projects)


def test_my_projects_shows_the_quota_reports_figures_and_why_each_workload_waits(world, monkeypatch):
    verdict = {"reason": "over_fair_share", "checks": [{"reason": "over_fair_share", "message": "above its share"}]}
    monkeypatch.setattr(
        "pools.selectors.membership._pending_verdicts",
        lambda keys: {(_backend_id(), "runai-vision", "Pod", "vision-wait"): verdict},
    )
    (vision,) = api_client(world["vic"]).get("/api/my/projects/").json()["units"]
    report = {(row["unit"], row["pool"]): row for row in selectors.quota_report(user=SYSTEM)["quotas"]}
    (row,) = vision["pools"]
    expected = report["vision", "a100"]
    assert row == {"pool": "a100", **{key: expected[key] for key in row if key != "pool"}}
    assert (row["deserved"], row["allocated"], row["pending"]) == (2, 2, 4)
    assert vision["role"] == "viewer" and vision["department"] == "rnd"
    (waiting,) = vision["pending_workloads"]
    assert (waiting["name"], waiting["gpus"], waiting["pool"], waiting["reason"]) == (
        "vision-wait",
        4,
        "a100",
        "over_fair_share",
    )
    page = signed_in(world["vic"]).get("/my/projects/").content.decode()
    assert 'data-workload="runai-vision/vision-wait"' in page and "over_fair_share" in page
    text = run_poolctl("--as", "vic", "my", "projects").out
    assert "project/vision" in text and "vision-wait" in text and "over_fair_share" in text
    # a researcher whose roles show no pool sees their project's waiting workload and its reason, and no pool
    (vision,) = api_client(world["rita"]).get("/api/my/projects/").json()["units"]
    assert vision["pools"] == [] and [(w["name"], w["pool"], w["reason"]) for w in vision["pending_workloads"]] == [
        ("vision-wait", "", "over_fair_share")
    ]


def _backend_id() -> int:
    from pools.models import Backend

    return Backend.objects.get(name="lab").pk


# --- changing members: checked, administered, never escalating ----------------------------------------------------


def _members(config_type: ConfigType, name: str) -> list[dict]:
    return selectors.config_state([config_type])[config_type][name]["members"]


def test_bad_members_are_refused_on_every_door_and_change_nothing(world):
    before = _members(ConfigType.PROJECT, "vision")
    bad = [{"kind": "user", "name": "x", "role": "boss"}]
    answer = api_client(world["dana"]).patch("/api/projects/vision/", {"members": bad}, format="json")
    assert answer.status_code == 400
    assert "members[0].role" in json.dumps(answer.json()) and "'boss' is not one of researcher, viewer" in str(
        answer.json()
    )
    verb = run_poolctl("--as", "dana", "project", "members", "vision", "--member", "user:x:admin")
    assert verb.code != 0 and "admin is a department's role" in verb.err
    verb = run_poolctl("--as", "dana", "project", "members", "vision", "--member", "rita")
    assert verb.code != 0 and "KIND:NAME:ROLE" in verb.err
    form = _form(world["dana"], "vision", "user:x:boss")
    assert (
        form.status_code == 400 and "line 1: &#x27;boss&#x27; is not one of researcher, viewer" in form.content.decode()
    )
    assert _members(ConfigType.PROJECT, "vision") == before


def _form(user, project: str, members: str):
    """Saves the project's form as its editor shows it, with ``members`` typed in."""
    browser = signed_in(user)
    page = browser.get(f"/projects/{project}/edit/")
    assert page.status_code == 200
    form = page.context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data = {name: value for name, value in data.items() if value is not False}
    data.update(members=members, version=page.context["version"], department="rnd")
    return browser.post(f"/projects/{project}/edit/", data)


def test_a_department_admin_changes_its_projects_members_and_quotas_on_every_door(world):
    dana = world["dana"]
    answer = api_client(dana).patch("/api/projects/nlp/", {"members": [RITA]}, format="json")
    assert answer.status_code == 200, answer.content
    assert selectors.projects_of(_fresh("rita")) == {"vision", "nlp"}
    assert _form(dana, "nlp", "user:vic:viewer\ngroup:/ml:researcher").status_code == 302
    assert _members(ConfigType.PROJECT, "nlp") == [
        {"kind": "group", "name": "/ml", "role": "researcher"},
        {"kind": "user", "name": "vic", "role": "viewer"},
    ]
    assert run_poolctl("--as", "dana", "project", "members", "nlp", "--member", "user:rita:viewer").code == 0
    assert _members(ConfigType.PROJECT, "nlp") == [{"kind": "user", "name": "rita", "role": "viewer"}]
    change = {"quotas": [{"unit": "nlp", "nodePool": "a100", "gpu": {"deserved": 1}}]}
    assert api_client(dana).patch("/api/quotas/", change, format="json").status_code == 200
    assert run_poolctl("--as", "dana", "quota", "set", "vision", "--pool", "a100", "--gpu-deserved", "1").code == 0
    # ...and nothing of another department's, which does not exist for them
    for who, project in (("dana", "infra"), ("otto", "nlp")):
        answer = api_client(world[who]).patch(f"/api/projects/{project}/", {"members": [RITA]}, format="json")
        assert answer.status_code == 404
        change = {"quotas": [{"unit": project, "nodePool": "a100", "gpu": {"deserved": 1}}]}
        assert api_client(world[who]).patch("/api/quotas/", change, format="json").status_code == 404
        assert run_poolctl("--as", who, "project", "members", project, "--member", "user:x:viewer").code != 0
    assert Project.objects.get(name="infra").members == [] and Project.objects.get(name="nlp").members == [
        {"kind": "user", "name": "rita", "role": "viewer"}
    ]


def test_members_are_given_only_by_who_administers_the_unit_never_beyond_what_they_hold(world):
    # a researcher and a viewer see their project but may not change who belongs to it
    for who in ("rita", "vic"):
        answer = api_client(world[who]).patch("/api/projects/vision/", {"members": []}, format="json")
        assert answer.status_code == 403
        assert run_poolctl("--as", who, "project", "members", "vision").code != 0
        assert signed_in(world[who]).get("/projects/vision/edit/").status_code == 403
    # a department's admin manages its projects, not the department's own members (config:Update on departments)
    answer = api_client(world["dana"]).patch(
        "/api/departments/rnd/", {"members": [{"kind": "user", "name": "dana", "role": "admin"}]}, format="json"
    )
    assert answer.status_code == 403
    # one who may change departments but does not manage rnd may not say who belongs to it
    role = {
        "effect": "Allow",
        "actions": ["config:Update", "department:Read"],
        "resources": ["config/DEPARTMENT", "department/*"],
    }
    services.config_apply(
        changes={ConfigType.ROLE: {"unit-editor": {"policies": [role]}}}, actor=services.Actor.system("tester")
    )
    editor = person("eddie", "unit-editor", password=None)
    admin_of_rnd = [{"kind": "user", "name": "eddie", "role": "admin"}]
    answer = api_client(editor).patch("/api/departments/rnd/", {"members": admin_of_rnd}, format="json")
    assert answer.status_code == 403 and "department:Update on department/rnd" in answer.content.decode()
    # one who manages rnd but may not change projects cannot make an admin, who could
    manager = {"effect": "Allow", "actions": ["department:Update"], "resources": ["department/rnd"]}
    services.config_apply(
        changes={ConfigType.ROLE: {"unit-editor": {"policies": [role, manager]}}},
        actor=services.Actor.system("tester"),
    )
    answer = api_client(_fresh("eddie")).patch("/api/departments/rnd/", {"members": admin_of_rnd}, format="json")
    assert answer.status_code == 403
    assert "making user 'eddie' admin of department 'rnd' would allow project:Read on project/nlp" in str(
        answer.json()
    ) and "which you are not allowed yourself" in str(answer.json())
    viewer_of_rnd = [{"kind": "user", "name": "eddie", "role": "viewer"}]  # a viewer of rnd also sees its projects
    answer = api_client(_fresh("eddie")).patch("/api/departments/rnd/", {"members": viewer_of_rnd}, format="json")
    assert answer.status_code == 403
    viewers = [{"kind": "user", "name": "dana", "role": "admin"}, {"kind": "group", "name": "/x", "role": "viewer"}]
    assert Department.objects.get(name="rnd").members != viewers  # nothing was written by the refusals
    with pytest.raises(ConfigError):  # and a bad member is refused by the service whoever asks
        services.unit_members_set(
            kind="department", name="rnd", members=[{"kind": "x"}], actor=services.Actor.system("t")
        )


def test_members_are_in_the_revisions_diffs_and_rollback(world, actor):
    before = _members(ConfigType.PROJECT, "vision")
    member("vision", "user:rita:researcher")  # poolctl project members, as the operator
    revisions = list(ConfigRevision.objects.filter(config_type=ConfigType.PROJECT).order_by("revision"))
    assert revisions[-1].snapshot["vision"]["members"] == [RITA] and revisions[-1].changed == ["vision"]
    made = [revision.revision for revision in revisions[:-1] if "vision" in revision.changed][-1]
    diff = selectors.config_diff(config_type=ConfigType.PROJECT, user=world["dana"], revision=made)
    assert any(line.startswith("-") and "vic" in line for line in diff.splitlines())
    assert selectors.projects_of(_fresh("vic")) == set()
    services.config_rollback(config_type=ConfigType.PROJECT, revision=revisions[-2].revision, actor=actor)
    assert _members(ConfigType.PROJECT, "vision") == before
    assert selectors.projects_of(_fresh("vic")) == {"vision"}


def _fresh(username: str):
    """The user as the next request reads them (what they may do is worked out once a request)."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)
