"""The console in a real browser (Chromium driven by Playwright) against a live server on the demo fleet.

One journey, as an administrator would take it: sign in, watch the overview update live, open a pool, edit it
with a missing template reference (inline error, nothing saved), fix it, run a what-if check, roll the change
back. And every page of the catalogue, as an administrator and as someone without roles sees it. Each screen
is saved in ``var/screenshots/`` for people to look at, and axe-core finds no WCAG 2 A or AA violation on it.
"""

from __future__ import annotations

import time

import pytest
from browser import TIMEOUT_MS, accessibility_report, accessibility_violations, csp_violations, shoot, sign_in
from people import PASSWORD, person
from viewtests import PAGE_DOORS

from accounts.access import SYSTEM
from pools import selectors, services
from pools.inventory.sources import SimulatedSource
from pools.models import Backend, ConfigRevision
from pools.services.membership import node_pool_names

VIEWPORT = {"width": 1360, "height": 640}
# Every page of the catalogue a browser opens, at URLs of the demo (a door may have several: kinds, states).
PAGES = [
    ("GET /", "/"),
    ("GET /pools/{name}/", "/pools/robotics-training/"),
    ("GET /pools/{name}/edit/", "/pools/team-development/edit/"),
    ("GET /pools/new/", "/pools/new/"),
    ("GET /nodes/", "/nodes/?pool=robotics-training"),
    ("GET /node-pools/", "/node-pools/"),
    ("GET /label-pools/new/", "/label-pools/new/?q=l40s-r"),
    ("GET /label-pools/{name}/delete/", "/label-pools/l40s-nodes/delete/"),
    ("GET /nodes/{name}/labels/", "/nodes/l40s-r-001/labels/"),
    ("GET /nodes/{name}/gpus/", "/nodes/l40s-r-001/gpus/"),
    ("GET /idle/", "/idle/"),
    ("GET /consumption/", "/consumption/?by=user&period=7d"),
    ("GET /quotas/", "/quotas/"),
    ("GET /workloads/", "/workloads/?pending=1"),
    ("GET /workloads/{backend}/{namespace}/{name}/", "/workloads/gpu-cluster-01/robotics/locomotion-pretrain/"),
    ("GET /my/projects/", "/my/projects/"),
    ("GET /quotas/{pool}/", "/quotas/robotics-training/"),
    ("GET /projects/", "/projects/"),
    ("GET /projects/new/", "/projects/new/?department=research"),
    ("GET /projects/{name}/edit/", "/projects/team-a/edit/"),
    ("GET /departments/", "/departments/"),
    ("GET /departments/new/", "/departments/new/"),
    ("GET /departments/{name}/edit/", "/departments/research/edit/"),
    ("GET /backends/", "/backends/"),
    ("GET /config/templates/", "/config/templates/"),
    ("GET /config/validations/", "/config/validations/"),
    ("GET /config/roles/", "/config/roles/"),
    ("GET /config/templates/new/", "/config/templates/new/"),
    ("GET /config/validations/new/", "/config/validations/new/"),
    ("GET /config/roles/new/", "/config/roles/new/"),
    ("GET /config/templates/{name}/edit/", "/config/templates/training_optimized/edit/"),
    ("GET /config/validations/{name}/edit/", "/config/validations/default_cpu/edit/"),
    ("GET /config/roles/{name}/edit/", "/config/roles/osmo-user/edit/"),
    ("GET /what-if/", "/what-if/"),
    ("GET /what-if/", "/what-if/?pool=robotics-training&platform=h100-platform&cpu=4&gpu=1&memory=16Gi"),
    ("GET /history/", "/history/"),
    ("GET /history/{config_type}/{revision}/", "/history/POOL/1/"),
    ("GET /history/{config_type}/{revision}/", "/history/POOL/2/"),
    ("GET /history/{config_type}/{revision}/rollback/", "/history/POOL/1/rollback/"),
    ("GET /access/", "/access/"),
    ("GET /access/users/{username}/", "/access/users/ops/"),
    ("GET /accounts/profile/", "/accounts/profile/"),
]
# Doors that are not pages of their own: each is checked on the page that shows it.
IN_PAGES = {
    "GET /pools/{name}/usage/": "the pool page's usage chart",
    "GET /pools/{name}/utilization/": "the pool page's utilization chart (test_utilization_browser.py)",
    "GET /nodes/{name}/gpus/history/": "the node GPUs page's chart (test_utilization_browser.py)",
    "GET /quotas/{pool}/usage/": "the quota dashboard's chart (test_quota_grid_browser.py)",
    "GET /backends/{name}/sync/status/": "the backends page after Sync now",
}
# What someone without roles sees: empty pages, and a refusal.
NEWCOMER_PAGES = ["/", "/nodes/", "/pools/new/", "/accounts/profile/"]


@pytest.fixture
def live_demo(transactional_db):
    """The demo, served by a live server."""
    assert services.demo_install()


