"""Live inventory without a cluster: simulated backends, watch events, usage history, metrics, the worker."""

import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from kube_objects import node, pod
from people import person

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.permissions import METRICS_ROLE
from pools.inventory.sources import SimulatedSource, WatchEvent
from pools.models import Backend, Node, NodeGroupSums, Pod, PoolPodUsage, UsageSample, VerdictRound


def usage_snapshot():
    nodes = sorted(Node.objects.values_list("name", "cpu_used", "memory_used", "storage_used", "gpu_used"))
    pools = sorted(PoolPodUsage.objects.values_list("pool_name", "gpu", "gpu_quota"))
    groups = sorted(NodeGroupSums.objects.values_list("placements", "gpu_product", "nodes", "free", "gpu_used", "pods"))
    return nodes, pools, groups


def simulated_backend(actor, name="sim", **extra):
    body = {"kind": "simulated", "seed": 3, "size": 30, **extra}
    services.config_apply(changes={ConfigType.BACKEND: {name: body}}, actor=actor)
    return Backend.objects.get(name=name)


def everything_pool(actor, name="all", backend="sim"):
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {"anything": {"spec": {"tolerations": [{"operator": "Exists"}]}}},
            ConfigType.POOL: {name: {"backend": backend, "common_pod_template": ["anything"]}},
        },
        actor=actor,
    )


class TestSimulatedBackend:
    def test_sync_stores_the_fleet_and_pods_carry_the_label_of_a_pool_that_holds_their_node(self, db, actor):
        backend = simulated_backend(actor)
        everything_pool(actor)
        counts = services.backend_sync(backend=backend)
        assert counts["nodes"] == 30 and counts["pods"] > 30
        labelled = Pod.objects.exclude(pool_name="")
        assert labelled.exists() and set(labelled.values_list("pool_name", flat=True)) == {"all"}
        assert selectors.pool_list(user=SYSTEM)[0]["gpu"]["total_usage"] > 0

    def test_applying_the_fleets_events_gives_what_a_fresh_list_gives(self, db, actor):
        backend = simulated_backend(actor)
        everything_pool(actor)
        clock = {"now": 1_700_000_000.0}
        source = SimulatedSource(seed=3, size=30, pool_labels={}, clock=lambda: clock["now"])
        services.backend_sync(backend=backend, source=source)
        for _ in range(6):  # a minute of changes, applied as a watch applies them
            since = clock["now"]
            clock["now"] += 10
            events = [
                WatchEvent(e.type, "nodes" if e.object["kind"] == "Node" else "pods", e.object)
                for e in source.fleet.events(since, clock["now"])
            ]
            services.watch_events_apply(backend=backend, events=events, trusted_versions=False)
        watched = sorted(Pod.objects.values_list("namespace", "name", "phase", "gpu", "resource_version"))
        watched_nodes = sorted(Node.objects.values_list("name", "available", "resource_version"))
        kept_usage = usage_snapshot()
        assert kept_usage[2], "the pool holds the nodes: they make groups"
        services.usage_refresh(backend=backend)  # recomputed from scratch, the stored usage is the same
        services.node_groups_refresh(backend=backend)
        assert usage_snapshot() == kept_usage

        counts = services.backend_sync(backend=backend, source=source)

        assert counts["pods_changed"] == {"created": 0, "updated": 0, "deleted": 0}
        assert counts["nodes_changed"] == {"created": 0, "updated": 0, "deleted": 0}
        assert sorted(Pod.objects.values_list("namespace", "name", "phase", "gpu", "resource_version")) == watched
        assert sorted(Node.objects.values_list("name", "available", "resource_version")) == watched_nodes

    @pytest.mark.django_db(transaction=True)
    def test_the_embedded_worker_keeps_usage_moving(self, actor):
        backend = simulated_backend(actor)
        everything_pool(actor)
        call_command("runworker", seconds=12)
        backend.refresh_from_db()
        assert backend.last_heartbeat and timezone.now() - backend.last_heartbeat < timedelta(seconds=30)
        assert UsageSample.objects.filter(scope="pool", key="all").exists()
        assert Pod.objects.exists()
        # Its watches keep the verdicts as a Celery worker's do (their judging thread, after the changed batches).
        assert VerdictRound.objects.filter(backend=backend).exists()


