"""The bulk write paths of the inventory: a watch batch's array upsert and a sync's staging-table upsert write
the same rows, and ``rows_table`` carries every value of a batch to the database unchanged."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection

from pools.models import Backend, Node, Pod
from pools.services import bulk
from pools.services.inventory import POD_FIELDS

pytestmark = pytest.mark.django_db

ROWS = [
    # Mixed Python types per column on purpose: ints and Decimals for a decimal column, a None timestamp,
    # JSON that is a nested object, an empty one, and text needing quotes.
    {
        "namespace": "team-a",
        "name": "train-0",
        "uid": "u0",
        "node_name": "gpu-1",
        "phase": "Running",
        "labels": {"osmo.pool": "a", "note": 'it\'s "quoted", {braces}'},
        "pool_name": "a",
        "node_selector": {},
        "preemptible": False,
        "cpu": 2,
        "memory": 2**40,
        "storage": 0,
        "gpu": Decimal("0.5"),
        "mig_devices": {"1g.10gb": 2},
        "resource_version": "101",
        "created": datetime(2026, 11, 1, 12, 30, tzinfo=UTC),
        "workload_kind": "PodGroup",
        "workload_name": "train",
        "owner_kind": "Job",
        "owner_name": "train",
        "annotations": {"pod-group-name": "train", "runai/user": "o'brien"},
        "priority_class": "train",
        "started": datetime(2026, 11, 1, 12, 31, tzinfo=UTC),
        "scheduled_reason": "",
        "scheduled_message": "",
        "user": "o'brien",
    },
    {
        "namespace": "team-b",
        "name": "serve-1",
        "uid": "u1",
        "node_name": "",
        "phase": "Pending",
        "labels": {},
        "pool_name": "",
        "node_selector": {"pool": "b"},
        "preemptible": True,
        "cpu": Decimal("0.25"),
        "memory": 0,
        "storage": 10**12,
        "gpu": 8,
        "mig_devices": {},
        "resource_version": "102",
        "created": None,
        "workload_kind": "Pod",
        "workload_name": "serve-1",
        "owner_kind": "",
        "owner_name": "",
        "annotations": {},
        "priority_class": "",
        "started": None,
        "scheduled_reason": "Unschedulable",
        "scheduled_message": '0/3 nodes are available: 3 Insufficient "nvidia.com/gpu".\ttab',
        "user": "team-b",
    },
]
COLUMNS = ("namespace", "name", *POD_FIELDS)


def stored(backend):
    return sorted(Pod.objects.filter(backend=backend).values_list(*COLUMNS))


def write(path, backend, rows):
    rows = [{"backend_id": backend.pk, **row} for row in rows]
    path(Pod, rows, ["backend", "namespace", "name"], list(POD_FIELDS))


@pytest.fixture
def backends(db):
    return Backend.objects.create(name="small-batch"), Backend.objects.create(name="staging")


def test_a_watch_batch_and_a_sync_write_the_same_rows_then_update_them_alike(backends):
    if connection.vendor != "postgresql":
        pytest.skip("both paths are PostgreSQL's (SQLite uses bulk_create); CI's PostgreSQL pass runs this")
    small, staged = backends
    write(bulk._array_upsert, small, ROWS)
    write(bulk._copy_upsert, staged, ROWS)
    assert stored(small) == stored(staged)
    assert len(stored(small)) == 2
    assert Pod.objects.get(backend=small, name="train-0").labels == ROWS[0]["labels"]

    changed = [{**ROWS[0], "gpu": 1, "labels": {"osmo.pool": "c"}, "resource_version": "103"}]
    write(bulk._array_upsert, small, changed)
    write(bulk._copy_upsert, staged, changed)
    assert stored(small) == stored(staged)
    pod = Pod.objects.get(backend=small, name="train-0")
    assert (pod.gpu, pod.labels, pod.resource_version) == (Decimal(1), {"osmo.pool": "c"}, "103")


@pytest.mark.parametrize("array_rows", [0, 1, 2000], ids=["staging", "mixed", "arrays"])
def test_upsert_rows_inserts_then_updates_only_the_named_fields(backends, monkeypatch, array_rows):
    small, _ = backends
    monkeypatch.setattr(bulk, "ARRAY_UPSERT_ROWS", array_rows)
    key = ["backend", "namespace", "name"]
    bulk.upsert_rows(
        Pod, [{"backend_id": small.pk, **row} for row in ROWS], unique_fields=key, update_fields=list(POD_FIELDS)
    )
    moved = {"backend_id": small.pk, **ROWS[1], "gpu": 4, "phase": "Running"}
    bulk.upsert_rows(Pod, [moved], unique_fields=key, update_fields=["gpu"])
    assert len(stored(small)) == 2
    pod = Pod.objects.get(backend=small, name="serve-1")
    assert (pod.gpu, pod.phase) == (Decimal(4), "Pending")


def test_rows_table_joins_every_row_with_its_values_unchanged(backends):
    backend, _ = backends
    Node.objects.bulk_create([Node(backend=backend, name=f"n{i}") for i in range(3)])
    rows = [("n0", Decimal("1.5"), 2**40, True), ("n2", Decimal(0), 0, False), ("absent", Decimal(7), 1, True)]
    table, params = bulk.rows_table(
        "wanted", {"name": "text", "cpu": "decimal", "memory": "bigint", "flag": "boolean"}, rows
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"{table} SELECT n.name, wanted.cpu, wanted.memory, wanted.flag FROM {Node._meta.db_table} n "
            f"JOIN wanted ON n.name = wanted.name WHERE n.backend_id = %s ORDER BY n.name",
            [*params, backend.pk],
        )
        found = [(name, Decimal(str(cpu)), memory, bool(flag)) for name, cpu, memory, flag in cursor.fetchall()]
    assert found == rows[:2]


def test_insert_rows_writes_every_value_and_the_defaults_of_what_a_row_leaves_out(backends):
    small, _ = backends
    assert bulk.insert_rows(Pod, [{"backend_id": small.pk, **row} for row in ROWS]) == 2
    assert stored(small) == sorted(tuple(row[column] for column in COLUMNS) for row in ROWS)
    bulk.insert_rows(Pod, [{"backend_id": small.pk, "namespace": "team-c", "name": "bare"}])
    bare = Pod.objects.get(backend=small, name="bare")
    assert (bare.gpu, bare.labels, bare.phase, bare.node_name) == (0, {}, "", "")
