"""Inventory writes: a backend's full sync and its watch events, through one write path.

A full sync and a watch apply their changes through the same upsert path; both compare an object's
version (``resourceVersion`` from a live API, a digest otherwise) with the stored one and write only
what changed, in one transaction. Membership is recomputed only for the nodes that changed, since
pods never change membership. A resync of a Kubernetes backend lists only names and versions and reads
just the objects that changed (``_read``), then writes through the same path as a full sync.

Where the written nodes belong is ``membership``'s; what their pods add to them, ``node_usage``'s. The sync and
the watch share their version comparison and writes (``_KindWrites``), which is why they stay one module.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from accounts.access import require
from pools.choices import BackendKind
from pools.engine.errors import NotFound
from pools.engine.permissions import OPERATE_BACKEND
from pools.inventory.records import (
    Inventory,
    InventoryError,
    listed_node,
    listed_pod,
    node_record,
    paused_gc,
    pod_record,
)
from pools.inventory.sources import KubernetesSource, SourceStatus, WatchEvent, WatchExpired, source_for
from pools.models import Backend, Node, NodeMembership, Pod, WorkloadSums

from .actors import Actor
from .bulk import RowStream, chunks, rows_table, upsert_rows
from .leases import lease_acquire, lease_kept, lease_owner, lease_release
from .membership import inventory_write_lock, membership_recompute, node_groups_refresh, node_pool_names
from .node_usage import pod_contributions, usage_apply_deltas, usage_refresh
from .workload_sums import workload_keys, workload_sums_refresh

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
    "workload_kind",
    "workload_name",
    "owner_kind",
    "owner_name",
    "annotations",
    "priority_class",
    "started",
    "scheduled_reason",
    "scheduled_message",
    "user",
)
PING_SECONDS = 20


def sync_lease_seconds() -> float:
    """A sync's lease (``GPUPOOL["SYNC_LEASE_SECONDS"]``), renewed every third of it while the sync runs
    (``lease_kept``): a killed holder's lease frees itself this long after it died."""
    return float(settings.GPUPOOL.get("SYNC_LEASE_SECONDS", 30))


class SyncBusy(InventoryError):
    """Another sync of the backend is running; this one did not start."""


# --- writing nodes and pods -------------------------------------------------------------------------------


def _upsert(model, backend: Backend, rows: list[dict], key_fields: tuple[str, ...], fields: tuple[str, ...]) -> None:
    upsert_rows(
        model,
        [{"backend_id": backend.pk, **row} for row in rows],
        unique_fields=["backend", *key_fields],
        update_fields=list(fields),
    )


def _delete(model, backend: Backend, keys: list, key_fields: tuple[str, ...]) -> None:
    if len(key_fields) == 1:
        for chunk in chunks(keys):
            model.objects.filter(backend=backend, **{f"{key_fields[0]}__in": chunk}).delete()
        return
    by_namespace: dict[str, list[str]] = {}
    for namespace, name in keys:
        by_namespace.setdefault(namespace, []).append(name)
    for namespace, names in by_namespace.items():
        for chunk in chunks(names):
            model.objects.filter(backend=backend, namespace=namespace, name__in=chunk).delete()


