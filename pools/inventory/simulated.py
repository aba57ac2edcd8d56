"""A simulated GPU fleet: seeded, realistic Kubernetes nodes whose pods come and go with time.

Everything is a pure function of (seed, configuration, time): there is no hidden state, so two processes that
ask for the state at the same time get the same objects, and ``events(since, until)`` is exactly the difference
between ``state(since)`` and ``state(until)``. Used by the demo (usage moves by itself) and by load tests (a big
cluster without a cluster). Pure Python, standard library only.

The model:

* Time is cut into ticks of ``tick_seconds``; ``state(now)`` is the state at the start of now's tick and its
  resourceVersion is the tick number. An object's ``metadata.resourceVersion`` is the tick at which it last changed.
* Nodes come from a blueprint (Kubernetes Node objects, cloned round-robin up to ``size``) or from a built-in
  catalogue (H100, A100 with and without MIG, GB200, L40S with and without time-slicing, L40, T4, Jetson, CPU).
  Each node's time is cut into epochs of a few minutes; in a few epochs (chosen by hash) it is NotReady, Unknown
  or cordoned for part of the epoch, so about 2-3 % of the nodes are unavailable at any time.
* Each node's GPUs (MIG devices, time-sliced replicas) and part of its CPUs are divided into lanes. A lane's time
  is cut into epochs of its own length (20-240 s); in a busy epoch (chosen by hash) one pod runs on the lane for
  most of the epoch: Pending for its first seconds, then Running, then gone. A pod only starts on an available
  node. One pod per lane at a time, so a node's requests never exceed its allocatable resources.
* Every node also runs a few static system pods (kube-proxy, node-exporter, the GPU operator's daemonsets).

Results are memoised (the last ``pods()`` call's objects, each node's last object, the jobs of the last two
times), which changes nothing but speed. Returned objects share parts (containers, tolerations, node labels)
with each other and between calls: treat them as read-only, ``copy.deepcopy`` them before changing anything.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from .records import paused_gc

__all__ = ["FleetEvent", "SimulatedFleet", "blueprint_from_list"]

GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
POOL_LABEL = "osmo.pool"
PRIORITY_LABEL = "osmo.priority"
USER_LABEL = "osmo.user"

_MASK = (1 << 64) - 1
_GOLD = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB
_GI = 1024**3
_MI = 1024**2

# Node availability: a node epoch is 180-600 s; with probability _DOWN_THRESHOLD / 65536 the node is down for
# 30-60 % of the epoch (starting 5-35 % into it). 0.055 * 0.45 = about 2.5 % of the nodes down at any time.
_DOWN_THRESHOLD = 3600
_NODE_LOOKBACK = 2000  # epochs searched back for a node's last transition (P(no down in 2000) ~ 1e-49)
# Fleet-wide load wave: the busy probability of every lane is scaled by 0.75-1.0 along a 40-minute triangle wave.
_WAVE_PERIOD = 2400

_CREATED_BASE = int(datetime(2025, 6, 1, tzinfo=UTC).timestamp())

USERS = (
    "alice",
    "bob",
    "carol",
    "dmitri",
    "eun-ji",
    "farah",
    "gopal",
    "hana",
    "ivan",
    "julia",
    "kenji",
    "lena",
    "mateo",
    "nadia",
    "omar",
    "priya",
)
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
# OSMO's control sidecar: its requests are part of every lane's budget.
_CTRL_CPU_M = 100
_CTRL_MEM = 256 * _MI
_VOLUMES = [
    {"emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}, "name": "dshm"},
    {"emptyDir": {}, "name": "osmo-data"},
]

# ---------------------------------------------------------------------------
# The built-in catalogue (GPU Feature Discovery label values)
# ---------------------------------------------------------------------------
_GPUS = {
    "H100": ("NVIDIA-H100-80GB-HBM3", 81559, "hopper", "9", "0", "DGXH100"),
    "A100": ("NVIDIA-A100-SXM4-80GB", 81920, "ampere", "8", "0", "DGXA100-920-23687-2530-000"),
    "GB200": ("NVIDIA-GB200", 189471, "blackwell", "10", "0", "GB200-NVL72-Compute-Tray"),
    "L40S": ("NVIDIA-L40S", 46068, "ada-lovelace", "8", "9", "SYS-421GE-TNRT"),
    "L40": ("NVIDIA-L40", 46068, "ada-lovelace", "8", "9", "OVX-L40-4GPU"),
    "T4": ("Tesla-T4", 15360, "turing", "7", "5", "Google-Compute-Engine"),
    "ORIN": ("NVIDIA-Jetson-AGX-Orin-64GB", 62841, "ampere", "8", "7", "NVIDIA-Jetson-AGX-Orin-Developer-Kit"),
}


@dataclass(frozen=True)
class _Kind:
    prefix: str
    weight: int
    instance: str
    arch: str
    cpu: int
    mem_gi: int
    disk_gi: int
    pods: int
    gpu: str | None = None
    gpus: int = 0
    product_taint: bool = False
    dedicated: str | None = None
    replicas: int = 0
    mig: tuple[tuple[str, int], ...] = ()


_CATALOGUE = (
    _Kind("h100", 18, "dgx-h100", "amd64", 224, 2015, 3576, 250, "H100", 8, product_taint=True),
    _Kind("a100", 12, "dgx-a100", "amd64", 256, 2015, 3576, 250, "A100", 8, product_taint=True),
    _Kind(
        "a100-mig",
        2,
        "dgx-a100",
        "amd64",
        256,
        2015,
        3576,
        250,
        "A100",
        8,
        product_taint=True,
        mig=(("mig-1g.10gb", 7), ("mig-3g.40gb", 14)),
    ),
    _Kind("gb200", 8, "gb200-nvl72-tray", "arm64", 144, 960, 3576, 250, "GB200", 4, product_taint=True),
    _Kind("l40s", 10, "sm-l40s-4x", "amd64", 64, 503, 1788, 110, "L40S", 4),
    _Kind("l40s-ts", 3, "sm-l40s-4x", "amd64", 64, 503, 1788, 110, "L40S", 4, replicas=4),
    _Kind("l40", 8, "ovx-l40-4x", "amd64", 128, 1007, 1788, 110, "L40", 4, dedicated="simulation"),
    _Kind("t4", 10, "n1-standard-32", "amd64", 32, 118, 375, 110, "T4", 4),
    _Kind("jetson", 2, "jetson-agx-orin-64gb", "arm64", 12, 61, 57, 110, "ORIN", 1),
    _Kind("cpu", 12, "cpu-x86-96c", "amd64", 96, 384, 894, 110),
    _Kind("cpu-sys", 3, "cpu-x86-64c", "amd64", 64, 256, 894, 110, dedicated="system"),
)
_REGION = "us-sim-1"
_ZONES = ("us-sim-1a", "us-sim-1b", "us-sim-1c")
_DRIVER = "550.127.05"

_NOT_READY_MESSAGES = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized",
    "PLEG is not healthy: pleg was last seen active 3m12s ago; threshold is 3m0s",
    "container runtime is down",
)
_CORDON_REASONS = (
    "RMA: Xid 79 (GPU fell off the bus) on GPU 3",
    "maintenance: GPU driver upgrade",
    "drain: kernel security update",
    "NCCL all-reduce bandwidth below threshold",
)

# System daemonsets: (name, namespace, image, cpu millis, memory bytes, on GPU nodes only)
_DAEMONSETS = (
    ("kube-proxy", "kube-system", "registry.k8s.io/kube-proxy:v1.30.6", 100, 64 * _MI, False),
    ("node-exporter", "monitoring", "quay.io/prometheus/node-exporter:v1.8.2", 100, 128 * _MI, False),
    ("nvidia-device-plugin-daemonset", "gpu-operator", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", 50, 64 * _MI, True),
    ("gpu-feature-discovery", "gpu-operator", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", 50, 64 * _MI, True),
    (
        "nvidia-dcgm-exporter",
        "gpu-operator",
        "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04",
        100,
        512 * _MI,
        True,
    ),
)


@dataclass(frozen=True)
class FleetEvent:
    """One change between two states, as a Kubernetes watch reports it."""

    type: str  # "ADDED" | "MODIFIED" | "DELETED"
    object: dict  # a Kubernetes Node or Pod object


def blueprint_from_list(document: dict) -> list[dict]:
    """The Node items of a Kubernetes ``List`` (or ``NodeList``), e.g. a demo inventory file."""
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


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------
def _mix(x: int) -> int:
    """splitmix64's finalizer: a well-spread 64-bit hash of a 64-bit integer."""
    x &= _MASK
    x = ((x ^ (x >> 30)) * _C1) & _MASK
    x = ((x ^ (x >> 27)) * _C2) & _MASK
    return x ^ (x >> 31)


