"""The GPU utilization pages in Chromium: the pool page's charts have a time axis that spans exactly the
chosen window and hold data, on a fresh demo (one sample a chart) and on a demo with its history backfilled; the
idle, consumption and node GPU pages render. Each screen is saved in ``var/screenshots/`` and axe-core finds no
WCAG 2 A or AA violation on it."""

from __future__ import annotations

import pytest
from browser import accessibility_report, accessibility_violations, shoot, sign_in
from people import person

from accounts.access import SYSTEM
from pools import selectors, services

VIEWPORT = {"width": 1360, "height": 900}
POOL = "robotics-training"
WINDOWS = {"1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
# What a chart drew: the window its data asked for, uPlot's x scale, and the samples it holds.
CHART_STATE = """box => ({
    start: Number(box.getAttribute('data-start')),
    end: Number(box.getAttribute('data-end')),
    min: box.uplot ? box.uplot.scales.x.min : null,
    max: box.uplot ? box.uplot.scales.x.max : null,
    points: Number(box.getAttribute('data-points')),
    status: box.parentElement.querySelector('[data-chart-status]').textContent,
})"""


@pytest.fixture
def fresh_demo(transactional_db):
    """The demo as a first ``make run`` has it a minute later: a usage sample and two utilization rounds."""
    assert services.demo_install()
    services.usage_sample_record()
    services.utilization_record_all()
    services.utilization_record_all()


def chart(page, url_part: str, period: str | None = None) -> dict:
    """The state of the chart whose data URL holds ``url_part``, after choosing ``period`` when given."""
    box = page.locator(f"[data-usage-url*='{url_part}']")
    if period:
        box.locator("xpath=ancestor::*[@data-chart][1]").locator(f"[data-range-button='{period}']").click()
        page.wait_for_function(
            "([box, period]) => box.getAttribute('data-range') === period && !box.hasAttribute('aria-busy')"
            " && box.uplot && Number(box.getAttribute('data-end')) - Number(box.getAttribute('data-start')) > 0",
            arg=[box.element_handle(), period],
        )
    else:
        page.wait_for_function("box => box.uplot && !box.hasAttribute('aria-busy')", arg=box.element_handle())
    return box.evaluate(CHART_STATE)


def assert_spans_window(state: dict, seconds: int) -> None:
    """The x axis runs exactly over the chosen window, whatever the samples (one included)."""
    assert round(state["end"] - state["start"]) == seconds, state
    assert state["min"] == pytest.approx(state["start"], abs=1), state
    assert state["max"] == pytest.approx(state["end"], abs=1), state


def look(page, name: str, found: dict) -> None:
    shoot(page, name)
    found[f"{name} ({page.url})"] = accessibility_violations(page)


def test_the_pool_charts_span_the_chosen_window_on_a_fresh_demo(fresh_demo, live_server, page):
    found: dict[str, list[str]] = {}
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    page.goto(f"{live_server.url}/pools/{POOL}/")
    usage = chart(page, "/usage/")
    utilization = chart(page, "/utilization/")
    look(page, "utilization-01-pool-fresh", found)
    # One sample each, a minute old: a dot at the right edge of a 24-hour axis, not an axis over years.
    assert_spans_window(usage, WINDOWS["24h"])
    assert_spans_window(utilization, WINDOWS["24h"])
    assert usage["points"] >= 1 and utilization["points"] >= 1, (usage, utilization)
    assert usage["status"] == "" and utilization["status"] == ""
    for period in ("1h", "7d", "30d"):
        assert_spans_window(chart(page, "/utilization/", period), WINDOWS[period])
    for period in ("1h", "7d"):
        assert_spans_window(chart(page, "/usage/", period), WINDOWS[period])
    look(page, "utilization-02-pool-fresh-7d", found)

    node = next(row.node for row in selectors.resource_index(user=SYSTEM, filters={"pool": POOL}))
    for name, url in (
        ("utilization-03-idle", "/idle/"),
        ("utilization-04-idle-pool", f"/idle/?pool={POOL}"),
        ("utilization-05-consumption", "/consumption/?by=user&period=24h"),
        ("utilization-06-node-gpus", f"/nodes/{node}/gpus/"),
        ("utilization-07-backends", "/backends/"),
        ("utilization-08-overview", "/"),
    ):
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        look(page, name, found)
    page.goto(f"{live_server.url}/nodes/{node}/gpus/")
    node_chart = chart(page, "/gpus/history/")
    assert_spans_window(node_chart, WINDOWS["24h"])
    assert node_chart["points"] > 1
    # A workload's GPUs turn idle as time passes: the page shows those idle between the two reads around it.
    before = len(selectors.idle_workloads(user=SYSTEM))
    page.goto(f"{live_server.url}/idle/")
    shown = page.locator("[data-idle]").count()
    assert 0 < before <= shown <= len(selectors.idle_workloads(user=SYSTEM))
    report = accessibility_report(found)
    assert not report, f"axe-core finds WCAG 2 A/AA violations:\n{report}"


def test_the_pool_charts_show_the_backfilled_history(transactional_db, live_server, page):
    assert services.demo_install()
    if not hasattr(services, "demo_history_backfill"):
        pytest.skip("the demo has no history backfill yet")
    assert services.demo_history_backfill(days=1)
    services.utilization_record_all()
    services.usage_history_compact()  # as the worker does when it starts: the hours of the longer periods
    services.utilization_history_compact()
    found: dict[str, list[str]] = {}
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    page.goto(f"{live_server.url}/pools/{POOL}/")
    usage = chart(page, "/usage/")
    utilization = chart(page, "/utilization/")
    assert_spans_window(usage, WINDOWS["24h"])
    assert_spans_window(utilization, WINDOWS["24h"])
    assert usage["points"] >= 20 and utilization["points"] >= 20, (usage, utilization)  # hourly over a day
    look(page, "utilization-09-pool-backfilled", found)
    week = chart(page, "/utilization/", "7d")
    assert_spans_window(week, WINDOWS["7d"])
    assert week["points"] > 10
    look(page, "utilization-10-pool-backfilled-7d", found)
    report = accessibility_report(found)
    assert not report, f"axe-core finds WCAG 2 A/AA violations:\n{report}"
