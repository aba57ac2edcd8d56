"""The workloads' sums (``WorkloadSums``) stay what grouping the pods gives, whatever writes the pods, and the
Workloads list read from them is the list grouped from the pods.

A whole-fleet reader's list is ordered from these sums (an index and a ``LIMIT``); everyone else's is grouped from
their pods. Each test writes through a service (a sync, a resync, watch batches) and compares the kept sums with
the pods grouped in Python, and the rows read both ways.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kube_objects import node, pod
from parallel_clients import at_once
from people import person

from pools import selectors
from pools.engine import workloads as engine
from pools.inventory.sources import WatchEvent
from pools.models import Pod, WorkloadSums
from pools.selectors import workloads as workload_rows
from pools.services import watch_events_apply
from pools.services.workload_sums import workload_sums_refresh

VERSION = iter(range(100, 10**7))
NODES = [node("n1", gpu=8), node("n2", gpu=8)]


def kept(backend) -> list[tuple]:
    return sorted(
        (ns, kind, name, Decimal(gpus), Decimal(held), pods, running, pending, failed)
        for ns, kind, name, gpus, held, pods, running, pending, failed in WorkloadSums.objects.filter(
            backend=backend
        ).values_list(
            "namespace", "workload_kind", "workload_name", "gpus", "held", "pods", "running", "pending", "failed"
        )
    )


def grouped_in_python(backend) -> list[tuple]:
    """The sums as one would work them out by hand from every pod row."""
    sums: dict[tuple, list] = defaultdict(lambda: [Decimal(0), Decimal(0), 0, 0, 0, 0])
    for row in Pod.objects.filter(backend=backend).values(
        "namespace", "workload_kind", "workload_name", "gpu", "node_name", "phase"
    ):
        figures = sums[(row["namespace"], row["workload_kind"], row["workload_name"])]
        gpu = Decimal(row["gpu"])
        figures[0] += gpu
        if row["node_name"] and row["phase"] not in ("Succeeded", "Failed"):
            figures[1] += gpu
        figures[2] += 1
        figures[3] += row["phase"] == "Running"
        figures[4] += row["phase"] == "Pending"
        figures[5] += row["phase"] == "Failed"
    return sorted((*key, *figures) for key, figures in sums.items())


def assert_kept_as_grouped(backend):
    assert kept(backend) == grouped_in_python(backend)
    workload_sums_refresh(backend=backend)  # and recomputing the whole backend changes nothing
    assert kept(backend) == grouped_in_python(backend)


def event(obj: dict, type_: str = "MODIFIED") -> WatchEvent:
    obj["metadata"]["resourceVersion"] = str(next(VERSION))
    return WatchEvent(type_, "pods", obj)


def gang_pod(name: str, group: str, **fields) -> dict:
    return pod(name, namespace="research", annotations={"pod-group-name": group}, **fields)


@pytest.fixture
def fleet(cluster):
    return cluster(
        [
            *NODES,
            gang_pod("g-0", "pretrain", node="n1", gpu=2),
            gang_pod("g-1", "pretrain", gpu=2, phase="Pending"),
            pod("etl-x1", namespace="robots", node="n2", gpu=4, owner=("Job", "etl")),
            pod("lonely", namespace="robots", gpu=1, phase="Pending"),
        ]
    )


def test_a_sync_keeps_a_row_per_workload(fleet):
    rows = {(ns, kind, name): figures for ns, kind, name, *figures in kept(fleet)}
    assert rows[("research", engine.POD_GROUP, "pretrain")] == [4, 2, 2, 1, 1, 0]
    assert rows[("robots", "Job", "etl")] == [4, 4, 1, 1, 0, 0]
    assert rows[("robots", engine.POD, "lonely")] == [1, 0, 1, 0, 1, 0]
    assert_kept_as_grouped(fleet)


def test_watch_batches_move_the_workloads_they_touch(fleet):
    batches = [
        [event(gang_pod("g-1", "pretrain", node="n2", gpu=2))],  # the gang's second pod starts
        [event(pod("etl-x1", namespace="robots", node="n2", gpu=4, owner=("Job", "etl"), phase="Failed"))],
        [event(gang_pod("g-0", "finetune", node="n1", gpu=2))],  # a pod moves to another workload
        [event(pod("lonely", namespace="robots", gpu=1), "DELETED")],  # the workload's last pod goes
        [event(pod("new-0", namespace="robots", node="n1", gpu=1, owner=("Job", "new")), "ADDED")],
    ]
    for batch in batches:
        watch_events_apply(backend=fleet, events=batch)
        assert_kept_as_grouped(fleet)
    assert not WorkloadSums.objects.filter(workload_name="lonely").exists()
    assert WorkloadSums.objects.get(workload_name="finetune").held == 2


def test_a_resync_keeps_them_changed_a_little_or_wholly(fleet, cluster):
    cluster([*NODES, gang_pod("g-0", "pretrain", node="n1", gpu=2), pod("lonely", namespace="robots", gpu=1)])
    assert_kept_as_grouped(fleet)  # a few pods changed: the workloads they touched recomputed
    cluster([*NODES, *(pod(f"w-{n}", namespace="batch", node="n1", owner=("Job", f"j{n % 7}")) for n in range(60))])
    assert_kept_as_grouped(fleet)  # all of it changed: the backend's sums recomputed whole
    assert len(kept(fleet)) == 7


def test_a_deleted_backend_takes_its_sums(fleet, actor):
    from pools import services
    from pools.choices import ConfigType

    services.config_apply(changes={ConfigType.BACKEND: {fleet.name: None}}, actor=actor)
    assert not WorkloadSums.objects.exists()


PHASES = st.sampled_from(["Running", "Pending", "Succeeded", "Failed"])
POD_STATE = st.tuples(
    st.sampled_from(["a", "b", "c"]),  # its workload
    st.sampled_from(["", "n1", "n2"]),  # its node
    PHASES,
    st.sampled_from([0, 1, 2, Decimal("0.5")]),  # its GPUs
    st.booleans(),  # deleted instead
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.dictionaries(st.sampled_from([f"p{n}" for n in range(8)]), POD_STATE), max_size=5))
def test_kept_sums_are_the_grouped_pods_after_any_watch_batches(fleet, root, batches):
    """Any sequence of pod events (created, moved between workloads and nodes, finished, deleted) leaves the kept
    sums equal to the pods grouped by hand, and the Workloads list read from them equal to the list grouped from
    the pods."""
    for batch in batches:
        events = []
        for name, (group, node_name, phase, gpu, deleted) in batch.items():
            obj = gang_pod(name, group, node=node_name or None, gpu=gpu, phase=phase)
            events.append(event(obj, "DELETED" if deleted else "MODIFIED"))
        watch_events_apply(backend=fleet, events=events)
        assert kept(fleet) == grouped_in_python(fleet)
    assert_lists_agree(root)


@pytest.fixture
def root(db):
    return person("root", is_superuser=True)


def assert_lists_agree(root):
    for filters in ({}, {"pending": "1"}, {"phase": "Running"}, {"namespace": "research"}, {"pending": "0"}):
        from_sums = workload_rows.workloads_visible(user=root, filters=filters)
        assert from_sums._sums is not None
        grouped = workload_rows.workloads_visible(user=root, filters=filters)
        grouped._sums = None  # the same list, ordered by grouping every pod
        assert len(from_sums) == len(grouped)
        assert list(from_sums[0:3]) == list(grouped[0:3]) == list(grouped)[:3]


def test_the_list_from_the_sums_is_the_list_from_the_pods(fleet, root):
    assert_lists_agree(root)
    assert [row["name"] for row in selectors.workloads_visible(user=root, filters={"pending": "1"})[0:10]] == [
        "pretrain",
        "lonely",
    ]


@pytest.mark.django_db(transaction=True)
def test_parallel_watch_batches_and_a_resync_keep_the_sums(inventory_dir, cluster):
    """Real parallel clients on PostgreSQL: two watchers move pods of the same workloads while a resync rewrites
    the backend; the kept sums end as the pods grouped by hand."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    fleet = cluster([*NODES, *(gang_pod(f"s{i}", f"g{i % 4}", node="n1", gpu=1) for i in range(40))])

    def watching(prefix: str):
        def batches():
            for round_ in range(12):
                batch = [
                    event(gang_pod(f"{prefix}{i}", f"g{(round_ + i) % 4}", node="n2" if i % 2 else None, gpu=1))
                    for i in range(5)
                ]
                watch_events_apply(backend=fleet, events=batch)

        return batches

    def resyncing():
        for _ in range(2):
            cluster([*NODES, *(gang_pod(f"s{i}", f"g{i % 3}", node="n1", gpu=2) for i in range(40))])

    errors = at_once(watching("a"), watching("b"), resyncing)
    assert not errors, errors
    assert kept(fleet) == grouped_in_python(fleet)
