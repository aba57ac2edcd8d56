"""A Prometheus that does not answer (hung: it accepts the connection, then says nothing) holds a page's web
thread for its short bound only, not the client's 10 s; the node's GPUs then show their last reading and its age."""

from __future__ import annotations

import socket
import time

import pytest
from django.core.cache import cache
from kube_objects import node

from pools import selectors, services
from pools.choices import ConfigType
from pools.selectors.utilization import PAGE_PROMETHEUS_TIMEOUTS, Device
from pools.telemetry.prometheus import DEFAULT_READ_TIMEOUT


@pytest.fixture
def hung_prometheus():
    """A listening socket nobody reads: the kernel completes the connection, no answer ever comes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.fixture
def node_with_prometheus(cluster, actor, hung_prometheus):
    backend = cluster([node("gpu-1", gpu=8)], name="slow-prom")
    body = {"kind": "file", "source": backend.source, "prometheus_url": hung_prometheus}
    services.config_apply(changes={ConfigType.BACKEND: {"slow-prom": body}}, actor=actor)
    backend.refresh_from_db()
    return backend


def test_a_hung_prometheus_holds_the_node_gpu_page_for_its_short_bound_only(node_with_prometheus):
    started = time.monotonic()
    gpus = selectors.node_gpus("gpu-1", user=services.SYSTEM.principal)
    took = time.monotonic() - started

    print(f"a hung Prometheus held the node's GPU read {took:.2f} s")
    assert gpus["error"] and gpus["gpus"] == []
    assert took < sum(PAGE_PROMETHEUS_TIMEOUTS) + 1 < DEFAULT_READ_TIMEOUT, f"the page waited {took:.1f} s"


def test_while_prometheus_is_hung_the_node_shows_its_last_reading_and_its_age(node_with_prometheus):
    device = Device(
        node="gpu-1", device="0", model="NVIDIA-H100-80GB-HBM3", namespace="team-a", pod="train-1", util=37.0,
        memory_used=1024, memory_total=81920, gpus=1,
    )  # fmt: skip
    read_at = time.time() - 42
    last_reading = f"gpupool:node-gpus:{node_with_prometheus.pk}:gpu-1"
    cache.set(last_reading, (read_at, [device]), 60)  # what the last answered read left
    try:
        gpus = selectors.node_gpus("gpu-1", user=services.SYSTEM.principal)
    finally:
        cache.delete(last_reading)

    assert [gpu["utilization"] for gpu in gpus["gpus"]] == [37.0]
    assert 42 <= gpus["age_seconds"] < 60
    assert "last reading, 4" in gpus["error"]
