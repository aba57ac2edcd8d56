"""The manifests against a real kube-apiserver with RBAC on: the server accepts them (`--dry-run=server`), and the
console's service account, holding the rendered ClusterRole, can do what the console does and nothing more.

One API server for the module (scripts/kube-apiserver.sh with KUBE_APISERVER_AUTHORIZATION=RBAC), whose token
file holds the admin (``system:masters``) and the service account ``system:serviceaccount:gpupool:gpupool-console``
as a cluster's token authenticator would name it.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from deploy_manifests import KUSTOMIZATION, NAMESPACE, SERVICE_ACCOUNT, WRITABLE, kubectl, render, rendered_text
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from service_checks import service_unavailable

from pools import services
from pools.choices import ConfigType
from pools.inventory.records import InventoryError
from pools.inventory.sources import KubernetesSource, WatchEvent
from pools.models import Backend, Node

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from kube_cluster import SCRIPT, KubeCluster  # noqa: E402  (tests/integration's helpers)

# Every test of the module with a database, so that pytest-django (which runs those first) keeps them together
# and the API server starts once.
pytestmark = pytest.mark.django_db
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
LABEL = "example.com/team"


class RbacCluster:
    """The API server, its admin's kubeconfig and one for the console's service account."""

    def __init__(self, cluster: KubeCluster, console_kubeconfig: Path):
        self.cluster = cluster
        self.admin_kubeconfig = cluster.kubeconfig
        self.console_kubeconfig = str(console_kubeconfig)
        self.console = client.CoreV1Api(config.new_client_from_config(config_file=self.console_kubeconfig))

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [kubectl(), "--kubeconfig", self.admin_kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="module")
def rbac(tmp_path_factory):
    if subprocess.run([str(SCRIPT), "path"], capture_output=True).returncode != 0:
        service_unavailable("kube-apiserver is not built (scripts/kube-apiserver.sh build)")
    kubectl()
    directory = tmp_path_factory.mktemp("kube-rbac")
    console_token = secrets.token_hex(24)
    (directory / "tokens.csv").write_text(
        f'{secrets.token_hex(24)},admin,admin-uid,"system:masters"\n'
        f'{console_token},{USER},console-uid,"system:serviceaccounts,system:serviceaccounts:{NAMESPACE}"\n'
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KUBE_APISERVER_AUTHORIZATION", "RBAC")
        try:
            cluster = KubeCluster.start(directory)
        except RuntimeError as exc:
            service_unavailable(str(exc))
    try:
        admin_config = Path(cluster.kubeconfig).read_text()
        admin_token = (directory / "tokens.csv").read_text().split(",")[0]
        console_kubeconfig = directory / "kubeconfig-console"
        console_kubeconfig.write_text(admin_config.replace(admin_token, console_token).replace("admin", "console"))
        console_kubeconfig.chmod(0o600)
        # The operator makes the namespace first, for the Secret (docs/deploy.md); the rest is the manifests.
        assert cluster.api.create_namespace({"metadata": {"name": NAMESPACE}})
        cluster.add_node("gpu-a", gpu=8)
        cluster.add_node("gpu-b", gpu=4)
        cluster.add_pod("train-1", node="gpu-a", gpu=2)
        yield RbacCluster(cluster, console_kubeconfig)
    finally:
        cluster.stop()


def for_this_apiserver(text: str) -> str:
    """The rendered YAML as the 1.20 API server of the tests takes it: PodDisruptionBudget is ``policy/v1`` since
    Kubernetes 1.21 (and ``policy/v1beta1`` is gone since 1.25); 1.20 has only the beta, with the same fields."""
    return text.replace(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget"
    )


def apply(rbac: RbacCluster, directory: Path, *flags: str) -> list[str]:
    text = for_this_apiserver(rendered_text(directory))
    result = rbac.kubectl("apply", *flags, "-f", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def console_backend(rbac: RbacCluster, settings, name: str = "home") -> Backend:
    """The cluster as the console's backend, reached with the service account's token."""
    settings.GPUPOOL_KUBECONFIG_DIR = str(Path(rbac.console_kubeconfig).parent)
    body = {"kind": "kubernetes", "kubeconfig": rbac.console_kubeconfig, "writable": True}
    services.config_apply(changes={ConfigType.BACKEND: {name: body}}, actor=services.SYSTEM)
    return Backend.objects.get(name=name)


def refused(call, *args, **kwargs) -> int:
    with pytest.raises(ApiException) as refusal:
        call(*args, **kwargs)
    return refusal.value.status


def test_the_api_server_accepts_every_object_in_a_dry_run(rbac):
    for directory in (KUSTOMIZATION, WRITABLE):
        lines = apply(rbac, directory, "--dry-run=server")
        assert len(lines) == len(render(directory)), lines
        assert all(line.endswith("(server dry run)") for line in lines), lines


def test_the_service_account_syncs_and_watches_and_may_do_nothing_more(rbac, settings):
    apply(rbac, KUSTOMIZATION)
    backend = console_backend(rbac, settings)

    counts = services.backend_sync(backend=backend)  # lists nodes and pods as the service account
    backend.refresh_from_db()
    assert backend.last_sync_error == "", backend.last_sync_error
    assert sorted(Node.objects.filter(backend=backend).values_list("name", flat=True)) == ["gpu-a", "gpu-b"]
    assert counts["resource_versions"].keys() == {"nodes", "pods"}

    source = KubernetesSource(kubeconfig=rbac.console_kubeconfig)
    seen = watched(source, counts["resource_versions"], lambda: rbac.cluster.add_pod("train-2", node="gpu-b"))
    assert ("ADDED", "train-2") in seen

    # Not granted: writing a node (without the writable overlay), deleting or making pods, reading secrets.
    with pytest.raises(InventoryError, match="HTTP 403"):
        source.patch_node_labels("gpu-a", {LABEL: "research"})
    console = rbac.console
    assert refused(console.delete_namespaced_pod, "train-1", "default") == 403
    pod = {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "x", "image": "busybox"}]}}
    assert refused(console.create_namespaced_pod, "default", pod) == 403
    assert refused(console.list_namespaced_secret, NAMESPACE) == 403
    assert refused(console.list_secret_for_all_namespaces) == 403
    assert refused(console.delete_node, "gpu-b") == 403
    assert "research" not in str(rbac.cluster.api.read_node("gpu-a").metadata.labels)


def test_the_writable_overlay_lets_it_label_nodes_and_nothing_more(rbac, settings):
    apply(rbac, WRITABLE)
    backend = console_backend(rbac, settings)
    services.backend_sync(backend=backend)

    # The authorizer sees the changed ClusterRole once its informer has it: within a second or so.
    deadline = time.monotonic() + 15
    while (can := can_patch_nodes(rbac)) is False and time.monotonic() < deadline:
        time.sleep(0.2)
    assert can, "the writable overlay's ClusterRole does not let the service account patch nodes"

    change = services.node_label(node="gpu-a", key=LABEL, value="research", actor=services.SYSTEM)
    assert (change.key, change.new_value) == (LABEL, "research")
    assert rbac.cluster.api.read_node("gpu-a").metadata.labels[LABEL] == "research"

    console = rbac.console
    assert refused(console.delete_namespaced_pod, "train-1", "default") == 403
    assert refused(console.list_namespaced_secret, NAMESPACE) == 403
    assert refused(console.delete_node, "gpu-b") == 403
    # Back to the read-only manifests: the patch is refused again.
    apply(rbac, KUSTOMIZATION)
    deadline = time.monotonic() + 15
    while can_patch_nodes(rbac) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not can_patch_nodes(rbac)


def can_patch_nodes(rbac: RbacCluster) -> bool:
    """``kubectl auth can-i patch nodes --as`` the service account, asked of the API server."""
    result = rbac.kubectl("auth", "can-i", "patch", "nodes", "--as", USER)
    return result.stdout.strip() == "yes"


def watched(source: KubernetesSource, versions: dict, change, seconds: float = 20) -> set[tuple[str, str]]:
    """Watch ``source`` from ``versions`` (the console's own watch) while ``change`` happens; the (type, name)
    of the pod events it brought. A refused watch reports a failed contact, which fails the test."""
    stop = threading.Event()
    seen: set[tuple[str, str]] = set()
    threading.Timer(0.5, change).start()
    deadline = time.monotonic() + seconds
    try:
        for batch in source.watch(versions, stop):
            for item in batch:
                assert isinstance(item, WatchEvent), item
                if item.kind == "pods" and item.type != "BOOKMARK":
                    seen.add((item.type, item.object["metadata"]["name"]))
            if seen or time.monotonic() > deadline:
                break
    finally:
        stop.set()
    return seen