def sync_later(backend_name: str, seconds_ahead: float) -> None:
    """Sync a simulated backend as its fleet will be ``seconds_ahead`` from now (its pods come and go with time)."""
    backend = Backend.objects.get(name=backend_name)
    moment = time.time() + seconds_ahead
    source = SimulatedSource(
        seed=backend.seed or 0,
        size=backend.size,
        blueprint_path=backend.source,
        pool_labels=lambda nodes: node_pool_names(backend, nodes),
        clock=lambda: moment,
    )
    services.backend_sync(backend=backend, source=source)


def slug(url: str) -> str:
    """``/pools/new/?x=1``: ``pools-new``, a part of a screenshot's name."""
    return url.split("?")[0].strip("/").replace("/", "-") or "overview"


def look(page, name: str, found: dict[str, list[str]]) -> None:
    """Save the page as it is now as screenshot ``name`` and note axe-core's violations on it, by name and URL."""
    shoot(page, name)
    found[f"{name} ({page.url})"] = accessibility_violations(page)


def assert_accessible(found: dict[str, list[str]]) -> None:
    report = accessibility_report(found)
    assert not report, f"axe-core finds WCAG 2 A/AA violations:\n{report}"


def gpus_in_use(admin, names: set[str]) -> str:
    rows = [row for row in selectors.pool_list(user=admin) if row["name"] in names and not row["shared"]]
    return f"{sum(row['gpu']['used_on_nodes'] for row in rows):,}"  # the header's GPUs in use


def test_an_admin_watches_edits_checks_and_rolls_back_in_a_browser(live_demo, live_server, page):
    admin = person("ops", is_superuser=True, is_staff=True)
    found: dict[str, list[str]] = {}

    # Sign in through the local form.
    page.goto(f"{live_server.url}/pools/team-development/")
    assert "/accounts/login/" in page.url
    look(page, "00-sign-in", found)
    page.fill("#id_username", "ops")
    page.fill("#id_password", PASSWORD)
    page.click("form[action*='login'] [type=submit]")
    page.wait_for_url(f"{live_server.url}/pools/team-development/")

    # The overview updates itself: filters, scroll position and page state survive the refresh.
    page.goto(f"{live_server.url}/")
    page.fill("#id_q", "robotics")
    page.wait_for_function("document.querySelectorAll('#pool-table tr[data-pool]').length === 3")
    page.evaluate("window.consoleMarker = 'kept'; window.scrollTo(0, 200)")
    scrolled = page.evaluate("window.scrollY")
    stamp = page.inner_text("[data-testid=updated-at]")
    look(page, "01-overview", found)
    sync_later("gpu-cluster-01", 1800)
    sync_later("graphics-cluster-01", 1800)
    expected = gpus_in_use(admin, {"robotics-training", "robotics-simulation", "robotics-inference"})
    page.wait_for_function(
        "([stamp, expected]) => {"
        " const now = document.querySelector('[data-testid=updated-at]').innerText;"
        " const used = document.querySelector('[data-testid=gpu-used]').innerText.split(' ')[0];"
        " return now !== stamp && used === expected; }",
        arg=[stamp, expected],
    )
    assert page.evaluate("window.consoleMarker") == "kept"
    assert page.input_value("#id_q") == "robotics"
    assert page.evaluate("window.scrollY") == scrolled
    assert page.locator("#pool-table tr[data-pool]").count() == 3
    look(page, "02-overview-updated", found)

    # A pool page: platforms with their merged templates, nodes, workloads.
    page.fill("#id_q", "")
    page.click("a:has-text('team-development')")
    page.wait_for_url("**/pools/team-development/")
    assert page.locator("details.platform").count() == 2
    assert "nodeSelector" in page.inner_text("details.platform[open] pre.doc >> nth=0")
    look(page, "03-pool", found)

    # Edit with a missing template reference: the error sits next to the field and nothing is saved.
    revisions = ConfigRevision.objects.count()
    page.click("text=Edit pool")
    page.wait_for_selector("#preview h3")
    look(page, "04-pool-edit", found)
    page.fill("#id_common_pod_template", "default_amd64, development_template, gpu_typo_template")
    page.click("button:has-text('Save pool')")
    error = page.locator("#id_common_pod_template-error")
    error.wait_for()
    assert "gpu_typo_template" in error.inner_text()
    assert ConfigRevision.objects.count() == revisions
    look(page, "05-pool-edit-error", found)

    # Fix it and save: the change is a revision.
    page.fill("#id_common_pod_template", "default_amd64, development_template")
    page.fill("#id_description", "Development pool, edited in the browser")
    page.fill("#id_change_description", "Describe the pool better")
    page.click("button:has-text('Save pool')")
    page.wait_for_url("**/pools/team-development/")
    assert "edited in the browser" in page.inner_text(".page-head")
    assert ConfigRevision.objects.count() == revisions + 1

    # What-if: the merged spec and the verdict per node, without submitting anything.
    page.click("text=What-if check")
    page.fill("#id_platform", "small-gpu")
    page.fill("#id_gpu", "1")
    page.click("button:has-text('Check')")
    verdict = page.locator("[data-testid=verdict]")
    verdict.wait_for()
    assert "Fits" in verdict.inner_text()
    assert "a10g-d-001" in page.inner_text("#what-if-result")
    look(page, "06-what-if", found)

    # History: the change side by side, then roll back to the revision before it.
    latest = ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first()
    page.goto(f"{live_server.url}/history/?type=POOL")
    look(page, "07-history", found)
    page.click(f"a:has-text('POOL:{latest.revision}')")
    assert "edited in the browser" in page.inner_text("table.diff")
    look(page, "08-revision-diff", found)
    page.goto(f"{live_server.url}/history/POOL/{latest.revision - 1}/")
    page.click("text=Roll back to this revision")
    look(page, "09-rollback-confirm", found)
    page.check("#id_confirm")
    page.click("button:has-text('Roll back')")
    page.wait_for_url(f"**/history/POOL/{latest.revision + 1}/")
    pool = selectors.pool_get("team-development", user=SYSTEM)
    assert pool.description == "Development pool for prototyping and testing"

    # The other pages, for the record: nodes, backends (with a sync), templates with the live preview, access.
    page.goto(f"{live_server.url}/nodes/?pool=robotics-training")
    look(page, "10-nodes", found)
    page.goto(f"{live_server.url}/backends/")
    page.click("#sync-dev-cluster-01 button")
    page.wait_for_selector("#sync-dev-cluster-01 [data-sync-state=done]")
    look(page, "11-backends", found)
    page.goto(f"{live_server.url}/config/templates/training_optimized/edit/")
    page.wait_for_selector("#preview h3")
    look(page, "12-template-edit", found)
    page.goto(f"{live_server.url}/access/")
    look(page, "13-access", found)
    assert_accessible(found)


