"""``poolctl config set`` as OSMO's seeds write it, and ``--dry-run``: what a change would move, before it is saved."""

import json

import pytest
from django.db.models import Q

from pools.models import ConfigRevision, NodeMembership, Pod

# The seed's role_config.json (osmo-pool-configuration.rst, "Pool Access Control"), as it is.
SEED_ROLE_CONFIG = {
    "name": "osmo-shared",
    "description": "Role for shared simulation training pool",
    "actions": [
        {"base": "http", "path": "/api/pool/shared_simulation_training_pool*", "method": "post"},
        {"base": "http", "path": "http:/api/profile/*", "method": "*"},
    ],
}
# The seed's a100 template (osmo-resource-pools.md, step 2, its bracket mismatch fixed).
SEED_A100 = {
    "a100": {
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
            "tolerations": [
                {"key": "nvidia.com/gpu.product", "operator": "Equal", "value": "NVIDIA-A100", "effect": "NoSchedule"}
            ],
        }
    }
}
# The a100 template with a selector no node carries: heterogeneous_pool's a100_platform then selects no node.
NO_A100 = {"a100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H999"}}}}


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def members(pool, **platform):
    rows = NodeMembership.objects.filter(pool__name=pool, **platform)
    return set(rows.values_list("node__name", flat=True))


@pytest.fixture
def walkthrough(demo, poolctl, tmp_path):
    """The demo after the seed's step 2: ``osmo config update POD_TEMPLATE a100 --file a100_pod_template.json``;
    returns the A100 nodes heterogeneous_pool's a100_platform then holds."""
    result = poolctl("config", "update", "POD_TEMPLATE", "a100", "--file", write(tmp_path, "seed.json", SEED_A100))
    assert result.code == 0, result.err
    nodes = members("heterogeneous_pool", platform_name="a100_platform")
    assert len(nodes) == 4
    return sorted(nodes)


def test_the_seeds_config_set_pool_generates_the_pool_role(demo, poolctl):
    result = poolctl("config", "set", "ROLE", "osmo-heterogeneous_pool", "pool")
    assert result.code == 0, result.err
    assert result.out.startswith("ROLE:")
    role = poolctl("config", "show", "ROLE", "osmo-heterogeneous_pool").json()["osmo-heterogeneous_pool"]
    assert role["policies"] == [
        {"effect": "Allow", "actions": ["workflow:*", "pool:Read"], "resources": ["pool/heterogeneous_pool*"]}
    ]
    # the same service as ``role set``: running it again refreshes the role and records nothing new
    assert poolctl("role", "set", "osmo-heterogeneous_pool", "pool").out.strip() == "No changes."


def test_the_seeds_config_set_with_a_file_creates_then_replaces_that_role(demo, poolctl, tmp_path):
    result = poolctl(
        "config", "set", "ROLE", "osmo-shared", "-f", write(tmp_path, "role_config.json", SEED_ROLE_CONFIG)
    )
    assert result.code == 0, result.err
    assert ConfigRevision.objects.filter(config_type="ROLE").latest("revision").name == "osmo-shared"
    role = poolctl("config", "show", "ROLE", "osmo-shared").json()["osmo-shared"]
    assert role["description"] == "Role for shared simulation training pool"
    assert any("pool/shared_simulation_training_pool*" in policy["resources"] for policy in role["policies"])

    changed = {**SEED_ROLE_CONFIG, "description": "shared pools"}
    assert poolctl("config", "set", "ROLE", "osmo-shared", "--file", write(tmp_path, "r.json", changed)).code == 0
    assert poolctl("config", "show", "ROLE", "osmo-shared").json()["osmo-shared"]["description"] == "shared pools"


