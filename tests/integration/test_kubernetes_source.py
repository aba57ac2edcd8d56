"""Sync and watch against a real kube-apiserver, including the failures the live-inventory issue names."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.inventory.records import InventoryError
from pools.inventory.sources import KubernetesSource, WatchEvent
from pools.models import Backend, Node, NodeLabelChange, Pod

pytestmark = pytest.mark.services


def make_pool(name="train", backend="gpu-cluster", **extra):
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "h100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
            },
            ConfigType.POOL: {name: {"backend": backend, "common_pod_template": ["h100"], **extra}},
        },
        actor=services.SYSTEM,
    )


def pool_gpu(name="train"):
    return next(row for row in selectors.pool_list(user=SYSTEM) if row["name"] == name)["gpu"]


def inventory_snapshot():
    nodes = sorted(Node.objects.values_list("name", "gpu", "available", "labels"))
    pods = sorted(Pod.objects.values_list("namespace", "name", "phase", "gpu", "pool_name"))
    return nodes, pods


def wait_for(condition, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Watcher:
    """backend_watch on a thread, as `poolctl backend watch` runs it."""

    def __init__(self, backend):
        self.stop = threading.Event()
        self.backend = backend
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        from django.db import connection

        try:
            services.backend_watch(backend=self.backend, stop=self.stop, owner="test")
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=20)


def test_full_sync_reads_nodes_and_non_terminated_pods(db, kube, kube_backend):
    kube.add_node("h100-1")
    kube.add_node("h100-2", ready="False")
    kube.add_node("l40s-1", product="NVIDIA-L40S", gpu=4)
    kube.add_pod("train-a", node="h100-1", gpu=4, pool="train")
    kube.add_pod("train-b", node="h100-1", gpu=2, pool="train", priority="LOW")
    kube.add_pod("queued", node=None, gpu=8, pool="train", phase="Pending")
    kube.add_pod("finished", node="h100-1", gpu=8, pool="train", phase="Succeeded")
    backend = kube_backend()
    make_pool()

    counts = services.backend_sync(backend=backend)

    assert counts["nodes"] == 3 and counts["pods"] == 3
    assert set(Pod.objects.values_list("name", flat=True)) == {"train-a", "train-b", "queued"}
    assert Node.objects.get(name="h100-2").available is False
    assert pool_gpu() == {
        "quota_used": 12,
        "quota_limit": 8,
        "quota_free": 0,
        "total_usage": 14,
        "total_capacity": 8,
        "total_free": 2,
        "used_on_nodes": 6,
    }
    assert selectors.pool_list(user=SYSTEM)[0]["status"] == "ONLINE"


def test_resync_writes_only_what_changed(db, kube, kube_backend):
    kube.add_node("h100-1")
    for index in range(5):
        kube.add_pod(f"job-{index}", node="h100-1", gpu=1, pool="train")
    backend = kube_backend()
    services.backend_sync(backend=backend)
    kube.set_phase("job-0", "Succeeded")
    kube.add_pod("job-new", node="h100-1", gpu=1, pool="train")

    counts = services.backend_sync(backend=backend)

    assert counts["nodes_changed"] == {"created": 0, "updated": 0, "deleted": 0}
    assert counts["pods_changed"] == {"created": 1, "updated": 0, "deleted": 1}


def test_pagination_reads_every_page(db, kube, kube_backend):
    kube.add_node("h100-1")
    for index in range(7):
        kube.add_pod(f"job-{index}", node="h100-1", gpu=1)
    source = KubernetesSource(kubeconfig=kube.kubeconfig)
    source.page_size = 2
    services.backend_sync(backend=kube_backend(), source=source)
    assert Pod.objects.count() == 7


@pytest.mark.django_db(transaction=True)
def test_watch_shows_new_usage_within_a_second(kube, kube_backend):
    kube.add_node("h100-1")
    backend = kube_backend()
    make_pool()
    with Watcher(backend):
        wait_for(lambda: Node.objects.filter(name="h100-1").exists(), what="the first list")
        started = time.monotonic()
        kube.add_pod("live", node="h100-1", gpu=3, pool="train")
        wait_for(lambda: pool_gpu()["total_usage"] == 3, what="usage from a new pod")
        latency = time.monotonic() - started
        kube.set_phase("live", "Succeeded")
        wait_for(lambda: pool_gpu()["total_usage"] == 0, what="a finished pod to stop counting")
        kube.add_node("h100-2")
        wait_for(lambda: pool_gpu()["total_capacity"] == 16, what="a new node to join the pool")
        kube.delete_node("h100-2")
        wait_for(lambda: pool_gpu()["total_capacity"] == 8, what="a deleted node to leave")
    assert latency < 1.5


def test_duplicate_and_out_of_order_events_converge_to_a_fresh_list(db, kube, kube_backend):
    kube.add_node("h100-1")
    kube.add_pod("p", node="h100-1", gpu=2, pool="train")
    backend = kube_backend()
    source = KubernetesSource(kubeconfig=kube.kubeconfig)
    old_pod = source.api.read_namespaced_pod("p", "default", _preload_content=False)
    import json

    old_pod = json.loads(old_pod.data)
    kube.set_phase("p", "Pending")
    new_pod = json.loads(source.api.read_namespaced_pod("p", "default", _preload_content=False).data)
    services.backend_sync(backend=backend)
    expected = inventory_snapshot()

    tombstones = {}
    events = [
        WatchEvent("MODIFIED", "pods", new_pod),
        WatchEvent("MODIFIED", "pods", new_pod),
        WatchEvent("MODIFIED", "pods", old_pod),
    ]
    for event in events:  # one by one, as they would arrive
        services.watch_events_apply(backend=backend, events=[event], tombstones=tombstones)
    assert inventory_snapshot() == expected

    kube.delete_pod("p")
    services.watch_events_apply(
        backend=backend,
        events=[
            WatchEvent(
                "DELETED",
                "pods",
                {
                    **new_pod,
                    "metadata": {
                        **new_pod["metadata"],
                        "resourceVersion": str(int(new_pod["metadata"]["resourceVersion"]) + 1),
                    },
                },
            )
        ],
        tombstones=tombstones,
    )
    services.watch_events_apply(
        backend=backend, events=[WatchEvent("MODIFIED", "pods", new_pod)], tombstones=tombstones
    )
    services.backend_sync(backend=backend)
    assert not Pod.objects.filter(name="p").exists()


@pytest.mark.django_db(transaction=True)
def test_expired_watch_relists_and_converges(kube, kube_backend):
    kube.add_node("h100-1")
    backend = kube_backend()
    make_pool()
    # A restarted API server's watch cache begins at the current version, so "1" is out of its window whatever the
    # tests before did (a fresh server's cache, begun at version 1, still holds it).
    kube.kill_apiserver()
    kube.restart_apiserver()
    source = KubernetesSource(kubeconfig=kube.kubeconfig)
    stop = threading.Event()
    batches = source.watch({"nodes": "1", "pods": "1"}, stop)  # far too old: the API server answers 410
    with pytest.raises(InventoryError, match="expired|too old"):
        for _ in range(20):
            next(batches)
    stop.set()
    with Watcher(backend):
        kube.add_pod("after", node="h100-1", gpu=1, pool="train")
        wait_for(lambda: pool_gpu()["total_usage"] == 1, what="the watch after a relist")


def test_unreachable_api_server_changes_nothing_and_records_the_error(db, kube, kube_backend, settings):
    kube.add_node("h100-1")
    kube.add_pod("p", node="h100-1", gpu=2, pool="train")
    backend = kube_backend()
    make_pool()
    services.backend_sync(backend=backend)
    before = inventory_snapshot()

    class DiesAfterFirstPage(KubernetesSource):
        page_size = 1
        calls = 0

        def _call(self, what, function, **kwargs):
            DiesAfterFirstPage.calls += 1
            if DiesAfterFirstPage.calls == 2:
                kube.kill_apiserver()
            return super()._call(what, function, **kwargs)

    kube.add_node("h100-2")
    try:
        with pytest.raises(InventoryError, match="cannot reach the Kubernetes API"):
            services.backend_sync(backend=backend, source=DiesAfterFirstPage(kubeconfig=kube.kubeconfig))
        assert inventory_snapshot() == before  # rolled back: nothing half-written
        backend.refresh_from_db()
        assert "cannot reach" in backend.last_sync_error
        assert (
            selectors.pool_list(user=SYSTEM)[0]["gpu"]["total_capacity"] == 8
        )  # the last good inventory stays visible
        Backend.objects.filter(pk=backend.pk).update(last_heartbeat=backend.last_heartbeat - timedelta(minutes=3))
        assert selectors.pool_list(user=SYSTEM)[0]["status"] == "OFFLINE"
    finally:
        kube.restart_apiserver()
    services.backend_sync(backend=backend)
    assert selectors.pool_list(user=SYSTEM)[0]["status"] == "ONLINE"
    assert Node.objects.filter(name="h100-2").exists()


@pytest.mark.django_db(transaction=True)
def test_watch_recovers_by_itself_when_the_api_server_returns(kube, kube_backend):
    kube.add_node("h100-1")
    backend = kube_backend()
    make_pool()
    with Watcher(backend):
        wait_for(lambda: Node.objects.filter(name="h100-1").exists(), what="the first list")
        kube.kill_apiserver()
        wait_for(lambda: Backend.objects.get(pk=backend.pk).last_sync_error, what="the error to be recorded")
        kube.restart_apiserver()
        kube.add_pod("back", node="h100-1", gpu=2, pool="train")
        wait_for(lambda: pool_gpu()["total_usage"] == 2, timeout=40, what="the watch to resume")


def test_node_label_patches_the_cluster_and_leaves_an_audit_entry(db, kube, kube_backend, poolctl):
    kube.add_node("h100-1")
    services.backend_sync(backend=kube_backend())
    assert poolctl("node", "label", "h100-1", "team=vision").code == 0
    assert kube.api.read_node("h100-1").metadata.labels["team"] == "vision"
    assert Node.objects.get(name="h100-1").labels["team"] == "vision"
    refused = poolctl("node", "label", "h100-1", "team=speech")
    assert refused.code == 1 and "use --overwrite" in refused.err
    assert poolctl("node", "label", "h100-1", "team=speech", "--overwrite").code == 0
    assert poolctl("node", "unlabel", "h100-1", "team").code == 0
    assert "team" not in kube.api.read_node("h100-1").metadata.labels
    assert list(NodeLabelChange.objects.order_by("created_at").values_list("old_value", "new_value")) == [
        (None, "vision"),
        ("vision", "speech"),
        ("speech", None),
    ]


def test_node_label_is_refused_on_a_backend_that_is_not_writable(db, kube, kube_backend, poolctl):
    kube.add_node("h100-1")
    services.backend_sync(backend=kube_backend(writable=False))
    result = poolctl("node", "label", "h100-1", "team=vision")
    assert result.code == 1 and "is not writable" in result.err
    assert "team" not in (kube.api.read_node("h100-1").metadata.labels or {})