class TestUsageHistory:
    def test_a_sample_per_pool_and_per_gpu_product_each_minute(self, cluster, actor):
        cluster([node("h1", gpu=8), node("l1", gpu=4, product="NVIDIA-L40S"), pod("a", node="h1", gpu=3, pool="p")])
        services.config_apply(changes={ConfigType.POOL: {"p": {"backend": "test-cluster"}}}, actor=actor)
        at = timezone.now()
        services.usage_sample_record(at=at)
        services.usage_sample_record(at=at)  # the same minute again changes nothing
        pool = UsageSample.objects.get(scope="pool", key="p")
        assert (pool.used, pool.capacity, pool.quota_used, pool.quota_limit) == (3, 12, 3, 12)
        products = dict(UsageSample.objects.filter(scope="product").values_list("key", "used"))
        assert products == {"NVIDIA-H100-80GB-HBM3": 3, "NVIDIA-L40S": 0}

    def test_minutes_become_hourly_averages_and_expire(self, cluster, actor):
        backend = cluster([node("h1")])
        now = timezone.now().replace(minute=30, second=0, microsecond=0)
        hour = now.replace(minute=0) - timedelta(hours=1)
        for minute, used in ((0, 2), (10, 4), (20, 6)):
            UsageSample.objects.create(
                scope="pool", key="p", backend=backend, at=hour + timedelta(minutes=minute), used=used, capacity=8
            )
        UsageSample.objects.create(
            scope="pool", key="p", backend=backend, at=now - timedelta(days=3), used=1, capacity=8
        )
        UsageSample.objects.create(
            scope="pool", key="p", backend=backend, resolution="hour", at=now - timedelta(days=91), used=1, capacity=8
        )

        result = services.usage_history_compact(now=now)

        hourly = UsageSample.objects.get(resolution="hour", at=hour)
        assert (hourly.used, hourly.capacity) == (4, 8)
        assert result["expired"] == 2
        services.usage_history_compact(now=now)  # compacting again adds no second hourly sample
        assert UsageSample.objects.filter(resolution="hour", at=hour).count() == 1

    def test_a_series_has_one_resolution_minutes_for_hours_then_hourly_with_the_newest_minutes_averaged(self, cluster):
        backend = cluster([node("h1")])
        now = timezone.now().replace(second=0, microsecond=0)
        last_hour = now.replace(minute=0) - timedelta(hours=1)  # an hour the compaction has not reached yet
        for minute, used in ((30, 3), (31, 5)):
            UsageSample.objects.create(
                scope="pool", key="p", backend=backend, at=last_hour + timedelta(minutes=minute), used=used, capacity=8
            )
        UsageSample.objects.create(
            scope="pool", key="p", backend=backend, resolution="hour", at=now - timedelta(days=5), used=2, capacity=8
        )
        recent = selectors.usage_series(scope="pool", key="p", since=now - timedelta(hours=2))
        week = selectors.usage_series(scope="pool", key="p", since=now - timedelta(days=7))
        assert [(r["used"], r["resolution"]) for r in recent] == [(3, "minute"), (5, "minute")]
        # A week is hourly: the hourly samples, then the hours the compaction has not reached yet, averaged as it
        # will average them (never minutes and hours in one line).
        assert [(r["used"], r["resolution"]) for r in week] == [(2, "hour"), (4, "hour")]
        assert week[1]["at"] == last_hour.isoformat()


def test_metrics_expose_pool_gpu_numbers_and_backend_health(client, cluster, actor):
    cluster([node("h1", gpu=8), node("h2", gpu=8, ready="False"), pod("a", node="h1", gpu=3, pool="p")])
    services.config_apply(changes={ConfigType.POOL: {"p": {"backend": "test-cluster"}}}, actor=actor)
    client.force_login(person("prometheus", METRICS_ROLE, password=None))  # who may read them: tests/accounts
    response = client.get("/metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'gpupool_pool_gpu_capacity{backend="test-cluster",pool="p"} 8.0' in text
    assert 'gpupool_pool_gpu_usage{backend="test-cluster",pool="p"} 3.0' in text
    assert 'gpupool_pool_status{pool="p",status="ONLINE"} 1.0' in text
    assert 'gpupool_backend_nodes{backend="test-cluster",state="unavailable"} 1.0' in text
    assert "gpupool_backend_last_sync_age_seconds" in text and "gpupool_backend_sync_duration_seconds" in text


def test_resource_list_reports_mig_devices_by_profile_and_flags_time_slicing(cluster, actor):
    mig_pod = pod("mig-job", node="mig")
    mig_pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] = "2"
    cluster(
        [
            node("mig", gpu=0, extra_allocatable={"nvidia.com/mig-1g.10gb": "7"}),
            node("sliced", gpu=16, labels={"nvidia.com/gpu.replicas": "4"}),
            mig_pod,
        ]
    )
    services.config_apply(changes={ConfigType.POOL: {"p": {"backend": "test-cluster"}}}, actor=actor)
    rows = {row["node"]: row for row in selectors.resource_list(user=SYSTEM, filters={"pool": "p"})}
    assert rows["mig"]["mig"] == {"1g.10gb": {"used": 2, "capacity": 7}}
    assert rows["sliced"]["time_sliced"] is True and rows["mig"]["time_sliced"] is False


