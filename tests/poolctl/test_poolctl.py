"""``poolctl`` as an operator uses it: tables, the documented JSON shapes, exit codes and one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_pool_list_json_has_exactly_the_documented_shape(demo, poolctl):
    result = poolctl("pool", "list", "--format", "json")
    assert result.code == 0
    pools = result.json()["pools"]
    assert [p["name"] for p in pools] == sorted(p["name"] for p in pools)
    for row in pools:
        assert set(row) == {"name", "description", "status", "backend", "shared", "node_set", "gpu"}
        assert set(row["gpu"]) == {
            "quota_used",
            "quota_limit",
            "quota_free",
            "total_usage",
            "total_capacity",
            "total_free",
            "used_on_nodes",
        }
        assert row["gpu"]["used_on_nodes"] + row["gpu"]["total_free"] == row["gpu"]["total_capacity"]
        assert all(isinstance(value, int) for value in row["gpu"].values())


def test_pool_list_text_is_an_aligned_table(demo, poolctl):
    lines = poolctl("pool", "list").out.splitlines()
    assert lines[0].startswith("Pool") and "Quota Used" in lines[0]
    assert set(lines[1]) <= {"-", " "}
    assert any(line.startswith("robotics-training ") for line in lines)


def test_resource_list_json_shape_and_filters(demo, poolctl):
    rows = poolctl(
        "resource", "list", "--pool", "robotics-training", "--platform", "h100-platform", "--format", "json"
    ).json()["resources"]
    assert rows and {r["platform"] for r in rows} == {"h100-platform"}
    for row in rows:
        assert set(row) == {
            "node",
            "backend",
            "pool",
            "platform",
            "type",
            "status",
            "gpu_product",
            "available",
            "reason",
            "gpu",
            "cpu",
            "memory_gi",
            "storage_gi",
            "mig",
            "time_sliced",
        }
        assert set(row["gpu"]) == {"used", "capacity"}


def test_render_uses_the_default_platform_and_user_values(demo, poolctl):
    result = poolctl("pool", "render", "robotics-training", "--set", "USER_GPU=4", "--format", "json").json()
    assert set(result) == {"pool", "platform", "variables", "pod_template"}
    assert result["platform"] == "h100-platform"
    assert result["variables"]["USER_GPU"] == 4
    assert result["variables"]["USER_MEMORY"] == "128Gi"  # the platform's default beats the pool's
    env = next(c for c in result["pod_template"]["spec"]["containers"] if c["name"] == "user")["env"]
    assert {"name": "OMP_NUM_THREADS", "value": "16"} in env  # rendered as a string, as Kubernetes wants env values


def test_render_fills_the_builtin_user_container(demo, poolctl):
    result = poolctl("pool", "render", "heterogeneous_pool", "--set", "USER_GPU=2", "--format", "json").json()
    assert result["platform"] == "l40s_platform"
    user = next(c for c in result["pod_template"]["spec"]["containers"] if c["name"] == "user")
    assert user["resources"]["limits"] == {
        "cpu": "1",
        "memory": "1Gi",
        "nvidia.com/gpu": "2",
        "ephemeral-storage": "1Gi",
    }
    assert result["pod_template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L40S"}


def test_check_exit_code_says_whether_the_request_fits(demo, poolctl):
    fits = poolctl("pool", "check", "robotics-training", "--platform", "h100-platform", "--format", "json")
    assert fits.code == 0, fits.out
    assert set(fits.json()) == {
        "pool",
        "platform",
        "passed",
        "errors",
        "nodes",
        "starts",
        "start_now_nodes",
        "quota",
        "topology",
        "pending_verdict",
    }
    assert fits.json()["pending_verdict"]["reason"] in {"scheduling", "no_capacity", "reclaim", "over_fair_share"}
    assert set(fits.json()["nodes"][0]) == {"node", "passed", "errors", "start", "shortfalls"}
    too_big = poolctl("pool", "check", "robotics-training", "--platform", "h100-platform", "--set", "USER_GPU=64")
    assert too_big.code == 1
    assert "FAILED" in too_big.out


def test_history_json_shape_and_filter_by_name(demo, poolctl, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"mine": {"spec": {}}}))
    assert (
        poolctl(
            "config", "update", "pod_template", "mine", "--file", str(path), "--description", "why", "--tag", "t1"
        ).code
        == 0
    )
    revisions = poolctl("config", "history", "POD_TEMPLATE", "--name", "mine", "--format", "json").json()["revisions"]
    assert len(revisions) == 1
    assert set(revisions[0]) == {"config_type", "revision", "name", "username", "created_at", "description", "tags"}
    assert (revisions[0]["description"], revisions[0]["tags"]) == ("why", ["t1"])


def test_diff_rollback_and_tag_from_the_cli(demo, poolctl, tmp_path):
    path = tmp_path / "t.json"
    for description in ("one", "two"):
        path.write_text(json.dumps({"name": "scratch", "backend": "default", "description": description}))
        assert poolctl("config", "update", "POOL", "--file", str(path)).code == 0
    latest = poolctl("config", "history", "POOL", "--format", "json").json()["revisions"][0]["revision"]
    diff = poolctl("config", "diff", f"POOL:{latest - 1}", f"POOL:{latest}").out
    assert '-  "description": "one",' in diff and '+  "description": "two",' in diff
    assert poolctl("config", "rollback", f"POOL:{latest - 1}").code == 0
    shown = poolctl("config", "show", "POOL", "scratch", "--format", "json").json()
    assert shown["scratch"]["description"] == "one"
    tagged = poolctl("config", "tag", f"POOL:{latest}", "--set", "bad", "--set", "reverted")
    assert "bad, reverted" in tagged.out


def test_delete_of_a_template_in_use_names_the_pools(demo, poolctl):
    result = poolctl("config", "delete", "POD_TEMPLATE", "default_amd64")
    assert result.code == 1
    assert "is used by pools" in result.err and "robotics-training" in result.err


@pytest.mark.parametrize(
    "args, message",
    [
        (["config", "show", "POOL", "nope"], "POOL 'nope' does not exist"),
        (["config", "show", "GADGET"], "unknown config type 'GADGET'"),
        (["config", "import", "/no/such/file.json"], "file not found: /no/such/file.json"),
        (["config", "rollback", "POOL"], "is not TYPE:REVISION"),
        (["pool", "render", "nope"], "pool 'nope' does not exist"),
        (["pool", "render", "robotics-training", "--platform", "tpu"], "has no platform 'tpu'"),
        (["pool", "render", "robotics-training", "--set", "novalue"], "'novalue' is not KEY=VALUE"),
        (["role", "set", "team", "pool"], "must be osmo-<pool name prefix>"),
        (["role", "check", "--roles", "osmo-ghost", "--action", "pool:Read"], "role 'osmo-ghost' does not exist"),
        (["backend", "sync", "nope"], "backend 'nope' does not exist"),
    ],
)
def test_errors_are_one_clear_line_with_exit_status_1(demo, poolctl, args, message):
    result = poolctl(*args)
    assert result.code == 1
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1


def run_manage(*args, env=None):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120
    )


def test_usage_errors_exit_2_and_real_errors_exit_1_without_traceback(tmp_path):
    import os

    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}"}
    assert run_manage("migrate", "--noinput", env=env).returncode == 0
    usage = run_manage("poolctl", "pool", "frobnicate", env=env)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    missing = run_manage("poolctl", "config", "import", str(tmp_path / "absent.yaml"), env=env)
    assert missing.returncode == 1
    assert missing.stderr.strip().startswith("Error: file not found")
    assert "Traceback" not in missing.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "x": [1, 2}\n}')
    bad_json = run_manage("poolctl", "config", "import", str(broken), env=env)
    assert bad_json.returncode == 1 and "invalid JSON at line 2, column 13" in bad_json.stderr
