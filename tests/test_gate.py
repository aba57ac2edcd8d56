"""SEMANTICS.md §7.1: one decision per change, whatever the door; nothing leaks on any read.

The people here are made as an administrator makes them (``poolctl user create``), and each attack of the
gate issue is tried through every door that reaches the same object: the REST endpoint, the generic
``/api/configs/`` endpoint, bundle import, the web editors, the Django admin and ``poolctl --as``.
"""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError
from django.test import Client
from kube_objects import node, pod
from people import person, poolctl, role, service_account, signed_in
from rest_framework.test import APIClient

from accounts import services as account_services
from accounts.access import SYSTEM, user_can
from accounts.models import Role
from pools import configs, selectors, services
from pools.choices import TYPE_LABELS, ConfigType
from pools.engine.errors import AccessDenied, ConfigError
from pools.models import ConfigRevision, PodTemplate, Pool, UsageSample

EVIL_ROLE = {"description": "", "policies": [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}]}
FILE_BACKEND = {"kind": "file", "source": "/etc/shadow"}


@pytest.fixture
def estate(cluster, actor):
    """One cluster with pools team-a, team-a-gpu and robotics-training, and the people of the attacks.

    - mallory may read and change every config type (``config:*`` on ``config/*``) and nothing else;
    - tess holds ``osmo-team-a`` (the team-a pools) and may change pools and read templates;
    - rita holds ``osmo-user`` with a Deny on the robotics pools.
    """
    cluster(
        [
            node("n1", labels={"team": "a"}, gpu=8),
            node("n2", labels={"team": "r"}, gpu=8),
            pod("train-1", node="n1", gpu=2, pool="team-a"),
            pod("robot-1", node="n2", gpu=4, pool="robotics-training"),
        ]
    )
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "a": {"spec": {"nodeSelector": {"team": "a"}}},
                "r": {"spec": {"nodeSelector": {"team": "r"}}},
            },
            ConfigType.POOL: {
                "team-a": {"backend": "test-cluster", "common_pod_template": ["a"]},
                "team-a-gpu": {"backend": "test-cluster", "common_pod_template": ["a"]},
                "robotics-training": {"backend": "test-cluster", "common_pod_template": ["r"]},
            },
        },
        actor=actor,
    )
    poolctl("role", "set", "osmo-team-a", "pool")
    role("config-editor", {"actions": ["config:Read", "config:Update"], "resources": ["config/*"]})
    role(
        "pool-editor",
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
        {"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE"]},
    )
    role("no-robotics", {"effect": "Deny", "actions": ["*"], "resources": ["pool/robotics*"]})
    services.usage_sample_record()
    return {
        "mallory": person("mallory", "config-editor"),
        "tess": person("tess", "osmo-team-a", "pool-editor"),
        "rita": person("rita", "osmo-user", "no-robotics"),
        "root": person("root", is_superuser=True, is_staff=True),
    }


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def revisions() -> int:
    return ConfigRevision.objects.count()


# --- no escalation -------------------------------------------------------------------------------------------


def test_a_config_editor_cannot_make_an_administrator_role_through_any_door(estate, tmp_path):
    mallory = estate["mallory"]
    before = revisions()
    assert api(mallory).post("/api/configs/ROLE/?name=evil", EVIL_ROLE, format="json").status_code == 404
    assert api(mallory).post("/api/roles/", {"name": "evil", **EVIL_ROLE}, format="json").status_code == 404
    assert api(mallory).post("/api/configs/import/", {"roles": {"evil": EVIL_ROLE}}, format="json").status_code == 404
    page = signed_in(mallory).post("/config/roles/new/", {"name": "evil", "body": json.dumps(EVIL_ROLE)})
    assert page.status_code == 404
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(EVIL_ROLE))
    with pytest.raises(CommandError, match="role 'evil' does not exist"):
        poolctl("--as", "mallory", "config", "update", "ROLE", "evil", "--file", str(path))
    assert not Role.objects.filter(name="evil").exists() and revisions() == before
    assert not user_can(mallory, "role:Update", "role/osmo-admin").allowed


