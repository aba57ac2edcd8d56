"""Kubernetes Pod objects of the fleets: OSMO job pods and the system daemonsets' pods, as the API server returns
them (spec, conditions, container statuses).

Pods are built often (150,000 for a benchmark, every few seconds for a live fleet), so what pods have in common
(containers, volumes, tolerations, owner references) is built once and shared between them: treat every object
as read-only.
"""

from __future__ import annotations

import hashlib

from .streams import C1

POOL_LABEL = "osmo.pool"
PRIORITY_LABEL = "osmo.priority"
USER_LABEL = "osmo.user"

USERS = tuple("alice bob carol dmitri eun-ji farah gopal hana ivan julia kenji lena mateo nadia omar priya".split())
GPU_STEMS = ("train", "finetune", "eval", "sim", "rl", "distill", "pretrain", "sweep")
CPU_STEMS = ("preprocess", "etl", "render", "index", "export", "lint")
GPU_IMAGES = (
    "nvcr.io/nvidia/pytorch:24.10-py3",
    "nvcr.io/nvidia/nemo:24.09",
    "nvcr.io/nvidia/isaac-sim:4.2.0",
    "nvcr.io/nvidia/tritonserver:24.10-py3",
)
CPU_IMAGES = (
    "python:3.11-slim",
    "nvcr.io/nvidia/osmo/data-tools:6.0.1",
    "ubuntu:22.04",
    "nvcr.io/nvidia/osmo/ffmpeg:6.0.1",
)
CTRL_IMAGE = "nvcr.io/nvidia/osmo/osmo-ctrl:6.0.1"
INIT_IMAGE = "nvcr.io/nvidia/osmo/osmo-init:6.0.1"
# OSMO's control sidecar: its requests are part of every job's budget.
CTRL_CPU_M = 100
CTRL_MEMORY = 256 * 1024**2

