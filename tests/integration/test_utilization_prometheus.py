"""Utilization rounds against a real Prometheus (Debian's) scraping the simulated DCGM exporter.

A file backend holds three H100 nodes and their pods, as Kubernetes would list them; its ``prometheus_url`` is set
through ``config_apply`` as an administrator would. Rounds of ``utilization_record`` over a few seconds (a 3 s idle
threshold, scrapes every second) must find the idle pod's GPUs after the threshold and never the busy pod's, keep a
sample per pool with the values the exporter served, and count GPU-hours; then Prometheus stops and the next round
leaves a clear error on the backend and changes nothing else.
"""

from __future__ import annotations

import time

import pytest
from django.urls import Resolver404, resolve
from kube_objects import node, pod
from people import person, role
from prometheus_server import PrometheusServer, PrometheusUnavailable, SimulatedExporter, wait_until
from service_checks import service_unavailable

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.utilization import utilization_distribution
from pools.fleet.dcgm import Behaviour, gpu_samples, pod_behaviour
from pools.models import GpuConsumption, QuietGpu, UtilizationSample
from pools.telemetry.prometheus import FB_USED, PrometheusClient

pytestmark = [pytest.mark.services, pytest.mark.django_db]

SCRAPE_SECONDS = 1
IDLE_SECONDS = 3  # the test's stand-in for Run:ai's 5 minutes
BACKEND = "h100-cluster"
POOL_LABEL = "example.com/pool"


def pod_that_is(behaviour: Behaviour, prefix: str, **options) -> dict:
    """The first pod named ``<prefix>-<n>`` that the exporter makes behave as asked (a hash of its identity)."""
    for number in range(1000):
        candidate = pod(f"{prefix}-{number}", **options)
        if pod_behaviour(candidate) == behaviour:
            return candidate
    raise AssertionError(f"no {behaviour} pod among 1000 names")


# Pool "idle-pool": h100-001, all 8 GPUs held by an idle notebook. Pool "busy-pool": h100-002, all 8 held by a
# training job. Pool "spare": h100-003, nobody on it (what the limited user may read).
NODES = [
    node("h100-001", labels={POOL_LABEL: "idle-pool"}),
    node("h100-002", labels={POOL_LABEL: "busy-pool"}),
    node("h100-003", labels={POOL_LABEL: "spare"}),
]
IDLE = pod_that_is(
    Behaviour.IDLE, "notebook", node="h100-001", gpu=8, namespace="research", labels={"osmo.user": "ada"}
)
BUSY = pod_that_is(Behaviour.BUSY, "train", node="h100-002", gpu=8, namespace="training", labels={"osmo.user": "bob"})
PODS = [IDLE, BUSY]
POOLS = {"h100-001": "idle-pool", "h100-002": "busy-pool", "h100-003": "spare"}


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def start_prometheus(directory, exporter) -> PrometheusServer:
    try:
        return PrometheusServer(directory, [exporter.target], scrape_interval=SCRAPE_SECONDS).start()
    except PrometheusUnavailable as exc:
        service_unavailable(str(exc))


def settled() -> float:
    """A moment every scrape before which Prometheus has written (a scrape of this exporter takes milliseconds)."""
    return time.time() - 1.5 * SCRAPE_SECONDS


def expected_pool_figures(exporter, prom, at: float) -> dict[str, tuple]:
    """Pool -> (utilization %, memory used MiB, distribution) as the exporter served them at the scrape Prometheus
    answers ``at`` from (``timestamp()`` of a series is when its scrape began; the exporter remembers when it
    served)."""
    scraped = {sample.value for sample in prom.query(f"timestamp({FB_USED})", at=at)}
    assert len(scraped) == 1, scraped  # one target, one scrape
    moment = exporter.served_near(scraped.pop())
    values: dict[str, list[float]] = {}
    used: dict[str, float] = {}
    for sample in gpu_samples(NODES, PODS, moment):
        pool = POOLS[sample.hostname]
        values.setdefault(pool, []).append(float(sample.util))
        used[pool] = used.get(pool, 0.0) + sample.fb_used
    return {
        pool: (round(sum(utils) / len(utils), 2), used[pool], utilization_distribution(utils))
        for pool, utils in values.items()
    }


PAGES = (
    "/",
    "/idle/",
    "/consumption/",
    "/pools/idle-pool/",
    "/pools/idle-pool/utilization/",
    "/nodes/",
    "/nodes/h100-001/gpus/",
    "/nodes/h100-001/gpus/history/",
)


