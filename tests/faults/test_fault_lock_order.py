"""One lock order for everything that writes a backend (its row, then its inventory lock): a sync (which wrote
its nodes under the inventory lock, then its row) beside config changes of the same backend (which wrote its
row, then recomputed memberships under the inventory lock) deadlocked on PostgreSQL. Real parallel clients."""

from __future__ import annotations

import pytest
from django.db import connection
from parallel_clients import at_once

from pools import services
from pools.choices import ConfigType
from pools.models import Backend

ROUNDS = 12


def backend_change(description: str) -> None:
    services.config_apply(
        changes={
            ConfigType.BACKEND: {"sim-locks": {"kind": "simulated", "seed": 7, "size": 40, "description": description}}
        },
        actor=services.Actor.system("tester"),
    )


def test_syncs_and_config_changes_of_one_backend_never_deadlock(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite runs one write transaction at a time: nothing to deadlock")
    backend_change("first")
    backend = Backend.objects.get(name="sim-locks")
    services.backend_sync(backend=backend)

    def syncs():
        for _ in range(ROUNDS):
            services.backend_sync(backend=backend)

    def changes():
        for round_ in range(ROUNDS):
            backend_change(f"round {round_}")

    errors = at_once(syncs, changes, changes)

    assert errors == []
    assert Backend.objects.get(pk=backend.pk).last_sync_error == ""
