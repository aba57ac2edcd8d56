"""Metadata-only resync through the benchmarks' stand-in API server (scripts/bench/fake_apiserver.py): it answers
PartialObjectMetadataList like kube-apiserver does, so the resync path runs in seconds without one."""

from __future__ import annotations

import random

from kubernetes import client
from synced_state import database_state

from pools import services
from pools.choices import ConfigType
from pools.fleet.layouts import pool_config
from pools.inventory.sources import KubernetesSource
from pools.models import Backend, Node, Pod, PoolPodUsage


def source_for(server) -> KubernetesSource:
    return KubernetesSource(api_client=client.ApiClient(client.Configuration(host=server.url)))


def test_the_stand_in_answers_metadata_lists_and_single_reads(server):
    source = source_for(server)
    source.metadata_page_size = 100  # several pages

    listing = source.list_versions()
    inventory = source.list_inventory()

    assert listing.list_kinds == {"nodes": "PartialObjectMetadataList", "pods": "PartialObjectMetadataList"}
    assert listing.pods == {key: version for key, (version, _) in inventory.keyed_pods().items()}
    assert listing.nodes == {name: version for name, (version, _) in inventory.keyed_nodes().items()}
    namespace, name = next(iter(listing.pods))
    node = next(iter(listing.nodes))
    read = source.read_objects([node, "no-such-node"], [(namespace, name), (namespace, "no-such-pod")])
    assert [n["metadata"]["name"] for n in read.nodes] == [node]
    assert [p["metadata"]["name"] for p in read.pods] == [name]


def test_a_resync_after_churn_reads_only_the_changes_and_matches_a_full_sync(db, server):
    services.config_apply(changes={ConfigType.BACKEND: {"bench": {"kind": "kubernetes"}}}, actor=services.SYSTEM)
    services.config_import(data=pool_config(pools=4, platforms=2, backend="bench"), actor=services.SYSTEM)
    backend = Backend.objects.get(name="bench")
    assert services.backend_sync(backend=backend, source=source_for(server))["listing"] == "full"
    changed = server.modify_random_pods(0.03, random.Random(2))
    server.apply("Pod", "DELETED", server.objects("Pod")[0])
    requests = server.requests

    counts = services.backend_sync(backend=backend, source=source_for(server))

    assert counts["listing"] == "metadata"
    reads = counts["pods_changed"]["updated"] + counts["pods_changed"]["created"]
    assert 0 < reads <= len(changed) and counts["pods_changed"]["deleted"] >= 1
    assert server.requests - requests == 2 + reads  # one metadata page per kind, then one GET per changed pod
    resynced = database_state(backend)
    Node.objects.filter(backend=backend).delete()
    Pod.objects.filter(backend=backend).delete()
    PoolPodUsage.objects.filter(backend=backend).delete()
    assert services.backend_sync(backend=backend, source=source_for(server))["listing"] == "full"
    assert database_state(backend) == resynced
