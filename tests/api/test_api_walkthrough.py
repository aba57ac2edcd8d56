"""The seeds' heterogeneous-pool walk-through (osmo-resource-pools.md, Steps 2–4), done by a script over HTTP.

The seeds' own files are posted unchanged: the name-keyed L40S template, the (fixed) A100 template and
``platform_config.json``. Then the script checks the resources, generates the pool role and rolls a change
back. Credentials are a signed-in session here; tokens use the same endpoints.
"""

from __future__ import annotations

import json

from kube_objects import node
from people import PASSWORD, person
from seed_examples import SEEDS, seed_examples

SEED = "osmo-resource-pools.md"
A100_FIXED = {
    "a100": {
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
            "tolerations": [
                {"key": "nvidia.com/gpu.product", "operator": "Equal", "value": "NVIDIA-A100", "effect": "NoSchedule"}
            ],
        }
    }
}


def seed_file(filename: str) -> str:
    return next(e for e in seed_examples(SEEDS) if e.seed == SEED and e.filename == filename).text


def test_heterogeneous_pool_walk_through_over_http(cluster, client):
    cluster(
        [
            node("l40s-1", product="NVIDIA-L40S", gpu=4),
            node(
                "a100-1",
                product="NVIDIA-A100",
                gpu=8,
                taints=[{"key": "nvidia.com/gpu.product", "value": "NVIDIA-A100", "effect": "NoSchedule"}],
            ),
            node("cpu-1", product=None, gpu=None),
        ],
        name="default",
    )
    person("operator", is_superuser=True)
    assert client.login(username="operator", password=PASSWORD)

    def post(url, text):
        return client.generic("POST", url, text, content_type="application/json")

    # Step 2: the L40S template file posts as it is; the A100 one, broken in the document, gets its line.
    assert post("/api/configs/POD_TEMPLATE/", seed_file("l40s_pod_template.json")).status_code == 200
    broken = post("/api/configs/POD_TEMPLATE/", seed_file("a100_pod_template.json"))
    assert broken.status_code == 400 and "line 14" in broken.json()["errors"][0]["message"]

    # Step 3 before the A100 template exists: the missing reference is named with its field.
    pool_file = seed_file("platform_config.json")
    missing = post("/api/pools/", pool_file)
    assert missing.status_code == 400
    assert missing.json()["errors"] == [
        {"field": "platforms.a100_platform.override_pod_template", "message": "pod template 'a100' does not exist"}
    ]
    assert client.get("/api/pools/heterogeneous_pool/").status_code == 404

    # With the bracket fixed, both steps go through; the pool reads back as the file said.
    assert post("/api/configs/POD_TEMPLATE/", json.dumps(A100_FIXED)).status_code == 200
    created = post("/api/pools/", pool_file)
    assert created.status_code == 201, created.content
    expected_platforms = json.loads(pool_file)["platforms"]
    assert {name: body["override_pod_template"] for name, body in created.json()["platforms"].items()} == {
        name: body["override_pod_template"] for name, body in expected_platforms.items()
    }

    # "Validate the pool configuration": each platform holds exactly its hardware.
    rows = client.get("/api/resources/", {"pools": "heterogeneous_pool"}).json()["resources"]
    assert {(r["node"], r["platform"], r["type"], r["gpu"]["capacity"]) for r in rows} == {
        ("l40s-1", "l40s_platform", "RESERVED", 4),
        ("a100-1", "a100_platform", "RESERVED", 8),
    }
    check = client.post(
        "/api/pools/heterogeneous_pool/check/",
        {"platform": "a100_platform", "variables": {"USER_GPU": 8}},
        content_type="application/json",
    )
    assert check.json()["passed"] is True

    # Step 4: the generated pool role.
    role = client.post("/api/roles/generate/", {"name": "osmo-heterogeneous_pool"}, content_type="application/json")
    assert role.status_code == 201
    assert role.json()["policies"][0]["resources"] == ["pool/heterogeneous_pool*"]

    # A change, then rolled back through its revision.
    before = client.get("/api/pools/heterogeneous_pool/")
    changed = client.patch(
        "/api/pools/heterogeneous_pool/",
        {"enable_maintenance": True},
        content_type="application/json",
        headers={"If-Match": before["ETag"]},
    )
    assert changed.status_code == 200 and changed.json()["enable_maintenance"] is True
    history = client.get("/api/configs/history/", {"config_type": "POOL", "name": "heterogeneous_pool"}).json()
    created_revision = history["results"][-1]["revision"]
    rolled = client.post(f"/api/configs/POOL/{created_revision}/rollback/", {}, content_type="application/json")
    assert rolled.status_code == 200
    after = client.get("/api/pools/heterogeneous_pool/")
    assert after.json()["enable_maintenance"] is False
    assert after["ETag"] == before["ETag"]
    quota = client.get("/api/pool_quota/", {"pools": "heterogeneous_pool"}).json()["pools"][0]
    assert quota["status"] == "ONLINE" and quota["gpu"]["total_capacity"] == 12
