"""A full listing is written as its pages come (on PostgreSQL, straight from the API server's pages into the
tables, in one transaction): it writes what listing everything first wrote, and a listing or a read that
breaks off part way leaves the database as it was, but for the error it records."""

from __future__ import annotations

import random

import pytest
from fake_apiserver import FakeApiServer
from kubernetes import client
from synced_state import database_state

from pools import services
from pools.choices import ConfigType
from pools.fleet.layouts import pool_cluster, pool_config
from pools.inventory.records import InventoryError
from pools.inventory.sources import KubernetesSource
from pools.models import Backend, Lease, Node, Pod, PoolPodUsage


@pytest.fixture
def backend(db):
    services.config_apply(changes={ConfigType.BACKEND: {"bench": {"kind": "kubernetes"}}}, actor=services.SYSTEM)
    services.config_import(data=pool_config(pools=4, platforms=2, backend="bench"), actor=services.SYSTEM)
    return Backend.objects.get(name="bench")


def paged(server) -> KubernetesSource:
    """The stand-in's source, listing 100 objects a page: the 30 nodes come in one page, the 600 pods in six
    (a metadata listing, in one page per kind)."""
    source = KubernetesSource(api_client=client.ApiClient(client.Configuration(host=server.url)))
    source.page_size = 100
    return source


class WholeListing:
    """The same cluster listed whole before anything is written, as file and simulated sources are read."""

    def __init__(self, source: KubernetesSource):
        self.source = source

    def list_inventory(self):
        return self.source.list_inventory()


def forget(backend) -> None:
    Node.objects.filter(backend=backend).delete()
    Pod.objects.filter(backend=backend).delete()
    PoolPodUsage.objects.filter(backend=backend).delete()


def counts(result: dict) -> dict:
    return {key: value for key, value in result.items() if key not in ("duration", "resource_versions")}


def test_a_streamed_listing_writes_what_a_whole_listing_writes(backend, server):
    whole = services.backend_sync(backend=backend, source=WholeListing(paged(server)))
    expected = database_state(backend)
    forget(backend)

    streamed = services.backend_sync(backend=backend, source=paged(server))

    assert streamed["listing"] == "full" and streamed["pods_changed"]["created"] == streamed["pods"] > 500
    assert counts(streamed) == counts(whole)
    assert database_state(backend) == expected

    # Over stored rows (most pods changed, so it lists in full): the changed rows are merged, the rest kept.
    server.modify_random_pods(0.5, random.Random(2))
    server.apply("Pod", "DELETED", server.objects("Pod")[0])
    relisted = services.backend_sync(backend=backend, source=paged(server))
    assert relisted["listing"] == "full" and relisted["pods_changed"]["updated"] > 100
    expected = database_state(backend)
    forget(backend)
    assert services.backend_sync(backend=backend, source=WholeListing(paged(server)))["listing"] == "full"
    assert database_state(backend) == expected


@pytest.mark.parametrize("stored", [False, True], ids=["first sync", "relist over stored rows"])
def test_a_listing_that_fails_on_its_third_page_changes_nothing_but_the_error(backend, server, stored):
    if stored:
        services.backend_sync(backend=backend, source=paged(server))
        server.modify_random_pods(0.5, random.Random(3))  # enough that the resync lists everything
    before, served = database_state(backend), server.served["list"]
    # A resync lists nodes' and pods' metadata first, then everything: the nodes' page, then the pods' pages.
    metadata_pages = 2 if stored else 0
    server.fail("list", after=metadata_pages + 2)

    with pytest.raises(InventoryError, match="HTTP 500"):
        services.backend_sync(backend=backend, source=paged(server))

    assert server.served["list"] - served == metadata_pages + 2  # the third page of the listing failed
    assert database_state(backend) == before
    assert "HTTP 500" in Backend.objects.get(pk=backend.pk).last_sync_error
    assert not Lease.objects.filter(name=f"sync:{backend.pk}").exists()
    server.heal()
    assert services.backend_sync(backend=backend, source=paged(server))["listing"] == "full"
    assert Backend.objects.get(pk=backend.pk).last_sync_error == ""


def test_a_read_that_fails_during_a_metadata_resync_changes_nothing_but_the_error(backend, server):
    services.backend_sync(backend=backend, source=paged(server))
    server.modify_random_pods(0.03, random.Random(4))
    before = database_state(backend)
    server.fail("get", after=3)

    with pytest.raises(InventoryError, match="HTTP 500"):
        services.backend_sync(backend=backend, source=paged(server))

    assert database_state(backend) == before
    assert "HTTP 500" in Backend.objects.get(pk=backend.pk).last_sync_error
    server.heal()
    assert services.backend_sync(backend=backend, source=paged(server))["listing"] == "metadata"


def test_a_resync_where_most_changed_reads_few_objects_in_vain_before_listing_in_full(backend, server):
    services.backend_sync(backend=backend, source=paged(server))
    server.modify_random_pods(0.5, random.Random(5))
    source = paged(server)
    source.metadata_page_size = 60  # reads start after the first page, then stop

    result = services.backend_sync(backend=backend, source=source)

    # Reads start with each metadata page, within 5 % (at least 50) of what was listed so far: the first
    # pages' half-changed pods overrun that at once, so few are read before the listing shows most changed.
    assert result["listing"] == "full"
    assert server.served["get"] <= services.inventory.MIN_OBJECT_READS


def test_a_first_sync_leaves_the_planner_statistics_of_what_it_loaded(backend):
    """After a sync that loaded many rows, PostgreSQL's statistics count them (``ANALYZE``): without, the next
    resync's reads by key hashed every pod of the backend, planned for a handful."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's (CI's PostgreSQL pass runs this)")
    nodes, pods = pool_cluster(nodes=40, pods=1500, pools=4, platforms=2, seed=6)
    with FakeApiServer(nodes, pods) as server:
        services.backend_sync(backend=backend, source=paged(server))

    def estimated(model) -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
            return cursor.fetchone()[0]

    assert estimated(Pod) == Pod.objects.count() > 1000
    assert estimated(Node) == Node.objects.count() == 40
