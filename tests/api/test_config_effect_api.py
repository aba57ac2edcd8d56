"""``POST /api/configs/{type}/?dry_run=1``: nothing saved, and the answer's ``effect`` says what the change would move,
as the caller may see it (SEMANTICS §5, §6.1, §7.4)."""

from people import person, role

from pools.models import ConfigRevision, NodeMembership


def members(pool):
    return set(NodeMembership.objects.filter(pool__name=pool).values_list("node__name", flat=True))


def test_a_dry_run_answers_the_nodes_gpus_and_workloads_that_would_move(two_pools, admin_api):
    revisions = ConfigRevision.objects.count()
    answer = admin_api.post(
        "/api/configs/POD_TEMPLATE/?dry_run=1", {"a": {"spec": {"nodeSelector": {"team": "x"}}}}, format="json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["revisions"] == [] and ConfigRevision.objects.count() == revisions
    assert members("team-a") == {"n1", "n2"}
    assert body["effect"] == {
        "pools": [
            {
                "pool": "team-a",
                "backend": "test-cluster",
                "nodes_in": ["n4"],
                "nodes_out": ["n1", "n2"],
                "gpus_in": 2,
                "gpus_out": 16,
                "nodes_before": 2,
                "nodes_after": 1,
                "gpus_before": 16,
                "gpus_after": 2,
                "workloads_affected": 1,
                "workload_gpus": 4,
                "workloads": [
                    {"pool_label": "team-a", "namespace": "default", "user": "", "pods": 1, "gpu": 4, "nodes": ["n1"]}
                ],
                "summary": "2 nodes, 16 GPUs leave team-a, 1 workload running; 1 node, 2 GPUs join team-a",
            }
        ],
        "warnings": [],
    }


def test_a_dry_run_shows_only_what_the_caller_may_see_and_refuses_what_the_write_would(two_pools, client_for):
    writer = person(
        "alice",
        role(
            "team-a-editor",
            {"actions": ["pool:Read"], "resources": ["pool/team-a"]},
            {"actions": ["config:Read", "config:Update"], "resources": ["config/POOL"]},
        ),
        password=None,
    )
    api = client_for(writer)
    moved = {"name": "team-a", "backend": "test-cluster", "node_label": "team=x"}
    answer = api.post("/api/configs/POOL/?dry_run=1", moved, format="json")
    assert answer.status_code == 200, answer.content
    assert [row["pool"] for row in answer.json()["effect"]["pools"]] == ["team-a"]
    assert "team-b" not in answer.content.decode()

    # n3 is only in team-b, hidden from alice: taking it into her pool is refused on the dry run as on the write
    taking = {"name": "team-a", "backend": "test-cluster", "node_label": "team=b"}
    refused = api.post("/api/configs/POOL/?dry_run=1", taking, format="json")
    assert refused.status_code == 400 and "not yours to move" in refused.content.decode()
    assert "n3" not in refused.content.decode()
