"""Real services for integration tests: a kube-apiserver with etcd, started once per session."""

import subprocess
from pathlib import Path

import pytest
from kube_cluster import SCRIPT, KubeCluster
from service_checks import service_unavailable

from pools import services
from pools.choices import ConfigType
from pools.models import Backend


@pytest.fixture(scope="session")
def kube_session(tmp_path_factory):
    if subprocess.run([str(SCRIPT), "path"], capture_output=True).returncode != 0:
        service_unavailable("kube-apiserver is not built (scripts/kube-apiserver.sh build)")
    try:
        cluster = KubeCluster.start(tmp_path_factory.mktemp("kube"))
    except RuntimeError as exc:
        service_unavailable(str(exc))
    yield cluster
    cluster.stop()


@pytest.fixture
def kube(kube_session, settings):
    """The API server, emptied of nodes and pods; its kubeconfig's directory is where backends may read one."""
    kube_session.wipe()
    settings.GPUPOOL_KUBECONFIG_DIR = str(Path(kube_session.kubeconfig).parent)
    return kube_session


@pytest.fixture
def kube_backend(kube):
    """A writable kubernetes backend pointing at the test API server (needs a db fixture first)."""

    def make(name="gpu-cluster", **extra):
        body = {"kind": "kubernetes", "kubeconfig": kube.kubeconfig, "writable": True, **extra}
        services.config_apply(changes={ConfigType.BACKEND: {name: body}}, actor=services.SYSTEM)
        return Backend.objects.get(name=name)

    return make
