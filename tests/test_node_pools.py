"""Run:ai's node-pools view: ``selectors.node_pool_list``, ``/api/node_pools/`` and ``/node-pools/``.

A small known fleet on one file backend ``lab`` whose default pool is ``default``: label pools
``a100`` (gpu-type=A100, two 8-GPU nodes) and ``v100`` (gpu-type=V100, one 4-GPU node), an empty label pool
``h100``, and one unlabelled node that only the default pool holds.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client
from kube_objects import node, pod, write_list
from people import person, role
from rest_framework.test import APIClient

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType, NodePoolColumn, PlacementStrategy
from pools.engine.errors import ConfigError
from pools.models import Backend

GIB = 2**30
A100_MEMORY = 8 * 80 * GIB  # 81,920 MiB per GPU, 8 GPUs
V100_MEMORY = 4 * 16 * GIB


def gpu_node(name, gpu_type, *, gpu, mib, **kwargs):
    labels = {"nvidia.com/gpu.memory": str(mib), "nvidia.com/gpu.count": str(gpu)}
    if gpu_type:
        labels["gpu-type"] = gpu_type
    return node(name, gpu=gpu, labels=labels, **kwargs)


FLEET = [
    gpu_node("a1", "A100", gpu=8, mib=81920, cpu="64", memory="512Gi"),
    gpu_node("a2", "A100", gpu=8, mib=81920, cpu="64", memory="512Gi"),
    gpu_node("v1", "V100", gpu=4, mib=16384, cpu="32", memory="256Gi"),
    gpu_node("n1", None, gpu=2, mib=24576, cpu="16", memory="128Gi"),
    pod("p1", node="a1", gpu="0.5", cpu="2", memory="8Gi"),
    pod("p2", node="a1", gpu="0.25", cpu="1", memory="4Gi"),
    pod("p3", node="a2", gpu=2, cpu="4", memory="16Gi"),
    pod("p4", node="v1", gpu=1, phase="Succeeded"),  # terminated: counts nothing
    pod("p5", node="n1", gpu=1, cpu="2", memory="4Gi"),
    pod("pending", gpu=1),  # not bound to a node
]


def label_pool(key, value, **extra):
    return {"backend": "lab", "node_label": {"key": key, "value": value}, **extra}


@pytest.fixture
def lab(db, inventory_dir, actor):
    """The fleet above, synced; returns a function that rewrites the cluster's list and syncs it again."""
    path = inventory_dir / "lab.json"

    def sync(items):
        write_list(path, items)
        backend = Backend.objects.get(name="lab")
        services.backend_sync(backend=backend)
        services.membership_recompute(backend=backend)

    write_list(path, FLEET)
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"lab": {"kind": "file", "source": str(path), "default_pool": "default"}},
            ConfigType.POOL: {
                "a100": label_pool("gpu-type", "A100", gpu_placement_strategy="spread"),
                "v100": label_pool("gpu-type", "V100"),
                "h100": label_pool("gpu-type", "H100"),
                "default": {"backend": "lab"},
            },
        },
        actor=actor,
    )
    sync(FLEET)
    return sync


def rows_by_name(**filters) -> dict[str, dict]:
    return {row["node_pool"]: row for row in selectors.node_pool_list(user=SYSTEM, filters=filters)}


def names(rows) -> list[str]:
    return [row["node_pool"] for row in rows]


# --- the numbers ------------------------------------------------------------------------------------------