def test_a_role_reader_still_cannot_write_a_role_allowing_more_than_they_hold(estate):
    role("role-reader", {"actions": ["role:Read"], "resources": ["role/*"]})
    poolctl("user", "set-roles", "mallory", "config-editor,role-reader")
    mallory = estate["mallory"]
    response = api(mallory).post("/api/configs/ROLE/?name=evil", EVIL_ROLE, format="json")
    assert response.status_code == 403
    assert "would allow *:* on *, which you are not allowed yourself" in response.json()["errors"][0]["message"]
    # A role within what the writer holds is fine: no escalation, no refusal.
    modest = {"policies": [{"actions": ["config:Read"], "resources": ["config/POOL"]}]}
    assert api(mallory).post("/api/configs/ROLE/?name=modest", modest, format="json").status_code == 200
    # Widening osmo-user (held by many) is the same escalation, through the REST endpoint as well.
    widened = {"policies": [{"actions": ["*"], "resources": ["*"]}]}
    assert api(mallory).patch("/api/roles/osmo-user/", widened, format="json").status_code == 403


def test_a_config_editor_cannot_create_a_backend_they_may_not_see(estate):
    mallory = estate["mallory"]
    before = revisions()
    assert api(mallory).post("/api/configs/BACKEND/?name=sneaky", FILE_BACKEND, format="json").status_code == 404
    assert api(mallory).post("/api/backends/", {"name": "sneaky", **FILE_BACKEND}, format="json").status_code == 404
    assert api(mallory).get("/api/backends/test-cluster/").status_code == 404
    assert revisions() == before


def test_nobody_changes_their_own_roles_and_gives_only_roles_they_hold(estate):
    role("user-admin", {"actions": ["user:*"], "resources": ["user/*"]}, {"actions": ["*:Read"], "resources": ["*"]})
    uma = person("uma", "user-admin", "osmo-user")
    with pytest.raises(AccessDenied, match="your own roles"):
        account_services.user_roles_set(principal=uma, username="uma", roles=["osmo-admin"])
    with pytest.raises(AccessDenied, match="giving role 'osmo-admin' would allow"):
        account_services.user_roles_set(principal=uma, username="rita", roles=["osmo-admin"])
    refused = api(uma).put("/api/users/rita/roles/", {"roles": ["osmo-admin"]}, format="json")
    assert refused.status_code == 403
    assert api(uma).put("/api/users/rita/roles/", {"roles": ["osmo-user"]}, format="json").status_code == 200
    with pytest.raises(CommandError, match="permission denied: you may not change your own roles"):
        poolctl("--as", "uma", "user", "set-roles", "uma", "osmo-admin")
    assert signed_in(uma).post("/access/users/uma/", {"roles": ["osmo-admin"]}).status_code == 403
    assert sorted(estate["rita"].groups.values_list("name", flat=True)) == ["osmo-user"]


def test_a_token_acting_for_a_stronger_service_account_is_refused(estate):
    role("user-admin", {"actions": ["user:*"], "resources": ["user/*"]}, {"actions": ["*:Read"], "resources": ["*"]})
    uma = person("uma", "user-admin", "osmo-user")
    service_account("robot", "osmo-admin")
    response = api(uma).post("/api/users/robot/tokens/", {"name": "steal"}, format="json")
    assert response.status_code == 403
    service_account("reader-bot", "osmo-user")
    made = api(uma).post("/api/users/reader-bot/tokens/", {"name": "ok"}, format="json")
    assert made.status_code == 201 and made["Cache-Control"] == "no-store"
    assert api(None).get("/api/pools/", HTTP_AUTHORIZATION=f"Bearer {made.json()['token']}").status_code == 200


def test_service_accounts_sign_in_with_tokens_only(estate):
    robot = service_account("robot", "osmo-user")
    assert not robot.has_usable_password()
    assert not Client().login(username="robot", password="")


# --- what a writer may not see does not exist for them, on every door -------------------------------------


