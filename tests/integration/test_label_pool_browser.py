"""In Chromium, against the real kube-apiserver: create a label pool by picking nodes from the node table, see it
on the node-pools page, delete it (its workload listed, forced); the cluster's labels follow each step, and
axe-core finds no WCAG 2 A or AA violation on the pages on the way."""

from __future__ import annotations

import pytest
from browser import accessibility_report, accessibility_violations, shoot, sign_in
from people import person

from pools import selectors, services
from pools.choices import ConfigType
from pools.models import NodeMembership

pytestmark = pytest.mark.services

KEY = "runwhere.ai/pool"


@pytest.fixture
def cluster(transactional_db, kube, kube_backend):
    """Three nodes in the real cluster, a pod on one, and a writable backend whose default pool is `default`."""
    for name in ("gpu-a1", "gpu-a2", "gpu-b1"):
        kube.add_node(name, gpu=8)
    kube.add_pod("train-1", node="gpu-a1", gpu=2)
    kube_backend("gpu-cluster")
    services.config_apply(changes={ConfigType.POOL: {"default": {"backend": "gpu-cluster"}}}, actor=services.SYSTEM)
    body = selectors.config_state([ConfigType.BACKEND])[ConfigType.BACKEND]["gpu-cluster"]
    services.config_apply(
        changes={ConfigType.BACKEND: {"gpu-cluster": {**body, "default_pool": "default"}}}, actor=services.SYSTEM
    )
    services.backend_sync_now(name="gpu-cluster", actor=services.SYSTEM)
    return kube


def pool_label(kube, node: str):
    return (kube.api.read_node(node).metadata.labels or {}).get(KEY)


def members(pool: str) -> set[str]:
    return set(NodeMembership.objects.filter(pool__name=pool).values_list("node__name", flat=True))


def test_create_a_label_pool_from_the_node_table_see_it_and_delete_it(cluster, live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    found: dict[str, list[str]] = {}

    page.goto(f"{live_server.url}/node-pools/")
    page.click("[data-testid=new-label-pool]")
    page.wait_for_url(f"{live_server.url}/label-pools/new/")
    page.fill("#id_q", "gpu-a")  # the node table filters as one types
    page.wait_for_function("document.querySelectorAll('#label-pool-nodes input[name=nodes]').length === 2")
    page.check("#pick-gpu-a1")
    page.check("#pick-gpu-a2")
    page.fill("#id_name", "train-pool")
    page.fill("#id_description", "Training")
    shoot(page, "label-pool-new")
    found[page.url] = accessibility_violations(page)
    page.click("button:has-text('Create pool and label the nodes')")
    page.wait_for_url(f"{live_server.url}/pools/train-pool/")

    assert (pool_label(cluster, "gpu-a1"), pool_label(cluster, "gpu-a2"), pool_label(cluster, "gpu-b1")) == (
        "train-pool",
        "train-pool",
        None,
    )
    assert members("train-pool") == {"gpu-a1", "gpu-a2"} and members("default") == {"gpu-b1"}

    page.goto(f"{live_server.url}/node-pools/")
    row = page.locator("tr[data-node-pool=train-pool]")
    assert row.is_visible()
    assert "gpu-type" not in row.inner_text() and KEY in row.inner_text()
    shoot(page, "node-pools-with-label-pool")

    page.goto(f"{live_server.url}/pools/train-pool/")
    page.click("[data-testid=delete-pool]")
    page.wait_for_url(f"{live_server.url}/label-pools/train-pool/delete/")
    assert "train-1" in page.locator("#pool-jobs").inner_text()  # the workload still running on its nodes
    found[page.url] = accessibility_violations(page)
    shoot(page, "label-pool-delete")
    page.click("button:has-text('Delete pool train-pool')")  # refused: a workload runs
    page.wait_for_selector("[role=alert]")
    assert pool_label(cluster, "gpu-a1") == "train-pool"
    page.check("input[name=force]")
    page.click("button:has-text('Delete pool train-pool')")
    page.wait_for_url(f"{live_server.url}/")

    assert (pool_label(cluster, "gpu-a1"), pool_label(cluster, "gpu-a2")) == (None, None)
    assert members("default") == {"gpu-a1", "gpu-a2", "gpu-b1"}
    page.goto(f"{live_server.url}/node-pools/")
    assert page.locator("tr[data-node-pool=train-pool]").count() == 0
    assert page.locator("tr[data-node-pool=default] [data-testid=default-pool]").is_visible()
    assert all(not violations for violations in found.values()), accessibility_report(found)
