"""The access matrix, generated from the doors' declarations: every door × every kind of user, live.

For each door of ``pools.doors.http_doors()`` (API endpoint, page, htmx fragment; each names its door of the
catalogue, ``pools.engine.doors``)
and each person, the request is sent to a live server (CI runs it on SQLite and on PostgreSQL) and the
answer must be what the catalogue and the gate say: 401/302 without a sign-in, 404 for an object the
person may not see, 403 for a change they may see but not make, success otherwise. And no answer ever
names a pool the person may not see, unless their own request named it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
import requests
from django.core.management.base import CommandError
from kube_objects import node, pod
from people import person, poolctl, role, service_account, token_for

from accounts.access import SYSTEM, allows
from pools import jobs, selectors, services
from pools.choices import ConfigType
from pools.doors import Entry as Door
from pools.doors import http_doors
from pools.engine.permissions import CHANGE_CONFIG, VIEW_BACKEND, VIEW_CONFIG, VIEW_POOL
from pools.models import ConfigRevision, Node, Pod
from pools.querysets import visible_object

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "zebra-pool"
SUCCESS = {200, 201, 202, 204, 286, 302}  # 286: htmx, "done, stop polling"
# Changes someone allowed may make here without changing what the other rows of the matrix expect; other
# changes are sent only by those whom the gate refuses (the CRUD and gate tests cover them when allowed).
HARMLESS = re.compile(r"(/render/|/check/|/preview/|/sync/|/tokens/)$")
API = ("/api/", "/accounts/api/", "/metrics")


@dataclass
class Caller:
    name: str
    user: object  # None: anonymous
    api: requests.Session
    web: requests.Session


@pytest.fixture
def estate(live_server, cluster, actor):
    """Pools alpha-pool and zebra-pool on one cluster, and the people of the matrix with their sessions."""
    cluster(
        [
            node("n-alpha", labels={"team": "alpha"}),
            node("n-zebra", labels={"team": "zebra"}),
            pod("train-alpha", node="n-alpha", gpu=1, pool="alpha-pool"),
            pod("train-zebra", node="n-zebra", gpu=1, pool=SECRET),
        ],
        name="bk-main",
    )
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "tpl-alpha": {"spec": {"nodeSelector": {"team": "alpha"}}},
                "tpl-zebra": {"spec": {"nodeSelector": {"team": "zebra"}}},
            },
            ConfigType.POOL: {
                "alpha-pool": {"backend": "bk-main", "common_pod_template": ["tpl-alpha"], "platforms": {"gpu": {}}}
            },
        },
        actor=actor,
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {
                SECRET: {"backend": "bk-main", "common_pod_template": ["tpl-zebra"], "platforms": {"gpu": {}}}
            }
        },
        actor=actor,
    )
    # A department and a project with quotas on both pools: who may not see zebra-pool never sees its quota.
    quotas = [{"nodePool": "alpha-pool", "gpu": {"deserved": 1}}, {"nodePool": SECRET, "gpu": {"deserved": 1}}]
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {"dept-alpha": {"resources": quotas}},
            ConfigType.PROJECT: {"proj-alpha": {"department": "dept-alpha", "resources": quotas}},
        },
        actor=actor,
    )
    services.usage_sample_record()
    poolctl("role", "set", "osmo-alpha", "pool")
    role(
        "alpha-editor",
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
        {"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE"]},
        {"actions": ["backend:Read"], "resources": ["backend/bk-main"]},
    )
    role("no-zebra", {"effect": "Deny", "actions": ["*"], "resources": ["pool/zebra*"]})
    role(  # Run:ai's department admin: its projects and their quotas, on the pools it may see
        "dept-alpha-admin",
        {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
        {"actions": ["department:Read", "department:Update"], "resources": ["department/dept-alpha"]},
        {"actions": ["project:Read"], "resources": ["project/*"]},
    )
    role("proj-alpha-researcher", {"actions": ["project:Read"], "resources": ["project/proj-alpha"]})
    people = {
        "root": person("root", is_superuser=True),
        "team": person("team", "osmo-alpha"),
        "editor": person("editor", "osmo-alpha", "alpha-editor"),
        "reader": person("reader", "osmo-user", "no-zebra"),
        "nobody": person("nobody"),
        "dept-admin": person("dept-admin", "osmo-alpha", "dept-alpha-admin"),
        "researcher": person("researcher", "osmo-alpha", "proj-alpha-researcher"),
        "prometheus": service_account("prometheus", "osmo-metrics"),
        "anonymous": None,
    }
    callers = {name: caller(live_server.url, name, user) for name, user in people.items()}
    return live_server.url, callers


def caller(url: str, name: str, user) -> Caller:
    """Sessions for one person: the API with their token, the pages with their signed-in cookie."""
    api, web = requests.Session(), requests.Session()
    api.headers["Accept"] = "application/json"
    web.get(f"{url}/accounts/login/")  # the CSRF cookie
    if user is not None:
        api.headers["Authorization"] = f"Bearer {token_for(name)}"
        if user.has_usable_password():
            form = {"username": name, "password": "people-test-pw", "csrfmiddlewaretoken": web.cookies["csrftoken"]}
            web.post(f"{url}/accounts/login/", data=form, headers={"Referer": url})
            assert web.cookies.get("sessionid"), f"{name} could not sign in"
    return Caller(name, user, api, web)


def revision_of(pool: str) -> int:
    return next(r.revision for r in ConfigRevision.objects.filter(config_type="POOL") if r.changed == [pool])


def bindings(door: Door) -> list[dict]:
    """The path parameters to try a door with: an object most people may see, and one fewer may."""
    path = door.path
    if "{job_id}" in path:
        job = jobs.backend_sync_request(name="bk-main", actor=services.SYSTEM)
        return [{"job_id": job["id"]}]
    if "{config_type}" in path:
        extra = {"config_type": "POOL"}
        if "{revision}" in path or path.endswith("/diff/"):
            return [{**extra, "revision": revision_of("alpha-pool")}, {**extra, "revision": revision_of(SECRET)}]
        return [extra]
    for prefix, names in (("/config/templates/", ["tpl-alpha"]), ("/config/roles/", ["osmo-alpha"])):
        if path.startswith(prefix) and "{name}" in path:
            return [{"name": name} for name in names]
    if path.startswith("/config/validations/") and "{name}" in path:
        return [{"name": "default_cpu"}]
    if "{username}" in path:
        return [{"username": "team"}, {"username": "root"}]
    if "{namespace}" in path:  # a workload: the estate runs none, so each person must get the same 404
        return [{"backend": "bk-main", "namespace": "team-alpha", "name": "absent"}]
    if "{pool}" in path:
        return [{"pool": "alpha-pool"}, {"pool": SECRET}]
    if "{pool_name}" in path:
        platform = {"name": "gpu"} if "{name}" in path else {}
        return [{"pool_name": "alpha-pool", **platform}, {"pool_name": SECRET, **platform}]
    if "{name}" not in path:
        return [{}]
    for prefix, names in (
        ("/api/backends/", ["bk-main"]),
        ("/backends/", ["bk-main"]),
        ("/api/pod_templates/", ["tpl-alpha"]),
        ("/api/resource_validations/", ["default_cpu"]),
        ("/api/roles/", ["osmo-alpha", "osmo-admin"]),
        ("/api/departments/", ["dept-alpha"]),
        ("/api/projects/", ["proj-alpha"]),
        ("/departments/", ["dept-alpha"]),
        ("/projects/", ["proj-alpha"]),
        ("/api/nodes/", ["n-alpha", "n-zebra"]),
        ("/nodes/", ["n-alpha", "n-zebra"]),
    ):
        if path.startswith(prefix):
            return [{"name": name} for name in names]
    return [{"name": "alpha-pool"}, {"name": SECRET}]


def body_for(door: Door, params: dict) -> dict:
    """A valid body, so what answers is the gate and not the validation."""
    path = door.path
    pool = params.get("name") if "/pools/" in path else None
    new = "alpha-new" if params.get("name") != SECRET else "zebra-new"
    if door.method in ("GET", "DELETE"):
        return {}
    if path == "/api/pools/":
        return {"name": new, "backend": "bk-main", "common_pod_template": ["tpl-alpha"]}
    if path == "/api/backends/":
        return {"name": "bk-new", "kind": "simulated", "seed": 1, "size": 1}
    if path == "/api/pod_templates/":
        return {"name": "tpl-new", "spec": {}}
    if path == "/api/resource_validations/":
        return {"name": "rv-new", "rules": []}
    if path == "/api/roles/":
        return {"name": "role-new", "policies": []}
    if path == "/api/roles/generate/":
        return {"name": "osmo-alpha"}
    if path.endswith("/platforms/"):
        return {"name": "extra"}
    if path.endswith(("/render/", "/check/")):
        return {"variables": {}}
    if path.endswith("/tags/"):
        return {"add": ["matrix"]}
    if path == "/api/configs/import/":
        return {"pools": {"alpha-pool": pool_document("alpha-pool")}}
    if path == "/api/users/":
        return {"username": "someone-new"}
    if path.endswith("/roles/"):
        return {"roles": ["osmo-alpha"]}
    if path.endswith("/tokens/"):
        return {"name": "matrix"}
    if path == "/api/label_pools/":
        return {"kind": "pool", "version": "v0.1", "pool": {"name": new}, "nodes": {"n-alpha": {}}}
    if path == "/api/departments/":
        return {"name": "dept-new", "resources": [{"nodePool": "alpha-pool"}]}
    if path == "/api/projects/":
        return {"name": "proj-new", "department": "dept-alpha"}
    if path == "/api/quotas/":
        return {"quotas": [{"unit": "proj-alpha", "nodePool": "alpha-pool", "gpu": {"deserved": 1}}]}
    if path == "/quotas/":
        return {"pool-0": "alpha-pool", "unit-0": "project/proj-alpha", "q-0-0-deserved": "1"}
    if path in ("/departments/new/", "/departments/{name}/edit/"):
        return {"name": "dept-new", "deserved__alpha-pool": "1"} if path.endswith("/new/") else {"description": "m"}
    if path in ("/projects/new/", "/projects/{name}/edit/"):
        return {"department": "dept-alpha", **({"name": "proj-new"} if path.endswith("/new/") else {})}
    if path == "/api/quotas/simulate/":
        return {"capacity": 8, "queues": [{"name": "alpha", "request": 4}]}
    if path == "/api/quotas/reclaim/":
        return {"queues": [{"name": "alpha", "fair_share": 4}], "reclaimer": {"queue": "alpha", "gpus": 1}}
    if path == "/label-pools/new/":
        return {"name": new, "nodes": ["n-alpha"]}
    if path.endswith("/labels/"):
        return {"key": "team", "value": "matrix"}
    if path.startswith("/api/") and door.method in ("PUT", "PATCH"):
        return {"description": "matrix"} if door.method == "PATCH" else {}
    if path.startswith("/api/configs/"):
        return {"alpha-pool": pool_document("alpha-pool")}
    if path.endswith("/maintenance/"):
        return {"enable": "0"}
    if path == "/access/":
        return {"prefix": "alpha"}
    if path == "/access/users/new/":
        return {"username": "someone-new"}
    if path.startswith("/access/users/"):
        return {"roles": ["osmo-alpha"]}
    if path.endswith("/rollback/"):
        return {"confirm": "on"}
    if path.startswith("/config/"):
        return {"name": "tpl-new", "body": "{}"}
    return {"name": pool or new}


def pool_document(name: str) -> dict:
    return selectors.config_show(config_type=ConfigType.POOL, name=name, user=SYSTEM)[name]


def sees(user, door: Door, params: dict) -> bool:
    """Whether the object the door names exists for ``user``, as the gate decides."""
    if "revision" in params:
        return ConfigRevision.objects.restrict(user).filter(config_type="POOL", revision=params["revision"]).exists()
    if "{job_id}" in door.path:
        return allows(user, VIEW_BACKEND, "bk-main")
    if door.method == "POST" and door.path == "/api/configs/import/":
        return allows(user, VIEW_POOL, "alpha-pool")
    if door.method == "POST" and door.path == "/api/configs/{config_type}/":  # the URL's type is decided first
        return not allows(user, CHANGE_CONFIG, "POOL") or allows(user, VIEW_POOL, "alpha-pool")
    if door.path.startswith("/config/") and "{name}" in door.path:
        kind = {"templates": ConfigType.POD_TEMPLATE, "validations": ConfigType.RESOURCE_VALIDATION}
        return visible_object(user, kind.get(door.path.split("/")[2], ConfigType.ROLE), params["name"])
    if "{namespace}" in door.path:  # a workload: no one sees one that does not exist
        return Pod.objects.filter(namespace=params["namespace"], workload_name=params["name"]).exists()
    if door.reads is None or not door.object:
        return True
    if door.path.startswith(("/api/nodes/", "/nodes/")):
        return Node.objects.restrict(user).filter(name=params["name"]).exists()
    if door.path == "/api/label_pools/":  # the pool's name is inside the file: the gate answers 403 before
        return not allows(user, CHANGE_CONFIG, "POOL") or allows(
            user, door.reads, body_for(door, params)["pool"]["name"]
        )
    if door.reads is VIEW_CONFIG:
        return allows(user, door.reads, door.object)
    if door.object.startswith("{"):
        key = door.object[1:-1]
        value = params[key] if key in params else body_for(door, params).get(key, "")
        return allows(user, door.reads, value) if value else True  # no object named: nothing to decide
    return True


def may(user, door: Door, params: dict) -> bool:
    """Whether ``user`` holds what the door's change needs."""
    if door.acts is None:
        return True
    if door.path.endswith("/roles/") and params.get("username") == user.get_username():
        return False  # nobody changes their own roles
    if door.path == "/api/configs/import/":
        return allows(user, door.acts, "POOL")
    target = door.acts_on or ("{backend}" if door.key == "node.label" else "")
    if "|" in target:  # any of these types (quotas: departments or projects)
        return any(allows(user, door.acts, one) for one in target.split("|"))
    if target.startswith("{"):
        key = target[1:-1]
        if key == "backend":  # a node's labels: the node's backend
            target = "bk-main"
        elif key in params:
            target = params[key]
        else:
            target = body_for(door, params).get(key, "")
    return allows(user, door.acts, target) if door.acts.resource_type else allows(user, door.acts)


