"""SEMANTICS §7.4 on the cluster: a writer who sees only some pools relabels no node of the others, on any door.

A gpuctl pool file naming a node of a pool hidden from its writer (``--overwrite`` or not) is refused exactly as a
file naming a node that does not exist, through ``poolctl --as``, ``POST /api/label_pools/`` and the label-pool
page; ``kubectl get nodes -L runwhere.ai/pool`` shows that nothing changed in the real kube-apiserver.
"""

from __future__ import annotations

import pytest
from django.test import Client
from people import person, role
from people import poolctl as operator
from rest_framework.test import APIClient
from test_gpuctl import create_all, files, gpuctl_cluster, node_labels_shown  # noqa: F401 (fixtures)

pytestmark = pytest.mark.services


@pytest.fixture
def tess(gpuctl_cluster, files, poolctl):  # noqa: F811
    """training-pool and inference-pool made by the operator; tess sees and edits the training pools only."""
    create_all(poolctl, files, names=("training-pool", "inference-pool"))
    operator("role", "set", "osmo-training", "pool")
    role(
        "training-editor",
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
        {"actions": ["backend:Read", "backend:Update"], "resources": ["backend/gpu-cluster"]},
    )
    return person("tess", "osmo-training", "training-editor", password=None)


def _file(tmp_path, name: str, node: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"kind: pool\nversion: v0.1\npool:\n  name: {name}\nnodes:\n  {node}:\n    gpu-type: A10-24G\n")
    return str(path)


def _refusal(error: str, node: str) -> str:
    return error.replace(node, "NODE")


def test_a_pool_file_naming_a_node_of_a_hidden_pool_is_refused_as_a_missing_node(tess, kube, tmp_path):
    before = node_labels_shown(kube)
    # gpu-node-3 is inference-pool's, gpu-node-5 the (hidden) default pool's, gpu-node-99 nobody's.
    answers = {}
    for node in ("gpu-node-3", "gpu-node-5", "gpu-node-99"):
        try:
            operator("--as", "tess", "create", "-f", _file(tmp_path, "training-more", node), "--overwrite")
        except Exception as exc:  # CommandError, as the operator reads it
            answers[node] = str(exc)
    assert set(answers) == {"gpu-node-3", "gpu-node-5", "gpu-node-99"}
    assert _refusal(answers["gpu-node-3"], "gpu-node-3") == _refusal(answers["gpu-node-99"], "gpu-node-99")
    assert _refusal(answers["gpu-node-5"], "gpu-node-5") == _refusal(answers["gpu-node-99"], "gpu-node-99")
    assert "does not exist" in answers["gpu-node-3"] and "inference" not in answers["gpu-node-3"]

    api = APIClient()
    api.force_authenticate(tess)
    for node in ("gpu-node-3", "gpu-node-99"):
        body = {"kind": "pool", "version": "v0.1", "pool": {"name": "training-more"}, "nodes": {node: {}}}
        answer = api.post("/api/label_pools/", {**body, "overwrite": True}, format="json")
        assert answer.status_code == 400, answer.content
        answers[f"api {node}"] = answer.json()["errors"][0]["message"]
    assert _refusal(answers["api gpu-node-3"], "gpu-node-3") == _refusal(answers["api gpu-node-99"], "gpu-node-99")

    page = Client()
    page.force_login(tess)
    form = {"name": "training-more", "backend": "gpu-cluster", "nodes": ["gpu-node-3"], "overwrite": "on"}
    answer = page.post("/label-pools/new/", form)
    assert answer.status_code == 400 and b"does not exist" in answer.content and b"inference" not in answer.content

    assert node_labels_shown(kube) == before  # nothing relabelled in the cluster


def test_a_writer_moves_the_nodes_of_their_own_pools(tess, kube, tmp_path):
    operator("--as", "tess", "create", "-f", _file(tmp_path, "training-small", "gpu-node-2"), "--overwrite")
    assert node_labels_shown(kube)["gpu-node-2"] == ("training-small", "A10-24G")
