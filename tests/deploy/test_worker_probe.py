"""The Celery worker's liveness probe in deploy/kubernetes, run as the kubelet runs it: it passes while the worker
started with the Deployment's own command answers through the broker (Redis on 127.0.0.1), and fails once it is gone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from deploy_manifests import KUSTOMIZATION
from service_checks import service_unavailable

ROOT = Path(__file__).resolve().parents[2]
BROKER = "redis://127.0.0.1:6379/14"  # a database of its own: no other test's worker answers here


def worker_container() -> dict:
    deployment = next(yaml.safe_load_all((KUSTOMIZATION / "base" / "worker.yaml").read_text()))
    return deployment["spec"]["template"]["spec"]["containers"][0]


@pytest.fixture
def worker_env(tmp_path):
    """The worker's environment: the broker, a VAR_DIR, and HOSTNAME as Kubernetes sets it."""
    import redis

    try:
        redis.Redis.from_url(BROKER, socket_connect_timeout=2).ping()
    except redis.RedisError:
        service_unavailable("Redis is not running on 127.0.0.1:6379")
    env = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",  # `celery` of this virtualenv
        CELERY_BROKER_URL=BROKER,
        VAR_DIR=str(tmp_path),
        HOSTNAME=socket.gethostname(),  # in a pod, its name: what the worker's `%h` expands to
        GPUPOOL_WORKER_NICE="0",
    )
    return env


def probe(env: dict) -> subprocess.CompletedProcess:
    command = worker_container()["livenessProbe"]["exec"]["command"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.services
def test_the_liveness_probe_pings_the_worker_of_its_pod(worker_env):
    # One process is enough to answer; the Deployment's other options are as deployed.
    command = [word for word in worker_container()["command"] if not word.startswith("--concurrency=")]
    log = Path(worker_env["VAR_DIR"]) / "worker.log"
    with log.open("wb") as output:
        worker = subprocess.Popen(
            [*command, "--concurrency=1"], cwd=ROOT, env=worker_env, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 90
        while (answer := probe(worker_env)).returncode != 0:
            assert worker.poll() is None, log.read_text()
            assert time.monotonic() < deadline, answer.stdout + answer.stderr
        assert f"worker@{worker_env['HOSTNAME']}: OK" in answer.stdout
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert probe(worker_env).returncode != 0  # no worker of that pod answers: the kubelet would restart it
