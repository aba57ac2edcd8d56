"""Time-based fair share's usage (SEMANTICS §9.3): each project's share of its backend's GPU-seconds, from the sums
the worker keeps (``services.project_usage_record``), or from the recorded minutes for other settings (a planner's
what-if, settings just changed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from django.utils import timezone

from ..engine import pastusage
from ..engine.errors import ConfigError, Problem
from ..models import ProjectUsageMinute, ProjectUsageSums


def project_usage_minutes(backend_id: int, *, since: datetime, until: datetime) -> Iterator[pastusage.Sample]:
    """The backend's recorded minutes after ``since`` and up to ``until``, oldest first, as the engine's samples:
    read in chunks, so that a week of 550 projects' minutes is never held at once."""
    rows = (
        ProjectUsageMinute.objects.filter(backend_id=backend_id, at__gt=since, at__lte=until)
        .order_by("at")
        .values_list("at", "seconds", "capacity", "allocated")
    )
    for at, seconds, capacity, allocated in rows.iterator(chunk_size=500):
        yield pastusage.Sample(int(at.timestamp()), seconds, capacity, allocated)


def project_usage(
    settings: dict[int, pastusage.Settings], *, now: datetime | None = None
) -> dict[int, dict[str, float]]:
    """Each backend's projects' usage (0 to 1; a project without any is left out) under ``settings`` (backend id ->
    its window and half-life), as of ``now``. One query for the kept sums; a backend whose sums were kept for
    other settings only (settings just changed, a planner's what-if) is read from its minutes (one more query
    each); one never recorded has none."""
    now = now or timezone.now()
    moment = int(now.timestamp())
    found: dict[int, dict[str, float]] = {}
    kept = {
        (row.backend_id, row.window, row.half_life): row
        for row in ProjectUsageSums.objects.filter(backend_id__in=list(settings), through__isnull=False)
    }
    recorded = {backend_id for backend_id, _, _ in kept}
    for backend_id, wanted in settings.items():
        row = kept.get((backend_id, wanted.window, wanted.half_life or 0))
        if backend_id not in recorded:
            found[backend_id] = {}  # nothing recorded yet (the worker's first minute makes its sums)
        elif row is not None:
            sums = pastusage.UsageSums(
                row.window, row.half_life or None, int(row.through.timestamp()), row.capacity, row.allocated
            )
            found[backend_id] = sums.usage(now=moment)
        else:
            samples = project_usage_minutes(
                backend_id, since=datetime.fromtimestamp(moment - wanted.window, tz=UTC), until=now
            )
            found[backend_id] = pastusage.usage_streamed(
                samples, now=moment, window=wanted.window, half_life=wanted.half_life
            )
    return found


def fair_share_what_if(k_value=None, window=None, half_life=None) -> pastusage.Settings | None:
    """A planner's what-if settings (§9.3) as a query string or a command line gives them: ``k_value`` (a number),
    ``window`` (default a week: "last week's usage") and ``half_life`` (none by default). None when none is given;
    ``ConfigError`` naming each bad one (the API's 400, the page's message, the CLI's error)."""
    given = {key: value for key, value in (("k_value", k_value), ("window", window), ("half_life", half_life))}
    given = {key: value for key, value in given.items() if value not in (None, "")}
    if not given:
        return None
    if isinstance(given.get("k_value"), str):
        try:
            given["k_value"] = float(given["k_value"])
        except ValueError:
            raise ConfigError([Problem("k_value", f"must be a number from -{pastusage.MAX_K} to {pastusage.MAX_K}")])
    _, settings, problems = pastusage.read_settings(given, "")
    if problems:
        raise ConfigError(problems)
    return settings
