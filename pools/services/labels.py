"""gpuctl's pool workflow written to the cluster (SEMANTICS §8.1): label pools created from ``kind: pool`` files,
deleted with their nodes' labels, and single node labels.

Every write here is all or nothing across the cluster and the database:

1. everything is checked first: the file, the gate (``CHANGE_CONFIG`` on pools through ``config_apply`` in dry
   run, ``OPERATE_BACKEND`` on the backend), a writable backend (a Kubernetes cluster, or a simulated one, which
   keeps what is written: ``pools.inventory.node_labels``), and the cluster's nodes as read now in one list: a
   missing node, or one already in another pool without ``overwrite``, refuses the whole change with the node
   named;
2. each node is patched with a JSON merge patch carrying the ``resourceVersion`` it was checked at, so a node
   changed meanwhile is a 409: it is read again once and checked again, else the change fails;
3. if any patch fails, the ones already applied are undone (old values restored, added labels removed);
4. then one transaction writes the pool through ``config_apply``, the patched nodes through
   ``watch_events_apply`` (membership is right at once, without waiting for a watch or a sync) and one
   ``NodeLabelChange`` per label changed; if it fails the patches are undone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.db import transaction

from accounts.access import require
from pools import selectors
from pools.choices import LABEL_WRITABLE_KINDS, BackendKind, ConfigType
from pools.configs import gpuctl_file_parse
from pools.engine.errors import ConfigError, Conflict, NotFound, Problem
from pools.engine.labels import label_key_problem, label_value_problem
from pools.engine.permissions import OPERATE_BACKEND
from pools.inventory.records import GPU_TYPE_LABELS, InventoryError
from pools.inventory.sources import KubernetesSource, NodeChanged, NodeGone, SimulatedSource, WatchEvent, source_for
from pools.models import Backend, Node, NodeLabelChange, Pool
from pools.querysets import visible_object

from .actors import Actor
from .config import HIDDEN_NODES_MOVED, authorize_names, config_apply
from .inventory import watch_events_apply

logger = logging.getLogger(__name__)

GPU_TYPE_LABEL = GPU_TYPE_LABELS[-1]  # runwhere.ai/gpu-type, what gpuctl's files set
PATCH_THREADS = 4
# A cluster whose node labels can be written: both list, read and patch nodes alike (409 on a stale version).
LabelledCluster = KubernetesSource | SimulatedSource


class PoolBusy(Conflict):
    """The pool has running or pending workloads (409); ``workloads`` lists them."""

    def __init__(self, pool: str, workloads: list[dict]):
        self.workloads = workloads
        shown = ", ".join(f"{w['namespace']}/{w['name']} ({w['phase']}, {w['gpu']:g} GPU)" for w in workloads[:10]) + (
            f" and {len(workloads) - 10} more" if len(workloads) > 10 else ""
        )
        super().__init__(
            [
                Problem(
                    "",
                    f"pool '{pool}' has {len(workloads)} running or pending workload"
                    f"{'s' if len(workloads) > 1 else ''}: {shown}; use --force to delete it anyway "
                    "(nothing is terminated)",
                )
            ]
        )


@dataclass
class NodePatch:
    """One node's label change: the new values (None removes), the old ones, the version it was checked at."""

    node: str
    labels: dict[str, str | None]
    before: dict[str, str | None]
    version: str
    applied: dict | None = None  # the Node object the API server returned
    error: Exception | None = field(default=None, repr=False)


# --- the backend written to -------------------------------------------------------------------------------


