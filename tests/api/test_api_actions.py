"""The API's actions answer like ``poolctl``: render, check, pool list, resource list, history, diff, tags,
rollback, sync jobs, generated roles; and every failure comes in the one error shape."""

from __future__ import annotations

import csv
import io

from people import person, role

from pools.models import ConfigRevision, UsageSample


def test_render_and_check_give_poolctl_json(two_pools, admin_api, poolctl):
    rendered = admin_api.post("/api/pools/team-a/render/", {"variables": {"USER_GPU": 2}}, format="json")
    assert rendered.json() == poolctl("pool", "render", "team-a", "--set", "USER_GPU=2", "--format", "json").json()
    checked = admin_api.post("/api/pools/team-b/check/", {"platform": "default"}, format="json")
    assert checked.status_code == 200
    assert checked.json() == poolctl("pool", "check", "team-b", "--platform", "default", "--format", "json").json()


def test_render_refuses_nested_variables_and_unknown_platforms(two_pools, admin_api):
    nested = admin_api.post("/api/pools/team-a/render/", {"variables": {"USER_GPU": [1]}}, format="json")
    assert nested.status_code == 400 and nested.json()["errors"][0]["field"] == "variables.USER_GPU"
    unknown = admin_api.post("/api/pools/team-a/render/", {"platform": "nope"}, format="json")
    assert unknown.status_code == 404


def test_pool_quota_and_resources_match_poolctl(two_pools, admin_api, poolctl):
    assert admin_api.get("/api/pool_quota/").json() == poolctl("pool", "list", "--format", "json").json()
    assert admin_api.get("/api/resources/").json() == poolctl("resource", "list", "--format", "json").json()
    one = admin_api.get("/api/resources/", {"pools": "team-a", "platforms": "gpu"}).json()
    assert one == poolctl("resource", "list", "--pool", "team-a", "--platform", "gpu", "--format", "json").json()
    both = admin_api.get("/api/resources/", {"pools": "team-a,team-b"}).json()["resources"]
    assert {row["pool"] for row in both} == {"team-a", "team-b"}
    assert admin_api.get("/api/resources/", {"pools": "nope"}).status_code == 404
    quota = admin_api.get("/api/pool_quota/", {"pools": "team-b"}).json()["pools"]
    assert [row["name"] for row in quota] == ["team-b"]


