"""Every JSON example of the seeds loads with poolctl as the seeds use it; the broken ones are refused cleanly.

And the seeds' heterogeneous-pool walk-through works step by step (osmo-resource-pools.md, Steps 2–4).
"""

import json

import pytest
from seed_examples import SEEDS, seed_examples

from pools.configs import normalize_body, parse_config_type
from pools.models import ConfigRevision, PodTemplate, Pool

EXAMPLES = seed_examples(SEEDS)

# The examples that are not valid JSON as printed, with where the parser stops: the a100 template's
# bracket mismatch (both copies), the robotics pools with one closing brace too many, and the
# commented snippet that illustrates template order.
BROKEN = {
    "osmo-pool-configuration.rst#2:a100_pod_template.json": "line 14, column 9",
    "osmo-resource-pools.md#2:a100_pod_template.json": "line 14, column 7",
    "osmo-resource-pools.md#4": "line 36, column 1",
    "osmo-resource-pools.md#5": "line 42, column 1",
    "osmo-pool-reference.rst#1": "line 3, column 27",
}


def test_the_seeds_hold_the_examples_we_expect():
    assert len(EXAMPLES) == 15
    assert set(BROKEN) <= {example.id for example in EXAMPLES}


def seed_command(example, path):
    """The poolctl command the seed's own `osmo config update/set` line corresponds to."""
    data = json.loads(example.text)
    if "name" in data:  # a pool body or a role with its name inside
        config_type = "ROLE" if "actions" in data or "policies" in data else "POOL"
        return ["config", "update", config_type, data["name"], "--file", str(path)]
    ((name, body),) = data.items()
    config_type = "POD_TEMPLATE" if "spec" in body else "POOL"
    return ["config", "update", config_type, name, "--file", str(path)]


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.id not in BROKEN], ids=lambda e: e.id)
def test_valid_seed_example_loads_with_poolctl(example, demo, poolctl, tmp_path):
    path = tmp_path / (example.filename or "example.json")
    path.write_text(example.text)
    PodTemplate.objects.get_or_create(name="a100", defaults={"spec": {}})  # the seeds' a100 is the broken one
    command = seed_command(example, path)
    config_type, name = parse_config_type(command[2]), command[3]

    result = poolctl(*command)

    assert result.code == 0, result.err
    data = json.loads(example.text)
    body = data if "name" in data else data[name]
    shown = poolctl("config", "show", command[2], name, "--format", "json").json()
    assert shown == {name: normalize_body(config_type, name, body)}


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.id in BROKEN], ids=lambda e: e.id)
def test_broken_seed_example_gets_line_and_column_and_nothing_is_stored(example, demo, poolctl, tmp_path):
    path = tmp_path / (example.filename or "example.json")
    path.write_text(example.text)
    before = ConfigRevision.objects.count()

    for command in (["config", "update", "POD_TEMPLATE", "a100", "--file", str(path)], ["config", "import", str(path)]):
        result = poolctl(*command)
        assert result.code == 1
        assert f"invalid JSON at {BROKEN[example.id]}" in result.err
        assert "Traceback" not in result.err
        assert len(result.err.strip().splitlines()) == 1

    assert ConfigRevision.objects.count() == before


def example_file(tmp_path, seed, filename):
    example = next(e for e in EXAMPLES if e.seed == seed and e.filename == filename)
    path = tmp_path / filename
    path.write_text(example.text)
    return path


def test_heterogeneous_pool_walk_through(db, poolctl, tmp_path, cluster):
    from kube_objects import node

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
    seed = "osmo-resource-pools.md"

    # Step 2: the L40S template loads; the A100 one, broken in the document, is refused with its line.
    assert (
        poolctl(
            "config",
            "update",
            "POD_TEMPLATE",
            "l40s",
            "--file",
            str(example_file(tmp_path, seed, "l40s_pod_template.json")),
        ).code
        == 0
    )
    broken = poolctl(
        "config",
        "update",
        "POD_TEMPLATE",
        "a100",
        "--file",
        str(example_file(tmp_path, seed, "a100_pod_template.json")),
    )
    assert broken.code == 1 and "line 14" in broken.err
    assert not PodTemplate.objects.filter(name="a100").exists()

    # Step 3 before the A100 template exists: the missing reference is named, nothing is stored.
    pool_file = example_file(tmp_path, seed, "platform_config.json")
    missing = poolctl("config", "update", "POOL", "heterogeneous_pool", "--file", str(pool_file))
    assert missing.code == 1
    assert "pod template 'a100' does not exist" in missing.err
    assert "platforms.a100_platform.override_pod_template" in missing.err
    assert not Pool.objects.filter(name="heterogeneous_pool").exists()

    # With the bracket fixed, step 2 and step 3 go through.
    fixed = tmp_path / "a100_fixed.json"
    fixed.write_text(
        json.dumps(
            {
                "a100": {
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
                        "tolerations": [
                            {
                                "key": "nvidia.com/gpu.product",
                                "operator": "Equal",
                                "value": "NVIDIA-A100",
                                "effect": "NoSchedule",
                            }
                        ],
                    }
                }
            }
        )
    )
    assert poolctl("config", "update", "POD_TEMPLATE", "a100", "--file", str(fixed)).code == 0
    assert poolctl("config", "update", "POOL", "heterogeneous_pool", "--file", str(pool_file)).code == 0

    # "Validate the pool configuration": each platform holds exactly its hardware.
    rows = poolctl("resource", "list", "--pool", "heterogeneous_pool", "--format", "json").json()["resources"]
    assert {(r["node"], r["platform"], r["type"]) for r in rows} == {
        ("l40s-1", "l40s_platform", "RESERVED"),
        ("a100-1", "a100_platform", "RESERVED"),
    }
    assert {r["node"]: r["gpu"]["capacity"] for r in rows} == {"l40s-1": 4, "a100-1": 8}

    # Step 4: the generated pool role lets its holders use the pool, and only pools with that prefix.
    assert poolctl("role", "set", "osmo-heterogeneous_pool", "pool").code == 0
    allowed = poolctl(
        "role",
        "check",
        "--roles",
        "osmo-heterogeneous_pool",
        "--action",
        "workflow:Create",
        "--resource",
        "pool/heterogeneous_pool",
        "--format",
        "json",
    ).json()
    assert allowed["allowed"] is True
    other = poolctl(
        "role",
        "check",
        "--roles",
        "osmo-heterogeneous_pool",
        "--action",
        "workflow:Create",
        "--resource",
        "pool/robotics-training",
        "--format",
        "json",
    ).json()
    assert other["allowed"] is False


def test_legacy_role_file_from_the_seeds_loads_as_policies(db, poolctl, tmp_path):
    path = example_file(tmp_path, "osmo-pool-configuration.rst", "role_config.json")
    assert poolctl("config", "update", "ROLE", "osmo-shared", "--file", str(path)).code == 0
    check = poolctl(
        "role",
        "check",
        "--roles",
        "osmo-shared",
        "--action",
        "workflow:Create",
        "--resource",
        "pool/shared_simulation_training_pool",
        "--format",
        "json",
    ).json()
    assert check["allowed"] is True