def _key(*parts: object) -> int:
    """A stable 64-bit key of strings and numbers (independent of PYTHONHASHSEED)."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


_HOURS: dict[int, str] = {}
_MINUTES_SECONDS = [f"{second // 60:02d}:{second % 60:02d}Z" for second in range(3600)]


def _iso(seconds: int) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes writes timestamps (cached by hour: this is hot)."""
    hour, rest = divmod(int(seconds), 3600)
    prefix = _HOURS.get(hour)
    if prefix is None:
        if len(_HOURS) > 100_000:
            _HOURS.clear()
        prefix = _HOURS[hour] = datetime.fromtimestamp(hour * 3600, UTC).strftime("%Y-%m-%dT%H:")
    return prefix + _MINUTES_SECONDS[rest]


def _parse_iso(value: object) -> int | None:
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp())


def _uid_prefix(h: str) -> str:
    """The first 24 characters of a version-4 UUID from 16 hex digits (a lane's pods add their own 12)."""
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[5:8]}-"


def _uid(x: int, y: int) -> str:
    h = f"{x & _MASK:016x}{y & _MASK:016x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


_SUFFIXES = {
    "m": 0.001,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def _quantity(value: object) -> float:
    """A Kubernetes quantity as a float (0 when missing or unreadable): only used to lay lanes out."""
    text = str(value or "").strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E"):
        if text.endswith(suffix):
            number, factor = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, factor = text, 1
    try:
        result = float(number) * factor
    except ValueError:
        return 0.0
    return result if math.isfinite(result) and result > 0 else 0.0


def _cpu(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def _memory(nbytes: int) -> str:
    return f"{nbytes // _GI}Gi" if nbytes % _GI == 0 else f"{nbytes // _MI}Mi"


def _ready_condition(node: dict) -> dict | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition
    return None


class _Stream:
    """A small deterministic random stream (splitmix64): cheaper to seed than ``random.Random``."""

    __slots__ = ("state",)

    def __init__(self, *parts: object):
        self.state = _key(*parts)

    def bits(self) -> int:
        self.state = (self.state + _GOLD) & _MASK
        return _mix(self.state)

    def randint(self, low: int, high: int) -> int:
        return low + self.bits() % (high - low + 1)

    def uid(self) -> str:
        return _uid(self.bits(), self.bits())

    def weighted(self, options: tuple[tuple[int, float], ...], limit: int) -> int:
        """One of the option values not above ``limit``, with probability proportional to its weight."""
        table = _WEIGHT_TABLES.get((id(options), limit))
        if table is None:
            allowed = [(value, weight) for value, weight in options if value <= limit]
            total = sum(weight for _, weight in allowed)
            table = _WEIGHT_TABLES[(id(options), limit)] = [(value, weight / total) for value, weight in allowed]
        point = (self.bits() >> 11) / 2**53
        for value, share in table:
            point -= share
            if point < 0:
                return value
        return table[-1][0]


_WEIGHT_TABLES: dict[tuple[int, int], list[tuple[int, float]]] = {}  # by (id of a module-level options tuple, limit)


# ---------------------------------------------------------------------------
# The catalogue's node objects
# ---------------------------------------------------------------------------
def _catalogue_counts(size: int) -> list[tuple[_Kind, int]]:
    """How many nodes of each kind: proportional to the weights, every kind at least once when there is room."""
    kinds = sorted(_CATALOGUE, key=lambda kind: -kind.weight)
    counts = dict.fromkeys(kinds, 0)
    if size <= len(kinds):
        for kind in kinds[:size]:
            counts[kind] = 1
    else:
        total = sum(kind.weight for kind in kinds)
        rest = size - len(kinds)
        shares = {kind: rest * kind.weight / total for kind in kinds}
        for kind in kinds:
            counts[kind] = 1 + int(shares[kind])
        left = size - sum(counts.values())
        for kind in sorted(kinds, key=lambda k: -(shares[k] - int(shares[k])))[:left]:
            counts[kind] += 1
    return [(kind, counts[kind]) for kind in _CATALOGUE if counts[kind]]


def _catalogue_node(seed: int, kind: _Kind, name: str, index: int) -> dict:
    rng = _Stream("node", seed, name)
    zone = _ZONES[index % len(_ZONES)]
    created = _CREATED_BASE - rng.randint(10, 300) * 86400 - rng.randint(0, 86399)
    labels = {
        "beta.kubernetes.io/arch": kind.arch,
        "beta.kubernetes.io/instance-type": kind.instance,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": kind.arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": kind.instance,
        "topology.kubernetes.io/region": _REGION,
        "topology.kubernetes.io/zone": zone,
    }
    taints = []
    mem_ki = kind.mem_gi * 1024 * 1024 + rng.randint(0, 400_000)
    disk_ki = kind.disk_gi * 1024 * 1024 + rng.randint(0, 900_000)
    reserved_cpu = 500 if kind.cpu <= 64 else 1000 if kind.cpu <= 128 else 1500
    capacity = {
        "cpu": str(kind.cpu),
        "ephemeral-storage": f"{disk_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        "pods": str(kind.pods),
    }
    allocatable = {
        "cpu": _cpu(kind.cpu * 1000 - reserved_cpu),
        "ephemeral-storage": str(int(disk_ki * 1024 * 0.9)),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki - min(mem_ki // 50, 16 * 1024 * 1024) - 102400}Ki",
        "pods": str(kind.pods),
    }
    annotations = {
        "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.tigera.io": name}, separators=(",", ":")),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if kind.gpu:
        product, memory, family, major, minor, machine = _GPUS[kind.gpu]
        mig_capable = kind.gpu in ("A100", "H100", "GB200")
        labels |= {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/cuda.driver-version.full": _DRIVER,
            "nvidia.com/cuda.driver.major": _DRIVER.split(".")[0],
            "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/cuda.runtime-version.minor": "4",
            "nvidia.com/gfd.timestamp": str(_CREATED_BASE - rng.randint(3600, 72 * 3600)),
            "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
            "nvidia.com/gpu.compute.major": major,
            "nvidia.com/gpu.compute.minor": minor,
            "nvidia.com/gpu.count": str(kind.gpus),
            "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
            "nvidia.com/gpu.family": family,
            "nvidia.com/gpu.machine": machine,
            "nvidia.com/gpu.memory": str(memory),
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.replicas": str(kind.replicas or 1),
            "nvidia.com/gpu.sharing-strategy": "time-slicing" if kind.replicas else "none",
            "nvidia.com/mig.capable": "true" if mig_capable else "false",
        }
        if mig_capable:
            labels["nvidia.com/mig.strategy"] = "mixed" if kind.mig else "single"
        if kind.gpu == "GB200":
            labels["nvidia.com/gpu.clique"] = f"nvl72-{zone}.{index // 18 + 1}"
        if kind.mig:
            labels["nvidia.com/mig.config"] = "custom-1g7-3g14"
            labels["nvidia.com/mig.config.state"] = "success"
            capacity[GPU] = allocatable[GPU] = "0"
            for profile, count in kind.mig:
                capacity[f"nvidia.com/{profile}"] = allocatable[f"nvidia.com/{profile}"] = str(count)
                labels[f"nvidia.com/{profile}.count"] = str(count)
                labels[f"nvidia.com/{profile}.product"] = f"{product}-MIG-{profile[4:]}"
                labels[f"nvidia.com/{profile}.memory"] = {"mig-1g.10gb": "9728", "mig-3g.40gb": "39936"}[profile]
        else:
            capacity[GPU] = allocatable[GPU] = str(kind.gpus * (kind.replicas or 1))
        if kind.product_taint:
            taints.append({"key": "nvidia.com/gpu.product", "value": product, "effect": "NoSchedule"})
        annotations["nvidia.com/gpu-driver-upgrade-enabled"] = "true"
    if kind.dedicated:
        labels["dedicated"] = kind.dedicated
        taints.append({"key": "dedicated", "value": kind.dedicated, "effect": "NoSchedule"})
    ip = f"10.{20 + index // 62500 % 200}.{index // 250 % 250}.{index % 250 + 2}"
    spec: dict = {"podCIDR": f"10.{100 + index // 256 % 150}.{index % 256}.0/24"}
    spec["podCIDRs"] = [spec["podCIDR"]]
    spec["providerID"] = f"sim://{_REGION}/{zone}/{name}"
    if taints:
        spec["taints"] = taints
    since = _iso(created + 180)

    def condition(ctype: str, reason: str, message: str, status: str = "False") -> dict:
        return {
            "lastHeartbeatTime": since,
            "lastTransitionTime": since,
            "message": message,
            "reason": reason,
            "status": status,
            "type": ctype,
        }

    arch_kernel = "6.8.0-1015-nvidia-64k" if kind.arch == "arm64" else "5.15.0-124-generic"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": annotations,
            "creationTimestamp": _iso(created),
            "labels": dict(sorted(labels.items())),
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
                condition("Ready", "KubeletReady", "kubelet is posting ready status", "True"),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": kind.arch,
                "bootID": rng.uid(),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": arch_kernel,
                "kubeProxyVersion": "v1.30.6",
                "kubeletVersion": "v1.30.6",
                "machineID": f"{rng.bits():016x}{rng.bits():016x}",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": rng.uid(),
            },
        },
    }