def test_a_team_reads_and_writes_another_teams_pool_through_no_door(estate, tmp_path):
    tess = estate["tess"]
    before = revisions()
    assert api(tess).get("/api/pools/robotics-training/").status_code == 404
    assert api(tess).get("/api/configs/POOL/?name=robotics-training").status_code == 404
    assert "robotics-training" not in api(tess).get("/api/configs/POOL/").json()
    body = {**configs.pool_body(Pool.objects.get(name="robotics-training")), "enable_maintenance": True}
    assert api(tess).post("/api/configs/POOL/?name=robotics-training", body, format="json").status_code == 404
    assert api(tess).put("/api/pools/robotics-training/", body, format="json").status_code == 404
    bundle = {"pools": {"robotics-training": body}}
    assert api(tess).post("/api/configs/import/", bundle, format="json").status_code == 404
    assert signed_in(tess).post("/pools/robotics-training/maintenance/", {"enable": "1"}).status_code == 404
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(body))
    with pytest.raises(CommandError, match="pool 'robotics-training' does not exist"):
        poolctl("--as", "tess", "config", "update", "POOL", "robotics-training", "--file", str(path))
    assert revisions() == before and not Pool.objects.get(name="robotics-training").enable_maintenance
    # Its own pools it may change, through the same doors.
    mine = {**configs.pool_body(Pool.objects.get(name="team-a")), "enable_maintenance": True}
    assert api(tess).post("/api/configs/POOL/?name=team-a", mine, format="json").status_code == 200
    assert signed_in(tess).post("/pools/team-a/maintenance/", {"enable": "0"}).status_code == 302


def test_history_diffs_and_revisions_show_only_what_the_reader_may_see(estate):
    tess = estate["tess"]
    created = next(r for r in ConfigRevision.objects.filter(config_type="POOL") if "robotics-training" in r.changed)
    history = api(tess).get("/api/configs/history/?config_type=POOL").json()["results"]
    assert history and all("robotics" not in json.dumps(row) for row in history)
    # The revision that created it also created team-a: tess sees it, without robotics-training.
    revision = api(tess).get(f"/api/configs/POOL/{created.revision}/")
    assert revision.status_code == 200 and "robotics" not in revision.content.decode()
    page = signed_in(tess).get(f"/history/POOL/{created.revision}/")
    assert page.status_code == 200 and "robotics" not in page.content.decode()
    # A revision that changed only robotics-training does not exist for tess.
    services.pool_maintenance_set(name="robotics-training", enable=True, actor=services.SYSTEM)
    hidden = ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first()
    assert api(tess).get(f"/api/configs/POOL/{hidden.revision}/").status_code == 404
    assert signed_in(tess).get(f"/history/POOL/{hidden.revision}/").status_code == 404
    diff = api(tess).get(f"/api/configs/POOL/diff/?from={created.revision}").json()
    assert "robotics" not in diff["diff"]
    shown = poolctl("--as", "tess", "config", "show", "POOL")
    assert "team-a" in shown and "robotics" not in shown
    assert "robotics" not in poolctl("--as", "tess", "config", "history", "POOL")


def test_a_deny_hides_a_pools_pods_nodes_and_usage_even_from_a_fleet_reader(estate):
    rita = estate["rita"]
    assert api(rita).get("/api/pods/?pool=robotics-training").json()["results"] == []
    pods = {row["name"] for row in api(rita).get("/api/pods/").json()["results"]}
    assert pods == {"train-1"}
    nodes = {row["name"] for row in api(rita).get("/api/nodes/").json()["results"]}
    assert nodes == {"n1"}
    usage = api(rita).get("/api/usage/?key=robotics-training").json()["results"]
    assert usage == [] and UsageSample.objects.filter(key="robotics-training").exists()
    assert all(row["scope"] == "pool" for row in api(rita).get("/api/usage/").json()["results"])
    chart = signed_in(rita).get("/pools/team-a/usage/").json()
    assert all("all pools" not in series["label"] for series in chart["series"])


def test_a_pod_of_another_backend_never_joins_a_pool(estate, cluster):
    cluster([node("x1", gpu=8), pod("intruder", node="x1", gpu=8, pool="team-a")], name="other-cluster")
    tess = estate["tess"]
    names = {row["name"] for row in api(tess).get("/api/pods/?pool=team-a").json()["results"]}
    assert names == {"train-1"}
    page = signed_in(tess).get("/pools/team-a/")
    assert sum(row["gpu"] for row in page.context["workloads"]) == 2
    assert selectors.pool_list(user=tess, names=["team-a"])[0]["gpu"]["total_usage"] == 2


