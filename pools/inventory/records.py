"""Reading Kubernetes node and pod objects into the few fields accounting and membership need.

Pure functions, no Django. Real clusters send odd things (missing status, ``1.5k`` or ``100m`` GPUs,
unknown resources): a bad value is skipped with a warning, a bad object is skipped with a warning, and
nothing here raises on cluster data.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from pools.engine.accounting import TERMINATED_PHASES, pod_resource_requests
from pools.engine.errors import QuantityError
from pools.engine.quantities import parse_quantity
from pools.engine.workloads import controller, kept_annotations, workload_key, workload_user

GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# Where a node's GPU type is read, first found wins (SEMANTICS §8): GPU Feature Discovery, then the labels
# clusters without it set by hand (gpuctl's ``runwhere.ai/gpu-type`` among them).
GPU_TYPE_LABELS = (GPU_PRODUCT_LABEL, "nvidia.com/gpu-type", "nvidia.com/gpuType", "runwhere.ai/gpu-type")
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB per GPU (GPU Feature Discovery)
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
PREEMPTIBLE_PRIORITY = "LOW"


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large list is decoded or a fleet generated.

    Decoding 150,000 pods allocates millions of containers; each allocation burst triggers collections
    that scan everything decoded so far, which makes the decode 2.5x slower. The data has no cycles, so
    nothing is lost by collecting once at the end.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class InventoryError(Exception):
    """The inventory could not be read at all (unreachable cluster, unreadable file)."""


def object_version(obj: dict, *, trust_resource_version: bool) -> str:
    """What sync compares to decide whether an object changed.

    The API server changes ``resourceVersion`` on every change, so a live source trusts it; a file or a
    generated fleet may repeat one, so there a digest of the whole object stands in for it.
    """
    if trust_resource_version:
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            return str(version)
    digest = hashlib.blake2b(json.dumps(obj, sort_keys=True, default=str).encode(), digest_size=12)
    return "h:" + digest.hexdigest()


def _quantity(value: Any, what: str, warnings: list[str]) -> Decimal:
    if value is None:
        return Decimal(0)
    try:
        return parse_quantity(value)
    except QuantityError:
        warnings.append(f"{what}: {value!r} is not a quantity; counted as 0")
        return Decimal(0)


@dataclass(slots=True)
class NodeRecord:
    name: str
    labels: dict
    taints: list
    conditions: list
    unschedulable: bool
    allocatable: dict
    cpu: Decimal
    memory: int
    storage: int
    gpu: Decimal
    mig_devices: dict
    gpu_replicas: int
    resource_version: str = ""
    address: str = ""

    @property
    def gpu_product(self) -> str:
        return gpu_type(self.labels)

    @property
    def gpu_memory(self) -> int:
        """Bytes of GPU memory on the node: GFD's per-GPU MiB times its physical GPUs (0 when unlabelled)."""
        try:
            per_gpu = int(self.labels.get(GPU_MEMORY_LABEL) or 0)
        except ValueError:
            return 0
        try:
            count = int(self.labels.get(GPU_COUNT_LABEL) or 0)
        except ValueError:
            count = 0
        if not count:
            count = int(self.gpu / self.gpu_replicas) if self.gpu_replicas else int(self.gpu)
        return max(0, per_gpu) * count * 2**20

    def node_fields(self) -> dict:
        """The Node model's synced fields."""
        return {
            "labels": self.labels,
            "taints": self.taints,
            "conditions": self.conditions,
            "unschedulable": self.unschedulable,
            "allocatable": self.allocatable,
            "gpu_product": self.gpu_product,
            "gpu_memory": self.gpu_memory,
            "cpu": self.cpu,
            "memory": self.memory,
            "storage": self.storage,
            "gpu": self.gpu,
            "mig_devices": self.mig_devices,
            "gpu_replicas": self.gpu_replicas,
            "resource_version": self.resource_version,
            "address": self.address,
        }


