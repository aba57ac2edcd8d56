"""Prometheus metrics at ``/metrics``: per pool GPU numbers (idle GPUs and utilization too, pending workloads by
reason), per (department or project, pool) quota figures, per backend sync health.

Read at scrape time from the same selectors as every page and ``poolctl``, so the numbers agree. They
name every pool and backend, so only a principal holding ``READ_METRICS`` (built-in role
``osmo-metrics``) gets them: Prometheus scrapes with a service account's token (docs/metrics.md).
"""

from django.http import HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.utils import floatToGoString
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from accounts.access import SYSTEM
from pools.api.base import ApiView

from . import selectors
from .engine.verdicts import REASONS

POOL_GAUGES = (
    ("capacity", "total_capacity", "GPUs in the pool's node set (available nodes, each counted once)"),
    ("usage", "total_usage", "GPUs requested by the pool's non-terminated pods"),
    ("free", "total_free", "GPUs free in the pool's node set"),
    (
        "used_on_nodes",
        "used_on_nodes",
        "GPUs pods of any pool hold on the pool's node set (used_on_nodes + free = capacity)",
    ),
    ("quota_used", "quota_used", "GPUs of the pool's non-preemptible pods"),
    ("quota_limit", "quota_limit", "The pool's GPU quota (guarantee, or the node set's capacity)"),
    ("quota_free", "quota_free", "The pool's quota left: max(0, quota_limit - quota_used)"),
)
# Per (department or project, pool): the figures of ``quota_figures`` (SEMANTICS §9), the rows of ``poolctl quota
# list`` and ``GET /api/quotas/``. (metric suffix, row field, help)
QUOTA_GAUGES = (
    ("gpu_deserved", "deserved", "GPUs the unit deserves on the pool (-1: the whole amount being divided)"),
    ("gpu_allocated", "allocated", "GPUs of the unit's pods bound to the pool's nodes (running or starting)"),
    ("gpu_pending", "pending", "GPUs of the unit's pods waiting for a node of the pool"),
    ("gpu_request", "request", "GPUs the unit asks for on the pool: allocated + pending"),
    ("allocation_ratio", "allocation_ratio", "allocated / deserved (no sample when deserved is 0)"),
    ("gpu_over_quota", "over_quota", "GPUs allocated beyond deserved: max(0, allocated - deserved)"),
    ("gpu_fair_share", "fair_share", "The unit's fair share of the pool's GPUs, as KAI Scheduler divides them"),
    ("gpu_over_fair_share", "over_fair_share", "GPUs allocated beyond the fair share: max(0, allocated - fair share)"),
    ("usage", "usage", "The unit's past usage, 0 to 1, that time-based fair share reads (GPU-seconds over capacity)"),
)
QUOTA_LABELS = ("department", "kind", "pool", "unit")  # in prometheus_client's order: by name


