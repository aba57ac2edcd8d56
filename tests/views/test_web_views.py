"""The console's pages beyond what the generated tests of test_web_pages.py check.

Filters, exports, editors and their errors, previews, rollback, sync, and what a team role sees but may not change.
"""

from __future__ import annotations

import csv
import io

import pytest
from console_data import pool_form_data

from pools import selectors
from pools.choices import ConfigType
from pools.models import ConfigRevision, Pool
from pools.templatetags.console import gpu_bar, side_by_side

# Variants of pages the generated tests of test_web_pages.py do not open: other kinds of document, filters,
# the first revision of a type (its whole state instead of a diff), a verdict on the whole page.
ADMIN_PAGES = [
    "/nodes/?pool=robotics-training&status=available",
    "/config/templates/training_optimized/edit/",
    "/config/validations/default_cpu/edit/",
    "/what-if/?pool=robotics-training&cpu=4&gpu=1&memory=16Gi&storage=10Gi",
    "/history/?type=POOL",
    "/history/POOL/1/",
    "/history/POOL/1/rollback/",
]


def pool_names_in(html: str) -> set[str]:
    return {name for name in Pool.objects.values_list("name", flat=True) if f'data-pool="{name}"' in html}


@pytest.mark.parametrize("url", ADMIN_PAGES)
def test_every_page_opens_for_an_admin(as_admin, url):
    response = as_admin.get(url)
    assert response.status_code == 200, response.content[:2000]


def test_the_overview_exports_only_the_pools_a_team_role_sees(as_team):
    rows = list(csv.DictReader(io.StringIO(as_team.get("/?format=csv").content.decode())))
    assert sorted(row["name"] for row in rows) == ["team-a", "team-a-gpu"]
    assert {row["name"] for row in as_team.get("/?format=json").json()} == {"team-a", "team-a-gpu"}


def test_the_overview_shows_the_numbers_of_pool_list(as_admin, admin_user):
    rows = {row["name"]: row for row in as_admin.get("/?format=json").json()}
    for expected in selectors.pool_list(user=admin_user):
        assert rows[expected["name"]]["total_usage"] == expected["gpu"]["total_usage"]
        assert rows[expected["name"]]["quota_limit"] == expected["gpu"]["quota_limit"]
        assert rows[expected["name"]]["shared"] == expected["shared"]


def test_a_shared_pool_names_only_the_pools_the_user_may_see(as_team, team_user, admin_user):
    everything = {row["name"]: row for row in selectors.pool_list(user=admin_user)}
    hidden = set(everything["team-a"]["node_set"]) - {"team-a", "team-a-gpu"}
    assert hidden, "team-a should share nodes with a pool its team may not see"
    mine = {row["name"]: row for row in selectors.pool_list(user=team_user)}
    assert mine["team-a"]["shared"]
    assert set(mine["team-a"]["node_set"]) <= {"team-a", "team-a-gpu"}
    html = as_team.get("/").content.decode()
    assert not [name for name in hidden if f">{name}<" in html or f"{name}," in html]


def test_the_gpu_bar_marks_the_quota_and_colours_by_how_close_use_is():
    gpu = {"used_on_nodes": 6, "total_capacity": 16, "total_free": 10, "quota_used": 7, "quota_limit": 8}
    near = gpu_bar(gpu)
    assert 'class="gpu-bar near"' in near and "near quota" in near
    assert "width: 37.5%" in near and "left: calc(50.0% - 1px)" in near
    assert 'class="gpu-bar ok"' in gpu_bar({**gpu, "quota_used": 2})
    over = gpu_bar({**gpu, "quota_used": 9})
    assert 'class="gpu-bar over"' in over and "over quota" in over
    assert 'class="quota"' not in gpu_bar({**gpu, "quota_limit": 16})  # the whole bar: nothing to mark
    assert "width: 0%" in gpu_bar({**gpu, "total_capacity": 0, "used_on_nodes": 0})
    # The bar is what pods hold on the node set: the pool's own workloads elsewhere do not fill it.
    assert "width: 37.5%" in gpu_bar({**gpu, "total_usage": 30})


def test_the_overview_filters_by_search_status_and_backend(as_admin):
    assert pool_names_in(as_admin.get("/?q=robotics-t").content.decode()) == {"robotics-training"}
    assert pool_names_in(as_admin.get("/?backend=dev-cluster-01").content.decode()) == {
        "team-development",
        "team-a",
        "team-a-gpu",
    }
    assert pool_names_in(as_admin.get("/?status=MAINTENANCE").content.decode()) == set()


def test_the_overview_fragment_is_only_the_table_and_varies_on_hx_request(as_admin):
    page = as_admin.get("/")
    fragment = as_admin.get("/?q=team", HTTP_HX_REQUEST="true")
    assert "HX-Request" in page["Vary"] and "HX-Request" in fragment["Vary"]
    assert b"<html" in page.content and b"<html" not in fragment.content
    assert b'id="pool-table"' in fragment.content and b'hx-trigger="every' in fragment.content