@dataclass(slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str
    node_name: str
    phase: str
    labels: dict
    cpu: Decimal
    memory: int
    storage: int
    gpu: Decimal
    mig_devices: dict = field(default_factory=dict)
    resource_version: str = ""
    created: str = ""  # metadata.creationTimestamp, as the API server writes it
    node_selector: dict = field(default_factory=dict)  # spec.nodeSelector
    # What workloads read (SEMANTICS §10): see engine.workloads.
    workload_kind: str = ""
    workload_name: str = ""
    owner_kind: str = ""
    owner_name: str = ""
    annotations: dict = field(default_factory=dict)  # only engine.workloads.KEPT_ANNOTATIONS
    priority_class: str = ""  # spec.priorityClassName
    started: str = ""  # status.startTime, as the API server writes it
    scheduled_reason: str = ""  # the PodScheduled condition's, when its status is not True
    scheduled_message: str = ""
    user: str = ""

    def pod_fields(self, pool_label: str, priority_label: str) -> dict:
        """The Pod model's synced fields; the pool and priority come from the backend's label keys."""
        return {
            "uid": self.uid,
            "node_name": self.node_name,
            "phase": self.phase,
            "labels": self.labels,
            "pool_name": self.labels.get(pool_label, ""),
            "node_selector": self.node_selector,
            "preemptible": self.labels.get(priority_label, "").upper() == PREEMPTIBLE_PRIORITY,
            "cpu": self.cpu,
            "memory": self.memory,
            "storage": self.storage,
            "gpu": self.gpu,
            "mig_devices": self.mig_devices,
            "resource_version": self.resource_version,
            "created": parse_timestamp(self.created),
            "workload_kind": self.workload_kind,
            "workload_name": self.workload_name,
            "owner_kind": self.owner_kind,
            "owner_name": self.owner_name,
            "annotations": self.annotations,
            "priority_class": self.priority_class,
            "started": parse_timestamp(self.started),
            "scheduled_reason": self.scheduled_reason,
            "scheduled_message": self.scheduled_message,
            "user": self.user,
        }


@dataclass
class Inventory:
    """What a source returned: Kubernetes node and pod objects, warnings, and each list's resourceVersion.

    Objects stay as (narrowly decoded) dicts; sync turns into records only the ones whose version
    changed, so a resync of a large, mostly unchanged cluster parses almost nothing. With
    ``trusted_versions`` an object's ``resourceVersion`` says whether it changed (a live API server);
    otherwise a digest of the object does. ``resource_versions`` (``{"nodes": ..., "pods": ...}``) is
    where a watch of each kind starts.
    """

    nodes: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    resource_versions: dict = field(default_factory=dict)
    trusted_versions: bool = False

    def keyed_nodes(self) -> dict[str, tuple[str, dict]]:
        """Nodes by name, each with its version."""
        result = {}
        for obj in self.nodes:
            listed = listed_node(obj, self.warnings, trust_resource_version=self.trusted_versions)
            if listed:
                result[listed[0]] = (listed[1], obj)
        return result

    def keyed_pods(self) -> dict[tuple[str, str], tuple[str, dict]]:
        """Non-terminated pods by (namespace, name), each with its version."""
        result = {}
        for obj in self.pods:
            listed = listed_pod(obj, self.warnings, trust_resource_version=self.trusted_versions)
            if listed:
                result[listed[0]] = (listed[1], obj)
        return result


def listed_node(obj: dict, warnings: list[str], *, trust_resource_version: bool) -> tuple[str, str] | None:
    """A listed Node object's key (its name) and version; None, with a warning, when it has no name."""
    name = (obj.get("metadata") or {}).get("name")
    if isinstance(name, str) and name:
        return name, object_version(obj, trust_resource_version=trust_resource_version)
    warnings.append("skipped a node without metadata.name")
    return None


def listed_pod(obj: dict, warnings: list[str], *, trust_resource_version: bool) -> tuple[tuple[str, str], str] | None:
    """A listed Pod object's key ``(namespace, name)`` and version; None when it terminated, or has no name."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        warnings.append("skipped a pod without metadata.name")
        return None
    if ((obj.get("status") or {}).get("phase") or "Pending") in TERMINATED_PHASES:
        return None
    key = (str(metadata.get("namespace") or "default"), name)
    return key, object_version(obj, trust_resource_version=trust_resource_version)


def _string_map(value: Any) -> dict:
    if not isinstance(value, dict):
        return {}
    # The wire schemas already decode labels as strings: such a map is taken as it is, not copied.
    for k, v in value.items():
        if type(k) is not str or type(v) is not str:
            return {str(k): "" if v is None else str(v) for k, v in value.items()}
    return value


def parse_timestamp(text: str) -> datetime | None:
    """An RFC 3339 time as the API server writes it (``2026-01-02T03:04:05Z``), or None."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def node_address(status: dict) -> str:
    """A node's ``InternalIP`` (else its first address), as ``kubectl get nodes -o wide`` shows it."""
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, dict) and a.get("address")]
    for address in addresses:
        if address.get("type") == "InternalIP":
            return str(address["address"])[:64]
    return str(addresses[0]["address"])[:64] if addresses else ""


