"""A real Celery worker with Redis runs the sync and watch tasks against the test's PostgreSQL database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection
from kube_objects import node, pod
from service_checks import service_unavailable

from pools.choices import ConfigType
from pools.models import Backend, Node, Pod

pytestmark = pytest.mark.services
ROOT = Path(__file__).resolve().parents[2]
# A Redis database of its own per parallel test process (pytest-xdist's gw0, gw1, ...): each flushes its own.
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
BROKER = os.environ.get("TEST_REDIS_URL", f"redis://127.0.0.1:6379/{15 - WORKER}")
WATCH_SECONDS = 3


def redis_available() -> bool:
    import redis

    try:
        return redis.Redis.from_url(BROKER, socket_connect_timeout=2).ping()
    except redis.RedisError:
        return False


@pytest.fixture
def start_worker(transactional_db, inventory_dir):
    """Start a Celery worker process on the test's database and a flushed Redis database: ``start_worker(*options,
    watch_seconds=...)`` returns a client app (``worker_pid`` is the worker's); stopped after the test."""
    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the test database, which needs PostgreSQL (CI runs this on it)")
    if not redis_available():
        service_unavailable(f"Redis is not reachable at {BROKER}")
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    settings = connection.settings_dict
    database_url = (
        f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"
    )
    processes = []

    def start(*options: str, watch_seconds: float = WATCH_SECONDS) -> Celery:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": BROKER,
            "CELERY_RESULT_BACKEND": BROKER,
            "GPUPOOL_INVENTORY_DIR": str(inventory_dir),  # where the test's backends' files are
            "GPUPOOL_WATCH_TASK_SECONDS": str(watch_seconds),  # a watch task returns after this long
        }
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel=WARNING"]
        command += options or ("--pool=solo", "--concurrency=1")
        command += ("--without-gossip", "--without-mingle", "--without-heartbeat")
        processes.append(
            subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
        client = Celery(broker=BROKER, backend=BROKER, set_as_current=False)  # the tests after keep the eager app
        client.worker_pid = processes[-1].pid  # for the test of its priority
        return client

    try:
        yield start
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def worker(start_worker):
    return start_worker()


def test_worker_syncs_a_backend_through_redis(worker, cluster):
    backend = cluster([node("n1", gpu=8), node("n2", gpu=8), pod("job", node="n1", gpu=3, pool="p")])
    Pod.objects.all().delete()
    Node.objects.all().delete()
    Backend.objects.filter(pk=backend.pk).update(last_sync_at=None)

    started = time.monotonic()
    result = worker.send_task("pools.tasks.sync_backend", args=[backend.pk]).get(timeout=60)

    assert result["nodes"] == 2 and result["pods"] == 1, result
    assert set(Node.objects.values_list("name", flat=True)) == {"n1", "n2"}
    assert Backend.objects.get(pk=backend.pk).last_sync_at is not None
    assert time.monotonic() - started < 60


def test_the_worker_runs_at_a_lower_cpu_priority_than_what_started_it(worker, cluster):
    backend = cluster([node("n1", gpu=8)])
    worker.send_task("pools.tasks.sync_backend", args=[backend.pk]).get(timeout=60)  # it is up and working
    assert os.getpriority(os.PRIO_PROCESS, worker.worker_pid) == os.getpriority(os.PRIO_PROCESS, 0) + 10


def test_a_second_sync_of_the_same_backend_is_skipped_while_one_holds_the_lease(worker, cluster):
    from pools import services

    backend = cluster([node("n1")])
    assert services.lease_acquire(name=f"sync:{backend.pk}", owner="someone-else", seconds=60)
    result = worker.send_task("pools.tasks.sync_backend", args=[backend.pk]).get(timeout=60)
    assert result == {"skipped": f"backend '{backend.name}' is already being synced; this sync did not start"}


def test_the_worker_watches_a_live_backend_for_a_bounded_time(worker, actor):
    from pools import services

    services.config_apply(
        changes={ConfigType.BACKEND: {"sim": {"kind": "simulated", "seed": 3, "size": 30}}}, actor=actor
    )
    backend = Backend.objects.get(name="sim")

    started = time.monotonic()
    result = worker.send_task("pools.tasks.watch_backend", args=[backend.pk]).get(timeout=60)

    assert result["backend"] == "sim" and result["watched"] >= WATCH_SECONDS, result
    assert result["last_sync_at"] and result["last_sync_error"] == "", result
    assert Node.objects.filter(backend=backend).count() == 30
    assert Backend.objects.get(pk=backend.pk).last_sync_at is not None
    assert time.monotonic() - started < 60
    # The watch let go of its lease when it returned: the next one (beat's next round) can start at once.
    assert services.lease_acquire(name=f"watch:{backend.pk}", owner="next", seconds=60)


def test_a_watch_task_is_skipped_at_once_while_another_worker_watches_the_backend(worker, actor):
    from pools import services

    services.config_apply(
        changes={ConfigType.BACKEND: {"sim": {"kind": "simulated", "seed": 3, "size": 30}}}, actor=actor
    )
    backend = Backend.objects.get(name="sim")
    assert services.lease_acquire(name=f"watch:{backend.pk}", owner="someone-else", seconds=60)

    result = worker.send_task("pools.tasks.watch_backend", args=[backend.pk]).get(timeout=60)

    assert result == {"skipped": "backend 'sim' is already being watched; this watch did not start"}
    assert not Node.objects.filter(backend=backend).exists()


def test_beats_round_queues_a_watch_that_the_worker_then_runs(worker, actor, cluster):
    from pools import services

    cluster([node("n1")])  # a file backend: synced, never watched
    services.config_apply(
        changes={ConfigType.BACKEND: {"sim": {"kind": "simulated", "seed": 3, "size": 30}}}, actor=actor
    )
    backend = Backend.objects.get(name="sim")

    assert worker.send_task("pools.tasks.watch_all_backends").get(timeout=60) == 1

    deadline = time.monotonic() + 60
    while Node.objects.filter(backend=backend).count() < 30 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Node.objects.filter(backend=backend).count() == 30
    # The watch task returns after WATCH_SECONDS and lets go of its lease.
    while not services.lease_acquire(name=f"watch:{backend.pk}", owner="next", seconds=60):
        assert time.monotonic() < deadline, "the watch did not end"
        time.sleep(0.2)


def test_a_worker_whose_processes_all_watch_leaves_the_next_watch_in_the_queue(start_worker, actor):
    """A watch occupies its worker process for its whole task; a worker must not take (reserve) another task
    while all its processes are busy, or that task waits there although another worker is free. Watches and
    syncs are acknowledged when they end (``acks_late``), so with one process and a prefetch of one the worker
    takes nothing more until the watch returns: the second watch stays in Redis for any worker."""
    import redis

    from pools import services

    services.config_apply(
        changes={
            ConfigType.BACKEND: {
                "sim-a": {"kind": "simulated", "seed": 3, "size": 10},
                "sim-b": {"kind": "simulated", "seed": 4, "size": 10},
            }
        },
        actor=actor,
    )
    first, second = Backend.objects.get(name="sim-a"), Backend.objects.get(name="sim-b")
    client = start_worker("--pool=prefork", "--concurrency=1", "--prefetch-multiplier=1", watch_seconds=10)
    queue = redis.Redis.from_url(BROKER)

    watching = client.send_task("pools.tasks.watch_backend", args=[first.pk])
    deadline = time.monotonic() + 60
    while not Node.objects.filter(backend=first).exists():  # the watch has listed: it runs
        assert time.monotonic() < deadline, "the first watch did not start"
        time.sleep(0.1)
    waiting = client.send_task("pools.tasks.watch_backend", args=[second.pk])
    time.sleep(2)

    assert not watching.ready()
    assert queue.llen("celery") == 1, "the busy worker took the second watch off the queue"
    assert watching.get(timeout=60)["backend"] == "sim-a"
    assert waiting.get(timeout=60)["backend"] == "sim-b"  # and runs it once the first returns