def test_each_pool_row_adds_up_its_nodes_and_what_runs_on_them(lab):
    rows = rows_by_name()
    assert sorted(rows) == ["a100", "default", "h100", "v100"]
    a100 = rows["a100"]
    assert {key: value for key, value in a100.items() if key not in ("last_update", "creation_time")} == {
        "node_pool": "a100",
        "status": "Ready",
        "label_key": "gpu-type",
        "label_value": "A100",
        "nodes": 2,
        "gpu_devices": 16.0,
        "gpu_memory": 2 * A100_MEMORY,
        "allocated_gpus": 2.75,
        "cpus": 128.0,
        "cpu_memory": 1024 * GIB,
        "allocated_cpus": 7.0,
        "allocated_cpu_memory": 28 * GIB,
        "gpu_placement_strategy": "spread",
        "cpu_placement_strategy": "binpack",
        "workloads": 3,
        "backend": "lab",
        "default": False,
    }
    assert set(a100) == set(NodePoolColumn.values)
    assert a100["creation_time"] <= a100["last_update"]
    v100 = rows["v100"]
    assert (v100["nodes"], v100["gpu_devices"], v100["gpu_memory"]) == (1, 4.0, V100_MEMORY)
    assert (v100["allocated_gpus"], v100["workloads"]) == (0.0, 0)  # its only pod has finished


def test_allocated_gpus_add_up_fractions_without_rounding(lab):
    lab([*FLEET, pod("p6", node="a2", gpu="0.125")])
    assert rows_by_name()["a100"]["allocated_gpus"] == 2.875


def test_a_pool_with_nodes_is_ready_and_one_without_is_empty(lab):
    rows = rows_by_name()
    assert {name: row["status"] for name, row in rows.items()} == {
        "a100": "Ready",
        "v100": "Ready",
        "default": "Ready",
        "h100": "Empty",
    }
    assert names(selectors.node_pool_list(user=SYSTEM, filters={"status": "Empty"})) == ["h100"]
    assert names(selectors.node_pool_list(user=SYSTEM, filters={"status": "Ready"})) == ["a100", "default", "v100"]


def test_the_default_pool_holds_the_nodes_no_label_pool_takes_and_is_marked(lab):
    rows = rows_by_name()
    assert rows["default"]["default"] is True
    assert [name for name, row in rows.items() if row["default"]] == ["default"]
    assert (rows["default"]["label_key"], rows["default"]["label_value"]) == ("", "")
    assert (rows["default"]["nodes"], rows["default"]["gpu_devices"], rows["default"]["allocated_gpus"]) == (1, 2, 1)


def test_a_new_unlabelled_node_appears_in_the_default_pool(lab):
    lab([*FLEET, gpu_node("n2", None, gpu=4, mib=24576), pod("p7", node="n2", gpu="1.5")])
    default = rows_by_name()["default"]
    assert (default["nodes"], default["gpu_devices"], default["allocated_gpus"], default["workloads"]) == (2, 6, 2.5, 2)
    assert rows_by_name()["a100"]["nodes"] == 2


def test_deleting_a_label_pool_moves_its_nodes_to_the_default_pool(lab, actor):
    services.config_apply(changes={ConfigType.POOL: {"v100": None}}, actor=actor)
    rows = rows_by_name()
    assert "v100" not in rows
    assert (rows["default"]["nodes"], rows["default"]["gpu_devices"]) == (2, 6)
    assert rows["default"]["gpu_memory"] == V100_MEMORY + 2 * 24 * GIB


def test_the_default_pool_cannot_be_deleted(lab, actor):
    with pytest.raises(ConfigError, match="default pool"):
        services.config_apply(changes={ConfigType.POOL: {"default": None}}, actor=actor)


def test_a_node_counts_once_in_a_pool_whose_platforms_both_select_it(lab, actor):
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {"any": {"spec": {}}},
            ConfigType.POOL: {
                "a100": label_pool("gpu-type", "A100", platforms={"big": {}, "all": {"override_pod_template": ["any"]}})
            },
        },
        actor=actor,
    )
    services.membership_recompute(backend=Backend.objects.get(name="lab"))
    a100 = rows_by_name()["a100"]
    assert (a100["nodes"], a100["gpu_devices"], a100["allocated_gpus"], a100["workloads"]) == (2, 16, 2.75, 3)