def test_every_page_of_the_catalogue_is_checked_in_the_browser():
    pages = {door for door in PAGE_DOORS if door.startswith("GET ")}
    assert sorted(pages - {door for door, _ in PAGES} - set(IN_PAGES)) == []


def test_every_page_meets_wcag_2_a_and_aa(live_demo, live_server, browser, page):
    person("ops", is_superuser=True, is_staff=True)
    person("newcomer")
    services.pool_maintenance_set(name="team-development", enable=True, actor=services.SYSTEM)  # POOL:2, a diff
    found: dict[str, list[str]] = {}
    page.goto(f"{live_server.url}/accounts/login/")
    look(page, "page-sign-in", found)
    sign_in(page, live_server.url, "ops")
    for index, (_, url) in enumerate(PAGES):
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")  # the previews, the chart and the tables htmx loads
        look(page, f"page-{index:02d}-{slug(url)}", found)
    page.goto(f"{live_server.url}/backends/")
    page.click("#sync-dev-cluster-01 button")
    page.wait_for_selector("#sync-dev-cluster-01 [data-sync-state=done]")
    look(page, "page-backends-synced", found)
    page.goto(f"{live_server.url}/pools/no-such-pool/")
    look(page, "page-not-found", found)

    newcomer = browser.new_context(viewport={"width": 1360, "height": 640})
    newcomer_page = newcomer.new_page()
    sign_in(newcomer_page, live_server.url, "newcomer")
    for url in NEWCOMER_PAGES:
        newcomer_page.goto(live_server.url + url)
        look(newcomer_page, f"newcomer-{slug(url)}", found)
    newcomer.close()
    assert_accessible(found)


def test_every_page_runs_under_the_content_security_policy(live_demo, live_server, browser):
    """Each page loads, runs its scripts and draws its charts with the policy in force (SEMANTICS §7.4): the browser
    reports no refusal, and a behaviour that used to be an inline handler (a filter that applies on change) works."""
    person("ops", is_superuser=True, is_staff=True)
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=False)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    sign_in(page, live_server.url, "ops")
    refused = {}
    # The pages that run scripts: htmx's live tables and forms, the charts, the filters, the API's readers, the admin.
    scripted = ["/", "/pools/robotics-training/", "/nodes/?pool=robotics-training", "/quotas/"]
    scripted += ["/quotas/robotics-training/", "/nodes/l40s-r-001/gpus/", "/projects/", "/pools/team-development/edit/"]
    for url in scripted + ["/api/docs/", "/api/redoc/", "/admin/", "/admin/pools/pool/"]:
        # Scripts are what the policy is about here; an image from elsewhere (Redoc's logo) it refuses, as it should.
        found = [text for text in csp_violations(page, live_server.url + url) if "script-src" in text]
        if found:
            refused[url] = found
    assert refused == {}
    page.goto(f"{live_server.url}/projects/")
    department = page.locator("#id_department option").nth(1).get_attribute("value")
    with page.expect_navigation():
        page.select_option("#id_department", department)
    assert f"department={department}" in page.url
    context.close()
