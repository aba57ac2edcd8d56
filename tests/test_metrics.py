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
    figures |= {"over_quota": 0.125, "fair_share": 3, "over_fair_share": 1e-05}
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
