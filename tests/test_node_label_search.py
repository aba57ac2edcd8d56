"""The node table's label search (``?q=``) after every way a node's labels are written.

The search reads ``Node.labels_text``, a column the database generates from the labels on each insert and
update. These tests change the labels through each writer (a first sync, a resync from a source, a watch
event, both PostgreSQL upsert paths) and check that the search finds the new labels and not the old ones.
"""

from __future__ import annotations

import copy

import pytest
from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast, Lower
from kube_objects import node, write_list

from accounts.access import SYSTEM
from pools import selectors, services
from pools.inventory.sources import FileSource, WatchEvent
from pools.models import Node
from pools.services import bulk


def found(text: str) -> list[str]:
    """The node names the node table shows for ``?q=text``, as the page, the API and poolctl read it."""
    return sorted({row.node for row in selectors.resource_index(user=SYSTEM, filters={"q": text})})


def assert_text_is_current():
    """Every node's stored ``labels_text`` is what the database makes of its labels now: their text in lower case."""
    rows = Node.objects.annotate(now=Lower(Cast("labels", TextField()))).values_list("name", "labels_text", "now")
    assert rows and all(stored == now for _, stored, now in rows), rows


def fleet():
    return [
        node("gpu-a", labels={"team": "Vision", "topology.kubernetes.io/zone": "eu-west-1a"}),
        node("gpu-b", product="NVIDIA-A100-SXM4-80GB", labels={"team": "speech"}),
    ]


def relabelled(item: dict, version: str, **labels) -> dict:
    changed = copy.deepcopy(item)
    changed["metadata"]["labels"].update(labels)
    changed["metadata"]["resourceVersion"] = version
    return changed


def test_the_search_finds_names_products_label_keys_and_values_and_key_value_pairs(cluster):
    cluster(fleet())
    assert found("gpu-") == ["gpu-a", "gpu-b"]
    assert found("a100") == ["gpu-b"]  # the GPU product, any case
    assert found("vision") == ["gpu-a"]  # a label value, any case
    assert found("TOPOLOGY.kubernetes") == ["gpu-a"]  # a label key, any case
    assert found("team=speech") == ["gpu-b"]  # key=value: that label
    assert found(" team = Vision ") == ["gpu-a"]
    assert found("team=vision") == []  # key=value compares the value exactly
    assert found("robotics") == []


def test_the_search_follows_labels_changed_by_a_resync_from_a_source(cluster, inventory_dir):
    backend = cluster(fleet())
    first, second = fleet()
    path = write_list(inventory_dir / "relabelled.json", [relabelled(first, "2", team="robotics"), second])

    services.backend_sync(backend=backend, source=FileSource(str(path)))

    assert Node.objects.get(name="gpu-a").labels["team"] == "robotics"
    assert found("robotics") == ["gpu-a"]
    assert found("team=robotics") == ["gpu-a"]
    assert found("vision") == []
    assert found("team=Vision") == []
    assert_text_is_current()


def test_the_search_follows_labels_changed_by_a_watch_event(cluster):
    backend = cluster(fleet())
    first, _ = fleet()
    added = node("gpu-c", labels={"team": "lidar"})
    added["metadata"]["resourceVersion"] = "5"

    services.watch_events_apply(
        backend=backend,
        events=[
            WatchEvent("MODIFIED", "nodes", relabelled(first, "4", team="robotics")),
            WatchEvent("ADDED", "nodes", added),
        ],
    )

    assert found("robotics") == ["gpu-a"]
    assert found("team=robotics") == ["gpu-a"]
    assert found("vision") == []
    assert found("LIDAR") == ["gpu-c"]
    assert found("team=lidar") == ["gpu-c"]
    assert_text_is_current()


@pytest.mark.parametrize("array_rows", [0, 10_000], ids=["copy-upsert", "array-upsert"])
def test_both_postgresql_upsert_paths_leave_the_generated_text_to_the_database(
    cluster, inventory_dir, monkeypatch, array_rows
):
    if connection.vendor != "postgresql":
        pytest.skip("both paths are PostgreSQL's (SQLite uses bulk_create, which the other tests cover)")
    # Up to ARRAY_UPSERT_ROWS rows go as one INSERT of arrays, more through COPY and a staging table: each
    # must leave out the generated column (naming it in an INSERT is an error) and still have it filled.
    monkeypatch.setattr(bulk, "ARRAY_UPSERT_ROWS", array_rows)
    backend = cluster(fleet())
    first, second = fleet()
    path = write_list(inventory_dir / "relabelled.json", [relabelled(first, "2", team="robotics"), second])

    services.backend_sync(backend=backend, source=FileSource(str(path)))

    assert found("robotics") == ["gpu-a"] and found("vision") == []
    assert_text_is_current()
