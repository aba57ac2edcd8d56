"""gpuctl's pool workflow (SEMANTICS §8.1) against a real kube-apiserver, checked with the real kubectl.

The cluster is shaped through the apiserver's API (nodes with their status, bound pods) as a kubelet and a
scheduler would leave it; the console's verbs run as ``poolctl``; what they wrote is read back with
``kubectl get nodes -L runwhere.ai/pool,runwhere.ai/gpu-type``, and a relabel is made with ``kubectl label``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from pathlib import Path

import pytest
from gpuctl_files import POOL_FILES, POOL_KEY, TYPE_KEY, write_pool_files
from parallel_clients import at_once
from people import person, role
from test_kubernetes_source import Watcher, wait_for

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.inventory.sources import KubernetesSource
from pools.models import Node, NodeLabelChange, Pool

pytestmark = pytest.mark.services

KUBECTL = "/usr/bin/kubectl"
# The seed's example of ``gpuctl get pools``, with compute-pool (which the seed creates but leaves out of its
# example) in creation order before the default pool.
GET_POOLS = """\
POOL NAME        STATUS   GPU TOTAL  GPU USED  GPU FREE  NODE COUNT
training-pool    active   16         12        4         2
inference-pool   active   8          4         4         2
dev-pool         active   4          2         2         1
compute-pool     active   0          0         0         2
default          active   0          0         0         0"""

NODES = {  # name: (GPUs, InternalIP); A100 nodes have 8 GPUs, A10 and RTX4090 nodes 4
    "gpu-node-1": (8, "10.0.0.11"),
    "gpu-node-2": (8, "10.0.0.12"),
    "gpu-node-3": (4, "10.0.0.13"),
    "gpu-node-4": (4, "10.0.0.14"),
    "gpu-node-5": (4, "10.0.0.15"),
    "cpu-node-1": (0, "10.0.1.1"),
    "cpu-node-2": (0, "10.0.1.2"),
}
PODS = {  # name: (node, GPUs): 12 GPUs in use on the training nodes, 4 on inference, 2 on dev
    "train-a": ("gpu-node-1", 8),
    "train-b": ("gpu-node-2", 4),
    "serve-a": ("gpu-node-3", 4),
    "notebook-a": ("gpu-node-5", 2),
}


def kubectl(kube, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", kube.kubeconfig, *args], input=stdin, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def add_node(kube, name: str, gpu: int, ip: str) -> None:
    """A node as a kubelet registers it (through the API: the setup is not what these tests are about)."""
    kube.api.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}}})
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpu)}
    status = {
        "capacity": resources,
        "allocatable": resources,
        "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
    }
    kube.api.patch_node_status(name, {"status": status})


def add_pod(kube, name: str, node: str | None, gpu: int, phase: str = "Running", user: str = "alice") -> None:
    requests = {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": str(gpu)}
    spec = {
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": requests}}]
    }
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "default", "labels": {"osmo.user": user}}
    kube.api.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    if phase != "Pending":
        kube.api.patch_namespaced_pod_status(name, "default", {"status": {"phase": phase}})


def node_labels_shown(kube) -> dict[str, tuple[str, str]]:
    """What ``kubectl get nodes -L runwhere.ai/pool,runwhere.ai/gpu-type`` prints: node -> (POOL, GPU-TYPE)."""
    lines = kubectl(kube, "get", "nodes", "-L", f"{POOL_KEY},{TYPE_KEY}").splitlines()
    header = lines[0]
    pool_at, type_at = header.index("POOL"), header.index("GPU-TYPE")
    return {
        line.split()[0]: (line[pool_at:type_at].strip(), line[type_at:].strip()) for line in lines[1:] if line.strip()
    }


@pytest.fixture
def files(tmp_path):
    return write_pool_files(tmp_path)


@pytest.fixture
def gpuctl_cluster(db, kube, kube_backend):
    """The seed's cluster: five GPU nodes, two CPU nodes and pods using 12, 4 and 2 GPUs; a writable backend
    whose default pool is ``default``, synced once."""
    for name, (gpu, ip) in NODES.items():
        add_node(kube, name, gpu, ip)
    for name, (node, gpu) in PODS.items():
        add_pod(kube, name, node, gpu)
    backend = kube_backend()
    services.config_apply(
        changes={
            ConfigType.POOL: {"default": {"backend": "gpu-cluster", "description": "nodes in no other pool"}},
            ConfigType.BACKEND: {
                "gpu-cluster": {
                    "kind": "kubernetes",
                    "kubeconfig": kube.kubeconfig,
                    "writable": True,
                    "default_pool": "default",
                }
            },
        },
        actor=services.SYSTEM,
    )
    services.backend_sync(backend=backend)
    return backend


def create_all(poolctl, files, names=("training-pool", "inference-pool", "dev-pool", "compute-pool")):
    for name in names:
        result = poolctl("create", "-f", files[name])
        assert result.code == 0, result.err


def test_create_labels_the_nodes_and_get_pools_prints_the_seed_example(gpuctl_cluster, kube, poolctl, files):
    create_all(poolctl, files)

    assert node_labels_shown(kube) == {
        "cpu-node-1": ("compute-pool", ""),
        "cpu-node-2": ("compute-pool", ""),
        "gpu-node-1": ("training-pool", "A100-100G"),
        "gpu-node-2": ("training-pool", "A100-100G"),
        "gpu-node-3": ("inference-pool", "A10-24G"),
        "gpu-node-4": ("inference-pool", "A10-24G"),
        "gpu-node-5": ("dev-pool", "RTX4090-24G"),
    }
    result = poolctl("get", "pools")
    assert result.code == 0 and result.out.rstrip("\n") == GET_POOLS
    as_json = poolctl("get", "pools", "--json").json()["pools"]
    assert [(p["name"], p["status"], p["gpu_total"], p["gpu_used"], p["node_count"]) for p in as_json][:3] == [
        ("training-pool", "active", 16, 12, 2),
        ("inference-pool", "active", 8, 4, 2),
        ("dev-pool", "active", 4, 2, 1),
    ]
    # Audit: one row per label changed, with the operation.
    changes = NodeLabelChange.objects.filter(node_name="gpu-node-1").order_by("key")
    assert [(c.key, c.old_value, c.new_value, c.operation) for c in changes] == [
        (TYPE_KEY, None, "A100-100G", "create -f training-pool"),
        (POOL_KEY, None, "training-pool", "create -f training-pool"),
    ]
    # The rendered pod spec of a label pool carries the selector.
    assert selectors.pool_render(pool_name="dev-pool", user=SYSTEM)["pod_template"]["spec"]["nodeSelector"] == {
        POOL_KEY: "dev-pool"
    }


def test_get_nodes_describe_and_labels(gpuctl_cluster, kube, poolctl, files):
    create_all(poolctl, files)
    nodes = poolctl("get", "nodes", "--pool", "training-pool").out.splitlines()
    assert nodes[0].split() == [
        "NODE",
        "NAME",
        "STATUS",
        "GPU",
        "TOTAL",
        "GPU",
        "USED",
        "GPU",
        "FREE",
        "GPU",
        "TYPE",
    ] + [
        "IP",
        "POOL",
    ]
    assert [line.split() for line in nodes[1:]] == [
        ["gpu-node-1", "available", "8", "8", "0", "A100-100G", "10.0.0.11", "training-pool"],
        ["gpu-node-2", "available", "8", "4", "4", "A100-100G", "10.0.0.12", "training-pool"],
    ]
    by_type = poolctl("get", "nodes", "--gpu-type", "A10-24G", "--json").json()["nodes"]
    assert [(n["name"], n["ip"], n["pools"]) for n in by_type] == [
        ("gpu-node-3", "10.0.0.13", ["inference-pool"]),
        ("gpu-node-4", "10.0.0.14", ["inference-pool"]),
    ]
    described = poolctl("describe", "pool", "training-pool")
    assert described.code == 0
    assert "GPU Types:   A100-100G" in described.out and "Node Count:  2" in described.out
    jobs = poolctl("describe", "pool", "training-pool", "--json").json()["jobs"]
    assert [(j["namespace"], j["name"], j["user"], j["gpu"], j["phase"]) for j in jobs] == [
        ("default", "train-a", "alice", 8, "Running"),
        ("default", "train-b", "alice", 4, "Running"),
    ]
    assert all(j["age_seconds"] is not None and j["age_seconds"] < 600 for j in jobs)
    node = poolctl("describe", "node", "gpu-node-5", "--json").json()
    assert node["pools"] == ["dev-pool"] and node["ip"] == "10.0.0.15" and node["gpu_used"] == 2
    assert poolctl("get", "labels", "gpu-node-5", "--key", POOL_KEY).out.strip() == f"{POOL_KEY}=dev-pool"


def test_label_verbs_write_the_cluster_with_the_operation_recorded(gpuctl_cluster, kube, poolctl, files):
    create_all(poolctl, files, names=("training-pool", "dev-pool"))
    refused = poolctl("label", "node", "gpu-node-5", f"{POOL_KEY}=training-pool")
    assert refused.code == 1 and "use --overwrite" in refused.err
    assert node_labels_shown(kube)["gpu-node-5"][0] == "dev-pool"
    assert poolctl("label", "node", "gpu-node-5", f"{POOL_KEY}=training-pool", "--overwrite").code == 0
    assert node_labels_shown(kube)["gpu-node-5"][0] == "training-pool"
    assert selectors.gpuctl_nodes(user=SYSTEM, pool="training-pool")[-1]["name"] == "gpu-node-5"  # no resync
    assert poolctl("label", "node", "gpu-node-5", TYPE_KEY, "--delete").code == 0
    assert node_labels_shown(kube)["gpu-node-5"] == ("training-pool", "")
    last = NodeLabelChange.objects.filter(node_name="gpu-node-5").latest("id")
    assert (last.key, last.old_value, last.new_value, last.operation) == (
        TYPE_KEY,
        "RTX4090-24G",
        None,
        f"label node gpu-node-5 {TYPE_KEY}-",
    )


@pytest.mark.django_db(transaction=True)
def test_a_kubectl_relabel_moves_the_node_in_the_console_within_a_second(gpuctl_cluster, kube, poolctl, files):
    create_all(poolctl, files, names=("inference-pool", "dev-pool"))
    latencies = []
    with Watcher(gpuctl_cluster):
        wait_for(lambda: Node.objects.filter(name="gpu-node-5").exists(), what="the first list")
        for index in range(8):
            target = "inference-pool" if index % 2 == 0 else "dev-pool"
            started = time.monotonic()
            kubectl(kube, "label", "node", "gpu-node-5", f"{POOL_KEY}={target}", "--overwrite")
            wait_for(
                lambda target=target: (
                    "gpu-node-5" in {n["name"] for n in selectors.gpuctl_nodes(user=SYSTEM, pool=target)}
                ),
                timeout=5,
                what=f"gpu-node-5 to move to {target}",
            )
            latencies.append(time.monotonic() - started)
    p95 = statistics.quantiles(latencies, n=20)[-1]
    assert p95 <= 1.0, latencies


def test_delete_is_refused_with_workloads_listed_then_forced(gpuctl_cluster, kube, poolctl, files):
    create_all(poolctl, files)
    refused = poolctl("delete", "pool", "training-pool")
    assert refused.code == 1
    assert "default/train-a (Running, 8 GPU)" in refused.err and "default/train-b (Running, 4 GPU)" in refused.err
    assert node_labels_shown(kube)["gpu-node-1"][0] == "training-pool"
    assert Pool.objects.filter(name="training-pool").exists()

    forced = poolctl("delete", "pool", "training-pool", "--force")
    assert forced.code == 0, forced.err
    shown = node_labels_shown(kube)
    assert shown["gpu-node-1"][0] == "" and shown["gpu-node-2"][0] == ""
    assert not Pool.objects.filter(name="training-pool").exists()
    assert kube.api.read_namespaced_pod("train-a", "default").status.phase == "Running"  # nothing terminated
    # Its nodes are in no pool now: the default pool has them, and what runs there.
    default = next(p for p in selectors.gpuctl_pools(user=SYSTEM) if p["name"] == "default")
    assert (default["node_count"], default["gpu_total"], default["gpu_used"]) == (2, 16, 12)

    # delete -f with a pool without workloads; then no pool label is left anywhere.
    assert poolctl("delete", "-f", files["compute-pool"]).code == 0
    for name in ("inference-pool", "dev-pool"):
        assert poolctl("delete", "pool", name, "--force").code == 0
    assert {pool for pool, _ in node_labels_shown(kube).values()} == {""}
    refused = poolctl("delete", "pool", "default")
    assert refused.code == 1 and "default pool" in refused.err


def test_a_file_naming_a_missing_node_changes_no_label(gpuctl_cluster, kube, poolctl, tmp_path):
    before = node_labels_shown(kube)
    path = Path(tmp_path) / "bad.yaml"
    path.write_text(POOL_FILES["training-pool"] + "  gpu-node-9:\n    gpu-type: A100-100G\n")
    result = poolctl("create", "-f", str(path))
    assert result.code == 1 and "gpu-node-9" in result.err and "Traceback" not in result.err
    assert node_labels_shown(kube) == before
    assert not Pool.objects.filter(name="training-pool").exists()
    assert not NodeLabelChange.objects.exists()


def test_a_node_in_another_pool_refuses_the_whole_file_without_overwrite(
    gpuctl_cluster, kube, poolctl, files, tmp_path
):
    create_all(poolctl, files, names=("dev-pool",))
    before = node_labels_shown(kube)
    path = Path(tmp_path) / "grab.yaml"
    path.write_text(POOL_FILES["training-pool"] + "  gpu-node-5:\n    gpu-type: RTX4090-24G\n")
    result = poolctl("create", "-f", str(path))
    assert result.code == 1 and "node 'gpu-node-5' is already in pool 'dev-pool'" in result.err
    assert node_labels_shown(kube) == before  # gpu-node-1 and -2 were not labelled either

    assert poolctl("create", "-f", str(path), "--overwrite").code == 0
    shown = node_labels_shown(kube)
    assert [shown[n][0] for n in ("gpu-node-1", "gpu-node-2", "gpu-node-5")] == ["training-pool"] * 3


def test_a_patch_failing_midway_undoes_the_ones_applied(gpuctl_cluster, kube, poolctl, tmp_path, monkeypatch):
    """gpu-node-3 is deleted from the cluster after the check and before the patches: its patch gets a 404."""
    listed = KubernetesSource.list_nodes

    def list_then_delete(self):
        nodes = listed(self)
        kube.delete_node("gpu-node-3")
        return nodes

    monkeypatch.setattr(KubernetesSource, "list_nodes", list_then_delete)
    before = node_labels_shown(kube)
    path = Path(tmp_path) / "five.yaml"
    path.write_text(
        "kind: pool\nversion: v0.1\npool: {name: big-pool}\nnodes:\n"
        + "".join(f"  {n}: {{gpu-type: T}}\n" for n in ("gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-4"))
    )
    result = poolctl("create", "-f", str(path))
    assert result.code == 1 and "gpu-node-3" in result.err and "no longer exists" in result.err
    after = node_labels_shown(kube)
    assert after == {name: labels for name, labels in before.items() if name != "gpu-node-3"}
    assert not Pool.objects.filter(name="big-pool").exists()
    assert not NodeLabelChange.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_creates_naming_the_same_node_at_once_exactly_one_wins(
    gpuctl_cluster, kube, poolctl, tmp_path, monkeypatch
):
    """Both read the nodes before either patches (a barrier after the list); gpu-node-3 is in both files."""
    barrier = threading.Barrier(2, timeout=30)
    listed = KubernetesSource.list_nodes

    def list_then_wait(self):
        nodes = listed(self)
        barrier.wait()
        return nodes

    monkeypatch.setattr(KubernetesSource, "list_nodes", list_then_wait)
    paths = {}
    for name, nodes in (("left-pool", ("gpu-node-1", "gpu-node-3")), ("right-pool", ("gpu-node-3", "gpu-node-4"))):
        paths[name] = Path(tmp_path) / f"{name}.yaml"
        paths[name].write_text(
            f"kind: pool\nversion: v0.1\npool: {{name: {name}}}\nnodes:\n"
            + "".join(f"  {n}: {{gpuType: A10}}\n" for n in nodes)
        )
    results = {}

    def run(name):
        from django.db import connection

        try:
            results[name] = poolctl("create", "-f", str(paths[name]))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(name,)) for name in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    codes = {name: result.code for name, result in results.items()}
    assert sorted(codes.values()) == [0, 1], {n: r.err for n, r in results.items()}
    winner = next(name for name, code in codes.items() if code == 0)
    loser = next(name for name, code in codes.items() if code == 1)
    assert "gpu-node-3" in results[loser].err
    shown = node_labels_shown(kube)
    mine = {"left-pool": ("gpu-node-1", "gpu-node-3"), "right-pool": ("gpu-node-3", "gpu-node-4")}
    assert all(shown[n][0] == winner for n in mine[winner])
    assert all(shown[n][0] == "" for n in mine[loser] if n != "gpu-node-3")
    assert set(Pool.objects.filter(name__in=paths).values_list("name", flat=True)) == {winner}


def test_label_pools_and_config_changes_at_once_neither_deadlocks(
    transactional_db, gpuctl_cluster, kube, poolctl, tmp_path
):
    """Real parallel clients on PostgreSQL: ``create -f`` and ``delete pool`` write the nodes' labels and a
    config change in one transaction, while another client changes a pool of the same backend, which
    recomputes its nodes' memberships. Both take the config write lock before the backend's inventory lock;
    in the other order PostgreSQL finds a deadlock and fails one of them."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    path = tmp_path / "lab-pool.yaml"
    path.write_text("kind: pool\nversion: v0.1\npool: {name: lab-pool}\nnodes:\n  gpu-node-4: {gpuType: A10}\n")

    def labelling():
        for _ in range(6):
            for command in (("create", "-f", str(path)), ("delete", "pool", "lab-pool", "--force")):
                result = poolctl(*command)
                assert result.code == 0, f"{' '.join(command)}: {result.err}"

    def configuring():
        for round_ in range(30):
            services.config_apply(
                changes={ConfigType.POOL: {"default": {"backend": "gpu-cluster", "description": f"round {round_}"}}},
                actor=services.SYSTEM,
            )

    errors = at_once(labelling, configuring)
    assert not errors, errors
    assert node_labels_shown(kube)["gpu-node-4"][0] == ""  # the last delete took the label off
    assert not Pool.objects.filter(name="lab-pool").exists()
    assert Pool.objects.get(name="default").description == "round 29"


