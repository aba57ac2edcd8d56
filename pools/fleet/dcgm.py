"""Simulated DCGM exporter metrics for the fleets' GPUs: what NVIDIA's dcgm-exporter would publish on each node.

``gpu_samples(nodes, pods, t)`` gives one ``GpuSample`` per device the exporter reports: a physical GPU, a MIG
instance (``GPU_I_PROFILE``/``GPU_I_ID``) on MIG nodes, a time-sliced share (``vgpu``) on nodes whose GPUs are
offered several times. ``exposition(samples)`` renders them in the Prometheus text format (0.0.4) under the
exporter's metric and label names, so ``make run`` shows utilization without Prometheus and a test can put a real
Prometheus in front of a fleet.

Everything is a pure function of its inputs, like the rest of ``pools.fleet``: a sample's values depend on the
pod's identity (namespace, name, uid), the pod's device ordinal and ``t`` only, so a Prometheus scraping every
15 s sees a consistent history and a test can compute what it will see (``pod_activity``).

The model:

* Devices. A node's physical GPUs come from ``nvidia.com/gpu.count`` (else its allocatable ``nvidia.com/gpu``),
  their memory from ``nvidia.com/gpu.memory`` (else the catalogue), the model from ``nvidia.com/gpu.product``.
  A node with ``nvidia.com/gpu.replicas`` > 1 (time-slicing, as ``catalogue.L40S_4X_SLICED``) has ``replicas``
  shares per GPU, each reported with the label ``vgpu`` (as dcgm-exporter with ``KUBERNETES_VIRTUAL_GPUS``) and a
  nominal ``memory / replicas`` MiB. A node with allocatable ``nvidia.com/mig-<profile>`` resources has MIG
  instances, placed first-fit on its GPUs (largest profiles first, 7 compute slices a GPU) and numbered from 1 on
  each GPU. UUIDs are ``GPU-<uuid>`` made from (node name, GPU index): the same on every call and every seed.
* Allocation. Pods bound to the node (``spec.nodeName``) and not finished hold the GPUs (shares, MIG instances)
  their containers request (requests, else limits; the larger of the app containers' sum and the largest init
  container). Pods are served oldest first (``creationTimestamp``, then namespace and name); each takes the
  aligned block of its size that its identity prefers (a hash), else the next free aligned block, else the lowest
  free devices; a pod that asks for more than is free gets what is left. No state is kept, so a pod keeps its
  devices as long as the older pods that pushed it off its preferred block stay; when one of them ends, it moves
  back (its values follow the pod and its ordinal, not the device, so its history stays consistent).
* Behaviour. Each pod is, by a hash of its identity, ``idle`` (about 20 %: 0 % for its whole life, some memory
  held), ``busy`` (about 55 %: 70-100 %, a steady level with a little noise every 5 s) or ``bursty`` (about 25 %:
  busy phases of 2-5 minutes at 27-98 %, then idle phases of 2-8 minutes at 0 %, the same phases on all its GPUs).
  Unallocated devices are at 0 % with no memory used. The graphics-engine-active ratio is the utilization times a
  per-device factor of 0.85-1.0 (so it is 0 exactly when the utilization is). Framebuffer used is a steady share of
  the device's memory (idle 5-40 %, busy 60-95 %, bursty 40-90 %); used + free is always the device's memory.
  A pod labelled ``ACTIVITY_LABEL`` (``idle``, ``busy`` or ``bursty``) behaves so whatever its hash: a
  blueprint's notebook left open is idle for as long as it runs. (A label, not an annotation: the console keeps
  pods' labels, and its utilization rounds rebuild the pods they read from what it keeps.)

Deliberate simplifications: ``modelName`` is the GFD product label (``NVIDIA-H100-80GB-HBM3``), where the real
exporter reports the driver's name (``NVIDIA H100 80GB HBM3``); a time-sliced share reports its own pod's activity
where the real exporter copies the physical GPU's value to every share; every node given is reported (the caller
leaves out nodes whose exporter would not answer). As with the real exporter, ``DCGM_FI_DEV_GPU_UTIL`` is not
written for MIG instances (DCGM does not support it there; ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` is the signal) unless
``exposition(..., mig_gpu_util=True)``.

Note for ``Fleet``: its GPU pods live one lane epoch (60-240 s), less than the 5 minutes of Run:ai's idle rule,
so with those pods an idle pod ends before it could be found idle; pods that live longer (a blueprint's, a test's)
show it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pools.engine.errors import QuantityError
from pools.engine.quantities import parse_quantity
from pools.inventory.records import paused_gc

from .catalogue import GPU, GPUS, MIG_MEMORY, MIG_PREFIX, PRODUCT_LABEL
from .pods import FINISHED_PHASES
from .streams import C1, C2, GOLD, MASK, key, uid

SLICES_PER_GPU = 7  # MIG compute slices of one GPU (A100, H100, H200, B200, GB200)
NOISE_SECONDS = 5  # a busy device's value changes every 5 s
IDLE_PERCENT, BUSY_PERCENT = 20, 55  # the rest (25 %) is bursty
ACTIVITY_LABEL = "fleet.example.com/gpu-activity"  # a pod's declared behaviour, for the simulation only

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
# (name, HELP text), in the order they are written; all are gauges.
METRICS = (
    (GPU_UTIL, "GPU utilization (in %)."),
    (FB_FREE, "Framebuffer memory free (in MiB)."),
    (FB_USED, "Framebuffer memory used (in MiB)."),
    (GR_ENGINE_ACTIVE, "Ratio of time the graphics engine is active."),
)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Behaviour(StrEnum):
    """How a pod uses its GPUs, chosen by a hash of its identity."""

    IDLE = "idle"
    BUSY = "busy"
    BURSTY = "bursty"


@dataclass(slots=True)
class GpuSample:
    """One device as the exporter reports it at one moment.

    ``gpu`` is the physical GPU's index on its node (``device`` is ``nvidia<gpu>``); a MIG instance adds its
    profile (``1g.10gb``) and GPU instance id, a time-sliced share its replica number ``vgpu``. ``namespace``,
    ``pod``, ``container`` and ``behaviour`` are empty when no pod holds the device. ``memory_mib`` is the
    device's memory (a MIG instance's, a share's nominal part): ``fb_used + fb_free == memory_mib``. ``ordinal``
    is the device's position among those its pod holds, as ``pod_activity`` takes it. Treat it
    as read-only (it is not frozen only because 40,000 of them are made at each scrape).
    """

    hostname: str
    gpu: int
    uuid: str
    device: str
    model: str
    gpu_instance_profile: str
    gpu_instance_id: int | None
    vgpu: int | None
    memory_mib: int
    namespace: str
    pod: str
    container: str
    behaviour: str
    util: int  # 0-100 (%)
    fb_used: int  # MiB
    fb_free: int  # MiB
    gr_engine_active: float  # 0-1
    ordinal: int = -1  # the pod's device ordinal (``pod_activity``), -1 when no pod holds the device


# -- pods --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Profile:
    """What a pod's values are made of (a function of its identity only)."""

    key: int
    behaviour: Behaviour
    busy_seconds: int  # bursty: the busy phase, then the idle phase, repeated
    period: int
    offset: int


