"""Where a gang can start, read in a real browser on the demo (SEMANTICS §11): the pool page draws robotics-training's
racks, the GB200 NVL72 rack among them, as rows of nodes coloured by their free GPUs, with the same figures as the
capacity selector; the what-if then asks whether a 16×4 gang can start inside the NVLink domain. Each screen is saved
in ``var/screenshots/`` and axe-core finds no WCAG 2 A or AA violation on it."""

from __future__ import annotations

import pytest
from browser import sign_in
from people import person
from test_web_browser import VIEWPORT, assert_accessible, live_demo, look  # noqa: F401 (the fixture, the page's size)

from accounts.access import SYSTEM
from pools import selectors
from pools.models import Pool


@pytest.mark.usefixtures("live_demo")
def test_the_racks_of_a_pool_drawn_and_a_gang_asked_inside_the_nvlink_domain(live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    found: dict[str, list[str]] = {}
    sign_in(page, live_server.url, "ops")
    page.goto(f"{live_server.url}/pools/robotics-training/")
    picture = page.locator("[data-testid=rack-picture]")
    assert "By rack" in picture.locator("figcaption").inner_text()
    expected = selectors.pool_capacity_of(Pool.objects.get(name="robotics-training"), picture=True)["picture"]
    rows = picture.locator(".rack-row")
    assert rows.count() == len(expected["rows"])
    for row, wanted in zip(rows.all(), expected["rows"], strict=True):
        assert row.get_attribute("data-domain") == (wanted["path"] or "")
        cells = row.locator(".gpu-node")
        assert [cell.get_attribute("data-node") for cell in cells.all()] == [n["name"] for n in wanted["nodes"]]
        assert [int(cell.get_attribute("data-free")) for cell in cells.all()] == [n["free"] for n in wanted["nodes"]]
        # the colour says how much is free: all, some or none of the node's GPUs
        assert [cell.get_attribute("class").split()[-1] for cell in cells.all()] == [
            n["state"] for n in wanted["nodes"]
        ]
    # one NVL72 rack: 18 trays of 4 GPUs, those available now drawn (the simulated fleet takes one down now and then)
    nvl = picture.locator(".rack-row[data-domain$='/gb200-c-r1'] .gpu-node")
    assert 12 <= nvl.count() <= 18
    assert {cell.inner_text().split("/")[1] for cell in nvl.all()} == {"4"}
    # the pool's nodes, from the node table filtered to the pool, load once the page is shown
    nodes = page.locator("#node-table tbody tr")
    nodes.first.wait_for()
    assert nodes.count() >= 1 and "rows" in page.locator("#node-table .table-foot").inner_text()
    look(page, "pool-racks", found)

    # The planner's question: can 16 pods of 4 GPUs start inside one NVLink domain now?
    asked = selectors.pool_check(
        user=SYSTEM,
        pool_name="robotics-training",
        platform="gb200-platform",
        user_values={"USER_GPU": 4},
        pods=16,
        topology={"level": "gpu-clique", "required": True},
    )["topology"]
    response = page.request.post(
        f"{live_server.url}/api/pools/robotics-training/check/",
        data={
            "platform": "gb200-platform",
            "variables": {"USER_GPU": 4},
            "pods": 16,
            "topology": {"level": "gpu-clique", "required": True},
        },
        headers={"X-CSRFToken": next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")},
    )
    assert response.status == 200, response.text()
    assert response.json()["topology"] == asked
    assert asked["message"].startswith(("Fits in one gpu-clique now", "No gpu-clique could take"))
    assert_accessible(found)