def writable_backend(*, actor: Actor, backend: str | None = None) -> Backend:
    """The backend a gpuctl verb writes to: ``backend``, else the only writable backend (kubernetes or simulated)
    the actor may see. NotFound for one they may not see, 403 without ``OPERATE_BACKEND`` on it, and a clear error
    for none, for several, and for a backend whose labels cannot be written.
    """
    visible = Backend.objects.restrict(actor.principal)
    if backend:
        found = visible.filter(name=backend).first()
        if found is None:
            raise NotFound(f"backend '{backend}' does not exist")
    else:
        candidates = list(visible.filter(kind__in=LABEL_WRITABLE_KINDS, writable=True).order_by("name"))
        if not candidates:
            raise ConfigError("there is no writable backend (kind: kubernetes or simulated, writable: true)")
        if len(candidates) > 1:
            names = ", ".join(b.name for b in candidates)
            raise ConfigError(f"several writable backends ({names}): choose one with --backend")
        found = candidates[0]
    require(actor.principal, OPERATE_BACKEND, found.name, what=f"labelling the nodes of backend '{found.name}'")
    _check_writable(found)
    return found


def _check_writable(backend: Backend) -> None:
    if backend.kind not in LABEL_WRITABLE_KINDS or not backend.writable:
        raise ConfigError(
            f"backend '{backend.name}' is not writable: node labels can only be changed on a "
            "kubernetes or simulated backend with writable: true"
        )


def _source(backend: Backend) -> LabelledCluster:
    source = source_for(backend)
    assert isinstance(source, KubernetesSource | SimulatedSource)
    return source


# --- planning, patching and undoing -------------------------------------------------------------------------


