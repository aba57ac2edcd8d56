"""The Celery side of live backends: beat's ``watch_all_backends``, bounded ``watch_backend`` tasks, per-backend queues.

The tasks run eagerly here (no broker); tests/integration/test_celery_worker.py runs them on a real worker.
"""

import time
from unittest import mock

import pytest

from pools import services, tasks
from pools.choices import ConfigType
from pools.models import Backend, Node


def simulated_backend(actor, name):
    services.config_apply(
        changes={ConfigType.BACKEND: {name: {"kind": "simulated", "seed": 3, "size": 30}}}, actor=actor
    )
    return Backend.objects.get(name=name)


@pytest.fixture
def backend_queues(settings):
    settings.GPUPOOL = {**settings.GPUPOOL, "BACKEND_QUEUES": True}


def queued(send) -> list[tuple[int, dict]]:
    """(backend id, options) of each ``apply_async`` call, options without the beat round's ``expires``."""
    return [(call.args[0][0], {k: v for k, v in call.kwargs.items() if k != "expires"}) for call in send.call_args_list]


def test_a_watch_is_queued_for_each_live_backend_nobody_watches(actor, cluster):
    cluster([])  # a file backend: nothing to watch
    a, b, c = (simulated_backend(actor, name) for name in ("sim-a", "sim-b", "sim-c"))
    assert services.lease_acquire(name=f"watch:{b.pk}", owner="another-worker", seconds=60)
    assert services.lease_acquire(name=f"watch:{c.pk}", owner="a-dead-worker", seconds=-1)  # expired: free again

    with mock.patch.object(tasks.watch_backend, "apply_async") as send:
        assert tasks.watch_all_backends() == 2

    assert queued(send) == [(a.pk, {}), (c.pk, {})]
    assert all(call.kwargs["expires"] == 30 for call in send.call_args_list)  # not run after the next round


def test_with_backend_queues_each_backends_sync_and_watch_go_to_its_own_queue(actor, cluster, backend_queues):
    files = cluster([])
    sim = simulated_backend(actor, "sim-a")

    with (
        mock.patch.object(tasks.watch_backend, "apply_async") as watch,
        mock.patch.object(tasks.sync_backend, "apply_async") as sync,
    ):
        tasks.watch_all_backends()
        tasks.sync_all_backends()

    assert queued(watch) == [(sim.pk, {"queue": "backend-sim-a"})]
    assert sorted(queued(sync)) == sorted(
        [(files.pk, {"queue": "backend-test-cluster"}), (sim.pk, {"queue": "backend-sim-a"})]
    )


def test_without_backend_queues_syncs_go_to_the_default_queue(actor, cluster):
    files = cluster([])
    with mock.patch.object(tasks.sync_backend, "apply_async") as sync:
        assert tasks.sync_all_backends() == 1
    assert queued(sync) == [(files.pk, {})]


def test_a_watch_task_returns_at_once_while_another_owner_holds_the_lease(db, actor):
    backend = simulated_backend(actor, "sim")
    assert services.lease_acquire(name=f"watch:{backend.pk}", owner="another-worker", seconds=60)

    started = time.monotonic()
    result = tasks.watch_backend.delay(backend.pk).get()

    assert result == {"skipped": "backend 'sim' is already being watched; this watch did not start"}
    assert time.monotonic() - started < 2
    assert not Node.objects.exists()
    assert not services.lease_acquire(name=f"watch:{backend.pk}", owner="third", seconds=60)  # still theirs


def test_a_watch_task_watches_for_its_time_then_returns_and_frees_the_lease(transactional_db, actor, settings):
    """Committed rows: the watch judges its verdicts on a thread of its own, with a connection of its own (a test's
    open transaction would hold SQLite's write lock from it until the lock's timeout)."""
    settings.GPUPOOL = {**settings.GPUPOOL, "WATCH_TASK_SECONDS": 2}
    backend = simulated_backend(actor, "sim")

    started = time.monotonic()
    result = tasks.watch_backend.delay(backend.pk).get()
    elapsed = time.monotonic() - started

    assert 2 <= elapsed < 10, elapsed
    assert result["backend"] == "sim" and result["watched"] >= 2 and result["last_sync_error"] == ""
    assert result["last_sync_at"] is not None
    assert Node.objects.filter(backend=backend).count() == 30
    assert services.lease_acquire(name=f"watch:{backend.pk}", owner="next", seconds=60)


def test_a_watch_task_of_a_deleted_backend_is_skipped(db):
    assert tasks.watch_backend.delay(987654).get() == {"skipped": "backend no longer exists"}
