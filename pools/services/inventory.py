"""Inventory writes: membership, full sync, watch events, leases and node labels.

A full sync and a watch apply their changes through the same upsert path; both compare an object's
version (``resourceVersion`` from a live API, a digest otherwise) with the stored one and write only
what changed, in one transaction. Membership is recomputed only for the nodes that changed, since
pods never change membership. A resync of a Kubernetes backend lists only names and versions and reads
just the objects that changed (``_read``), then writes through the same path as a full sync.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db import DatabaseError, IntegrityError, close_old_connections, connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from accounts.access import require
from pools import selectors
from pools.choices import BackendKind
from pools.engine.errors import NotFound
from pools.engine.membership import node_availability, node_matches_pod_spec
from pools.engine.permissions import OPERATE_BACKEND
from pools.inventory.records import Inventory, InventoryError, node_record, pod_record
from pools.inventory.sources import KubernetesSource, SourceStatus, WatchEvent, WatchExpired, source_for
from pools.models import Backend, Lease, Node, NodeMembership, Pod, PoolPodUsage, placements_text

from .actors import Actor
from .bulk import upsert_rows

logger = logging.getLogger(__name__)

NODE_FIELDS = (
    "labels",
    "taints",
    "conditions",
    "unschedulable",
    "allocatable",
    "gpu_product",
    "gpu_memory",
    "cpu",
    "memory",
    "storage",
    "gpu",
    "mig_devices",
    "gpu_replicas",
    "resource_version",
    "address",
)
POD_FIELDS = (
    "uid",
    "node_name",
    "phase",
    "labels",
    "pool_name",
    "node_selector",
    "preemptible",
    "cpu",
    "memory",
    "storage",
    "gpu",
    "mig_devices",
    "resource_version",
    "created",
)
CHUNK = 2000
PING_SECONDS = 20
# Longer than any sync takes (15 s at 5,000 nodes); a crashed holder's lease frees itself after this.
SYNC_LEASE_SECONDS = 600


# --- membership ----------------------------------------------------------------------------------------


def membership_recompute(*, backend: Backend, node_names: Iterable[str] | None = None) -> None:
    """Recompute availability and node↔(pool, platform) membership (SEMANTICS.md §5) of a backend's nodes.

    With ``node_names`` only those nodes are looked at (a sync or a watch event changed them); without,
    every node (a config change). Writes only the rows that changed.
    """
    nodes = Node.objects.filter(backend=backend).only(
        "id", "name", "labels", "taints", "conditions", "unschedulable", "available", "unavailable_reason", "placements"
    )
    if node_names is not None:
        names = list(set(node_names))
        if not names:
            return
        nodes = [node for chunk in _chunks(names) for node in nodes.filter(name__in=chunk)]
    else:
        nodes = list(nodes)
    rules = backend.node_conditions or None
    placer = Placer(backend)
    wanted = {
        (node.id, pool.id, platform_name)
        for node in nodes
        for pool, platform_name in placer.place(labels=node.labels, taints=node.taints, node_name=node.name)
    }
    placements = defaultdict(list)
    for node_id, pool_id, platform_name in wanted:
        placements[node_id].append((pool_id, platform_name))
    changed_nodes = []
    for node in nodes:
        state = node_availability(conditions=node.conditions, unschedulable=node.unschedulable, rules=rules)
        text = placements_text(placements[node.id])
        if state != (node.available, node.unavailable_reason) or text != node.placements:
            node.available, node.unavailable_reason = state
            node.placements = text
            changed_nodes.append(node)
    if changed_nodes:
        Node.objects.bulk_update(changed_nodes, ["available", "unavailable_reason", "placements"], batch_size=500)

    existing_rows = NodeMembership.objects.filter(node__backend=backend)
    if node_names is not None:
        node_ids = [node.id for node in nodes]
        existing_rows = [
            row
            for chunk in _chunks(node_ids)
            for row in existing_rows.filter(node_id__in=chunk).values_list("pk", "node_id", "pool_id", "platform_name")
        ]
    else:
        existing_rows = existing_rows.values_list("pk", "node_id", "pool_id", "platform_name")
    existing = {(node_id, pool_id, platform): pk for pk, node_id, pool_id, platform in existing_rows}
    stale = [pk for key, pk in existing.items() if key not in wanted]
    for chunk in _chunks(stale):
        NodeMembership.objects.filter(pk__in=chunk).delete()
    NodeMembership.objects.bulk_create(
        [NodeMembership(node_id=n, pool_id=p, platform_name=name) for n, p, name in wanted - existing.keys()],
        batch_size=1000,
    )
    if node_names is None:  # memberships of pools that moved to another backend
        NodeMembership.objects.filter(node__backend=backend).exclude(pool__backend=backend).delete()


class Placer:
    """Where a node of a backend belongs (SEMANTICS §5, §8): each (pool, platform) whose merged template
    selects it; a node no pool selects goes to the backend's default pool, if it names one.

    The default pool's own platforms still divide its nodes by their templates; a leftover node none of them
    selects is placed in its default platform (else its first).
    """

    def __init__(self, backend: Backend):
        # Read now: a watcher holds its backend object for hours while the default pool may change.
        default_pool = Backend.objects.filter(pk=backend.pk).values_list("default_pool", flat=True).first()
        specs = list(selectors.platform_selection_specs(backend=backend))
        self.specs = [spec for spec in specs if not default_pool or spec[0].name != default_pool]
        self.default_specs = [spec for spec in specs if default_pool and spec[0].name == default_pool]
        if self.default_specs:
            pool = self.default_specs[0][0]
            names = [platform_name for _, platform_name, _ in self.default_specs]
            self.default_platform = pool.default_platform if pool.default_platform in names else names[0]

    def place(self, *, labels: dict, taints: list, node_name: str) -> list[tuple]:
        def selecting(specs):
            return [
                (pool, platform_name)
                for pool, platform_name, spec in specs
                if node_matches_pod_spec(labels=labels, taints=taints, pod_spec=spec, node_name=node_name)
            ]

        found = selecting(self.specs)
        if found or not self.default_specs:
            return found
        pool = self.default_specs[0][0]
        return selecting(self.default_specs) or [(pool, self.default_platform)]


def node_pool_names(backend: Backend, nodes: list[dict]) -> dict[str, list[str]]:
    """For Kubernetes node objects not yet stored: the pools each would belong to (by name)."""
    placer = Placer(backend)
    result: dict[str, list[str]] = {}
    for obj in nodes:
        record = node_record(obj, [])
        if record is None:
            continue
        placed = placer.place(labels=record.labels, taints=record.taints, node_name=record.name)
        result[record.name] = sorted({pool.name for pool, _ in placed})
    return result


# --- leases ------------------------------------------------------------------------------------------------


def lease_acquire(*, name: str, owner: str, seconds: float) -> bool:
    """Take or renew the lease ``name`` for ``seconds``; False while someone else holds it."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    if (
        Lease.objects.filter(name=name)
        .filter(Q(expires_at__lt=now) | Q(owner=owner))
        .update(owner=owner, expires_at=until)
    ):
        return True
    try:
        with transaction.atomic():
            Lease.objects.create(name=name, owner=owner, expires_at=until)
        return True
    except IntegrityError:
        return False


