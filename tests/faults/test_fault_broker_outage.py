"""A Redis outage of ten seconds does not kill the Celery worker: it reconnects once Redis is back and runs the
next task. The real parts: a Redis of the test's own, stopped and started again on its port, and a worker
started as in production (``celery -A config worker``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from celery import Celery

ROOT = Path(__file__).resolve().parents[2]
OUTAGE_SECONDS = 10


def ping(url: str, timeout: float) -> tuple[object, float]:
    """Send Celery's built-in ``celery.accumulate`` and wait for its result: what a worker that runs tasks
    answers. Returns it and the seconds it took."""
    client = Celery("fault-test", broker=url, backend=url)
    client.conf.broker_connection_retry_on_startup = True
    started = time.monotonic()
    try:
        result = client.send_task("celery.accumulate", args=(42,))
        return result.get(timeout=timeout), time.monotonic() - started
    finally:
        client.close()


def tail(log: Path) -> str:
    return log.read_text()[-3000:]


def test_the_worker_survives_a_redis_outage_and_runs_the_next_task(own_redis, tmp_path):
    env = {**os.environ, "CELERY_BROKER_URL": own_redis.url, "CELERY_RESULT_BACKEND": own_redis.url}
    log = (tmp_path / "worker.log").open("w")
    celery = Path(sys.executable).with_name("celery")
    worker = subprocess.Popen(
        [str(celery), "-A", "config", "worker", "-c", "1", "--without-gossip", "--without-mingle", "-l", "info"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        assert ping(own_redis.url, timeout=60)[0] == [42], "the worker did not run a task before the outage"
        own_redis.stop()
        time.sleep(OUTAGE_SECONDS)
        assert worker.poll() is None, "the worker exited while Redis was away:\n" + tail(tmp_path / "worker.log")
        own_redis.start()
        answer, seconds = ping(own_redis.url, timeout=40)
        assert answer == [42]
        assert worker.poll() is None, tail(tmp_path / "worker.log")
        print(f"after a {OUTAGE_SECONDS} s outage the worker ran a task {seconds:.1f} s after Redis came back")
    finally:
        worker.terminate()
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(5)
        log.close()