def pages_while_down(client, admin) -> dict:
    """The utilization pages that exist (another change adds some of them), each asked for as a signed-in admin:
    url -> response, every one 200."""
    client.force_login(admin)
    answered = {}
    for url in PAGES:
        try:
            resolve(url)
        except Resolver404:
            continue
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        answered[url] = response
    return answered


def test_rounds_find_the_idle_pod_never_the_busy_one_and_survive_prometheus_stopping(
    cluster, actor, settings, tmp_path, client
):
    """``client`` is Django's test client (the pages); ``prom`` a client of the started Prometheus."""
    settings.GPUPOOL = {**settings.GPUPOOL, "IDLE_SECONDS": IDLE_SECONDS, "IDLE_THRESHOLD_PERCENT": 0}
    backend = cluster([*NODES, *PODS], name=BACKEND)
    source = backend.source
    services.config_apply(
        changes={
            ConfigType.POOL: {
                pool: {"backend": BACKEND, "node_label": {"key": POOL_LABEL, "value": pool}}
                for pool in ("idle-pool", "busy-pool", "spare")
            }
        },
        actor=actor,
    )
    viewer = person(
        "viewer", role("spare-reader", {"actions": ["pool:Read"], "resources": ["pool/spare"]}), password=None
    )
    admin = person("root", password=None, is_superuser=True, is_staff=True)

    with SimulatedExporter(NODES, PODS) as exporter:
        prometheus = start_prometheus(tmp_path / "prometheus", exporter)
        prom = PrometheusClient(prometheus.url)
        try:
            # The backend's Prometheus, set as an administrator sets it (the whole document, as `config update`).
            services.config_apply(
                changes={
                    ConfigType.BACKEND: {BACKEND: {"kind": "file", "source": source, "prometheus_url": prometheus.url}}
                },
                actor=actor,
            )
            backend.refresh_from_db()
            assert backend.prometheus_url == prometheus.url
            # Prometheus hands new targets to its scrapers every 5 s: the first scrape comes within about 7 s.
            wait_until(
                lambda: [s.value for s in prom.query(f"count({FB_USED})", at=settled())] == [24],
                timeout=40,
                what="Prometheus holding 24 GPUs",
            )
            first_scrape = exporter.served[0]

            idle_seen_at = None
            rounds = 0
            deadline = time.monotonic() + 25
            while time.monotonic() < deadline:
                at = settled()
                result = services.utilization_record(backend=backend, now=at)
                rounds += 1
                assert "error" not in result, result
                assert result["devices"] == 24, result
                assert result["read_seconds"] <= result["seconds"]
                idle_rows = selectors.idle_workloads(user=SYSTEM)
                assert all(row["pod"] != name(BUSY) for row in idle_rows), idle_rows  # never, at any round
                assert not QuietGpu.objects.filter(pod=name(BUSY)).exists()
                if idle_rows:
                    # Found only once the quiet stretch Prometheus holds is as long as the threshold.
                    assert at - first_scrape >= IDLE_SECONDS - 0.5, (at, first_scrape)
                    idle_seen_at = idle_seen_at or at
                if idle_seen_at and at - idle_seen_at >= 2:  # two seconds more of rounds once idle
                    break
                time.sleep(0.5)
            assert idle_seen_at is not None, f"the idle pod was not found in {rounds} rounds"
            assert rounds >= 3

            [row] = selectors.idle_workloads(user=SYSTEM)
            assert {key: row[key] for key in ("backend", "namespace", "pod", "user", "pool", "node")} == {
                "backend": BACKEND,
                "namespace": "research",
                "pod": name(IDLE),
                "user": "ada",
                "pool": "idle-pool",
                "node": "h100-001",
            }
            assert (row["gpus"], row["idle_gpus"]) == (8, 8)
            assert row["idle_for_seconds"] >= IDLE_SECONDS
            assert QuietGpu.objects.filter(backend=backend).count() == 8
            assert selectors.idle_gpus_by_pool(user=SYSTEM) == {"idle-pool": 8}

            # The last round's samples: one per pool, with what the exporter served at the scrape read.
            backend.refresh_from_db()
            assert backend.utilization_error == ""
            assert backend.utilization_at is not None and abs(backend.utilization_at.timestamp() - at) < 1
            latest = UtilizationSample.objects.filter(backend=backend).latest("at").at
            samples = {s.pool: s for s in UtilizationSample.objects.filter(backend=backend, at=latest)}
            assert set(samples) == {"idle-pool", "busy-pool", "spare"}
            expected = expected_pool_figures(exporter, prom, at)
            for pool, sample in samples.items():
                utilization, memory_used, distribution = expected[pool]
                held = 0 if pool == "spare" else 8  # GPUs its pods hold: the spare node's are free
                assert sample.gpus == held and sample.memory_total == 8 * 81559, pool
                assert sample.utilization == pytest.approx(utilization, abs=0.01), pool
                assert sample.memory_used == pytest.approx(memory_used), pool
                assert sample.distribution == distribution, pool
            busy = samples["busy-pool"]
            assert 70 <= busy.utilization <= 100 and busy.idle_gpus == 0
            assert busy.distribution["0-25"] == busy.distribution["25-50"] == 0
            idle = samples["idle-pool"]
            assert idle.utilization == 0 and idle.idle_gpus == 8 and idle.memory_used > 0  # held memory, no work
            assert samples["spare"].utilization == 0 and samples["spare"].memory_used == 0
            assert samples["spare"].idle_gpus == 0  # free GPUs are not idle ones: nobody holds them

            # GPU-hours: allocated for both users, idle ones only for the idle pod's user and namespace.
            by_user = {r["user"]: r for r in selectors.consumption_report(user=SYSTEM, filters={"by": "user"})["rows"]}
            assert set(by_user) == {"ada", "bob"}
            assert by_user["ada"]["allocated_gpu_hours"] > 0 and by_user["bob"]["allocated_gpu_hours"] > 0
            assert by_user["bob"]["idle_gpu_hours"] == 0  # ada's idle seconds show in the rows (the report rounds)
            idle_hours = {
                (row.dimension, row.value) for row in GpuConsumption.objects.filter(backend=backend, idle__gt=0)
            }
            assert idle_hours == {("pool", "idle-pool"), ("user", "ada"), ("namespace", "research"), ("project", "")}
            assert GpuConsumption.objects.filter(backend=backend, value="bob", allocated__gt=0).exists()

            # Someone who may read only the spare pool sees no idle workload, and no hours of the other pools.
            assert selectors.idle_workloads(user=viewer) == []
            assert selectors.idle_gpus_by_pool(user=viewer) == {}
            assert selectors.consumption_report(user=viewer, filters={"by": "user"})["rows"] == []

            # Prometheus stops: the next round fails with a clear sentence and changes nothing else.
            stored = (
                sorted(QuietGpu.objects.values_list("device", "namespace", "pod", "quiet_since", "gpus")),
                sorted(UtilizationSample.objects.values_list("pool", "at", "utilization", "memory_used", "idle_gpus")),
                sorted(
                    GpuConsumption.objects.values_list(
                        "resolution", "start", "pool", "dimension", "value", "allocated", "idle"
                    )
                ),
            )
            prometheus.stop()
            result = services.utilization_record(backend=backend)
            assert set(result) == {"error"}
            assert result["error"] == f"Prometheus at {prometheus.url} is unreachable (Connection refused)."
            backend.refresh_from_db()
            assert backend.utilization_error == result["error"]
            assert (
                sorted(QuietGpu.objects.values_list("device", "namespace", "pod", "quiet_since", "gpus")),
                sorted(UtilizationSample.objects.values_list("pool", "at", "utilization", "memory_used", "idle_gpus")),
                sorted(
                    GpuConsumption.objects.values_list(
                        "resolution", "start", "pool", "dimension", "value", "allocated", "idle"
                    )
                ),
            ) == stored
            assert [r["pod"] for r in selectors.idle_workloads(user=SYSTEM)] == [name(IDLE)]  # still listed

            gpus = selectors.node_gpus("h100-001", user=SYSTEM)
            assert gpus["source"] == "prometheus" and gpus["gpus"] == []
            assert "unreachable" in gpus["error"] and "Connection refused" in gpus["error"]
            series = selectors.node_utilization_series("h100-001", user=SYSTEM, since=at - 60, until=at)
            assert series["error"] == gpus["error"] and series["times"] == []

            pages = pages_while_down(client, admin)
            assert "/pools/idle-pool/" in pages
            if "/idle/" in pages:
                assert name(IDLE) in pages["/idle/"].content.decode()  # the stored idle rows, still shown
            if "/pools/idle-pool/utilization/" in pages:
                assert pages["/pools/idle-pool/utilization/"].json()["error"] == result["error"]
            if "/nodes/h100-001/gpus/" in pages:
                assert "Connection refused" in pages["/nodes/h100-001/gpus/"].content.decode()
            if "/nodes/h100-001/gpus/history/" in pages:
                assert "Connection refused" in pages["/nodes/h100-001/gpus/history/"].json()["empty"]
        finally:
            prom.close()
            prometheus.stop()
