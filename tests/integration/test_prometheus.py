"""GPU utilization read from a real Prometheus (Debian's) scraping the simulated DCGM exporter every second.

The exporter's values depend only on the pods and the moment it served them, and it remembers those moments: a
test finds the scrape Prometheus answered from (``timestamp()``), recomputes that scrape with ``gpu_samples`` and
expects exactly those values.
"""

from __future__ import annotations

import time

import pytest
from kube_objects import node, pod
from prometheus_server import PrometheusServer, PrometheusUnavailable, SimulatedExporter, wait_until
from service_checks import service_unavailable

from pools.fleet.dcgm import Behaviour, gpu_samples, pod_activity, pod_behaviour
from pools.telemetry.prometheus import (
    FB_USED,
    PrometheusClient,
    PrometheusError,
    gpu_utilization,
    idle_since,
)

pytestmark = pytest.mark.services

SCRAPE_SECONDS = 1
IDLE_WINDOW = 5  # seconds: the tests' stand-in for Run:ai's 5 minutes


def pod_that_is(behaviour: Behaviour, prefix: str, **options) -> dict:
    """The first pod named ``<prefix>-<n>`` that the exporter makes behave as asked (a hash of its identity)."""
    for number in range(1000):
        candidate = pod(f"{prefix}-{number}", **options)
        if pod_behaviour(candidate) == behaviour:
            return candidate
    raise AssertionError(f"no {behaviour} pod among 1000 names")


def mig_pod(name: str, node_name: str) -> dict:
    found = pod(name, node=node_name, namespace="vision")
    found["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/mig-1g.10gb": "1"}}
    return found


NODES = [  # by name: the order the readings come in
    node("a100-mig-001", gpu=None, product="NVIDIA-A100-SXM4-80GB", extra_allocatable={"nvidia.com/mig-1g.10gb": "7"}),
    node("h100-001"),
    node(
        "l40s-ts-001",
        gpu=16,
        product="NVIDIA-L40S",
        labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "4"},
    ),
]
IDLE = pod_that_is(Behaviour.IDLE, "notebook", node="h100-001", gpu=2, namespace="research")
BUSY = pod_that_is(Behaviour.BUSY, "train", node="h100-001", gpu=4, namespace="research")
SHARED = pod_that_is(Behaviour.BUSY, "infer", node="l40s-ts-001", gpu=2, namespace="serving")
PODS = [IDLE, BUSY, SHARED, mig_pod("segment-0", "a100-mig-001")]
DEVICES = len(gpu_samples(NODES, PODS, 0))  # 7 MIG instances, 8 GPUs, 16 shares


def device_key(hostname, gpu, uuid, instance, vgpu, namespace, name, container) -> tuple[str, ...]:
    return tuple("" if value is None else str(value) for value in (hostname, gpu, uuid, instance, vgpu)) + (
        namespace,
        name,
        container,
    )


def reading_key(reading) -> tuple[str, ...]:
    return device_key(
        reading.hostname,
        reading.gpu,
        reading.uuid,
        reading.gpu_instance_id,
        reading.vgpu,
        reading.namespace,
        reading.pod,
        reading.container,
    )


def sample_key(sample) -> tuple[str, ...]:
    return device_key(
        sample.hostname,
        sample.gpu,
        sample.uuid,
        sample.gpu_instance_id,
        sample.vgpu,
        sample.namespace,
        sample.pod,
        sample.container,
    )


def labels_key(labels) -> tuple[str, ...]:
    names = ("Hostname", "gpu", "UUID", "GPU_I_ID", "vgpu", "namespace", "pod", "container")
    return device_key(*(labels.get(name, "") for name in names))


def settled() -> float:
    """A moment every scrape before which Prometheus has written (a scrape of this exporter takes milliseconds)."""
    return time.time() - 2 * SCRAPE_SECONDS


def start_prometheus(directory, exporter) -> PrometheusServer:
    try:
        return PrometheusServer(directory, [exporter.target], scrape_interval=SCRAPE_SECONDS).start()
    except PrometheusUnavailable as exc:
        service_unavailable(str(exc))


@pytest.fixture(scope="module")
def exporter():
    with SimulatedExporter(NODES, PODS) as running:
        yield running


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory, exporter):
    server = start_prometheus(tmp_path_factory.mktemp("prometheus"), exporter)
    client = PrometheusClient(server.url)
    try:
        # Prometheus hands new targets to its scrapers every 5 s: the first scrape comes within about 7 s. The tests
        # read settled moments, and up to 3 s before them.
        wait_until(
            lambda: [s.value for s in client.query(f"count({FB_USED})", at=settled() - 3)] == [DEVICES],
            timeout=40,
            what=f"Prometheus holding {DEVICES} devices",
        )
        yield server, client
    finally:
        client.close()
        server.stop()


