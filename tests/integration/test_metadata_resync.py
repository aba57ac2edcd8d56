"""A resync against a real kube-apiserver lists only names and versions and reads just what changed, and
leaves the database exactly as a full sync from scratch would."""

from __future__ import annotations

import pytest
from synced_state import database_state

from pools import services
from pools.choices import ConfigType
from pools.inventory.records import InventoryError
from pools.inventory.sources import KubernetesSource
from pools.models import Backend, Node, NodeMembership, Pod, PoolPodUsage
from pools.services import inventory as inventory_service

pytestmark = pytest.mark.services


def make_pool(name="train", backend="gpu-cluster"):
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "h100": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}}
            },
            ConfigType.POOL: {name: {"backend": backend, "common_pod_template": ["h100"]}},
        },
        actor=services.SYSTEM,
    )


def a_cluster(kube):
    kube.add_node("h100-1")
    kube.add_node("h100-2")
    kube.add_node("l40s-1", product="NVIDIA-L40S", gpu=4)
    kube.add_pod("relabelled", node="h100-1", gpu=2, pool="train")
    kube.add_pod("deleted", node="h100-1", gpu=3, pool="train")
    kube.add_pod("kept", node="h100-2", gpu=1, pool="train", priority="LOW")
    kube.add_pod("queued", node=None, gpu=8, pool="train", phase="Pending")
    kube.add_pod("finished", node="h100-2", gpu=8, pool="train", phase="Succeeded")


def test_metadata_list_returns_partial_object_metadata_with_the_full_lists_versions(db, kube):
    a_cluster(kube)
    source = KubernetesSource(kubeconfig=kube.kubeconfig)

    listing = source.list_versions()
    inventory = source.list_inventory()

    assert listing.list_kinds == {"nodes": "PartialObjectMetadataList", "pods": "PartialObjectMetadataList"}
    assert listing.nodes == {name: version for name, (version, _) in inventory.keyed_nodes().items()}
    assert listing.pods == {key: version for key, (version, _) in inventory.keyed_pods().items()}
    assert set(listing.pods) == {("default", name) for name in ("relabelled", "deleted", "kept", "queued")}
    assert all(listing.resource_versions[kind].isdigit() for kind in ("nodes", "pods"))


def test_resync_takes_the_metadata_path_and_matches_a_full_sync_from_scratch(db, kube, kube_backend):
    a_cluster(kube)
    backend = kube_backend()
    make_pool()
    assert services.backend_sync(backend=backend)["listing"] == "full"  # nothing stored yet
    kube.api.patch_namespaced_pod("relabelled", "default", {"metadata": {"labels": {"osmo.priority": "LOW"}}})
    kube.delete_pod("deleted")
    kube.add_pod("created", node="h100-2", gpu=4, pool="train")
    kube.api.patch_node("h100-2", {"metadata": {"labels": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}})

    counts = services.backend_sync(backend=backend)

    assert counts["listing"] == "metadata"
    assert counts["nodes_changed"] == {"created": 0, "updated": 1, "deleted": 0}
    assert counts["pods_changed"] == {"created": 1, "updated": 1, "deleted": 1}
    assert (counts["nodes"], counts["pods"]) == (3, 4)
    assert set(counts["resource_versions"]) == {"nodes", "pods"}
    resynced = database_state(backend)
    assert Pod.objects.get(name="relabelled").preemptible is True
    assert not NodeMembership.objects.filter(node__name="h100-2").exists()  # it is an L40S now

    Node.objects.filter(backend=backend).delete()
    Pod.objects.filter(backend=backend).delete()
    PoolPodUsage.objects.filter(backend=backend).delete()
    assert services.backend_sync(backend=backend)["listing"] == "full"
    assert database_state(backend) == resynced


def test_a_pod_deleted_between_the_listing_and_its_read_counts_as_gone(db, kube, kube_backend):
    a_cluster(kube)
    backend = kube_backend()
    make_pool()
    services.backend_sync(backend=backend)
    kube.api.patch_namespaced_pod("kept", "default", {"metadata": {"labels": {"osmo.priority": "HIGH"}}})

    class DeletesBeforeReading(KubernetesSource):
        def _read(self, kind, what, *args):
            if what == "reading pod default/kept":
                kube.delete_pod("kept")
            return super()._read(kind, what, *args)

    counts = services.backend_sync(backend=backend, source=DeletesBeforeReading(kubeconfig=kube.kubeconfig))

    assert counts["listing"] == "metadata"
    assert counts["pods_changed"] == {"created": 0, "updated": 0, "deleted": 1}
    assert not Pod.objects.filter(name="kept").exists()
    assert Node.objects.get(name="h100-2").gpu_used == 0


def test_a_failed_read_changes_nothing_but_the_error(db, kube, kube_backend):
    a_cluster(kube)
    backend = kube_backend()
    make_pool()
    services.backend_sync(backend=backend)
    before = database_state(backend)
    kube.delete_pod("deleted")
    kube.add_pod("created", node="h100-2", gpu=4, pool="train")

    class FailsReading(KubernetesSource):
        def _read(self, kind, what, *args):
            if what.startswith("reading pod"):
                raise InventoryError(f"{what} failed: HTTP 500")
            return super()._read(kind, what, *args)

    with pytest.raises(InventoryError, match="reading pod default/created failed"):
        services.backend_sync(backend=backend, source=FailsReading(kubeconfig=kube.kubeconfig))

    assert database_state(backend) == before
    assert "HTTP 500" in Backend.objects.get(pk=backend.pk).last_sync_error


def test_many_changes_fall_back_to_the_full_list(db, kube, kube_backend, monkeypatch):
    a_cluster(kube)
    backend = kube_backend()
    make_pool()
    services.backend_sync(backend=backend)
    kube.delete_pod("deleted")
    kube.add_pod("created", node="h100-2", gpu=4, pool="train")
    kube.add_pod("another", node="h100-2", gpu=1, pool="train")
    monkeypatch.setattr(inventory_service, "MIN_OBJECT_READS", 1)  # 2 reads of 8 objects is then over 5 %

    counts = services.backend_sync(backend=backend)

    assert counts["listing"] == "full"
    assert counts["pods_changed"] == {"created": 2, "updated": 0, "deleted": 1}