def test_nodes_of_one_name_in_two_backends_keep_their_own_labels(estate, cluster):
    cluster([node("n1", labels={"team": "a", "site": "far"}, gpu=4)], name="other-cluster")
    services.config_apply(
        changes={ConfigType.POOL: {"team-a-far": {"backend": "other-cluster", "common_pod_template": ["a"]}}},
        actor=services.SYSTEM,
    )
    page = signed_in(estate["root"]).get("/nodes/?q=site")
    rows = page.context["page"].object_list
    assert {(row["node"], row["backend"]) for row in rows} == {("n1", "other-cluster")}
    assert all(row["labels"]["site"] == "far" for row in rows)


# --- one verdict, whatever the door ----------------------------------------------------------------------------

DOCUMENT_KINDS = {ConfigType.POD_TEMPLATE: "templates", ConfigType.RESOURCE_VALIDATION: "validations"}
REST = {
    ConfigType.POD_TEMPLATE: "pod_templates",
    ConfigType.RESOURCE_VALIDATION: "resource_validations",
    ConfigType.POOL: "pools",
    ConfigType.ROLE: "roles",
    ConfigType.BACKEND: "backends",
}
BUNDLE = {
    ConfigType.POD_TEMPLATE: "podTemplates",
    ConfigType.RESOURCE_VALIDATION: "resourceValidations",
    ConfigType.POOL: "pools",
    ConfigType.ROLE: "roles",
    ConfigType.BACKEND: "backends",
}
BODIES = {
    ConfigType.POD_TEMPLATE: {"spec": {"nodeSelector": {"team": "a"}}},
    ConfigType.RESOURCE_VALIDATION: [],
    ConfigType.POOL: {"backend": "test-cluster", "common_pod_template": ["a"]},
    ConfigType.ROLE: {"policies": [{"actions": ["pool:Read"], "resources": ["pool/team-a"]}]},
    ConfigType.BACKEND: {"kind": "simulated", "seed": 1, "size": 1},
}


def verdict(status: int) -> str:
    return {200: "ok", 201: "ok", 204: "ok", 302: "ok", 403: "denied", 404: "not found"}.get(status, "invalid")


def rest_door(user, config_type, name, body):
    document = {"name": name, **({"rules": body} if isinstance(body, list) else body)}
    client = api(user)
    exists = selectors.config_objects(config_type=config_type, user=SYSTEM).get(name) is not None
    url = f"/api/{REST[config_type]}/"
    response = (
        client.put(f"{url}{name}/", document, format="json") if exists else client.post(url, document, format="json")
    )
    return verdict(response.status_code)


def configs_door(user, config_type, name, body):
    return verdict(api(user).post(f"/api/configs/{config_type}/?name={name}", body, format="json").status_code)


def import_door(user, config_type, name, body):
    return verdict(
        api(user).post("/api/configs/import/", {BUNDLE[config_type]: {name: body}}, format="json").status_code
    )


def cli_door(user, config_type, name, body, tmp_path):
    path = tmp_path / f"{config_type}-{name}.json"
    path.write_text(json.dumps(body))
    try:
        poolctl("--as", user.username, "config", "update", str(config_type), name, "--file", str(path))
    except CommandError as exc:
        message = str(exc)
        if message.startswith("permission denied"):
            return "denied"
        return "not found" if message.startswith(f"{TYPE_LABELS[config_type]} '{name}' does not exist") else "invalid"
    return "ok"


def web_door(user, config_type, name, body):
    kind = DOCUMENT_KINDS.get(config_type)
    if kind is None:
        return None
    exists = selectors.config_objects(config_type=config_type, user=SYSTEM).get(name) is not None
    url = f"/config/{kind}/{name}/edit/" if exists else f"/config/{kind}/new/"
    return verdict(signed_in(user).post(url, {"name": name, "body": json.dumps(body)}).status_code)


CHANGES = [
    ("mallory", ConfigType.POD_TEMPLATE, "a"),
    ("mallory", ConfigType.POD_TEMPLATE, "fresh"),
    ("mallory", ConfigType.RESOURCE_VALIDATION, "rules"),
    ("mallory", ConfigType.POOL, "team-a"),
    ("mallory", ConfigType.BACKEND, "test-cluster"),
    ("mallory", ConfigType.ROLE, "osmo-team-a"),
    ("tess", ConfigType.POOL, "team-a"),
    ("tess", ConfigType.POOL, "team-a-new"),
    ("tess", ConfigType.POOL, "robotics-training"),
    ("tess", ConfigType.POOL, "robotics-new"),
    ("tess", ConfigType.POD_TEMPLATE, "a"),
    ("tess", ConfigType.ROLE, "osmo-team-a"),
    ("rita", ConfigType.POOL, "team-a"),
    ("rita", ConfigType.POD_TEMPLATE, "a"),
    ("root", ConfigType.ROLE, "osmo-team-a"),
    ("root", ConfigType.BACKEND, "fresh"),
]