def test_resources_and_usage_as_csv(two_pools, admin_api):
    from django.utils import timezone

    response = admin_api.get("/api/resources/", {"format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {row["node"] for row in rows} == {"n1", "n2", "n3", "n4"}
    assert next(row for row in rows if row["node"] == "n1")["gpu.used"] == "4"
    UsageSample.objects.create(
        scope="pool", key="team-a", backend=two_pools, at=timezone.now(), used=4, capacity=16, quota_used=4
    )
    usage = admin_api.get("/api/usage/", {"format": "csv", "key": "team-a"})
    lines = list(csv.DictReader(io.StringIO(usage.content.decode())))
    assert [(line["key"], line["used"], line["backend"]) for line in lines] == [("team-a", "4.0", "test-cluster")]


def test_pool_quota_follows_what_the_user_may_see(two_pools, client_for):
    granted = role("team-b-reader", {"actions": ["pool:Read"], "resources": ["pool/team-b"]})
    client = client_for(person("bob", granted))
    assert [row["name"] for row in client.get("/api/pool_quota/").json()["pools"]] == ["team-b"]
    assert {row["pool"] for row in client.get("/api/resources/").json()["resources"]} == {"team-b"}
    assert client.post("/api/pools/team-a/check/", {}, format="json").status_code == 404


def test_history_diff_tags_and_rollback(two_pools, admin_api):
    first = ConfigRevision.objects.filter(config_type="POOL").order_by("revision").last().revision
    assert admin_api.patch("/api/pools/team-b/", {"description": "changed"}, format="json").status_code == 200
    history = admin_api.get("/api/configs/history/", {"config_type": "POOL", "name": "team-b"}).json()["results"]
    assert history[0]["origin"] == "api" and history[0]["revision"] == first + 1

    diff = admin_api.get("/api/configs/pool/diff/", {"from": first, "to": first + 1}).json()
    assert '+  "description": "changed"' in diff["diff"]
    assert admin_api.get("/api/configs/POOL/diff/").status_code == 400

    tagged = admin_api.post(f"/api/configs/POOL/{first}/tags/", {"add": ["good"]}, format="json")
    assert tagged.json()["tags"] == ["good"]

    rolled = admin_api.post(f"/api/configs/POOL/{first}/rollback/", {"description": "undo"}, format="json")
    assert rolled.status_code == 200
    assert rolled.json()["revisions"][0]["action"] == "rollback"
    assert admin_api.get("/api/pools/team-b/").json()["description"] == ""
    again = admin_api.post(f"/api/configs/POOL/{first}/rollback/", {}, format="json")
    assert again.status_code == 409
    assert admin_api.post("/api/configs/POOL/999/rollback/", {}, format="json").status_code == 404
    assert admin_api.get("/api/configs/NOPE/diff/", {"from": 1}).status_code == 404


def test_config_document_endpoints_take_osmo_files_unchanged(two_pools, admin_api):
    named = admin_api.post(
        "/api/configs/POD_TEMPLATE/", {"l40s": {"spec": {"nodeSelector": {"g": "l40s"}}}}, format="json"
    )
    assert named.status_code == 200 and named.json()["revisions"][0]["name"] == "l40s"
    pool_file = {"name": "p", "backend": "test-cluster", "platforms": {"l": {"override_pod_template": ["l40s"]}}}
    assert admin_api.post("/api/configs/POOL/", pool_file, format="json").status_code == 200
    shown = admin_api.get("/api/configs/POOL/", {"name": "p"}).json()
    assert shown["p"]["platforms"]["l"]["override_pod_template"] == ["l40s"]
    dry = admin_api.post("/api/configs/POOL/?dry_run=1", {**pool_file, "description": "x"}, format="json")
    assert dry.json() == {"revisions": [], "effect": {"pools": [], "warnings": []}}
    bundle = {"podTemplates": {"t9": {"spec": {}}}, "resourceValidations": {"v9": []}}
    imported = admin_api.post("/api/configs/import/", bundle, format="json")
    assert {r["config_type"] for r in imported.json()["revisions"]} == {"POD_TEMPLATE", "RESOURCE_VALIDATION"}


def test_config_endpoints_check_config_permissions(two_pools, client_for):
    granted = role("template-reader", {"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE"]})
    client = client_for(person("bob", granted))
    assert client.get("/api/configs/POD_TEMPLATE/").status_code == 200
    pools = client.get("/api/configs/POOL/")
    assert pools.status_code == 200 and pools.json() == {}  # pools are seen one by one: none for this role
    assert client.post("/api/configs/POD_TEMPLATE/", {"x": {}}, format="json").status_code == 403
    history = client.get("/api/configs/history/").json()["results"]
    assert {row["config_type"] for row in history} == {"POD_TEMPLATE"}


def test_sync_returns_a_job_to_poll(two_pools, admin_api, client_for):
    response = admin_api.post("/api/backends/test-cluster/sync/")
    assert response.status_code == 202
    job = admin_api.get(response["Location"]).json()
    assert job["state"] == "SUCCESS" and job["done"] and job["result"]["nodes"] == 4
    outsider = client_for(person("nobody"))
    assert outsider.get(response["Location"]).status_code == 404
    assert admin_api.get("/api/jobs/not-a-job/").status_code == 404
    reader = client_for(person("reader", "osmo-user"))
    assert reader.post("/api/backends/test-cluster/sync/").status_code == 403


def test_sync_of_an_unreachable_source_is_a_failed_job(two_pools, admin_api, tmp_path):
    admin_api.patch("/api/backends/test-cluster/", {"source": str(tmp_path / "missing.json")}, format="json")
    job = admin_api.post("/api/backends/test-cluster/sync/").json()
    assert job["state"] == "FAILURE" and job["done"] and "missing.json" in job["error"]


def test_generate_pool_role(two_pools, admin_api):
    created = admin_api.post("/api/roles/generate/", {"name": "osmo-team"}, format="json")
    assert created.status_code == 201
    assert created.json()["policies"] == [
        {"effect": "Allow", "actions": ["workflow:*", "pool:Read"], "resources": ["pool/team*"]}
    ]
    assert admin_api.post("/api/roles/generate/", {"name": "osmo-team"}, format="json").status_code == 200
    bad = admin_api.post("/api/roles/generate/", {"name": "team"}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "name"


def test_every_error_has_the_one_shape(two_pools, admin_api, client_for):
    malformed = admin_api.generic("POST", "/api/pools/", '{"name": ', content_type="application/json")
    not_object = admin_api.post("/api/pools/", ["a"], format="json")
    unknown = admin_api.get("/api/pools/nope/")
    method = admin_api.delete("/api/pool_quota/")
    anonymous = client_for(None).get("/api/pools/")
    for response, code in ((malformed, 400), (not_object, 400), (unknown, 404), (method, 405), (anonymous, 401)):
        assert response.status_code == code
        errors = response.json()["errors"]
        assert errors and all(set(error) == {"field", "message"} for error in errors)


def test_a_rejected_pool_names_each_field(two_pools, admin_api):
    body = {"name": "p", "backend": "test-cluster", "platforms": {"x": {"override_pod_template": ["missing"]}}}
    response = admin_api.post("/api/pools/", {**body, "max_exec_timeout": "soon"}, format="json")
    fields = {error["field"] for error in response.json()["errors"]}
    assert response.status_code == 400
    assert fields == {"max_exec_timeout"}
    response = admin_api.post("/api/pools/", body, format="json")
    assert response.json()["errors"] == [
        {"field": "platforms.x.override_pod_template", "message": "pod template 'missing' does not exist"}
    ]


def test_errors_stay_json_when_csv_was_asked_for(two_pools, admin_api):
    response = admin_api.get("/api/resources/", {"format": "csv", "pools": "nope"})
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["errors"][0]["message"] == "pool 'nope' does not exist"


def test_schema_and_documentation_pages_are_served_locally(client):
    import re

    assert client.get("/api/schema/", {"format": "json"}).json()["openapi"].startswith("3.")
    for url in ("/api/docs/", "/api/redoc/"):
        page = client.get(url).content.decode()
        assert "/static/drf_spectacular_sidecar/" in page
        assert not re.findall(r"""(?:src|href)=["']https?://""", page), url
