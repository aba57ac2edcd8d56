"""Kubernetes Node objects of the catalogue's kinds, as ``kubectl get node -o json`` prints them, and blueprints:
Node objects read from a Kubernetes ``List`` and copied under new names to make a fleet bigger.

A blueprint may hold more than nodes: its Namespace items are where the fleet's jobs run, each with the share of
the jobs its ``JOB_SHARE_ANNOTATION`` gives (1 when absent, 0 for none), and its Pod items are standing workloads
(``timeline.Fleet``'s ``workloads``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from .catalogue import GPU, MIG_MEMORY, MIX, Kind
from .streams import BASE_TIME, GOLD, Stream, iso, key, mix, uid

DRIVER = "550.127.05"
GI_KI = 1024 * 1024
JOB_SHARE_ANNOTATION = "fleet.example.com/job-share"  # a namespace's share of a simulated fleet's jobs

NOT_READY_MESSAGE = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)
UNKNOWN_MESSAGE = "Kubelet stopped posting node status."

# Images every node has pulled (the same digests everywhere, as in a real cluster).
_BASE_IMAGES = (
    ("registry.k8s.io/kube-proxy", "v1.30.6", 28_345_010),
    ("quay.io/prometheus/node-exporter", "v1.8.2", 11_902_331),
    ("registry.k8s.io/pause", "3.10", 320_368),
)
_GPU_IMAGES = (
    ("nvcr.io/nvidia/pytorch", "24.10-py3", 10_204_871_042),
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.16.2", 181_300_020),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.8-3.6.0-ubuntu22.04", 402_335_012),
)


def _images(entries) -> list[dict]:
    return [
        {
            "names": [f"{repo}@sha256:{hashlib.sha256(f'{repo}:{tag}'.encode()).hexdigest()}", f"{repo}:{tag}"],
            "sizeBytes": size,
        }
        for repo, tag, size in entries
    ]


NODE_IMAGES = {False: _images(_BASE_IMAGES), True: _images(_GPU_IMAGES + _BASE_IMAGES)}


@dataclass(frozen=True)
class Site:
    """Where nodes run: the region and zones of their topology labels and the prefix of their provider ids."""

    region: str
    zones: tuple[str, ...]
    provider: str


def node_object(
    seed: int,
    name: str,
    kind: Kind,
    *,
    index: int,
    site: Site,
    zone: str = "",
    ready: str = "True",
    cordon_reason: str = "",
    labels: dict[str, str] | None = None,
    taints: tuple = (),
) -> dict:
    """A Node of ``kind`` named ``name``: a function of (seed, name) and the arguments only.

    ``index`` (the node's place in its fleet) spreads addresses and zones; ``ready`` is the Ready condition's
    status (``True``, ``False`` for NotReady, ``Unknown``); a ``cordon_reason`` cordons the node. ``labels``
    and ``taints`` come on top of the kind's.
    """
    rng = Stream("node", seed, name)
    shape, gpu = kind.shape, kind.gpu
    zone = zone or site.zones[index % len(site.zones)]
    created = BASE_TIME - rng.randint(10, 300) * 86400 - rng.randint(0, 86399)
    node_labels = {
        "beta.kubernetes.io/arch": shape.arch,
        "beta.kubernetes.io/instance-type": shape.instance,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": shape.arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": shape.instance,
        "topology.kubernetes.io/region": site.region,
        "topology.kubernetes.io/zone": zone,
    }
    mem_ki = shape.memory_gi * GI_KI + rng.randint(0, 400_000)
    disk_ki = shape.disk_gi * GI_KI + rng.randint(0, 900_000)
    reserved_cpu = 500 if shape.cpu <= 64 else 1000 if shape.cpu <= 128 else 1500
    capacity = {
        "cpu": str(shape.cpu),
        "ephemeral-storage": f"{disk_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        "pods": str(shape.max_pods),
    }
    millis = shape.cpu * 1000 - reserved_cpu
    allocatable = {
        "cpu": str(millis // 1000) if millis % 1000 == 0 else f"{millis}m",
        "ephemeral-storage": str(int(disk_ki * 1024 * 0.9)),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki - min(mem_ki // 50, 16 * GI_KI) - 102400}Ki",
        "pods": str(shape.max_pods),
    }
    annotations = {
        "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.tigera.io": name}, separators=(",", ":")),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if gpu:
        node_labels |= {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/cuda.driver-version.full": DRIVER,
            "nvidia.com/cuda.driver.major": DRIVER.split(".")[0],
            "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/cuda.runtime-version.minor": "4",
            "nvidia.com/gfd.timestamp": str(BASE_TIME - rng.randint(3600, 72 * 3600)),
            "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
            "nvidia.com/gpu.compute.major": str(gpu.compute[0]),
            "nvidia.com/gpu.compute.minor": str(gpu.compute[1]),
            "nvidia.com/gpu.count": str(shape.gpus),
            "nvidia.com/gpu.deploy.dcgm-exporter": "true",
            "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
            "nvidia.com/gpu.family": gpu.family,
            "nvidia.com/gpu.machine": shape.machine,
            "nvidia.com/gpu.memory": str(gpu.memory_mib),
            "nvidia.com/gpu.mode": "compute",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": gpu.product,
            "nvidia.com/gpu.replicas": str(kind.replicas or 1),
            "nvidia.com/gpu.sharing-strategy": "time-slicing" if kind.replicas else "none",
            "nvidia.com/mig.capable": "true" if gpu.mig_capable else "false",
        }
        if gpu.mig_capable:
            node_labels["nvidia.com/mig.strategy"] = "mixed" if kind.mig else "single"
        if shape.gpu == "GB200":  # an NVL72 rack holds 18 compute trays
            node_labels["nvidia.com/gpu.clique"] = f"nvl72-{zone}.{index // 18 + 1}"
        if kind.mig:
            node_labels["nvidia.com/mig.config"] = kind.mig_config
            node_labels["nvidia.com/mig.config.state"] = "success"
            # Mixed strategy: the GPUs the MIG layout leaves whole are offered as nvidia.com/gpu, as the device
            # plugin does (a GPU has seven compute slices; ``mig-3g.40gb`` takes three).
            slices = sum(int(profile[4 : profile.index("g.")]) * count for profile, count in kind.mig)
            capacity[GPU] = allocatable[GPU] = str(max(0, shape.gpus - -(-slices // 7)))
            for profile, count in kind.mig:
                capacity[f"nvidia.com/{profile}"] = allocatable[f"nvidia.com/{profile}"] = str(count)
                node_labels[f"nvidia.com/{profile}.count"] = str(count)
                node_labels[f"nvidia.com/{profile}.product"] = f"{gpu.product}-MIG-{profile[4:]}"
                node_labels[f"nvidia.com/{profile}.memory"] = str(MIG_MEMORY[profile])
        else:
            capacity[GPU] = allocatable[GPU] = str(shape.gpus * (kind.replicas or 1))
        annotations["nvidia.com/gpu-driver-upgrade-enabled"] = "true"
    node_labels.update(kind.labels)
    node_labels.update(labels or {})
    ip = f"10.{20 + index // 62500 % 200}.{index // 250 % 250}.{index % 250 + 2}"
    pod_cidr = f"10.{100 + index // 256 % 150}.{index % 256}.0/24"
    spec: dict = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr], "providerID": f"{site.provider}/{zone}/{name}"}
    all_taints = [{"effect": e, "key": k, "value": v} if v else {"effect": e, "key": k} for k, v, e in kind.taints]
    all_taints += [dict(taint) for taint in taints]
    if cordon_reason:
        spec["unschedulable"] = True
        annotations["osmo.nvidia.com/cordon-reason"] = cordon_reason
    if all_taints:
        spec["taints"] = all_taints
    since = iso(created + 180)
    pressure = "Unknown" if ready == "Unknown" else "False"

    def condition(kind_: str, reason: str, message: str, status: str = pressure) -> dict:
        if status == "Unknown":
            reason, message = "NodeStatusUnknown", UNKNOWN_MESSAGE
        return {
            "lastHeartbeatTime": since,
            "lastTransitionTime": since,
            "message": message,
            "reason": reason,
            "status": status,
            "type": kind_,
        }

    ready_condition = condition("Ready", "KubeletReady", "kubelet is posting ready status", ready)
    if ready == "False":
        ready_condition.update(reason="KubeletNotReady", message=NOT_READY_MESSAGE)
    if ready != "True":
        ready_condition["lastTransitionTime"] = iso(BASE_TIME - rng.randint(600, 4 * 3600))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": annotations,
            "creationTimestamp": iso(created),
            "labels": dict(sorted(node_labels.items())),
            "name": name,
            "resourceVersion": "1",
            "uid": rng.uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [
                condition("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ready_condition,
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": NODE_IMAGES[bool(gpu)],
            "nodeInfo": {
                "architecture": shape.arch,
                "bootID": rng.uid(),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "6.8.0-1015-nvidia-64k" if shape.arch == "arm64" else "5.15.0-124-generic",
                "kubeProxyVersion": "v1.30.6",
                "kubeletVersion": "v1.30.6",
                "machineID": rng.hex(32),
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": rng.uid(),
            },
        },
    }


MIX_SITE = Site("us-sim-1", ("us-sim-1a", "us-sim-1b", "us-sim-1c"), "sim://us-sim-1")


def catalogue_nodes(seed: int, size: int | None = None) -> list[dict]:
    """``size`` nodes (default 40) of the catalogue's mix, in proportion to the weights; every kind at least once
    when there is room. Names are ``<prefix>-001``..., e.g. ``h100-001``, ``jetson-001``."""
    size = 40 if size is None else size
    counts = _mix_counts(size)
    nodes = []
    for prefix, _, kind in MIX:
        width = max(3, len(str(counts[prefix])))
        for number in range(1, counts[prefix] + 1):
            nodes.append(node_object(seed, f"{prefix}-{number:0{width}d}", kind, index=len(nodes), site=MIX_SITE))
    return nodes


def _mix_counts(size: int) -> dict[str, int]:
    by_weight = sorted(MIX, key=lambda entry: -entry[1])
    counts = dict.fromkeys((prefix for prefix, _, _ in MIX), 0)
    if size <= len(MIX):
        for prefix, _, _ in by_weight[:size]:
            counts[prefix] = 1
        return counts
    total = sum(weight for _, weight, _ in MIX)
    shares = {prefix: (size - len(MIX)) * weight / total for prefix, weight, _ in MIX}
    for prefix, share in shares.items():
        counts[prefix] = 1 + int(share)
    left = size - sum(counts.values())
    for prefix, _, _ in sorted(by_weight, key=lambda entry: -(shares[entry[0]] - int(shares[entry[0]])))[:left]:
        counts[prefix] += 1
    return counts


def blueprint_from_list(document: dict) -> list[dict]:
    """The Node items of a Kubernetes ``List`` (or ``NodeList``)."""
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise ValueError("expected a Kubernetes List with 'items'")
    list_kind = str(document.get("kind") or "").removesuffix("List")
    return [
        item
        for item in document["items"]
        if isinstance(item, dict)
        and (item.get("kind") or list_kind) == "Node"
        and (item.get("metadata") or {}).get("name")
    ]


def blueprint_namespaces(document: dict) -> dict[str, int] | None:
    """The job share of each Namespace item of a blueprint List, by name; None when it has none."""
    shares = {}
    for item in document.get("items") or []:
        if isinstance(item, dict) and item.get("kind") == "Namespace" and (item.get("metadata") or {}).get("name"):
            share = str((item["metadata"].get("annotations") or {}).get(JOB_SHARE_ANNOTATION, "1"))
            shares[str(item["metadata"]["name"])] = int(share) if share.isdigit() else 1
    return shares or None


def blueprint_pods(document: dict) -> list[dict]:
    """The Pod items of a blueprint List: the fleet's standing workloads."""
    return [
        item
        for item in document.get("items") or []
        if isinstance(item, dict) and item.get("kind") == "Pod" and (item.get("metadata") or {}).get("name")
    ]


def namespace_object(name: str, share: int) -> dict:
    """A Namespace whose share of a simulated fleet's jobs is ``share``."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "annotations": {JOB_SHARE_ANNOTATION: str(share)},
            "labels": {"kubernetes.io/metadata.name": name},
            "name": name,
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def node_list(nodes: list[dict], *, namespaces: dict[str, int] | None = None, pods: Sequence[dict] = ()) -> dict:
    """A ``List`` of ``nodes``, as ``kubectl get nodes -o json`` prints it; with ``namespaces`` (name -> job share)
    and ``pods`` first and last, as ``kubectl get namespaces,nodes,pods -A -o json`` would."""
    items = [namespace_object(name, share) for name, share in (namespaces or {}).items()] + nodes + list(pods)
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def grown(nodes: list[dict], size: int | None, seed: int) -> list[dict]:
    """``nodes`` cut or grown to ``size`` with copies of them in turn, named ``<name>-c2``, ``-c3``..."""
    size = len(nodes) if size is None else size
    if size and not nodes:
        raise ValueError("no Node objects to grow a fleet from")
    result = list(nodes[:size])
    for extra in range(max(0, size - len(nodes))):
        result.append(_copy(nodes[extra % len(nodes)], extra // len(nodes) + 2, seed, len(result)))
    return result


def _copy(node: dict, copy_number: int, seed: int, index: int) -> dict:
    """A copy of a node under the name ``<name>-c<copy_number>``, with its own uid and addresses."""
    clone = json.loads(json.dumps(node))
    name = f"{node['metadata']['name']}-c{copy_number}"
    metadata = clone["metadata"]
    metadata["name"] = name
    x = key("clone", seed, name)
    metadata["uid"] = uid(mix(x), mix(x ^ GOLD))
    labels = metadata.get("labels")
    if isinstance(labels, dict) and "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = name
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict) and "csi.volume.kubernetes.io/nodeid" in annotations:
        annotations["csi.volume.kubernetes.io/nodeid"] = json.dumps({"csi.tigera.io": name}, separators=(",", ":"))
    spec = clone.get("spec")
    if isinstance(spec, dict):
        if isinstance(spec.get("providerID"), str):
            spec["providerID"] = f"{spec['providerID'].rsplit('/', 1)[0]}/{name}"
        if "podCIDR" in spec:
            spec["podCIDR"] = f"10.{100 + index // 256 % 150}.{index % 256}.0/24"
            spec["podCIDRs"] = [spec["podCIDR"]]
    status = clone.get("status")
    if isinstance(status, dict) and isinstance(status.get("addresses"), list):
        for address in status["addresses"]:
            if not isinstance(address, dict):
                continue
            if address.get("type") == "Hostname":
                address["address"] = name
            elif address.get("type") == "InternalIP":
                address["address"] = f"10.{220 + index // 62500 % 30}.{index // 250 % 250}.{index % 250 + 2}"
    return clone
