"""Why a workload waits, read in a real browser on the demo fleet (SEMANTICS §10): from the Workloads page's pending
workloads, filtered by reason, to a workload's page with its reason, its victims and its figures laid out. Each screen
is saved in ``var/screenshots/`` and axe-core finds no WCAG 2 A or AA violation on it."""

from __future__ import annotations

import pytest
from browser import sign_in
from people import person
from test_web_browser import VIEWPORT, assert_accessible, live_demo, look  # noqa: F401 (the fixture, the page's size)

from accounts.access import SYSTEM
from pools import selectors


def waiting(reason: str) -> dict:
    """The first waiting workload of the demo whose reason is ``reason``, with its verdict and victims."""
    row = next(iter(selectors.workloads_visible(user=SYSTEM, filters={"pending": "1", "reason": reason})))
    return selectors.workload_get(user=SYSTEM, backend=row["backend"], namespace=row["namespace"], name=row["name"])


def open_waiting(page, base_url: str, reason: str, found: dict[str, list[str]]) -> dict:
    """Open the pending workloads of ``reason`` on the Workloads page, then the first one's page; its figures."""
    workload = waiting(reason)
    page.goto(f"{base_url}/workloads/?pending=1&reason={reason}")
    row = page.locator(f"tr[data-workload='{workload['backend']}/{workload['namespace']}/{workload['name']}']")
    assert row.locator("td >> nth=10").inner_text() == reason
    look(page, f"workloads-pending-{reason.replace('_', '-')}", found)
    row.locator(f"a:has-text('{workload['name']}')").click()
    page.wait_for_url(f"**/workloads/{workload['backend']}/{workload['namespace']}/{workload['name']}/")
    return workload


@pytest.mark.usefixtures("live_demo")
def test_a_waiting_workloads_reason_victims_and_figures_read_in_the_browser(live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    found: dict[str, list[str]] = {}
    sign_in(page, live_server.url, "ops")
    page.goto(f"{live_server.url}/workloads/?pending=1")
    assert page.locator("table.workloads tbody tr[data-workload]").count() > 0
    look(page, "workloads-pending", found)

    # Reclaim: the reason, and the workloads whose GPUs the scheduler would take back.
    reclaiming = open_waiting(page, live_server.url, "reclaim", found)
    verdict = page.locator("[data-testid=workload-verdict]")
    assert verdict.locator("li > code").first.inner_text() == "reclaim"
    assert "waits: reclaim" in page.inner_text(".page-head p")
    victims = page.locator("[data-testid=workload-victims] tbody tr")
    names = [row.locator("td >> nth=1").inner_text() for row in victims.all()]
    assert names and names == [victim["name"] for victim in reclaiming["victims"]]
    look(page, "workload-reclaim", found)
    victims.first.locator("a").click()  # a victim is a workload with a page of its own
    page.wait_for_url(f"**/{reclaiming['victims'][0]['namespace']}/{names[0]}/")
    assert names[0] in page.inner_text("h1")

    # No capacity: the free GPUs and the largest free block per product, as "label: value".
    open_waiting(page, live_server.url, "no_capacity", found)
    check = page.locator("[data-testid=workload-verdict] ol > li").first
    assert check.locator("code").inner_text() == "no_capacity"
    figures = check.locator("[data-testid=verdict-figures] li").all_inner_texts()
    labels = [figure.split(":")[0] for figure in figures]
    assert labels == ["free GPUs", "largest free block"]
    assert "{" not in "".join(figures) and "=" not in "".join(figures)  # no mapping printed raw
    assert " on " in figures[1]  # a product's block and the nodes holding it
    look(page, "workload-no-capacity", found)
    assert_accessible(found)
