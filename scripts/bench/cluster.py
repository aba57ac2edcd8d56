"""Generate a big, realistic Kubernetes cluster (Node and Pod objects as the API server returns them) and the
matching pool configuration bundle, deterministically from a seed.

    nodes, pods = generate_cluster(nodes=5000, pods=150000, pools=50, platforms=3, seed=1)
    bundle = pool_config(pools=50, platforms=3, backend="bench")

Layout (all derived from the seed):

* Pools ``pool-01`` .. ``pool-NN``. Every node has ``pool.example.com/name: <its pool>`` and the membership label
  ``pool.example.com/<pool>: "true"``. A few pools share nodes: ~12 % of the nodes of every sixth pool carry
  ``pool.example.com/shared: "true"`` and the membership label of the next pool too. Every fifth pool is
  dedicated: its nodes are tainted ``pool.example.com/dedicated=<pool>:NoSchedule`` and the pool's template
  tolerates that.
* Platforms are GPU products (GFD label ``nvidia.com/gpu.product``): ``h100``, ``a100``, ``l40s`` (then ``h200``,
  ``b200``, ``a10g`` when more are asked for). Big GPUs are tainted ``nvidia.com/gpu.product=<product>:NoSchedule``;
  the platform template selects the product and tolerates that taint. About 5 % of the nodes carry a product
  outside every platform (T4) and belong to no platform.
* About 1 % of the nodes are NotReady (with the not-ready taint) and 0.5 % are cordoned.
* Pods: every node runs two daemon pods (gpu-operator device plugin, node exporter); the rest are workload
  pods in namespace ``osmo-<pool>`` labelled ``osmo.pool`` / ``osmo.priority``, requesting GPUs so that, per node,
  the GPU requests of all its pods never exceed ``status.allocatable["nvidia.com/gpu"]``. Phases: ~95 %
  Running, ~3 % Pending (bound, ContainerCreating), ~1.5 % Succeeded, ~0.5 % Failed.

Objects share immutable sub-structures (strings, a few constant dicts) to keep generation fast; treat them as
read-only or deep-copy before mutating.
"""

from __future__ import annotations

import gc
import random
from datetime import UTC, datetime

POOL_LABEL = "pool.example.com/name"
POOL_MEMBER_PREFIX = "pool.example.com/"
SHARED_LABEL = "pool.example.com/shared"
DEDICATED_TAINT = "pool.example.com/dedicated"
PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU = "nvidia.com/gpu"

# platform name -> GPU product facts (GFD labels, node shape). Order = order of platforms taken.
PRODUCTS = [
    # name, product, family, memory MiB, gpus per node, cpu, memory GiB, instance type, compute cap, tainted
    ("h100", "NVIDIA-H100-80GB-HBM3", "hopper", 81559, 8, 224, 2048, "dgx-h100", (9, 0), True),
    ("a100", "NVIDIA-A100-SXM4-80GB", "ampere", 81920, 8, 256, 2048, "dgx-a100", (8, 0), True),
    ("l40s", "NVIDIA-L40S", "ada-lovelace", 46068, 4, 64, 512, "ovx-l40s", (8, 9), False),
    ("h200", "NVIDIA-H200", "hopper", 143771, 8, 224, 2048, "dgx-h200", (9, 0), True),
    ("b200", "NVIDIA-B200", "blackwell", 183359, 8, 224, 4096, "dgx-b200", (10, 0), True),
    ("a10g", "NVIDIA-A10G", "ampere", 23028, 4, 48, 192, "g5.12xlarge", (8, 6), False),
]
OFF_PLATFORM = ("t4", "Tesla-T4", "turing", 15360, 4, 32, 128, "n1-standard-32", (7, 5), False)

