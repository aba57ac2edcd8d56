"""A running watch follows its backend's configuration: given a new seed (a new cluster), it drops the old
cluster's stream within seconds and lists and watches the new one, instead of applying the old one's events."""

from __future__ import annotations

import threading
import time

from django.db import connection

from pools import services
from pools.choices import ConfigType
from pools.models import Backend, Node


def simulated(name: str, **fields) -> None:
    services.config_apply(
        changes={ConfigType.BACKEND: {name: {"kind": "simulated", **fields}}}, actor=services.Actor.system("tester")
    )


def wait_for(condition, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, what
        time.sleep(0.1)
    return time.monotonic() - started


def test_a_watch_restarts_on_its_backends_new_configuration(transactional_db):
    simulated("sim-moving", seed=3, size=6)
    backend = Backend.objects.get(name="sim-moving")
    stop = threading.Event()

    def watch():
        try:
            services.backend_watch(backend=backend, stop=stop, owner="test-watch", lease_seconds=30)
        finally:
            connection.close()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        wait_for(lambda: Node.objects.filter(backend=backend).count() == 6, 30, "the watch did not list the fleet")
        simulated("sim-moving", seed=11, size=9)  # another cluster altogether
        followed_in = wait_for(
            lambda: Node.objects.filter(backend=backend).count() == 9,
            15,
            "the watch kept the old cluster after its backend's configuration changed",
        )
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    print(f"the watch listed the backend's new cluster {followed_in:.1f} s after the change")
    assert followed_in < services.inventory.WATCH_CONFIG_SECONDS + 8
