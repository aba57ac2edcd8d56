"""Run:ai admins' and every user's habits in Chromium: a project created and edited from its form, the quota grid
wider than the screen with its units' column staying put and a project above its limit marked, a limited user's
navigation, and the console's own 404 page with DEBUG on. axe-core finds no WCAG 2 A or AA violation; the screens
are saved in ``var/screenshots/``."""

from __future__ import annotations

import pytest
from browser import accessibility_report, accessibility_violations, shoot, sign_in
from kube_objects import node, pod, write_list
from people import person, role
from playwright.sync_api import expect

from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Backend

# A laptop's screen, narrower than the grid of eight pools.
VIEWPORT = {"width": 1100, "height": 760}
POOLS = [f"gpu-{index}" for index in range(8)]


def gpu(pool, deserved, limit=-1, weight=2):
    return {"nodePool": pool, "gpu": {"deserved": deserved, "limit": limit, "overQuotaWeight": weight}}


@pytest.fixture
def lab(transactional_db, inventory_dir):
    """Eight pools of one 8-GPU node each; rnd's project vision holds 4 GPUs of gpu-0 (2 deserved: over quota,
    which is normal), ops's project infer 3 of a limit of 2 there (above its limit, which is not)."""
    nodes = [node(f"n-{index}", gpu=8, labels={"pool": pool}) for index, pool in enumerate(POOLS)]
    pods = [
        pod("train", node="n-0", gpu=4, namespace="runai-vision"),
        pod("serve", node="n-0", gpu=3, namespace="runai-infer"),
    ]
    path = write_list(inventory_dir / "lab.json", nodes + pods)
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"lab": {"kind": "file", "source": str(path)}},
            ConfigType.POOL: {pool: {"backend": "lab", "node_label": {"key": "pool", "value": pool}} for pool in POOLS},
            ConfigType.DEPARTMENT: {"rnd": {"resources": [gpu("gpu-0", 6)]}, "ops": {"resources": [gpu("gpu-0", 2)]}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": [gpu("gpu-0", 2)]},
                "infer": {"department": "ops", "resources": [gpu("gpu-0", 2)]},
            },
        },
        actor=services.SYSTEM,
    )
    # The limit is lowered under running work: infer now holds more than it may.
    services.quota_set(unit="infer", pool="gpu-0", figures={"gpu": {"limit": 2}}, actor=services.SYSTEM)
    services.backend_sync(backend=Backend.objects.get(name="lab"))


def project(name):
    return selectors.config_state([ConfigType.PROJECT])[ConfigType.PROJECT].get(name)


def check(page, name: str, found: dict) -> None:
    shoot(page, name)
    found[f"{name} ({page.url})"] = accessibility_violations(page)


