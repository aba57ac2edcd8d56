"""GPU utilization: idle allocated GPUs, the utilization distribution, and GPU-hours consumed (issue 13).

Pure functions over numbers the callers read from Prometheus (DCGM exporter series) and from the inventory; no
Django, no I/O. Times are epoch seconds (int, float, Decimal or Fraction); utilization is in percent (0-100).

Idle GPUs (Run:ai's definition): a GPU allocated to a pod whose utilization stayed at or below ``threshold``
(default 0 %) for at least ``duration`` (default 300 s). How a series is read:

* The samples at or before ``now`` count, in time order; later ones are ignored.
* The *current run* is the longest stretch of samples, ending with the latest one, whose values are all at or
  below the threshold and where no two neighbours are more than ``max_gap`` apart (default twice ``step``, the
  scrape interval or query step, 15 s). A gap longer than that breaks the run: the exporter or the scrape was
  down, and nothing is known about the time in between.
* The GPU is idle for ``now`` minus the time of the run's first sample: a lower bound (the GPU may have gone
  quiet between the sample before and that one, and may have been quiet before the data begins). It is idle when
  that is at least ``duration`` (exactly ``duration`` counts).
* A series whose latest sample is more than ``max_gap`` before ``now`` is stale: not idle (nothing is known
  now). A NaN or infinite value is never idle and breaks the run; a value that is not a number is an error.
* A series without a pod is an unallocated GPU: never idle (idleness is about GPUs a workload holds and does
  not use). A GPU that changed hands is one series per pod, as the exporter's ``pod`` label makes it.

The distribution (Run:ai's "GPU utilization distribution") counts values in four buckets: ``0-25`` is [0, 25),
``25-50`` is [25, 50), ``50-75`` is [50, 75) and ``75-100`` is [75, 100]: every bucket holds its lower bound,
the last one also 100.

Devices: a physical GPU, a MIG instance or a time-sliced share is one device, named by ``device_name`` and counted
as ``device_share`` GPUs (a MIG instance its compute slices of seven, a share one GPU divided by its replicas).

Consumption: GPU-hours allocated and idle-allocated GPU-hours per group (pool, user, namespace or project, or a
tuple of them) over a period [since, until). Allocations and idle intervals are clipped to the period, an idle
interval also to its allocation; at any moment a pod's idle GPUs count at most its allocated GPUs, so idle never
exceeds allocated. Arithmetic is exact (``Fraction``): the groups add up to the total exactly; ``GpuHours.rounded``
rounds (half away from zero) at the edge. Only allocations that overlap the period make a group.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


def device_share(*, mig_profile: str = "", replicas: int = 1) -> Fraction:
    """How many GPUs a device is: a MIG instance ``<n>g.<memory>`` is n of the GPU's seven compute slices, a
    time-sliced share is one of ``replicas`` (a number below 2 is a whole GPU), anything else one GPU."""
    if mig_profile:
        slices, _, _ = mig_profile.partition("g.")
        if slices.isdigit() and 0 < int(slices) <= MIG_SLICES_PER_GPU:
            return Fraction(int(slices), MIG_SLICES_PER_GPU)
        return Fraction(1, MIG_SLICES_PER_GPU)
    return Fraction(1, replicas) if replicas > 1 else Fraction(1)


# -- idle GPUs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuSeries:
    """One allocated GPU's utilization over time: ``samples`` are (t, utilization %) pairs in time order.

    ``gpu`` names the device (a UUID, with the MIG instance or share when there is one); ``pod`` is empty for a
    GPU no pod holds. A GPU that changed hands is two series, one per pod.
    """

    gpu: str
    namespace: str
    pod: str
    samples: Sequence[tuple[float, float]]
    user: str = ""
    pool: str = ""


@dataclass(frozen=True)
class IdleGpu:
    """An allocated GPU idle at ``now``: quiet since ``idle_since`` (the current run's first sample)."""

    gpu: str
    namespace: str
    pod: str
    user: str
    pool: str
    idle_since: float
    idle_for: float  # seconds: now - idle_since


@dataclass(frozen=True)
class IdleWorkload:
    """A workload (namespace/pod) with idle GPUs: how many of the GPUs seen for it are idle.

    ``idle_for`` is the shortest idle time of its idle GPUs: how long all of them have been idle.
    """

    namespace: str
    pod: str
    user: str
    pool: str
    idle_gpus: int
    gpus: int
    idle_for: float

    @property
    def fully_idle(self) -> bool:
        return self.idle_gpus == self.gpus


@dataclass(frozen=True)
class IdleReport:
    """The idle GPUs (by namespace, pod, GPU) and their workloads (by namespace, pod)."""

    gpus: tuple[IdleGpu, ...]
    workloads: tuple[IdleWorkload, ...]

    @property
    def idle_gpu_count(self) -> int:
        return len(self.gpus)


def _check_threshold(threshold: Number) -> None:
    if not _finite(threshold) or not 0 <= threshold <= 100:
        raise ConfigError("The utilization threshold must be between 0 and 100 %.", "threshold")


def _finite(value: object) -> bool:
    """A real number that is not NaN or infinite (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | Fraction):
        return False
    if isinstance(value, Decimal):
        return value.is_finite()
    return not isinstance(value, float) or math.isfinite(value)


def idle_since(
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


def idle_gpus(
    series: Iterable[GpuSeries],
    now: float,
    *,
    threshold: Number = DEFAULT_THRESHOLD,
    duration: float = DEFAULT_DURATION,
    step: float = DEFAULT_STEP,
    max_gap: float | None = None,
) -> IdleReport:
    """The allocated GPUs idle at ``now``: quiet (at or below ``threshold`` %) for at least ``duration`` seconds.

    ``step`` is the scrape interval (or query step); a gap of more than ``max_gap`` (default ``2 * step``)
    between samples breaks a quiet run. Raises ConfigError for a threshold outside 0-100, a negative duration,
    a step or gap that is not positive, samples out of time order.
    """
    _check_threshold(threshold)
    if not _finite(duration) or duration < 0:
        raise ConfigError("The idle duration must not be negative.", "duration")
    if not _finite(step) or step <= 0:
        raise ConfigError("The step must be positive.", "step")
    max_gap = 2 * step if max_gap is None else max_gap
    idle: list[IdleGpu] = []
    seen: dict[tuple[str, str], list] = {}  # (namespace, pod) -> [user, pool, GPUs seen]
    for one in series:
        if not one.pod:
            continue
        workload = seen.setdefault((one.namespace, one.pod), [one.user, one.pool, 0])
        workload[2] += 1
        since = idle_since(one.samples, now, threshold=threshold, max_gap=max_gap)
        if since is not None and now - since >= duration:
            idle.append(IdleGpu(one.gpu, one.namespace, one.pod, one.user, one.pool, since, now - since))
    idle.sort(key=lambda gpu: (gpu.namespace, gpu.pod, gpu.gpu))
    by_workload: dict[tuple[str, str], list[IdleGpu]] = defaultdict(list)
    for gpu in idle:
        by_workload[(gpu.namespace, gpu.pod)].append(gpu)
    workloads = tuple(
        IdleWorkload(
            namespace,
            pod,
            seen[(namespace, pod)][0],
            seen[(namespace, pod)][1],
            len(gpus),
            seen[(namespace, pod)][2],
            min(gpu.idle_for for gpu in gpus),
        )
        for (namespace, pod), gpus in by_workload.items()
    )
    return IdleReport(tuple(idle), workloads)


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
class Allocation:
    """A pod holding ``gpus`` GPUs (fractions allowed: shares, MIG) from ``start`` until ``end`` (None: still)."""

    namespace: str
    pod: str
    gpus: Number
    start: Number
    end: Number | None = None
    user: str = ""
    pool: str = ""
    project: str = ""


@dataclass(frozen=True)
class IdleInterval:
    """``gpus`` GPUs of a pod idle from ``start`` until ``end`` (None: still idle).

    Intervals with the same ``gpu`` name are one device: where they overlap it counts once, as the largest
    ``gpus`` given for it (1 for a whole GPU). Intervals without one each count on their own (a pod-level
    interval of ``gpus`` GPUs).
    """

    namespace: str
    pod: str
    start: Number
    end: Number | None = None
    gpus: Number = 1
    gpu: str = ""


@dataclass(frozen=True)
class GpuHours:
    """Exact GPU-hours allocated and idle-allocated (``idle <= allocated``)."""

    allocated: Fraction = Fraction(0)
    idle: Fraction = Fraction(0)

    def __add__(self, other: GpuHours) -> GpuHours:
        return GpuHours(self.allocated + other.allocated, self.idle + other.idle)

    @property
    def idle_share(self) -> Fraction:
        """Idle GPU-hours as a share of allocated ones (0 when nothing was allocated)."""
        return self.idle / self.allocated if self.allocated else Fraction(0)

    def rounded(self, places: int = 2) -> tuple[Decimal, Decimal]:
        """(allocated, idle) rounded half-up to ``places`` decimals: for display only."""
        return _decimal(self.allocated, places), _decimal(self.idle, places)


@dataclass(frozen=True)
class ConsumptionReport:
    """GPU-hours per group over [since, until), and in all (the exact sum of the groups)."""

    by: str | tuple[str, ...]
    since: Fraction
    until: Fraction
    groups: Mapping[str | tuple[str, ...], GpuHours] = field(default_factory=dict)
    total: GpuHours = GpuHours()


def _decimal(value: Fraction, places: int) -> Decimal:
    """``value`` rounded half away from zero to ``places`` decimals, exactly (integer arithmetic, no double
    rounding)."""
    scaled = abs(value) * 10**places if places >= 0 else abs(value) / 10**-places
    quotient, remainder = divmod(scaled.numerator, scaled.denominator)
    if 2 * remainder >= scaled.denominator:
        quotient += 1
    return Decimal(-quotient if value < 0 else quotient).scaleb(-places)


def _exact(value: object, name: str) -> Fraction:
    if not _finite(value):
        raise ConfigError(f"{name} must be a finite number, not {value!r}.", name)
    return Fraction(value)  # type: ignore[arg-type]


def consumption(
    allocations: Iterable[Allocation],
    idle: Iterable[IdleInterval] = (),
    *,
    since: Number,
    until: Number,
    by: str | tuple[str, ...] = "pool",
    now: Number | None = None,
) -> ConsumptionReport:
    """GPU-hours allocated and idle-allocated in [since, until), grouped by ``by`` (one of ``GROUP_KEYS``, or a
    tuple of them: the groups are then tuples of values).

    An allocation or idle interval still open (``end`` None) runs until ``now`` when given, else ``until``.
    Idle intervals count only within an allocation of the same namespace and pod, and never for more GPUs than
    it holds. Raises ConfigError for ``since`` after ``until``, an unknown ``by``, negative GPUs, an interval
    that ends before it starts.
    """
    keys = by if isinstance(by, tuple) else (by,)
    if not keys or any(key not in GROUP_KEYS for key in keys):
        raise ConfigError(f"Group by one of {', '.join(GROUP_KEYS)}, not {by!r}.", "by")
    low, high = _exact(since, "since"), _exact(until, "until")
    if low > high:
        raise ConfigError("The period's start must not be after its end.", "since")
    open_end = high if now is None else min(high, _exact(now, "now"))

    idle_by_pod: dict[tuple[str, str], list[tuple[Fraction, Fraction, Fraction, str]]] = defaultdict(list)
    for interval in idle:
        start = _exact(interval.start, "start")
        end = open_end if interval.end is None else _exact(interval.end, "end")
        gpus = _exact(interval.gpus, "gpus")
        if end < start and interval.end is not None:
            raise ConfigError("An idle interval must not end before it starts.", "end")
        if gpus < 0:
            raise ConfigError("An idle interval must not count negative GPUs.", "gpus")
        idle_by_pod[(interval.namespace, interval.pod)].append((start, end, gpus, interval.gpu))

    groups: dict[str | tuple[str, ...], GpuHours] = {}
    for allocation in allocations:
        gpus = _exact(allocation.gpus, "gpus")
        if gpus < 0:
            raise ConfigError("An allocation must not hold negative GPUs.", "gpus")
        start = _exact(allocation.start, "start")
        end = open_end if allocation.end is None else _exact(allocation.end, "end")
        if allocation.end is not None and end < start:
            raise ConfigError("An allocation must not end before it starts.", "end")
        begin, finish = max(start, low), min(end, high)
        if finish <= begin:
            continue  # outside the period: not a group of it
        intervals = idle_by_pod.get((allocation.namespace, allocation.pod), ())
        hours = GpuHours(gpus * (finish - begin) / 3600, _idle_seconds(intervals, begin, finish, gpus) / 3600)
        values = tuple(str(getattr(allocation, key)) for key in keys)
        group = values if isinstance(by, tuple) else values[0]
        groups[group] = groups.get(group, GpuHours()) + hours
    total = sum(groups.values(), GpuHours())
    return ConsumptionReport(by, low, high, dict(sorted(groups.items())), total)


def _idle_seconds(
    intervals: Sequence[tuple[Fraction, Fraction, Fraction, str]], begin: Fraction, finish: Fraction, cap: Fraction
) -> Fraction:
    """GPU-seconds idle within [begin, finish): named GPUs' overlapping intervals merged, capped at ``cap``."""
    events: dict[Fraction, Fraction] = defaultdict(Fraction)
    named: dict[str, list[tuple[Fraction, Fraction, Fraction]]] = defaultdict(list)
    for start, end, gpus, gpu in intervals:
        start, end = max(start, begin), min(end, finish)
        if end <= start or not gpus:
            continue
        if gpu:
            named[gpu].append((start, end, gpus))
        else:
            events[start] += gpus
            events[end] -= gpus
    for pieces in named.values():  # one device: the union of its intervals, counted at its largest size
        weight = max(gpus for _, _, gpus in pieces)
        pieces.sort()
        current_start, current_end = pieces[0][:2]
        for start, end, _ in pieces[1:]:
            if start > current_end:
                events[current_start] += weight
                events[current_end] -= weight
                current_start = start
            current_end = max(current_end, end)
        events[current_start] += weight
        events[current_end] -= weight
    total, level, previous = Fraction(0), Fraction(0), None
    for moment in sorted(events):
        if previous is not None:
            total += min(level, cap) * (moment - previous)
        level += events[moment]
        previous = moment
    return total
