"""Builders for Kubernetes-shaped node and pod objects, as the API server or kubectl print them."""

from __future__ import annotations

import json
from pathlib import Path


def node(
    name,
    *,
    gpu=8,
    product="NVIDIA-H100-80GB-HBM3",
    cpu="64",
    memory="512Gi",
    storage="1Ti",
    labels=None,
    taints=None,
    ready="True",
    unschedulable=False,
    extra_allocatable=None,
):
    allocatable = {"cpu": cpu, "memory": memory, "ephemeral-storage": storage, "pods": "110"}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = str(gpu)
    allocatable.update(extra_allocatable or {})
    node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/arch": "amd64"}
    if product:
        node_labels["nvidia.com/gpu.product"] = product
    node_labels.update(labels or {})
    spec = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "resourceVersion": "1"},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def pod(
    name,
    *,
    node=None,
    gpu=0,
    cpu="1",
    memory="1Gi",
    pool=None,
    priority=None,
    phase="Running",
    namespace="default",
    init_gpu=None,
    overhead=None,
    labels=None,
    annotations=None,
    owner=None,
    priority_class=None,
    started=None,
    created=None,
    unschedulable=None,
):
    """A Pod; ``owner`` is its controller ``(kind, name)``, ``unschedulable`` the message of a ``PodScheduled``
    condition that is False (reason ``Unschedulable``), ``started`` its ``status.startTime``."""
    pod_labels = dict(labels or {})
    if pool:
        pod_labels["osmo.pool"] = pool
    if priority:
        pod_labels["osmo.priority"] = priority
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec = {"containers": [{"name": "main", "resources": {"requests": requests, "limits": dict(requests)}}]}
    if node:
        spec["nodeName"] = node
    if init_gpu is not None:
        spec["initContainers"] = [{"name": "init", "resources": {"limits": {"nvidia.com/gpu": str(init_gpu)}}}]
    if overhead:
        spec["overhead"] = overhead
    if priority_class:
        spec["priorityClassName"] = priority_class
    metadata = {
        "name": name,
        "namespace": namespace,
        "labels": pod_labels,
        "annotations": dict(annotations or {}),
        "uid": f"uid-{name}",
    }
    if owner:
        kind, owner_name = owner
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": kind, "name": owner_name, "controller": True}]
    if created:
        metadata["creationTimestamp"] = created
    status = {"phase": phase}
    if started:
        status["startTime"] = started
    if unschedulable is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": unschedulable}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def write_list(path: Path, items) -> Path:
    path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}})
    )
    return path