def test_config_set_with_a_file_sets_one_object_of_any_type(demo, poolctl, tmp_path):
    bare = write(tmp_path, "t.json", {"spec": {"nodeSelector": {"team": "x"}}})
    assert poolctl("config", "set", "POD_TEMPLATE", "team-x", "-f", bare).code == 0
    shown = poolctl("config", "show", "POD_TEMPLATE", "team-x").json()
    assert shown == {"team-x": {"spec": {"nodeSelector": {"team": "x"}}}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["POOL", "heterogeneous_pool", "pool"], "'pool' generates a pool role: 'config set ROLE osmo-<prefix> pool'"),
        (["ROLE", "osmo-x", "team"], "unknown kind 'team'"),
        (["ROLE", "osmo-x"], "give 'pool' (config set ROLE osmo-<prefix> pool) or -f FILE"),
        (["ROLE", "team", "pool"], "must be osmo-<pool name prefix>"),
        (["NOPE", "x", "pool"], "NOPE"),
    ],
)
def test_config_set_errors_are_one_clear_line(demo, poolctl, args, message):
    result = poolctl("config", "set", *args)
    assert result.code == 1
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_config_set_with_both_pool_and_a_file_is_refused(demo, poolctl, tmp_path):
    result = poolctl("config", "set", "ROLE", "osmo-x", "pool", "-f", write(tmp_path, "r.json", SEED_ROLE_CONFIG))
    assert result.code == 1 and "one of them" in result.err


def test_the_walkthroughs_template_change_previews_the_nodes_gpus_and_workloads_that_leave(
    walkthrough, poolctl, tmp_path
):
    before = members("heterogeneous_pool")
    revisions = ConfigRevision.objects.count()

    result = poolctl(
        "config", "update", "POD_TEMPLATE", "a100", "--file", write(tmp_path, "a.json", NO_A100), "--dry-run"
    )

    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "Dry run: nothing was saved."
    assert lines[2].split() == [
        "Pool",
        "Nodes",
        "in",
        "Nodes",
        "out",
        "GPUs",
        "in",
        "GPUs",
        "out",
        "Workloads",
        "affected",
    ]
    row = next(line.split() for line in lines if line.startswith("heterogeneous_pool "))
    # The demo's pods on those nodes at this minute (its fleet moves with the clock): those holding GPUs.
    held = Pod.objects.filter(node_name__in=walkthrough).filter(Q(gpu__gt=0) | ~Q(mig_devices={})).count()
    assert row[:6] == ["heterogeneous_pool", "0", "4", "0", "32", str(held)]
    summary = next(line for line in lines if "leave heterogeneous_pool" in line)
    assert summary.startswith("4 nodes, 32 GPUs leave heterogeneous_pool")
    if held:
        assert summary.endswith(f"{held} workloads running.") or summary.endswith("1 workload running.")
    assert f"  out: {', '.join(walkthrough)}" in lines
    assert any(line.startswith("  workload: ") for line in lines) == bool(held)
    # nothing saved: no revision, the template and the memberships as they were
    assert ConfigRevision.objects.count() == revisions and members("heterogeneous_pool") == before
    assert poolctl("config", "show", "POD_TEMPLATE", "a100").json() == SEED_A100

    # the same change saved moves them at once
    assert poolctl("config", "update", "POD_TEMPLATE", "a100", "--file", write(tmp_path, "b.json", NO_A100)).code == 0
    assert members("heterogeneous_pool") == before - set(walkthrough)


def test_config_set_and_delete_take_dry_run_too(walkthrough, poolctl, tmp_path):
    result = poolctl(
        "config", "set", "POD_TEMPLATE", "a100", "-f", write(tmp_path, "a.json", NO_A100["a100"]), "--dry-run"
    )
    assert result.code == 0 and "4 nodes, 32 GPUs leave heterogeneous_pool" in result.out
    result = poolctl("config", "set", "ROLE", "osmo-heterogeneous_pool", "pool", "--dry-run")
    assert result.code == 0 and "No node would enter or leave a pool." in result.out
    extra = write(tmp_path, "extra.json", {"name": "extra", "backend": "default", "common_pod_template": ["l40s"]})
    assert poolctl("config", "update", "POOL", "extra", "-f", extra).code == 0
    revisions = ConfigRevision.objects.count()
    result = poolctl("config", "delete", "POOL", "extra", "--dry-run")
    assert result.code == 0, result.err
    row = next(line.split() for line in result.out.splitlines() if line.startswith("extra "))
    assert row[1] == "0" and int(row[2]) == len(members("extra")) > 0
    assert ConfigRevision.objects.count() == revisions
    assert poolctl("config", "show", "POOL", "extra").code == 0
    # a dry run is refused as the change would be: here, a pool that holds quotas
    refused = poolctl("config", "delete", "POOL", "heterogeneous_pool", "--dry-run")
    assert refused.code == 1 and "holds quotas" in refused.err
