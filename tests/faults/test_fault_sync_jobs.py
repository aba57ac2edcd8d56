""" "Sync now" with a broker: the job is a row any web process reads, asking again while it is queued or running
answers the same job, a broker out of reach fails it at once and says so, a real worker runs it, and a worker
killed mid-sync (SIGKILL) frees its backend within its lease and its job is given up, not left running.

The real parts: a Redis of the test's own and workers started as in production (``celery -A config worker``)
on the test's database (committed rows: ``transactional_db``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery_parts import forget_broker_connections
from django.conf import settings
from people import person, signed_in

from config.celery import app
from pools import jobs, selectors, services
from pools.choices import ConfigType
from pools.models import Backend, JobRecord, Lease
from pools.services import jobs as job_rows

ROOT = Path(__file__).resolve().parents[2]
LEASE_SECONDS = 4  # the workers' sync lease here (GPUPOOL_SYNC_LEASE_SECONDS); 30 s by default


@pytest.fixture
def broker(own_redis):
    """This process sends tasks to the test's Redis, as a web process with a broker does."""
    before = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=own_redis.url, task_always_eager=False)
    forget_broker_connections(app)
    yield own_redis
    app.conf.update(before)
    forget_broker_connections(app)


@pytest.fixture
def worker(broker, transactional_db, tmp_path):
    """Start a worker on the test's Redis and database; yields a function that starts it."""
    started = []

    def start() -> subprocess.Popen:
        database = settings.DATABASES["default"]
        if database["ENGINE"].endswith("sqlite3"):
            url = f"sqlite:///{database['NAME']}"
        else:
            url = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "CELERY_BROKER_URL": broker.url,
            "GPUPOOL_SYNC_LEASE_SECONDS": str(LEASE_SECONDS),
            "GPUPOOL_WORKER_NICE": "0",
        }
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("celery")), "-A", "config", "worker", "-c", "1", "-l", "warning"]
            + ["--without-gossip", "--without-mingle"],
            cwd=ROOT,
            env=env,
            stdout=(tmp_path / "worker.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def simulated(name: str, size: int):
    services.config_apply(
        changes={ConfigType.BACKEND: {name: {"kind": "simulated", "seed": 5, "size": size}}},
        actor=services.Actor.system("tester"),
    )


def wait_for(condition, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, what
        time.sleep(0.1)
    return time.monotonic() - started


def test_sync_now_is_one_job_any_process_reads_and_a_worker_runs(broker, worker, client_for):
    simulated("sim-jobs", size=4)
    admin = client_for(person("admin", password=None, is_superuser=True))

    first = admin.post("/api/backends/sim-jobs/sync/")
    again = admin.post("/api/backends/sim-jobs/sync/")

    assert first.status_code == again.status_code == 202
    job = first.json()
    assert job["state"] == "PENDING" and not job["done"]
    assert again.json()["id"] == job["id"], "a second request while one is queued queued another"
    assert JobRecord.objects.count() == 1
    assert admin.get(first["Location"]).json()["state"] == "PENDING"  # read from the database, not a process

    worker()
    wait_for(lambda: JobRecord.objects.get(pk=job["id"]).state == "SUCCESS", 60, "no worker ran the job")
    done = admin.get(first["Location"]).json()
    assert done["done"] and done["result"]["nodes"] == 4 and done["error"] == ""


def test_sync_now_with_the_broker_down_fails_at_once_and_says_so(broker, transactional_db, client_for):
    simulated("sim-down", size=4)
    user = person("admin", password=None, is_superuser=True)
    admin, browser = client_for(user), signed_in(user)
    broker.stop()

    started = time.monotonic()
    response = admin.post("/api/backends/sim-down/sync/")
    took = time.monotonic() - started
    page = browser.post("/backends/sim-down/sync/", headers={"HX-Request": "true"})

    assert response.status_code == 202
    job = response.json()
    assert job["state"] == "FAILURE" and job["done"] and job["error"].startswith(jobs.BROKER_DOWN)
    assert took < jobs.BROKER_CONNECT_SECONDS + 1, f"'Sync now' took {took:.1f} s with the broker down"
    assert page.status_code == 200
    assert b'data-sync-state="failed"' in page.content and b"broker" in page.content
    assert b"badge queued" not in page.content

    print(f"'Sync now' with the broker down answered FAILURE in {took:.2f} s")
    broker.start()  # a failed job does not block the next request
    assert admin.post("/api/backends/sim-down/sync/").json()["state"] == "PENDING"


def test_sync_now_with_the_broker_paused_fails_within_its_bound(broker, transactional_db, client_for):
    simulated("sim-paused", size=4)
    admin = client_for(person("admin", password=None, is_superuser=True))
    broker.pause()
    try:
        started = time.monotonic()
        job = admin.post("/api/backends/sim-paused/sync/").json()
        took = time.monotonic() - started
    finally:
        broker.resume()

    assert job["state"] == "FAILURE" and job["error"].startswith(jobs.BROKER_DOWN)
    assert took < jobs.BROKER_CONNECT_SECONDS + 2, f"'Sync now' took {took:.1f} s with the broker paused"
    print(f"'Sync now' with the broker paused answered FAILURE in {took:.2f} s")


def test_a_worker_killed_mid_sync_frees_its_backend_within_its_lease(broker, worker, client_for):
    simulated("sim-killed", size=3000)  # a sync of several seconds
    backend = Backend.objects.get(name="sim-killed")
    admin = client_for(person("admin", password=None, is_superuser=True))
    process = worker()
    job = admin.post("/api/backends/sim-killed/sync/").json()
    lease = f"sync:{backend.pk}"
    wait_for(lambda: Lease.objects.filter(name=lease).exists(), 60, "the worker did not start the sync")

    shown = admin.get("/api/backends/sim-killed/").json()["status"]
    row = next(row for row in selectors.backend_health(user=services.SYSTEM.principal) if row["name"] == "sim-killed")
    os.killpg(process.pid, signal.SIGKILL)  # the worker and its pool process, mid-sync
    killed = time.monotonic()
    process.wait(10)

    assert shown["sync_holder"] and shown["sync_holder"].split(":")[1] != str(os.getpid())
    assert shown["sync_since"] and shown["sync_expires"]
    assert row["sync_holder"] == shown["sync_holder"]
    assert JobRecord.objects.get(pk=job["id"]).state == "STARTED"
    assert Lease.objects.get(name=lease).owner == shown["sync_holder"], "the sync ended before the kill"

    wait_for(
        lambda: services.lease_acquire(name=lease, owner="another-worker", seconds=60),
        LEASE_SECONDS + 5,
        "the killed worker's lease still holds the backend",
    )
    freed_in = time.monotonic() - killed
    services.lease_release(name=lease, owner="another-worker")
    wait_for(
        lambda: admin.get(f"/api/jobs/{job['id']}/").json()["state"] == "FAILURE",
        job_rows.JOB_STARTED_GRACE_SECONDS + 5,
        "the dead worker's job still reads as running",
    )
    assert admin.get(f"/api/jobs/{job['id']}/").json()["error"] == job_rows.WORKER_LOST
    assert admin.post("/api/backends/sim-killed/sync/").json()["id"] != job["id"]  # a new sync may start
    print(f"the killed sync's backend was free {freed_in:.1f} s after the kill (lease {LEASE_SECONDS} s)")