def test_every_device_has_the_values_the_exporter_served_at_the_scrape_read(prometheus, exporter):
    _, client = prometheus
    at = settled()
    readings = gpu_utilization(client, at=at)
    scraped = {labels_key(s.labels): s.value for s in client.query(f"timestamp({FB_USED})", at=at)}
    assert len(set(scraped.values())) == 1  # one target, one scrape
    moment = exporter.served_near(next(iter(scraped.values())))
    expected = {sample_key(sample): sample for sample in gpu_samples(NODES, PODS, moment)}

    assert [reading_key(r) for r in readings] == list(expected)  # all of them, in the exporter's order
    for reading in readings:
        sample = expected[reading_key(reading)]
        mig = sample.gpu_instance_id is not None
        assert reading.util == (None if mig else sample.util), reading
        assert (reading.fb_used, reading.fb_free) == (sample.fb_used, sample.fb_free)
        assert reading.gr_engine_active == sample.gr_engine_active
        assert (reading.model, reading.gpu_instance_profile) == (sample.model, sample.gpu_instance_profile)

    by_pod = {}
    for reading in readings:
        by_pod.setdefault(reading.pod, []).append(reading)
    assert {r.namespace for r in by_pod[IDLE["metadata"]["name"]]} == {"research"}
    assert [r.util for r in by_pod[IDLE["metadata"]["name"]]] == [0, 0]
    assert all(r.fb_used > 0 for r in by_pod[IDLE["metadata"]["name"]])  # idle, but holding memory
    assert sorted(r.util for r in by_pod[BUSY["metadata"]["name"]]) == sorted(
        pod_activity(BUSY, ordinal, moment) for ordinal in range(4)
    )
    assert all(70 <= r.util <= 100 for r in by_pod[BUSY["metadata"]["name"]])
    assert all(r.vgpu.isdigit() for r in by_pod[SHARED["metadata"]["name"]])  # time-sliced shares
    [instance] = by_pod["segment-0"]
    assert instance.gpu_instance_id.isdigit() and instance.gpu_instance_profile == "1g.10gb"
    assert instance.util is None and instance.gr_engine_active is not None  # MIG: no DCGM_FI_DEV_GPU_UTIL
    free = by_pod[""]
    assert len(free) == 6 + 2 + 14 and all(r.fb_used == 0 and r.container == "" for r in free)


def test_query_range_gives_each_series_a_point_per_step(prometheus):
    _, client = prometheus
    end = settled()
    name = IDLE["metadata"]["name"]
    series = client.query_range(f'{FB_USED}{{pod="{name}"}}', end - 3, end, 1)
    assert len(series) == 2
    for one in series:
        assert [t for t, _ in one.points] == pytest.approx([end - 3, end - 2, end - 1, end], abs=0.01)
        assert len({value for _, value in one.points}) == 1 and one.points[0][1] > 0  # held memory is steady
        assert one.labels["pod"] == name and one.labels["__name__"] == FB_USED


def test_idle_since_finds_the_idle_pods_gpus_and_never_a_busy_one(prometheus, exporter):
    _, client = prometheus
    wait_until(
        lambda: time.time() - exporter.served[0] > IDLE_WINDOW + 3 * SCRAPE_SECONDS,
        timeout=30,
        what="a window of history",
    )
    idle = idle_since(client, threshold_percent=0, window_seconds=IDLE_WINDOW, at=settled())
    assert [(d.hostname, d.namespace, d.pod, d.container, d.max_util) for d in idle] == [
        ("h100-001", "research", IDLE["metadata"]["name"], "main", 0.0)
    ] * 2
    assert len({d.uuid for d in idle}) == 2 and all(d.gpu.isdigit() for d in idle)

    # At 100 % every held device is "quiet": the idle and busy pods' GPUs and the two shares, never a free GPU
    # (no pod) nor a MIG instance (no DCGM_FI_DEV_GPU_UTIL).
    everything = idle_since(client, threshold_percent=100, window_seconds=IDLE_WINDOW, at=settled())
    assert sorted(d.pod for d in everything) == sorted(
        [IDLE["metadata"]["name"]] * 2 + [BUSY["metadata"]["name"]] * 4 + [SHARED["metadata"]["name"]] * 2
    )
    # Quiet for an hour cannot be known of series a few seconds old.
    assert idle_since(client, window_seconds=3600, at=settled()) == []


def test_a_bad_query_raises_prometheus_own_error(prometheus):
    _, client = prometheus
    with pytest.raises(PrometheusError) as raised:
        client.query("sum(DCGM_FI_DEV_GPU_UTIL")
    error = raised.value
    assert (error.reason, error.error_type, error.status) == ("query", "bad_data", 400)
    # What a Prometheus says is never repeated: a backend's URL may lead anywhere (SEMANTICS §7.4).
    assert str(error) == "Prometheus refused the query (bad_data)."

    with pytest.raises(PrometheusError) as raised:
        client.query_range("up", 0, 1_000_000, 1)  # more than 11,000 points a series
    assert raised.value.reason == "query" and "11,000 points" not in str(raised.value)


def test_a_stopped_prometheus_fails_quickly_with_a_clear_message(tmp_path, exporter):
    server = start_prometheus(tmp_path, exporter)
    client = PrometheusClient(server.url)
    try:
        assert client.query("1 + 1")[0].value == 2
        server.stop()
        for read in (lambda: gpu_utilization(client), lambda: idle_since(client), lambda: client.query("up")):
            started = time.monotonic()
            with pytest.raises(PrometheusError) as raised:
                read()
            assert time.monotonic() - started < 3
            assert raised.value.reason == "unreachable"
            assert str(raised.value) == f"Prometheus at {server.url} is unreachable (Connection refused)."
    finally:
        client.close()
        server.stop()
