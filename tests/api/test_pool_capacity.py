"""Capacity by topology over the API and ``poolctl pool capacity`` (SEMANTICS §11): the same JSON on both doors, a
hidden pool answered like a missing one, and bad parameters named."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from people import person, role, run_poolctl
from topology_pools import RACK, ZONE, racked_pool


@pytest.fixture
def racks(cluster, actor):
    """Pool ``racked`` over two zones with a rack ``r1`` in each; ``other`` beside it, over no node."""
    backend = cluster(
        [
            node("n1", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8),
            node("n2", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8),
            node("n3", labels={"team": "a", ZONE: "b", RACK: "r1"}, gpu=8, product="NVIDIA-B200"),
            node("n4", labels={"team": "a", ZONE: "b"}, gpu=8),
            node("n5", labels={"team": "a", ZONE: "b", RACK: "r2"}, gpu=8, unschedulable=True),
            pod("train-1", node="n1", gpu=2, pool="racked"),
        ]
    )
    racked_pool(backend, actor, others=("other",))
    return backend


def test_capacity_by_level_and_shape(racks, admin_api, poolctl):
    answer = admin_api.get("/api/pools/racked/capacity/", {"shape": "3x2"})
    assert answer.status_code == 200
    body = answer.json()
    assert body == poolctl("pool", "capacity", "racked", "--shape", "3x2", "--json").json()
    assert body["pool"] == "racked"
    whole, zone, rack = body["levels"]
    assert (whole["key"], whole["label"], zone["key"], rack["label"]) == (None, None, "zone", RACK)
    # n5 is cordoned: not available, so in no domain; n4 has no rack label.
    assert whole["domains"] == [{"value": "racked", "path": "racked", "nodes": 4, "gpus": 32, "free": 30}]
    assert rack["domains"] == [
        {"value": "r1", "path": "a/r1", "nodes": 2, "gpus": 16, "free": 14},
        {"value": "r1", "path": "b/r1", "nodes": 1, "gpus": 8, "free": 8},
    ]
    two_by_eight = {
        level["key"]: next(s for s in level["shapes"] if s["pods"] == 2 and s["gpus_per_pod"] == 8)
        for level in body["levels"]
    }
    assert two_by_eight[None] == {
        "pods": 2,
        "gpus_per_pod": 8,
        "gangs": 1,
        "largest_gang": 3,
        "largest_domain": "racked",
        "stranded": 6,
    }
    assert (two_by_eight["zone"]["gangs"], two_by_eight["zone"]["largest_domain"]) == (1, "b")
    assert (two_by_eight["rack"]["gangs"], two_by_eight["rack"]["largest_gang"]) == (0, 1)
    assert [(s["pods"], s["gpus_per_pod"]) for s in rack["shapes"]][-1] == (3, 2)
    text = poolctl("pool", "capacity", "racked")
    assert text.code == 0 and "Level rack (topology.kubernetes.io/rack): 2 domain(s)" in text.out
    assert "b/r1" in text.out and "Stranded GPUs" in text.out


def test_one_level_and_one_product(racks, admin_api, poolctl):
    body = admin_api.get("/api/pools/racked/capacity/", {"level": "rack", "gpu_product": "NVIDIA-B200"}).json()
    assert [level["key"] for level in body["levels"]] == ["rack"]
    assert body["levels"][0]["domains"] == [{"value": "r1", "path": "b/r1", "nodes": 1, "gpus": 8, "free": 8}]
    cli = poolctl("pool", "capacity", "racked", "--level", "rack", "--gpu-product", "NVIDIA-B200", "--json")
    assert cli.json() == body
    plain = admin_api.get("/api/pools/other/capacity/").json()
    assert [level["key"] for level in plain["levels"]] == [None]


def test_bad_shape_or_level_names_the_parameter(racks, admin_api, poolctl):
    for params, field in (({"shape": "4by8"}, "shape"), ({"shape": "0x8"}, "shape"), ({"level": "row"}, "level")):
        answer = admin_api.get("/api/pools/racked/capacity/", params)
        assert answer.status_code == 400
        assert [error["field"] for error in answer.json()["errors"]] == [field]
    bad = poolctl("pool", "capacity", "racked", "--shape", "4by8")
    assert bad.code == 1 and "shape: '4by8' is not a shape" in bad.err
    assert poolctl("pool", "capacity", "racked", "--level", "row").code == 1


def test_a_hidden_pool_is_answered_like_a_missing_one(racks, client_for):
    granted = role("other-reader", {"actions": ["pool:Read"], "resources": ["pool/other"]})
    user = person("olga", granted, password=None)
    client = client_for(user)
    hidden = client.get("/api/pools/racked/capacity/")
    missing = client.get("/api/pools/nowhere/capacity/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["errors"][0]["message"].replace("racked", "X") == missing.json()["errors"][0][
        "message"
    ].replace("nowhere", "X")
    assert client.get("/api/pools/other/capacity/").status_code == 200
    hidden_cli = run_poolctl("--as", "olga", "pool", "capacity", "racked")
    missing_cli = run_poolctl("--as", "olga", "pool", "capacity", "nowhere")
    assert hidden_cli.code == missing_cli.code == 1
    assert hidden_cli.err.replace("racked", "X") == missing_cli.err.replace("nowhere", "X")