def gpu_type(labels: dict) -> str:
    """A node's GPU type from its labels (``GPU_TYPE_LABELS``), or ``""``."""
    for key in GPU_TYPE_LABELS:
        if labels.get(key):
            return labels[key]
    return ""


def node_record(obj: Any, warnings: list[str], *, trust_resource_version: bool = False) -> NodeRecord | None:
    """A NodeRecord from a Kubernetes Node object, or None (with a warning) if it has no name."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        warnings.append("skipped a node without metadata.name")
        return None
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    if not status:
        warnings.append(f"node {name}: no status; it has no resources and no conditions")
    allocatable = _string_map(status.get("allocatable") or status.get("capacity"))
    labels = _string_map(metadata.get("labels"))
    taints = [t for t in spec.get("taints") or [] if isinstance(t, dict) and t.get("key")]
    conditions = [
        {
            "type": str(c.get("type")),
            "status": str(c.get("status", "Unknown")),
            "reason": str(c.get("reason") or ""),
            "message": str(c.get("message") or ""),
        }
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type")
    ]
    mig = {}
    for resource, value in allocatable.items():
        if resource.startswith(MIG_PREFIX):
            mig[resource[len(MIG_PREFIX) :]] = int(_quantity(value, f"node {name} {resource}", warnings))
    try:
        replicas = int(labels.get(GPU_REPLICAS_LABEL) or 0)
    except ValueError:
        warnings.append(f"node {name}: label {GPU_REPLICAS_LABEL}={labels[GPU_REPLICAS_LABEL]!r} is not a number")
        replicas = 0
    return NodeRecord(
        name=name,
        labels=labels,
        taints=[
            {"key": str(t["key"]), "value": str(t.get("value") or ""), "effect": str(t.get("effect") or "")}
            for t in taints
        ],
        conditions=conditions,
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=allocatable,
        cpu=_quantity(allocatable.get("cpu"), f"node {name} cpu", warnings),
        memory=int(_quantity(allocatable.get("memory"), f"node {name} memory", warnings)),
        storage=int(_quantity(allocatable.get("ephemeral-storage"), f"node {name} ephemeral-storage", warnings)),
        gpu=_quantity(allocatable.get(GPU), f"node {name} {GPU}", warnings),
        mig_devices=mig,
        gpu_replicas=replicas if replicas > 1 else 0,
        resource_version=object_version(obj, trust_resource_version=trust_resource_version),
        address=node_address(status),
    )


# Run:ai's fractional GPUs: a pod without an nvidia.com/gpu request asking for part of a GPU (SEMANTICS §9).
GPU_FRACTION_ANNOTATION = "gpu-fraction"
GPU_FRACTION_DEVICES_ANNOTATION = "gpu-fraction-num-devices"


def gpu_fraction(annotations: Any, where: str, warnings: list[str]) -> Decimal:
    """The GPUs a Run:ai fraction asks for (``gpu-fraction`` × ``gpu-fraction-num-devices``), else 0."""
    if not isinstance(annotations, dict) or GPU_FRACTION_ANNOTATION not in annotations:
        return Decimal(0)
    text, devices = (
        str(annotations[GPU_FRACTION_ANNOTATION]),
        str(annotations.get(GPU_FRACTION_DEVICES_ANNOTATION, "1")),
    )
    try:
        fraction, count = Decimal(text[:32]), int(devices[:6])
    except (ArithmeticError, ValueError):
        fraction, count = Decimal(-1), 0
    if not (fraction.is_finite() and 0 < fraction <= 1 and 1 <= count <= 64):
        warnings.append(
            f"{where}: gpu-fraction '{text[:32]}' x {devices[:6]} is not a fraction of 1 GPU on 1-64 devices"
        )
        return Decimal(0)
    return (fraction * count).quantize(Decimal("0.001"))


# The effective requests of each distinct set of container resources, computed once: the pods of a workload all ask
# for the same, so a 150,000-pod cluster has a few hundred sets, and computing them was half of a pod's record.
_REQUESTS_SEEN: dict[tuple, dict[str, Decimal]] = {}
_REQUESTS_SEEN_LIMIT = 10_000


def _pod_requests(spec: dict, warnings: list[str]) -> dict[str, Decimal]:
    """``pod_resource_requests`` of ``spec``, remembered by what it reads when that is all plain strings.

    The result is shared between pods: callers only read it. A spec whose requests raised warnings is not
    remembered, so each such pod still reports its own.
    """
    key = _requests_key(spec)
    requests = _REQUESTS_SEEN.get(key) if key is not None else None
    if requests is None:
        found: list[str] = []
        requests = pod_resource_requests(spec, warnings=found)
        warnings.extend(found)
        if key is not None and not found and _plain_resources(spec):
            if len(_REQUESTS_SEEN) >= _REQUESTS_SEEN_LIMIT:
                _REQUESTS_SEEN.clear()
            _REQUESTS_SEEN[key] = requests
    return requests


def _requests_key(spec: dict) -> tuple | None:
    """Everything ``pod_resource_requests`` reads of a pod spec, as a key (None when it is not even shaped so).

    Built without checking types, for speed: a key is only remembered once ``_plain_resources`` has found its
    spec made of lists, dicts and strings alone, and a key equal to such a key holds the same strings (``1``,
    ``1.0`` and ``True`` are equal to each other but not to ``"1"``).
    """
    key = []
    try:
        for containers_field in ("containers", "initContainers"):
            for container in spec.get(containers_field) or ():
                resources = container.get("resources") or {}
                requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
                key.append(
                    (containers_field, container.get("restartPolicy"), tuple(requests.items()), tuple(limits.items()))
                )
        overhead = spec.get("overhead")
        if overhead:
            key.append(("overhead", tuple(overhead.items())))
        key = tuple(key)
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


def _plain_resources(spec: dict) -> bool:
    """Whether the containers' resources and the overhead of ``spec`` are lists and dicts of strings only."""
    for containers_field in ("containers", "initContainers"):
        containers = spec.get(containers_field) or []
        if type(containers) is not list:
            return False
        for container in containers:
            resources = container.get("resources") or {}
            policy = container.get("restartPolicy")
            if type(resources) is not dict or not (policy is None or type(policy) is str):
                return False
            if not (_strings(resources.get("requests") or {}) and _strings(resources.get("limits") or {})):
                return False
    return _strings(spec.get("overhead") or {})


