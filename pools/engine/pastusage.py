"""Past usage for time-based fair share (SEMANTICS §9.3): each unit's allocated GPU-seconds over a window, divided by
the backend's GPU capacity-seconds over the same window, each sample counting ``0.5^(age / half_life)`` when there is
a half-life.

The history is a list of samples, one per recorded minute: its start (seconds since the epoch), the seconds it
stands for, the backend's capacity then and each project's allocated GPUs then. ``usage_over`` reads a whole
history (what a planner's what-if does, and the reference); ``UsageSums`` keeps the two sums of one window and
half-life as samples come and go, so that reading them costs one small record whatever the history's length.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .errors import DurationError, Problem
from .quantities import format_duration, parse_duration

# A sum this close to zero is zero: what adding and then removing the same samples leaves of a float.
NEGLIGIBLE = 1e-9
USAGE_PLACES = 6


# A backend's ``fair_share`` settings: what the scheduler's ``usageParams`` say, and how far back this console keeps
# the minutes they read.
DEFAULT_SETTINGS = {"k_value": 0, "window": "7d", "half_life": None}
MIN_WINDOW = 3600
MAX_WINDOW = 30 * 86400
MIN_HALF_LIFE = 60
MAX_HALF_LIFE = 365 * 86400
MAX_K = 1000


class Settings(NamedTuple):
    """A backend's ``fair_share`` settings read: ``k`` (0 or above), ``window`` and ``half_life`` in seconds."""

    k: float
    window: int
    half_life: int | None


def read_settings(value: Any, where: str = "fair_share") -> tuple[dict, Settings, list[Problem]]:
    """A backend's ``fair_share`` document: ``{"k_value": number, "window": duration, "half_life": duration or
    null}``, each optional (``DEFAULT_SETTINGS``). Returns it normalized (durations written back compactly), read,
    and its problems, each at its path. ``k_value`` may be any number from -1000 to 1000; at or below 0 it counts as
    0, as §9.3 says."""
    problems: list[Problem] = []
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return dict(DEFAULT_SETTINGS), Settings(0.0, 7 * 86400, None), [Problem(where, "must be a JSON object")]
    for key in value:
        if key not in DEFAULT_SETTINGS:
            problems.append(Problem(_path(where, key), 'unknown field; expected "k_value", "window" or "half_life"'))
    k_value = value.get("k_value", 0)
    if k_value is None:
        k_value = 0
    if (
        isinstance(k_value, bool)
        or not isinstance(k_value, (int, float))
        or not math.isfinite(k_value)
        or abs(k_value) > MAX_K
    ):
        problems.append(Problem(_path(where, "k_value"), f"must be a number from -{MAX_K} to {MAX_K}"))
        k_value = 0
    window, window_text = _duration(
        value.get("window", "7d") or "7d", _path(where, "window"), MIN_WINDOW, MAX_WINDOW, problems
    )
    half_life, half_life_text = None, None
    if value.get("half_life") not in (None, "", 0):
        half_life, half_life_text = _duration(
            value["half_life"], _path(where, "half_life"), MIN_HALF_LIFE, MAX_HALF_LIFE, problems
        )
    normalized = {"k_value": k_value, "window": window_text or "7d", "half_life": half_life_text}
    return normalized, Settings(max(0.0, float(k_value)), window or 7 * 86400, half_life), problems


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _duration(value: Any, path: str, minimum: int, maximum: int, problems: list[Problem]) -> tuple[int | None, str]:
    try:
        seconds = int(parse_duration(value).total_seconds())
    except DurationError as exc:
        problems.append(Problem(path, str(exc)))
        return None, ""
    if not minimum <= seconds <= maximum:
        problems.append(
            Problem(path, f"must be from {format_duration_seconds(minimum)} to {format_duration_seconds(maximum)}")
        )
        return None, ""
    return seconds, format_duration_seconds(seconds)


def format_duration_seconds(seconds: int) -> str:
    return format_duration(datetime.timedelta(seconds=seconds))


class Sample(NamedTuple):
    """One recorded moment: ``at`` (seconds since the epoch), the ``seconds`` it stands for, the backend's GPU
    ``capacity`` and each project's ``allocated`` GPUs."""

    at: int
    seconds: int
    capacity: float
    allocated: Mapping[str, float]


