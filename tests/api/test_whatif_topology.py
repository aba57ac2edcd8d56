"""The what-if with a topology (SEMANTICS §11): a gang of the request's pods, required in one domain of a level or
preferred there, placed from the engine's per-domain pod slots; the same answer on the API and ``poolctl``."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from topology_pools import RACK, ZONE, racked_pool

from accounts.access import SYSTEM
from pools import selectors
from pools.engine.errors import ConfigError


@pytest.fixture
def racks(cluster, actor):
    """Pool ``racked`` (zone, rack): with 4 GPUs a pod, rack a/r1 offers 3 pods (n1 6 free, n2 8), b/r2 2, n4 (in
    zone b, no rack) 2; n5 is cordoned and counts nowhere."""
    backend = cluster(
        [
            node("n1", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8),
            node("n2", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8),
            node("n3", labels={"team": "a", ZONE: "b", RACK: "r2"}, gpu=8),
            node("n4", labels={"team": "a", ZONE: "b"}, gpu=8),
            node("n5", labels={"team": "a", ZONE: "a", RACK: "r1"}, gpu=8, unschedulable=True),
            pod("train-1", node="n1", gpu=2, pool="racked"),
        ]
    )
    racked_pool(backend, actor)
    return backend


def check(pods, level, required, gpu=4):
    topology = {"level": level, "required": required}
    return selectors.pool_check(
        user=SYSTEM, pool_name="racked", user_values={"USER_GPU": gpu}, pods=pods, topology=topology
    )["topology"]


def test_a_required_gang_names_the_domains_that_could_take_it(racks):
    fits = check(3, "rack", True)
    assert fits == {
        "level": "rack",
        "required": True,
        "pods": 3,
        "gpus_per_pod": 4,
        "fits": True,
        "split": False,
        "pool_slots": 7,
        "domains": [{"path": "a/r1", "slots": 3}],
        "message": "Fits in one rack now: 1 rack domain could take it whole",
    }
    refused = check(4, "rack", True)
    assert (refused["fits"], refused["domains"]) == (False, [])
    assert refused["message"] == "No rack could take a gang of 4 pods × 4 GPUs now; the whole pool offers 7 such pods"


def test_a_preferred_gang_says_whether_it_would_be_split(racks):
    split = check(4, "rack", False)
    assert (split["fits"], split["split"], split["domains"]) == (True, True, [])
    assert split["message"] == "Fits now, split over several rack domains: none offers 4 such pods"
    zone = check(4, "zone", False)  # zone b: n3 and n4, 2 pods each
    assert (zone["fits"], zone["split"], zone["domains"]) == (True, False, [{"path": "b", "slots": 4}])
    nowhere = check(8, "zone", False)
    assert (nowhere["fits"], nowhere["split"], nowhere["pool_slots"]) == (False, False, 7)


def test_the_pending_verdict_keeps_a_required_gang_within_one_domain(racks):
    """The what-if's verdict (SEMANTICS §10) judges the gang the way its topology part places it."""

    def verdict(pods, level, required):
        topology = {"level": level, "required": required}
        return selectors.pool_check(
            user=SYSTEM, pool_name="racked", user_values={"USER_GPU": 4}, pods=pods, topology=topology
        )["pending_verdict"]

    assert verdict(3, "rack", True)["reason"] == "scheduling"
    waits = verdict(4, "rack", True)
    assert waits["reason"] == "no_capacity"
    assert waits["checks"][0]["figures"]["largest_domain"] == "a/r1"
    assert verdict(4, "rack", False)["reason"] == "scheduling"  # preferred: it may start split
    assert verdict(4, "zone", True)["reason"] == "scheduling"  # zone b: n3 and n4


def test_without_a_topology_there_is_no_topology_part(racks):
    assert selectors.pool_check(user=SYSTEM, pool_name="racked", user_values={"USER_GPU": 4})["topology"] is None


@pytest.mark.parametrize(
    ("pods", "level", "gpu", "field", "text"),
    [
        (2, "row", 4, "topology", "no topology level 'row'"),
        (2, "rack", 0.5, "topology", "pods of whole GPUs"),
        (2, "rack", 0, "topology", "pods of whole GPUs"),
        (0, "rack", 4, "pods", "pods must be a whole number"),
    ],
)
def test_a_bad_gang_is_refused_naming_the_field(racks, pods, level, gpu, field, text):
    with pytest.raises(ConfigError, match=text) as refused:
        check(pods, level, True, gpu=gpu)
    assert refused.value.problems[0].field == field


def test_the_api_and_the_cli_give_the_same_answer(racks, admin_api, poolctl):
    body = {"variables": {"USER_GPU": 4}, "pods": 3, "topology": {"level": "rack", "required": True}}
    answer = admin_api.post("/api/pools/racked/check/", body, format="json")
    assert answer.status_code == 200, answer.content
    args = ("pool", "check", "racked", "--set", "USER_GPU=4", "--pods", "3", "--topology-level", "rack")
    cli = poolctl(*args, "--topology-required", "--format", "json")
    assert cli.code == 0 and cli.json() == answer.json()
    assert answer.json()["topology"]["domains"] == [{"path": "a/r1", "slots": 3}]
    text = poolctl(*args[:-2], "--topology-level", "zone")
    assert "Topology: Fits now without a split: 2 zone domains could take it whole" in text.out.splitlines()
    bad = admin_api.post("/api/pools/racked/check/", {**body, "topology": {"level": "row"}}, format="json")
    assert bad.status_code == 400 and "row" in bad.content.decode()


def test_the_what_if_page_shows_the_gang_and_names_a_bad_level(racks, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "x"))
    request = {"pool": "racked", "cpu": "1", "gpu": "4", "memory": "1Gi", "storage": "1Gi", "pods": "3"}
    page = client.get("/what-if/", {**request, "topology_level": "rack", "topology_required": "on"})
    result = page.content.decode().split('<section id="what-if-result"', 1)[1].split("</section>", 1)[0]
    assert "Fits in one rack now: 1 rack domain could take it whole" in result
    assert "a/r1 (3 pods)" in result
    bad = client.get("/what-if/", {**request, "topology_level": "row"}).content.decode()
    assert "no topology level &#x27;row&#x27;" in bad and 'id="id_topology_level-error"' in bad