def _strings(values: Any) -> bool:
    return type(values) is dict and all(type(v) is str for v in values.values())


SCHEDULED_MESSAGE_LIMIT = 1000
# The kept annotations of each distinct set, shared between pods like their requests: most pods keep none, and the
# pods of one workload keep the same few. Callers only read them.
_ANNOTATIONS_SEEN: dict[tuple, dict[str, str]] = {}
_ANNOTATIONS_SEEN_LIMIT = 10_000


def _kept_annotations(annotations: Any) -> dict[str, str]:
    kept = kept_annotations(annotations)
    key = tuple(sorted(kept.items()))
    shared = _ANNOTATIONS_SEEN.get(key)
    if shared is None:
        if len(_ANNOTATIONS_SEEN) >= _ANNOTATIONS_SEEN_LIMIT:
            _ANNOTATIONS_SEEN.clear()
        shared = _ANNOTATIONS_SEEN[key] = kept
    return shared


def pod_scheduled(status: Any) -> tuple[str, str]:
    """The ``PodScheduled`` condition's reason and message (bounded) when its status is not True, else ``("", "")``."""
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return "", ""
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            if str(condition.get("status")) == "True":
                return "", ""
            reason = str(condition.get("reason") or "")[:128]
            return reason, str(condition.get("message") or "")[:SCHEDULED_MESSAGE_LIMIT]
    return "", ""


