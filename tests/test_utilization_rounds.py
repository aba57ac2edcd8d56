"""GPU utilization rounds: idle GPUs, pool samples and GPU-hours, from the simulated exporter's model.

The cluster is a file backend's nodes and pods, read as a simulated backend's: the model (``pools.fleet.dcgm``)
decides each pod's behaviour from its identity, so the tests pick pods that are idle or busy for their whole life.
The same rounds against a real Prometheus are in tests/integration/test_utilization_prometheus.py.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from kube_objects import node, pod

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import ConfigError
from pools.fleet.dcgm import Behaviour, pod_behaviour
from pools.models import (
    Backend,
    GpuConsumption,
    ProjectUsageMinute,
    QuietGpu,
    UsageSample,
    UtilizationSample,
    WorkloadRun,
)
from pools.services.demo import history_moments
from pools.telemetry.prometheus import PrometheusError

T0 = 1_790_000_000.0  # a moment, well after the pods "began" (they have no creation time: always there)


def named(behaviour: Behaviour, prefix: str, namespace: str = "team-a") -> str:
    """The first pod name ``prefix-N`` whose model behaviour is ``behaviour``."""
    for number in range(500):
        name = f"{prefix}-{number}"
        if pod_behaviour(pod(name, namespace=namespace)) is behaviour:
            return name
    raise AssertionError(f"no {behaviour} pod name")


@pytest.fixture
def gpu_cluster(cluster, actor, settings):
    """Two 8-GPU nodes in the label pool ``team``: an idle pod of 4 GPUs and a busy one of 2 on node-a, a busy one
    of 8 on node-b; users alice (idle) and bob (busy). Idle after 300 s at 0 %."""
    settings.GPUPOOL = {**settings.GPUPOOL, "IDLE_SECONDS": 300, "IDLE_THRESHOLD_PERCENT": 0}
    idle, busy = named(Behaviour.IDLE, "idle"), named(Behaviour.BUSY, "busy")
    other = named(Behaviour.BUSY, "other", namespace="team-b")
    labels = {"team": "a"}
    backend = cluster(
        [
            node("node-a", labels=labels),
            node("node-b", labels=labels),
            pod(idle, node="node-a", gpu=4, namespace="team-a", labels={"osmo.user": "alice"}),
            pod(busy, node="node-a", gpu=2, namespace="team-a", labels={"osmo.user": "bob"}),
            pod(other, node="node-b", gpu=8, namespace="team-b", labels={"osmo.user": "bob"}),
        ]
    )
    services.config_apply(
        changes={ConfigType.POOL: {"team": {"backend": backend.name, "node_label": {"key": "team", "value": "a"}}}},
        actor=actor,
    )
    Backend.objects.filter(pk=backend.pk).update(kind="simulated")  # read through the simulated exporter's model
    backend.refresh_from_db()
    return backend, idle, busy, other


def test_a_pod_quiet_for_the_idle_duration_is_listed_and_a_busy_one_never(gpu_cluster):
    backend, idle, busy, other = gpu_cluster
    result = services.utilization_record(backend=backend, now=T0)
    assert result["devices"] == 16 and result["idle"] == 4
    rows = selectors.idle_workloads(user=SYSTEM, now=datetime.fromtimestamp(T0, tz=UTC))
    assert [(row["pod"], row["user"], row["pool"], row["gpus"], row["idle_gpus"]) for row in rows] == [
        (idle, "alice", "team", 4, 4)
    ]
    assert rows[0]["idle_for_seconds"] >= 300 and rows[0]["node"] == "node-a"
    backend.refresh_from_db()
    assert backend.utilization_error == "" and backend.utilization_at.timestamp() == T0


def test_an_idle_gpu_keeps_its_idle_since_from_round_to_round(gpu_cluster):
    backend, idle, _, _ = gpu_cluster
    services.utilization_record(backend=backend, now=T0)
    first = set(QuietGpu.objects.values_list("device", "quiet_since"))
    services.utilization_record(backend=backend, now=T0 + 60)
    assert set(QuietGpu.objects.values_list("device", "quiet_since")) == first
    [row] = selectors.idle_workloads(user=SYSTEM, now=datetime.fromtimestamp(T0 + 60, tz=UTC))
    assert row["idle_for_seconds"] >= 360


def test_a_pool_sample_covers_the_devices_of_its_nodes(gpu_cluster):
    backend, *_ = gpu_cluster
    services.utilization_record(backend=backend, now=T0)
    [sample] = UtilizationSample.objects.all()
    # Held: the 14 GPUs the three pods requested (SEMANTICS §6.1), 4 of them idle; the distribution is every device.
    assert (sample.pool, sample.gpus, sample.idle_gpus) == ("team", 14, 4)
    assert sum(sample.distribution.values()) == 16
    # 4 idle + 2 free GPUs at 0 %; 10 busy ones at 70-100 % (the model's busy level)
    assert sample.distribution["0-25"] == 6 and sample.distribution["75-100"] + sample.distribution["50-75"] == 10
    assert 0 < sample.utilization < 100 and sample.memory_used < sample.memory_total
    assert selectors.pool_utilization(pool="team")["distribution"] == sample.distribution


def test_gpu_hours_count_what_each_pod_holds_between_rounds_and_the_idle_part(gpu_cluster):
    backend, idle, busy, other = gpu_cluster
    services.utilization_record(backend=backend, now=T0)
    services.utilization_record(backend=backend, now=T0 + 60)  # one minute more
    hour = datetime.fromtimestamp(T0 + 60, tz=UTC).replace(minute=0, second=0, microsecond=0)
    rows = {
        (row.dimension, row.value): (round(row.allocated, 6), round(row.idle, 6))
        for row in GpuConsumption.objects.filter(resolution="hour", start=hour)
    }
    # First round: its minute before; second: the minute since the first. 14 GPUs held. The idle pod's 4 GPUs are
    # quiet since T0 - 310 (as far back as the first round looks: the idle duration and two of the model's steps),
    # so idle from T0 - 10: 10 s of the first minute, all of the second.
    assert rows[("pool", "team")] == (round(14 * 2 / 60, 6), round(4 * 70 / 3600, 6))
    assert rows[("user", "alice")] == (round(4 * 2 / 60, 6), round(4 * 70 / 3600, 6))
    assert rows[("user", "bob")] == (round(10 * 2 / 60, 6), 0)
    assert rows[("namespace", "team-b")] == (round(8 * 2 / 60, 6), 0)
    report = selectors.consumption_report(
        user=SYSTEM, filters={"by": "user", "period": "24h"}, now=datetime.fromtimestamp(T0 + 60, tz=UTC)
    )
    assert [(row["user"], row["allocated_gpu_hours"], row["idle_gpu_hours"]) for row in report["rows"]] == [
        ("bob", 0.33, 0.0),
        ("alice", 0.13, 0.08),
    ]
    assert report["total"]["allocated_gpu_hours"] == 0.47 and report["resolution"] == "hour"


def test_the_consumption_report_refuses_bad_parameters(gpu_cluster):
    for filters in ({"by": "colour"}, {"period": "3w"}, {"since": "yesterday"}):
        with pytest.raises(ConfigError):
            selectors.consumption_report(user=SYSTEM, filters=filters)
    with pytest.raises(ConfigError, match="start must be before"):
        selectors.consumption_report(
            user=SYSTEM, filters={"since": "2026-02-02T00:00:00Z", "until": "2026-02-01T00:00:00Z"}
        )


def test_an_unreachable_prometheus_leaves_a_status_and_changes_nothing(gpu_cluster):
    backend, *_ = gpu_cluster
    services.utilization_record(backend=backend, now=T0)
    before = (list(QuietGpu.objects.values()), list(UtilizationSample.objects.values()), GpuConsumption.objects.count())
    Backend.objects.filter(pk=backend.pk).update(prometheus_url="http://127.0.0.1:9")  # nothing listens there
    backend.refresh_from_db()
    result = services.utilization_record(backend=backend, now=T0 + 60)
    assert "unreachable" in result["error"]
    backend.refresh_from_db()
    assert "unreachable" in backend.utilization_error and backend.utilization_at.timestamp() == T0
    after = (list(QuietGpu.objects.values()), list(UtilizationSample.objects.values()), GpuConsumption.objects.count())
    assert after == before
    gpus = selectors.node_gpus("node-a", user=SYSTEM)
    assert gpus["gpus"] == [] and "unreachable" in gpus["error"] and gpus["source"] == "prometheus"


def test_one_round_of_a_backend_at_a_time(gpu_cluster):
    backend, *_ = gpu_cluster
    assert services.lease_acquire(name=f"utilization:{backend.pk}", owner="another worker", seconds=60)
    with pytest.raises(services.UtilizationBusy):
        services.utilization_record(backend=backend, now=T0)
    assert services.utilization_record_all()[backend.name] == {
        "skipped": f"backend '{backend.name}' is already being read"
    }


def test_a_backend_with_nothing_to_read_is_skipped(cluster):
    backend = cluster([node("plain")], name="plain-file")
    assert services.utilization_record(backend=backend) == {"skipped": "no prometheus_url"}


def test_a_node_s_gpus_and_history_come_from_the_model(gpu_cluster):
    backend, idle, busy, _ = gpu_cluster
    services.utilization_record(backend=backend, now=T0)
    gpus = selectors.node_gpus("node-a", user=SYSTEM, now=T0)
    assert gpus["source"] == "simulated" and gpus["error"] == "" and len(gpus["gpus"]) == 8
    by_pod = {}
    for gpu in gpus["gpus"]:
        by_pod.setdefault(gpu["pod"], []).append(gpu)
    assert {gpu["utilization"] for gpu in by_pod[idle]} == {0.0}
    assert all(gpu["idle_for_seconds"] >= 300 for gpu in by_pod[idle])
    assert all(gpu["utilization"] >= 70 and gpu["idle_for_seconds"] is None for gpu in by_pod[busy])
    history = selectors.node_utilization_series("node-a", user=SYSTEM, since=T0 - 3600, until=T0)
    assert history["error"] == "" and len(history["times"]) == 240
    assert all(history["start"] <= t < history["end"] for t in history["times"])
    assert all(value is not None and 0 < value < 100 for value in history["utilization"])


def test_compaction_averages_finished_hours_and_drops_old_rows(gpu_cluster):
    backend, *_ = gpu_cluster
    for minute in range(3):
        services.utilization_record(backend=backend, now=T0 + 60 * minute)
    later = datetime.fromtimestamp(T0, tz=UTC) + timedelta(hours=2)
    result = services.utilization_history_compact(now=later)
    assert result["hourly"] >= 1
    hourly = UtilizationSample.objects.filter(resolution=UsageSample.Resolution.HOUR)
    assert hourly.count() >= 1 and all(sample.gpus == 14 for sample in hourly)
    services.utilization_history_compact(now=later + timedelta(days=400))
    assert not UtilizationSample.objects.exists() and not GpuConsumption.objects.exists()


def test_a_limited_reader_sees_only_the_idle_gpus_and_hours_of_pools_they_may_read(gpu_cluster, actor):
    from people import person, role

    backend, idle, *_ = gpu_cluster
    services.config_apply(
        changes={ConfigType.POOL: {"other": {"backend": backend.name, "node_label": {"key": "x", "value": "y"}}}},
        actor=actor,
    )
    services.utilization_record(backend=backend, now=T0)
    outsider = person(
        "outsider", role("sees-other", {"effect": "Allow", "actions": ["pool:Read"], "resources": ["pool/other"]})
    )
    insider = person(
        "insider", role("sees-team", {"effect": "Allow", "actions": ["pool:Read"], "resources": ["pool/team"]})
    )
    assert selectors.idle_workloads(user=outsider) == []
    assert selectors.consumption_report(user=outsider, filters={"period": "24h"})["rows"] == []
    assert selectors.idle_gpus_by_pool(user=outsider) == {}
    assert [row["pod"] for row in selectors.idle_workloads(user=insider)] == [idle]
    with pytest.raises(ConfigError):
        selectors.node_gpus("node-a", user=outsider)


def test_a_backend_names_its_prometheus_and_where_its_credentials_are(cluster, actor, monkeypatch):
    backend = cluster([node("n1")], name="with-prometheus")
    body = selectors.config_show(config_type=ConfigType.BACKEND, name=backend.name, user=SYSTEM)[backend.name]
    for url, token_env, message in (
        ("ftp://prometheus:9090", "", "http:// or https://"),
        ("http://user:secret@prometheus:9090", "", "must not carry credentials"),
        ("http://prometheus:9090", "SECRET_KEY", "GPUPOOL_PROMETHEUS_"),
        ("http://prometheus:9090", "GPUPOOL_PROMETHEUS_PROD_TOKEN", "the backend's own credentials"),
        ("", "GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN", "need a prometheus_url"),
    ):
        with pytest.raises(ConfigError, match=message):
            services.config_apply(
                changes={
                    ConfigType.BACKEND: {
                        backend.name: {**body, "prometheus_url": url, "prometheus_token_env": token_env}
                    }
                },
                actor=actor,
            )
    services.config_apply(
        changes={
            ConfigType.BACKEND: {
                backend.name: {
                    **body,
                    "prometheus_url": "http://127.0.0.1:9",
                    "prometheus_token_env": "GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN",
                }
            }
        },
        actor=actor,
    )
    backend.refresh_from_db()
    monkeypatch.delenv("GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN", raising=False)
    with pytest.raises(PrometheusError, match="GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN"):
        selectors.prometheus_client(backend)
    monkeypatch.setenv("GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN", "reader:s3cret")
    assert selectors.prometheus_client(backend)._session.auth == ("reader", "s3cret")
    monkeypatch.setenv("GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN", "abc.def")
    assert selectors.prometheus_client(backend)._session.headers["Authorization"] == "Bearer abc.def"
    assert "GPUPOOL_PROMETHEUS_WITH_PROMETHEUS_TOKEN" in os.environ


def test_history_moments_cover_a_week_densest_at_the_end():
    now = 1_790_000_030.0
    moments = history_moments(now)
    assert moments == sorted(moments) and moments[-1] == now - now % 60
    assert 7 * 86400 <= now - moments[0] <= 7 * 86400 + 3600
    last_hour = [m for m in moments if now - m <= 3600]
    assert len(last_hour) == 60 and all(b - a == 60 for a, b in zip(last_hour, last_hour[1:], strict=False))
    older = [m for m in moments if now - m > 2 * 3600]
    assert all(m % 3600 == 0 for m in older) and all(b - a == 3600 for a, b in zip(older, older[1:], strict=False))
    assert any(now - m > 6 * 86400 for m in moments)


def test_the_demo_has_a_week_of_history_on_its_first_run(demo):
    assert services.demo_history_backfill() > 0
    pools = UsageSample.objects.filter(scope=UsageSample.Scope.POOL)
    oldest = min(pools.values_list("at", flat=True))
    assert datetime.now(tz=UTC) - oldest > timedelta(days=6)
    assert UtilizationSample.objects.filter(resolution="hour").exists()
    assert UtilizationSample.objects.filter(resolution="minute").exists()
    week = selectors.consumption_report(user=SYSTEM, filters={"period": "7d"})
    assert week["total"]["allocated_gpu_hours"] > 100 and week["total"]["idle_gpu_hours"] > 0
    # Time-based fair share's week (SEMANTICS §9.3): the first recording counts it into the sums.
    assert ProjectUsageMinute.objects.filter(at__lt=oldest + timedelta(hours=2)).exists()
    services.usage_sample_record()
    used = [row["usage"] for row in selectors.quota_figures(user=SYSTEM) if row["kind"] == "project"]
    assert max(used) > 0.01
    # The runs that finished in its last minutes, which start estimates learn from (SEMANTICS §10.1).
    finished = WorkloadRun.objects.filter(finished__isnull=False)
    assert finished.exists() and all(run.finished > run.started for run in finished)
    assert services.demo_history_backfill() == 0  # never twice


def test_a_gpu_quiet_for_less_than_the_idle_duration_is_followed_until_it_is_idle(cluster, actor, settings):
    """A pod that began 100 s before the first round: quiet since it began, idle 300 s after, not before."""
    settings.GPUPOOL = {**settings.GPUPOOL, "IDLE_SECONDS": 300, "IDLE_THRESHOLD_PERCENT": 0}
    name = named(Behaviour.IDLE, "young")
    young = pod(name, node="node-a", gpu=1, namespace="team-a")
    young["metadata"]["creationTimestamp"] = datetime.fromtimestamp(T0 - 100, tz=UTC).isoformat().replace("+00:00", "Z")
    backend = cluster([node("node-a"), young])
    Backend.objects.filter(pk=backend.pk).update(kind="simulated")
    backend.refresh_from_db()
    for offset in (0, 60, 120, 180):
        result = services.utilization_record(backend=backend, now=T0 + offset)
        assert (result["quiet"], result["idle"]) == (1, 0), offset
        assert selectors.idle_workloads(user=SYSTEM, now=datetime.fromtimestamp(T0 + offset, tz=UTC)) == []
    [row] = QuietGpu.objects.all()
    assert row.quiet_since.timestamp() == T0 - 100
    result = services.utilization_record(backend=backend, now=T0 + 200)
    assert (result["quiet"], result["idle"]) == (1, 1)
    [workload] = selectors.idle_workloads(user=SYSTEM, now=datetime.fromtimestamp(T0 + 200, tz=UTC))
    assert (workload["pod"], workload["idle_for_seconds"]) == (name, 300)