@pytest.mark.parametrize(("who", "config_type", "name"), CHANGES)
def test_every_door_gives_the_same_verdict_and_a_refusal_writes_nothing(estate, tmp_path, who, config_type, name):
    user = estate[who]
    body = BODIES[config_type]
    verdicts = {}
    for door, attempt in (
        ("rest", lambda: rest_door(user, config_type, name, body)),
        ("configs", lambda: configs_door(user, config_type, name, body)),
        ("import", lambda: import_door(user, config_type, name, body)),
        ("cli", lambda: cli_door(user, config_type, name, body, tmp_path)),
        ("web", lambda: web_door(user, config_type, name, body)),
    ):
        before = revisions()
        result = attempt()
        if result is None:
            continue
        verdicts[door] = result
        if result != "ok":
            assert revisions() == before, door
        with_allowed = selectors.config_objects(config_type=config_type, user=SYSTEM)
        if result == "ok":
            assert name in with_allowed, door
    assert len(set(verdicts.values())) == 1, verdicts


def test_the_gate_refuses_what_the_admin_site_would_let_a_staff_member_do(estate):
    staff = person("stan", "config-editor", is_staff=True)
    response = signed_in(staff).post("/admin/accounts/role/add/", {"name": "evil", "document": json.dumps(EVIL_ROLE)})
    assert response.status_code == 200 and not Role.objects.filter(name="evil").exists()
    assert "permission denied" in response.content.decode() or "does not exist" in response.content.decode()


def test_a_rollback_that_would_touch_hidden_objects_is_refused_without_naming_them(estate):
    tess = estate["tess"]
    visible = selectors.config_history(user=tess, filters={"config_type": [ConfigType.POOL]})
    created = visible.order_by("revision").first()
    # Since then robotics-training, which tess may not see, changed too: rolling back would change it back.
    services.pool_maintenance_set(name="robotics-training", enable=True, actor=services.SYSTEM)
    services.pool_maintenance_set(name="team-a", enable=True, actor=services.SYSTEM)
    with pytest.raises(AccessDenied) as refused:
        services.config_rollback(
            config_type=ConfigType.POOL, revision=created.revision, actor=services.Actor.of(tess, "api")
        )
    assert "robotics" not in str(refused.value)
    assert Pool.objects.get(name="robotics-training").enable_maintenance
    assert Pool.objects.get(name="team-a").enable_maintenance


def test_a_rollback_that_changes_only_visible_objects_is_allowed_whatever_else_exists(estate):
    tess = estate["tess"]
    visible = selectors.config_history(user=tess, filters={"config_type": [ConfigType.POOL]})
    created = visible.order_by("revision").first()
    services.pool_maintenance_set(name="team-a", enable=True, actor=services.SYSTEM)
    [revision] = services.config_rollback(
        config_type=ConfigType.POOL, revision=created.revision, actor=services.Actor.of(tess, "api")
    )
    assert revision.changed == ["team-a"] and not Pool.objects.get(name="team-a").enable_maintenance


def test_a_reference_broken_before_does_not_block_unrelated_changes(estate):
    # A template removed behind the services' back (an older version's race) leaves team-a pointing at nothing.
    PodTemplate.objects.filter(name="a").delete()
    services.config_apply(
        changes={ConfigType.POD_TEMPLATE: {"unrelated": {"spec": {}}}}, actor=services.SYSTEM
    )  # not refused for team-a's old problem
    with pytest.raises(ConfigError, match="pod template 'a' does not exist"):
        services.config_apply(
            changes={ConfigType.POOL: {"team-b": {"backend": "test-cluster", "common_pod_template": ["a"]}}},
            actor=services.SYSTEM,
        )  # but a change that brings the problem itself is