def _clone(node: dict, copy_number: int, seed: int, index: int) -> dict:
    """A copy of a blueprint node under the name ``<name>-c<copy_number>``."""
    clone = json.loads(json.dumps(node))
    original = node["metadata"]["name"]
    name = f"{original}-c{copy_number}"
    metadata = clone["metadata"]
    metadata["name"] = name
    key = _key("clone", seed, name)
    metadata["uid"] = _uid(_mix(key), _mix(key ^ _GOLD))
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


# ---------------------------------------------------------------------------
# The fleet
# ---------------------------------------------------------------------------
@dataclass(slots=True)
class _NodeInfo:
    name: str
    base: dict  # the node object as it is while Ready and before any simulated change
    key: int
    epoch: int  # node epoch length, seconds
    phase: int
    simulated: bool  # False for blueprint nodes already unavailable in the blueprint: they never change
    created: int
    tolerations: list
    selector: dict
    host_ip: str
    pools: tuple[str, ...]


# Pod priority by the low byte of a job's hash: 20 % LOW, 65 % NORMAL, 15 % HIGH.
_PRIORITIES = [
    ("LOW", "osmo-low") if b < 51 else ("HIGH", "osmo-high") if b >= 218 else ("NORMAL", "osmo-normal")
    for b in range(256)
]
_SYSTEM_TOLERATIONS = [{"operator": "Exists"}]