def test_a_department_admin_creates_and_edits_a_project_in_the_browser(lab, live_server, page):
    person(
        "rnd-admin",
        role(
            "rnd-admin",
            {"actions": ["pool:Read"], "resources": ["pool/gpu-0", "pool/gpu-1"]},
            {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
            {"actions": ["department:Read", "department:Update"], "resources": ["department/rnd"]},
            {"actions": ["project:Read"], "resources": ["project/*"]},
        ),
    )
    sign_in(page, live_server.url, "rnd-admin")
    found: dict[str, list[str]] = {}
    page.goto(f"{live_server.url}/projects/")
    expect(page.locator("[data-testid=edit-project]")).to_have_count(1)  # vision's, not ops's infer
    page.click("[data-testid=new-project]")
    page.wait_for_url(f"{live_server.url}/projects/new/")

    page.fill("#id_name", "vision-labs")
    page.fill("#id_namespaces", "labs")
    row = page.locator("[data-testid=unit-quotas] tr[data-pool='gpu-0']")
    row.locator("input[name='deserved__gpu-0']").fill("9")
    row.locator("input[name='limit__gpu-0']").fill("4")  # deserved above the limit: refused, nothing saved
    page.click("[data-testid=save-unit]")
    expect(page.locator(".form-errors")).to_contain_text("The project was not saved.")
    expect(row.locator(".field-error")).to_contain_text("must not exceed gpu.limit (4)")
    assert project("vision-labs") is None
    check(page, "project-form-error", found)

    page.locator("[data-testid=unit-quotas] input[name='deserved__gpu-0']").fill("1.5")
    page.locator("[data-testid=unit-quotas] input[name='weight__gpu-0']").fill("3")
    page.click("[data-testid=save-unit]")
    page.wait_for_url(f"{live_server.url}/projects/")
    expect(page.locator("ul.messages")).to_contain_text("Saved project vision-labs.")
    assert project("vision-labs")["resources"][0]["gpu"] == {"deserved": 1.5, "limit": 4, "overQuotaWeight": 3}

    page.click("tr[data-project='vision-labs'] [data-testid=edit-project]")
    page.wait_for_url(f"{live_server.url}/projects/vision-labs/edit/")
    expect(page.locator("#id_name")).to_be_disabled()
    page.uncheck("input[name='over_quota__gpu-0']")
    page.fill("input[name='deserved__gpu-1']", "2")
    check(page, "project-form-edit", found)
    page.click("[data-testid=save-unit]")
    page.wait_for_url(f"{live_server.url}/projects/")
    resources = {entry["nodePool"]: entry["gpu"] for entry in project("vision-labs")["resources"]}
    assert resources == {
        "gpu-0": {"deserved": 1.5, "limit": 4, "overQuotaWeight": None},
        "gpu-1": {"deserved": 2, "limit": -1, "overQuotaWeight": 2},
    }
    assert {url: v for url, v in found.items() if v} == {}, accessibility_report(found)


def test_the_quota_grid_scrolls_sideways_with_its_units_in_view_and_marks_above_limit(lab, live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    found: dict[str, list[str]] = {}
    page.goto(f"{live_server.url}/quotas/")
    frame = page.locator("[data-testid=quota-grid-scroll]")
    width, visible = frame.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert width > visible  # eight pools do not fit the screen
    unit = page.locator("tr[data-unit='project/vision'] th[scope=row]")
    before = unit.bounding_box()
    frame.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
    page.wait_for_function("() => document.querySelector('[data-testid=quota-grid-scroll]').scrollLeft > 0")
    after = unit.bounding_box()
    assert frame.evaluate("e => e.scrollLeft") > 300
    assert abs(after["x"] - before["x"]) < 1 and after["width"] == before["width"]
    # The last pool's cells passed under the units' column, which stays opaque above them.
    last = page.locator("tr[data-unit='project/vision'] td[data-pool='gpu-7']").bounding_box()
    assert last["x"] >= after["x"] + after["width"] - 1
    covering = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('th, td').getAttribute('scope')",
        [after["x"] + after["width"] / 2, after["y"] + 8],
    )
    assert covering == "row"
    shoot(page, "quota-grid-scrolled")
    frame.evaluate("e => { e.scrollLeft = 0; }")

    infer = page.locator("tr[data-unit='project/infer'] td[data-pool='gpu-0']")
    expect(infer.locator("[data-testid=above-limit]")).to_have_text("above limit")
    vision = page.locator("tr[data-unit='project/vision'] td[data-pool='gpu-0']")
    expect(vision.locator("[data-testid=above-limit]")).to_have_count(0)
    expect(vision.locator(".quota-held")).to_contain_text("2 over quota")
    # Over quota is drawn like the rest of the line; above the limit has a colour of its own.
    held, over = vision.locator(".quota-held"), vision.locator(".over-quota")
    assert over.evaluate("e => getComputedStyle(e).color") == held.evaluate("e => getComputedStyle(e).color")
    mark = infer.locator("[data-testid=above-limit]").evaluate("e => getComputedStyle(e).backgroundColor")
    assert mark not in ("rgba(0, 0, 0, 0)", held.evaluate("e => getComputedStyle(e).backgroundColor"))
    check(page, "quota-grid-above-limit", found)
    assert {url: v for url, v in found.items() if v} == {}, accessibility_report(found)


def test_a_limited_user_sees_only_the_pages_they_may_use(lab, live_server, page):
    person("researcher", role("gpu-0-reader", {"actions": ["pool:Read"], "resources": ["pool/gpu-0"]}))
    sign_in(page, live_server.url, "researcher")
    nav = page.locator("nav[aria-label=Main] a")
    shown = nav.all_inner_texts()
    assert shown == [
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
    assert "Templates" not in shown and "Access" not in shown and "Backends" not in shown
    expect(page.locator("nav[aria-label=Main] a[aria-current=page]")).to_have_text("Pools")
    page.click("nav[aria-label=Main] >> text=Quotas")
    page.wait_for_url(f"{live_server.url}/quotas/")
    expect(page.locator("nav[aria-label=Main] a[aria-current=page]")).to_have_text("Quotas")
    found = {"navigation": accessibility_violations(page)}
    shoot(page, "navigation-limited")
    assert {url: v for url, v in found.items() if v} == {}, accessibility_report(found)


def test_the_404_page_is_the_consoles_own_with_debug_on(lab, live_server, page, settings):
    settings.DEBUG = True
    person("researcher", role("gpu-0-reader", {"actions": ["pool:Read"], "resources": ["pool/gpu-0"]}))
    sign_in(page, live_server.url, "researcher")
    found = {}
    for path in ("/no/such/page/", "/pools/gpu-5/"):  # nothing there, and a pool hidden from them
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 404
        expect(page.locator("h1")).to_have_text("Not found")
        expect(page.locator("nav[aria-label=Main]")).to_be_visible()
        assert "URLconf" not in page.content()
        found[path] = accessibility_violations(page)
    shoot(page, "not-found-debug")
    icon = page.goto(f"{live_server.url}/favicon.ico")
    assert icon.status == 200 and icon.url.endswith("/static/favicon.svg")
    assert {url: v for url, v in found.items() if v} == {}, accessibility_report(found)