def lease_release(*, name: str, owner: str) -> None:
    Lease.objects.filter(name=name, owner=owner).delete()


def lease_owner() -> str:
    """This thread's name as a lease holder: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


class SyncBusy(InventoryError):
    """Another sync of the backend is running; this one did not start."""


# --- writing nodes and pods -------------------------------------------------------------------------------


def _chunks(items: list, size: int = CHUNK):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _upsert(model, backend: Backend, rows: list[dict], key_fields: tuple[str, ...], fields: tuple[str, ...]) -> None:
    upsert_rows(
        model,
        [{"backend_id": backend.pk, **row} for row in rows],
        unique_fields=["backend", *key_fields],
        update_fields=list(fields),
    )


def _delete(model, backend: Backend, keys: list, key_fields: tuple[str, ...]) -> None:
    if len(key_fields) == 1:
        for chunk in _chunks(keys):
            model.objects.filter(backend=backend, **{f"{key_fields[0]}__in": chunk}).delete()
        return
    by_namespace: dict[str, list[str]] = {}
    for namespace, name in keys:
        by_namespace.setdefault(namespace, []).append(name)
    for namespace, names in by_namespace.items():
        for chunk in _chunks(names):
            model.objects.filter(backend=backend, namespace=namespace, name__in=chunk).delete()


def _pod_contributions(backend: Backend, keys: list) -> dict[tuple[str, str], dict]:
    """The stored state of the given pods: version, node, pool label, priority and requests, by key.

    Looked up by (namespace, name), which the unique index covers, in one query per chunk.
    """
    result = {}
    for chunk in _chunks(list(set(keys))):
        by_namespace: dict[str, list[str]] = defaultdict(list)
        for namespace, name in chunk:
            by_namespace[namespace].append(name)
        condition = Q()
        for namespace, names in by_namespace.items():
            condition |= Q(namespace=namespace, name__in=names)
        rows = Pod.objects.filter(condition, backend=backend).values(
            "namespace",
            "name",
            "resource_version",
            "node_name",
            "pool_name",
            "preemptible",
            "cpu",
            "memory",
            "storage",
            "gpu",
        )
        for row in rows:
            result[(row["namespace"], row["name"])] = row
    return result


USAGE_FIELDS = {"cpu_used": "cpu", "memory_used": "memory", "storage_used": "storage", "gpu_used": "gpu"}
# What a node keeps of the pods bound to it: their requests (``USAGE_FIELDS``) and how many there are.
NODE_USAGE_COLUMNS = (*USAGE_FIELDS, "pods")


def usage_apply_deltas(*, backend: Backend, removed: Iterable[dict], added: Iterable[dict]) -> None:
    """Move stored usage by what pods stopped adding (``removed``) and started adding (``added``).

    A watch batch changes a few hundred pods of a cluster with hundreds of thousands; adding their
    difference costs two statements (one for the nodes, one for the pool labels), where recomputing a pool
    label's sum would read all its pods. A full sync recomputes everything now and then.
    """
    nodes: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    pools: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for sign, rows in ((-1, removed), (1, added)):
        for row in rows:
            if row["node_name"]:
                for field, source in USAGE_FIELDS.items():
                    nodes[row["node_name"]][field] += sign * Decimal(row[source])
                nodes[row["node_name"]]["pods"] += sign
            if row["pool_name"]:
                gpu = sign * Decimal(row["gpu"])
                pools[row["pool_name"]][0] += gpu
                if not row["preemptible"]:
                    pools[row["pool_name"]][1] += gpu
    node_rows = [
        (name, d["cpu_used"], int(d["memory_used"]), int(d["storage_used"]), d["gpu_used"], int(d["pods"]))
        for name, d in nodes.items()
        if any(d.values())
    ]
    pool_rows = [(name, gpu, quota) for name, (gpu, quota) in pools.items() if gpu or quota]
    with connection.cursor() as cursor:
        for chunk in _chunks(node_rows, 500):
            # One statement for the batch: a table of deltas joined by node name (PostgreSQL and SQLite).
            values = ", ".join(
                [
                    "(%s, CAST(%s AS DECIMAL), CAST(%s AS BIGINT), CAST(%s AS BIGINT), CAST(%s AS DECIMAL), "
                    "CAST(%s AS INTEGER))"
                ]
                * len(chunk)
            )
            table = Node._meta.db_table
            sets = ", ".join(
                f"{column} = {column} + (SELECT d.{column} FROM delta d WHERE d.name = {table}.name)"
                for column in NODE_USAGE_COLUMNS
            )
            cursor.execute(
                f"WITH delta (name, {', '.join(NODE_USAGE_COLUMNS)}) AS (VALUES {values}) "
                f"UPDATE {table} SET {sets} WHERE backend_id = %s AND name IN (SELECT name FROM delta)",
                [value for row in chunk for value in row] + [backend.pk],
            )
        for chunk in _chunks(pool_rows, 500):
            table = PoolPodUsage._meta.db_table
            values = ", ".join(["(%s, %s, CAST(%s AS DECIMAL), CAST(%s AS DECIMAL))"] * len(chunk))
            cursor.execute(
                f"INSERT INTO {table} (backend_id, pool_name, gpu, gpu_quota) VALUES {values} "
                f"ON CONFLICT (backend_id, pool_name) DO UPDATE SET gpu = {table}.gpu + excluded.gpu, "
                f"gpu_quota = {table}.gpu_quota + excluded.gpu_quota",
                [value for name, gpu, quota in chunk for value in (backend.pk, name, gpu, quota)],
            )


def usage_refresh(*, backend: Backend, node_names: set[str] | None = None, pool_names: set[str] | None = None) -> None:
    """Recompute the stored usage of these nodes and pool labels (all of the backend's when None) from its pods.

    Nodes keep the requests and the number of the pods bound to them; ``PoolPodUsage`` keeps each pool label's
    GPUs. Reads then cost a few thousand rows instead of a scan of every pod.
    """
    pods = Pod.objects.filter(backend=backend).order_by()
    nodes = Node.objects.filter(backend=backend).only("id", "name", *NODE_USAGE_COLUMNS)
    if node_names is None or node_names:
        selected_pods = pods.exclude(node_name="")
        if node_names is not None:
            names = [name for name in node_names if name]
            nodes = [node for chunk in _chunks(names) for node in nodes.filter(name__in=chunk)]
            selected_pods = selected_pods.filter(node_name__in=names)
        sums = {
            row["node_name"]: row
            for row in selected_pods.values("node_name").annotate(
                cpu_used=Sum("cpu"),
                memory_used=Sum("memory"),
                storage_used=Sum("storage"),
                gpu_used=Sum("gpu"),
                pods=Count("id"),
            )
        }
        changed = []
        for node in nodes:
            row = sums.get(node.name, {})
            values = {field: row.get(field) or 0 for field in NODE_USAGE_COLUMNS}
            if any(getattr(node, field) != values[field] for field in NODE_USAGE_COLUMNS):
                changed.append({"backend_id": backend.pk, "name": node.name, **values})
        upsert_rows(Node, changed, unique_fields=["backend", "name"], update_fields=list(NODE_USAGE_COLUMNS))
    if pool_names is None or pool_names:
        labelled = pods.exclude(pool_name="")
        stale = PoolPodUsage.objects.filter(backend=backend)
        if pool_names is not None:
            names = [name for name in pool_names if name]
            labelled = labelled.filter(pool_name__in=names)
            stale = stale.filter(pool_name__in=names)
        rows = labelled.values("pool_name").annotate(total=Sum("gpu"), quota=Sum("gpu", filter=Q(preemptible=False)))
        stale.delete()
        PoolPodUsage.objects.bulk_create(
            [
                PoolPodUsage(
                    backend=backend, pool_name=row["pool_name"], gpu=row["total"] or 0, gpu_quota=row["quota"] or 0
                )
                for row in rows
            ]
        )


def _stored_versions(model, backend: Backend, key_fields: tuple[str, ...]) -> dict:
    rows = model.objects.filter(backend=backend).values_list(*key_fields, "resource_version")
    if len(key_fields) == 1:
        return dict(rows.iterator(chunk_size=5000))
    return {(namespace, name): version for namespace, name, version in rows.iterator(chunk_size=5000)}


def _node_row(record) -> dict:
    return {"name": record.name, **record.node_fields()}


def _pod_row(record, backend: Backend) -> dict:
    return {
        "namespace": record.namespace,
        "name": record.name,
        **record.pod_fields(backend.pool_label, backend.priority_label),
    }


def _mark_contact(backend: Backend, **fields) -> None:
    Backend.objects.filter(pk=backend.pk).update(last_heartbeat=timezone.now(), **fields)


def backend_sync(*, backend: Backend, source=None) -> dict:
    """Read the backend's whole inventory and make the database match it, in one transaction.

    One sync of a backend at a time, whichever door starts it (task, ``poolctl``, worker, page, API, a
    watch listing again): the lease ``sync:<id>`` is taken here, and ``SyncBusy`` raised while another
    holder has it. Only objects whose version changed are written, then membership of the changed nodes.
    On a source error nothing changes but ``last_sync_error``, and the InventoryError is raised again.
    Returns counts, ``listing`` (``"full"`` or ``"metadata"``, see ``_read``) and the lists'
    ``resource_versions`` (where a watch continues).
    """
    lease, owner = f"sync:{backend.pk}", lease_owner()
    if not lease_acquire(name=lease, owner=owner, seconds=SYNC_LEASE_SECONDS):
        raise SyncBusy(f"backend '{backend.name}' is already being synced; this sync did not start")
    try:
        return _sync(backend, source)
    finally:
        lease_release(name=lease, owner=owner)


def _sync(backend: Backend, source) -> dict:
    started = time.monotonic()
    try:
        listed = _read(backend, source or inventory_source(backend))
    except InventoryError as exc:
        Backend.objects.filter(pk=backend.pk).update(last_sync_error=str(exc))
        raise
    with transaction.atomic():
        counts = {**_apply_listed(backend, listed), "listing": listed.how}
        duration = round(time.monotonic() - started, 3)
        _mark_contact(
            backend,
            last_sync_at=timezone.now(),
            last_sync_error="",
            last_sync_duration=duration,
            last_sync_counts=counts,
        )
    for warning in listed.warnings[:20]:
        logger.warning("backend %s: %s", backend.name, warning)
    return {**counts, "duration": duration, "resource_versions": listed.resource_versions}


@dataclass
class Listed:
    """What a sync read, by kind: ``{key: (version, object)}`` of every node and non-terminated pod.

    The object is None where a metadata listing showed the stored version: it is known unchanged and was
    not read. ``how`` is ``"full"`` (every object read) or ``"metadata"`` (versions listed, changes read).
    """

    nodes: dict
    pods: dict
    warnings: list
    trusted: bool
    resource_versions: dict
    how: str


# A metadata resync GETs each changed object; past min(MAX, max(MIN, SHARE x listed)) reads it lists in full.
MAX_OBJECT_READS = 5000
MIN_OBJECT_READS = 50
OBJECT_READS_SHARE = 0.05


def _read(backend: Backend, source) -> Listed:
    """Read the inventory: in full, or (a resync of a source that can) only what changed since the last sync.

    The first sync, and sources without ``list_versions`` (files, simulated fleets), list everything. A
    resync lists only keys and versions, compares them with the stored ones and GETs the new and changed
    objects; keys stored but no longer listed are gone, and so is an object deleted before its GET.
    Past ``max(50, 5 % of the listed objects)`` reads, capped at 5,000, it lists everything instead. On the
    benchmark's stand-in API server a GET costs ~0.8 ms and a full resync ~60 µs per listed pod, so GETs
    stop paying at ~7 % changed; 5 % leaves a margin, 5,000 GETs (~4 s) bound the worst case, and below 50
    reads the metadata path wins however small the cluster.
    """
    if not hasattr(source, "list_versions") or not _has_inventory(backend):
        return _listed_in_full(source.list_inventory())
    listing = source.list_versions()
    wanted_nodes = _changed_keys(listing.nodes, _stored_versions(Node, backend, ("name",)))
    wanted_pods = _changed_keys(listing.pods, _stored_versions(Pod, backend, ("namespace", "name")))
    reads, total = len(wanted_nodes) + len(wanted_pods), len(listing.nodes) + len(listing.pods)
    if reads > min(MAX_OBJECT_READS, max(MIN_OBJECT_READS, total * OBJECT_READS_SHARE)):
        return _listed_in_full(source.list_inventory())
    read = source.read_objects(wanted_nodes, wanted_pods)
    return Listed(
        nodes=_merged(listing.nodes, wanted_nodes, read.keyed_nodes()),
        pods=_merged(listing.pods, wanted_pods, read.keyed_pods()),
        warnings=read.warnings,
        trusted=read.trusted_versions,
        resource_versions=listing.resource_versions,
        how="metadata",
    )


def _listed_in_full(inventory: Inventory) -> Listed:
    nodes, pods = inventory.keyed_nodes(), inventory.keyed_pods()
    return Listed(
        nodes=nodes,
        pods=pods,
        warnings=inventory.warnings,
        trusted=inventory.trusted_versions,
        resource_versions=inventory.resource_versions,
        how="full",
    )


def _has_inventory(backend: Backend) -> bool:
    return Node.objects.filter(backend=backend).exists() or Pod.objects.filter(backend=backend).exists()


def _changed_keys(versions: dict, stored: dict) -> list:
    return [key for key, version in versions.items() if stored.get(key) != version]


def _merged(versions: dict, wanted: list, read: dict) -> dict:
    """Listed versions, without objects, for what was not read; the read objects for what was.

    A wanted key missing from ``read`` was deleted (or, a pod, terminated) after the listing: it is left
    out, so it counts as gone.
    """
    wanted_keys = set(wanted)
    merged = {key: (version, None) for key, version in versions.items() if key not in wanted_keys}
    merged.update(read)
    return merged


def _apply_listed(backend: Backend, listed: Listed) -> dict:
    """Write the objects whose version differs from the stored one, delete those no longer listed.

    Versions are read again here, inside the transaction: a watch may have written since ``_read``. A
    listed object that was not read (None) and whose stored version moved meanwhile is left as it is.
    """
    warnings = listed.warnings
    trusted = listed.trusted
    listed_nodes, listed_pods = listed.nodes, listed.pods
    counts = {"nodes": len(listed_nodes), "pods": len(listed_pods)}

    stored = _stored_versions(Node, backend, ("name",))
    rows = []
    for name, (version, obj) in listed_nodes.items():
        if obj is not None and stored.get(name) != version:
            record = node_record(obj, warnings, trust_resource_version=trusted)
            if record:
                rows.append(_node_row(record))
    gone = [name for name in stored if name not in listed_nodes]
    _delete(Node, backend, gone, ("name",))
    _upsert(Node, backend, rows, ("name",), NODE_FIELDS)
    counts["nodes_changed"] = {
        "created": sum(r["name"] not in stored for r in rows),
        "updated": sum(r["name"] in stored for r in rows),
        "deleted": len(gone),
    }
    if rows:
        membership_recompute(backend=backend, node_names=[r["name"] for r in rows])

    touched_nodes = {r["name"] for r in rows}
    stored = _stored_versions(Pod, backend, ("namespace", "name"))
    rows = []
    for key, (version, obj) in listed_pods.items():
        if obj is not None and stored.get(key) != version:
            record = pod_record(obj, warnings, trust_resource_version=trusted)
            if record:
                rows.append(_pod_row(record, backend))
    gone = [key for key in stored if key not in listed_pods]
    small_change = len(rows) + len(gone) <= max(1000, len(listed_pods) // 5)
    changed_keys = [(r["namespace"], r["name"]) for r in rows if (r["namespace"], r["name"]) in stored] + gone
    before = _pod_contributions(backend, changed_keys) if small_change else {}
    _delete(Pod, backend, gone, ("namespace", "name"))
    _upsert(Pod, backend, rows, ("namespace", "name"), POD_FIELDS)
    counts["pods_changed"] = {
        "created": sum((r["namespace"], r["name"]) not in stored for r in rows),
        "updated": sum((r["namespace"], r["name"]) in stored for r in rows),
        "deleted": len(gone),
    }
    counts["warnings"] = len(warnings)
    if not small_change:
        usage_refresh(backend=backend)  # most of it changed: one pass over everything is cheaper
    else:
        usage_apply_deltas(backend=backend, removed=before.values(), added=rows)
        if touched_nodes:  # new or changed nodes may have pods already: count theirs from scratch, last
            usage_refresh(backend=backend, node_names=touched_nodes, pool_names=set())
    return counts


def inventory_source(backend: Backend):
    """The source that reads ``backend``: a simulated fleet labels its jobs with the pools holding their nodes."""
    if backend.kind != BackendKind.SIMULATED:
        return source_for(backend)
    return source_for(backend, pool_labels=lambda nodes: node_pool_names(backend, nodes))


def backend_to_sync(name: str, actor: Actor) -> Backend:
    """The backend ``actor`` may sync: 404 for one they may not see, 403 without ``OPERATE_BACKEND`` on it.

    Every door that starts a sync asks here first: ``backend_sync_now`` (``poolctl``) and
    ``jobs.backend_sync_request`` (the page's "Sync now", the API).
    """
    backend = Backend.objects.restrict(actor.principal).filter(name=name).first()
    if backend is None:
        raise NotFound(f"backend '{name}' does not exist")
    require(actor.principal, OPERATE_BACKEND, name, what=f"syncing backend '{name}'")
    return backend


def backend_sync_now(*, name: str, actor: Actor) -> dict:
    """Sync backend ``name`` in this process and return the counts (``poolctl backend sync``)."""
    return backend_sync(backend=backend_to_sync(name, actor))


# --- watch ------------------------------------------------------------------------------------------------


def _newer(incoming: str, stored: str | None) -> bool:
    """Whether an event's version is newer than the stored one; unknown orders count as newer."""
    if stored is None:
        return True
    if incoming.isascii() and incoming.isdigit() and stored.isascii() and stored.isdigit():
        return int(incoming) > int(stored)
    return incoming != stored


def watch_events_apply(
    *, backend: Backend, events: list[WatchEvent], tombstones: dict | None = None, trusted_versions: bool = True
) -> dict:
    """Apply a batch of watch events in one transaction; duplicates and stale events change nothing.

    The last event per object in the batch wins. With versions from a live API, an event older than
    what is stored, or than a deletion already seen (``tombstones``), is skipped, so replays and
    out-of-order delivery converge to what a fresh list would give.
    """
    tombstones = tombstones if tombstones is not None else {}
    latest: dict[tuple[str, object], WatchEvent] = {}
    warnings: list[str] = []
    for event in events:
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        metadata = event.object.get("metadata") or {}
        if not metadata.get("name"):
            continue
        key = metadata["name"] if event.kind == "nodes" else (metadata.get("namespace") or "default", metadata["name"])
        latest[(event.kind, key)] = event
    counts = {"nodes": 0, "pods": 0, "skipped": 0}
    with transaction.atomic():
        for kind, model, key_fields in (("nodes", Node, ("name",)), ("pods", Pod, ("namespace", "name"))):
            mine = {key: event for (k, key), event in latest.items() if k == kind}
            if not mine:
                continue
            if kind == "pods":
                before = _pod_contributions(backend, list(mine))
                stored = {key: row["resource_version"] for key, row in before.items()}
            else:
                before, stored = {}, _node_versions(backend, list(mine))
            upserts, deletes = [], []
            for key, event in mine.items():
                version = event.resource_version
                if (
                    trusted_versions
                    and version
                    and not (_newer(version, stored.get(key)) and _newer(version, tombstones.get((kind, key))))
                ):
                    counts["skipped"] += 1
                    continue
                if event.type == "DELETED":
                    deletes.append(key)
                    if version:
                        tombstones[(kind, key)] = version
                    continue
                if kind == "nodes":
                    record = node_record(event.object, warnings, trust_resource_version=trusted_versions)
                    if record:
                        upserts.append(_node_row(record))
                else:
                    record = pod_record(event.object, warnings, trust_resource_version=trusted_versions)
                    if record is None:  # it terminated: same as deleted
                        deletes.append(key)
                    else:
                        upserts.append(_pod_row(record, backend))
            _delete(model, backend, [k for k in deletes if k in stored], key_fields)
            _upsert(model, backend, upserts, key_fields, NODE_FIELDS if kind == "nodes" else POD_FIELDS)
            counts[kind] = len(upserts) + len(deletes)
            if kind == "nodes" and upserts:
                membership_recompute(backend=backend, node_names=[row["name"] for row in upserts])
                usage_refresh(backend=backend, node_names={row["name"] for row in upserts}, pool_names=set())
            if kind == "pods" and (upserts or deletes):
                written = [*deletes, *((r["namespace"], r["name"]) for r in upserts)]
                usage_apply_deltas(
                    backend=backend, removed=[before[key] for key in written if key in before], added=upserts
                )
        _mark_contact(backend)
    for warning in warnings[:20]:
        logger.warning("backend %s: %s", backend.name, warning)
    return counts


def _node_versions(backend: Backend, names: list[str]) -> dict[str, str]:
    """Stored versions of the named nodes, in one query per chunk of names."""
    result = {}
    for chunk in _chunks(names):
        result.update(Node.objects.filter(backend=backend, name__in=chunk).values_list("name", "resource_version"))
    return result


def backend_watch(
    *, backend: Backend, stop: threading.Event, owner: str, lease_seconds: float = 60, on_batch=None, source=None
) -> None:
    """List, then apply watch events until ``stop``; relist on 410, retry when the source is unreachable.

    One watcher per backend: the lease ``watch:<id>`` is held and renewed while watching. A failed
    contact is recorded in ``last_sync_error`` and the last good inventory stays as it is.
    """
    lease = f"watch:{backend.pk}"
    source = source or inventory_source(backend)
    trusted = isinstance(source, KubernetesSource)
    failures = 0
    while not stop.is_set():
        if not lease_acquire(name=lease, owner=owner, seconds=lease_seconds):
            stop.wait(lease_seconds / 4)
            continue
        inner = threading.Event()
        try:
            versions = backend_sync(backend=backend, source=source)["resource_versions"]
            failures = 0
            tombstones: dict = {}
            renewed = contact = time.monotonic()
            for batch in source.watch(versions, inner):
                if stop.is_set():
                    break
                if time.monotonic() - renewed > lease_seconds / 3:
                    if not lease_acquire(name=lease, owner=owner, seconds=lease_seconds):
                        break
                    renewed = time.monotonic()
                events = [item for item in batch if isinstance(item, WatchEvent)]
                problems = [item for item in batch if isinstance(item, SourceStatus) and not item.ok]
                if problems:
                    Backend.objects.filter(pk=backend.pk).update(last_sync_error=problems[-1].error)
                changes = [e for e in events if e.type != "BOOKMARK"]
                if changes:
                    counts = watch_events_apply(
                        backend=backend, events=changes, tombstones=tombstones, trusted_versions=trusted
                    )
                    if on_batch:
                        on_batch(counts)
                if events and not problems:
                    contact = time.monotonic()
                    if not changes:  # bookmarks only: the API server is there
                        _mark_contact(backend)
                elif time.monotonic() - contact > PING_SECONDS:
                    # A quiet cluster sends no events (and bookmarks rarely): ask, so the pool stays ONLINE.
                    source.ping()
                    _mark_contact(backend, last_sync_error="")
                    contact = time.monotonic()
        except WatchExpired as exc:
            logger.info("backend %s: %s; listing again", backend.name, exc)
        except InventoryError as exc:
            failures += 1
            logger.warning("backend %s: %s", backend.name, exc)
            stop.wait(min(30, 2**failures))
        except DatabaseError as exc:  # a busy or restarted database: the next list repairs any gap
            failures += 1
            logger.warning("backend %s: database error while watching: %s", backend.name, exc)
            close_old_connections()
            stop.wait(min(30, 2**failures))
        finally:
            inner.set()
    lease_release(name=lease, owner=owner)