BASE_TIME = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
IMAGES = [
    ("nvcr.io/nvidia/pytorch", "24.12-py3", 10_204_871_042),
    ("nvcr.io/nvidia/tritonserver", "24.12-py3", 8_315_007_190),
    ("nvcr.io/nvidia/nemo", "24.12", 14_632_100_455),
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.17.0", 181_300_020),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.9-3.6.1-ubuntu22.04", 402_335_012),
    ("quay.io/prometheus/node-exporter", "v1.8.2", 11_902_331),
    ("registry.k8s.io/pause", "3.10", 320_368),
]
NODE_IMAGES = [IMAGES[0], IMAGES[3], IMAGES[5], IMAGES[6]]
WORKLOAD_IMAGES = [
    "nvcr.io/nvidia/pytorch:24.12-py3",
    "nvcr.io/nvidia/nemo:24.12",
    "nvcr.io/nvidia/tritonserver:24.12-py3",
    "osmo.example.com/robotics/isaac-sim:4.2.0",
]
PRIORITIES = ["HIGH", "NORMAL", "NORMAL", "NORMAL", "LOW"]
TASKS = ["train", "eval", "sim", "prep", "infer"]
DEFAULT_TOLERATIONS = (
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
)


def pool_name(index: int) -> str:
    """Pool ``index`` (0-based) as ``pool-01``..."""
    return f"pool-{index + 1:02d}"


def platforms_of(platforms: int) -> list[tuple]:
    """The product rows of the first ``platforms`` platforms."""
    if not 1 <= platforms <= len(PRODUCTS):
        raise ValueError(f"platforms must be between 1 and {len(PRODUCTS)}")
    return PRODUCTS[:platforms]


def is_dedicated(pool_index: int) -> bool:
    return pool_index % 5 == 4


def shares_next(pool_index: int, pools: int) -> bool:
    """Pools whose nodes are partly shared with the next pool (never with or from a dedicated pool)."""
    return pool_index % 6 == 0 and pool_index + 1 < pools and not is_dedicated(pool_index + 1)


def pool_config(pools: int = 50, platforms: int = 3, backend: str = "bench") -> dict:
    """The configuration bundle matching :func:`generate_cluster`: ``{"podTemplates": {...}, "pools": {...}}``.

    Template ``pool-NN`` selects the pool's nodes (membership label, tolerating the dedicated taint when the
    pool has one); template ``platform-<name>`` selects the GPU product and tolerates its taint.
    """
    rows = platforms_of(platforms)
    templates: dict = {}
    for name, product, *_rest, tainted in rows:
        spec: dict = {"nodeSelector": {PRODUCT_LABEL: product}}
        spec["tolerations"] = (
            [{"key": PRODUCT_LABEL, "operator": "Equal", "value": product, "effect": "NoSchedule"}] if tainted else []
        )
        templates[f"platform-{name}"] = {"spec": spec}
    pool_bodies: dict = {}
    for index in range(pools):
        pool = pool_name(index)
        tolerations = (
            [{"key": DEDICATED_TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}]
            if is_dedicated(index)
            else []
        )
        templates[pool] = {"spec": {"nodeSelector": {POOL_MEMBER_PREFIX + pool: "true"}, "tolerations": tolerations}}
        pool_bodies[pool] = {
            "backend": backend,
            "common_pod_template": [pool],
            "platforms": {row[0]: {"override_pod_template": [f"platform-{row[0]}"]} for row in rows},
        }
    return {"podTemplates": templates, "pools": pool_bodies}


class _Clock:
    """Deterministic timestamps (RFC 3339, seconds before ``BASE_TIME``) without ``strftime`` per call."""

    def __init__(self) -> None:
        self._days: dict[int, str] = {}
        self._base = int(BASE_TIME.timestamp())

    def __call__(self, seconds_ago: int) -> str:
        days, second = divmod(self._base - seconds_ago, 86400)
        day = self._days.get(days)
        if day is None:
            day = self._days[days] = datetime.fromtimestamp(days * 86400, UTC).strftime("%Y-%m-%dT")
        hour, second = divmod(second, 3600)
        minute, second = divmod(second, 60)
        return f"{day}{hour:02d}:{minute:02d}:{second:02d}Z"


_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]