# --- filters and sorting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"q": "a1"}, ["a100"]),
        ({"q": "V100"}, ["v100"]),  # the label value
        ({"q": "GPU-TYPE"}, ["a100", "h100", "v100"]),  # the label key, any case
        ({"q": "lab"}, ["a100", "default", "h100", "v100"]),  # the backend
        ({"backend": "lab"}, ["a100", "default", "h100", "v100"]),
        ({"backend": "elsewhere"}, []),
        ({"label_key": "gpu-type"}, ["a100", "h100", "v100"]),
        ({"default": "true"}, ["default"]),
        ({"default": "false"}, ["a100", "h100", "v100"]),
        ({"name": "v100"}, ["v100"]),
        ({"sort": "-allocated_gpus"}, ["a100", "default", "h100", "v100"]),
        ({"sort": "allocated_gpus"}, ["h100", "v100", "default", "a100"]),
        ({"sort": "-nodes"}, ["a100", "default", "v100"] + ["h100"]),
        ({"sort": "label_value"}, ["default", "a100", "h100", "v100"]),
        ({"sort": "-node_pool"}, ["v100", "h100", "default", "a100"]),
        ({"sort": "-default"}, ["default", "a100", "h100", "v100"]),
        ({"sort": "-gpu_placement_strategy"}, ["a100", "default", "h100", "v100"]),
        ({"sort": "-workloads", "status": "Ready"}, ["a100", "default", "v100"]),
    ],
)
def test_filters_search_and_sort(lab, filters, expected):
    assert names(selectors.node_pool_list(user=SYSTEM, filters=filters)) == expected


@pytest.mark.parametrize("column", NodePoolColumn.values)
def test_every_column_sorts_both_ways(lab, column):
    up = selectors.node_pool_list(user=SYSTEM, filters={"sort": column})
    down = selectors.node_pool_list(user=SYSTEM, filters={"sort": f"-{column}"})
    assert [row[column] for row in up] == sorted(row[column] for row in up)
    assert [row[column] for row in down] == sorted((row[column] for row in down), reverse=True)


@pytest.mark.parametrize("query", [{"status": "Online"}, {"sort": "gpus"}, {"sort": "--nodes"}, {"default": "maybe"}])
def test_a_bad_filter_is_a_400_naming_the_parameter_on_the_page_and_in_the_api(lab, query):
    (name,) = query
    with pytest.raises(ConfigError, match=name):
        selectors.node_pool_list(user=SYSTEM, filters=query)
    admin = person("root", password=None, is_superuser=True)
    api = APIClient()
    api.force_authenticate(admin)
    answered = api.get("/api/node_pools/", query)
    assert answered.status_code == 400 and name in json.dumps(answered.json())
    page = Client()
    page.force_login(admin)
    for extra in ({}, {"format": "csv"}):
        shown = page.get("/node-pools/", {**query, **extra})
        assert shown.status_code == 400 and name.encode() in shown.content
    fragment = page.get("/node-pools/", query, headers={"HX-Request": "true"})
    assert fragment.status_code == 400 and name.encode() in fragment.content


# --- the API ----------------------------------------------------------------------------------------------


def test_the_api_lists_the_rows_with_snake_case_fields(lab):
    api = APIClient()
    api.force_authenticate(person("root", password=None, is_superuser=True))
    answered = api.get("/api/node_pools/", {"sort": "-allocated_gpus"})
    assert answered.status_code == 200
    rows = answered.json()["node_pools"]
    assert [row["node_pool"] for row in rows] == ["a100", "default", "h100", "v100"]
    assert list(rows[0]) == NodePoolColumn.values
    assert rows[0]["allocated_gpus"] == 2.75 and rows[0]["gpu_memory"] == 2 * A100_MEMORY
    assert rows[1]["default"] is True
    assert rows[0]["last_update"].endswith("Z") or "+" in rows[0]["last_update"]


# --- who sees what ----------------------------------------------------------------------------------------


@pytest.fixture
def limited(lab):
    """Someone who may read the a100 pool only."""
    return person("ann", role("a100-reader", {"actions": ["pool:Read"], "resources": ["pool/a100"]}), password=None)


