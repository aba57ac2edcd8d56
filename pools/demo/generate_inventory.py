#!/usr/bin/env python3
"""Generate the demo cluster inventories in pools/demo/.

Each output file is a Kubernetes ``List`` shaped exactly like the output of
``kubectl get nodes,pods -A -o json``: Node objects first, then Pod objects.
The output is deterministic (``random.Random(SEED)``); rerun with

    python pools/demo/generate_inventory.py

to rewrite inventory-*.json next to this script. Standard library only.

Labels follow NVIDIA GPU Feature Discovery (``nvidia.com/gpu.product`` etc.).
Pods carry ``osmo.pool`` / ``osmo.priority`` / ``osmo.user`` labels; their GPU
requests are packed so that Running/Pending-bound pods never exceed a node's
allocatable GPUs (terminated pods may, on purpose: they must not be counted).
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

SEED = 20251121
OUT_DIR = Path(__file__).resolve().parent
NOW = datetime(2025, 11, 21, 9, 0, 0, tzinfo=UTC)

KI = 1024
GI_KI = 1024 * 1024  # Ki per Gi
GI = 1024**3

# ---------------------------------------------------------------------------
# GPU products (GFD label values)
# ---------------------------------------------------------------------------
GPUS = {
    "H100": dict(
        product="NVIDIA-H100-80GB-HBM3", memory=81559, family="hopper", major="9", minor="0", machine="DGXH100"
    ),
    "A100": dict(
        product="NVIDIA-A100-SXM4-80GB",
        memory=81920,
        family="ampere",
        major="8",
        minor="0",
        machine="DGXA100-920-23687-2530-000",
    ),
    "GB200": dict(
        product="NVIDIA-GB200",
        memory=189471,
        family="blackwell",
        major="10",
        minor="0",
        machine="GB200-NVL72-Compute-Tray",
    ),
    "L40": dict(
        product="NVIDIA-L40", memory=46068, family="ada-lovelace", major="8", minor="9", machine="OVX-L40-4GPU"
    ),
    "L40S": dict(
        product="NVIDIA-L40S", memory=46068, family="ada-lovelace", major="8", minor="9", machine="SYS-421GE-TNRT"
    ),
    "T4": dict(
        product="Tesla-T4", memory=15360, family="turing", major="7", minor="5", machine="Google-Compute-Engine"
    ),
    "A10G": dict(product="NVIDIA-A10G", memory=23028, family="ampere", major="8", minor="6", machine="g5.12xlarge"),
}

# ---------------------------------------------------------------------------
# Node shapes: cpu cores, memory GiB, ephemeral storage GiB, pods
# ---------------------------------------------------------------------------
SHAPES = {
    "dgx-h100": dict(
        instance="dgx-h100", arch="amd64", cpu=224, mem_gi=2015, disk_gi=3576, pods=250, gpu="H100", gpus=8
    ),
    "dgx-a100": dict(
        instance="dgx-a100", arch="amd64", cpu=256, mem_gi=2015, disk_gi=3576, pods=250, gpu="A100", gpus=8
    ),
    "gb200-tray": dict(
        instance="gb200-nvl72-tray", arch="arm64", cpu=144, mem_gi=960, disk_gi=3576, pods=250, gpu="GB200", gpus=4
    ),
    "cpu-sys": dict(instance="cpu-x86-96c", arch="amd64", cpu=96, mem_gi=384, disk_gi=894, pods=110),
    "ovx-l40": dict(
        instance="ovx-l40-4x", arch="amd64", cpu=128, mem_gi=1007, disk_gi=1788, pods=110, gpu="L40", gpus=4
    ),
    "l40s-8x": dict(
        instance="sm-l40s-8x", arch="amd64", cpu=128, mem_gi=1007, disk_gi=3576, pods=110, gpu="L40S", gpus=8
    ),
    "cpu-sim": dict(instance="cpu-x86-64c", arch="amd64", cpu=64, mem_gi=256, disk_gi=894, pods=110),
    "n1-t4": dict(instance="n1-standard-32", arch="amd64", cpu=32, mem_gi=118, disk_gi=375, pods=110, gpu="T4", gpus=4),
    "n2-cpu": dict(instance="n2-standard-32", arch="amd64", cpu=32, mem_gi=125, disk_gi=375, pods=110),
    "g5": dict(instance="g5.12xlarge", arch="amd64", cpu=48, mem_gi=186, disk_gi=500, pods=234, gpu="A10G", gpus=4),
    "m6i": dict(instance="m6i.4xlarge", arch="amd64", cpu=16, mem_gi=62, disk_gi=200, pods=234),
    "l40s-4x": dict(
        instance="sm-l40s-4x", arch="amd64", cpu=64, mem_gi=503, disk_gi=1788, pods=110, gpu="L40S", gpus=4
    ),
}

DRIVER = "550.127.05"


def product_taint(gpu_key):
    return {"key": "nvidia.com/gpu.product", "value": GPUS[gpu_key]["product"], "effect": "NoSchedule"}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
class Ctx:
    def __init__(self, rng: random.Random, cluster: str, region: str, zones: list[str], subnet: int):
        self.rng = rng
        self.cluster = cluster
        self.region = region
        self.zones = zones
        self.subnet = subnet
        self.rv = rng.randint(10_000_000, 90_000_000)
        self.node_ip: dict[str, str] = {}
        self.pod_seq = 10

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def resource_version(self) -> str:
        self.rv += self.rng.randint(1, 5000)
        return str(self.rv)

    def hexid(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def cpu_q(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def mem_bytes(q: str) -> int:
    units = {"Ki": KI, "Mi": KI**2, "Gi": KI**3, "Ti": KI**4}
    for u, f in units.items():
        if q.endswith(u):
            return int(float(q[: -len(u)]) * f)
    return int(q)


def cpu_millis(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


# ---------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------
def make_node(
    ctx: Ctx,
    name: str,
    shape_key: str,
    *,
    taints=(),
    extra_labels=None,
    unschedulable=False,
    ready="True",
    mig=None,
    replicas=None,
    zone=None,
):
    rng = ctx.rng
    shape = SHAPES[shape_key]
    zone = zone or rng.choice(ctx.zones)
    created = NOW - timedelta(days=rng.randint(40, 300), seconds=rng.randint(0, 86400))
    arch = shape["arch"]
    labels = {
        "beta.kubernetes.io/arch": arch,
        "beta.kubernetes.io/instance-type": shape["instance"],
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": shape["instance"],
        "topology.kubernetes.io/region": ctx.region,
        "topology.kubernetes.io/zone": zone,
    }
    gpu_key = shape.get("gpu")
    gpus = shape.get("gpus", 0)
    if gpu_key:
        g = GPUS[gpu_key]
        labels.update(
            {
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "nvidia.com/cuda.driver-version.full": DRIVER,
                "nvidia.com/cuda.driver.major": DRIVER.split(".")[0],
                "nvidia.com/cuda.runtime-version.major": "12",
                "nvidia.com/cuda.runtime-version.minor": "4",
                "nvidia.com/gfd.timestamp": str(int((NOW - timedelta(hours=rng.randint(1, 72))).timestamp())),
                "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
                "nvidia.com/gpu.compute.major": g["major"],
                "nvidia.com/gpu.compute.minor": g["minor"],
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.deploy.device-plugin": "true",
                "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
                "nvidia.com/gpu.family": g["family"],
                "nvidia.com/gpu.machine": g["machine"],
                "nvidia.com/gpu.memory": str(g["memory"]),
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": g["product"],
                "nvidia.com/gpu.replicas": str(replicas or 1),
                "nvidia.com/gpu.sharing-strategy": "time-slicing" if replicas else "none",
                "nvidia.com/mig.capable": "true" if gpu_key in ("A100", "H100", "GB200") else "false",
            }
        )
        if gpu_key in ("A100", "H100", "GB200"):
            labels["nvidia.com/mig.strategy"] = "mixed" if mig else "single"
        if gpu_key == "GB200":
            labels["nvidia.com/gpu.clique"] = f"nvl72-{ctx.cluster}-{zone}.1"
    if extra_labels:
        labels.update(extra_labels)

    mem_ki = shape["mem_gi"] * GI_KI + rng.randint(0, 400_000)
    disk_ki = shape["disk_gi"] * GI_KI + rng.randint(0, 900_000)
    capacity = {
        "cpu": str(shape["cpu"]),
        "ephemeral-storage": f"{disk_ki}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki}Ki",
        "pods": str(shape["pods"]),
    }
    reserved_cpu = 500 if shape["cpu"] <= 64 else 1000 if shape["cpu"] <= 128 else 1500
    allocatable = {
        "cpu": cpu_q(shape["cpu"] * 1000 - reserved_cpu),
        "ephemeral-storage": str(int(disk_ki * KI * 0.9)),
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki - min(mem_ki // 50, 16 * GI_KI) - 102400}Ki",
        "pods": str(shape["pods"]),
    }
    if gpu_key:
        phys = gpus
        if mig:
            labels.update({"nvidia.com/mig.config": mig["config"], "nvidia.com/mig.config.state": "success"})
            capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = "0"
            for profile, count in mig["devices"].items():
                capacity[f"nvidia.com/{profile}"] = allocatable[f"nvidia.com/{profile}"] = str(count)
                labels[f"nvidia.com/{profile}.count"] = str(count)
                labels[f"nvidia.com/{profile}.product"] = f"{GPUS[gpu_key]['product']}-MIG-{profile[4:]}"
                labels[f"nvidia.com/{profile}.memory"] = {"mig-1g.10gb": "9728", "mig-3g.40gb": "39936"}[profile]
        else:
            n = phys * (replicas or 1)
            capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(n)

    def cond(ctype, status, reason, message, hb_age=20):
        hb = NOW - timedelta(seconds=rng.randint(5, hb_age))
        return {
            "lastHeartbeatTime": ts(hb),
            "lastTransitionTime": ts(created + timedelta(minutes=3)),
            "message": message,
            "reason": reason,
            "status": status,
            "type": ctype,
        }

    if ready == "True":
        ready_cond = cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")
        pressure = "False"
    elif ready == "False":
        ready_cond = cond(
            "Ready",
            "False",
            "KubeletNotReady",
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
            "message:Network plugin returns error: cni plugin not initialized",
        )
        ready_cond["lastTransitionTime"] = ts(NOW - timedelta(minutes=47))
        pressure = "False"
    else:  # Unknown
        ready_cond = cond("Ready", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
        ready_cond["lastHeartbeatTime"] = ts(NOW - timedelta(hours=3, minutes=12))
        ready_cond["lastTransitionTime"] = ts(NOW - timedelta(hours=3, minutes=11))
        pressure = "Unknown"
    conditions = [
        cond(
            "MemoryPressure",
            pressure,
            "KubeletHasSufficientMemory" if pressure == "False" else "NodeStatusUnknown",
            "kubelet has sufficient memory available"
            if pressure == "False"
            else "Kubelet stopped posting node status.",
        ),
        cond(
            "DiskPressure",
            pressure,
            "KubeletHasNoDiskPressure" if pressure == "False" else "NodeStatusUnknown",
            "kubelet has no disk pressure" if pressure == "False" else "Kubelet stopped posting node status.",
        ),
        cond(
            "PIDPressure",
            pressure,
            "KubeletHasSufficientPID" if pressure == "False" else "NodeStatusUnknown",
            "kubelet has sufficient PID available" if pressure == "False" else "Kubelet stopped posting node status.",
        ),
        ready_cond,
    ]
    idx = len(ctx.node_ip)
    ip = f"10.{ctx.subnet}.{idx // 200 + 1}.{idx % 200 + 10}"
    ctx.node_ip[name] = ip
    spec = {"podCIDR": f"10.{ctx.subnet + 100}.{idx}.0/24", "podCIDRs": [f"10.{ctx.subnet + 100}.{idx}.0/24"]}
    if ctx.region.startswith("us-central") and not name.startswith("cpu-sys"):
        spec["providerID"] = f"gce://osmo-demo/{zone}/{name}"
    elif ctx.region.startswith("us-west-2"):
        spec["providerID"] = f"aws:///{zone}/i-0{ctx.hexid(16)}"
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    annotations = {
        "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.tigera.io": name}, separators=(",", ":")),
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if gpu_key:
        annotations["nvidia.com/gpu-driver-upgrade-enabled"] = "true"
    if unschedulable:
        annotations["osmo.nvidia.com/cordon-reason"] = "RMA: Xid 79 (GPU fell off the bus) on GPU 3"
    kernel = "6.8.0-1015-nvidia-64k" if arch == "arm64" else "5.15.0-124-generic"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": annotations,
            "creationTimestamp": ts(created),
            "labels": dict(sorted(labels.items())),
            "name": name,
            "resourceVersion": ctx.resource_version(),
            "uid": ctx.uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": arch,
                "bootID": ctx.uid(),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": kernel,
                "kubeProxyVersion": "v1.30.6",
                "kubeletVersion": "v1.30.6",
                "machineID": ctx.hexid(32),
                "operatingSystem": "linux",
                "osImage": "Ubuntu 22.04.5 LTS",
                "systemUUID": ctx.uid(),
            },
        },
    }
    return node


def node_state(node):
    """Budget tracker for packing pods onto a node."""
    alloc = node["status"]["allocatable"]
    return {
        "name": node["metadata"]["name"],
        "cpu": cpu_millis(alloc["cpu"]),
        "mem": mem_bytes(alloc["memory"]),
        "gpu": int(alloc.get("nvidia.com/gpu", "0")),
        "mig": {k[len("nvidia.com/") :]: int(v) for k, v in alloc.items() if k.startswith("nvidia.com/mig-")},
        "labels": node["metadata"]["labels"],
        "available": (not node["spec"].get("unschedulable")) and node["status"]["conditions"][-1]["status"] == "True",
        "cordoned": bool(node["spec"].get("unschedulable")),
    }


# ---------------------------------------------------------------------------
# Pods
# ---------------------------------------------------------------------------
USERS = ["alice", "bob", "carol", "dmitri", "eun-ji", "farah", "gopal", "hana", "ivan", "julia", "kenji", "lena"]
OSMO_IMAGE = "nvcr.io/nvidia/osmo/osmo-ctrl:6.0.1"
INIT_IMAGE = "nvcr.io/nvidia/osmo/osmo-init:6.0.1"


def container(name, image, requests, limits=None, command=None, env=None, mounts=None):
    c = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {"limits": dict(limits if limits is not None else requests), "requests": dict(requests)},
    }
    if command:
        c["command"] = command
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env]
    if mounts:
        c["volumeMounts"] = mounts
    return c


def container_status(ctx, c, phase, started, *, init=False, exit_code=0, reason="Completed"):
    image = c["image"]
    st = {
        "containerID": f"containerd://{ctx.hexid(64)}",
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{ctx.hexid(64)}",
        "name": c["name"],
        "ready": False,
        "restartCount": 0,
        "started": False,
    }
    if init or phase in ("Succeeded", "Failed"):
        fin = started + timedelta(seconds=ctx.rng.randint(20, 600) if init else ctx.rng.randint(1800, 20000))
        st["state"] = {
            "terminated": {
                "containerID": st["containerID"],
                "exitCode": exit_code,
                "finishedAt": ts(fin),
                "reason": reason,
                "startedAt": ts(started),
            }
        }
    elif phase == "Running":
        st.update(ready=True, started=True)
        st["state"] = {"running": {"startedAt": ts(started + timedelta(seconds=90))}}
    else:  # Pending on a node
        del st["containerID"]
        st["imageID"] = ""
        st["state"] = {"waiting": {"reason": "ContainerCreating"}}
    return st


def make_pod(
    ctx: Ctx,
    *,
    name,
    ns,
    node,
    phase,
    labels,
    containers,
    init_containers=(),
    node_selector=None,
    tolerations=(),
    affinity=None,
    priority_class=None,
    overhead=None,
    runtime_class=None,
    volumes=None,
    age_min=None,
    unschedulable_msg=None,
    fail=None,
    owner=None,
):
    rng = ctx.rng
    age_min = age_min if age_min is not None else rng.randint(5, 60 * 30)
    created = NOW - timedelta(minutes=age_min)
    uid = ctx.uid()
    meta = {
        "creationTimestamp": ts(created),
        "labels": dict(sorted(labels.items())),
        "name": name,
        "namespace": ns,
        "resourceVersion": ctx.resource_version(),
        "uid": uid,
    }
    if owner:
        meta["generateName"] = name[:-5]
        meta["ownerReferences"] = [owner]
    if "osmo.workflow_id" in labels:
        meta["annotations"] = {
            "osmo.nvidia.com/workflow-url": f"https://osmo.example.com/workflows/{labels['osmo.workflow_id']}"
        }
    tol = [dict(t) for t in tolerations] + [
        {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
        {
            "effect": "NoExecute",
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "tolerationSeconds": 300,
        },
    ]
    spec = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": {"osmo-low": 100, "osmo-normal": 1000, "osmo-high": 10000}.get(priority_class, 0),
        "restartPolicy": "Never" if owner is None else "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": tol,
    }
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    if priority_class:
        spec["priorityClassName"] = priority_class
    if overhead:
        spec["overhead"] = dict(overhead)
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    if volumes:
        spec["volumes"] = volumes
    if node:
        spec["nodeName"] = node

    # QoS class
    def guaranteed(c):
        r = c["resources"]
        return set(r["requests"]) >= {"cpu", "memory"} and r["requests"] == r["limits"]

    qos = "Guaranteed" if all(guaranteed(c) for c in list(containers) + list(init_containers)) else "Burstable"

    started = created + timedelta(seconds=rng.randint(5, 120))
    status = {"phase": phase, "qosClass": qos}
    if node:
        status["hostIP"] = ctx.node_ip[node]
        status["startTime"] = ts(started)
    if phase == "Pending" and not node:
        status["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": ts(created),
                "message": unschedulable_msg,
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    running = phase == "Running"
    pod_ip = f"10.{ctx.subnet + 100}.{list(ctx.node_ip).index(node)}.{rng.randint(2, 250)}"
    if phase != "Pending":
        status["podIP"] = pod_ip
    t_sched = ts(created + timedelta(seconds=2))
    conds = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": t_sched,
            "status": "True" if phase != "Pending" else "False",
            "type": "Initialized",
        },
        {
            "lastProbeTime": None,
            "lastTransitionTime": ts(started + timedelta(seconds=95)),
            "status": "True" if running else "False",
            "type": "Ready",
        },
        {
            "lastProbeTime": None,
            "lastTransitionTime": ts(started + timedelta(seconds=95)),
            "status": "True" if running else "False",
            "type": "ContainersReady",
        },
        {"lastProbeTime": None, "lastTransitionTime": t_sched, "status": "True", "type": "PodScheduled"},
    ]
    if phase in ("Succeeded", "Failed"):
        for c in conds[1:3]:
            c["reason"] = "PodCompleted" if phase == "Succeeded" else "PodFailed"
    if phase == "Pending":
        conds[0]["reason"] = "ContainersNotInitialized" if init_containers else None
        if conds[0]["reason"] is None:
            conds[0]["status"] = "True"
            del conds[0]["reason"]
        for c in conds[1:3]:
            c["reason"] = "ContainersNotReady"
            c["message"] = "containers with unready status: [" + " ".join(x["name"] for x in containers) + "]"
    status["conditions"] = conds
    if init_containers:
        if phase == "Pending":
            status["initContainerStatuses"] = [
                {
                    "image": c["image"],
                    "imageID": "",
                    "name": c["name"],
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
                for c in init_containers
            ]
        else:
            status["initContainerStatuses"] = [
                container_status(ctx, c, phase, started, init=True) for c in init_containers
            ]
            for s in status["initContainerStatuses"]:
                s["ready"] = True
    statuses = []
    for c in containers:
        if phase == "Failed":
            code, reason = fail or (1, "Error")
            if c["name"] == "osmo-ctrl":
                code, reason = 0, "Completed"
            statuses.append(container_status(ctx, c, phase, started, exit_code=code, reason=reason))
        else:
            statuses.append(container_status(ctx, c, phase, started))
    status["containerStatuses"] = statuses
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


class Workload:
    """How pods of one (pool, platform) look."""

    def __init__(
        self,
        pool,
        platform,
        ns,
        images,
        node_selector,
        tolerations=(),
        affinity=None,
        gpu_sizes=(1,),
        cpu_per_gpu=8,
        mem_per_gpu_gi=32,
        cpu_only=None,
        priority_weights=(1, 6, 1),
        jobs=("train",),
        mig_profile=None,
    ):
        self.__dict__.update(locals())
        del self.__dict__["self"]


def osmo_pod(
    ctx: Ctx,
    wl: Workload,
    *,
    node,
    phase,
    gpus,
    mig=None,
    age_min=None,
    user=None,
    priority=None,
    init_gpu=None,
    overhead=False,
    unschedulable_msg=None,
    fail=None,
):
    rng = ctx.rng
    user = user or rng.choice(USERS)
    priority = priority or rng.choices(["LOW", "NORMAL", "HIGH"], weights=wl.priority_weights)[0]
    job = rng.choice(wl.jobs)
    wf = f"{job}-{ctx.hexid(5)}"
    task = rng.choice(["0", "0", "1", "main", "worker-0", "worker-1"])
    name = f"{wf}-{task}-{ctx.suffix()}"
    if wl.cpu_only:
        cpu_m, mem_gi = wl.cpu_only
        req = {"cpu": cpu_q(cpu_m), "memory": f"{mem_gi}Gi", "ephemeral-storage": "20Gi"}
    else:
        units = gpus if not mig else 1
        cpu_m = int(wl.cpu_per_gpu * 1000 * max(units, 1))
        mem_gi = int(wl.mem_per_gpu_gi * max(units, 1))
        req = {"cpu": cpu_q(cpu_m), "memory": f"{mem_gi}Gi", "ephemeral-storage": "50Gi"}
        if mig:
            req[f"nvidia.com/{mig}"] = "1"
        else:
            req["nvidia.com/gpu"] = str(gpus)
    user_c = container(
        "user",
        rng.choice(wl.images),
        req,
        command=["/bin/bash", "-c", "exec /osmo/run.sh"],
        env=[("OSMO_WORKFLOW_ID", wf), ("OSMO_POOL", wl.pool), ("OSMO_PLATFORM", wl.platform)],
        mounts=[{"mountPath": "/dev/shm", "name": "dshm"}, {"mountPath": "/osmo", "name": "osmo-data"}],
    )
    ctrl_c = container(
        "osmo-ctrl",
        OSMO_IMAGE,
        {"cpu": "100m", "memory": "256Mi"},
        {"cpu": "500m", "memory": "512Mi"},
        command=["/osmo/ctrl"],
        mounts=[{"mountPath": "/osmo", "name": "osmo-data"}],
    )
    inits = [
        container(
            "osmo-init",
            INIT_IMAGE,
            {"cpu": "100m", "memory": "128Mi"},
            {"cpu": "500m", "memory": "256Mi"},
            command=["/osmo/init", "--download-inputs"],
            mounts=[{"mountPath": "/osmo", "name": "osmo-data"}],
        )
    ]
    if init_gpu:
        inits.append(
            container(
                "gpu-preflight",
                "nvcr.io/nvidia/cloud-native/dcgm:3.3.8-1-ubuntu22.04",
                {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": str(init_gpu)},
                command=["dcgmi", "diag", "-r", "2"],
            )
        )
    labels = {
        "app.kubernetes.io/managed-by": "osmo",
        "osmo.pool": wl.pool,
        "osmo.platform": wl.platform,
        "osmo.priority": priority,
        "osmo.user": user,
        "osmo.workflow_id": wf,
    }
    shm = "8Gi" if wl.cpu_only else f"{min(mem_gi // 2, 64)}Gi"
    volumes = [
        {"emptyDir": {"medium": "Memory", "sizeLimit": shm}, "name": "dshm"},
        {"emptyDir": {}, "name": "osmo-data"},
    ]
    pc = {"LOW": "osmo-low", "NORMAL": "osmo-normal", "HIGH": "osmo-high"}[priority]
    pod = make_pod(
        ctx,
        name=name,
        ns=wl.ns,
        node=node,
        phase=phase,
        labels=labels,
        containers=[user_c, ctrl_c],
        init_containers=inits,
        node_selector=wl.node_selector,
        tolerations=wl.tolerations,
        affinity=wl.affinity,
        priority_class=pc,
        overhead={"cpu": "250m", "memory": "160Mi"} if overhead else None,
        runtime_class="kata-qemu" if overhead else None,
        volumes=volumes,
        age_min=age_min,
        unschedulable_msg=unschedulable_msg,
        fail=fail,
    )
    return pod


def pod_usage(pod):
    """Effective requests (cpu millis, mem bytes, gpu, mig dict) per Kubernetes rules."""

    def total(cs):
        cpu = mem = gpu = 0
        mig = {}
        for c in cs:
            r = c["resources"].get("requests", {})
            cpu += cpu_millis(r.get("cpu", "0"))
            mem += mem_bytes(r.get("memory", "0"))
            gpu += int(r.get("nvidia.com/gpu", "0"))
            for k, v in r.items():
                if k.startswith("nvidia.com/mig-"):
                    mig[k[11:]] = mig.get(k[11:], 0) + int(v)
        return cpu, mem, gpu, mig

    app = total(pod["spec"]["containers"])
    inits = [total([c]) for c in pod["spec"].get("initContainers", [])]
    cpu = max([app[0]] + [i[0] for i in inits])
    mem = max([app[1]] + [i[1] for i in inits])
    gpu = max([app[2]] + [i[2] for i in inits])
    oh = pod["spec"].get("overhead", {})
    cpu += cpu_millis(oh.get("cpu", "0"))
    mem += mem_bytes(oh.get("memory", "0"))
    return cpu, mem, gpu, app[3]


def charge(st, pod):
    cpu, mem, gpu, mig = pod_usage(pod)
    st["cpu"] -= cpu
    st["mem"] -= mem
    st["gpu"] -= gpu
    for k, v in mig.items():
        st["mig"][k] -= v
    assert st["cpu"] >= 0 and st["mem"] >= 0 and st["gpu"] >= 0 and all(v >= 0 for v in st["mig"].values()), (
        f"over-committed {st['name']}: {st}"
    )


def fits(st, wl, gpus, mig=None):
    cpu_need = wl.cpu_per_gpu * 1000 * max(gpus, 1) + 700
    mem_need = wl.mem_per_gpu_gi * GI * max(gpus, 1) + GI
    if wl.cpu_only:
        cpu_need, mem_need = wl.cpu_only[0] + 700, wl.cpu_only[1] * GI + GI
    if mig:
        return st["mig"].get(mig, 0) >= 1 and st["cpu"] >= cpu_need and st["mem"] >= mem_need
    return st["gpu"] >= gpus and st["cpu"] >= cpu_need and st["mem"] >= mem_need


def daemon_pod(ctx, node_name, ds, ns, image, req, uid_owner, tolerations):
    name = f"{ds}-{ctx.suffix()}"
    c = container(ds.split("-daemonset")[0], image, req, {"memory": req["memory"]} if "memory" in req else {})
    owner = {
        "apiVersion": "apps/v1",
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": "DaemonSet",
        "name": ds,
        "uid": uid_owner,
    }
    labels = {
        "app": ds.split("-daemonset")[0],
        "controller-revision-hash": ctx.hexid(10),
        "pod-template-generation": "3",
    }
    p = make_pod(
        ctx,
        name=name,
        ns=ns,
        node=node_name,
        phase="Running",
        labels=labels,
        containers=[c],
        tolerations=tolerations,
        priority_class="system-node-critical",
        age_min=ctx.rng.randint(3000, 40000),
        owner=owner,
    )
    p["spec"]["priority"] = 2000001000
    return p


def fill_cluster(ctx: Ctx, nodes, workloads, *, target=(0.35, 0.95), idle_prob=0.1, extra=None):
    """Pack osmo pods onto nodes. ``workloads`` maps node-name -> Workload."""
    rng = ctx.rng
    states = {n["metadata"]["name"]: node_state(n) for n in nodes}
    pods = []
    # GPU node daemonsets
    dp_uid = ctx.uid()
    for n in nodes:
        name = n["metadata"]["name"]
        st = states[name]
        if "nvidia.com/gpu.present" in st["labels"]:
            tol = [{"operator": "Exists"}]
            for ds, img, req, uo in (
                (
                    "nvidia-device-plugin-daemonset",
                    "nvcr.io/nvidia/k8s-device-plugin:v0.16.2",
                    {"cpu": "50m", "memory": "64Mi"},
                    dp_uid,
                ),
            ):
                p = daemon_pod(ctx, name, ds, "gpu-operator", img, req, uo, tol)
                if st["labels"]["kubernetes.io/arch"] == "arm64":
                    p["spec"]["nodeSelector"] = {"kubernetes.io/arch": "arm64"}
                if n["status"]["conditions"][-1]["status"] != "True":
                    p["status"]["conditions"][1]["status"] = "False"
                    p["status"]["containerStatuses"][0]["ready"] = False
                charge(st, p)
                pods.append(p)
    for n in nodes:
        name = n["metadata"]["name"]
        st = states[name]
        wl = workloads.get(name)
        if wl is None or n["status"]["conditions"][-1]["status"] != "True":
            continue
        if st["mig"]:
            total = sum(st["mig"].values())
            want = int(total * rng.uniform(*target))
            for _ in range(want):
                choices = [k for k, v in st["mig"].items() if v > 0]
                prof = rng.choice(choices)
                if not fits(st, wl, 1, prof):
                    break
                p = osmo_pod(ctx, wl, node=name, phase="Running", gpus=0, mig=prof)
                charge(st, p)
                pods.append(p)
            continue
        if wl.cpu_only:
            cap_cpu = st["cpu"]
            want_cpu = cap_cpu * rng.uniform(*target)
            while st["cpu"] > cap_cpu - want_cpu and fits(st, wl, 0):
                p = osmo_pod(ctx, wl, node=name, phase="Running", gpus=0)
                charge(st, p)
                pods.append(p)
            continue
        cap = st["gpu"]
        if rng.random() < idle_prob and not st["cordoned"]:
            continue
        want = max(1, round(cap * rng.uniform(*target)))
        used = 0
        while used < want:
            sizes = [g for g in wl.gpu_sizes if g <= want - used and fits(st, wl, g)]
            if not sizes:
                break
            g = rng.choice(sizes)
            p = osmo_pod(ctx, wl, node=name, phase=rng.choices(["Running", "Pending"], weights=(30, 1))[0], gpus=g)
            charge(st, p)
            pods.append(p)
            used += g
    # Finished pods (never counted), spread across GPU/CPU nodes
    for _ in range(max(3, len(nodes) // 3)):
        name = rng.choice([n for n in workloads])
        wl = workloads[name]
        st = states[name]
        phase = rng.choices(["Succeeded", "Failed"], weights=(3, 1))[0]
        fail = rng.choice([(137, "OOMKilled"), (1, "Error"), (143, "Error")])
        if st["mig"]:
            p = osmo_pod(ctx, wl, node=name, phase=phase, gpus=0, mig=next(iter(st["mig"])), fail=fail)
        else:
            g = 0 if wl.cpu_only else max(wl.gpu_sizes)
            p = osmo_pod(ctx, wl, node=name, phase=phase, gpus=g, fail=fail, age_min=rng.randint(600, 4000))
        pods.append(p)
    return states, pods


def unsched(wl, total, gpus, why):
    return (
        f"0/{total} nodes are available: {why}. preemption: 0/{total} nodes are available: "
        f"{total} No preemption victims found for incoming pod."
    )


def write_list(path: Path, nodes, pods):
    # Same document as `kubectl get nodes,pods -A -o json`, written one object per line
    # (compact but diff-friendly); any JSON parser reads it identically.
    lines = [json.dumps(item, separators=(",", ":")) for item in nodes + pods]
    path.write_text(
        '{"apiVersion":"v1","items":[\n' + ",\n".join(lines) + '\n],"kind":"List","metadata":{"resourceVersion":""}}\n'
    )


def summarize(name, nodes, pods, states):
    cap = sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) for n in nodes if node_state(n)["available"])
    used = 0
    for p in pods:
        if p["status"]["phase"] in ("Succeeded", "Failed") or not p["spec"].get("nodeName"):
            continue
        if not states[p["spec"]["nodeName"]]["available"]:
            continue
        used += pod_usage(p)[2]
    pct = 100 * used / cap if cap else 0
    print(
        f"{name:24s} nodes={len(nodes):3d} pods={len(pods):4d} gpu used/cap (available nodes) "
        f"= {used}/{cap} ({pct:.0f}%)"
    )


# ---------------------------------------------------------------------------
# Clusters
# ---------------------------------------------------------------------------
TRAIN_IMAGES = ["nvcr.io/nvidia/pytorch:24.10-py3", "nvcr.io/nvidia/nemo:24.09", "nvcr.io/robotics/gr00t-train:1.2.0"]
SIM_IMAGES = [
    "nvcr.io/nvidia/isaac-sim:4.2.0",
    "nvcr.io/nvidia/isaac-lab:1.4.0",
    "nvcr.io/nvidia/cosmos/cosmos-predict:1.0",
]
INF_IMAGES = ["nvcr.io/nvidia/tritonserver:24.10-py3", "nvcr.io/nvidia/tensorrt:24.10-py3"]
DEV_IMAGES = ["nvcr.io/nvidia/pytorch:24.10-py3", "jupyter/scipy-notebook:2024-10-07", "python:3.11-slim"]


def gpu_cluster_01(rng):
    ctx = Ctx(rng, "gpu-cluster-01", "dc-santaclara", ["sc1-hall2-row-a", "sc1-hall2-row-b"], 21)
    nodes = []
    for i in range(1, 9):
        nodes.append(
            make_node(
                ctx,
                f"h100-a-{i:03d}",
                "dgx-h100",
                taints=[product_taint("H100")],
                zone="sc1-hall2-row-a",
                ready="Unknown" if i == 6 else "True",
            )
        )
    for i in range(1, 9):
        mig = None
        if i == 7:
            mig = {"config": "custom-1x7g-7x2g", "devices": {"mig-1g.10gb": 7, "mig-3g.40gb": 14}}
        if i == 8:
            mig = {"config": "all-1g.10gb", "devices": {"mig-1g.10gb": 56}}
        nodes.append(
            make_node(
                ctx,
                f"a100-b-{i:03d}",
                "dgx-a100",
                taints=[product_taint("A100")],
                zone="sc1-hall2-row-b",
                mig=mig,
                unschedulable=(i == 5),
            )
        )
    for i in range(1, 5):
        nodes.append(
            make_node(ctx, f"gb200-c-{i:03d}", "gb200-tray", taints=[product_taint("GB200")], zone="sc1-hall2-row-a")
        )
    for i in range(1, 5):
        nodes.append(
            make_node(
                ctx,
                f"cpu-sys-{i:03d}",
                "cpu-sys",
                taints=[{"key": "dedicated", "value": "system", "effect": "NoSchedule"}],
            )
        )
    sel_amd = {"kubernetes.io/arch": "amd64"}
    h100 = Workload(
        "robotics-training",
        "h100-platform",
        "robotics",
        TRAIN_IMAGES,
        {**sel_amd, "nvidia.com/gpu.product": GPUS["H100"]["product"]},
        [dict(product_taint("H100"), operator="Equal")],
        gpu_sizes=(1, 2, 4, 8, 8),
        cpu_per_gpu=16,
        mem_per_gpu_gi=128,
        jobs=("gr00t-pretrain", "vla-finetune", "policy-distill"),
    )
    a100 = Workload(
        "robotics-training",
        "a100-platform",
        "robotics",
        TRAIN_IMAGES,
        {**sel_amd, "nvidia.com/gpu.product": GPUS["A100"]["product"]},
        [dict(product_taint("A100"), operator="Equal")],
        gpu_sizes=(1, 2, 4, 8),
        cpu_per_gpu=16,
        mem_per_gpu_gi=80,
        jobs=("policy-train", "bc-train", "eval-sweep"),
    )
    gb200_aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-GB200"]}
                        ]
                    }
                ]
            }
        }
    }
    gb200 = Workload(
        "robotics-training",
        "gb200-platform",
        "robotics",
        TRAIN_IMAGES,
        {"kubernetes.io/arch": "arm64"},
        [dict(product_taint("GB200"), operator="Equal")],
        affinity=gb200_aff,
        gpu_sizes=(2, 4),
        cpu_per_gpu=32,
        mem_per_gpu_gi=200,
        jobs=("world-model-pretrain",),
        priority_weights=(0, 3, 2),
    )
    wmap = {}
    for n in nodes:
        nm = n["metadata"]["name"]
        wmap.update(
            {nm: h100}
            if nm.startswith("h100")
            else {nm: a100}
            if nm.startswith("a100")
            else {nm: gb200}
            if nm.startswith("gb200")
            else {}
        )
    states, pods = fill_cluster(ctx, nodes, wmap, target=(0.4, 1.0))
    # Specials: a GPU preflight init container (effective GPU = max(init, sum(app)))
    for nm in ("h100-a-002", "h100-a-007", "h100-a-001", "h100-a-003"):
        st = states[nm]
        if st["gpu"] >= 2 and fits(st, h100, 1):
            p = osmo_pod(ctx, h100, node=nm, phase="Running", gpus=1, init_gpu=2, priority="HIGH")
            charge(st, p)
            pods.append(p)
            break
    # a non-OSMO pod (no pool label) eating a GPU
    for nm in ("h100-a-004", "h100-a-008", "h100-a-005", "a100-b-001"):
        st = states[nm]
        if st["gpu"] >= 1 and st["cpu"] > 9000:
            c = container(
                "notebook", "nvcr.io/nvidia/pytorch:24.10-py3", {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
            )
            tols = [dict(product_taint(st["labels"]["nvidia.com/gpu.product"].split("-")[1][:4]), operator="Equal")]
            p = make_pod(
                ctx,
                name="jupyter-mkovacs-0",
                ns="research",
                node=nm,
                phase="Running",
                labels={"app": "jupyter", "statefulset.kubernetes.io/pod-name": "jupyter-mkovacs-0"},
                containers=[c],
                tolerations=tols,
                age_min=60 * 52,
            )
            charge(st, p)
            pods.append(p)
            break
    # Pending without a node
    pods.append(
        osmo_pod(
            ctx,
            h100,
            node=None,
            phase="Pending",
            gpus=8,
            priority="NORMAL",
            age_min=42,
            unschedulable_msg=unsched(
                h100,
                24,
                8,
                "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, "
                "1 node(s) were unschedulable, 4 node(s) had untolerated taint "
                "{dedicated: system}, 7 Insufficient nvidia.com/gpu, 12 node(s) "
                "didn't match Pod's node affinity/selector",
            ),
        )
    )
    pods.append(
        osmo_pod(
            ctx,
            gb200,
            node=None,
            phase="Pending",
            gpus=4,
            priority="HIGH",
            age_min=13,
            unschedulable_msg=unsched(
                gb200, 24, 4, "4 Insufficient nvidia.com/gpu, 20 node(s) didn't match Pod's node affinity/selector"
            ),
        )
    )
    pods.append(
        osmo_pod(
            ctx,
            a100,
            node=None,
            phase="Pending",
            gpus=4,
            priority="LOW",
            age_min=95,
            unschedulable_msg=unsched(
                a100,
                24,
                4,
                "1 node(s) were unschedulable, 7 Insufficient nvidia.com/gpu, "
                "16 node(s) didn't match Pod's node affinity/selector",
            ),
        )
    )
    return ctx, nodes, pods, states


def graphics_cluster_01(rng):
    ctx = Ctx(rng, "graphics-cluster-01", "dc-austin", ["aus1-pod-1", "aus1-pod-2"], 22)
    sim_taint = {"key": "dedicated", "value": "simulation", "effect": "NoSchedule"}
    nodes = []
    for i in range(1, 7):
        nodes.append(
            make_node(ctx, f"l40-s-{i:03d}", "ovx-l40", taints=[sim_taint], ready="False" if i == 3 else "True")
        )
    for i in range(1, 6):
        nodes.append(
            make_node(
                ctx,
                f"l40s-s-{i:03d}",
                "l40s-8x",
                taints=[sim_taint, product_taint("L40S")],
                replicas=4 if i == 5 else None,
            )
        )
    nodes.append(make_node(ctx, "cpu-sim-001", "cpu-sim"))
    sim_tol = [dict(sim_taint, operator="Equal")]
    l40 = Workload(
        "robotics-simulation",
        "l40-platform",
        "sim",
        SIM_IMAGES,
        {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-L40"},
        sim_tol,
        gpu_sizes=(1, 1, 2, 4),
        cpu_per_gpu=8,
        mem_per_gpu_gi=32,
        jobs=("isaac-sim-sdg", "warehouse-sim", "replicator-render"),
        priority_weights=(3, 6, 1),
    )
    l40s = Workload(
        "robotics-simulation",
        "l40s-platform",
        "sim",
        SIM_IMAGES,
        {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-L40S"},
        sim_tol + [dict(product_taint("L40S"), operator="Equal")],
        gpu_sizes=(1, 2, 4),
        cpu_per_gpu=8,
        mem_per_gpu_gi=48,
        jobs=("isaac-lab-rl", "cosmos-transfer", "humanoid-sim"),
        priority_weights=(3, 6, 1),
    )
    l40s_ts = Workload(
        "robotics-simulation",
        "l40s-platform",
        "sim",
        SIM_IMAGES,
        l40s.node_selector,
        l40s.tolerations,
        gpu_sizes=(1,),
        cpu_per_gpu=4,
        mem_per_gpu_gi=16,
        jobs=("isaac-lab-eval",),
        priority_weights=(5, 3, 0),
    )
    wmap = {}
    for n in nodes:
        nm = n["metadata"]["name"]
        if nm.startswith("l40-"):
            wmap[nm] = l40
        elif nm == "l40s-s-005":
            wmap[nm] = l40s_ts
        elif nm.startswith("l40s"):
            wmap[nm] = l40s
    states, pods = fill_cluster(ctx, nodes, wmap, target=(0.3, 0.9))
    pods.append(
        osmo_pod(
            ctx,
            l40s,
            node=None,
            phase="Pending",
            gpus=4,
            priority="NORMAL",
            age_min=7,
            unschedulable_msg=unsched(
                l40s,
                12,
                4,
                "5 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint "
                "{node.kubernetes.io/not-ready: }, 6 node(s) didn't match Pod's "
                "node affinity/selector",
            ),
        )
    )
    return ctx, nodes, pods, states


def inference_cluster_01(rng):
    ctx = Ctx(rng, "inference-cluster-01", "us-central1", ["us-central1-a", "us-central1-b", "us-central1-c"], 23)
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    nodes = []
    for i in range(1, 7):
        nodes.append(
            make_node(
                ctx,
                f"t4-i-{i:03d}",
                "n1-t4",
                taints=[gpu_taint],
                extra_labels={
                    "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                    "cloud.google.com/gke-nodepool": "t4-pool",
                },
            )
        )
    for i in range(1, 5):
        nodes.append(
            make_node(ctx, f"cpu-i-{i:03d}", "n2-cpu", extra_labels={"cloud.google.com/gke-nodepool": "cpu-pool"})
        )
    t4 = Workload(
        "robotics-inference",
        "t4-platform",
        "infer",
        INF_IMAGES,
        {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "Tesla-T4"},
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        gpu_sizes=(1, 1, 2),
        cpu_per_gpu=4,
        mem_per_gpu_gi=24,
        jobs=("triton-bench", "policy-eval"),
        priority_weights=(1, 5, 3),
    )
    cpu_aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "DoesNotExist"}]}
                ]
            }
        }
    }
    cpu = Workload(
        "robotics-inference",
        "cpu-platform",
        "infer",
        INF_IMAGES,
        {"kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "n2-standard-32"},
        affinity=cpu_aff,
        cpu_only=(4000, 16),
        jobs=("onnx-batch-infer", "tokenize"),
    )
    wmap = {n["metadata"]["name"]: (t4 if n["metadata"]["name"].startswith("t4") else cpu) for n in nodes}
    states, pods = fill_cluster(ctx, nodes, wmap, target=(0.4, 0.9))
    pods.append(
        osmo_pod(
            ctx,
            cpu,
            node=None,
            phase="Pending",
            gpus=0,
            age_min=3,
            unschedulable_msg=unsched(
                cpu, 10, 0, "4 Insufficient cpu, 6 node(s) didn't match Pod's node affinity/selector"
            ),
        )
    )
    return ctx, nodes, pods, states


def dev_cluster_01(rng):
    ctx = Ctx(rng, "dev-cluster-01", "us-west-2", ["us-west-2a", "us-west-2b"], 24)
    nodes = []
    for i in range(1, 4):
        nodes.append(
            make_node(
                ctx,
                f"a10g-d-{i:03d}",
                "g5",
                taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                extra_labels={"eks.amazonaws.com/nodegroup": "dev-gpu"},
            )
        )
    for i in range(1, 6):
        nodes.append(
            make_node(
                ctx,
                f"cpu-d-{i:03d}",
                "m6i",
                unschedulable=(i == 4),
                extra_labels={"eks.amazonaws.com/nodegroup": "dev-cpu"},
            )
        )
    gpu = Workload(
        "team-development",
        "small-gpu",
        "team-a",
        DEV_IMAGES,
        {"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-A10G"},
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        gpu_sizes=(1,),
        cpu_per_gpu=4,
        mem_per_gpu_gi=16,
        jobs=("notebook", "unit-test", "debug"),
        priority_weights=(4, 5, 0),
    )
    cpu = Workload(
        "team-development",
        "cpu-only",
        "team-a",
        DEV_IMAGES,
        {"kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m6i.4xlarge"},
        cpu_only=(2000, 8),
        jobs=("lint", "unit-test", "data-prep"),
        priority_weights=(4, 5, 0),
    )
    wmap = {n["metadata"]["name"]: (gpu if n["metadata"]["name"].startswith("a10g") else cpu) for n in nodes}
    states, pods = fill_cluster(ctx, nodes, wmap, target=(0.3, 0.8), idle_prob=0)
    # A sandboxed (Kata) pod with RuntimeClass overhead
    st = states["cpu-d-002"]
    p = osmo_pod(ctx, cpu, node="cpu-d-002", phase="Running", gpus=0, overhead=True, user="julia")
    if st["cpu"] < 3000:
        p = osmo_pod(ctx, cpu, node="cpu-d-005", phase="Running", gpus=0, overhead=True, user="julia")
        st = states["cpu-d-005"]
    charge(st, p)
    pods.append(p)
    return ctx, nodes, pods, states


def default_backend(rng):
    ctx = Ctx(rng, "default", "dc-santaclara", ["sc1-hall1-row-c"], 25)
    nodes = []
    for i in range(1, 5):
        nodes.append(make_node(ctx, f"l40s-d-{i:03d}", "l40s-4x"))
    for i in range(1, 5):
        nodes.append(
            make_node(
                ctx, f"a100-d-{i:03d}", "dgx-a100", taints=[product_taint("A100")], ready="False" if i == 4 else "True"
            )
        )
    l40s = Workload(
        "heterogeneous_pool",
        "l40s_platform",
        "team-b",
        SIM_IMAGES,
        {"nvidia.com/gpu.product": "NVIDIA-L40S"},
        gpu_sizes=(1, 2),
        cpu_per_gpu=4,
        mem_per_gpu_gi=16,
        jobs=("render", "sdg"),
        priority_weights=(2, 6, 1),
    )
    a100 = Workload(
        "heterogeneous_pool",
        "a100_platform",
        "team-b",
        TRAIN_IMAGES,
        {"nvidia.com/gpu.product": GPUS["A100"]["product"]},
        [dict(product_taint("A100"), operator="Equal")],
        gpu_sizes=(1, 2, 4, 8),
        cpu_per_gpu=8,
        mem_per_gpu_gi=64,
        jobs=("finetune", "eval"),
        priority_weights=(2, 6, 1),
    )
    wmap = {n["metadata"]["name"]: (l40s if n["metadata"]["name"].startswith("l40s") else a100) for n in nodes}
    states, pods = fill_cluster(ctx, nodes, wmap, target=(0.3, 0.9), idle_prob=0.15)
    return ctx, nodes, pods, states


def main():
    rng = random.Random(SEED)
    for backend, fn in (
        ("gpu-cluster-01", gpu_cluster_01),
        ("graphics-cluster-01", graphics_cluster_01),
        ("inference-cluster-01", inference_cluster_01),
        ("dev-cluster-01", dev_cluster_01),
        ("default", default_backend),
    ):
        ctx, nodes, pods, states = fn(rng)
        pods.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
        write_list(OUT_DIR / f"inventory-{backend}.json", nodes, pods)
        summarize(backend, nodes, pods, states)


if __name__ == "__main__":
    main()
