"""Time-based fair share's history (SEMANTICS §9.3): what each backend's projects held, minute by minute, and the
two sums its fair share reads, kept as the minutes come.

``project_usage_record`` runs with the usage sample every minute (``usage_sample_record``): one row per backend,
then that backend's sums folded forward in the same transaction, under a lock on its sums row so that two workers
recording the same minute neither fold it twice nor lose one. ``project_usage_compact`` drops minutes no window
reads any more.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from pools import selectors
from pools.engine import pastusage
from pools.models import Backend, ProjectUsageMinute, ProjectUsageSums

# What a planner's what-if reads back (last week's usage) whatever the backends' own windows.
WHAT_IF_WINDOW = 7 * 86400


def project_usage_record(*, at: datetime | None = None, seconds: int = 60) -> int:
    """Record this minute's allocations of every backend's projects and fold them into the backend's sums. A minute
    already recorded is left as it is. Returns the number of backends recorded."""
    at = (at or timezone.now()).replace(second=0, microsecond=0)
    found = selectors.project_allocations()
    recorded = 0
    for backend_id, settings in Backend.objects.order_by("pk").values_list("pk", "fair_share"):
        capacity, allocated = found.get(backend_id, (0.0, {}))
        sample = pastusage.Sample(int(at.timestamp()), seconds, capacity, allocated)
        recorded += _record(backend_id, sample, pastusage.read_settings(settings)[1])
    return recorded


def _record(backend_id: int, sample: pastusage.Sample, settings: pastusage.Settings) -> int:
    """The backend's minute written once, and each of its sums folded forward: the backend's own settings' and the
    planner's week. Sums of settings no longer wanted go; new ones are counted from the minutes."""
    wanted = {(settings.window, settings.half_life or 0), (WHAT_IF_WINDOW, 0)}
    ProjectUsageSums.objects.bulk_create(
        [ProjectUsageSums(backend_id=backend_id, window=window, half_life=half_life) for window, half_life in wanted],
        ignore_conflicts=True,
    )
    at = _moment(sample.at)
    with transaction.atomic():
        rows = list(ProjectUsageSums.objects.select_for_update().filter(backend_id=backend_id).order_by("pk"))
        # A minute recorded already (another worker's, a demo's backfill) is kept as it is; sums behind it still
        # catch up with it.
        recorded = ProjectUsageMinute.objects.filter(backend_id=backend_id, at=at).exists()
        if not recorded:
            ProjectUsageMinute.objects.create(
                backend_id=backend_id,
                at=at,
                seconds=sample.seconds,
                capacity=sample.capacity,
                allocated=sample.allocated,
            )
        for row in rows:
            if (row.window, row.half_life) not in wanted:
                row.delete()
                continue
            sums = _kept(row)
            if recorded and sums.through is not None and sums.through >= sample.at:
                continue  # folded in already
            if recorded or sums.through is None or sample.at <= sums.through:
                # New settings, a clock that went back, a minute recorded by someone else: the window's minutes
                # counted again.
                sums = pastusage.UsageSums(row.window, row.half_life or None)
                for minute in _minutes(backend_id, since=sample.at - row.window, until=sample.at):
                    sums.add(minute)
            else:
                sums.add(sample, _minutes(backend_id, since=sums.through - row.window, until=sample.at - row.window))
            row.through, row.capacity, row.allocated = _moment(sums.through), sums.capacity, sums.allocated
            row.save(update_fields=["through", "capacity", "allocated"])
    return 0 if recorded else 1


def _kept(row: ProjectUsageSums) -> pastusage.UsageSums:
    return pastusage.UsageSums(
        window=row.window,
        half_life=row.half_life or None,
        through=int(row.through.timestamp()) if row.through else None,
        capacity=row.capacity,
        allocated=dict(row.allocated),
    )


def _moment(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _minutes(backend_id: int, *, since: int, until: int) -> list[pastusage.Sample]:
    """The backend's recorded minutes after ``since`` and up to ``until`` (seconds since the epoch), oldest first."""
    return selectors.project_usage_minutes(backend_id, since=_moment(since), until=_moment(until))


def project_usage_compact(*, now: datetime | None = None) -> int:
    """Drop the minutes that no backend's window (nor a planner's week) reads any more. Returns how many."""
    now = now or timezone.now()
    longest = max(
        [WHAT_IF_WINDOW]
        + [pastusage.read_settings(value)[1].window for value in Backend.objects.values_list("fair_share", flat=True)]
    )
    return ProjectUsageMinute.objects.filter(at__lte=now - timedelta(seconds=longest + 3600)).delete()[0]