def _stored_versions(kind: _Kind, backend: Backend, keys: list | None = None) -> dict:
    """The stored versions of the backend's objects of ``kind``, by key: all of them, or those of ``keys``.

    One plain query (a chunk of keys joined as a table, per chunk): a resync of a 150,000-pod backend reads
    every version, and the ORM spent ~0.4 s making its rows.
    """
    table = kind.model._meta.db_table
    selected = ", ".join(f"{table}.{column}" for column in (*kind.key_fields, "resource_version"))
    rows: list = []
    with connection.cursor() as cursor:
        if keys is None:
            cursor.execute(f"SELECT {selected} FROM {table} WHERE backend_id = %s", [backend.pk])
            rows = cursor.fetchall()
        else:
            columns = dict.fromkeys(kind.key_fields, "text")
            joined = " AND ".join(f"{table}.{column} = wanted.{column}" for column in kind.key_fields)
            for chunk in chunks(sorted(set(keys))):
                wanted, params = rows_table("wanted", columns, [key if kind.paired else (key,) for key in chunk])
                cursor.execute(
                    f"{wanted} SELECT {selected} FROM {table} JOIN wanted ON {joined} WHERE {table}.backend_id = %s",
                    [*params, backend.pk],
                )
                rows += cursor.fetchall()
    if kind.paired:
        return {(namespace, name): version for namespace, name, version in rows}
    return dict(rows)


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
    seconds = sync_lease_seconds()
    if not lease_acquire(name=lease, owner=owner, seconds=seconds):
        raise SyncBusy(f"backend '{backend.name}' is already being synced; this sync did not start")
    try:
        with lease_kept(name=lease, owner=owner, seconds=seconds):
            return _sync(backend, source)
    finally:
        lease_release(name=lease, owner=owner)


def _sync(backend: Backend, source) -> dict:
    """``backend_sync`` once the lease is held.

    The cyclic collector is paused throughout: a sync makes hundreds of thousands of small objects that
    form no cycles, and each collection they trigger scans everything the process holds.
    """
    started = time.monotonic()
    with paused_gc():
        return _sync_once(backend, source, started)


def _sync_once(backend: Backend, source, started: float) -> dict:
    try:
        listed = _read(backend, source or inventory_source(backend))
        # A streamed listing (``_listed_in_full``) is read inside the transaction: when it fails, the
        # rows written from its first pages are rolled back with the rest.
        with transaction.atomic():
            # A first sync's commit waited a second or more for its WAL to reach the disk. A crash could
            # lose that last sync, not part of it; the API server holds what it wrote, and the next sync (a
            # watch starts with one) writes it again.
            _commit_without_flush()
            inventory_write_lock(backend)
            counts, warnings, resource_versions = _apply_listed(backend, listed)
            node_groups_refresh(backend=backend)
            counts["listing"] = listed.how
            duration = round(time.monotonic() - started, 3)
            _mark_contact(
                backend,
                last_sync_at=timezone.now(),
                last_sync_error="",
                last_sync_duration=duration,
                last_sync_counts=counts,
            )
    except InventoryError as exc:
        Backend.objects.filter(pk=backend.pk).update(last_sync_error=str(exc))
        raise
    if _loaded_in_bulk(counts):
        _statistics_refresh()
    for warning in warnings[:20]:
        logger.warning("backend %s: %s", backend.name, warning)
    return {**counts, "duration": duration, "resource_versions": resource_versions}


@dataclass(frozen=True)
class _Kind:
    """How a sync keys and stores one kind of object."""

    name: str  # "nodes" or "pods", as sources and counts name them
    model: type
    key_fields: tuple[str, ...]
    fields: tuple[str, ...]

    @property
    def paired(self) -> bool:
        """Whether a key is a (namespace, name) pair rather than a name."""
        return len(self.key_fields) == 2


_NODES = _Kind("nodes", Node, ("name",), NODE_FIELDS)
_PODS = _Kind("pods", Pod, ("namespace", "name"), POD_FIELDS)


