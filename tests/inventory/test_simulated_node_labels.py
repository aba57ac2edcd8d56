"""Node labels written to a simulated cluster: kept in its overlay file, seen by every list, read and watch after,
refused on a stale version as the API server refuses it."""

import json
import threading

import pytest

from pools.fleet.layouts import demo_blueprint
from pools.inventory.node_labels import NodeLabelOverlay, entry_patched, overlaid
from pools.inventory.sources import NodeChanged, NodeGone, SimulatedSource

T0 = 1_763_715_600.0
KEY = "runwhere.ai/pool"


@pytest.fixture
def blueprint(inventory_dir):
    path = inventory_dir / "gpuctl-cluster.json"
    path.write_text(json.dumps(demo_blueprint("gpuctl-cluster")))
    return str(path)


def source(blueprint, inventory_dir, clock=None):
    clock = clock or {"now": T0}
    return SimulatedSource(
        seed=6,
        size=None,
        blueprint_path=blueprint,
        clock=lambda: clock["now"],
        labels_path=str(inventory_dir / "node-labels" / "gpuctl-cluster.json"),
    )


def labels_of(nodes, name):
    return next(node for node in nodes if node["metadata"]["name"] == name)["metadata"]["labels"]


def test_a_patch_is_seen_by_every_source_of_the_cluster_even_a_new_process(blueprint, inventory_dir):
    writer = source(blueprint, inventory_dir)
    node = writer.read_node("gpu-node-1")
    assert KEY not in node["metadata"]["labels"]
    patched = writer.patch_node_labels(
        "gpu-node-1",
        {KEY: "training-pool", "runwhere.ai/gpu-type": "A100-100G"},
        resource_version=node["metadata"]["resourceVersion"],
    )
    assert patched["metadata"]["labels"][KEY] == "training-pool"
    assert int(patched["metadata"]["resourceVersion"]) == int(node["metadata"]["resourceVersion"]) + 1
    reader = source(blueprint, inventory_dir)  # another process, started after: it reads the file
    assert labels_of(reader.list_nodes(), "gpu-node-1")[KEY] == "training-pool"
    listed = reader.list_inventory()
    assert labels_of(listed.nodes, "gpu-node-1")[KEY] == "training-pool"
    assert reader.read_node("gpu-node-1") == patched
    # Removing a label the fleet never had leaves nothing behind; removing one it has is remembered.
    writer.patch_node_labels("gpu-node-1", {KEY: None, "runwhere.ai/gpu-type": None})
    writer.patch_node_labels("gpu-node-1", {"kubernetes.io/os": None})
    assert json.loads((inventory_dir / "node-labels" / "gpuctl-cluster.json").read_text())["nodes"]["gpu-node-1"] == {
        "labels": {"kubernetes.io/os": None},
        "writes": 3,
    }
    assert "kubernetes.io/os" not in labels_of(reader.list_nodes(), "gpu-node-1")


def test_a_stale_version_is_a_conflict_and_a_missing_node_is_gone(blueprint, inventory_dir):
    cluster = source(blueprint, inventory_dir)
    seen = cluster.read_node("gpu-node-3")["metadata"]["resourceVersion"]
    cluster.patch_node_labels("gpu-node-3", {KEY: "inference-pool"}, resource_version=seen)
    with pytest.raises(NodeChanged):
        cluster.patch_node_labels("gpu-node-3", {KEY: "dev-pool"}, resource_version=seen)
    assert labels_of(cluster.list_nodes(), "gpu-node-3")[KEY] == "inference-pool"
    with pytest.raises(NodeGone):
        cluster.patch_node_labels("gpu-node-9", {KEY: "dev-pool"})
    with pytest.raises(NodeGone):
        cluster.read_node("gpu-node-9")


def test_a_watch_reports_a_node_labelled_by_another_process(blueprint, inventory_dir):
    clock = {"now": T0}
    watched = source(blueprint, inventory_dir, clock)
    versions = watched.list_inventory().resource_versions
    stop = threading.Event()
    batches = watched.watch(versions, stop)
    source(blueprint, inventory_dir, clock).patch_node_labels("gpu-node-5", {KEY: "dev-pool"})
    clock["now"] += 1
    changed = [event for event in next(batches) if event.kind == "nodes"]
    assert [(e.type, e.object["metadata"]["name"], e.object["metadata"]["labels"][KEY]) for e in changed] == [
        ("MODIFIED", "gpu-node-5", "dev-pool")
    ]
    clock["now"] += 1
    assert [event for event in next(batches) if event.kind == "nodes"] == []  # once only
    stop.set()


def test_two_writers_at_once_both_land(blueprint, inventory_dir):
    writers = [source(blueprint, inventory_dir) for _ in range(4)]
    names = [f"gpu-node-{n}" for n in range(1, 5)]
    threads = [
        threading.Thread(target=writer.patch_node_labels, args=(name, {KEY: f"pool-{name}"}))
        for writer, name in zip(writers, names, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    nodes = source(blueprint, inventory_dir).list_nodes()
    assert [labels_of(nodes, name)[KEY] for name in names] == [f"pool-{name}" for name in names]


def test_the_overlay_keeps_only_what_differs_from_the_fleet(tmp_path):
    base = {"a": "1", "b": "2"}
    entry = entry_patched(base, None, {"a": "1", "c": "3"})
    assert entry == {"labels": {"c": "3"}, "writes": 1}
    entry = entry_patched(base, entry, {"b": None, "c": None})
    assert entry == {"labels": {"b": None}, "writes": 2}
    assert entry_patched(base, entry, {"b": None}) == {"labels": {"b": None}, "writes": 2}  # no change, no write
    node = {"metadata": {"name": "n", "labels": base, "resourceVersion": "40"}}
    assert overlaid(node, entry)["metadata"] == {"name": "n", "labels": {"a": "1"}, "resourceVersion": "42"}
    assert node["metadata"]["labels"] == base  # the fleet's object is left as it is
    assert NodeLabelOverlay(str(tmp_path / "missing.json")).entries() == {}