def _uid(rng: random.Random) -> str:
    """A random version-4 UUID string from ``rng``."""
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _suffix(rng: random.Random) -> str:
    """A 5-character generateName suffix, like Kubernetes makes."""
    x = rng.getrandbits(32)
    return _PAIRS[x % 729] + _PAIRS[(x // 729) % 729] + _ALPHABET[(x // 531441) % 27]


def _unique_name(rng: random.Random, prefix: str, taken: set[str]) -> str:
    """``<prefix>-<suffix>`` not yet in ``taken`` (which it joins)."""
    for _ in range(100):
        name = f"{prefix}-{_suffix(rng)}"
        if name not in taken:
            taken.add(name)
            return name
    raise RuntimeError(f"no free name for {prefix}")


def _below(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` but faster (uniform enough for test data)."""
    return int(rng.random() * n)


def _node(index: int, rng: random.Random, clock: _Clock, row: tuple, pool_index: int, pools: int, rv: int) -> dict:
    name, product, family, gpu_mem, gpus, cpu, mem_gi, instance, (cc_major, cc_minor), tainted = row
    node_name = f"{name}-node-{index:05d}"
    pool = pool_name(pool_index)
    zone = ZONES[index % len(ZONES)]
    ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    created = clock(86400 * 30 + _below(rng, 86400 * 200))
    heartbeat = clock(_below(rng, 40))
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": instance,
        "beta.kubernetes.io/os": "linux",
        "feature.node.kubernetes.io/cpu-model.vendor_id": "AMD" if index % 3 else "Intel",
        "feature.node.kubernetes.io/kernel-version.major": "5",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/rdma.available": "true" if tainted else "false",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node_name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance,
        "nvidia.com/cuda.driver-version.full": "560.35.03",
        "nvidia.com/cuda.driver.major": "560",
        "nvidia.com/cuda.driver.minor": "35",
        "nvidia.com/cuda.driver.rev": "03",
        "nvidia.com/cuda.runtime-version.major": "12",
        "nvidia.com/cuda.runtime-version.minor": "6",
        "nvidia.com/gfd.timestamp": "1736942400",
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
        "nvidia.com/gpu.compute.major": str(cc_major),
        "nvidia.com/gpu.compute.minor": str(cc_minor),
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "pre-installed",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.machine": instance.upper(),
        "nvidia.com/gpu.memory": str(gpu_mem),
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.present": "true",
        PRODUCT_LABEL: product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true" if tainted else "false",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false",
        POOL_LABEL: pool,
        POOL_MEMBER_PREFIX + pool: "true",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.kubernetes.io/zone": zone,
    }
    if shares_next(pool_index, pools) and rng.random() < 0.02 * 6:
        labels[SHARED_LABEL] = "true"
        labels[POOL_MEMBER_PREFIX + pool_name(pool_index + 1)] = "true"
    taints = []
    if tainted:
        taints.append({"effect": "NoSchedule", "key": PRODUCT_LABEL, "value": product})
    if is_dedicated(pool_index):
        taints.append({"effect": "NoSchedule", "key": DEDICATED_TAINT, "value": pool})
    roll = rng.random()
    ready = roll >= 0.01
    cordoned = 0.01 <= roll < 0.015
    if not ready:
        taints.append({"effect": "NoSchedule", "key": "node.kubernetes.io/not-ready"})
    if cordoned:
        taints.append({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "timeAdded": heartbeat})
    mem_ki = mem_gi * 1024 * 1024
    capacity = {
        "cpu": str(cpu),
        "ephemeral-storage": "3748936744Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        GPU: str(gpus),
        "pods": "250",
    }
    allocatable = {
        "cpu": f"{cpu * 1000 - 1900}m",
        "ephemeral-storage": "3455028503254",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki - 8 * 1024 * 1024}Ki",
        GPU: str(gpus),
        "pods": "250",
    }
    transition = clock(86400 * 20 + _below(rng, 86400 * 10))
    conditions = [
        {
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transition,
            "message": "kubelet has sufficient memory available",
            "reason": "KubeletHasSufficientMemory",
            "status": "False",
            "type": "MemoryPressure",
        },
        {
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transition,
            "message": "kubelet has no disk pressure",
            "reason": "KubeletHasNoDiskPressure",
            "status": "False",
            "type": "DiskPressure",
        },
        {
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transition,
            "message": "kubelet has sufficient PID available",
            "reason": "KubeletHasSufficientPID",
            "status": "False",
            "type": "PIDPressure",
        },
        {
            "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": clock(_below(rng, 3600)) if not ready else transition,
            "message": "kubelet is posting ready status" if ready else "PLEG is not healthy: pleg was last seen 3m ago",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "status": "True" if ready else "False",
            "type": "Ready",
        },
    ]
    images = [
        {"names": [f"{repo}@sha256:{rng.getrandbits(256):064x}", f"{repo}:{tag}"], "sizeBytes": size}
        for repo, tag, size in NODE_IMAGES
    ]
    spec: dict = {
        "podCIDR": f"100.{64 + (index >> 8) % 64}.{index & 255}.0/24",
        "podCIDRs": [f"100.{64 + (index >> 8) % 64}.{index & 255}.0/24"],
        "providerID": f"aws:///{zone}/i-0{rng.getrandbits(64):016x}",
    }
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"i-0{index:016x}"}}',
                "nfd.node.kubernetes.io/feature-labels": "cpu-model.vendor_id,kernel-version.major,pci-10de.present",
                "node.alpha.kubernetes.io/ttl": "0",
                "nvidia.com/gpu-driver-upgrade-enabled": "true",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": created,
            "labels": labels,
            "name": node_name,
            "resourceVersion": str(rv),
            "uid": _uid(rng),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": ip, "type": "InternalIP"},
                {"address": f"ip-{ip.replace('.', '-')}.us-west-2.compute.internal", "type": "InternalDNS"},
                {"address": node_name, "type": "Hostname"},
            ],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": _uid(rng),
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "5.15.0-1071-nvidia",
                "kubeProxyVersion": "v1.31.4",
                "kubeletVersion": "v1.31.4",
                "machineID": f"{rng.getrandbits(128):032x}",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": _uid(rng).upper(),
            },
        },
    }


def _pod(
    rng: random.Random,
    clock: _Clock,
    node: dict,
    *,
    namespace: str,
    name: str,
    labels: dict,
    image: str,
    command: list,
    gpus: int,
    cpu: str,
    memory: str,
    phase: str,
    owner: dict,
    tolerations: list,
    priority: tuple,
    rv: int,
) -> dict:
    node_name = node["metadata"]["name"]
    host_ip = node["status"]["addresses"][0]["address"]
    pod_ip = f"100.{64 + _below(rng, 64)}.{_below(rng, 256)}.{1 + _below(rng, 254)}"
    age = 60 + _below(rng, 86400 * 14)
    created = clock(age)
    started = clock(age - 1 - _below(rng, 29))
    requests = {"cpu": cpu, "memory": memory}
    limits = {"memory": memory}
    if gpus:
        requests[GPU] = limits[GPU] = str(gpus)
    running = phase == "Running"
    done = phase in ("Succeeded", "Failed")
    ready_status = "True" if running else "False"
    container_name = "main" if "osmo.pool" in labels else name.rsplit("-", 1)[0]
    if running:
        state = {"running": {"startedAt": started}}
    elif done:
        state = {
            "terminated": {
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
                "exitCode": 0 if phase == "Succeeded" else 137,
                "finishedAt": clock(max(age - 600, 0)),
                "reason": "Completed" if phase == "Succeeded" else "Error",
                "startedAt": started,
            }
        }
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    container_status = {
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{rng.getrandbits(256):064x}",
        "lastState": {},
        "name": container_name,
        "ready": running,
        "restartCount": 0,
        "started": running,
        "state": state,
    }
    if not phase == "Pending":
        container_status["containerID"] = f"containerd://{rng.getrandbits(256):064x}"
    token_volume = f"kube-api-access-{_suffix(rng)}"
    conditions = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": started,
            "status": ready_status,
            "type": "PodReadyToStartContainers",
        },
        {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "Initialized"},
        {"lastProbeTime": None, "lastTransitionTime": started, "status": ready_status, "type": "Ready"},
        {"lastProbeTime": None, "lastTransitionTime": started, "status": ready_status, "type": "ContainersReady"},
        {"lastProbeTime": None, "lastTransitionTime": created, "status": "True", "type": "PodScheduled"},
    ]
    status: dict = {
        "conditions": conditions,
        "containerStatuses": [container_status],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": phase,
        "qosClass": "Burstable",
        "startTime": created,
    }
    if phase != "Pending":
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/default-container": container_name},
            "creationTimestamp": created,
            "generateName": name.rsplit("-", 1)[0] + "-",
            "labels": labels,
            "name": name,
            "namespace": namespace,
            "ownerReferences": [owner],
            "resourceVersion": str(rv),
            "uid": _uid(rng),
        },
        "spec": {
            "containers": [
                {
                    "command": command,
                    "env": [
                        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all" if gpus else "void"},
                        {
                            "name": "OSMO_NODE",
                            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                        },
                        {
                            "name": "OSMO_POD_NAME",
                            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                        },
                    ],
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "name": container_name,
                    "resources": {"limits": limits, "requests": requests},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "volumeMounts": [
                        {"mountPath": "/dev/shm", "name": "dshm"},
                        {
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "name": token_volume,
                            "readOnly": True,
                        },
                    ],
                }
            ],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node_name,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": priority[1],
            "priorityClassName": priority[0],
            "restartPolicy": "Never" if "osmo.pool" in labels else "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": tolerations,
            "volumes": [
                {"emptyDir": {"medium": "Memory"}, "name": "dshm"},
                {
                    "name": token_volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
        },
        "status": status,
    }


def generate_cluster(
    nodes: int = 5000, pods: int = 150000, pools: int = 50, platforms: int = 3, seed: int = 1
) -> tuple[list[dict], list[dict]]:
    """Return ``(nodes, pods)``: Kubernetes ``v1`` Node and Pod objects as dicts (see the module docstring).

    ``pods`` must be at least ``2 * nodes`` (two daemon pods per node). resourceVersions are unique, nodes
    first, starting at 1000; the largest is the cluster's resourceVersion.
    """
    if nodes < 1 or pools < 1 or pods < 2 * nodes:
        raise ValueError("need nodes >= 1, pools >= 1 and pods >= 2 * nodes")
    # Millions of new dicts would trigger the cyclic GC over and over (it more than doubles the time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _generate(nodes, pods, pools, platforms, seed)
    finally:
        if gc_was_enabled:
            gc.enable()


def _generate(nodes: int, pods: int, pools: int, platforms: int, seed: int) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    clock = _Clock()
    rows = platforms_of(platforms)
    rv = 1000
    node_list = []
    for index in range(nodes):
        pool_index = index % pools
        # Mostly the pool's main product, some of the others, ~5 % off-platform (T4).
        roll = rng.random()
        if roll < 0.05:
            row = OFF_PLATFORM
        elif roll < 0.75:
            row = rows[pool_index % len(rows)]
        else:
            row = rows[_below(rng, len(rows))]
        node_list.append(_node(index, rng, clock, row, pool_index, pools, rv))
        rv += 1
    node_list.sort(key=lambda node: node["metadata"]["name"])

    # Pods per node: two daemon pods each, the workload pods spread around (some nodes busier than others).
    workload = pods - 2 * nodes
    weights = [rng.random() + 0.5 for _ in range(nodes)]
    scale = workload / sum(weights)
    per_node = [int(w * scale) for w in weights]
    for index in rng.sample(range(nodes), workload - sum(per_node)):
        per_node[index] += 1

    priorities = {"HIGH": ("osmo-high", 100000), "NORMAL": ("osmo-normal", 10000), "LOW": ("osmo-low", 1000)}
    daemon_owner = {
        "apiVersion": "apps/v1",
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": "DaemonSet",
        "name": "",
        "uid": "",
    }
    plugin_owner = {**daemon_owner, "name": "nvidia-device-plugin-daemonset", "uid": _uid(rng)}
    exporter_owner = {**daemon_owner, "name": "node-exporter", "uid": _uid(rng)}
    daemon_tolerations = [{"operator": "Exists"}]
    daemon_names: set[str] = set()
    pod_list = []
    workflow_counter = 0
    for node_index, node in enumerate(node_list):
        labels = node["metadata"]["labels"]
        pool = labels[POOL_LABEL]
        pools_here = [pool] + [
            key[len(POOL_MEMBER_PREFIX) :]
            for key in labels
            if key.startswith(POOL_MEMBER_PREFIX + "pool-") and key != POOL_MEMBER_PREFIX + pool
        ]
        gpus_here = int(node["status"]["allocatable"][GPU])
        gpu_left = round(gpus_here * (0, 0.25, 0.5, 0.75, 1, 1, 1)[_below(rng, 7)])
        tolerations = [
            {"effect": t["effect"], "key": t["key"], "operator": "Equal", "value": t["value"]}
            for t in node["spec"].get("taints", ())
            if "value" in t
        ]
        tolerations += DEFAULT_TOLERATIONS
        for ds, namespace, owner, image, cmd in (
            ("nvidia-device-plugin-daemonset", "gpu-operator", plugin_owner, IMAGES[3], ["nvidia-device-plugin"]),
            ("node-exporter", "monitoring", exporter_owner, IMAGES[5], ["/bin/node_exporter", "--path.rootfs=/host"]),
        ):
            pod_list.append(
                _pod(
                    rng,
                    clock,
                    node,
                    namespace=namespace,
                    name=_unique_name(rng, ds, daemon_names),
                    labels={
                        "app.kubernetes.io/name": ds,
                        "controller-revision-hash": "6d4b9c7f8",
                        "pod-template-generation": "3",
                    },
                    image=f"{image[0]}:{image[1]}",
                    command=cmd,
                    gpus=0,
                    cpu="100m",
                    memory="256Mi",
                    phase="Running",
                    owner=owner,
                    tolerations=daemon_tolerations,
                    priority=("system-node-critical", 2000001000),
                    rv=rv,
                )
            )
            rv += 1
        for _ in range(per_node[node_index]):
            roll = rng.random()
            phase = (
                "Running" if roll < 0.95 else "Pending" if roll < 0.98 else "Succeeded" if roll < 0.995 else "Failed"
            )
            gpus = 0
            if gpu_left and rng.random() < 0.35:
                gpus = min((1, 1, 1, 2, 2, 4, 8)[_below(rng, 7)], gpu_left)
                gpu_left -= gpus
            this_pool = pools_here[0] if len(pools_here) == 1 else pools_here[_below(rng, len(pools_here))]
            workflow_counter += 1
            workflow = f"wf-{workflow_counter:07d}"
            priority = PRIORITIES[_below(rng, len(PRIORITIES))]
            task = TASKS[_below(rng, len(TASKS))]
            pod_list.append(
                _pod(
                    rng,
                    clock,
                    node,
                    namespace=f"osmo-{this_pool}",
                    name=f"{workflow}-{task}-{_suffix(rng)}",
                    labels={
                        "osmo.pool": this_pool,
                        "osmo.priority": priority,
                        "osmo.task_name": task,
                        "osmo.user": f"user{_below(rng, 400):03d}",
                        "osmo.workflow_id": workflow,
                        "osmo.workflow_uuid": f"{rng.getrandbits(128):032x}",
                    },
                    image=WORKLOAD_IMAGES[_below(rng, len(WORKLOAD_IMAGES))],
                    command=["/bin/bash", "-c", f"osmo-exec --task {task} --workflow {workflow}"],
                    gpus=gpus,
                    cpu=f"{max(gpus, 1) * 8}",
                    memory=f"{max(gpus, 1) * 64}Gi",
                    phase=phase,
                    owner={
                        "apiVersion": "batch/v1",
                        "blockOwnerDeletion": True,
                        "controller": True,
                        "kind": "Job",
                        "name": workflow,
                        "uid": _uid(rng),
                    },
                    tolerations=tolerations,
                    priority=priorities[priority],
                    rv=rv,
                )
            )
            rv += 1
    return node_list, pod_list
