"""gpuctl's pool workflow (SEMANTICS §8.1) on a writable simulated cluster, through ``poolctl``: the verbs write the
cluster's node labels as they write a Kubernetes one's (all or nothing, a 409 read again, one audit row per label),
the labels outlive the process, and the demo's gpuctl-cluster runs the seed's four pool files unchanged."""

import json

import pytest
from gpuctl_files import POOL_FILES, POOL_KEY, TYPE_KEY, write_pool_files

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.fleet.layouts import demo_blueprint
from pools.inventory.sources import NodeChanged, SimulatedSource, source_for
from pools.models import Backend, Node, NodeLabelChange, Pool


@pytest.fixture
def files(tmp_path):
    return write_pool_files(tmp_path)


@pytest.fixture
def simulated(db, inventory_dir, actor):
    """A writable simulated cluster of the gpuctl guide's nodes (the demo's blueprint), whose default pool is
    ``default``, synced once."""
    blueprint = inventory_dir / "sim.json"
    blueprint.write_text(json.dumps(demo_blueprint("gpuctl-cluster")))
    services.config_apply(
        changes={
            ConfigType.POOL: {"default": {"backend": "sim-cluster", "description": "nodes in no other pool"}},
            ConfigType.BACKEND: {
                "sim-cluster": {
                    "kind": "simulated",
                    "seed": 6,
                    "source": str(blueprint),
                    "writable": True,
                    "default_pool": "default",
                }
            },
        },
        actor=actor,
    )
    backend = Backend.objects.get(name="sim-cluster")
    services.backend_sync(backend=backend)
    return backend


def cluster_labels(backend, key=POOL_KEY) -> dict[str, str]:
    """What the cluster itself says now (a new source, as another process reads it): node -> the label's value."""
    return {
        node["metadata"]["name"]: node["metadata"]["labels"].get(key, "") for node in source_for(backend).list_nodes()
    }


def pool_nodes(name: str) -> list[str]:
    return [node["name"] for node in selectors.gpuctl_nodes(user=SYSTEM, pool=name)]


def test_create_label_and_delete_write_the_simulated_cluster_with_the_audit_of_a_kubernetes_one(
    simulated, poolctl, files
):
    for name in ("training-pool", "dev-pool"):
        result = poolctl("create", "-f", files[name])  # no --backend: the only writable backend
        assert result.code == 0, result.err
    assert cluster_labels(simulated) == {
        "gpu-node-1": "training-pool",
        "gpu-node-2": "training-pool",
        "gpu-node-3": "",
        "gpu-node-4": "",
        "gpu-node-5": "dev-pool",
        "cpu-node-1": "",
        "cpu-node-2": "",
    }
    assert cluster_labels(simulated, TYPE_KEY)["gpu-node-1"] == "A100-100G"
    assert pool_nodes("training-pool") == ["gpu-node-1", "gpu-node-2"]  # at once, without a sync
    changes = NodeLabelChange.objects.filter(backend=simulated, node_name="gpu-node-1").order_by("key")
    assert [(c.key, c.old_value, c.new_value, c.operation) for c in changes] == [
        (TYPE_KEY, None, "A100-100G", "create -f training-pool"),
        (POOL_KEY, None, "training-pool", "create -f training-pool"),
    ]

    refused = poolctl("label", "node", "gpu-node-5", f"{POOL_KEY}=training-pool")
    assert refused.code == 1 and "use --overwrite" in refused.err
    assert poolctl("label", "node", "gpu-node-5", f"{POOL_KEY}=training-pool", "--overwrite").code == 0
    assert cluster_labels(simulated)["gpu-node-5"] == "training-pool"
    assert pool_nodes("training-pool") == ["gpu-node-1", "gpu-node-2", "gpu-node-5"]
    assert poolctl("label", "node", "gpu-node-5", TYPE_KEY, "--delete").code == 0
    last = NodeLabelChange.objects.filter(node_name="gpu-node-5").latest("id")
    assert (last.key, last.old_value, last.new_value, last.operation) == (
        TYPE_KEY,
        "RTX4090-24G",
        None,
        f"label node gpu-node-5 {TYPE_KEY}-",
    )

    # The simulated fleet runs jobs on the pool's nodes: refused with them listed, then forced.
    refused = poolctl("delete", "pool", "training-pool")
    assert refused.code == 1 and "running or pending workload" in refused.err
    assert poolctl("delete", "pool", "training-pool", "--force").code == 0
    assert not Pool.objects.filter(name="training-pool").exists()
    assert set(cluster_labels(simulated).values()) == {""}
    assert "gpu-node-1" in pool_nodes("default")
    removed = NodeLabelChange.objects.filter(operation="delete pool training-pool --force")
    assert sorted((c.node_name, c.old_value, c.new_value) for c in removed) == [
        ("gpu-node-1", "training-pool", None),
        ("gpu-node-2", "training-pool", None),
        ("gpu-node-5", "training-pool", None),
    ]