@dataclass
class Listed:
    """What a sync writes: pages of Kubernetes objects (``Inventory``), nodes before pods.

    ``pages`` is lazy when the source lists page by page (see ``_listed_in_full``): the listing then runs
    while the rows are written, one page held at a time. After a metadata listing (``how`` is
    ``"metadata"``) the one page holds only the objects that were read because they changed; ``versions``
    has every listed key's version, ``read`` the keys that were read and ``gone`` the stored keys that were
    not listed, by kind. A listed key that was not read is known unchanged.
    """

    pages: Iterable[Inventory]
    how: str
    resource_versions: dict
    versions: dict | None = None
    read: dict | None = None
    gone: dict | None = None


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
        return _listed_in_full(source)
    stored: dict[str, dict] = {}  # each kind's read when its first page has come, while the next is listed
    read: dict[str, list] = {"nodes": [], "pods": []}
    waiting: dict[str, list] = {"nodes": [], "pods": []}  # changed, not asked for yet
    listed = 0
    with source.object_reads() as reads:

        def on_page(kind: str, versions: dict) -> None:
            # The GETs of a page's changes start while the next page is listed, as long as the reads so far
            # stay within what the objects listed so far allow: where most changed, the few read in vain
            # before the listing ends are at most that allowance.
            nonlocal listed
            listed += len(versions)
            if kind not in stored:
                stored[kind] = _stored_versions(_NODES if kind == "nodes" else _PODS, backend)
            changed = [key for key, version in versions.items() if stored[kind].get(key) != version]
            read[kind] += changed
            waiting[kind] += changed
            if len(read["nodes"]) + len(read["pods"]) <= _read_allowance(listed):
                reads.add(waiting["nodes"], waiting["pods"])
                waiting["nodes"], waiting["pods"] = [], []

        listing = source.list_versions(on_page)
        versions = {"nodes": listing.nodes, "pods": listing.pods}
        in_full = len(read["nodes"]) + len(read["pods"]) > _read_allowance(len(listing.nodes) + len(listing.pods))
        if not in_full:
            reads.add(waiting["nodes"], waiting["pods"])
            inventory = reads.result()
    if in_full:
        return _listed_in_full(source)
    return Listed(
        pages=[inventory],
        how="metadata",
        resource_versions=listing.resource_versions,
        versions=versions,
        read=read,
        gone={kind: [key for key in stored.get(kind, ()) if key not in versions[kind]] for kind in versions},
    )


def _read_allowance(listed: int) -> float:
    """How many objects a resync may GET when ``listed`` objects were listed (see ``_read``)."""
    return min(MAX_OBJECT_READS, max(MIN_OBJECT_READS, listed * OBJECT_READS_SHARE))


def _listed_in_full(source) -> Listed:
    """Everything the source lists: page by page as it comes, where the source and the database allow.

    A 150,000-pod cluster listed whole before writing held every decoded object and its row at once
    (over 1 GB). Streamed, the listing runs inside the writing transaction; on PostgreSQL that costs
    nothing, but a SQLite transaction that has read keeps every other writer out until it ends, so there
    (small installations) the listing is read first, as a file's or a simulated fleet's always is.
    """
    if hasattr(source, "list_pages") and connection.vendor == "postgresql":
        return Listed(pages=source.list_pages(), how="full", resource_versions={})
    return Listed(pages=[source.list_inventory()], how="full", resource_versions={})


def _has_inventory(backend: Backend) -> bool:
    return Node.objects.filter(backend=backend).exists() or Pod.objects.filter(backend=backend).exists()


def _apply_listed(backend: Backend, listed: Listed) -> tuple[dict, list[str], dict]:
    """Write what ``listed`` holds, reading its pages as they come; returns counts, warnings and versions.

    The nodes' writes are finished (their memberships recomputed) before the first pod is written; every
    source lists nodes first.
    """
    warnings: list[str] = []
    resource_versions = dict(listed.resource_versions)
    counts: dict = {}
    with ExitStack() as writing:  # a failure part way abandons the COPY in progress (see bulk.RowStream)
        if hasattr(listed.pages, "close"):  # and stops the listing of a lazy source
            writing.callback(listed.pages.close)
        nodes, pods = writing.enter_context(_KindWrites(backend, _NODES, listed, warnings)), None
        for page in listed.pages:
            warnings += page.warnings
            resource_versions.update(page.resource_versions)
            if page.nodes and pods is not None:
                raise RuntimeError("a source listed nodes after pods")
            for obj in page.nodes:
                nodes.add(obj, trusted=page.trusted_versions)
            if page.pods and pods is None:
                counts.update(nodes.finish())
                pods = writing.enter_context(_KindWrites(backend, _PODS, listed, warnings))
            for obj in page.pods:
                pods.add(obj, trusted=page.trusted_versions)
        if pods is None:
            counts.update(nodes.finish())
            pods = writing.enter_context(_KindWrites(backend, _PODS, listed, warnings))
        counts.update(pods.finish(touched_nodes={row["name"] for row in nodes.changed}))
    counts["warnings"] = len(warnings)
    return counts, warnings, resource_versions