def test_a_user_without_roles_is_told_why_the_overview_is_empty_and_exports_no_node(as_nobody):
    assert "You cannot see any pool yet" in as_nobody.get("/").content.decode()
    assert as_nobody.get("/nodes/?format=json").json() == []


def test_the_node_table_of_a_pool_one_may_not_see_is_not_found(as_team):
    assert as_team.get("/nodes/?pool=robotics-training").status_code == 404


def test_a_team_role_reads_its_pool_but_cannot_change_it(as_team):
    page = as_team.get("/pools/team-a/")
    assert page.status_code == 200
    assert b"Edit pool" not in page.content and b"Start maintenance" not in page.content
    assert as_team.get("/pools/team-a/edit/").status_code == 403
    assert as_team.post("/pools/team-a/maintenance/", {"enable": "1"}).status_code == 403
    assert as_team.post("/pools/team-a/edit/", {"description": "x"}).status_code == 403
    assert not Pool.objects.get(name="team-a").enable_maintenance


def test_the_node_table_follows_the_visible_pools_and_exports_them(as_team):
    rows = as_team.get("/nodes/?format=json").json()
    assert rows and {row["pool"] for row in rows} == {"team-a", "team-a-gpu"}
    text = as_team.get("/nodes/?format=csv&type=SHARED").content.decode()
    assert all(row["type"] == "SHARED" for row in csv.DictReader(io.StringIO(text)))


def test_the_node_table_filters_by_status_product_and_platform(as_admin):
    rows = as_admin.get("/nodes/?format=json&pool=robotics-training&platform=h100-platform").json()
    assert rows and {row["platform"] for row in rows} == {"h100-platform"}
    assert {row["gpu_product"] for row in rows} == {"NVIDIA-H100-80GB-HBM3"}
    unavailable = as_admin.get("/nodes/?format=json&status=unavailable").json()
    assert all(row["status"] == "unavailable" and row["reason"] for row in unavailable)


def test_what_if_shows_the_merged_spec_and_the_verdict_per_node(as_admin):
    html = as_admin.get("/what-if/?pool=robotics-training&platform=h100-platform&cpu=4&gpu=1&memory=16Gi").content
    assert b"Fits: this request would be accepted" in html
    assert b"h100-a-001" in html and b"value: h100-platform" in html
    assert b'<th scope="col">Start</th>' in html and (b"starts now" in html or b"waits" in html)
    rejected = as_admin.get("/what-if/?pool=robotics-training&platform=h100-platform&cpu=4&gpu=64").content
    assert b"Rejected" in rejected


def test_what_if_only_offers_visible_pools(as_team):
    response = as_team.get("/what-if/?pool=robotics-training&cpu=1&gpu=0")
    assert b"Select a valid choice" in response.content
    assert b"Fits" not in response.content and b"Rejected" not in response.content


def test_what_if_names_only_the_platforms_of_visible_pools(as_team):
    page = as_team.get("/what-if/").content.decode()
    platforms = page[page.index('<datalist id="platform-names">') :]
    platforms = platforms[: platforms.index("</p>")]
    assert "<strong>team-a</strong>" in platforms
    assert "robotics-training" not in platforms and "h100-platform" not in platforms


def test_a_missing_template_reference_is_shown_next_to_its_field_and_nothing_is_saved(as_admin):
    before = ConfigRevision.objects.count()
    data = pool_form_data("team-a")
    data["common_pod_template"] = "default_amd64, no_such_template"
    response = as_admin.post("/pools/team-a/edit/", data)
    assert response.status_code == 400
    assert "pod template &#x27;no_such_template&#x27; does not exist" in response.content.decode()
    assert response.context["form"].errors["common_pod_template"]
    assert ConfigRevision.objects.count() == before
    assert Pool.objects.get(name="team-a").common_pod_template == ["default_amd64", "development_template"]


def test_a_missing_platform_template_is_shown_on_the_platforms_field(as_admin):
    data = pool_form_data("team-a")
    data["platforms"] = data["platforms"].replace("dev_gpu_template", "gone_template")
    response = as_admin.post("/pools/team-a/edit/", data)
    assert response.status_code == 400
    assert any("gone_template" in error for error in response.context["form"].errors["platforms"])


def test_a_broken_document_names_its_line(as_admin):
    data = pool_form_data("team-a")
    data["platforms"] = '{\n  "cpu-only": {\n    "description": ,\n  }\n}'
    response = as_admin.post("/pools/team-a/edit/", data)
    errors = response.context["form"].errors["platforms"]
    assert response.status_code == 400 and "line 3" in errors[0] and '"description": ,' in errors[0]


def test_saving_a_fixed_pool_records_a_web_revision(as_admin):
    data = pool_form_data("team-a")
    data.update(description="Team A training", change_description="Rename team A", tags="web, test")
    response = as_admin.post("/pools/team-a/edit/", data)
    assert response.status_code == 302 and response["Location"] == "/pools/team-a/"
    revision = ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first()
    assert (revision.username, revision.origin, revision.tags) == ("root", "web", ["test", "web"])
    assert Pool.objects.get(name="team-a").description == "Team A training"