def test_a_limited_user_sees_only_their_pools_everywhere(limited):
    api = APIClient()
    api.force_authenticate(limited)
    assert [row["node_pool"] for row in api.get("/api/node_pools/").json()["node_pools"]] == ["a100"]
    page = Client()
    page.force_login(limited)
    for response in (
        page.get("/node-pools/"),
        page.get("/node-pools/", {"sort": "-nodes"}, headers={"HX-Request": "true"}),
    ):
        assert response.status_code == 200
        text = response.content.decode()
        assert re.findall(r'data-node-pool="([^"]+)"', text) == ["a100"]
        assert [name for name in ("v100", "h100", "default") if f"/pools/{name}/" in text] == []
        assert 'data-testid="default-pool"' not in text
    exported = page.get("/node-pools/", {"format": "csv", "columns": "node_pool,label_value,default"})
    assert csv_rows(exported) == [["Node pool", "Label value", "Default"], ["a100", "A100", "no"]]
    assert names(selectors.node_pool_list(user=limited)) == ["a100"]


def test_someone_without_roles_sees_no_pool(lab):
    nobody = person("nobody", password=None)
    assert selectors.node_pool_list(user=nobody) == []
    api = APIClient()
    api.force_authenticate(nobody)
    assert api.get("/api/node_pools/").json() == {"node_pools": []}


# --- the page ---------------------------------------------------------------------------------------------


@pytest.fixture
def admin_page(lab):
    page = Client()
    page.force_login(person("root", password=None, is_superuser=True))
    return page


def csv_rows(response) -> list[list[str]]:
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_the_csv_has_runai_headings_and_the_chosen_columns_in_the_chosen_order(admin_page):
    response = admin_page.get(
        "/node-pools/", {"format": "csv", "columns": "node_pool,allocated_gpus,gpu_memory,default", "sort": "node_pool"}
    )
    assert response.status_code == 200
    assert csv_rows(response) == [
        ["Node pool", "Allocated GPUs", "GPU memory", "Default"],
        ["a100", "2.75", "1.25 TiB", "no"],
        ["default", "1", "48 GiB", "yes"],
        ["h100", "0", "0 B", "no"],
        ["v100", "0", "64 GiB", "no"],
    ]


def test_the_csv_without_columns_has_every_default_column(admin_page):
    header = csv_rows(admin_page.get("/node-pools/", {"format": "csv"}))[0]
    assert header[:5] == ["Node pool", "Status", "Label key", "Label value", "Node(s)"]
    assert "Allocated GPUs" in header and "Creation time" not in header


def test_an_unknown_column_is_a_400_naming_columns(admin_page):
    response = admin_page.get("/node-pools/", {"columns": "node_pool,colour"})
    assert response.status_code == 400 and b"columns" in response.content and b"colour" in response.content


def test_the_page_shows_the_chosen_columns_sorted_with_the_default_pool_marked(admin_page):
    response = admin_page.get("/node-pools/", {"columns": ["status", "allocated_gpus"], "sort": "-allocated_gpus"})
    assert response.status_code == 200
    text = response.content.decode()
    table = text.split('id="node-pool-table"', 1)[1]
    assert table.index('data-node-pool="a100"') < table.index('data-node-pool="default"')
    assert 'data-testid="default-pool"' in table and "Default pool" in table
    headers = table.split("</thead>", 1)[0]
    assert "Allocated GPUs" in headers and "Label key" not in headers and "Node pool" in headers
    assert 'aria-sort="descending"' in headers
    assert ">2.75<" in table
    assert 'href="/node-pools/"' in text.split('aria-label="Main"', 1)[1].split("</nav>", 1)[0]


def test_the_fragment_is_the_table_alone(admin_page):
    response = admin_page.get("/node-pools/", {"status": "Empty"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    text = response.content.decode()
    assert text.lstrip().startswith('<div id="node-pool-table"') and "<html" not in text
    assert 'data-node-pool="h100"' in text and 'data-node-pool="a100"' not in text
    assert "HX-Request" in response["Vary"]


def test_the_schema_names_the_placement_strategies_once_with_the_vocabulary_values(settings):
    assert settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]["PlacementStrategyEnum"] == PlacementStrategy.values