def test_labels_outlive_the_process_and_a_resync_keeps_the_pools(simulated, poolctl, files, actor):
    assert poolctl("create", "-f", files["inference-pool"]).code == 0
    # As after a restart: the database forgets the nodes, a new source lists the cluster again.
    Node.objects.filter(backend=simulated).delete()
    services.backend_sync(backend=simulated)
    assert pool_nodes("inference-pool") == ["gpu-node-3", "gpu-node-4"]
    assert Node.objects.get(backend=simulated, name="gpu-node-3").labels[TYPE_KEY] == "A10-24G"


def test_a_file_naming_a_missing_node_or_a_node_of_another_pool_changes_no_label(simulated, poolctl, files, tmp_path):
    before = cluster_labels(simulated)
    missing = tmp_path / "missing.yaml"
    missing.write_text(POOL_FILES["training-pool"] + "  gpu-node-9:\n    gpu-type: A100-100G\n")
    result = poolctl("create", "-f", str(missing))
    assert result.code == 1 and "gpu-node-9" in result.err
    assert cluster_labels(simulated) == before and not Pool.objects.filter(name="training-pool").exists()

    assert poolctl("create", "-f", files["dev-pool"]).code == 0
    grab = tmp_path / "grab.yaml"
    grab.write_text(POOL_FILES["training-pool"] + "  gpu-node-5:\n    gpu-type: RTX4090-24G\n")
    result = poolctl("create", "-f", str(grab))
    assert result.code == 1 and "node 'gpu-node-5' is already in pool 'dev-pool'" in result.err
    assert cluster_labels(simulated)["gpu-node-1"] == ""
    assert poolctl("create", "-f", str(grab), "--overwrite").code == 0
    assert [cluster_labels(simulated)[n] for n in ("gpu-node-1", "gpu-node-2", "gpu-node-5")] == ["training-pool"] * 3


def test_a_patch_failing_midway_undoes_the_ones_applied(simulated, poolctl, files, monkeypatch):
    patch = SimulatedSource.patch_node_labels

    def failing_on_node_2(self, name, labels, *, resource_version=""):
        if name == "gpu-node-2" and labels.get(POOL_KEY):
            raise NodeChanged(f"labelling node {name}: it changed meanwhile (HTTP 409 Conflict)")
        return patch(self, name, labels, resource_version=resource_version)

    monkeypatch.setattr(SimulatedSource, "patch_node_labels", failing_on_node_2)
    before = cluster_labels(simulated)
    result = poolctl("create", "-f", files["training-pool"])
    assert result.code == 1 and "gpu-node-2" in result.err
    assert cluster_labels(simulated) == before
    assert cluster_labels(simulated, TYPE_KEY)["gpu-node-1"] == ""
    assert not Pool.objects.filter(name="training-pool").exists() and not NodeLabelChange.objects.exists()


def test_a_stale_version_is_read_again_once(simulated, poolctl, files, monkeypatch):
    """Another writer labels gpu-node-1 between the check and the patch: the 409 is read again and checked again."""
    listed = SimulatedSource.list_nodes

    def list_then_relabel(self):
        nodes = listed(self)
        patch = SimulatedSource.patch_node_labels
        patch(source_for(simulated), "gpu-node-1", {"team": "vision"})
        return nodes

    monkeypatch.setattr(SimulatedSource, "list_nodes", list_then_relabel)
    assert poolctl("create", "-f", files["training-pool"]).code == 0
    assert cluster_labels(simulated)["gpu-node-1"] == "training-pool"
    assert cluster_labels(simulated, "team")["gpu-node-1"] == "vision"


