"""A fleet over time: its nodes go down and come back, its jobs' pods come and go, all from a seed.

Everything is a pure function of (seed, nodes, time): there is no hidden state, so two processes that ask for the
state at the same time get the same objects, and ``events(since, until)`` is exactly the difference between
``state(since)`` and ``state(until)``. ``snapshot`` is one still picture with exactly as many pods as asked.

The model:

* Time is cut into ticks of ``tick_seconds``; ``state(now)`` is the state at the start of now's tick and its
  resourceVersion is the tick number. An object's ``metadata.resourceVersion`` is the tick at which it last changed.
* Each node's time is cut into epochs of a few minutes; in a few epochs (chosen by hash) it is NotReady, Unknown
  or cordoned for part of the epoch, so about 2-3 % of the nodes are unavailable at any time. A node that is
  unavailable in the objects the fleet is built from stays so, without jobs.
* Each node's GPUs (MIG devices, time-sliced replicas) and part of its CPUs are divided into lanes. A lane's time
  is cut into epochs of its own length (20-240 s; with ``long_gpu_jobs``, that share of the GPU lanes has epochs
  of 20-80 minutes, long enough for a job to sit idle past Run:ai's 5-minute rule); in a busy epoch (chosen by
  hash) one pod runs on the lane for
  most of the epoch: Pending for its first seconds, then Running, then gone. A pod only starts on an available
  node. One pod per lane at a time, so a node's requests never exceed its allocatable resources.
* Every node also runs a few static system pods (kube-proxy, node-exporter, the GPU operator's daemonsets).
* Standing workloads (``workloads``, the Pod objects of a blueprint) come back run after run, each run lasting 1-4
  hours: one bound to a node runs there, its requests kept off the node's lanes; one bound to no node waits,
  Pending and unschedulable, for the whole run (a backlog the fleet never drains). Jobs' namespaces are drawn by
  the shares ``namespaces`` gives them, so a fleet can be busier for some teams than for others.

Results are memoised (the last ``pods()`` call's objects, each node's last object, the jobs of the last two
times), which changes nothing but speed. Returned objects share parts with each other and between calls: treat
them as read-only, ``copy.deepcopy`` them before changing anything.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pools.engine.accounting import pod_resource_requests
from pools.engine.errors import QuantityError
from pools.engine.quantities import parse_quantity
from pools.inventory.records import paused_gc

from . import pods as objects
from .catalogue import GPU, MIG_PREFIX
from .nodes import NOT_READY_MESSAGE, UNKNOWN_MESSAGE, catalogue_nodes, grown
from .streams import BASE_TIME, C1, C2, GOLD, MASK, Stream, iso, key, mix, parse_iso, suffix, uid

# Node availability: a node epoch is 180-600 s; with probability _DOWN_THRESHOLD / 65536 the node is down for
# 30-60 % of the epoch (starting 5-35 % into it). 0.055 * 0.45 = about 2.5 % of the nodes down at any time.
_DOWN_THRESHOLD = 3600
_NODE_LOOKBACK = 2000  # epochs searched back for a node's last transition (P(no down in 2000) ~ 1e-49)
# Fleet-wide load wave: the busy probability of every lane is scaled by 0.75-1.0 along a 40-minute triangle wave.
_WAVE_PERIOD = 2400
_GI = 1024**3
_MI = 1024**2

_CORDON_REASONS = (
    "RMA: Xid 79 (GPU fell off the bus) on GPU 3",
    "maintenance: GPU driver upgrade",
    "drain: kernel security update",
    "NCCL all-reduce bandwidth below threshold",
)
_NOT_READY_MESSAGES = (
    NOT_READY_MESSAGE,
    "PLEG is not healthy: pleg was last seen active 3m12s ago; threshold is 3m0s",
    "container runtime is down",
)
_GPU_LANE_SIZES = ((1, 0.3), (2, 0.3), (4, 0.3), (8, 0.1))
_MIG_LANE_SIZES = ((1, 0.6), (2, 0.4))
_CPU_LANE_SIZES = ((250, 0.15), (500, 0.2), (1000, 0.3), (2000, 0.2), (4000, 0.1), (8000, 0.05))
# In a snapshot, about one job pod in fifty has finished (Succeeded, or Failed one time in four).
_FINISHED_SHARE = 50
# A standing workload's run lasts 1-4 hours; then the next run starts (a new pod of the same template).
_RUN_SECONDS = (3600, 14400)
UNSCHEDULABLE_MESSAGE = (
    "0/{nodes} nodes are available: {nodes} Insufficient nvidia.com/gpu. "
    "preemption: 0/{nodes} nodes are available: {nodes} No preemption victims found for incoming pod."
)


@dataclass(frozen=True)
class FleetEvent:
    """One change between two states, as a Kubernetes watch reports it."""

    type: str  # "ADDED" | "MODIFIED" | "DELETED"
    object: dict  # a Kubernetes Node or Pod object


@dataclass(slots=True)
class _Standing:
    """A standing workload: its Pod template, on ``node`` (None: it waits), and the rhythm of its runs."""

    template: dict
    key: int
    length: int  # seconds a run lasts
    phase: int
    node: _NodeInfo | None
    status: dict  # what a waiting run's status says (its PodScheduled condition's message)


@dataclass(slots=True)
class _NodeInfo:
    name: str
    base: dict  # the node object as it is while Ready and before any change in time
    key: int
    epoch: int  # node epoch length, seconds
    phase: int
    live: bool  # False for nodes unavailable in the objects given: they never change
    created: int
    tolerations: list
    selector: dict
    host_ip: str
    pools: tuple[str, ...]
    # A node a standing workload runs on or is pinned to: it never goes down, so what the demo shows of it (who
    # holds it, who waits for it and why) holds at any time.
    steady: bool = False


def _amount(value: object) -> float:
    """A Kubernetes quantity as a float, 0 when missing or unreadable: only used to lay lanes out."""
    try:
        amount = float(parse_quantity(str(value or "0")))
    except QuantityError:
        return 0.0
    return amount if math.isfinite(amount) and amount > 0 else 0.0


def _ready_condition(node: dict) -> dict | None:
    for condition in node["status"].get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition
    return None


def _is_gpu_node(node: dict) -> bool:
    allocatable = node["status"].get("allocatable") or {}
    return bool(
        _amount(allocatable.get(GPU))
        or any(str(resource).startswith(MIG_PREFIX) for resource in allocatable)
        or "nvidia.com/gpu.product" in node["metadata"]["labels"]
    )


class Fleet:
    """A deterministic fleet of Kubernetes nodes and pods; see the module docstring for the model.

    ``nodes`` are the fleet's Node objects (a blueprint, or a layout's), copied in turn under new names up to
    ``size``; without them the fleet is ``size`` nodes (default 40) of the catalogue's kinds. ``pool_labels``
    maps a node name to the pools whose label its job pods may carry; ``system_pods`` adds the static daemonset
    pods (kube-proxy, node-exporter, GPU operator) to every node; ``long_gpu_jobs`` is the share of GPU lanes whose
    jobs run 20-80 minutes instead of 1-4. ``namespaces`` are the jobs' namespaces, equally likely, or a mapping of
    each to its share (whole numbers; 0: no job there). ``workloads`` are standing workloads (Pod objects; see the
    module docstring); one bound to a node the fleet does not have is left out.
    """

    def __init__(
        self,
        *,
        seed: int,
        size: int | None = None,
        nodes: Sequence[dict] | None = None,
        pool_labels: Mapping[str, Sequence[str]] | None = None,
        tick_seconds: float = 5.0,
        namespaces: Sequence[str] | Mapping[str, int] = ("team-a", "robotics", "sim", "infer", "research"),
        system_pods: bool = True,
        long_gpu_jobs: float = 0.0,
        workloads: Sequence[dict] = (),
    ):
        if tick_seconds <= 0:
            raise ValueError("tick_seconds must be positive")
        if isinstance(namespaces, Mapping):
            # A table with each namespace as many times as its share: a job's hash picks one place in it.
            namespaces = [str(name) for name, share in namespaces.items() for _ in range(int(share))]
        if not namespaces:
            raise ValueError("namespaces must not be empty (nor all their shares 0)")
        if size is not None and size < 0:
            raise ValueError("size must not be negative")
        if not 0 <= long_gpu_jobs <= 1:
            raise ValueError("long_gpu_jobs must be a share between 0 and 1")
        self._long_threshold = int(long_gpu_jobs * 65536)
        self.seed = int(seed)
        self.tick_seconds = float(tick_seconds)
        self.namespaces = tuple(str(namespace) for namespace in namespaces)
        self._wave_phase = key("wave", self.seed) % _WAVE_PERIOD
        self._min_pending = math.ceil(self.tick_seconds)

        with paused_gc():
            node_objects = grown(list(nodes), size, self.seed) if nodes else catalogue_nodes(self.seed, size)
            names = [node["metadata"]["name"] for node in node_objects]
            if len(set(names)) != len(names):
                raise ValueError("node names must be unique")
            self._build(node_objects, pool_labels or {}, system_pods, workloads)

    def _build(
        self,
        node_objects: list[dict],
        pool_labels: Mapping[str, Sequence[str]],
        system_pods: bool,
        workloads: Sequence[dict],
    ) -> None:
        self._nodes: list[_NodeInfo] = []
        # Per node, its lanes as (lane id, epoch length, phase, key, busy threshold): the hot loop reads these.
        self._node_lanes: list[list[tuple[int, int, int, int, int]]] = []
        # Per lane id: (pod name prefix, uid prefix, pod IP, container variants, workflow stems, node info).
        self._lane_static: list[tuple[str, str, str, list, tuple[str, ...], _NodeInfo]] = []
        self._shapes: dict[tuple, list] = {}
        self._gpu_lanes: set[int] = set()  # lane ids of the lanes that hold GPUs
        self._system: list[dict] = []
        self._max_lane_epoch = 1
        self._pod_cache: dict[tuple[int, int, str], dict] = {}
        self._jobs_memo: list[tuple[float, dict]] = []
        self._node_cache: list[tuple[tuple[int, int | None], dict] | None] = [None] * len(node_objects)
        used_names: set[str] = set()
        names = {node["metadata"]["name"] for node in node_objects}
        standing = [pod for pod in workloads if (pod.get("spec") or {}).get("nodeName", "") in names | {""}]
        reserved: dict[str, list[dict]] = {}  # node name -> the requests of the standing workloads it runs
        for pod in standing:
            if pod["spec"].get("nodeName"):
                reserved.setdefault(pod["spec"]["nodeName"], []).append(pod_resource_requests(pod["spec"]))
        pinned = set(reserved) | {
            ((pod["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname") or "") for pod in standing
        }
        by_name: dict[str, _NodeInfo] = {}
        for index, node in enumerate(node_objects):
            info = self._node_info(node, _pool_names(pool_labels.get(node["metadata"]["name"])))
            info.steady = info.name in pinned
            self._nodes.append(info)
            by_name[info.name] = info
            system = [ds for ds in objects.DAEMONSETS if not ds[5] or _is_gpu_node(info.base)] if system_pods else []
            lanes = self._layout(info, index, system, reserved.get(info.name, ())) if info.live else []
            self._node_lanes.append(lanes)
            for daemonset in system:
                self._system.append(self._system_pod(info, daemonset, used_names))
        self._standing = [self._standing_of(pod, by_name, len(node_objects)) for pod in standing]
        self._standing_cache: dict[tuple[int, int], dict] = {}

    # -- construction ------------------------------------------------------------------------------------------
    def _node_info(self, node: dict, pools: tuple[str, ...]) -> _NodeInfo:
        metadata = dict(node.get("metadata") or {})
        name = metadata["name"]
        x = key("node", self.seed, name)
        if not isinstance(metadata.get("labels"), dict):
            metadata["labels"] = {}
        spec = node.get("spec") if isinstance(node.get("spec"), dict) else {}
        status = node.get("status") if isinstance(node.get("status"), dict) else {}
        base = {**node, "metadata": metadata, "spec": spec, "status": status}
        labels = metadata["labels"]
        ready = _ready_condition(base)
        live = bool(ready) and ready.get("status") == "True" and not spec.get("unschedulable")
        created = parse_iso(metadata.get("creationTimestamp")) or (BASE_TIME - x % (300 * 86400))
        selector = {"kubernetes.io/arch": str(labels.get("kubernetes.io/arch", "amd64"))}
        if labels.get("nvidia.com/gpu.product"):
            selector["nvidia.com/gpu.product"] = str(labels["nvidia.com/gpu.product"])
        host_ip = ""
        for address in status.get("addresses") or []:
            if isinstance(address, dict) and address.get("type") == "InternalIP":
                host_ip = str(address.get("address") or "")
        metadata["resourceVersion"] = str(self._tick_of(created + 180))
        return _NodeInfo(
            name=name,
            base=base,
            key=x,
            epoch=180 + x % 421,
            phase=(x >> 16) % 600,
            live=live,
            created=created,
            tolerations=objects.tolerations_for(base),
            selector=selector,
            host_ip=host_ip,
            pools=pools,
        )

    def _layout(
        self, info: _NodeInfo, node_index: int, system: list, reserved: Sequence[Mapping] = ()
    ) -> list[tuple[int, int, int, int, int]]:
        """Divide a node's GPUs (MIG devices, time-sliced replicas) and part of its CPUs into lanes, after the
        daemonsets' and the standing workloads' (``reserved``: their requests) share."""
        rng = Stream("lanes", self.seed, info.name)
        allocatable = info.base["status"].get("allocatable") or info.base["status"].get("capacity") or {}
        cpu_m = int(_amount(allocatable.get("cpu")) * 1000) - sum(ds[3] for ds in system)
        cpu_m -= int(sum(float(requests.get("cpu", 0)) for requests in reserved) * 1000)
        memory = int(_amount(allocatable.get("memory"))) - sum(ds[4] for ds in system)
        memory -= int(sum(float(requests.get("memory", 0)) for requests in reserved))
        max_pods = int(_amount(allocatable.get("pods")) or 110) - len(reserved)
        gpu_units = max(0, int(_amount(allocatable.get(GPU))) - int(sum(float(r.get(GPU, 0)) for r in reserved)))
        mig = sorted(
            (str(resource), int(_amount(value)))
            for resource, value in allocatable.items()
            if str(resource).startswith(MIG_PREFIX) and _amount(value) >= 1
        )
        units = gpu_units + sum(count for _, count in mig)
        lanes: list[tuple[str, int, int, int]] = []  # (resource, count, cpu millis, memory bytes)
        ctrl_cpu, ctrl_memory = objects.CTRL_CPU_M, objects.CTRL_MEMORY
        if units:
            # GPU lanes get 55 % of the CPUs and memory, shared by GPU unit (minus the control sidecar).
            cpu_per_unit = max(0, int(cpu_m * 0.55 / units) // 250 * 250)
            mem_per_unit = max(0, int(memory * 0.55 / units) // _GI * _GI)
            for resource, count in [(GPU, gpu_units), *mig]:
                options = _MIG_LANE_SIZES if resource.startswith(MIG_PREFIX) else _GPU_LANE_SIZES
                left = count
                while left > 0:
                    size = rng.weighted(options, left)
                    millis = max(250, size * cpu_per_unit - ctrl_cpu)
                    mem = max(512 * _MI, size * mem_per_unit - ctrl_memory)
                    lanes.append((resource, size, millis, mem))
                    left -= size
            cpu_budget, mem_budget = cpu_m * 0.3, memory * 0.3
        else:
            cpu_budget, mem_budget = cpu_m * 0.85, memory * 0.85
        # CPU lanes: 250m to 8 cores each, with up to 4 GiB of memory per core.
        mem_per_core = min(4 * _GI, memory / max(cpu_m, 1) * 1000 * 0.8)
        room = max(0, max_pods - len(system) - len(lanes) - 5)
        while room > 0 and cpu_budget >= 250 + ctrl_cpu:
            millis = rng.weighted(_CPU_LANE_SIZES, int(cpu_budget - ctrl_cpu))
            mem = int(mem_per_core * millis / 1000) // (64 * _MI) * (64 * _MI)
            if mem <= 0 or mem + ctrl_memory > mem_budget:
                break
            lanes.append(("", 0, millis, mem))
            cpu_budget -= millis + ctrl_cpu
            mem_budget -= mem + ctrl_memory
            room -= 1

        hot = []
        ip_prefix = f"10.{128 + node_index // 65536 % 64}.{node_index // 256 % 256}."
        name_prefix = f"job-{info.name}-"
        for lane_index, (resource, count, millis, mem) in enumerate(lanes):
            gpu = bool(resource)
            shape = (resource, count, millis, mem)
            variants = self._shapes.get(shape)
            if variants is None:
                variants = self._shapes[shape] = objects.job_containers(*shape)
            lane_key = mix(info.key + (lane_index + 1) * C1)
            v = mix(lane_key ^ C2)
            lane_id = len(self._lane_static)
            if gpu:
                self._gpu_lanes.add(lane_id)
            h = format(lane_key, "016x")
            self._lane_static.append(
                (
                    f"{name_prefix}{lane_index}-",
                    f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[5:8]}-",  # a job's uid adds 12 digits of its epoch
                    ip_prefix + str(lane_index % 250 + 2),
                    variants,
                    objects.GPU_STEMS if gpu else objects.CPU_STEMS,
                    info,
                )
            )
            # epoch 60-240 s (GPU; long jobs 20-80 min) or 20-180 s (CPU);
            # busy in 70-98 % (GPU) or 50-90 % (CPU) of the epochs
            if gpu and (v >> 48) & 0xFFFF < self._long_threshold:
                length = 1200 + v % 3601
            else:
                length = 60 + v % 181 if gpu else 20 + v % 161
            busy = (0.7 + 0.28 * ((v >> 16) & 0xFFFF) / 65536) if gpu else (0.5 + 0.4 * ((v >> 16) & 0xFFFF) / 65536)
            hot.append((lane_id, length, (v >> 32) % length, lane_key, int(busy * 65536)))
        self._max_lane_epoch = max(self._max_lane_epoch, *(lane[1] for lane in hot)) if hot else self._max_lane_epoch
        return hot

    def _system_pod(self, info: _NodeInfo, daemonset: tuple, used: set[str]) -> dict:
        name, namespace = daemonset[:2]
        parts = self._shapes.get(daemonset)
        if parts is None:
            parts = self._shapes[daemonset] = objects.daemonset_parts(
                Stream("daemonset", self.seed, name).uid(), daemonset
            )
        x = key("ds", self.seed, info.name, name)
        attempt = 0
        while (pod_name := f"{name}-{suffix(mix(x + attempt))}") in used:
            attempt += 1
        used.add(pod_name)
        x = mix(x + attempt)
        started = info.created + 240 + x % 600
        created = iso(started - 60)
        status = objects.pod_status(
            "Running",
            containers=parts[0],
            init=None,
            host_ip=info.host_ip,
            pod_ip=info.host_ip,
            created=created,
            started=iso(started),
            x=x,
        )
        return objects.system_pod(
            name=pod_name,
            uid=uid(x, mix(x ^ GOLD)),
            namespace=namespace,
            parts=parts,
            node_name=info.name,
            resource_version=str(self._tick_of(started)),
            status=status,
            created=created,
        )

    def _standing_of(self, pod: dict, nodes: Mapping[str, _NodeInfo], node_count: int) -> _Standing:
        metadata = pod.get("metadata") or {}
        x = key("standing", self.seed, metadata.get("namespace", ""), metadata.get("name", ""))
        low, high = _RUN_SECONDS
        length = low + x % (high - low + 1)
        node = nodes.get((pod.get("spec") or {}).get("nodeName", ""))
        message = next(
            (
                str(condition.get("message") or "")
                for condition in (pod.get("status") or {}).get("conditions") or []
                if isinstance(condition, dict) and condition.get("type") == "PodScheduled"
            ),
            "",
        ) or UNSCHEDULABLE_MESSAGE.format(nodes=node_count)
        status = {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": "",
                    "message": message,
                    "reason": "Unschedulable",
                    "status": "False",
                    "type": "PodScheduled",
                }
            ],
            "phase": "Pending",
            "qosClass": "Burstable",
        }
        return _Standing(pod, x, length, (x >> 20) % length, node, status)

    def _standing_run(self, standing: _Standing, t: float) -> tuple[int, int]:
        """(run number, start) of a standing workload's run at ``t``."""
        run = int((t + standing.phase) // standing.length)
        return run, run * standing.length - standing.phase

    def _standing_pod(self, index: int, t: float) -> dict:
        """The pod of standing workload ``index``'s run at ``t`` (memoised by run: it does not change in a run)."""
        standing = self._standing[index]
        run, start = self._standing_run(standing, t)
        cached = self._standing_cache.get((index, run))
        if cached is not None:
            return cached
        if len(self._standing_cache) > 4 * len(self._standing):
            self._standing_cache = {}
        template, x = standing.template, mix(standing.key + run * GOLD)
        metadata = dict(template.get("metadata") or {})
        created = iso(start)
        metadata.update(
            name=f"{metadata.get('name', 'workload')}-{suffix(x)}",
            uid=uid(x, mix(x ^ GOLD)),
            creationTimestamp=created,
            resourceVersion=str(self._tick_of(start)),
        )
        spec = dict(template.get("spec") or {})
        node = standing.node
        if node is None:
            spec.pop("nodeName", None)
            status = copy.deepcopy(standing.status)
            status["conditions"][0]["lastTransitionTime"] = created
        else:
            status = objects.pod_status(
                "Running",
                containers=spec.get("containers") or [],
                init=spec.get("initContainers"),
                host_ip=node.host_ip,
                pod_ip=f"10.{192 + index // 250 % 60}.{index % 250}.{x % 250 + 2}",
                created=created,
                started=created,
                x=x,
            )
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}
        self._standing_cache[(index, run)] = pod
        return pod

    def _standing_pods(self, t: float, *, bound_only: bool = False) -> list[dict]:
        return [
            self._standing_pod(index, t)
            for index, standing in enumerate(self._standing)
            if standing.node is not None or not bound_only
        ]

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
        x = mix(info.key + epoch * GOLD)
        if (x & 0xFFFF) >= _DOWN_THRESHOLD:
            return None
        length = info.epoch
        start = epoch * length - info.phase + length * (5 + (x >> 16) % 31) // 100
        end = start + length * (30 + (x >> 24) % 31) // 100
        return start, end, (x >> 32) % 10

    def _node_status(self, info: _NodeInfo, t: float) -> tuple[int, int | None]:
        """(kind, since): kind -1 up, 0-3 NotReady, 4-5 Unknown, 6-9 cordoned; since: last transition, or None."""
        if not info.live or info.steady:
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
        if info.steady:
            return []
        first = int((t - self._max_lane_epoch + info.phase) // info.epoch)
        last = int((t + info.phase) // info.epoch)
        windows = [self._node_window(info, epoch) for epoch in range(first, last + 1)]
        return [(w[0], w[1]) for w in windows if w]

    def _node_object(self, info: _NodeInfo, kind: int, since: int | None) -> dict:
        base = info.base
        if since is None:
            return base
        x = mix(info.key ^ since)
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
                condition = dict(condition, lastHeartbeatTime=iso(since), lastTransitionTime=iso(since))
                if kind < 0 or kind >= 6:
                    condition.update(status="True", reason="KubeletReady", message="kubelet is posting ready status")
                elif kind <= 3:
                    message = _NOT_READY_MESSAGES[x % len(_NOT_READY_MESSAGES)]
                    condition.update(status="False", reason="KubeletNotReady", message=message)
                else:
                    condition.update(status="Unknown", reason="NodeStatusUnknown", message=UNKNOWN_MESSAGE)
            conditions.append(condition)
        status["conditions"] = conditions
        return node

    # -- pods ----------------------------------------------------------------------------------------------------
    def _jobs(self, t: float) -> dict[int, tuple[int, int, int, str, int]]:
        """Lane id -> (epoch, hash, start, phase, pending seconds) of the job visible on each lane at ``t``.

        Memoised for the last two times asked (a watch asks for events(a, b), then events(b, c)); read-only.
        """
        for memo_time, memo_jobs in self._jobs_memo:
            if memo_time == t:
                return memo_jobs
        jobs = self._compute_jobs(t)
        self._jobs_memo = [(t, jobs), *self._jobs_memo[:1]]
        return jobs

    def _compute_jobs(self, t: float) -> dict[int, tuple[int, int, int, str, int]]:
        jobs: dict[int, tuple[int, int, int, str, int]] = {}
        mask, gold, c1, c2 = MASK, GOLD, C1, C2
        period, wave_phase, min_pending = _WAVE_PERIOD, self._wave_phase, self._min_pending
        for info, lanes in zip(self._nodes, self._node_lanes, strict=True):
            if not lanes:
                continue
            down = self._down_intervals(info, t)
            for lane_id, length, phase, lane_key, threshold in lanes:
                # the lane's epoch and its hash (as _lane_epoch, inlined: this loop is hot)
                epoch = int((t + phase) // length)
                x = (lane_key + epoch * gold) & mask
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
                jobs[lane_id] = (epoch, x, start, "Running" if t >= start + pending else "Pending", pending)
        return jobs

    @staticmethod
    def _lane_epoch(lane: tuple[int, int, int, int, int], t: float) -> tuple[int, int, int]:
        """(epoch, hash, start of the epoch) of a lane at ``t``."""
        _, length, phase, lane_key, _ = lane
        epoch = int((t + phase) // length)
        return epoch, mix(lane_key + epoch * GOLD), epoch * length - phase

    def _pod(self, lane_id: int, job: tuple[int, int, int, str, int]) -> dict:
        epoch, x, start, phase, pending = job
        name_prefix, uid_prefix, pod_ip, variants, stems, info = self._lane_static[lane_id]
        y = mix(x ^ 0x5DEECE66D)
        priority = objects.PRIORITIES[y & 0xFF]
        labels = {
            "app.kubernetes.io/managed-by": "osmo",
            objects.PRIORITY_LABEL: priority,
            objects.USER_LABEL: objects.USERS[(y >> 8) % len(objects.USERS)],
            "osmo.workflow_id": (workflow := f"{stems[(y >> 16) % len(stems)]}-{(y >> 24) & 0xFFFFF:05x}"),
        }
        if info.pools:
            labels[objects.POOL_LABEL] = info.pools[(y >> 44) % len(info.pools)]
        containers, init = variants[(y >> 52) & 7]
        created = iso(start)
        if phase == "Pending":
            started, changed, exit_code = created, start, 0
        elif phase == "Running":
            started, changed, exit_code = iso(start + pending), start + pending, 0
        else:  # finished (only in a snapshot): it ended before its epoch did
            changed = start + pending
            started, exit_code = iso(changed), 0 if phase == "Succeeded" else (137, 1)[(y >> 60) & 1]
        status = objects.pod_status(
            phase,
            containers=containers,
            init=init,
            host_ip=info.host_ip,
            pod_ip=pod_ip,
            created=created,
            started=started,
            x=x,
            exit_code=exit_code,
        )
        pod_uid = f"{uid_prefix}{(epoch * GOLD) & 0xFFFFFFFFFFFF:012x}"
        return objects.job_pod(
            name=name_prefix + str(epoch),
            uid=pod_uid,
            job=f"{workflow}-{name_prefix.removeprefix('job-')}{epoch}",
            job_uid=pod_uid[:-12] + f"{(epoch * C2) & 0xFFFFFFFFFFFF:012x}",
            namespace=self.namespaces[(y >> 40) % len(self.namespaces)],
            labels=labels,
            node_name=info.name,
            selector=info.selector,
            tolerations=info.tolerations,
            containers=containers,
            init=init,
            priority=priority,
            resource_version=str(self._tick_of(changed)),
            status=status,
            created=created,
        )

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
            pools = _pool_names(pool_labels.get(info.name))
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
        """The Pending and Running pods at ``now``: system pods, standing workloads, then job pods by node and lane."""
        _, t = self._time(now)
        with paused_gc():
            return self._pods(t)

    def gpu_pods(self, now: float) -> list[dict]:
        """The Pending and Running job pods holding GPUs at ``now``, standing ones included (a history of
        utilization needs only those)."""
        _, t = self._time(now)
        with paused_gc():
            standing = [pod for pod in self._standing_pods(t, bound_only=True) if _holds_gpus(pod)]
            return standing + [
                self._pod(lane_id, job) for lane_id, job in self._jobs(t).items() if lane_id in self._gpu_lanes
            ]

    def _pods(self, t: float) -> list[dict]:
        # Memoised: a job's object at a phase never changes, so the last call's objects are reused.
        cache, fresh = self._pod_cache, {}
        pods = list(self._system) + self._standing_pods(t)
        for lane_id, job in self._jobs(t).items():
            cache_key = (lane_id, job[0], job[3])
            pod = cache.get(cache_key)
            if pod is None:
                pod = self._pod(lane_id, job)
            fresh[cache_key] = pod
            pods.append(pod)
        self._pod_cache = fresh
        return pods

    def state(self, now: float) -> tuple[list[dict], list[dict], str]:
        """(nodes, pods, resourceVersion) at ``now``; the resourceVersion is the tick number."""
        return self.nodes(now), self.pods(now), self.resource_version(now)

    def snapshot(self, now: float, pods: int) -> tuple[list[dict], list[dict]]:
        """(nodes, pods) at ``now`` with exactly ``pods`` pods, as a cluster lists them at one moment.

        The system pods and standing workloads, then job pods: those of ``state(now)``, fewer or more (busy lanes
        left idle, idle lanes given their epoch's job) to make the count, and about 2 % that finished earlier and
        wait to be deleted (they use no resources). Raises ValueError when the count is below the system pods and
        standing workloads or past what the lanes hold. Not for watching: ``events`` knows nothing of what a
        snapshot adds or leaves out.
        """
        _, t = self._time(now)
        lanes = [lane for node_lanes in self._node_lanes for lane in node_lanes]
        fixed = list(self._system) + self._standing_pods(t)
        wanted = pods - len(fixed)
        if wanted < 0:
            raise ValueError(f"pods must be at least {len(fixed)}, the system pods and standing workloads")
        finished = wanted // _FINISHED_SHARE
        if wanted - finished > len(lanes) or (finished and not lanes):
            raise ValueError(f"at most {len(fixed) + len(lanes)} pods fit on these nodes")
        with paused_gc():
            jobs = self._jobs(t)
            # Lanes in an order of their own (by hash), so what is kept or added spreads over the fleet.
            order = sorted(lanes, key=lambda lane: lane[3])
            busy = [lane for lane in order if lane[0] in jobs]
            idle = [lane for lane in order if lane[0] not in jobs]
            chosen = {lane[0]: jobs[lane[0]] for lane in busy[: wanted - finished]}
            for lane in idle[: wanted - finished - len(chosen)]:
                epoch, x, begin = self._lane_epoch(lane, t)
                chosen[lane[0]] = (epoch, x, begin, "Running", 0)
            result = fixed + [self._pod(lane_id, job) for lane_id, job in sorted(chosen.items())]
            for number in range(finished):
                lane = order[number % len(order)]
                epoch, x, begin = self._lane_epoch(lane, t)
                epoch -= 1 + number // len(order)
                x = mix(x ^ epoch)
                phase = "Failed" if x % 4 == 0 else "Succeeded"
                start = begin - lane[1] * (1 + number // len(order))
                result.append(self._pod(lane[0], (epoch, x, start, phase, lane[1] * 3 // 4)))
            return self.nodes(now), result

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

        def pod(lane_id: int, job: tuple[int, int, int, str, int]) -> dict:
            return cache.get((lane_id, job[0], job[3])) or self._pod(lane_id, job)

        events = []
        for info in self._nodes:
            if info.live:
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
        for index, standing in enumerate(self._standing):  # a new run: the last run's pod goes, the next comes
            if self._standing_run(standing, a)[0] != self._standing_run(standing, b)[0]:
                events.append(FleetEvent("DELETED", self._standing_pod(index, a)))
                added.append(FleetEvent("ADDED", self._standing_pod(index, b)))
        return events + added


def _holds_gpus(pod: dict) -> bool:
    return any(str(resource).startswith("nvidia.com/") for resource in pod_resource_requests(pod.get("spec") or {}))


def _pool_names(pools: str | Sequence[str] | None) -> tuple[str, ...]:
    if not pools:
        return ()
    return (pools,) if isinstance(pools, str) else tuple(str(pool) for pool in pools)