# --- as a person with a role, through the REST API and the pages ------------------------------------------------


@pytest.fixture
def robotics(gpuctl_cluster, poolctl, files):
    """``osmo-robotics`` may read pools starting with ``dev`` and change pool configs, but not operate the backend."""
    create_all(poolctl, files, names=("training-pool", "dev-pool"))
    role(
        "osmo-robotics",
        {"actions": ["pool:Read"], "resources": ["pool/dev*"]},
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
        {"actions": ["backend:Read"], "resources": ["backend/*"]},
    )
    return person("robin", "osmo-robotics", password=None)


def test_the_api_refuses_a_person_without_the_permissions_and_nothing_changes(robotics, kube, client):
    client.force_login(robotics)
    before = node_labels_shown(kube)
    document = json.loads(json.dumps(yaml_of(POOL_FILES["dev-pool"])))
    # dev-pool is visible and config:Update is held, but not backend:Update on the backend: 403.
    answer = client.post("/api/label_pools/", {**document, "overwrite": True}, content_type="application/json")
    assert answer.status_code == 403, answer.content
    # training-pool is not visible to them: 404, whatever they ask.
    answer = client.delete("/api/label_pools/training-pool/?force=true")
    assert answer.status_code == 404
    answer = client.get("/api/nodes/gpu-node-1/labels/")
    assert answer.status_code == 404
    answer = client.patch(
        "/api/nodes/gpu-node-5/labels/", {"key": "team", "value": "x"}, content_type="application/json"
    )
    assert answer.status_code == 403
    assert client.get("/api/nodes/gpu-node-5/labels/").json()["labels"][POOL_KEY] == "dev-pool"
    # The pages: the same answers.
    assert client.post("/label-pools/training-pool/delete/", {"force": "on"}).status_code == 404
    assert client.post("/nodes/gpu-node-5/labels/", {"key": "team", "value": "x"}).status_code == 403
    assert node_labels_shown(kube) == before