def test_which_backend_is_written_without_backend(simulated, poolctl, files, actor):
    body = selectors.config_show(config_type=ConfigType.BACKEND, name="sim-cluster", user=SYSTEM)
    other = {**body["sim-cluster"], "default_pool": ""}
    services.config_apply(changes={ConfigType.BACKEND: {"other-sim": other}}, actor=actor)
    several = poolctl("create", "-f", files["dev-pool"])
    assert several.code == 1 and "several writable backends (other-sim, sim-cluster)" in several.err
    assert poolctl("create", "-f", files["dev-pool"], "--backend", "sim-cluster").code == 0

    services.config_apply(
        changes={
            ConfigType.BACKEND: {
                "other-sim": {**other, "writable": False},
                "sim-cluster": {**body["sim-cluster"], "writable": False},
            }
        },
        actor=actor,
    )
    none = poolctl("create", "-f", files["inference-pool"])
    assert none.code == 1 and "there is no writable backend" in none.err
    refused = poolctl("label", "node", "gpu-node-3", f"{POOL_KEY}=x", "--backend", "sim-cluster")
    assert refused.code == 1 and "is not writable" in refused.err

    problem = poolctl("config", "update", "BACKEND", "files", "--file", _backend_file(files, {"writable": True}))
    assert problem.code == 1 and "only a kubernetes or simulated backend can be writable" in problem.err


def _backend_file(files, extra) -> str:
    path = f"{files['dev-pool']}.backend.json"
    with open(path, "w") as handle:
        json.dump({"kind": "file", **extra}, handle)
    return path


# --- the demo ------------------------------------------------------------------------------------------------------


def test_the_seeds_four_pool_files_run_unchanged_on_the_demo(demo, poolctl, files):
    for name in ("training-pool", "inference-pool", "dev-pool", "compute-pool"):
        result = poolctl("create", "-f", files[name])
        assert result.code == 0, result.err
        assert "on backend gpuctl-cluster" in result.out
    names = ("training-pool", "inference-pool", "dev-pool", "compute-pool")
    rows = {row["name"]: row for row in poolctl("get", "pools", "--json").json()["pools"]}
    assert {name: (rows[name]["status"], rows[name]["node_count"]) for name in (*names, "gpuctl-default")} == {
        "training-pool": ("active", 2),
        "inference-pool": ("active", 2),
        "dev-pool": ("active", 1),
        "compute-pool": ("active", 2),
        "gpuctl-default": ("active", 0),
    }
    text = poolctl("get", "pools").out.splitlines()
    assert text[0].split() == ["POOL", "NAME", "STATUS", "GPU", "TOTAL", "GPU", "USED", "GPU", "FREE", "NODE", "COUNT"]
    assert {line.split()[0] for line in text[1:]} >= {*names, "gpuctl-default"}
    nodes = {name: poolctl("get", "nodes", "--pool", name, "--json").json()["nodes"] for name in names}
    assert {name: {row["name"]: row["gpu_total"] for row in rows_} for name, rows_ in nodes.items()} == {
        "training-pool": {"gpu-node-1": 8, "gpu-node-2": 8},
        "inference-pool": {"gpu-node-3": 4, "gpu-node-4": 4},
        "dev-pool": {"gpu-node-5": 4},
        "compute-pool": {"cpu-node-1": 0, "cpu-node-2": 0},
    }
    # A pool's total is its available nodes' GPUs (the simulated nodes go down now and then, as real ones do).
    for name in names:
        available = sum(row["gpu_total"] for row in nodes[name] if row["status"] == "available")
        assert rows[name]["gpu_total"] == available
    described = poolctl("describe", "pool", "inference-pool")
    assert described.code == 0 and "Node Count:  2" in described.out


def test_a_new_demo_starts_without_the_labels_an_earlier_one_wrote(db, inventory_dir):
    overlay = inventory_dir / "node-labels" / "gpuctl-cluster.json"
    overlay.parent.mkdir()
    overlay.write_text(json.dumps({"nodes": {"gpu-node-1": {"labels": {POOL_KEY: "training-pool"}, "writes": 1}}}))
    assert services.demo_install()
    assert not overlay.exists()
    assert POOL_KEY not in Node.objects.get(backend__name="gpuctl-cluster", name="gpu-node-1").labels
    assert sorted(pool_nodes("gpuctl-default")) == ["cpu-node-1", "cpu-node-2"] + [f"gpu-node-{n}" for n in range(1, 6)]
