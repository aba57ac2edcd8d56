"""The node-pools page in Chromium: sort by a column, choose columns, see the default pool marked;
axe-core finds no WCAG 2 A or AA violation, and the screens are saved in ``var/screenshots/``."""

from __future__ import annotations

import pytest
from browser import accessibility_report, accessibility_violations, shoot, sign_in
from kube_objects import node, pod, write_list
from people import person

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Backend

VIEWPORT = {"width": 1440, "height": 760}


@pytest.fixture
def fleet(transactional_db, inventory_dir):
    """The demo, and a backend ``lab`` whose nodes are divided by ``gpu-type`` labels, with default pool ``default``."""
    assert services.demo_install()
    nodes = [
        node(f"a100-{i}", gpu=8, labels={"gpu-type": "A100", "nvidia.com/gpu.memory": "81920"}) for i in range(4)
    ] + [node(f"v100-{i}", gpu=4, labels={"gpu-type": "V100", "nvidia.com/gpu.memory": "16384"}) for i in range(3)]
    nodes += [node("cpu-0", gpu=None, product="", cpu="96", memory="768Gi")]
    pods = [pod(f"train-{i}", node=f"a100-{i % 4}", gpu="2.5", cpu="8", memory="64Gi") for i in range(6)]
    pods += [pod("infer-0", node="v100-0", gpu="0.5"), pod("etl-0", node="cpu-0", cpu="16", memory="96Gi")]
    path = write_list(inventory_dir / "lab.json", nodes + pods)
    label = {"backend": "lab"}
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"lab": {"kind": "file", "source": str(path), "default_pool": "default"}},
            ConfigType.POOL: {
                "a100": {**label, "node_label": {"key": "gpu-type", "value": "A100"}},
                "v100": {
                    **label,
                    "node_label": {"key": "gpu-type", "value": "V100"},
                    "cpu_placement_strategy": "spread",
                },
                "h100": {**label, "node_label": {"key": "gpu-type", "value": "H100"}},
                "default": label,
            },
        },
        actor=services.SYSTEM,
    )
    services.backend_sync(backend=Backend.objects.get(name="lab"))


def violations_of(page, name: str, found: dict) -> None:
    shoot(page, name)
    found[f"{name} ({page.url})"] = accessibility_violations(page)


def test_sort_choose_columns_and_see_the_default_pool_in_a_browser(fleet, live_server, page):
    person("ops", is_superuser=True, is_staff=True)
    sign_in(page, live_server.url, "ops")
    found: dict[str, list[str]] = {}

    page.click("nav[aria-label=Main] >> text=Node pools")
    page.wait_for_url(f"{live_server.url}/node-pools/")
    assert page.get_attribute("nav[aria-label=Main] a[href='/node-pools/']", "aria-current") == "page"
    # The marked rows are the backends' default pools: the demo's runai-default and gpuctl-default, and lab's default.
    marked = page.locator("tr[data-node-pool]:has([data-testid=default-pool])")
    defaults = {row["node_pool"] for row in selectors.node_pool_list(user=SYSTEM, filters={}) if row["default"]}
    shown = set(marked.evaluate_all("rows => rows.map(r => r.dataset.nodePool)"))
    assert shown == defaults == {"default", "runai-default", "gpuctl-default"}
    assert page.locator("tr[data-node-pool=default] [data-testid=default-pool]").is_visible()
    violations_of(page, "node-pools", found)

    # Sort by allocated GPUs: ascending, then descending, the most allocated pool first.
    page.click("th[data-column=allocated_gpus] a")
    page.wait_for_selector("th[data-column=allocated_gpus][aria-sort=ascending]")
    page.click("th[data-column=allocated_gpus] a")
    page.wait_for_selector("th[data-column=allocated_gpus][aria-sort=descending]")
    assert "sort=-allocated_gpus" in page.url
    expected = [row["node_pool"] for row in selectors.node_pool_list(user=SYSTEM, filters={"sort": "-allocated_gpus"})]
    shown = page.locator("tbody tr[data-node-pool]").evaluate_all("rows => rows.map(r => r.dataset.nodePool)")
    assert shown == expected

    # Choose columns: add the creation time and the CPU placement strategy, drop the backend; the sort stays.
    page.click("#column-picker summary")
    page.check("input[name=columns][value=creation_time]")
    page.wait_for_selector("th[data-column=creation_time]")
    page.check("input[name=columns][value=cpu_placement_strategy]")
    page.wait_for_selector("th[data-column=cpu_placement_strategy]")
    page.uncheck("input[name=columns][value=backend]")
    page.wait_for_selector("th[data-column=backend]", state="detached")
    assert page.locator("th[data-column=allocated_gpus][aria-sort=descending]").count() == 1
    assert "columns=creation_time" in page.url and "sort=-allocated_gpus" in page.url
    assert (
        page.locator("tr[data-node-pool=v100] td")
        .nth(
            [h for h in page.locator("thead th").evaluate_all("ths => ths.map(t => t.dataset.column)")].index(
                "cpu_placement_strategy"
            )
        )
        .inner_text()
        == "spread"
    )
    csv_link = page.get_attribute("[data-testid=csv]", "href")
    assert "format=csv" in csv_link and "creation_time" in csv_link and "backend" not in csv_link.split("columns")[1]
    violations_of(page, "node-pools-columns", found)

    # Search and status filters, by htmx.
    page.select_option("#id_status", "Empty")
    page.wait_for_selector("tbody tr[data-node-pool=h100]")
    page.wait_for_selector("tbody tr[data-node-pool=a100]", state="detached")
    violations_of(page, "node-pools-empty", found)

    report = accessibility_report(found)
    assert not report, f"axe-core finds WCAG 2 A/AA violations:\n{report}"
