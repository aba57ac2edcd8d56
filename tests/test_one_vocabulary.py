"""One vocabulary, one filter: the nodes page, the API and ``poolctl`` give the same rows for the same filter.

Every filter of ``NodeFilterSet`` is given, with values taken from the demo fleet, to
- the nodes page (``/nodes/?…&format=json``, the rows the table shows),
- ``/api/resources/`` (the same rows with their numbers) and ``/api/nodes/`` (the nodes of those rows),
- ``poolctl resource list --… --format json``,
as the operator and as a person who may see only the robotics pools. All must agree, row for row.
"""

import json

import pytest
from django.test import Client
from people import api_client, person, poolctl, signed_in
from rest_framework.test import APIClient

from accounts.access import SYSTEM
from pools import selectors
from pools.choices import NodePoolColumn, NodePoolStatus, NodeStatus, PoolStatus, ResourceType
from pools.filtersets import NodeFilterSet, NodePoolFilterSet, PoolFilterSet


def flag(name: str) -> str:
    return "--search" if name == "q" else f"--{name.replace('_', '-')}"


def cases() -> list[tuple[str, str]]:
    """(filter, value) pairs that exercise every filter, chosen from what the demo fleet holds."""
    rows = selectors.resource_list(user=SYSTEM)
    placed = [row for row in rows if row["pool"]]
    labelled = next(row for row in selectors.nodes_visible(user=SYSTEM) if row.labels)
    key, value = next(iter(labelled.labels.items()))
    chosen = [
        ("q", rows[0]["node"][:4]),
        ("q", f"{key}={value}"),
        ("q", "nvidia"),
        ("name", rows[-1]["node"]),
        ("backend", placed[0]["backend"]),
        ("pool", placed[0]["pool"]),
        ("pool", f"{placed[0]['pool']},{placed[-1]['pool']}"),
        ("platform", placed[-1]["platform"]),
        ("gpu_product", next(row["gpu_product"] for row in rows if row["gpu_product"])),
        ("available", "true"),
        ("available", "false"),
        *(("status", status) for status in NodeStatus.values),
        *(("type", kind) for kind in ResourceType.values),
    ]
    assert {name for name, _ in chosen} == set(NodeFilterSet.base_filters), "a filter is not exercised"
    return chosen


def triples(rows) -> list[tuple[str, str, str]]:
    return [(row["node"], row["pool"], row["platform"]) for row in rows]


def clients(user) -> tuple[Client, APIClient]:
    """A browser session and an API client, both signed in as ``user``."""
    return signed_in(user), api_client(user)


@pytest.fixture
def fleet(demo):
    poolctl("role", "set", "osmo-robotics", "pool")
    operator = person("olga", "osmo-admin", is_superuser=True)
    limited = person("rita", "osmo-robotics")
    return {"operator": operator, "limited": limited}


@pytest.mark.parametrize("who", ["operator", "limited"])
def test_page_api_and_poolctl_give_the_same_rows_for_every_filter(fleet, who):
    user = fleet[who]
    page, api = clients(user)
    seen_statuses = set()
    for name, value in cases():
        shown = page.get("/nodes/", {name: value, "format": "json"})
        assert shown.status_code == 200, (name, value, shown.content[:200])
        rows = triples(json.loads(shown.content))
        answered = api.get("/api/resources/", {name: value})
        assert answered.status_code == 200, (name, value)
        assert triples(answered.json()["resources"]) == rows, (name, value)
        printed = poolctl("--as", user.username, "resource", "list", flag(name), value, "--format", "json")
        assert triples(json.loads(printed)["resources"]) == rows, (name, value)
        nodes = api.get("/api/nodes/", {name: value, "limit": 1000}).json()["results"]
        assert sorted({node["name"] for node in nodes}) == sorted(
            {node for node, pool, _ in rows if pool or who == "operator"}
        ), (name, value)
        if name == "status" and rows:
            seen_statuses.add(value)
    if who == "operator":
        assert seen_statuses == set(NodeStatus.values), "the demo fleet lacks a node status"


def pool_cases() -> list[tuple[str, str]]:
    rows = selectors.pool_list(user=SYSTEM)
    chosen = [
        ("q", rows[0]["name"][:5]),
        ("name", rows[-1]["name"]),
        ("backend", rows[0]["backend"]),
        ("enable_maintenance", "true"),
        ("default_platform", "h100-platform"),
        ("platform", "h100-platform"),
        *(("status", status) for status in PoolStatus.values),
        ("free", "true"),
    ]
    assert {name for name, _ in chosen} == set(PoolFilterSet.base_filters), "a filter is not exercised"
    return chosen