class InventoryCollector:
    """Builds the metric families on every scrape; ``quota_rows`` are the scrape's ``quota_figures`` rows, read
    once for the quota series and the pending workloads' verdicts."""

    def __init__(self, quota_rows: list[dict] | None = None):
        self.quota_rows = quota_rows

    def collect(self):
        pools = selectors.pool_list(user=SYSTEM)
        for name, field, text in POOL_GAUGES:
            family = GaugeMetricFamily(f"gpupool_pool_gpu_{name}", text, labels=["pool", "backend"])
            for pool in pools:
                family.add_metric([pool["name"], pool["backend"]], pool["gpu"][field])
            yield family
        status = GaugeMetricFamily("gpupool_pool_status", "1 for the pool's current status", labels=["pool", "status"])
        for pool in pools:
            status.add_metric([pool["name"], pool["status"]], 1)
        yield status
        yield self.pending_workloads([pool["name"] for pool in pools], self.quota_rows)
        yield from self.utilization([pool["name"] for pool in pools])
        yield from self.estimate_accuracy()

        now = timezone.now()
        age = GaugeMetricFamily(
            "gpupool_backend_last_sync_age_seconds", "Seconds since the last successful contact", labels=["backend"]
        )
        duration = GaugeMetricFamily(
            "gpupool_backend_sync_duration_seconds", "Duration of the last full sync", labels=["backend"]
        )
        nodes = GaugeMetricFamily(
            "gpupool_backend_nodes", "Nodes by status: available, unavailable, cordoned", labels=["backend", "state"]
        )
        errors = GaugeMetricFamily("gpupool_backend_sync_error", "1 while the last contact failed", labels=["backend"])
        utilization_age = GaugeMetricFamily(
            "gpupool_utilization_age_seconds",
            "Seconds since the backend's GPU utilization was last read (the age of every utilization figure)",
            labels=["backend"],
        )
        for row in selectors.backend_health(user=SYSTEM):
            if row["utilization_at"]:
                utilization_age.add_metric([row["name"]], (now - row["utilization_at"]).total_seconds())
            if row["last_heartbeat"]:
                age.add_metric([row["name"]], (now - row["last_heartbeat"]).total_seconds())
            if row["last_sync_duration"] is not None:
                duration.add_metric([row["name"]], row["last_sync_duration"])
            for state, count in row["nodes"].items():
                nodes.add_metric([row["name"], state], count)
            errors.add_metric([row["name"]], 1 if row["last_sync_error"] else 0)
        yield from (age, duration, nodes, errors, utilization_age)

    @staticmethod
    def pending_workloads(pool_names: list[str], quota_rows: list[dict] | None = None) -> GaugeMetricFamily:
        """Pending workloads per pool and reason (SEMANTICS §10, ``selectors.pending_workload_counts``): a sample for
        every reason of every pool, 0 included, so that a series does not vanish when its last workload starts."""
        counts = selectors.pending_workload_counts(quota_rows=quota_rows)
        family = GaugeMetricFamily(
            "gpupool_pool_pending_workloads",
            "Workloads with a pending pod, by the reason they wait (the first failing check of their verdict)",
            labels=["pool", "reason"],
        )
        for name in pool_names:
            for reason in REASONS:
                family.add_metric([name, reason], counts.get((name, reason), 0))
        return family

    @staticmethod
    def estimate_accuracy():
        """How often the start estimates were right (SEMANTICS §10.1, ``selectors.estimate_accuracy``), per pool and
        period (1d, 7d): the workloads measured, the median relative error and the share started by the late bound
        (no sample where nothing was measured)."""
        measured = GaugeMetricFamily(
            "gpupool_start_estimates_measured",
            "Waiting workloads that started whose start the console had estimated",
            labels=["pool", "period"],
        )
        error = GaugeMetricFamily(
            "gpupool_start_estimate_median_relative_error",
            "Median of |actual wait - estimated wait| / actual wait, waits counted from the first estimate",
            labels=["pool", "period"],
        )
        bounded = GaugeMetricFamily(
            "gpupool_start_estimate_before_late_bound",
            "Share of the measured workloads that started by their estimate's late bound",
            labels=["pool", "period"],
        )
        for row in selectors.estimate_accuracy(user=SYSTEM):
            labels = [row["pool"], row["period"]]
            measured.add_metric(labels, row["started"])
            if row["median_relative_error"] is not None:
                error.add_metric(labels, row["median_relative_error"])
            if row["before_late_bound"] is not None:
                bounded.add_metric(labels, row["before_late_bound"])
        yield from (measured, error, bounded)

    @staticmethod
    def utilization(pool_names: list[str]):
        """Idle GPUs per pool (0 for a pool without any; ``pool=""``: workloads in no pool), and each pool's latest
        utilization sample (two queries)."""
        idle = dict.fromkeys(pool_names, 0) | selectors.idle_gpus_by_pool(user=SYSTEM)
        family = GaugeMetricFamily(
            "gpupool_idle_gpus",
            "GPUs held by pods and idle (at or below the threshold for the idle time)",
            labels=["pool"],
        )
        for name, gpus in sorted(idle.items()):
            family.add_metric([name], gpus)
        yield family
        latest = selectors.pool_utilization_latest(user=SYSTEM)
        utilization = GaugeMetricFamily(
            "gpupool_gpu_utilization_percent",
            "Average GPU utilization of the pool's GPUs at the latest sample, weighted by size",
            labels=["pool"],
        )
        memory = GaugeMetricFamily(
            "gpupool_gpu_memory_used_mib", "GPU memory used on the pool's GPUs at the latest sample", labels=["pool"]
        )
        for name, sample in latest.items():
            if sample["utilization"] is not None:
                utilization.add_metric([name], sample["utilization"])
            memory.add_metric([name], sample["memory_used"])
        yield from (utilization, memory)


def quota_exposition(rows: list[dict]) -> str:
    """The quota gauges in the Prometheus text format: a family per figure of ``rows`` (``quota_figures``' rows),
    a sample per (unit, pool); a figure of None (an allocation ratio without deserved GPUs) gives none.

    Written here, not through prometheus_client's families: its formatting costs some 10 µs a sample, and 550 units
    on 20 pools make 88,000 samples, a second per scrape. The labels are escaped once per row, not once per sample.
    """
    labels = ["{" + ",".join(f'{key}="{_label_value(row[key])}"' for key in QUOTA_LABELS) + "}" for row in rows]
    lines = []
    for suffix, field, text in QUOTA_GAUGES:
        name = f"gpupool_quota_{suffix}"
        lines += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
        lines += [
            f"{name}{label} {floatToGoString(row[field])}"
            for label, row in zip(labels, rows, strict=True)
            if row[field] is not None
        ]
    return "\n".join(lines) + "\n"


def _label_value(value: str) -> str:
    """A label value as the text format quotes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class AnyAccept(BaseContentNegotiation):
    """Never refuses a scraper's ``Accept`` (Prometheus asks for text or OpenMetrics): errors are JSON anyway."""

    def select_parser(self, request, parsers):
        """No body is read."""
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        """The one renderer, for error bodies; the metrics themselves are written as Prometheus text."""
        return renderers[0], renderers[0].media_type


class MetricsView(ApiView, APIView):
    """``GET /metrics``: the Prometheus text format, to a holder of ``READ_METRICS``.

    Credentials as for the API (a personal access token or a Keycloak access token as ``Authorization:
    Bearer``, or a session): without one, 401 with ``WWW-Authenticate: Bearer realm="api"``; with one whose
    roles lack the permission, 403 (the gate, ``DoorPermission``); both in the API's error shape.
    """

    doors = {"GET": "metrics.scrape"}
    renderer_classes = [JSONRenderer]
    content_negotiation_class = AnyAccept

    def get(self, request):
        """Every pool's GPU numbers, every unit's quota figures and every backend's sync health, read now."""
        registry = CollectorRegistry(auto_describe=False)
        rows = selectors.quota_figures(user=SYSTEM)
        registry.register(InventoryCollector(rows))
        quotas = quota_exposition(rows)
        return HttpResponse(generate_latest(registry) + quotas.encode(), content_type=CONTENT_TYPE_LATEST)