# System daemonsets: (name, namespace, image, cpu millis, memory bytes, on GPU nodes only)
DAEMONSETS = (
    ("kube-proxy", "kube-system", "registry.k8s.io/kube-proxy:v1.30.6", 100, 64 * 1024**2, False),
    ("node-exporter", "monitoring", "quay.io/prometheus/node-exporter:v1.8.2", 100, 128 * 1024**2, False),
    (
        "nvidia-device-plugin-daemonset",
        "gpu-operator",
        "nvcr.io/nvidia/k8s-device-plugin:v0.16.2",
        50,
        64 * 1024**2,
        True,
    ),
    ("gpu-feature-discovery", "gpu-operator", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", 50, 64 * 1024**2, True),
    (
        "nvidia-dcgm-exporter",
        "gpu-operator",
        "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04",
        100,
        512 * 1024**2,
        True,
    ),
)

# Pod priority by the low byte of a job's hash: 20 % LOW, 65 % NORMAL, 15 % HIGH.
PRIORITY_CLASSES = {"LOW": ("osmo-low", 100), "NORMAL": ("osmo-normal", 1000), "HIGH": ("osmo-high", 10000)}
PRIORITIES = ["LOW" if b < 51 else "HIGH" if b >= 218 else "NORMAL" for b in range(256)]

FINISHED_PHASES = ("Succeeded", "Failed")
_TOKEN_VOLUME = "kube-api-access-osmo"
_NODE_TOLERATIONS = (
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
)
JOB_VOLUMES = [
    {"emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}, "name": "dshm"},
    {"emptyDir": {}, "name": "osmo-data"},
    {
        "name": _TOKEN_VOLUME,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {
                    "downwardAPI": {
                        "items": [
                            {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}
                        ]
                    }
                },
            ],
        },
    },
]
_TOKEN_MOUNT = {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": _TOKEN_VOLUME, "readOnly": True}
_JOB_ANNOTATIONS = {"kubectl.kubernetes.io/default-container": "user"}
_SYSTEM_TOLERATIONS = [{"operator": "Exists"}]
_IMAGE_IDS: dict[str, str] = {}


def cpu_quantity(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(nbytes: int) -> str:
    return f"{nbytes // 1024**3}Gi" if nbytes % 1024**3 == 0 else f"{nbytes // 1024**2}Mi"


def tolerations_for(node: dict) -> list[dict]:
    """What a pod needs to run on ``node``: a toleration of each of its NoSchedule/NoExecute taints."""
    tolerations = [
        {"effect": t["effect"], "key": t["key"], "operator": "Equal", "value": str(t["value"])}
        if t.get("value")
        else {"effect": t["effect"], "key": t["key"], "operator": "Exists"}
        for t in (node.get("spec") or {}).get("taints") or []
        if isinstance(t, dict) and t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    return tolerations + list(_NODE_TOLERATIONS)


def _container(name: str, image: str, requests: dict, limits: dict, command: list, mounts: list, env=None) -> dict:
    container = {
        "command": command,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {"limits": limits, "requests": requests},
        "volumeMounts": mounts,
    }
    if env:
        container["env"] = env
    return container


_OSMO_MOUNT = {"mountPath": "/osmo", "name": "osmo-data"}
_CTRL = _container(
    "osmo-ctrl",
    CTRL_IMAGE,
    {"cpu": cpu_quantity(CTRL_CPU_M), "memory": memory_quantity(CTRL_MEMORY)},
    {"cpu": "500m", "memory": "512Mi"},
    ["/osmo/ctrl"],
    [_OSMO_MOUNT],
)
_INIT = [
    _container(
        "osmo-init",
        INIT_IMAGE,
        {"cpu": "100m", "memory": "128Mi"},
        {"cpu": "500m", "memory": "256Mi"},
        ["/osmo/init", "--download-inputs"],
        [_OSMO_MOUNT],
    )
]
_ENV = [
    {"name": "OSMO_NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
    {"name": "OSMO_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
]


def job_containers(resource: str, count: int, millis: int, memory: int) -> list[tuple[list, list | None]]:
    """Eight (containers, initContainers) variants of one job size: four images, with and without OSMO's init."""
    requests = {"cpu": cpu_quantity(millis), "memory": memory_quantity(memory)}
    if resource:
        requests[resource] = str(count)
    variants = []
    for image in GPU_IMAGES if resource else CPU_IMAGES:
        user = _container(
            "user",
            image,
            requests,
            dict(requests),
            ["/bin/bash", "-c", "exec /osmo/run.sh"],
            [{"mountPath": "/dev/shm", "name": "dshm"}, _OSMO_MOUNT, _TOKEN_MOUNT],
            [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all" if resource else "void"}, *_ENV],
        )
        variants.append(([user, _CTRL], None))
        variants.append(([user, _CTRL], _INIT))
    return variants


def daemonset_parts(owner_uid: str, daemonset: tuple) -> tuple[list, dict, list]:
    """What all pods of one system daemonset share: containers, labels, owner references."""
    name, _, image, millis, memory, _ = daemonset
    app = name.removesuffix("-daemonset")
    containers = [
        _container(
            app,
            image,
            {"cpu": cpu_quantity(millis), "memory": memory_quantity(memory)},
            {"memory": memory_quantity(memory)},
            [f"/usr/bin/{app}"],
            [_TOKEN_MOUNT],
        )
    ]
    owners = [
        {
            "apiVersion": "apps/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "DaemonSet",
            "name": name,
            "uid": owner_uid,
        }
    ]
    return containers, {"app": app, "pod-template-generation": "3"}, owners


def _image_id(image: str) -> str:
    found = _IMAGE_IDS.get(image)
    if found is None:
        found = _IMAGE_IDS[image] = f"{image.split(':')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"
    return found


_SPREAD = 0x9E3779B97F4A7C15F39CC0605CEDC8341082276BF3A27251F86C6A11D0C18E95  # odd: distinct x, distinct ids
_MASK_256 = (1 << 256) - 1


def pod_status(
    phase: str,
    *,
    containers: list,
    init: list | None,
    host_ip: str,
    pod_ip: str,
    created: str,
    started: str,
    x: int,
    exit_code: int = 0,
) -> dict:
    """The status of a pod in ``phase``: scheduled at ``created``, its containers running since ``started``
    (or, when finished, ended then with ``exit_code``)."""
    pending = phase == "Pending"
    status = {
        "conditions": _conditions(phase, created, started, bool(init)),
        "containerStatuses": [
            _container_status(container, phase, created, started, x + number, exit_code if number == 0 else 0)
            for number, container in enumerate(containers)
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": phase,
        "qosClass": "Burstable",
        "startTime": created,
    }
    if init and not pending:
        status["initContainerStatuses"] = [
            _container_status(container, "Succeeded", created, created, x ^ C1, 0) for container in init
        ]
    if not pending:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return status


# Parts of statuses that many pods have alike (the pods of a moment started within a few minutes), shared.
_SHARED: dict[tuple, object] = {}


def _shared(key: tuple, make):
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) > 100_000:
            _SHARED.clear()
        found = _SHARED[key] = make()
    return found


def _conditions(phase: str, created: str, started: str, init: bool) -> list[dict]:
    def make() -> list[dict]:
        ready = "True" if phase == "Running" else "False"
        conditions = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": started,
                "status": ready,
                "type": "PodReadyToStartContainers",
            },
            {
                "lastProbeTime": None,
                "lastTransitionTime": created,
                "status": "False" if phase == "Pending" and init else "True",
                "type": "Initialized",
            },
            {"lastProbeTime": None, "lastTransitionTime": started, "status": ready, "type": "Ready"},
            {"lastProbeTime": None, "lastTransitionTime": started, "status": ready, "type": "ContainersReady"},
            {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"},
        ]
        if phase != "Running":
            reason = {"Pending": "ContainersNotReady", "Succeeded": "PodCompleted"}.get(phase, "PodFailed")
            conditions[2]["reason"] = conditions[3]["reason"] = reason
        return conditions

    return _shared(("conditions", phase, created, started, init), make)


def _container_status(container: dict, phase: str, created: str, started: str, x: int, exit_code: int) -> dict:
    image = container.get("image", "")
    if phase == "Pending":
        return _shared(
            ("waiting", container["name"], image),
            lambda: {
                "image": image,
                "imageID": "",
                "lastState": {},
                "name": container["name"],
                "ready": False,
                "restartCount": 0,
                "started": False,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            },
        )
    container_id = f"containerd://{(x * _SPREAD) & _MASK_256:064x}"
    running = phase == "Running"
    if running:
        state = _shared(("running", started), lambda: {"running": {"startedAt": started}})
    else:
        reason = "Completed" if exit_code == 0 else "OOMKilled" if exit_code == 137 else "Error"
        state = {
            "terminated": {
                "containerID": container_id,
                "exitCode": exit_code,
                "finishedAt": started,
                "reason": reason,
                "startedAt": created,
            }
        }
    return {
        "containerID": container_id,
        "image": image,
        "imageID": _image_id(image),
        "lastState": {},
        "name": container["name"],
        "ready": running,
        "restartCount": 0,
        "started": running,
        "state": state,
    }


def job_pod(
    *,
    name: str,
    uid: str,
    namespace: str,
    labels: dict,
    node_name: str,
    selector: dict,
    tolerations: list,
    containers: list,
    init: list | None,
    priority: str,
    resource_version: str,
    status: dict,
    created: str,
    job: str = "",
    job_uid: str = "",
) -> dict:
    """An OSMO job's pod (``restartPolicy: Never``, OSMO's control sidecar, pool/priority/user labels), owned by
    the batch Job ``job`` when given."""
    priority_class, priority_value = PRIORITY_CLASSES[priority]
    spec = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "nodeName": node_name,
        "nodeSelector": selector,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": priority_value,
        "priorityClassName": priority_class,
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": tolerations,
        "volumes": JOB_VOLUMES,
    }
    if init is not None:
        spec["initContainers"] = init
    metadata = {
        "annotations": _JOB_ANNOTATIONS,
        "creationTimestamp": created,
        "labels": labels,
        "name": name,
        "namespace": namespace,
        "resourceVersion": resource_version,
        "uid": uid,
    }
    if job:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "Job",
                "name": job,
                "uid": job_uid,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def system_pod(
    *,
    name: str,
    uid: str,
    namespace: str,
    parts: tuple[list, dict, list],
    node_name: str,
    resource_version: str,
    status: dict,
    created: str,
) -> dict:
    """A system daemonset's pod on one node (it tolerates every taint)."""
    containers, labels, owners = parts
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": created,
            "generateName": f"{owners[0]['name']}-",
            "labels": labels,
            "name": name,
            "namespace": namespace,
            "ownerReferences": owners,
            "resourceVersion": resource_version,
            "uid": uid,
        },
        "spec": {
            "containers": containers,
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node_name,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 2000001000,
            "priorityClassName": "system-node-critical",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": _SYSTEM_TOLERATIONS,
            "volumes": [JOB_VOLUMES[2]],
        },
        "status": status,
    }
