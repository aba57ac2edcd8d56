"""The narrow wire decoder reads the same records as full JSON, and falls back for odd objects."""

import json

from kube_objects import node, pod

from pools.inventory.records import node_record, pod_record
from pools.inventory.wire import decode_event, decode_list, decode_versions


def test_a_list_page_decodes_to_the_same_records_as_full_json():
    items = [pod(f"p{i}", node="n1", gpu=1, pool="team-a", init_gpu=2) for i in range(3)]
    for version, item in enumerate(items, 1):
        item["metadata"]["resourceVersion"] = str(version)
    data = json.dumps(
        {"kind": "PodList", "metadata": {"resourceVersion": "42", "continue": "next"}, "items": items}
    ).encode()
    decoded, version, token = decode_list("pods", data)
    assert (version, token) == ("42", "next")
    assert [pod_record(d, [], trust_resource_version=True) for d in decoded] == [
        pod_record(i, [], trust_resource_version=True) for i in items
    ]
    assert "image" not in json.dumps(decoded)  # only the fields the product reads are kept


def test_odd_types_fall_back_to_full_json_and_are_read_leniently():
    odd = node("n1", gpu=8)
    odd["metadata"]["labels"]["nvidia.com/gpu.count"] = 8  # a number where Kubernetes has strings
    decoded, version, token = decode_list("nodes", json.dumps({"items": [odd], "metadata": {}}).encode())
    assert (version, token) == ("", "")
    assert node_record(decoded[0], []).labels["nvidia.com/gpu.count"] == "8"


def test_watch_lines_keep_errors_and_bookmarks_whole():
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    assert decode_event("pods", json.dumps(error).encode()) == error
    added = decode_event("pods", json.dumps({"type": "ADDED", "object": pod("p", node="n1", gpu=2)}).encode())
    assert added["type"] == "ADDED" and pod_record(added["object"], []).gpu == 2


def test_a_metadata_list_decodes_to_keys_and_versions_even_when_empty():
    item = {"kind": "PartialObjectMetadata", "metadata": {"name": "p", "resourceVersion": "7", "labels": {"a": "b"}}}
    page = {"kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "9", "continue": "c"}, "items": [item]}
    assert decode_versions("pods", json.dumps(page).encode()) == (
        {("default", "p"): "7"},
        "PartialObjectMetadataList",
        "9",
        "c",
    )
    empty = {"kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "9"}, "items": None}
    assert decode_versions("nodes", json.dumps(empty).encode()) == ({}, "PartialObjectMetadataList", "9", "")


def test_the_wire_keeps_what_workloads_read_and_nothing_else_of_annotations():
    item = pod(
        "g-1",
        phase="Pending",
        annotations={"pod-group-name": "g", "runai/queue": "robo", "kubectl.kubernetes.io/last-applied": "{...}"},
        owner=("Job", "train"),
        priority_class="train",
        started="2026-01-02T03:04:05Z",
        unschedulable="0/2 nodes are available",
    )
    item["metadata"]["resourceVersion"] = "9"
    data = json.dumps({"kind": "PodList", "metadata": {}, "items": [item]}).encode()
    (decoded,), _, _ = decode_list("pods", data)
    assert pod_record(decoded, [], trust_resource_version=True) == pod_record(item, [], trust_resource_version=True)
    assert "last-applied" not in json.dumps(decoded)
    event = decode_event("pods", json.dumps({"type": "ADDED", "object": item}).encode())
    record = pod_record(event["object"], [])
    assert (record.workload_kind, record.owner_name, record.priority_class, record.scheduled_reason) == (
        "PodGroup",
        "train",
        "train",
        "Unschedulable",
    )