def _labels(obj: dict) -> dict:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _version(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


Check = Callable[[str, dict], "NodePatch | None"]


def _patch_all(source: LabelledCluster, patches: list[NodePatch], check: Check) -> None:
    """Apply every patch (up to ``PATCH_THREADS`` at once), or none: after a failure the rest are not sent and
    the applied ones are undone. A 409 re-reads the node once and asks ``check`` again (which may refuse).
    """
    failed = threading.Event()

    def one(patch: NodePatch) -> None:
        if failed.is_set():
            return
        try:
            try:
                patch.applied = source.patch_node_labels(patch.node, patch.labels, resource_version=patch.version)
            except NodeChanged:
                again = check(patch.node, source.read_node(patch.node))
                if again is None:  # it already has the wanted labels
                    return
                patch.labels, patch.before, patch.version = again.labels, again.before, again.version
                patch.applied = source.patch_node_labels(patch.node, patch.labels, resource_version=patch.version)
        except (InventoryError, ConfigError) as exc:
            patch.error = exc
            failed.set()

    _run(one, patches)
    failures = [patch for patch in patches if patch.error is not None]
    if not failures:
        return
    undone = _undo(source, patches)
    first = failures[0]
    if isinstance(first.error, ConfigError):
        reason = str(first.error)
    elif isinstance(first.error, NodeGone):
        reason = f"labelling node '{first.node}' failed: it no longer exists"
    elif isinstance(first.error, NodeChanged):
        reason = f"labelling node '{first.node}' failed: it changed again while being labelled"
    else:
        reason = f"labelling node '{first.node}' failed: {first.error}"
    raise Conflict(f"{reason}; {undone}")


def _run(function, patches: list[NodePatch]) -> None:
    if len(patches) <= 1:
        for patch in patches:
            function(patch)
        return
    with ThreadPoolExecutor(max_workers=min(PATCH_THREADS, len(patches)), thread_name_prefix="label") as executor:
        list(executor.map(function, patches))


def _undo(source: LabelledCluster, patches: list[NodePatch]) -> str:
    """Put back the old values of the applied patches; says what happened, for the error message."""
    applied = [patch for patch in patches if patch.applied is not None]
    problems: list[str] = []

    def one(patch: NodePatch) -> None:
        # Only the labels still as this change left them: a later change by someone else is kept.
        try:
            current = source.read_node(patch.node)
            now = _labels(current)
            restore = {key: old for key, old in patch.before.items() if now.get(key) == patch.labels[key]}
            if restore:
                source.patch_node_labels(patch.node, restore, resource_version=_version(current))
            patch.applied = None
        except InventoryError as exc:
            problems.append(f"{patch.node} ({exc})")

    _run(one, applied)
    if problems:
        logger.error("could not undo label changes on %s", ", ".join(problems))
        return f"the labels of {len(applied)} node(s) already changed could not all be restored: {', '.join(problems)}"
    return f"no label was left changed ({len(applied)} undone)" if applied else "no label was changed"


def _commit(
    *,
    backend: Backend,
    source: LabelledCluster,
    patches: list[NodePatch],
    actor: Actor,
    operation: str,
    config_changes: Callable | None,
    description: str,
) -> None:
    """The database side, in one transaction; undoes the cluster's patches if it fails."""
    applied = [patch for patch in patches if patch.applied is not None]
    hidden_before = selectors.hidden_nodes(actor.principal, backends=[backend.name])
    try:
        with transaction.atomic():
            # The config change first (it takes the config lock, then the inventory lock, as every config change
            # does), so that it is judged on the nodes as they were: a node it moves is one its writer may move.
            if config_changes is not None:
                config_apply(changes=config_changes, actor=actor, description=description)
            if applied:
                watch_events_apply(
                    backend=backend,
                    events=[WatchEvent("MODIFIED", "nodes", patch.applied) for patch in applied],
                    # as a watch of the backend applies its events: a simulated fleet's versions are not the API's
                    trusted_versions=backend.kind == BackendKind.KUBERNETES,
                )
            if selectors.hidden_nodes_moved(hidden_before):
                raise ConfigError(HIDDEN_NODES_MOVED)
            NodeLabelChange.objects.bulk_create(
                [
                    NodeLabelChange(
                        backend=backend,
                        node_name=patch.node,
                        key=key,
                        old_value=patch.before.get(key),
                        new_value=value,
                        username=actor.username,
                        origin=actor.origin,
                        operation=operation[:256],
                    )
                    for patch in applied
                    for key, value in patch.labels.items()
                ],
                batch_size=500,
            )
    except BaseException:
        _undo(source, patches)
        raise


# --- label pools ------------------------------------------------------------------------------------------


def _hidden_nodes(actor: Actor, backend: Backend, names: list[str], cluster: dict[str, dict]) -> set[str]:
    """The nodes among ``names`` that belong to a pool hidden from the actor: as synced, or as their pool label
    in the cluster says now (a label pool's nodes carry its label before any sync has seen them)."""
    if not names:
        return set()
    synced = Node.objects.filter(backend=backend, name__in=names)
    hidden = set(synced.hidden_from(actor.principal).values_list("name", flat=True))
    labelled = {name: _labels(cluster[name]).get(backend.pool_label_key) for name in names}
    pools = {value for value in labelled.values() if value}
    if pools:
        label_pools = Pool.objects.filter(backend=backend, node_label__value__in=sorted(pools))
        unseen = {
            pool.node_label.get("value")
            for pool in label_pools
            if pool.node_label.get("key") == backend.pool_label_key
            and not visible_object(actor.principal, ConfigType.POOL, pool.name)
        }
        hidden |= {name for name, value in labelled.items() if value in unseen}
    return hidden


def _pool_changes(*, name: str, description: str, backend: Backend) -> Callable[[dict], dict]:
    """The config change a pool file makes: create the label pool, or update the description of the one there."""
    node_label = {"key": backend.pool_label_key, "value": name}

    def changes(state: dict) -> dict:
        current = state[ConfigType.POOL].get(name)
        if current is None:
            body = {"backend": backend.name, "description": description, "node_label": node_label}
        else:
            if current.get("backend") != backend.name or current.get("node_label") != node_label:
                raise Conflict(
                    f"pool '{name}' already exists and is not the label pool {node_label['key']}={name} "
                    f"of backend '{backend.name}'"
                )
            body = {**current, "description": description}
        return {ConfigType.POOL: {name: body}}

    return changes


def label_pool_apply(*, document, actor: Actor, backend: str | None = None, overwrite: bool = False) -> dict:
    """``poolctl create -f FILE``: create or update the label pool a gpuctl file names and label its nodes
    ``<pool_label_key>=<name>`` (and ``runwhere.ai/gpu-type=<T>`` when T is given), all or nothing.

    ``document`` is the parsed file (or what ``gpuctl_file_parse`` returned). Returns ``{"pool", "backend",
    "labelled": [nodes changed], "unchanged": [nodes already labelled]}``.
    """
    parsed = document if set(document or ()) == {"name", "description", "nodes"} else gpuctl_file_parse(document)
    name = parsed["name"]
    authorize_names(actor, {ConfigType.POOL: {name: {}}})  # the gate first: 404 or 403 before anything else
    target = writable_backend(actor=actor, backend=backend)
    key = target.pool_label_key
    changes = _pool_changes(name=name, description=parsed["description"], backend=target)
    operation = f"create -f {name}"
    # The gate and every config rule, before the cluster is touched.
    config_apply(changes=changes, actor=actor, dry_run=True)

    wanted = {
        node: {key: name, **({GPU_TYPE_LABEL: gpu_type} if gpu_type else {})}
        for node, gpu_type in parsed["nodes"].items()
    }

    def check(node: str, obj: dict) -> NodePatch | None:
        labels = _labels(obj)
        current = labels.get(key)
        if current and current != name and not overwrite:
            raise Conflict(
                f"node '{node}' is already in pool '{current}' ({key}={current}); use --overwrite to move it"
            )
        change = {k: v for k, v in wanted[node].items() if labels.get(k) != v}
        if not change:
            return None
        return NodePatch(node, change, {k: labels.get(k) for k in change}, _version(obj))

    source = _source(target)
    nodes = {str(obj["metadata"]["name"]): obj for obj in source.list_nodes()}
    # Nodes of pools hidden from the actor do not exist for them (SEMANTICS §7.4): refused in the same words.
    hidden = _hidden_nodes(actor, target, [node for node in wanted if node in nodes], nodes)
    missing = sorted(node for node in wanted if node not in nodes or node in hidden)
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        shown = ", ".join(f"'{n}'" for n in missing[:10]) + more
        raise ConfigError(
            [
                Problem(
                    f"nodes.{missing[0]}",
                    f"node{'s' if len(missing) > 1 else ''} {shown} "
                    f"do{'' if len(missing) > 1 else 'es'} not exist in backend '{target.name}'; no label was changed",
                )
            ]
        )
    patches = [patch for node in wanted if (patch := check(node, nodes[node])) is not None]
    _patch_all(source, patches, check)
    _commit(
        backend=target,
        source=source,
        patches=patches,
        actor=actor,
        operation=operation,
        config_changes=changes,
        description=f"gpuctl: create -f ({len(wanted)} nodes)",
    )
    labelled = sorted(patch.node for patch in patches if patch.applied is not None)
    return {
        "pool": name,
        "backend": target.name,
        "labelled": labelled,
        "unchanged": sorted(set(wanted) - set(labelled)),
    }


def label_pool_delete(*, name: str, actor: Actor, force: bool = False) -> dict:
    """``poolctl delete pool NAME``: remove the pool's label from its nodes in the cluster, then the pool.

    Refused (``PoolBusy``, 409) while the pool has running or pending workloads, unless ``force`` (which
    terminates nothing). A backend's default pool cannot be deleted. Labels are removed only for a pool of the
    backend's ``pool_label_key`` (a gpuctl pool); any other pool is only deleted from the configuration.
    Returns ``{"pool", "unlabelled": [nodes], "workloads": [...]}``.
    """
    pool = selectors.pool_get(name, user=actor.principal)
    authorize_names(actor, {ConfigType.POOL: {name: None}})
    owner = Backend.objects.filter(default_pool=name).values_list("name", flat=True).first()
    if owner:
        raise Conflict(f"pool '{name}' is the default pool of backend '{owner}' and cannot be deleted")
    workloads = selectors.pool_jobs(pool)
    if workloads and not force:
        raise PoolBusy(name, workloads)
    backend = pool.backend
    label = pool.node_label or {}
    labelled = label.get("key") == backend.pool_label_key
    changes = {ConfigType.POOL: {name: None}}
    config_apply(changes=changes, actor=actor, dry_run=True)
    patches: list[NodePatch] = []
    source = None
    if labelled:
        require(actor.principal, OPERATE_BACKEND, backend.name, what=f"labelling the nodes of backend '{backend.name}'")
        _check_writable(backend)
        key, value = label["key"], label["value"]

        def check(node: str, obj: dict) -> NodePatch | None:
            if _labels(obj).get(key) != value:
                return None
            return NodePatch(node, {key: None}, {key: value}, _version(obj))

        source = _source(backend)
        patches = [
            patch for obj in source.list_nodes() if (patch := check(str(obj["metadata"]["name"]), obj)) is not None
        ]
        _patch_all(source, patches, check)
    operation = f"delete pool {name}" + (" --force" if force else "")
    if source is None:
        config_apply(changes=changes, actor=actor, description=f"gpuctl: {operation}")
    else:
        _commit(
            backend=backend,
            source=source,
            patches=patches,
            actor=actor,
            operation=operation,
            config_changes=changes,
            description=f"gpuctl: {operation}",
        )
    return {
        "pool": name,
        "unlabelled": sorted(patch.node for patch in patches if patch.applied is not None),
        "workloads": workloads,
    }


# --- one node's labels ------------------------------------------------------------------------------------


def node_label(
    *,
    node: str,
    key: str,
    value: str | None,
    actor: Actor,
    overwrite: bool = False,
    backend: str | None = None,
) -> NodeLabelChange:
    """Set (or with ``value=None`` remove) a label on a node in its cluster, and leave an audit entry.

    Like ``kubectl label``: changing an existing value needs ``overwrite``. Needs ``OPERATE_BACKEND`` on the
    node's backend (a node the actor may not see is NotFound). Refused, with the reason, when the node's
    backend is not a writable one (kubernetes or simulated). The node is read from the cluster and patched at that
    ``resourceVersion``; if it changed meanwhile (409) it is read and checked once more.
    """
    nodes = Node.objects.restrict(actor.principal).select_related("backend").filter(name=node)
    if backend:
        nodes = nodes.filter(backend__name=backend)
    found = list(nodes)
    if not found:
        raise NotFound(f"node '{node}' does not exist" + (f" in backend '{backend}'" if backend else ""))
    if len(found) > 1:
        names = ", ".join(sorted(n.backend.name for n in found))
        raise ConfigError(f"node '{node}' exists in several backends ({names}); choose one with --backend")
    target = found[0]
    require(actor.principal, OPERATE_BACKEND, target.backend.name, what=f"labelling node '{node}'")
    _check_writable(target.backend)
    problem = label_key_problem(key) or (label_value_problem(value) if value is not None else None)
    if problem:
        raise ConfigError(problem)

    def check(name: str, obj: dict) -> NodePatch:
        old = _labels(obj).get(key)
        if value is None and old is None:
            raise ConfigError(f"node '{node}' has no label '{key}'")
        if value is not None and old is not None and old != value and not overwrite:
            raise ConfigError(f"node '{node}' already has {key}={old}; use --overwrite to change it")
        return NodePatch(name, {key: value}, {key: old}, _version(obj))

    source = _source(target.backend)
    try:
        patch = check(target.name, source.read_node(target.name))
    except NodeGone:
        raise NotFound(f"node '{node}' no longer exists in backend '{target.backend.name}'") from None
    _patch_all(source, [patch], check)
    operation = f"label node {target.name} " + (f"{key}={value}" if value is not None else f"{key}-")
    _commit(
        backend=target.backend,
        source=source,
        patches=[patch],
        actor=actor,
        operation=operation,
        config_changes=None,
        description="",
    )
    return NodeLabelChange.objects.filter(backend=target.backend, node_name=target.name, key=key).latest("id")