_PROFILES: dict[tuple[str, str, str, str], _Profile] = {}


def _profile_of(namespace: str, name: str, pod_uid: str, declared: str = "") -> _Profile:
    identity = (namespace, name, pod_uid, declared)
    found = _PROFILES.get(identity)
    if found is None:
        if len(_PROFILES) > 200_000:
            _PROFILES.clear()
        x = key("dcgm-pod", namespace, name, pod_uid)
        roll = x % 100
        behaviour = (
            Behaviour(declared)
            if declared in set(Behaviour)
            else Behaviour.IDLE
            if roll < IDLE_PERCENT
            else Behaviour.BUSY
            if roll < IDLE_PERCENT + BUSY_PERCENT
            else Behaviour.BURSTY
        )
        busy_seconds = 120 + (x >> 8) % 181  # 2-5 min
        period = busy_seconds + 120 + (x >> 20) % 361  # then 2-8 min idle
        found = _PROFILES[identity] = _Profile(x, behaviour, busy_seconds, period, (x >> 32) % period)
    return found


def _identity(pod: dict) -> tuple[str, str, str, str]:
    """A pod's namespace, name, uid and declared behaviour (``ACTIVITY_LABEL``, else empty)."""
    metadata = pod.get("metadata") or {}
    declared = (metadata.get("labels") or {}).get(ACTIVITY_LABEL) or ""
    return (
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
        str(metadata.get("uid") or ""),
        str(declared),
    )


