"""GPU utilization: quiet and idle GPUs, the utilization distribution, and GPU-hours consumed.

Pure functions over numbers the callers read from Prometheus (DCGM exporter series) and from the inventory; no
Django, no I/O. Times are epoch seconds; utilization is in percent (0-100).

Devices: a physical GPU, a MIG instance or a time-sliced share is one device, named by ``device_name`` and counted
as ``device_share`` GPUs (a MIG instance its compute slices of seven, a share one GPU divided by its replicas).

Idle GPUs (Run:ai's definition): a GPU allocated to a pod whose utilization stayed at or below ``threshold``
(default 0 %) for at least ``duration`` (default 300 s). A device is *quiet* while its samples are at or below the
threshold; it is idle once it has been quiet for the duration (``idle_for``). Where the quiet run began is read
from a series of samples (``quiet_since``):

* The samples at or before ``now`` count, in time order; later ones are ignored.
* The *current run* is the longest stretch of samples, ending with the latest one, whose values are all at or
  below the threshold and where no two neighbours are more than ``max_gap`` apart (default twice the scrape
  interval, 15 s). A gap longer than that breaks the run: the exporter or the scrape was down, and nothing is known
  about the time in between.
* The device has been quiet since the time of the run's first sample: a lower bound (it may have gone quiet between
  the sample before and that one, and may have been quiet before the data begins).
* A series whose latest sample is more than ``max_gap`` before ``now`` is stale: not quiet (nothing is known now).
  A NaN or infinite value is never quiet and breaks the run; a value that is not a number is an error.

The distribution (Run:ai's "GPU utilization distribution") counts values in four buckets: ``0-25`` is [0, 25),
``25-50`` is [25, 50), ``50-75`` is [50, 75) and ``75-100`` is [75, 100]: every bucket holds its lower bound,
the last one also 100.

Consumption (``period_gpu_hours``): GPU-hours allocated and idle-allocated per group over one period in which each
pod held its GPUs throughout (one round of readings): a pod's GPUs count for the whole period; a quiet device counts
as idle from the moment it had been quiet for the duration, never before the period begins, so idle never exceeds
allocated and the groups add up to the total.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from .errors import ConfigError

DEFAULT_THRESHOLD = 0  # %
DEFAULT_DURATION = 300  # seconds: Run:ai's default
DEFAULT_STEP = 15  # seconds: a usual scrape interval
BUCKETS = ("0-25", "25-50", "50-75", "75-100")
GROUP_KEYS = ("pool", "user", "namespace", "project")

Number = int | float | Decimal | Fraction


# -- devices ---------------------------------------------------------------------------------------------------------

MIG_SLICES_PER_GPU = 7


def device_name(uuid: str, instance: str = "", vgpu: str = "") -> str:
    """A device's name: the GPU's UUID, with ``/mig<instance>`` for a MIG instance or ``/share<vgpu>`` for a
    time-sliced share (``GPU-1a2b.../mig3``)."""
    if instance:
        return f"{uuid}/mig{instance}"
    if vgpu:
        return f"{uuid}/share{vgpu}"
    return uuid


def device_share(*, mig_profile: str = "", replicas: int = 1) -> float:
    """How many GPUs a device is: a MIG instance ``<n>g.<memory>`` is n of the GPU's seven compute slices, a
    time-sliced share is one of ``replicas`` (a number below 2 is a whole GPU), anything else one GPU."""
    if mig_profile:
        slices, _, _ = mig_profile.partition("g.")
        if slices.isdigit() and 0 < int(slices) <= MIG_SLICES_PER_GPU:
            return int(slices) / MIG_SLICES_PER_GPU
        return 1 / MIG_SLICES_PER_GPU
    return 1 / replicas if replicas > 1 else 1.0


# -- idle GPUs -----------------------------------------------------------------------------------------------------


def _check_threshold(threshold: Number) -> None:
    if not _finite(threshold) or not 0 <= threshold <= 100:
        raise ConfigError("The utilization threshold must be between 0 and 100 %.", "threshold")


def _finite(value: object) -> bool:
    """A real number that is not NaN or infinite (a bool is not a number here)."""
    kind = type(value)  # the usual cases first: a round checks every device's figures
    if kind is float:
        return math.isfinite(value)
    if kind is int:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | Fraction):
        return False
    if isinstance(value, Decimal):
        return value.is_finite()
    return not isinstance(value, float) or math.isfinite(value)


def quiet_since(
    samples: Sequence[tuple[float, float]],
    now: float,
    *,
    threshold: Number = DEFAULT_THRESHOLD,
    max_gap: float = 2 * DEFAULT_STEP,
) -> float | None:
    """The time of the first sample of the current quiet run (at or below ``threshold``), or None when there is
    none now: no sample, a stale series, a latest value above the threshold. See the module docstring."""
    _check_threshold(threshold)
    if not _finite(max_gap) or max_gap <= 0:
        raise ConfigError("The longest gap between samples must be positive.", "max_gap")
    end = len(samples)
    while end and samples[end - 1][0] > now:
        end -= 1
    if not end or now - samples[end - 1][0] > max_gap:
        return None
    start = None
    later = None
    for index in range(end - 1, -1, -1):
        when, value = samples[index]
        if later is not None and when > later:
            raise ConfigError("The samples of a series must be in time order.", "samples")
        if later is not None and later - when > max_gap:
            break
        if not _quiet(value, threshold):
            break
        start = later = when
    return start


def _quiet(value: object, threshold: Number) -> bool:
    if _finite(value):
        return value <= threshold  # type: ignore[operator]
    if isinstance(value, float | Decimal):
        return False  # NaN or infinite: nothing is known of that moment
    raise ConfigError(f"A utilization must be a number, not {value!r}.", "samples")


def idle_for(quiet_since: float | None, now: float, *, duration: float = DEFAULT_DURATION) -> float | None:
    """How long a device quiet since ``quiet_since`` has been idle at ``now``: ``now - quiet_since`` once that is at
    least ``duration`` (exactly ``duration`` counts), else None (not idle yet, or not quiet)."""
    if not _finite(duration) or duration < 0:
        raise ConfigError("The idle duration must not be negative.", "duration")
    if quiet_since is None:
        return None
    quiet = now - quiet_since
    return quiet if quiet >= duration else None


# -- the distribution ----------------------------------------------------------------------------------------------


def utilization_bucket(value: Number) -> str:
    """The bucket of a utilization (%): ``0-25`` [0, 25), ``25-50`` [25, 50), ``50-75`` [50, 75), ``75-100``
    [75, 100]. Raises ConfigError for a value outside 0-100 or not a number."""
    if not _finite(value) or not 0 <= value <= 100:
        raise ConfigError(f"A GPU utilization must be between 0 and 100 %, not {value!r}.", "utilization")
    return BUCKETS[0] if value < 25 else BUCKETS[1] if value < 50 else BUCKETS[2] if value < 75 else BUCKETS[3]


def utilization_distribution(values: Iterable[Number]) -> dict[str, int]:
    """How many of ``values`` (one utilization % per GPU) fall in each bucket (see ``utilization_bucket``)."""
    counts = dict.fromkeys(BUCKETS, 0)
    for value in values:
        counts[utilization_bucket(value)] += 1
    return counts


# -- consumption ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Holding:
    """A pod's GPUs over a period: ``gpus`` held throughout, and ``quiet`` devices as (GPUs, quiet since) pairs.

    ``group`` is what its hours are counted under: a tuple of values, one per key the caller groups by.
    """

    group: tuple[str, ...]
    gpus: float
    quiet: Sequence[tuple[float, float]] = ()


@dataclass(frozen=True)
class GpuHours:
    """GPU-hours allocated and idle-allocated (``idle <= allocated``)."""

    allocated: float = 0.0
    idle: float = 0.0

    def __add__(self, other: GpuHours) -> GpuHours:
        return GpuHours(self.allocated + other.allocated, self.idle + other.idle)


def period_gpu_hours(
    holdings: Iterable[Holding], *, since: float, until: float, duration: float = DEFAULT_DURATION
) -> dict[tuple[str, ...], GpuHours]:
    """GPU-hours allocated and idle-allocated in [since, until) per group (see the module docstring).

    A quiet device is idle from ``quiet_since + duration`` (or ``since``, if later) to ``until``; a pod's idle hours
    never exceed its allocated ones. Raises ConfigError for a period that ends before it begins, negative GPUs or a
    negative duration.
    """
    if not (_finite(since) and _finite(until)) or until < since:
        raise ConfigError("The period's start must not be after its end.", "since")
    if not _finite(duration) or duration < 0:
        raise ConfigError("The idle duration must not be negative.", "duration")
    hours = (until - since) / 3600
    groups: dict[tuple[str, ...], GpuHours] = {}
    for holding in holdings:
        if not _finite(holding.gpus) or holding.gpus < 0:
            raise ConfigError("A pod must not hold negative GPUs.", "gpus")
        idle = 0.0
        for gpus, quiet_since in holding.quiet:
            if not _finite(gpus) or gpus < 0:
                raise ConfigError("A quiet device must not count negative GPUs.", "gpus")
            idle += gpus * max(0.0, until - max(since, quiet_since + duration)) / 3600
        allocated = holding.gpus * hours
        found = GpuHours(allocated, min(idle, allocated))
        groups[holding.group] = groups.get(holding.group, GpuHours()) + found
    return groups