def weight(age: float, half_life: int | None) -> float:
    """How much a sample ``age`` seconds old counts: 1 without a half-life, else ``0.5^(age / half_life)``."""
    return 1.0 if not half_life else 0.5 ** (age / half_life)


def inside(at: int, now: int, window: int) -> bool:
    """Whether a sample recorded at ``at`` is inside the window that ends with the sample at ``now``."""
    return now - window < at <= now


def usage_over(samples: Iterable[Sample], *, now: int, window: int, half_life: int | None) -> dict[str, float]:
    """Each project's usage (0 to 1) over the samples inside the window ending at ``now``: the literal §9.3 sums."""
    capacity = 0.0
    allocated: dict[str, float] = {}
    for sample in samples:
        if not inside(sample.at, now, window):
            continue
        counts = weight(now - sample.at, half_life) * sample.seconds
        capacity += sample.capacity * counts
        for name, gpus in sample.allocated.items():
            allocated[name] = allocated.get(name, 0.0) + gpus * counts
    return ratios(allocated, capacity)


def ratios(allocated: Mapping[str, float], capacity: float) -> dict[str, float]:
    """``allocated / capacity`` per project, within 0 to 1, to ``USAGE_PLACES`` places (nothing used: none)."""
    if capacity <= NEGLIGIBLE:
        return {}
    return {
        name: round(min(1.0, gpu_seconds / capacity), USAGE_PLACES)
        for name, gpu_seconds in allocated.items()
        if gpu_seconds > NEGLIGIBLE
    }


@dataclass
class UsageSums:
    """The two sums of §9.3 for one ``window`` and ``half_life`` (seconds), weighted as of ``through`` (the last
    sample folded in; None before the first): a backend's capacity-seconds and each project's GPU-seconds."""

    window: int
    half_life: int | None
    through: int | None = None
    capacity: float = 0.0
    allocated: dict[str, float] = field(default_factory=dict)

    def add(self, sample: Sample, leaving: Iterable[Sample] = ()) -> None:
        """Fold in ``sample`` (later than ``through``) and take out ``leaving``: the samples folded in earlier that
        the window, now ending at ``sample.at``, no longer holds. Every sum is decayed to the new moment first, so
        the result equals ``usage_over`` of the samples inside."""
        if self.through is not None:
            if sample.at <= self.through:
                raise ValueError(f"sample at {sample.at} is not after {self.through}")
            decay = weight(sample.at - self.through, self.half_life)
            if decay != 1.0:
                self.capacity *= decay
                self.allocated = {name: value * decay for name, value in self.allocated.items()}
        self.through = sample.at
        self._fold(sample, 1.0)
        for old in leaving:
            self._fold(old, -weight(sample.at - old.at, self.half_life))
        self.allocated = {name: value for name, value in self.allocated.items() if value > NEGLIGIBLE}
        if self.capacity < NEGLIGIBLE:
            self.capacity = 0.0

    def _fold(self, sample: Sample, counts: float) -> None:
        counts *= sample.seconds
        self.capacity += sample.capacity * counts
        allocated = self.allocated
        for name, gpus in sample.allocated.items():
            allocated[name] = allocated.get(name, 0.0) + gpus * counts

    def usage(self, *, now: int | None = None) -> dict[str, float]:
        """Each project's usage; nothing when the last sample folded in is already out of the window at ``now``
        (nothing was recorded for that long). Read later than ``through``, the weights shrink alike on both sides
        of the ratio, so the usage is the same."""
        if self.through is None or (now is not None and not inside(self.through, now, self.window)):
            return {}
        return ratios(self.allocated, self.capacity)


def usage_streamed(samples: Iterable[Sample], *, now: int, window: int, half_life: int | None) -> dict[str, float]:
    """``usage_over`` for samples read oldest first, one at a time: folded as they come, never held together."""
    sums = UsageSums(window=window, half_life=half_life)
    for sample in samples:
        if inside(sample.at, now, window):
            sums.add(sample)
    return sums.usage(now=now)