def pod_behaviour(pod: dict) -> Behaviour:
    """The behaviour of ``pod`` (a Kubernetes Pod object): the one it declares, else a function of its namespace,
    name and uid."""
    return _profile_of(*_identity(pod)).behaviour


def _device_hash(profile_key: int, ordinal: int) -> int:
    x = (profile_key + (ordinal + 1) * C1) & MASK
    x = ((x ^ (x >> 30)) * C1) & MASK
    x = ((x ^ (x >> 27)) * C2) & MASK
    return x ^ (x >> 31)


def _utilization(profile: _Profile, h: int, t: float) -> int:
    """The utilization (%) of the pod's device with hash ``h`` at ``t``."""
    behaviour = profile.behaviour
    if behaviour is Behaviour.IDLE:
        return 0
    if behaviour is Behaviour.BURSTY:
        if (math.floor(t) + profile.offset) % profile.period >= profile.busy_seconds:
            return 0
        level, low = 35 + (h >> 8) % 56, 5  # 35-90 % while busy
    else:
        level, low = 78 + (h >> 8) % 15, 70  # 78-92 %
    x = (h + (math.floor(t / NOISE_SECONDS) + 1) * GOLD) & MASK
    x = ((x ^ (x >> 30)) * C1) & MASK
    x = ((x ^ (x >> 27)) * C2) & MASK
    value = level + (x ^ (x >> 31)) % 17 - 8  # +-8
    return 100 if value > 100 else low if value < low else value


def pod_activity(pod: dict, ordinal: int, t: float) -> int:
    """The utilization (%) the exporter reports at ``t`` for the ``ordinal``-th device (0-based) ``pod`` holds."""
    profile = _profile_of(*_identity(pod))
    return _utilization(profile, _device_hash(profile.key, ordinal), t)


_FB_SHARE = {Behaviour.IDLE: (50, 351), Behaviour.BUSY: (600, 351), Behaviour.BURSTY: (400, 501)}  # per mille


def _gpu_requests(spec: dict) -> dict[str, int]:
    """The whole GPUs (shares) and MIG devices a pod spec holds, by resource name."""

    def of(container: object) -> dict[str, int]:
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            return {}
        found: dict[str, int] = {}
        for field in ("limits", "requests"):  # requests win: read last
            values = resources.get(field)
            if isinstance(values, dict):
                for name, value in values.items():
                    if name == GPU or str(name).startswith(MIG_PREFIX):
                        found[name] = _count(value)
        return found

    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        for name, count in of(container).items():
            total[name] = total.get(name, 0) + count
    for container in spec.get("initContainers") or ():
        for name, count in of(container).items():
            total[name] = max(total.get(name, 0), count)
    return {name: count for name, count in total.items() if count > 0}