def test_only_one_holder_of_a_lease_at_a_time(db):
    assert services.lease_acquire(name="sync:1", owner="a", seconds=60)
    assert not services.lease_acquire(name="sync:1", owner="b", seconds=60)
    assert services.lease_acquire(name="sync:1", owner="a", seconds=60)  # renewal
    services.lease_release(name="sync:1", owner="a")
    assert services.lease_acquire(name="sync:1", owner="b", seconds=60)


def test_an_expired_lease_can_be_taken_over(db):
    assert services.lease_acquire(name="watch:1", owner="crashed", seconds=-1)
    assert services.lease_acquire(name="watch:1", owner="new", seconds=60)


def test_a_stopped_watch_releases_its_lease(db, actor):
    backend = simulated_backend(actor)
    stop = threading.Event()
    threading.Timer(2, stop.set).start()
    services.backend_watch(backend=backend, stop=stop, owner="first")
    assert Node.objects.filter(backend=backend).count() == 30
    assert services.lease_acquire(name=f"watch:{backend.pk}", owner="second", seconds=60)


def test_a_resync_moves_usage_with_a_pod_that_changed_node_and_pool(cluster, actor, tmp_path):
    from kube_objects import write_list

    backend = cluster(
        [
            node("a", gpu=8),
            node("b", gpu=8),
            pod("p", node="a", gpu=3, pool="x"),
            pod("q", node="a", gpu=1, pool="x", priority="LOW"),
        ]
    )
    write_list(
        tmp_path / "test-cluster.json",
        [
            node("a", gpu=8),
            node("b", gpu=8),
            pod("p", node="b", gpu=3, pool="y"),
            pod("q", node="a", gpu=1, pool="x", priority="LOW"),
        ],
    )
    services.backend_sync(backend=backend)
    assert dict(Node.objects.values_list("name", "gpu_used")) == {"a": 1, "b": 3}
    assert {p: (g, q) for p, g, q in PoolPodUsage.objects.values_list("pool_name", "gpu", "gpu_quota")} == {
        "x": (1, 0),
        "y": (3, 3),
    }
    kept = usage_snapshot()
    services.usage_refresh(backend=backend)
    services.node_groups_refresh(backend=backend)
    assert usage_snapshot() == kept


WORKLOAD_FIELDS = ("workload_kind", "workload_name", "owner_kind", "owner_name", "user", "scheduled_reason")


def test_list_watch_and_resync_keep_what_workloads_read(cluster, tmp_path):
    """The sync keeps each pod's workload, owner, kept annotations, start and why it is not scheduled (SEMANTICS §10),
    on a list, a watch event and a resync alike."""
    from kube_objects import write_list

    gang = pod(
        "g-1",
        phase="Pending",
        gpu=2,
        annotations={"pod-group-name": "g", "runai/user": "lena", "noise": "x"},
        unschedulable="0/2 nodes are available",
    )
    backend = cluster([node("a", gpu=8), gang])
    stored = Pod.objects.get(name="g-1")
    assert [getattr(stored, field) for field in WORKLOAD_FIELDS] == ["PodGroup", "g", "", "", "lena", "Unschedulable"]
    assert stored.annotations == {"pod-group-name": "g", "runai/user": "lena"}

    started = pod("web-5d8-x", node="a", owner=("ReplicaSet", "web-5d8"), labels={"pod-template-hash": "5d8"})
    started["metadata"]["resourceVersion"] = "7"
    started["spec"]["priorityClassName"] = "inference"
    started["status"]["startTime"] = "2026-01-02T03:04:05Z"
    services.watch_events_apply(backend=backend, events=[WatchEvent("ADDED", "pods", started)])
    stored = Pod.objects.get(name="web-5d8-x")
    assert [getattr(stored, field) for field in WORKLOAD_FIELDS] == [
        "Deployment",
        "web",
        "ReplicaSet",
        "web-5d8",
        "default",
        "",
    ]
    assert stored.priority_class == "inference" and stored.started.isoformat() == "2026-01-02T03:04:05+00:00"

    scheduled = pod("g-1", node="a", gpu=2, annotations={"pod-group-name": "g"}, labels={"user": "rob"})
    write_list(tmp_path / "test-cluster.json", [node("a", gpu=8), scheduled])
    services.backend_sync(backend=backend)
    stored = Pod.objects.get(name="g-1")
    assert [getattr(stored, field) for field in WORKLOAD_FIELDS] == ["PodGroup", "g", "", "", "rob", ""]
    assert stored.scheduled_message == "" and stored.annotations == {"pod-group-name": "g"}
