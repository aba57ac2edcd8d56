"""A watch task keeps its lease ``watch:<id>`` for as long as it runs, and stops once another holder has it.

The watch runs on a thread of the test, as a worker runs it; the test's own connection plays the other worker.
Committed rows (``transactional_db``): the watch's threads have connections of their own.
"""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from pools import services
from pools.choices import ConfigType
from pools.models import Backend, Lease


def simulated_backend(name: str, size: int) -> Backend:
    services.config_apply(
        changes={ConfigType.BACKEND: {name: {"kind": "simulated", "seed": 3, "size": size}}},
        actor=services.Actor.system("tester"),
    )
    return Backend.objects.get(name=name)


def watch_in_thread(backend: Backend, *, seconds: float, lease_seconds: float) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = services.backend_watch_for(
                backend=backend, seconds=seconds, lease_seconds=lease_seconds
            )
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def take_over(lease: str) -> None:
    """What another worker does once the lease has expired: it holds it now, for a minute."""
    Lease.objects.filter(name=lease).update(owner="another-worker", expires_at=timezone.now() + timedelta(seconds=60))


def test_the_lease_outlasts_a_first_list_longer_than_itself(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("on SQLite the list's transaction holds the one write lock: no other worker could take the lease")
    backend = simulated_backend("sim-big", size=900)  # its first list takes seconds: several leases' worth
    lease, lease_seconds = f"watch:{backend.pk}", 1.5

    thread, outcome = watch_in_thread(backend, seconds=60, lease_seconds=lease_seconds)
    wait_for(lambda: Lease.objects.filter(name=lease).exists(), 10, "the watch did not take its lease")
    listing_started = time.monotonic()
    while not Backend.objects.filter(pk=backend.pk, last_sync_at__isnull=False).exists():
        assert not services.lease_acquire(name=lease, owner="another-worker", seconds=60), (
            f"the lease expired {time.monotonic() - listing_started:.1f} s into the watch's first list"
        )
        assert time.monotonic() - listing_started < 120, "the first list did not end"
        time.sleep(0.1)
    listed_in = time.monotonic() - listing_started

    take_over(lease)  # the watch ends (next test) rather than after its 60 s
    thread.join(timeout=30)

    assert listed_in > lease_seconds, f"the first list took {listed_in:.1f} s: too short to test anything"
    assert not thread.is_alive()


def test_a_watch_that_lost_its_lease_to_another_holder_stops_at_once(transactional_db):
    backend = simulated_backend("sim", size=30)
    lease, lease_seconds = f"watch:{backend.pk}", 1.5

    started = time.monotonic()
    thread, outcome = watch_in_thread(backend, seconds=60, lease_seconds=lease_seconds)
    wait_for(lambda: Backend.objects.filter(pk=backend.pk, last_sync_at__isnull=False).exists(), 30, "no first list")
    take_over(lease)
    thread.join(timeout=20)

    assert not thread.is_alive(), "the watch kept its worker slot after losing its lease"
    assert time.monotonic() - started < 30
    assert outcome["result"]["lease_lost"] is True
    assert Lease.objects.get(name=lease).owner == "another-worker"  # the other holder's lease is left alone