def _count(value: object) -> int:
    """A device count (a quantity, an integer); 0 when it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    text = str(value)
    if text.isdigit():
        return int(text)
    try:
        amount = parse_quantity(text)
    except QuantityError:
        return 0
    return int(amount) if amount == amount.to_integral_value() and amount > 0 else 0


# -- nodes -------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Device:
    gpu: int
    name: str  # nvidia<gpu>
    uuid: str
    profile: str  # MIG profile ("1g.10gb") or ""
    instance: int | None
    vgpu: int | None
    memory: int


@dataclass(frozen=True, slots=True)
class _Layout:
    devices: tuple[_Device, ...]  # in the order they are reported
    units: dict[str, tuple[int, ...]]  # resource -> the indexes of ``devices`` a pod of it can hold, in order


_LAYOUTS: dict[tuple, _Layout] = {}
_MIG_SLICES = re.compile(r"^(\d+)g\.")
_MIG_GB = re.compile(r"(\d+)gb$")


def gpu_uuid(node_name: str, index: int) -> str:
    """The UUID of GPU ``index`` of the node ``node_name`` (``GPU-`` and 36 hex digits and dashes)."""
    x = key("dcgm-gpu", node_name, index)
    return "GPU-" + uid(x, (x * GOLD + C2) & MASK)


def _int(value: object) -> int:
    text = str(value if value is not None else "")
    return int(text) if text.isdigit() else 0


def _layout(node: dict) -> _Layout | None:
    """The devices a node's exporter reports, or None for a node without GPUs."""
    metadata = node.get("metadata") or {}
    name = str(metadata.get("name") or "")
    labels = metadata.get("labels") or {}
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    replicas = max(1, _int(labels.get("nvidia.com/gpu.replicas")))
    whole_units = _count(allocatable.get(GPU, 0))
    mig = tuple(
        sorted(
            (str(resource), _count(value), _int(labels.get(f"{resource}.memory")))
            for resource, value in allocatable.items()
            if str(resource).startswith(MIG_PREFIX) and _count(value) > 0
        )
    )
    product = str(labels.get(PRODUCT_LABEL) or "")
    count = _int(labels.get("nvidia.com/gpu.count"))
    memory = _int(labels.get("nvidia.com/gpu.memory"))
    if not (whole_units or mig or (product and count)):
        return None
    cache_key = (name, count, memory, product, replicas, whole_units, mig)
    found = _LAYOUTS.get(cache_key)
    if found is None:
        if len(_LAYOUTS) > 100_000:
            _LAYOUTS.clear()
        found = _LAYOUTS[cache_key] = _build_layout(name, count, memory, product, replicas, whole_units, mig)
    return found


