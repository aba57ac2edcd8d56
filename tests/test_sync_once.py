"""One sync of a backend at a time, whichever door starts it (SEMANTICS.md §7.1): task, poolctl, worker,
page, API, a watch listing again. The lease lives in ``services.backend_sync`` itself."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from kube_objects import node
from people import person
from rest_framework.test import APIClient

from pools import services, tasks
from pools.inventory.sources import FileSource
from pools.models import Lease

pytestmark = pytest.mark.django_db(transaction=True)


class HeldSource(FileSource):
    """A file source whose listing waits until the test lets it go, so a sync is held running."""

    def __init__(self, path: str):
        super().__init__(path)
        self.listing, self.release = threading.Event(), threading.Event()

    def list_inventory(self):
        self.listing.set()
        assert self.release.wait(30)
        return super().list_inventory()


def test_while_one_sync_runs_every_other_door_is_told_and_nothing_runs_twice(cluster, actor, poolctl):
    backend = cluster([node("n1")])
    held = HeldSource(backend.source)
    outcome = {}

    def sync_in_a_thread():
        try:
            outcome.update(services.backend_sync(backend=backend, source=held))
        finally:
            connection.close()  # the thread's own connection, which would keep the test database open

    running = threading.Thread(target=sync_in_a_thread)
    running.start()
    try:
        assert held.listing.wait(30)
        with pytest.raises(services.SyncBusy, match="already being synced"):
            services.backend_sync(backend=backend)
        assert "already being synced" in tasks.sync_backend(backend.pk)["skipped"]
        result = poolctl("backend", "sync", backend.name)
        assert result.code == 1 and "already being synced" in result.err
        client = APIClient()
        client.force_authenticate(person("root", is_superuser=True))
        answer = client.post(f"/api/backends/{backend.name}/sync/")
        assert answer.status_code == 202
        if answer.json()["result"] is not None:  # run here (no broker): the job says it did not start
            assert "already being synced" in answer.json()["result"]["skipped"]
    finally:
        held.release.set()
        running.join(30)
    assert outcome["nodes"] == 1
    assert not Lease.objects.filter(name=f"sync:{backend.pk}").exists()
    assert services.backend_sync(backend=backend)["nodes"] == 1
