"""Usage history: a sample per pool, per GPU product and per pool's quotas each minute, compacted to hourly averages.

Minute samples are kept for two days, hourly ones for 90 days (``usage_history_compact``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Avg
from django.db.models.functions import TruncHour
from django.utils import timezone

from accounts.access import SYSTEM as SYSTEM_PRINCIPAL
from pools import selectors
from pools.models import UsageSample

from .project_usage import project_usage_compact, project_usage_record
from .workload_runs import workload_runs_compact, workload_runs_record

MINUTE_RETENTION = timedelta(days=2)
HOUR_RETENTION = timedelta(days=90)


def usage_sample_record(*, at: datetime | None = None) -> int:
    """Store this minute's sample of every pool, GPU product and pool's quotas (once a minute; repeats are ignored)."""
    at = (at or timezone.now()).replace(second=0, microsecond=0)
    pools = selectors.pool_list(with_ids=True, user=SYSTEM_PRINCIPAL)
    samples = [
        UsageSample(
            scope=UsageSample.Scope.POOL,
            key=row["name"],
            backend_id=row["backend_id"],
            at=at,
            used=row["gpu"]["used_on_nodes"],  # with ``capacity``, what the pool's bar shows (SEMANTICS §6.1)
            capacity=row["gpu"]["total_capacity"],
            quota_used=row["gpu"]["quota_used"],
            quota_limit=row["gpu"]["quota_limit"],
        )
        for row in pools
    ]
    samples += [
        UsageSample(
            scope=UsageSample.Scope.PRODUCT,
            key=row["gpu_product"],
            backend_id=row["backend_id"],
            at=at,
            used=row["used"],
            capacity=row["capacity"],
        )
        for row in selectors.gpu_product_usage()
    ]
    backends = {row["name"]: row["backend_id"] for row in pools}
    samples += [
        UsageSample(
            scope=UsageSample.Scope.QUOTA,
            key=row["pool"],
            backend_id=backends[row["pool"]],
            at=at,
            used=row["allocated"],
            capacity=row["capacity"],
            quota_used=row["allocated"],
            quota_limit=row["deserved"],
        )
        for row in selectors.quota_pool_totals()
        if row["pool"] in backends
    ]
    UsageSample.objects.bulk_create(samples, ignore_conflicts=True, batch_size=1000)
    project_usage_record(at=at)  # time-based fair share's minute (SEMANTICS §9.3)
    workload_runs_record(at=at)  # the runs start estimates learn from, the starts they are measured by (§10.1)
    return len(samples)


def history_compact(model, *, keys: tuple[str, ...], figures: tuple[str, ...], now: datetime | None = None) -> dict:
    """Average the finished hours of ``model``'s minute samples into hourly ones (one per ``keys`` and hour, each of
    ``figures`` averaged) and drop samples past their retention: minutes after ``MINUTE_RETENTION``, hours after
    ``HOUR_RETENTION``. The one compaction of every sampled history (usage, utilization)."""
    now = now or timezone.now()
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    minutes = model.objects.filter(
        resolution=UsageSample.Resolution.MINUTE, at__lt=this_hour, at__gte=this_hour - MINUTE_RETENTION
    )
    hourly = (
        minutes.annotate(hour=TruncHour("at"))
        .values(*keys, "hour")
        .annotate(**{figure: Avg(figure) for figure in figures})
    )
    created = model.objects.bulk_create(
        [
            model(
                **{key: row[key] for key in keys},
                **{figure: row[figure] for figure in figures},
                resolution=UsageSample.Resolution.HOUR,
                at=row["hour"],
            )
            for row in hourly
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    expired = model.objects.filter(resolution=UsageSample.Resolution.MINUTE, at__lt=now - MINUTE_RETENTION).delete()[0]
    expired += model.objects.filter(resolution=UsageSample.Resolution.HOUR, at__lt=now - HOUR_RETENTION).delete()[0]
    return {"hourly": len(created), "expired": expired}


def usage_history_compact(*, now: datetime | None = None) -> dict:
    """Average finished hours of usage samples into hourly ones; drop samples past their retention (and the
    projects' minutes past every fair-share window)."""
    project_usage_compact(now=now)
    workload_runs_compact(now=now)
    return history_compact(
        UsageSample,
        keys=("scope", "key", "backend_id"),
        figures=("used", "capacity", "quota_used", "quota_limit"),
        now=now,
    )