def test_the_api_creates_and_deletes_a_label_pool_for_an_administrator(gpuctl_cluster, kube, client):
    client.force_login(person("root", password=None, is_superuser=True))
    document = yaml_of(POOL_FILES["dev-pool"])
    answer = client.post("/api/label_pools/", document, content_type="application/json")
    assert answer.status_code == 201, answer.content
    assert answer.json()["labelled"] == ["gpu-node-5"]
    assert node_labels_shown(kube)["gpu-node-5"] == ("dev-pool", "RTX4090-24G")
    refused = client.delete("/api/label_pools/dev-pool/")
    assert refused.status_code == 409 and "default/notebook-a" in json.dumps(refused.json())
    assert client.delete("/api/label_pools/dev-pool/?force=true").status_code == 200
    assert node_labels_shown(kube)["gpu-node-5"][0] == ""
    changed = client.patch(
        "/api/nodes/gpu-node-5/labels/", {"key": POOL_KEY, "value": "x-pool"}, content_type="application/json"
    )
    assert changed.status_code == 200 and changed.json()["labels"][POOL_KEY] == "x-pool"
    bad = client.post("/api/label_pools/", {"kind": "pool", "version": "v9"}, content_type="application/json")
    assert bad.status_code == 400 and "version" in json.dumps(bad.json())


def yaml_of(text: str) -> dict:
    from pools.configs import parse_document

    return parse_document(text)
