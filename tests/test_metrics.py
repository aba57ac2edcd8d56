"""``/metrics``' quota series: per (department or project, pool), the figures of ``quota_figures`` (SEMANTICS §9),
the same function the quota pages, ``GET /api/quotas/`` and ``poolctl quota list`` read."""

from __future__ import annotations

import pytest
from kube_objects import node, pod
from people import person
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.permissions import METRICS_ROLE
from pools.metrics import QUOTA_GAUGES, QUOTA_LABELS, quota_exposition

A100 = {"gpu-type": "A100"}


@pytest.fixture
def quotas(cluster, actor):
    """Pool a100 (capacity 12); department rnd (deserved 6) with projects vision (4) and nlp (-1: its department's
    share), department ops deserving nothing, without projects; running, fractional and pending pods."""
    cluster(
        [
            node("a-0", gpu=8, labels=A100),
            node("a-1", gpu=4, labels=A100),
            pod("train", node="a-0", gpu=5, namespace="runai-vision"),
            pod("half", node="a-0", namespace="runai-vision", annotations={"gpu-fraction": "0.5"}),
            pod("queued", node="a-1", gpu=2, namespace="shared", labels={"runai/queue": "nlp"}),
            pod("waiting", gpu=3, namespace="runai-vision", phase="Pending", pool="a100"),
            pod("stray", node="a-1", gpu=1, namespace="default"),
        ],
        name="lab",
    )

    def gpu(deserved, weight=2):
        return [{"nodePool": "a100", "gpu": {"deserved": deserved, "overQuotaWeight": weight}}]

    services.config_apply(
        changes={
            ConfigType.POOL: {"a100": {"backend": "lab", "node_label": {"key": "gpu-type", "value": "A100"}}},
            ConfigType.DEPARTMENT: {"rnd": {"resources": gpu(6)}, "ops": {"resources": gpu(0, 1)}},
            ConfigType.PROJECT: {
                "vision": {"department": "rnd", "resources": gpu(4)},
                "nlp": {"department": "rnd", "namespaces": ["nlp-team"], "resources": gpu(-1)},
            },
        },
        actor=actor,
    )


def scrape(client) -> dict[tuple[str, tuple], float]:
    """The ``gpupool_quota_*`` samples of one scrape, by (name, (unit, kind, department, pool))."""
    client.force_login(person("prometheus", METRICS_ROLE, password=None))
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return {
        (sample.name, tuple(sample.labels[key] for key in ("unit", "kind", "department", "pool"))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        if family.name.startswith("gpupool_quota_")
        for sample in family.samples
    }


def test_each_quota_figure_is_a_gauge_per_unit_and_pool_with_the_value_of_quota_figures(client, quotas):
    samples = scrape(client)
    rows = selectors.quota_figures(user=SYSTEM)
    expected = {
        (f"gpupool_quota_{suffix}", (row["unit"], row["kind"], row["department"], row["pool"])): float(row[field])
        for row in rows
        for suffix, field, _ in QUOTA_GAUGES
        if row[field] is not None
    }
    assert samples == expected
    assert {unit for _, (unit, *_) in samples} == {"rnd", "vision", "nlp", "ops"}
    # The figures themselves (SEMANTICS §9): vision runs 5.5 GPUs and waits for 3; nlp's label brings its pod from
    # another namespace; ops deserves nothing, so it has no allocation ratio.
    vision = ("vision", "project", "rnd", "a100")
    assert samples[("gpupool_quota_gpu_allocated", vision)] == 5.5
    assert samples[("gpupool_quota_gpu_pending", vision)] == 3
    assert samples[("gpupool_quota_gpu_request", vision)] == 8.5
    assert samples[("gpupool_quota_allocation_ratio", vision)] == 1.375
    assert samples[("gpupool_quota_gpu_over_quota", vision)] == 1.5
    assert samples[("gpupool_quota_gpu_allocated", ("rnd", "department", "rnd", "a100"))] == 7.5
    assert samples[("gpupool_quota_gpu_deserved", ("nlp", "project", "rnd", "a100"))] == -1
    ops = ("ops", "department", "ops", "a100")
    assert ("gpupool_quota_allocation_ratio", ops) not in samples
    assert samples[("gpupool_quota_gpu_deserved", ops)] == 0
    # rnd asks 10.5 of the 12 GPUs and ops nothing: rnd's fair share is all it asks; vision deserves 4 of it.
    assert samples[("gpupool_quota_gpu_fair_share", ("rnd", "department", "rnd", "a100"))] == 10.5
    assert samples[("gpupool_quota_gpu_fair_share", vision)] == 8.5
    assert samples[("gpupool_quota_gpu_over_fair_share", vision)] == 0


def test_without_departments_the_quota_families_are_empty(client, cluster, actor):
    cluster([node("h1", gpu=8)])
    services.config_apply(changes={ConfigType.POOL: {"p": {"backend": "test-cluster"}}}, actor=actor)
    assert scrape(client) == {}


def test_the_quota_exposition_is_what_prometheus_client_would_write():
    """``quota_exposition`` writes the text itself (prometheus_client takes a second for 88,000 samples): the same
    bytes as its gauge families, odd label values and every kind of figure included."""
    figures = {"deserved": -1, "allocated": 2.5, "pending": 0, "request": 1234567.25, "allocation_ratio": None}
    figures |= {"over_quota": 0.125, "fair_share": 3, "over_fair_share": 1e-05, "usage": 0.123456}
    rows = [
        {"unit": "vision", "kind": "project", "department": "rnd", "pool": "a100", **figures},
        {"unit": 'odd "unit" \\ with\na newline', "kind": "department", "department": "x", "pool": "p", **figures},
    ]

    class Families:
        def collect(self):
            for suffix, field, text in QUOTA_GAUGES:
                family = GaugeMetricFamily(f"gpupool_quota_{suffix}", text, labels=QUOTA_LABELS)
                for row in rows:
                    if row[field] is not None:
                        family.add_metric([row[key] for key in QUOTA_LABELS], row[field])
                yield family

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families())
    assert quota_exposition(rows) == generate_latest(registry).decode()