def _build_layout(
    name: str, count: int, memory: int, product: str, replicas: int, whole_units: int, mig: tuple
) -> _Layout:
    if not memory:
        memory = next((gpu.memory_mib for gpu in GPUS.values() if gpu.product == product), 0)
    # MIG instances: (resource, profile, slices, memory), largest first, placed first-fit on the GPUs.
    instances = []
    for resource, number, mig_memory in mig:
        profile = resource[len(MIG_PREFIX) :]
        match = _MIG_SLICES.match(profile)
        slices = min(int(match.group(1)), SLICES_PER_GPU) if match else 1
        gb = _MIG_GB.search(profile)
        mig_memory = mig_memory or MIG_MEMORY.get(f"mig-{profile}") or (int(gb.group(1)) * 1024 if gb else 0)
        instances += [(resource, profile, max(slices, 1), mig_memory)] * number
    instances.sort(key=lambda entry: (-entry[2], entry[1]))
    mig_gpus = math.ceil(sum(entry[2] for entry in instances) / SLICES_PER_GPU)
    whole_gpus = whole_units // replicas
    count = count or mig_gpus + whole_gpus
    free = [SLICES_PER_GPU] * max(count, 1)
    placed = []  # (gpu, instance id, resource, profile, memory)
    next_id = [1] * len(free)
    for number, (resource, profile, slices, mig_memory) in enumerate(instances):
        gpu = next((index for index, left in enumerate(free) if left >= slices), number % len(free))
        free[gpu] -= slices
        placed.append((gpu, next_id[gpu], resource, profile, mig_memory))
        next_id[gpu] += 1
    placed.sort()
    uuids = [gpu_uuid(name, index) for index in range(max(count, 1))]
    devices: list[_Device] = []
    units: dict[str, list[int]] = {}
    for gpu, instance, resource, profile, mig_memory in placed:
        units.setdefault(resource, []).append(len(devices))
        devices.append(_Device(gpu, f"nvidia{gpu}", uuids[gpu], profile, instance, None, mig_memory))
    # The other GPUs are whole (shared by time-slicing when replicas > 1); the first whole_units shares are offered.
    first_whole = max((entry[0] for entry in placed), default=-1) + 1
    offered: list[int] = []
    for gpu in range(first_whole, max(count, first_whole + whole_gpus)):
        if gpu >= len(uuids):
            uuids.append(gpu_uuid(name, gpu))
        for share in range(replicas):
            if len(offered) < whole_units:
                offered.append(len(devices))
            vgpu = share if replicas > 1 else None
            devices.append(_Device(gpu, f"nvidia{gpu}", uuids[gpu], "", None, vgpu, memory // replicas))
    if offered:
        units[GPU] = offered
    return _Layout(tuple(devices), {resource: tuple(indexes) for resource, indexes in units.items()})


def _allocate(owners: list, indexes: tuple[int, ...], wanted: int, preference: int) -> list[int]:
    """The devices (of ``indexes``, positions in ``owners``) a pod wanting ``wanted`` of them gets."""
    units = len(indexes)
    if wanted <= units:
        blocks = units // wanted
        first = preference % blocks
        for step in range(blocks):
            start = (first + step) % blocks * wanted
            block = indexes[start : start + wanted]
            if all(owners[index] is None for index in block):
                return list(block)
    return [index for index in indexes if owners[index] is None][:wanted]


# -- samples -----------------------------------------------------------------------------------------------------------


def gpu_samples(nodes: Iterable[dict], pods: Iterable[dict], t: float) -> list[GpuSample]:
    """One sample per device of ``nodes`` at ``t`` (epoch seconds): see the module docstring for the model.

    ``nodes`` and ``pods`` are Kubernetes Node and Pod objects (as ``pools.fleet`` makes them, or read from a
    cluster). Samples come node by node in the order given, then by GPU, MIG instance and share.
    """
    with paused_gc():  # many small objects next to a large pod graph: one collection at the end
        return _samples(nodes, pods, t)


def _samples(nodes: Iterable[dict], pods: Iterable[dict], t: float) -> list[GpuSample]:
    held: dict[str, list[tuple[str, str, str, str, str, str, dict[str, int]]]] = {}
    # (requests, container name) by the identity of (containers, initContainers): pods of a fleet share them
    requests_of: dict[tuple[int, int], tuple[dict[str, int], str]] = {}
    for pod in pods:
        spec = pod.get("spec")
        if not spec:
            continue
        containers, init = spec.get("containers"), spec.get("initContainers")
        cache_key = (id(containers), id(init))
        found = requests_of.get(cache_key)
        if found is None:
            found = requests_of[cache_key] = (_gpu_requests(spec), _container_name(containers))
        wanted, container = found
        node_name = spec.get("nodeName")
        if not wanted or not node_name or (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
            continue
        created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
        held.setdefault(node_name, []).append((created, *_identity(pod), container, wanted))

    samples: list[GpuSample] = []
    append = samples.append
    for node in nodes:
        layout = _layout(node)
        if layout is None:
            continue
        metadata = node.get("metadata") or {}
        hostname = str(metadata.get("name") or "")
        model = str((metadata.get("labels") or {}).get(PRODUCT_LABEL) or "")
        devices = layout.devices
        owners: list = [None] * len(devices)
        for _, namespace, name, pod_uid, declared, container, wanted in sorted(held.get(hostname, ()), key=_age):
            profile = _profile_of(namespace, name, pod_uid, declared)
            ordinal = 0
            for resource in sorted(wanted):
                indexes = layout.units.get(resource)
                if not indexes:
                    continue
                for index in _allocate(owners, indexes, wanted[resource], profile.key):
                    owners[index] = (profile, namespace, name, container, ordinal)
                    ordinal += 1
        for device, owner in zip(devices, owners, strict=True):
            memory = device.memory
            head = (hostname, device.gpu, device.uuid, device.name, model, device.profile, device.instance, device.vgpu)
            if owner is None:
                append(GpuSample(*head, memory, "", "", "", "", 0, 0, memory, 0.0))
                continue
            profile, namespace, name, container, ordinal = owner
            h = _device_hash(profile.key, ordinal)
            util = _utilization(profile, h, t)
            low, spread = _FB_SHARE[profile.behaviour]
            used = memory * (low + (h >> 24) % spread) // 1000
            active = round(util * (85 + (h >> 40) % 16) / 10000, 4)
            append(
                GpuSample(
                    *head,
                    memory,
                    namespace,
                    name,
                    container,
                    profile.behaviour.value,
                    util,
                    used,
                    memory - used,
                    active,
                    ordinal,
                )
            )
    return samples


def _age(entry: tuple) -> tuple:
    return entry[:3]


def _container_name(containers: object) -> str:
    """The first container that asks for a GPU (else the first container): the one the exporter names."""
    if not isinstance(containers, list) or not containers:
        return ""
    for container in containers:
        if isinstance(container, dict) and _gpu_requests({"containers": [container]}):
            return str(container.get("name") or "")
    first = containers[0]
    return str(first.get("name") or "") if isinstance(first, dict) else ""


# -- the text exposition format ------------------------------------------------------------------------------------


def escape_label_value(value: str) -> str:
    """A label value as the text format writes it: backslash, double quote and line feed escaped."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def exposition(samples: Sequence[GpuSample], *, mig_gpu_util: bool = False) -> str:
    """``samples`` in the Prometheus text exposition format 0.0.4 (``CONTENT_TYPE``), as dcgm-exporter writes them.

    Four gauges (``METRICS``), each with its ``# HELP`` and ``# TYPE`` lines and one line per sample, labelled
    ``gpu``, ``UUID``, ``device``, ``modelName``, ``GPU_I_PROFILE`` and ``GPU_I_ID`` (MIG instances),
    ``Hostname``, ``vgpu`` (time-sliced shares), and ``container``, ``namespace``, ``pod`` when a pod holds the
    device (the exporter leaves them out otherwise; to Prometheus an empty label is a missing one).
    ``DCGM_FI_DEV_GPU_UTIL`` has no line for MIG instances unless ``mig_gpu_util``.
    """
    escaped: dict[str, str] = {}

    def esc(value: str) -> str:
        found = escaped.get(value)
        if found is None:
            found = escaped[value] = escape_label_value(value)
        return found

    labels = []
    for sample in samples:
        text = f'gpu="{sample.gpu}",UUID="{esc(sample.uuid)}",device="{esc(sample.device)}"'
        text += f',modelName="{esc(sample.model)}"'
        if sample.gpu_instance_profile or sample.gpu_instance_id is not None:
            text += f',GPU_I_PROFILE="{esc(sample.gpu_instance_profile)}",GPU_I_ID="{sample.gpu_instance_id}"'
        text += f',Hostname="{esc(sample.hostname)}"'
        if sample.vgpu is not None:
            text += f',vgpu="{sample.vgpu}"'
        if sample.pod:
            text += f',container="{esc(sample.container)}",namespace="{esc(sample.namespace)}",pod="{esc(sample.pod)}"'
        labels.append(text)

    lines: list[str] = []
    for name, help_text in METRICS:
        lines.append(f"# HELP {name} {_escape_help(help_text)}\n# TYPE {name} gauge")
        if name == GPU_UTIL:
            lines += [
                f"{name}{{{text}}} {sample.util}"
                for sample, text in zip(samples, labels, strict=True)
                if mig_gpu_util or sample.gpu_instance_id is None
            ]
        elif name == FB_FREE:
            lines += [f"{name}{{{text}}} {sample.fb_free}" for sample, text in zip(samples, labels, strict=True)]
        elif name == FB_USED:
            lines += [f"{name}{{{text}}} {sample.fb_used}" for sample, text in zip(samples, labels, strict=True)]
        else:
            lines += [
                f"{name}{{{text}}} {sample.gr_engine_active!r}" for sample, text in zip(samples, labels, strict=True)
            ]
    lines.append("")
    return "\n".join(lines)
