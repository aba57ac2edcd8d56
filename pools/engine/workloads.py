"""Workloads (SEMANTICS §10): which pods were submitted together, whose they are, and what phase they are in.

A workload is the pods of one pod group (the annotation ``pod-group-name`` that KAI Scheduler and Run:ai write, or
the label ``scheduling.x-k8s.io/pod-group``); else the pod's controller from ``metadata.ownerReferences``, a
ReplicaSet named ``<deployment>-<pod-template-hash>`` standing for its Deployment; else the pod alone.

The sync computes each pod's workload key once, when it reads the pod (``workload_key``), so that the database can
group 150,000 pods by it; the rest here reads the sums it returns.
"""

from __future__ import annotations

from collections.abc import Mapping

POD_GROUP_ANNOTATION = "pod-group-name"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
TEMPLATE_HASH_LABEL = "pod-template-hash"
USER_KEYS = ("user", "runai/user", "osmo.user")
# KAI Scheduler's topology constraint of a workload: the node label its pods must share (required) or should.
REQUIRED_PLACEMENT = "kai.scheduler/topology-required-placement"
PREFERRED_PLACEMENT = "kai.scheduler/topology-preferred-placement"
# The annotations a pod keeps in the inventory: what the workload, its user, its project and its placement are read
# from.
KEPT_ANNOTATIONS = frozenset({POD_GROUP_ANNOTATION, *USER_KEYS, "runai/queue", REQUIRED_PLACEMENT, PREFERRED_PLACEMENT})

POD_GROUP = "PodGroup"
POD = "Pod"

PENDING = "Pending"
RUNNING = "Running"
PARTIALLY_RUNNING = "Partially running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
PHASES = (PENDING, RUNNING, PARTIALLY_RUNNING, SUCCEEDED, FAILED)


def controller(owner_references) -> tuple[str, str]:
    """The (kind, name) of the pod's controlling owner in ``metadata.ownerReferences``, or ``("", "")``.

    The reference marked ``controller: true`` wins; else the first well-formed one.
    """
    if not isinstance(owner_references, list):
        return "", ""
    found: tuple[str, str] = ("", "")
    for reference in owner_references:
        if not isinstance(reference, Mapping):
            continue
        kind, name = reference.get("kind"), reference.get("name")
        if not isinstance(kind, str) or not isinstance(name, str) or not kind or not name:
            continue
        if reference.get("controller") is True:
            return kind, name
        if found == ("", ""):
            found = (kind, name)
    return found


def workload_key(
    name: str, labels: Mapping[str, str], annotations: Mapping[str, str], owner_kind: str, owner_name: str
) -> tuple[str, str]:
    """The (kind, name) of the workload a pod belongs to, inside its namespace (SEMANTICS §10)."""
    group = annotations.get(POD_GROUP_ANNOTATION) or labels.get(POD_GROUP_LABEL)
    if group:
        return POD_GROUP, group
    if owner_kind == "ReplicaSet" and owner_name:
        template_hash = labels.get(TEMPLATE_HASH_LABEL, "")
        if template_hash and owner_name.endswith(f"-{template_hash}"):
            return "Deployment", owner_name[: -len(template_hash) - 1]
        return "ReplicaSet", owner_name
    if owner_kind and owner_name:
        return owner_kind, owner_name
    return POD, name


def workload_user(labels: Mapping[str, str], annotations: Mapping[str, str], namespace: str) -> str:
    """Who submitted it: the label or annotation ``user``, ``runai/user`` or ``osmo.user``, else the namespace."""
    for key in USER_KEYS:
        value = labels.get(key) or annotations.get(key)
        if value:
            return value
    return namespace


def kept_annotations(annotations) -> dict[str, str]:
    """The annotations the inventory keeps of a pod (``KEPT_ANNOTATIONS``, string values only)."""
    if not isinstance(annotations, Mapping):
        return {}
    return {key: value for key, value in annotations.items() if key in KEPT_ANNOTATIONS and isinstance(value, str)}


def workload_phase(running: int, pending: int, succeeded: int = 0, failed: int = 0) -> str:
    """A workload's phase from its pods' counts: some waiting and some running is ``Partially running``."""
    if pending and running:
        return PARTIALLY_RUNNING
    if running:
        return RUNNING
    if pending:
        return PENDING
    if failed:
        return FAILED
    return SUCCEEDED