def expected(caller: Caller, door: Door, params: dict) -> set[int]:
    if door.public:
        return {200}
    if caller.user is None:
        return {401} if door.path.startswith(API) else {302}
    if "{namespace}" in door.path and not sees(caller.user, door, params):
        return {404}
    if door.signed_in:
        return {200}
    if not sees(caller.user, door, params):
        return {404}
    if not may(caller.user, door, params):
        return {403}
    return SUCCESS


def send(url: str, caller: Caller, door: Door, params: dict) -> requests.Response:
    path = door.path.format(**params)
    if path.endswith("/diff/"):
        path += f"?from={params['revision']}"
    if path.endswith("/sync/status/"):
        path += "?since=0"
    html = door.public and not path.endswith("/schema/")
    session = caller.api if door.path.startswith(API) and not html else caller.web
    headers = {}
    if session is caller.web and door.method != "GET":
        headers = {"X-CSRFToken": session.cookies.get("csrftoken", ""), "Referer": url}
    body = body_for(door, params)
    if session is caller.api:
        return session.request(door.method, url + path, json=body or None, headers=headers, allow_redirects=False)
    return session.request(door.method, url + path, data=body, headers=headers, allow_redirects=False)


HTTP_DOORS = http_doors()


def test_every_door_answers_every_person_as_the_catalogue_says(estate):
    url, callers = estate
    mismatches, sent = [], 0
    for door in HTTP_DOORS:
        for name, caller_ in callers.items():
            if name == "prometheus" and door.path != "/metrics":
                continue
            for params in bindings(door):
                wanted = expected(caller_, door, params)
                if wanted == SUCCESS and door.method != "GET" and not HARMLESS.search(door.path):
                    continue
                response = send(url, caller_, door, params)
                sent += 1
                where = f"{name} {door.method} {door.path.format(**params)}"
                if response.status_code not in wanted:
                    mismatches.append(f"{where}: {response.status_code} not {sorted(wanted)}: {response.text[:160]}")
                named = SECRET in str(params) or SECRET in str(body_for(door, params))
                # system:Metrics is the fleet's numbers for a scraper, every pool included, by design (§7.2).
                hidden = caller_.user is not None and door.path != "/metrics"
                hidden = hidden and not allows(caller_.user, VIEW_POOL, SECRET)
                if hidden and not named and SECRET in response.text:
                    mismatches.append(f"{where} shows {SECRET}")
    assert not mismatches, "\n".join(mismatches)
    assert sent > 400


# Each verb, and who may run it. One estate for all of them: the one change that stays (roles given) comes last.
VERB_CASES = [
    (("pool", "render", "alpha-pool"), {"root", "team", "editor", "reader"}),
    (("pool", "render", SECRET), {"root"}),
    (("config", "show", "POOL", SECRET), {"root"}),
    (("backend", "sync", "bk-main"), {"root"}),
    (("config", "delete", "POD_TEMPLATE", "tpl-zebra"), set()),  # in use: refused even to root
    (("user", "set-roles", "nobody", "osmo-admin"), {"root"}),
]


def test_poolctl_acting_for_a_person_answers_as_the_catalogue_says(estate):
    for args, allowed in VERB_CASES:
        for name in ("root", "team", "editor", "reader", "nobody"):
            try:
                poolctl("--as", name, *args)
            except CommandError as exc:
                assert name not in allowed, f"{name} {args}: {exc}"
                if SECRET in args and not allows(estate[1][name].user, VIEW_POOL, SECRET):
                    assert "does not exist" in str(exc)
            else:
                assert name in allowed, f"{name} {args}"
