"""The quota grid and a pool's quota dashboard (SEMANTICS §9) in Chromium, on the demo: type a quota and see the
warnings it would bring before anything is saved, save every changed cell at once, read the dashboard's chart.
axe-core finds no WCAG 2 A or AA violation; the screens are saved in ``var/screenshots/``."""

from __future__ import annotations

import pytest
from browser import accessibility_report, accessibility_violations, shoot, sign_in
from people import person
from playwright.sync_api import expect

from pools import selectors, services
from pools.choices import ConfigType
from pools.models import ConfigRevision


@pytest.fixture
def demo_quotas(transactional_db):
    assert services.demo_install()
    services.usage_sample_record()


def deserved(unit: str, pool: str):
    body = selectors.config_state([ConfigType.PROJECT])[ConfigType.PROJECT][unit]
    return {entry["nodePool"]: entry["gpu"]["deserved"] for entry in body["resources"]}.get(pool)


def test_edit_quotas_in_place_see_the_warnings_then_save_them_at_once(demo_quotas, live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    found: dict[str, list[str]] = {}

    page.click("nav[aria-label=Main] >> text=Quotas")
    page.wait_for_url(f"{live_server.url}/quotas/")
    before = ConfigRevision.objects.count()
    cell = page.locator("tr[data-unit='project/team-a'] td[data-pool='robotics-training']")
    cell.locator("input[name$='-deserved']").fill("70")
    # The research department deserves 64 there: its projects would deserve 70 + 40 + 16.
    # The warnings may be on the page already (the demo fleet's state now may over-subscribe a pool): wait for the
    # edit's warning, which the check sent on input brings.
    expect(page.locator("[data-testid=quota-warnings]")).to_contain_text("deserve 126 GPUs, more than its 64")
    assert ConfigRevision.objects.count() == before and deserved("team-a", "robotics-training") == 4
    shoot(page, "quota-grid-warning")
    found[page.url] = accessibility_violations(page)

    page.locator("tr[data-unit='project/robotics'] td[data-pool='robotics-training'] input[name$='-deserved']").fill(
        "30"
    )
    page.fill("#id_description", "rebalance training")
    page.click("[data-testid=save-quotas]")
    page.wait_for_selector("ul.messages >> text=Saved 2 quotas")
    assert (deserved("team-a", "robotics-training"), deserved("robotics", "robotics-training")) == (70, 30)
    assert ConfigRevision.objects.count() == before + 1  # both projects: one PROJECT revision
    assert ConfigRevision.objects.latest("created_at").description == "rebalance training"

    page.click("table.quota-grid thead a >> text=robotics-training")
    page.wait_for_url(f"{live_server.url}/quotas/robotics-training/")
    page.wait_for_selector("[data-chart] .uplot")  # the minute's sample is on the chart
    assert page.locator("[data-chart-status]").inner_text() == ""
    assert page.locator("tr[data-unit='project/team-a'] td").first.inner_text() == "70"
    shoot(page, "quota-dashboard")
    found[page.url] = accessibility_violations(page)
    assert {url: v for url, v in found.items() if v} == {}, accessibility_report(found)