@pytest.mark.parametrize("who", ["operator", "limited"])
def test_overview_api_and_poolctl_list_the_same_pools_for_every_filter(fleet, who):
    user = fleet[who]
    page, api = clients(user)
    for name, value in pool_cases():
        shown = page.get("/", {name: value, "format": "json"})
        assert shown.status_code == 200, (name, value)
        names = [row["name"] for row in json.loads(shown.content)]
        answered = api.get("/api/pool_quota/", {name: value})
        assert [row["name"] for row in answered.json()["pools"]] == names, (name, value)
        printed = poolctl("--as", user.username, "pool", "list", flag(name), value, "--format", "json")
        assert [row["name"] for row in json.loads(printed)["pools"]] == names, (name, value)


def node_pool_cases() -> list[tuple[str, str]]:
    rows = selectors.node_pool_list(user=SYSTEM)
    chosen = [
        ("q", rows[0]["node_pool"][:5]),
        ("name", rows[-1]["node_pool"]),
        ("backend", rows[0]["backend"]),
        ("label_key", "gpu-type"),
        ("default", "true"),
        ("default", "false"),
        *(("status", status) for status in NodePoolStatus.values),
        *(("sort", sort) for column in NodePoolColumn.values for sort in (column, f"-{column}")),
    ]
    assert {name for name, _ in chosen} == set(NodePoolFilterSet.base_filters), "a filter is not exercised"
    return chosen


@pytest.mark.parametrize("who", ["operator", "limited"])
def test_the_node_pools_page_and_api_list_the_same_pools_for_every_filter(fleet, who):
    import csv
    import io

    user = fleet[who]
    page, api = clients(user)
    for name, value in node_pool_cases():
        shown = page.get("/node-pools/", {name: value, "format": "csv", "columns": "node_pool"})
        assert shown.status_code == 200, (name, value)
        names = [row[0] for row in csv.reader(io.StringIO(shown.content.decode()))][1:]
        answered = api.get("/api/node_pools/", {name: value})
        assert [row["node_pool"] for row in answered.json()["node_pools"]] == names, (name, value)


def test_the_status_words_are_the_same_on_the_page_in_the_api_and_in_poolctl(fleet):
    page = Client()
    page.force_login(fleet["operator"])
    rows = json.loads(page.get("/nodes/", {"format": "json"}).content)
    printed = json.loads(poolctl("resource", "list", "--format", "json"))["resources"]
    assert {row["status"] for row in rows} == {row["status"] for row in printed} == set(NodeStatus.values)
    text = poolctl("resource", "list", "--status", "cordoned")
    assert "cordoned" in text and "available" not in text.split("\n", 1)[1]
    assert {row["status"] for row in selectors.pool_list(user=SYSTEM)} <= set(PoolStatus.values)
    summary = selectors.pool_node_summary([row["pool"] for row in printed if row["pool"]])
    assert all(set(entry["nodes"]) == set(NodeStatus.values) for entry in summary.values())


@pytest.mark.parametrize(
    "query",
    [{"status": "ready"}, {"type": "shared"}, {"pool": ",".join(["p"] * 101)}, {"available": "perhaps"}],
)
def test_a_bad_filter_is_a_clear_error_everywhere(fleet, query):
    page = Client()
    page.force_login(fleet["operator"])
    ((name, value),) = query.items()
    shown = page.get("/nodes/", query)
    assert shown.status_code == 400 and name.encode() in shown.content
    answered = APIClient()
    answered.force_authenticate(fleet["operator"])
    response = answered.get("/api/resources/", query)
    assert response.status_code == 400 and name in json.dumps(response.json())
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=name):
        poolctl("resource", "list", flag(name), value)


@pytest.mark.parametrize("who", ["operator", "limited"])
@pytest.mark.parametrize("query", [{}, {"config_type": "POOL"}, {"name": "robotics-training"}, {"config_type": "ROLE"}])
def test_the_history_page_the_api_and_poolctl_list_the_same_revisions(fleet, who, query):
    import re

    user = fleet[who]
    page, api = clients(user)
    html = page.get("/history/", query).content.decode()
    shown = re.findall(r'href="/history/([A-Z_]+)/([0-9]+)/"', html)
    answered = api.get("/api/configs/history/", {**query, "limit": 50}).json()["results"]
    args = [query["config_type"]] if "config_type" in query else []
    args += ["--name", query["name"]] if "name" in query else []
    printed = json.loads(poolctl("--as", user.username, "config", "history", *args, "--format", "json"))["revisions"]
    expected = [(row["config_type"], str(row["revision"])) for row in answered]
    assert shown == expected
    assert [(row["config_type"], str(row["revision"])) for row in printed][:50] == expected