class SimulatedFleet:
    """A deterministic fleet of Kubernetes nodes and pods; see the module docstring for the model.

    ``size`` is the number of nodes (default: the blueprint's length, or 40 from the catalogue); ``pool_labels``
    maps a node name to the pools whose label its job pods may carry; ``system_pods`` adds the static daemonset
    pods (kube-proxy, node-exporter, GPU operator) to every node.
    """

    def __init__(
        self,
        *,
        seed: int,
        size: int | None = None,
        blueprint: list[dict] | None = None,
        pool_labels: Mapping[str, Sequence[str]] | None = None,
        tick_seconds: float = 5.0,
        namespaces: Sequence[str] = ("team-a", "robotics", "sim", "infer", "research"),
        system_pods: bool = True,
    ):
        if tick_seconds <= 0:
            raise ValueError("tick_seconds must be positive")
        if not namespaces:
            raise ValueError("namespaces must not be empty")
        if size is not None and size < 0:
            raise ValueError("size must not be negative")
        self.seed = int(seed)
        self.tick_seconds = float(tick_seconds)
        self.namespaces = tuple(str(namespace) for namespace in namespaces)
        pool_labels = pool_labels or {}
        self._wave_phase = _key("wave", self.seed) % _WAVE_PERIOD
        self._min_pending = math.ceil(self.tick_seconds)

        objects = self._node_objects(size, blueprint)
        names = [node["metadata"]["name"] for node in objects]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")

        self._nodes: list[_NodeInfo] = []
        # Per node, its lanes as (lane id, epoch length, phase, key, busy threshold): the hot loop reads these.
        self._node_lanes: list[list[tuple[int, int, int, int, int]]] = []
        # Per lane id: (pod name prefix, uid prefix, pod IP, container variants, workflow stems, node info).
        self._lane_static: list[tuple[str, str, str, list, tuple[str, ...], _NodeInfo]] = []
        self._shapes: dict[tuple, list] = {}
        self._system: list[dict] = []
        self._max_lane_epoch = 1
        self._pod_cache: dict[tuple[int, int, bool], dict] = {}
        self._jobs_memo: list[tuple[float, dict]] = []
        self._node_cache: list[tuple[tuple[int, int | None], dict] | None] = [None] * len(objects)
        with paused_gc():
            self._build(objects, pool_labels, system_pods)

    def _build(self, objects: list[dict], pool_labels: Mapping[str, Sequence[str]], system_pods: bool) -> None:
        used_names: set[str] = set()
        for index, node in enumerate(objects):
            pools = pool_labels.get(node["metadata"]["name"]) or ()
            pools = (pools,) if isinstance(pools, str) else tuple(str(pool) for pool in pools)
            info = self._node_info(node, pools)
            self._nodes.append(info)
            system = [ds for ds in _DAEMONSETS if not ds[5] or _is_gpu_node(node)] if system_pods else []
            self._node_lanes.append(self._layout(info, index, system) if info.simulated else [])
            for daemonset in system:
                self._system.append(self._system_pod(info, daemonset, used_names))

    # -- construction ------------------------------------------------------------------------------------------
    def _node_objects(self, size: int | None, blueprint: list[dict] | None) -> list[dict]:
        if blueprint:
            nodes_only = blueprint_from_list({"kind": "NodeList", "items": list(blueprint)})
            originals = [json.loads(json.dumps(node)) for node in nodes_only]
            if not originals:
                raise ValueError("the blueprint has no Node objects")
            size = len(originals) if size is None else size
            nodes = originals[:size]
            for extra in range(max(0, size - len(originals))):
                copy_number = extra // len(originals) + 2
                nodes.append(_clone(originals[extra % len(originals)], copy_number, self.seed, len(nodes)))
            return nodes
        size = 40 if size is None else size
        nodes = []
        for kind, count in _catalogue_counts(size):
            width = max(3, len(str(count)))
            for number in range(1, count + 1):
                nodes.append(_catalogue_node(self.seed, kind, f"{kind.prefix}-{number:0{width}d}", len(nodes)))
        return nodes

    def _node_info(self, node: dict, pools: tuple[str, ...]) -> _NodeInfo:
        metadata = node["metadata"]
        name = metadata["name"]
        key = _key("node", self.seed, name)
        if not isinstance(metadata.get("labels"), dict):
            metadata["labels"] = {}
        labels = metadata["labels"]
        if not isinstance(node.get("spec"), dict):
            node["spec"] = {}
        if not isinstance(node.get("status"), dict):
            node["status"] = {}
        spec = node["spec"]
        ready = _ready_condition(node)
        simulated = bool(ready) and ready.get("status") == "True" and not spec.get("unschedulable")
        created = _parse_iso(metadata.get("creationTimestamp")) or (_CREATED_BASE - key % (300 * 86400))
        tolerations = [
            {"key": t["key"], "operator": "Equal", "value": str(t["value"]), "effect": t["effect"]}
            if t.get("value")
            else {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
            for t in spec.get("taints") or []
            if isinstance(t, dict) and t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")
        ]
        tolerations += [
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ]
        selector = {"kubernetes.io/arch": str(labels.get("kubernetes.io/arch", "amd64"))}
        if labels.get("nvidia.com/gpu.product"):
            selector["nvidia.com/gpu.product"] = str(labels["nvidia.com/gpu.product"])
        host_ip = ""
        for address in node["status"].get("addresses") or []:
            if isinstance(address, dict) and address.get("type") == "InternalIP":
                host_ip = str(address.get("address") or "")
        metadata["resourceVersion"] = str(self._tick_of(created + 180))
        return _NodeInfo(
            name=name,
            base=node,
            key=key,
            epoch=180 + key % 421,
            phase=(key >> 16) % 600,
            simulated=simulated,
            created=created,
            tolerations=tolerations,
            selector=selector,
            host_ip=host_ip,
            pools=pools,
        )

    def _layout(self, info: _NodeInfo, node_index: int, system: list) -> list[tuple[int, int, int, int, int]]:
        """Divide a node's GPUs (MIG devices, time-sliced replicas) and part of its CPUs into lanes."""
        rng = _Stream("lanes", self.seed, info.name)
        allocatable = info.base["status"].get("allocatable") or info.base["status"].get("capacity") or {}
        cpu_m = int(_quantity(allocatable.get("cpu")) * 1000) - sum(ds[3] for ds in system)
        memory = int(_quantity(allocatable.get("memory"))) - sum(ds[4] for ds in system)
        max_pods = int(_quantity(allocatable.get("pods")) or 110)
        gpu_units = int(_quantity(allocatable.get(GPU)))
        mig = sorted(
            (str(resource), int(_quantity(value)))
            for resource, value in allocatable.items()
            if str(resource).startswith(MIG_PREFIX) and _quantity(value) >= 1
        )
        units = gpu_units + sum(count for _, count in mig)
        lanes: list[tuple[str, int, int, int]] = []  # (resource, count, cpu millis, memory bytes)
        if units:
            # GPU lanes get 55 % of the CPUs and memory, shared by GPU unit (minus the control sidecar).
            cpu_per_unit = max(0, int(cpu_m * 0.55 / units) // 250 * 250)
            mem_per_unit = max(0, int(memory * 0.55 / units) // _GI * _GI)
            for resource, count in [(GPU, gpu_units), *mig]:
                options = _MIG_LANE_SIZES if resource.startswith(MIG_PREFIX) else _GPU_LANE_SIZES
                left = count
                while left > 0:
                    size = rng.weighted(options, left)
                    millis = max(250, size * cpu_per_unit - _CTRL_CPU_M)
                    mem = max(512 * _MI, size * mem_per_unit - _CTRL_MEM)
                    lanes.append((resource, size, millis, mem))
                    left -= size
            cpu_budget, mem_budget = cpu_m * 0.3, memory * 0.3
        else:
            cpu_budget, mem_budget = cpu_m * 0.85, memory * 0.85
        # CPU lanes: 250m to 8 cores each, with up to 4 GiB of memory per core.
        mem_per_core = min(4 * _GI, memory / max(cpu_m, 1) * 1000 * 0.8)
        room = max(0, max_pods - len(system) - len(lanes) - 5)
        while room > 0 and cpu_budget >= 250 + _CTRL_CPU_M:
            millis = rng.weighted(_CPU_LANE_SIZES, int(cpu_budget - _CTRL_CPU_M))
            mem = int(mem_per_core * millis / 1000) // (64 * _MI) * (64 * _MI)
            if mem <= 0 or mem + _CTRL_MEM > mem_budget:
                break
            lanes.append(("", 0, millis, mem))
            cpu_budget -= millis + _CTRL_CPU_M
            mem_budget -= mem + _CTRL_MEM
            room -= 1

        hot = []
        ip_prefix = f"10.{128 + node_index // 65536 % 64}.{node_index // 256 % 256}."
        name_prefix = f"job-{info.name}-"
        for lane_index, (resource, count, millis, mem) in enumerate(lanes):
            gpu = bool(resource)
            shape = (resource, count, millis, mem)
            variants = self._shapes.get(shape)
            if variants is None:
                variants = self._shapes[shape] = _container_variants(*shape)
            key = _mix(info.key + (lane_index + 1) * _C1)
            v = _mix(key ^ _C2)
            lane_id = len(self._lane_static)
            self._lane_static.append(
                (
                    f"{name_prefix}{lane_index}-",
                    _uid_prefix(format(key, "016x")),
                    ip_prefix + str(lane_index % 250 + 2),
                    variants,
                    GPU_STEMS if gpu else CPU_STEMS,
                    info,
                )
            )
            # epoch 60-240 s (GPU) or 20-180 s (CPU); busy in 70-98 % (GPU) or 50-90 % (CPU) of the epochs
            length = 60 + v % 181 if gpu else 20 + v % 161
            busy = (0.7 + 0.28 * ((v >> 16) & 0xFFFF) / 65536) if gpu else (0.5 + 0.4 * ((v >> 16) & 0xFFFF) / 65536)
            hot.append((lane_id, length, (v >> 32) % length, key, int(busy * 65536)))
        self._max_lane_epoch = max(self._max_lane_epoch, *(lane[1] for lane in hot)) if hot else self._max_lane_epoch
        return hot

    def _system_pod(self, info: _NodeInfo, daemonset: tuple, used: set[str]) -> dict:
        name, namespace, _, _, _, _ = daemonset
        shared = self._shapes.get(daemonset)
        if shared is None:
            shared = self._shapes[daemonset] = _daemonset_parts(self.seed, daemonset)
        containers, labels, owners = shared
        key = _key("ds", self.seed, info.name, name)
        attempt = 0
        while True:
            x = _mix(key + attempt)
            pod_name = f"{name}-" + "".join(_SUFFIX_ALPHABET[(x >> (6 * i)) % 27] for i in range(5))
            if pod_name not in used:
                break
            attempt += 1
        used.add(pod_name)
        started = info.created + 240 + x % 600
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": _iso(started - 60),
                "generateName": f"{name}-",
                "labels": labels,
                "name": pod_name,
                "namespace": namespace,
                "ownerReferences": owners,
                "resourceVersion": str(self._tick_of(started)),
                "uid": _uid(x, _mix(x ^ _GOLD)),
            },
            "spec": {
                "containers": containers,
                "nodeName": info.name,
                "priorityClassName": "system-node-critical",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "tolerations": _SYSTEM_TOLERATIONS,
            },
            "status": {
                "hostIP": info.host_ip,
                "phase": "Running",
                "podIP": info.host_ip,
                "qosClass": "Burstable",
                "startTime": _iso(started),
            },
        }

    # -- time ----------------------------------------------------------------------------------------------------
    def _tick_of(self, seconds: float) -> int:
        """The first tick at which something that happens at ``seconds`` is visible."""
        return math.ceil(seconds / self.tick_seconds)

    def _time(self, now: float) -> tuple[int, float]:
        """(tick, the tick's start): ``state(now)`` is the state at the start of now's tick."""
        tick = math.floor(now / self.tick_seconds)
        return tick, tick * self.tick_seconds

    # -- nodes ---------------------------------------------------------------------------------------------------
    @staticmethod
    def _node_window(info: _NodeInfo, epoch: int) -> tuple[int, int, int] | None:
        """The down window (start, end, kind) of a node epoch, or None when the node stays up in it."""
        x = _mix(info.key + epoch * _GOLD)
        if (x & 0xFFFF) >= _DOWN_THRESHOLD:
            return None
        length = info.epoch
        start = epoch * length - info.phase + length * (5 + (x >> 16) % 31) // 100
        end = start + length * (30 + (x >> 24) % 31) // 100
        return start, end, (x >> 32) % 10

    def _node_status(self, info: _NodeInfo, t: float) -> tuple[int, int | None]:
        """(kind, since): kind -1 up, 0-3 NotReady, 4-5 Unknown, 6-9 cordoned; since: last transition, or None."""
        if not info.simulated:
            return -1, None
        epoch = int((t + info.phase) // info.epoch)
        for back in range(epoch, epoch - _NODE_LOOKBACK, -1):
            window = self._node_window(info, back)
            if window and window[0] <= t:
                start, end, kind = window
                return (kind, start) if t < end else (-1, end)
        return -1, None

    def _down_intervals(self, info: _NodeInfo, t: float) -> list[tuple[int, int]]:
        """The node's down windows that could hold the start of a pod visible at ``t``."""
        first = int((t - self._max_lane_epoch + info.phase) // info.epoch)
        last = int((t + info.phase) // info.epoch)
        windows = [self._node_window(info, epoch) for epoch in range(first, last + 1)]
        return [(w[0], w[1]) for w in windows if w]

    def _node_object(self, info: _NodeInfo, kind: int, since: int | None) -> dict:
        base = info.base
        if since is None:
            return base
        x = _mix(info.key ^ since)
        node = dict(base)
        metadata = node["metadata"] = dict(base["metadata"])
        metadata["resourceVersion"] = str(self._tick_of(since))
        if kind >= 6:  # cordoned
            node["spec"] = {**base["spec"], "unschedulable": True}
            annotations = dict(metadata.get("annotations") or {})
            annotations["osmo.nvidia.com/cordon-reason"] = _CORDON_REASONS[x % len(_CORDON_REASONS)]
            metadata["annotations"] = annotations
        status = node["status"] = dict(base["status"])
        conditions = []
        for condition in status.get("conditions") or []:
            if isinstance(condition, dict) and condition.get("type") == "Ready":
                condition = dict(condition, lastHeartbeatTime=_iso(since), lastTransitionTime=_iso(since))
                if kind < 0 or kind >= 6:
                    condition.update(status="True", reason="KubeletReady", message="kubelet is posting ready status")
                elif kind <= 3:
                    message = _NOT_READY_MESSAGES[x % len(_NOT_READY_MESSAGES)]
                    condition.update(status="False", reason="KubeletNotReady", message=message)
                else:
                    message = "Kubelet stopped posting node status."
                    condition.update(status="Unknown", reason="NodeStatusUnknown", message=message)
            conditions.append(condition)
        status["conditions"] = conditions
        return node

    # -- pods ----------------------------------------------------------------------------------------------------
    def _jobs(self, t: float) -> dict[int, tuple[int, int, int, bool, int]]:
        """Lane id -> (epoch, hash, start, running, pending seconds) of the job visible on each lane at ``t``.

        Memoised for the last two times asked (a watch asks for events(a, b), then events(b, c)); read-only.
        """
        for memo_time, memo_jobs in self._jobs_memo:
            if memo_time == t:
                return memo_jobs
        jobs = self._compute_jobs(t)
        self._jobs_memo = [(t, jobs), *self._jobs_memo[:1]]
        return jobs

    def _compute_jobs(self, t: float) -> dict[int, tuple[int, int, int, bool, int]]:
        jobs: dict[int, tuple[int, int, int, bool, int]] = {}
        mask, gold, c1, c2 = _MASK, _GOLD, _C1, _C2
        period, wave_phase, min_pending = _WAVE_PERIOD, self._wave_phase, self._min_pending
        for info, lanes in zip(self._nodes, self._node_lanes, strict=True):
            if not lanes:
                continue
            down = self._down_intervals(info, t)
            for lane_id, length, phase, key, threshold in lanes:
                epoch = int((t + phase) // length)
                x = (key + epoch * gold) & mask
                x = ((x ^ (x >> 30)) * c1) & mask
                x = ((x ^ (x >> 27)) * c2) & mask
                x ^= x >> 31
                begin = epoch * length - phase
                # busy with the lane's probability, scaled by 0.75-1 along the fleet-wide load wave
                position = (begin + wave_phase) % period
                if (x & 0xFFFF) * 4 * period >= threshold * (3 * period + abs(2 * position - period)):
                    continue
                start = begin + ((x >> 16) & 0xFF) * length // 1280  # starts 0-20 % into the epoch
                if t < start or t >= begin + length - ((x >> 24) & 0xFF) * length // 1024:  # ends 0-25 % early
                    continue
                if down and any(low <= start < high for low, high in down):
                    continue  # the node was unavailable when the job would have started
                pending = max(min_pending, 2 + (x >> 32) % 9)
                jobs[lane_id] = (epoch, x, start, t >= start + pending, pending)
        return jobs

    def _pod(self, lane_id: int, job: tuple[int, int, int, bool, int]) -> dict:
        epoch, x, start, running, pending = job
        name_prefix, uid_prefix, pod_ip, variants, stems, info = self._lane_static[lane_id]
        y = _mix(x ^ 0x5DEECE66D)
        priority, priority_class = _PRIORITIES[y & 0xFF]
        workflow = f"{stems[(y >> 16) % len(stems)]}-{(y >> 24) & 0xFFFFF:05x}"
        labels = {
            "app.kubernetes.io/managed-by": "osmo",
            PRIORITY_LABEL: priority,
            USER_LABEL: USERS[(y >> 8) % len(USERS)],
            "osmo.workflow_id": workflow,
        }
        if info.pools:
            labels[POOL_LABEL] = info.pools[(y >> 44) % len(info.pools)]
        containers, init = variants[(y >> 52) & 7]
        spec = {
            "containers": containers,
            "nodeName": info.name,
            "nodeSelector": info.selector,
            "priorityClassName": priority_class,
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "tolerations": info.tolerations,
            "volumes": _VOLUMES,
        }
        if init is not None:
            spec["initContainers"] = init
        created = _iso(start)
        if running:
            status = {
                "hostIP": info.host_ip,
                "phase": "Running",
                "podIP": pod_ip,
                "qosClass": "Burstable",
                "startTime": created,
            }
            version = self._tick_of(start + pending)
        else:
            status = {"hostIP": info.host_ip, "phase": "Pending", "qosClass": "Burstable", "startTime": created}
            version = self._tick_of(start)
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "creationTimestamp": created,
                "labels": labels,
                "name": name_prefix + str(epoch),
                "namespace": self.namespaces[(y >> 40) % len(self.namespaces)],
                "resourceVersion": str(version),
                "uid": f"{uid_prefix}{(epoch * _GOLD) & 0xFFFFFFFFFFFF:012x}",
            },
            "spec": spec,
            "status": status,
        }

    # -- the API -------------------------------------------------------------------------------------------------
    @property
    def node_names(self) -> list[str]:
        return [info.name for info in self._nodes]

    def resource_version(self, now: float) -> str:
        """The list resourceVersion at ``now``: the tick number."""
        return str(self._time(now)[0])

    def set_pool_labels(self, pool_labels: Mapping[str, Sequence[str]]) -> None:
        """Change which pools' labels each node's job pods carry (pods made from now on; caches dropped)."""
        changed = False
        for info in self._nodes:
            pools = pool_labels.get(info.name) or ()
            pools = (pools,) if isinstance(pools, str) else tuple(str(pool) for pool in pools)
            if pools != info.pools:
                info.pools = pools
                changed = True
        if changed:
            self._pod_cache = {}
            self._jobs_memo = []

    def nodes(self, now: float) -> list[dict]:
        """The Node objects at ``now``."""
        _, t = self._time(now)
        cache = self._node_cache  # memoised: the last object built for each node, by its (kind, since)
        nodes = []
        for index, info in enumerate(self._nodes):
            status = self._node_status(info, t)
            cached = cache[index]
            if cached is None or cached[0] != status:
                cached = cache[index] = (status, self._node_object(info, *status))
            nodes.append(cached[1])
        return nodes

    def pods(self, now: float) -> list[dict]:
        """The Pending and Running pods at ``now``: system pods, then job pods by node and lane."""
        _, t = self._time(now)
        with paused_gc():
            return self._pods(t)

    def _pods(self, t: float) -> list[dict]:
        # Memoised: a job's object at a phase never changes, so the last call's objects are reused.
        cache, fresh = self._pod_cache, {}
        pods = list(self._system)
        for lane_id, job in self._jobs(t).items():
            key = (lane_id, job[0], job[3])
            pod = cache.get(key)
            if pod is None:
                pod = self._pod(lane_id, job)
            fresh[key] = pod
            pods.append(pod)
        self._pod_cache = fresh
        return pods

    def state(self, now: float) -> tuple[list[dict], list[dict], str]:
        """(nodes, pods, resourceVersion) at ``now``; the resourceVersion is the tick number."""
        return self.nodes(now), self.pods(now), self.resource_version(now)

    def events(self, since: float, until: float) -> list[FleetEvent]:
        """What changed between ``state(since)`` and ``state(until)``, nodes first.

        A pod that ended is DELETED with its last object (at ``since``); one that started is ADDED as it is at
        ``until``; one whose phase changed is MODIFIED. Nodes are only ever MODIFIED (the node set is fixed).
        """
        tick_a, a = self._time(since)
        tick_b, b = self._time(until)
        if tick_a == tick_b:
            return []
        with paused_gc():
            return self._events(a, b)

    def _events(self, a: float, b: float) -> list[FleetEvent]:
        cache = self._pod_cache

        def pod(lane_id: int, job: tuple[int, int, int, bool, int]) -> dict:
            return cache.get((lane_id, job[0], job[3])) or self._pod(lane_id, job)

        events = []
        for info in self._nodes:
            if info.simulated:
                after = self._node_status(info, b)
                if self._node_status(info, a) != after:
                    events.append(FleetEvent("MODIFIED", self._node_object(info, *after)))
        old, new = self._jobs(a), self._jobs(b)
        added = []
        for lane_id, job in old.items():
            current = new.get(lane_id)
            if current is None or current[0] != job[0]:
                events.append(FleetEvent("DELETED", pod(lane_id, job)))
                if current is not None:
                    added.append(FleetEvent("ADDED", pod(lane_id, current)))
            elif current[3] != job[3]:
                events.append(FleetEvent("MODIFIED", pod(lane_id, current)))
        for lane_id, job in new.items():
            if lane_id not in old:
                added.append(FleetEvent("ADDED", pod(lane_id, job)))
        return events + added


_GPU_LANE_SIZES = ((1, 0.3), (2, 0.3), (4, 0.3), (8, 0.1))
_MIG_LANE_SIZES = ((1, 0.6), (2, 0.4))
_CPU_LANE_SIZES = ((250, 0.15), (500, 0.2), (1000, 0.3), (2000, 0.2), (4000, 0.1), (8000, 0.05))
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _is_gpu_node(node: dict) -> bool:
    allocatable = node["status"].get("allocatable") or {}
    return bool(
        _quantity(allocatable.get(GPU))
        or any(str(resource).startswith(MIG_PREFIX) for resource in allocatable)
        or "nvidia.com/gpu.product" in node["metadata"]["labels"]
    )


def _container_variants(resource: str, count: int, millis: int, mem: int) -> list[tuple[list, list | None]]:
    """Eight (containers, initContainers) variants for one lane shape: four images, with and without init."""
    requests = {"cpu": _cpu(millis), "memory": _memory(mem)}
    if resource:
        requests[resource] = str(count)
    ctrl = {
        "command": ["/osmo/ctrl"],
        "image": CTRL_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "name": "osmo-ctrl",
        "resources": {
            "limits": {"cpu": "500m", "memory": "512Mi"},
            "requests": {"cpu": _cpu(_CTRL_CPU_M), "memory": _memory(_CTRL_MEM)},
        },
        "volumeMounts": [{"mountPath": "/osmo", "name": "osmo-data"}],
    }
    init = [
        {
            "command": ["/osmo/init", "--download-inputs"],
            "image": INIT_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "name": "osmo-init",
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "volumeMounts": [{"mountPath": "/osmo", "name": "osmo-data"}],
        }
    ]
    variants = []
    for image in GPU_IMAGES if resource else CPU_IMAGES:
        user = {
            "command": ["/bin/bash", "-c", "exec /osmo/run.sh"],
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "name": "user",
            "resources": {"limits": dict(requests), "requests": requests},
            "volumeMounts": [{"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/osmo", "name": "osmo-data"}],
        }
        variants.append(([user, ctrl], None))
        variants.append(([user, ctrl], init))
    return variants


def _daemonset_parts(seed: int, daemonset: tuple) -> tuple[list, dict, list]:
    """The parts all pods of one system daemonset share: containers, labels, owner references."""
    name, _, image, millis, mem, _ = daemonset
    app = name.removesuffix("-daemonset")
    containers = [
        {
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "name": app,
            "resources": {
                "limits": {"memory": _memory(mem)},
                "requests": {"cpu": _cpu(millis), "memory": _memory(mem)},
            },
        }
    ]
    owner = _Stream("daemonset", seed, name)
    owners = [
        {
            "apiVersion": "apps/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "DaemonSet",
            "name": name,
            "uid": owner.uid(),
        }
    ]
    return containers, {"app": app, "pod-template-generation": "3"}, owners