# --- GPU utilization per pool ------------------------------------------------------------------------

UTILIZATION_SERIES = ("gpupool_idle_gpus", "gpupool_gpu_utilization_percent", "gpupool_gpu_memory_used_mib")


def utilization_samples(client) -> dict[tuple[str, str], float]:
    """The utilization series of one scrape, by (name, pool)."""
    from django.contrib.auth import get_user_model

    scraper = get_user_model().objects.filter(username="prometheus").first()
    client.force_login(scraper or person("prometheus", METRICS_ROLE, password=None))
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return {
        (sample.name, sample.labels["pool"]): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        if family.name in UTILIZATION_SERIES
        for sample in family.samples
    }


def sample(backend, pool, at, utilization, memory_used, idle_gpus=0):
    from pools.models import UtilizationSample

    return UtilizationSample.objects.create(
        backend=backend,
        pool=pool,
        at=at,
        gpus=8,
        utilization=utilization,
        memory_used=memory_used,
        memory_total=8 * 81920,
        idle_gpus=idle_gpus,
    )


@pytest.fixture
def utilization(cluster, actor):
    """Pools team-a, team-b (idle GPUs: 2 and 1) and spare (none, no node); team-a's samples a minute apart, team-b's
    one without a utilization (no GPU reported one), none for spare."""
    from django.utils import timezone
    from utilization_rows import two_pools_with_idle_gpus

    now = timezone.now().replace(second=0, microsecond=0)
    backend = two_pools_with_idle_gpus(cluster, actor, now)
    services.config_apply(
        changes={ConfigType.POOL: {"spare": {"backend": backend.name, "node_label": {"key": "team", "value": "x"}}}},
        actor=actor,
    )
    sample(backend, "team-a", now - timezone.timedelta(minutes=1), 90.0, 1000.0)
    sample(backend, "team-a", now, 37.5, 40960.0, idle_gpus=2)
    sample(backend, "team-b", now, None, 0.0, idle_gpus=1)
    return backend


def test_idle_gpus_utilization_and_memory_per_pool_from_the_latest_sample(client, utilization):
    assert utilization_samples(client) == {
        ("gpupool_idle_gpus", "spare"): 0,
        ("gpupool_idle_gpus", "team-a"): 2,
        ("gpupool_idle_gpus", "team-b"): 1,
        ("gpupool_gpu_utilization_percent", "team-a"): 37.5,
        ("gpupool_gpu_memory_used_mib", "team-a"): 40960,
        ("gpupool_gpu_memory_used_mib", "team-b"): 0,
    }
    assert selectors.idle_gpus_by_pool(user=SYSTEM) == {"team-a": 2, "team-b": 1}


def test_a_reader_of_one_pool_gets_no_metrics(client, utilization):
    from people import role

    granted = role("team-a", {"actions": ["pool:Read"], "resources": ["pool/team-a"]})
    client.force_login(person("team-a-reader", granted, password=None))
    response = client.get("/metrics")
    assert response.status_code == 403
    assert "team-b" not in response.content.decode() and "gpupool_" not in response.content.decode()
    assert selectors.pool_utilization_latest(user=person("other", granted, password=None)).keys() == {"team-a"}


def test_a_scrape_reads_the_utilization_in_as_many_queries_for_many_pools(client, utilization, actor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    utilization_samples(client)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/metrics").status_code == 200
        return len(queries)

    few = count()
    now = timezone.now()
    services.config_apply(
        changes={
            ConfigType.POOL: {
                f"more-{i}": {"backend": utilization.name, "node_label": {"key": "team", "value": f"m{i}"}}
                for i in range(6)
            }
        },
        actor=actor,
    )
    for i in range(6):
        for minutes in range(3):
            sample(utilization, f"more-{i}", now - timezone.timedelta(minutes=minutes), 10.0 * i, 100.0 * i)
    assert count() == few
    samples = utilization_samples(client)
    assert samples[("gpupool_gpu_utilization_percent", "more-5")] == 50
    assert samples[("gpupool_idle_gpus", "more-5")] == 0


def test_after_a_real_round_the_series_are_the_selectors_numbers(client, demo, monkeypatch):
    from django.utils import timezone

    services.utilization_record_all()
    moment = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: moment)  # a GPU turning idle between the two reads is not a mismatch
    samples = utilization_samples(client)
    idle = selectors.idle_gpus_by_pool(user=SYSTEM)
    assert idle and all(samples[("gpupool_idle_gpus", pool)] == pytest.approx(gpus) for pool, gpus in idle.items())
    pools = [row["name"] for row in selectors.pool_list(user=SYSTEM)]
    for pool in pools:
        latest = selectors.pool_utilization(pool=pool)
        assert latest is not None, pool
        assert samples[("gpupool_gpu_utilization_percent", pool)] == pytest.approx(latest["utilization"])
        assert samples[("gpupool_gpu_memory_used_mib", pool)] == pytest.approx(latest["memory_used"])
