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
from contextlib import ExitStack
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
from pools.models import Backend, Lease, Node, NodeGroupSums, NodeMembership, Pod, PoolPodUsage, placements_text

from .actors import Actor
from .bulk import RowStream, rows_table, upsert_rows

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


# --- node groups -----------------------------------------------------------------------------------------

# The first key of the PostgreSQL advisory lock ``inventory_write_lock`` takes; the second is the backend's id.
INVENTORY_LOCK_SPACE = 744_690_138
# ``NodeGroupSums``' columns and how a group's nodes make each one (``node_groups_refresh``).
GROUP_KEY = ("placements", "available", "unschedulable", "gpu_product")
GROUP_SUMS = {
    "nodes": "COUNT(*)",
    "gpu": "SUM(gpu)",
    "free": "SUM(CASE WHEN gpu > gpu_used THEN gpu - gpu_used ELSE 0 END)",
    "gpu_used": "SUM(gpu_used)",
    "gpu_memory": "SUM(gpu_memory)",
    "cpu": "SUM(cpu)",
    "cpu_used": "SUM(cpu_used)",
    "memory": "SUM(memory)",
    "memory_used": "SUM(memory_used)",
    "pods": "SUM(pods)",
}


def inventory_write_lock(backend: Backend) -> None:
    """Serialise the writes of this backend's nodes for the rest of the transaction.

    Every transaction that writes a backend's nodes takes it first (a sync, a watch batch, a config change's
    membership recompute): a watch batch's usage deltas are added to ``NodeGroupSums`` from the nodes as they
    were, which must not change under it, and two recomputes of the same groups must not interleave.
    PostgreSQL: a transaction-scoped advisory lock. SQLite writes one transaction at a time anyway.

    A transaction that takes both this and the config write lock (``config.config_write_lock``) takes the config
    one first, as a config change does before it recomputes memberships: the other order could deadlock with it.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [INVENTORY_LOCK_SPACE, backend.pk])


def node_groups_refresh(*, backend: Backend) -> None:
    """Recompute the backend's ``NodeGroupSums`` from its nodes: one DELETE and one INSERT ... SELECT.

    Called in the transaction that moved nodes between groups or set their usage whole, after those writes: at
    the end of a sync, after a watch batch's node events, after a config change's membership recompute. It costs
    a few milliseconds per 5,000 nodes.
    """
    inventory_write_lock(backend)
    groups, nodes = NodeGroupSums._meta.db_table, Node._meta.db_table
    key = ", ".join(GROUP_KEY)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {groups} WHERE backend_id = %s", [backend.pk])
        cursor.execute(
            f"INSERT INTO {groups} (backend_id, {key}, {', '.join(GROUP_SUMS)}) "
            f"SELECT backend_id, {key}, {', '.join(GROUP_SUMS.values())} FROM {nodes} "
            f"WHERE backend_id = %s AND placements <> '' GROUP BY backend_id, {key}",
            [backend.pk],
        )


# --- membership ----------------------------------------------------------------------------------------


def membership_recompute(*, backend: Backend, node_names: Iterable[str] | None = None) -> None:
    """Recompute availability and node↔(pool, platform) membership (SEMANTICS.md §5) of a backend's nodes.

    With ``node_names`` only those nodes are looked at (a sync or a watch event changed them); without,
    every node (a config change), and then the backend's node groups too (``node_groups_refresh``); a sync
    and a watch refresh them once they have written everything. Writes only the rows that changed.
    """
    inventory_write_lock(backend)
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
    _nodes_placed(backend, changed_nodes)

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
        node_groups_refresh(backend=backend)


def _nodes_placed(backend: Backend, nodes: list[Node]) -> None:
    """Write the availability and placements of ``nodes``: one UPDATE joined to a table of them per chunk.

    Django's ``bulk_update`` builds a CASE of every row for each column: on a first sync's 5,000 nodes
    it cost seconds of Python.
    """
    table = Node._meta.db_table
    columns = {"name": "text", "available": "boolean", "unavailable_reason": "text", "placements": "text"}
    with connection.cursor() as cursor:
        for chunk in _chunks(nodes, 1000):
            placed, params = rows_table(
                "placed", columns, [(n.name, n.available, n.unavailable_reason, n.placements) for n in chunk]
            )
            cursor.execute(
                f"{placed} UPDATE {table} SET available = placed.available, "
                f"unavailable_reason = placed.unavailable_reason, placements = placed.placements "
                f"FROM placed WHERE {table}.backend_id = %s AND {table}.name = placed.name",
                [*params, backend.pk],
            )


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
        self.specs = _SpecIndex([spec for spec in specs if not default_pool or spec[0].name != default_pool])
        default_specs = [spec for spec in specs if default_pool and spec[0].name == default_pool]
        self.default_specs = _SpecIndex(default_specs)
        if default_specs:
            self.default_pool = default_specs[0][0]
            names = [platform_name for _, platform_name, _ in default_specs]
            default = self.default_pool.default_platform
            self.default_platform = default if default in names else names[0]

    def place(self, *, labels: dict, taints: list, node_name: str) -> list[tuple]:
        found = self.specs.selecting(labels=labels, taints=taints, node_name=node_name)
        if found or not self.default_specs.specs:
            return found
        return self.default_specs.selecting(labels=labels, taints=taints, node_name=node_name) or [
            (self.default_pool, self.default_platform)
        ]


class _SpecIndex:
    """(pool, platform, spec) triples, indexed by one label each spec's ``nodeSelector`` requires.

    A 5,000-node backend with 150 platforms asked ``node_matches_pod_spec`` 750,000 times per full
    membership pass, though a node has the selected labels of only a few platforms. Looking up each of the
    node's (label, value) pairs finds the specs it might match; only those are matched in full. Specs
    without a selector, or with one that is not plain strings, are always matched in full.
    """

    def __init__(self, specs: list[tuple]):
        self.specs = specs
        self.by_label: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.unindexed: list[int] = []
        for index, (_, _, spec) in enumerate(specs):
            selector = spec.get("nodeSelector") if isinstance(spec, dict) else None
            first = next(iter(selector.items()), None) if isinstance(selector, dict) else None
            if first is not None and type(first[0]) is str and type(first[1]) is str:
                self.by_label[first].append(index)
            else:
                self.unindexed.append(index)

    def selecting(self, *, labels: dict, taints: list, node_name: str) -> list[tuple]:
        if all(type(value) is str for value in labels.values()):
            candidates = list(self.unindexed)
            for pair in labels.items():
                candidates.extend(self.by_label.get(pair, ()))
            candidates.sort()
        else:  # a label value read as text may equal a selector's: no shortcut
            candidates = range(len(self.specs))
        return [
            (self.specs[index][0], self.specs[index][1])
            for index in candidates
            if node_matches_pod_spec(labels=labels, taints=taints, pod_spec=self.specs[index][2], node_name=node_name)
        ]


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


# What a pod adds to its node's and pool label's usage, as ``_pod_contributions`` reads it.
POD_CONTRIBUTION_COLUMNS = (
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


def _pod_contributions(backend: Backend, keys: list) -> dict[tuple[str, str], dict]:
    """The stored state of the given pods: version, node, pool label, priority and requests, by key.

    The keys are joined as a table (``rows_table``) on the unique index's columns, in one query per chunk.
    """
    table = Pod._meta.db_table
    selected = ", ".join(f"{table}.{column}" for column in POD_CONTRIBUTION_COLUMNS)
    result = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(list(set(keys))):
            wanted, params = rows_table("wanted", {"namespace": "text", "name": "text"}, chunk)
            cursor.execute(
                f"{wanted} SELECT {selected} FROM {table} JOIN wanted ON {table}.namespace = wanted.namespace "
                f"AND {table}.name = wanted.name WHERE {table}.backend_id = %s",
                [*params, backend.pk],
            )
            for row in cursor.fetchall():
                values = dict(zip(POD_CONTRIBUTION_COLUMNS, row, strict=True))
                for column in ("cpu", "gpu"):  # SQLite hands decimals back as floats
                    if not isinstance(values[column], Decimal):
                        values[column] = Decimal(str(values[column]))
                values["preemptible"] = bool(values["preemptible"])
                result[(values["namespace"], values["name"])] = values
    return result


USAGE_FIELDS = {"cpu_used": "cpu", "memory_used": "memory", "storage_used": "storage", "gpu_used": "gpu"}
# What a node keeps of the pods bound to it: their requests (``USAGE_FIELDS``) and how many there are.
NODE_USAGE_COLUMNS = (*USAGE_FIELDS, "pods")
# The usage columns a node group adds up (``NodeGroupSums``): a node's own, but its storage.
NODE_GROUP_USAGE = tuple(column for column in NODE_USAGE_COLUMNS if column != "storage_used")
NODE_DELTA_COLUMNS = {
    "name": "text",
    "cpu_used": "decimal",
    "memory_used": "bigint",
    "storage_used": "bigint",
    "gpu_used": "decimal",
    "pods": "integer",
}


def _group_deltas_update() -> str:
    """The UPDATE that adds a table ``delta`` of node usage deltas (``NODE_DELTA_COLUMNS``) to ``NodeGroupSums``.

    Run before the nodes themselves change: a group's free GPUs move by each node's ``max(0, gpu - used)`` after
    the delta less the one before, which reads the node's usage before it. Parameters: the backend's id, twice.
    """
    groups, nodes = NodeGroupSums._meta.db_table, Node._meta.db_table
    used = f"{nodes}.gpu_used + delta.gpu_used"
    free_after = f"CASE WHEN {nodes}.gpu > {used} THEN {nodes}.gpu - ({used}) ELSE 0 END"
    free_before = f"CASE WHEN {nodes}.gpu > {nodes}.gpu_used THEN {nodes}.gpu - {nodes}.gpu_used ELSE 0 END"
    moved = [f"SUM(delta.{column}) AS {column}" for column in NODE_GROUP_USAGE]
    key = ", ".join(f"{nodes}.{column}" for column in GROUP_KEY)
    sets = ", ".join(f"{column} = {groups}.{column} + moved.{column}" for column in (*NODE_GROUP_USAGE, "free"))
    return (
        f"UPDATE {groups} SET {sets} FROM (SELECT {key}, {', '.join(moved)}, SUM({free_after} - {free_before}) AS free "
        f"FROM {nodes} JOIN delta ON {nodes}.name = delta.name "
        f"WHERE {nodes}.backend_id = %s AND {nodes}.placements <> '' GROUP BY {key}) AS moved "
        f"WHERE {groups}.backend_id = %s AND "
        + " AND ".join(f"{groups}.{column} = moved.{column}" for column in GROUP_KEY)
    )


def usage_apply_deltas(*, backend: Backend, removed: Iterable[dict], added: Iterable[dict]) -> None:
    """Move stored usage by what pods stopped adding (``removed``) and started adding (``added``).

    A watch batch changes a few hundred pods of a cluster with hundreds of thousands; adding their
    difference costs three statements (the node groups, the nodes, the pool labels), where recomputing a pool
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
        table = Node._meta.db_table
        for chunk in _chunks(node_rows, 1000):
            delta, params = rows_table("delta", NODE_DELTA_COLUMNS, chunk)
            # The groups first: their free GPUs are worked out from the nodes' usage before the delta.
            cursor.execute(f"{delta} {_group_deltas_update()}", [*params, backend.pk, backend.pk])
            sets = ", ".join(f"{column} = {table}.{column} + delta.{column}" for column in NODE_USAGE_COLUMNS)
            cursor.execute(
                f"{delta} UPDATE {table} SET {sets} FROM delta "
                f"WHERE {table}.backend_id = %s AND {table}.name = delta.name",
                [*params, backend.pk],
            )
        table = PoolPodUsage._meta.db_table
        for chunk in _chunks(pool_rows, 1000):
            delta, params = rows_table("delta", {"pool_name": "text", "gpu": "decimal", "gpu_quota": "decimal"}, chunk)
            cursor.execute(
                f"{delta} INSERT INTO {table} (backend_id, pool_name, gpu, gpu_quota) "
                f"SELECT %s, pool_name, gpu, gpu_quota FROM delta WHERE true "
                f"ON CONFLICT (backend_id, pool_name) DO UPDATE SET gpu = {table}.gpu + excluded.gpu, "
                f"gpu_quota = {table}.gpu_quota + excluded.gpu_quota",
                [*params, backend.pk],
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
            for chunk in _chunks(sorted(set(keys))):
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
    if not lease_acquire(name=lease, owner=owner, seconds=SYNC_LEASE_SECONDS):
        raise SyncBusy(f"backend '{backend.name}' is already being synced; this sync did not start")
    try:
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
            before = _pod_contributions(backend, [key for key in updated if key in self.stored] + gone)
        _delete(Pod, backend, gone, kind.key_fields)
        self.rows.merge()
        if not deltas:
            usage_refresh(backend=backend)  # most of it changed (or all is new): one pass over everything
        else:
            usage_apply_deltas(backend=backend, removed=before.values(), added=self.changed)
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
        _commit_without_flush()
        inventory_write_lock(backend)
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
            if kind == "nodes" and (upserts or deletes):  # before the pods' deltas, which add to the groups
                node_groups_refresh(backend=backend)
            if kind == "pods" and (upserts or deletes):
                written = [*deletes, *((r["namespace"], r["name"]) for r in upserts)]
                usage_apply_deltas(
                    backend=backend, removed=[before[key] for key in written if key in before], added=upserts
                )
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
    tables = ", ".join(model._meta.db_table for model in (Node, Pod, NodeMembership))
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