# Past this many changed pods a sync stops keeping their rows for usage deltas and recomputes usage whole.
KEPT_POD_ROWS = 20_000


class _KindWrites:
    """One sync's writes of one kind, made as its objects come (``add``) and completed by ``finish``.

    An object's row is written when its version differs from the stored one, and streamed to the database
    at once (``bulk.RowStream``), so a first sync holds one page of objects at a time. ``finish`` deletes
    what is stored but was not listed, merges the rows, and recomputes what depends on them: memberships
    of the changed nodes, usage of the changed pods.

    Stored versions are read here, inside the transaction: a watch may have written since ``_read``. After a
    metadata listing only the keys that may be written or deleted are read again; a listed object that
    was not read and whose stored version moved meanwhile is left as it is.
    """

    def __init__(self, backend: Backend, kind: _Kind, listed: Listed, warnings: list[str]):
        self.backend, self.kind, self.warnings = backend, kind, warnings
        if listed.versions is None:
            self.candidates = None
            self.stored = _stored_versions(kind, backend)
            self.unread = 0
        else:
            self.candidates = [*listed.read[kind.name], *listed.gone[kind.name]]
            self.stored = _stored_versions(kind, backend, self.candidates)
            self.unread = len(listed.versions[kind.name]) - len(listed.read[kind.name])
        # Nothing stored yet (a first sync): the rows go straight into the table, and the usage is computed whole.
        # Should a watcher in another process write one of the same objects meanwhile, the COPY fails on the
        # unique key (IntegrityError): this sync then changes nothing, and the next one merges.
        self.fresh = self.candidates is None and not self.stored
        self.seen: set = set()
        self.created = self.updated = 0
        self.changed: list[dict] = []  # the written rows (pods: kept for usage deltas, up to KEPT_POD_ROWS)
        self.overflow = False
        self.rows = RowStream(
            kind.model,
            unique_fields=["backend", *kind.key_fields],
            update_fields=list(kind.fields),
            new=self.fresh,
        )

    def __enter__(self) -> _KindWrites:
        return self

    def __exit__(self, *exc) -> None:
        self.rows.__exit__(*exc)

    def add(self, obj: dict, *, trusted: bool) -> None:
        """Write ``obj``'s row if its version differs from the stored one (the first of a key listed twice wins)."""
        pods = self.kind is _PODS
        listed = (listed_pod if pods else listed_node)(obj, self.warnings, trust_resource_version=trusted)
        if listed is None or listed[0] in self.seen:
            return
        key, version = listed
        self.seen.add(key)
        stored = self.stored.get(key)
        if stored == version:
            return
        if pods:
            record = pod_record(obj, self.warnings, trust_resource_version=trusted)
            row = _pod_row(record, self.backend) if record else None
        else:
            record = node_record(obj, self.warnings, trust_resource_version=trusted)
            row = _node_row(record) if record else None
        if row is None:
            return
        row["backend_id"] = self.backend.pk
        self.rows.add(row)
        if stored is None:
            self.created += 1
        else:
            self.updated += 1
        if pods and (self.fresh or len(self.changed) >= KEPT_POD_ROWS):
            self.overflow, self.changed = True, []
        else:
            self.changed.append(row)

    def finish(self, *, touched_nodes: set[str] = frozenset()) -> dict:
        """Delete what was not listed, write the rows, and update memberships or usage; returns the counts."""
        self.rows.end()
        kind, backend = self.kind, self.backend
        if self.candidates is None:
            gone = [key for key in self.stored if key not in self.seen]
        else:  # read but not found (deleted, or terminated, since the listing) counts as not listed
            gone = [key for key in self.candidates if key in self.stored and key not in self.seen]
        listed = self.unread + len(self.seen)
        counts = {
            kind.name: listed,
            f"{kind.name}_changed": {"created": self.created, "updated": self.updated, "deleted": len(gone)},
        }
        if kind is _NODES:
            _delete(Node, backend, gone, kind.key_fields)
            self.rows.merge()
            if self.changed:
                membership_recompute(backend=backend, node_names=[row["name"] for row in self.changed])
            return counts
        deltas = not self.overflow and len(self.changed) + len(gone) <= max(1000, listed // 5)
        if deltas:
            updated = [(row["namespace"], row["name"]) for row in self.changed]
            before = pod_contributions(backend, [key for key in updated if key in self.stored] + gone)
        _delete(Pod, backend, gone, kind.key_fields)
        self.rows.merge()
        if not deltas:
            usage_refresh(backend=backend)  # most of it changed (or all is new): one pass over everything
            workload_sums_refresh(backend=backend)
        else:
            usage_apply_deltas(backend=backend, removed=before.values(), added=self.changed)
            touched = workload_keys(before.values()) | workload_keys(self.changed)
            if touched:
                workload_sums_refresh(backend=backend, keys=touched)
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
    # "gpu_nodes": the nodes written, and those a GPU pod left or was bound to: whose pools' verdicts may move.
    counts = {"nodes": 0, "pods": 0, "skipped": 0, "gpu_nodes": set()}
    with transaction.atomic():
        _commit_without_flush()
        inventory_write_lock(backend)
        for kind, model, key_fields in (("nodes", Node, ("name",)), ("pods", Pod, ("namespace", "name"))):
            mine = {key: event for (k, key), event in latest.items() if k == kind}
            if not mine:
                continue
            if kind == "pods":
                before = pod_contributions(backend, list(mine))
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
                counts["gpu_nodes"].update(row["name"] for row in upserts)
                membership_recompute(backend=backend, node_names=[row["name"] for row in upserts])
                usage_refresh(backend=backend, node_names={row["name"] for row in upserts}, pool_names=set())
            if kind == "nodes" and (upserts or deletes):  # before the pods' deltas, which add to the groups
                node_groups_refresh(backend=backend)
            if kind == "pods" and (upserts or deletes):
                written = [*deletes, *((r["namespace"], r["name"]) for r in upserts)]
                removed = [before[key] for key in written if key in before]
                touched = (row["node_name"] for row in (*removed, *upserts) if row["node_name"] and row["gpu"])
                counts["gpu_nodes"].update(touched)
                usage_apply_deltas(backend=backend, removed=removed, added=upserts)
                workload_sums_refresh(backend=backend, keys=workload_keys(removed) | workload_keys(upserts))
        _mark_contact(backend)
    for warning in warnings[:20]:
        logger.warning("backend %s: %s", backend.name, warning)
    return counts


def _loaded_in_bulk(counts: dict) -> bool:
    """Whether a sync created at least a fifth of what it listed (a first sync, or a cluster that grew a lot)."""
    created = sum(counts[f"{kind}_changed"]["created"] for kind in ("nodes", "pods"))
    return created >= max(1000, (counts["nodes"] + counts["pods"]) / 5)


def _statistics_refresh() -> None:
    """Update PostgreSQL's statistics of the inventory's tables (``ANALYZE``) after a sync loaded many rows.

    The planner estimates from them: without, after a first sync of 150,000 pods, it took the backend's pods
    for a few dozen and hashed all of them to find 1,500 by key (75 ms instead of 22 ms per read of stored
    versions in the next resync). Autovacuum analyses a table some time after it changed, where it runs at
    all; PostgreSQL's documentation asks for an ``ANALYZE`` after a bulk load. It samples a fixed number of
    rows per table (~0.1 s at 150,000 pods), after the sync's commit, so it holds no lock of the sync's.
    """
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(model._meta.db_table for model in (Node, Pod, NodeMembership, WorkloadSums))
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


def _commit_without_flush() -> None:
    """Let this transaction's commit return before its WAL reaches the disk (PostgreSQL).

    A watch commits a batch every few tens of milliseconds, and waiting for each flush is most of a small
    batch's time. What a crash could lose is the last moment's events (``wal_writer_delay``, 200 ms by
    default, times three), never a partial batch; the watch started again after the crash lists the
    cluster first, which writes them anyway: the API server, not this table, is their source of truth.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _node_versions(backend: Backend, names: list[str]) -> dict[str, str]:
    """Stored versions of the named nodes, in one query per chunk of names."""
    result = {}
    for chunk in chunks(names):
        result.update(Node.objects.filter(backend=backend, name__in=chunk).values_list("name", "resource_version"))
    return result


# What a watch reads its cluster with (the kind first): a change of any of these restarts the watch on the new one.
WATCH_CONFIG_FIELDS = (
    "kind",
    "source",
    "kubeconfig",
    "context",
    "in_cluster",
    "seed",
    "size",
    "node_conditions",
    "pool_label",
    "priority_label",
)
WATCHED_KINDS = (BackendKind.KUBERNETES, BackendKind.SIMULATED)
# How often a running watch compares its backend's configuration with the one it started from.
WATCH_CONFIG_SECONDS = 2.0


def watch_config(backend_id: int) -> tuple | None:
    """The backend's configuration as a watch reads its cluster with it (None once the backend is deleted)."""
    return Backend.objects.filter(pk=backend_id).values_list(*WATCH_CONFIG_FIELDS).first()


def backend_watch(
    *, backend: Backend, stop: threading.Event, owner: str, lease_seconds: float = 60, on_batch=None, source=None
) -> None:
    """List, then apply watch events until ``stop``; relist on 410, retry when the source is unreachable.

    One watcher per backend: the lease ``watch:<id>`` is held and renewed while watching. A failed
    contact is recorded in ``last_sync_error`` and the last good inventory stays as it is. A change of the
    backend's configuration (``WATCH_CONFIG_FIELDS``: a new kubeconfig, context or seed) is noticed within
    ``WATCH_CONFIG_SECONDS``: the watch drops the old cluster's stream and lists and watches the new one.
    """
    lease = f"watch:{backend.pk}"
    source_given = source is not None
    source = source or inventory_source(backend)
    trusted = isinstance(source, KubernetesSource)
    config = watch_config(backend.pk)
    failures = 0
    while not stop.is_set():
        if config != watch_config(backend.pk):  # checked below every WATCH_CONFIG_SECONDS while watching
            config = watch_config(backend.pk)
            if config is None or config[0] not in WATCHED_KINDS:
                logger.info("backend %s was deleted or can no longer be watched; the watch ends", backend.name)
                break
            logger.info("backend %s: its configuration changed; watching it afresh", backend.name)
            backend.refresh_from_db()
            if not source_given:
                source = inventory_source(backend)
                trusted = isinstance(source, KubernetesSource)
        if not lease_acquire(name=lease, owner=owner, seconds=lease_seconds):
            stop.wait(lease_seconds / 4)
            continue
        inner = threading.Event()
        try:
            versions = backend_sync(backend=backend, source=source)["resource_versions"]
            failures = 0
            tombstones: dict = {}
            renewed = contact = checked = time.monotonic()
            for batch in source.watch(versions, inner):
                if stop.is_set():
                    break
                if time.monotonic() - checked > WATCH_CONFIG_SECONDS:
                    checked = time.monotonic()
                    if watch_config(backend.pk) != config:  # a new cluster, context or seed: list it afresh
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