def _text(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def pod_record(obj: Any, warnings: list[str], *, trust_resource_version: bool = False) -> PodRecord | None:
    """A PodRecord from a Kubernetes Pod object; None for terminated pods and (with a warning) nameless ones."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        warnings.append("skipped a pod without metadata.name")
        return None
    namespace = str(metadata.get("namespace") or "default")
    status = obj.get("status")
    phase = str((status.get("phase") if isinstance(status, dict) else None) or "Pending")
    if phase in TERMINATED_PHASES:
        return None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    bad: list[str] = []
    requests = _pod_requests(spec, bad)
    if bad:
        warnings.extend(f"pod {namespace}/{name}: {message}" for message in bad)
    gpu = requests.get(GPU)
    if not gpu and metadata.get("annotations"):
        gpu = gpu_fraction(metadata["annotations"], f"pod {namespace}/{name}", warnings)
    labels = _string_map(metadata.get("labels"))
    annotations = _kept_annotations(metadata.get("annotations"))
    owner_kind, owner_name = controller(metadata.get("ownerReferences"))
    owner_kind, owner_name = owner_kind[:64], owner_name[:253]
    workload_kind, workload_name = workload_key(name, labels, annotations, owner_kind, owner_name)
    scheduled_reason, scheduled_message = pod_scheduled(status)
    return PodRecord(
        namespace=namespace,
        name=name,
        uid=str(metadata.get("uid") or ""),
        node_name=str(spec.get("nodeName") or ""),
        phase=phase,
        labels=labels,
        cpu=requests.get("cpu", Decimal(0)),
        memory=int(requests.get("memory", 0)),
        storage=int(requests.get("ephemeral-storage", 0)),
        gpu=gpu or Decimal(0),
        mig_devices={
            resource[len(MIG_PREFIX) :]: int(amount.to_integral_value(rounding="ROUND_CEILING"))
            for resource, amount in requests.items()
            if resource.startswith(MIG_PREFIX) and amount > 0
        },
        resource_version=object_version(obj, trust_resource_version=trust_resource_version),
        created=str(metadata.get("creationTimestamp") or ""),
        node_selector=_string_map(spec.get("nodeSelector")),
        workload_kind=workload_kind[:64],
        workload_name=workload_name[:253],
        owner_kind=owner_kind,
        owner_name=owner_name,
        annotations=annotations,
        priority_class=_text(spec.get("priorityClassName"), 253),
        started=_text(status.get("startTime") if isinstance(status, dict) else None, 64),
        scheduled_reason=scheduled_reason,
        scheduled_message=scheduled_message,
        user=workload_user(labels, annotations, namespace)[:253],
    )


def inventory_from_list(document: Any) -> Inventory:
    """An Inventory from a Kubernetes ``List`` (``kubectl get nodes,pods -A -o json``) or a NodeList/PodList."""
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise InventoryError("expected a Kubernetes List with 'items'")
    list_kind = str(document.get("kind") or "")
    inventory = Inventory()
    add_objects(inventory, document["items"], default_kind=list_kind.removesuffix("List"))
    return inventory


def add_objects(inventory: Inventory, items: list, *, default_kind: str = "") -> None:
    """Add Kubernetes objects to ``inventory``, skipping (with a warning) what is not a Node or a Pod."""
    for index, item in enumerate(items, 1):
        if not isinstance(item, dict):
            inventory.warnings.append(f"item {index} is not an object; skipped")
            continue
        kind = item.get("kind") or default_kind
        if kind == "Node":
            inventory.nodes.append(item)
        elif kind == "Pod":
            inventory.pods.append(item)