def test_the_live_preview_renders_a_draft_without_saving(as_admin):
    data = pool_form_data("team-a")
    data["common_default_variables"] = "USER_CPU: 7\nUSER_GPU: 0\nUSER_MEMORY: 8Gi\nUSER_STORAGE: 50Gi"
    data["common_pod_template"] = "default_amd64, development_template, default_user"
    before = ConfigRevision.objects.count()
    html = as_admin.post("/pools/preview/", {**data, "pool_name": "team-a"}).content.decode()
    assert "<h3>cpu-only</h3>" in html and "<h3>small-gpu</h3>" in html
    assert "cpu: &#x27;7&#x27;" in html
    data["common_pod_template"] = "default_amd64, nope"
    assert "pod template &#x27;nope&#x27; does not exist" in as_admin.post("/pools/preview/", data).content.decode()
    assert ConfigRevision.objects.count() == before


def test_a_pod_template_preview_merges_the_draft_into_a_pool(as_admin):
    body = "spec:\n  nodeSelector:\n    preview-label: 'yes'\n"
    html = as_admin.post(
        "/config/templates/preview/",
        {"body": body, "template_name": "development_template", "preview_pool": "team-a"},
    ).content.decode()
    assert "preview-label" in html and "small-gpu" in html


def test_a_template_with_broken_json_is_refused_with_its_line(as_admin):
    response = as_admin.post("/config/templates/new/", {"name": "broken", "body": '{\n  "spec": {\n}'})
    assert response.status_code == 400
    assert "line 3" in response.context["form"].errors["body"][0]
    assert not selectors.config_state([ConfigType.POD_TEMPLATE])[ConfigType.POD_TEMPLATE].get("broken")


def test_rollback_needs_confirmation_and_restores_the_revision(as_admin):
    target = ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first().revision
    data = pool_form_data("team-a")
    data["description"] = "changed"
    as_admin.post("/pools/team-a/edit/", data)
    assert as_admin.post(f"/history/POOL/{target}/rollback/", {}).status_code == 400
    assert Pool.objects.get(name="team-a").description == "changed"
    page = as_admin.get(f"/history/POOL/{target}/rollback/").content.decode()
    assert "changed" in page and "team-a pool" in page
    response = as_admin.post(f"/history/POOL/{target}/rollback/", {"confirm": "on", "description": "undo"})
    assert response.status_code == 302
    assert Pool.objects.get(name="team-a").description == "team-a pool"
    assert ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first().action == "rollback"


def test_a_team_role_sees_only_the_history_of_its_pools_and_cannot_roll_back(as_team):
    page = as_team.get("/history/")
    shown = {(revision.config_type, revision.revision) for revision in page.context["page"].object_list}
    team_revisions = {
        (revision.config_type, revision.revision)
        for revision in ConfigRevision.objects.all()
        if any(name.startswith("team-a") for name in revision.changed) and revision.config_type == "POOL"
    }
    assert shown == team_revisions and team_revisions
    assert b"robotics-training" not in page.content
    assert as_team.get("/history/POOL/1/").status_code == 404  # the demo's pools: nothing the team may see
    assert as_team.post("/history/POOL/1/rollback/", {"confirm": "on"}).status_code == 404


def test_sync_now_polls_until_done_and_stops_with_286(as_admin):
    response = as_admin.post("/backends/dev-cluster-01/sync/")
    assert response.status_code == 200 and b'hx-trigger="load delay:0.5s, every 2s"' in response.content
    since = response.context["since"]
    status = as_admin.get(f"/backends/dev-cluster-01/sync/status/?since={since}")
    assert status.status_code == 286 and b"synced" in status.content


def test_sync_is_refused_to_those_without_backend_update(as_team):
    assert b"Sync now" not in as_team.get("/backends/").content
    assert as_team.post("/backends/dev-cluster-01/sync/").status_code == 404


def test_generating_a_pool_role_from_the_access_page(as_admin):
    response = as_admin.post("/access/", {"prefix": "robotics"})
    assert response.status_code == 302
    html = as_admin.get("/access/").content.decode()
    assert 'id="role-osmo-robotics"' in html and "robotics-training" in html


def test_posts_need_the_csrf_token(console, admin_user):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert strict.post("/pools/team-a/maintenance/", {"enable": "1"}).status_code == 403
    assert b'hx-headers=\'{"X-CSRFToken": "' in strict.get("/").content


def test_side_by_side_pairs_removed_and_added_lines():
    diff = '--- POOL:1/a\n+++ POOL:2/a\n@@ -1,3 +1,3 @@\n {\n-  "x": 1\n+  "x": 2\n+  "y": 3\n }'
    [section] = side_by_side(diff)
    assert section["title"] == "a"
    assert [row["kind"] for row in section["rows"]] == ["same", "change", "add", "same"]
    assert side_by_side(diff, True)[0]["rows"][2] == {"left": '  "y": 3', "right": None, "kind": "del"}
