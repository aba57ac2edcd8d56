"""GPU utilization: every backend's GPUs read once a minute; the quiet and idle ones, the pools' history and GPU-hours.

A round (``utilization_record``) reads every device of a backend (a GPU, a MIG instance, a time-sliced share):

* from the backend's Prometheus (``prometheus_url``), which scrapes NVIDIA's DCGM exporters: the four gauges in four
  queries, and the quiet devices in one, sent beside them (``pools.telemetry.prometheus``);
* else, for a simulated backend, from the simulated exporter's model (``pools.fleet.dcgm``) over the nodes and pods
  the console holds, so ``make run`` shows utilization without Prometheus.

A device held by a pod is *quiet* while its utilization stays at or below ``IDLE_THRESHOLD_PERCENT``, and *idle*
once it has been quiet for ``IDLE_SECONDS`` (``engine.idle_for``). The rounds follow each device's quiet stretch:
``QuietGpu`` keeps when it began, so a round asks Prometheus only about the time since the last one (at least
``MIN_QUIET_WINDOW``, so that the window holds a sample of every series); a round that follows no recent one asks
about the whole idle duration. A device found quiet over the window, and just before it, that was not quiet at the
last round has been quiet since the window's start (a lower bound).

Then, in one transaction: the quiet devices, a sample per pool (``UtilizationSample``) and the GPU-hours allocated
and idle-allocated since the last round, added to the hour's and the day's ``GpuConsumption`` rows of each (pool,
user, namespace, project). A Prometheus that does not answer leaves its sentence in ``utilization_error`` and
changes nothing else. One round per backend at a time (a lease).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from pools import selectors
from pools.choices import BackendKind, ConsumptionBy
from pools.engine import utilization as engine
from pools.fleet import dcgm
from pools.inventory.records import paused_gc
from pools.models import Backend, GpuConsumption, NodeMembership, QuietGpu, UsageSample, UtilizationSample
from pools.telemetry.prometheus import IdleDevice, PrometheusError, idle_since

from .leases import lease_acquire, lease_owner, lease_release
from .usage import MINUTE_RETENTION, history_compact  # utilization samples are kept as usage samples are

logger = logging.getLogger(__name__)

HOURLY_CONSUMPTION_RETENTION = timedelta(days=8)  # hourly GPU-hours; daily ones are kept for 400 days
DAILY_CONSUMPTION_RETENTION = timedelta(days=400)
ROUND_LEASE_SECONDS = 300
# The shortest window a round asks Prometheus about: a shorter one may hold no sample of a series scraped every 15 or
# 30 s (dcgm-exporter's usual intervals), which would read as a device no longer quiet.
MIN_QUIET_WINDOW = 60.0
# How often a round reads every device's free memory (for its size, which does not change while the device exists);
# the rounds in between take the sizes from the last such reading (``_MEMORY``), sparing Prometheus a third of its
# work. A process keeps its own: a round in another worker reads the sizes the first time.
MEMORY_REFRESH_SECONDS = 600.0
_MEMORY: dict[tuple[int, str], tuple[float, dict[str, float]]] = {}  # (backend, URL) -> (read at, device -> MiB)
CONSUMPTION_ROWS_PER_STATEMENT = 1000  # 8,000 parameters a statement: within SQLite's limit

Key = tuple[str, str, str]  # (device, namespace, pod)


def idle_threshold() -> float:
    return float(settings.GPUPOOL["IDLE_THRESHOLD_PERCENT"])


def idle_seconds() -> float:
    return float(settings.GPUPOOL["IDLE_SECONDS"])


def round_seconds() -> float:
    return float(settings.GPUPOOL["UTILIZATION_SECONDS"])


class UtilizationBusy(Exception):
    """Another round of the backend runs; this one did not start."""


# -- quiet devices ---------------------------------------------------------------------------------------------


def _simulated_quiet(
    held: list[tuple], devices: list[selectors.Device], now: float, previous: dict[Key, float], last: float | None
) -> dict[Key, float]:
    """(device, namespace, pod) -> quiet since (epoch seconds) for the simulated devices quiet at ``now``.

    The model is sampled every ``dcgm.NOISE_SECONDS`` from now back to the first sample above the threshold (the
    quiet run begins after it), the pod's creation, or: for a device quiet at the last round (``last``), that round
    (it has been quiet since the same moment), else far enough back to tell an idle device from one that is not
    (``IDLE_SECONDS`` and two steps). The run's start is the engine's ``quiet_since``. A device quiet at a round that
    is older than the idle duration is taken as quiet since then if it is quiet over that duration (a backfill's
    moments are far apart).
    """
    threshold, duration, step = idle_threshold(), idle_seconds(), dcgm.NOISE_SECONDS
    quiet_now = {
        (d.device, d.namespace, d.pod) for d in devices if d.pod and d.util is not None and d.util <= threshold
    }
    found: dict[Key, float] = {}
    for name, namespace, pod_name, pod, ordinal in held:
        key = (name, namespace, pod_name)
        if key not in quiet_now:
            continue
        created = pod["metadata"]["creationTimestamp"]
        born = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp() if created else -float("inf")
        known = previous.get(key) if last is not None else None
        reach = now - duration - 2 * step
        first = max(born, reach if known is None else max(last, reach))
        t, samples, broken = now - now % step, [], False
        while True:  # the latest sample always, then back to ``first``
            value = dcgm.pod_activity(pod, ordinal, t)
            samples.append((t, value))
            if value > threshold:
                broken = True
                break
            t -= step
            if t < first:
                break
        samples.reverse()
        since = engine.quiet_since(samples, now, threshold=threshold, max_gap=2 * step)
        if since is None:
            continue
        found[key] = known if known is not None and not broken and born < first else since
    return found


def _prometheus_quiet(
    quiet: list[IdleDevice], known: dict[Key, selectors.Device], previous: dict[Key, float], window_start: float
) -> dict[Key, float]:
    """(device, namespace, pod) -> quiet since, for the devices Prometheus found quiet over the window it was asked
    about (``quiet``, those of ``known`` devices), and before it: quiet since the same moment as at the last round
    (``previous``), else since the window's start."""
    found = {}
    for device in quiet:
        key = (engine.device_name(device.uuid, "", device.vgpu), device.namespace, device.pod)
        if key in known:
            found[key] = previous.get(key, window_start)
    return found


# -- the round -------------------------------------------------------------------------------------------------


def utilization_record(*, backend: Backend, now: float | None = None) -> dict:
    """One round of the backend's GPUs (see the module docstring); returns what it found.

    Raises UtilizationBusy while another round of the backend runs. A backend with neither a Prometheus nor a
    simulated fleet has nothing to read: ``{"skipped": ...}``.
    """
    if not backend.prometheus_url and backend.kind != BackendKind.SIMULATED:
        return {"skipped": "no prometheus_url"}
    lease, owner = f"utilization:{backend.pk}", lease_owner()
    if not lease_acquire(name=lease, owner=owner, seconds=ROUND_LEASE_SECONDS):
        raise UtilizationBusy(f"backend '{backend.name}' is already being read")
    try:
        with paused_gc():  # a round makes a few hundred thousand objects, none in a cycle
            return _round(backend, time.time() if now is None else now)
    finally:
        lease_release(name=lease, owner=owner)


def _round(backend: Backend, now: float) -> dict:
    started = time.monotonic()
    stored = {
        (device, namespace, pod): (pk, since.timestamp())
        for pk, device, namespace, pod, since in QuietGpu.objects.filter(backend=backend).values_list(
            "pk", "device", "namespace", "pod", "quiet_since"
        )
    }
    previous = {key: since for key, (_, since) in stored.items()}
    last = Backend.objects.filter(pk=backend.pk).values_list("utilization_at", flat=True).first()
    # The last round, when recent: what is known of the time before it holds (after a gap, nothing is known).
    last = last.timestamp() if last and 0 < now - last.timestamp() <= 2 * round_seconds() else None
    try:
        if backend.prometheus_url:
            duration = idle_seconds()
            window = max(1.0, duration if last is None else max(now - last, min(MIN_QUIET_WINDOW, duration)))
            # The gauges' and the quiet devices' queries are sent together, and the inventory is read while
            # Prometheus answers them.
            cache = (backend.pk, backend.prometheus_url)
            sizes = _MEMORY.get(cache)
            refresh = sizes is None or not 0 <= now - sizes[0] < MEMORY_REFRESH_SECONDS
            with selectors.prometheus_client(backend) as client, ThreadPoolExecutor(max_workers=2) as pool:
                readings = pool.submit(selectors.prometheus_readings, client, now, free_memory=refresh)
                asked = pool.submit(
                    idle_since, client, threshold_percent=idle_threshold(), window_seconds=window, at=now
                )
                replicas = selectors.node_replicas(backend)
                workloads = selectors.gpu_workloads(backend)
                devices = selectors.prometheus_devices(readings.result(), replicas, None if refresh else sizes[1])
                if refresh:
                    _MEMORY[cache] = (now, {device.device: device.memory_total for device in devices})
                elif any(device.device not in sizes[1] for device in devices):
                    _MEMORY.pop(cache)  # a device not seen before (a new node): read all the sizes next time
                by_key = {(device.device, device.namespace, device.pod): device for device in devices}
                quiet = _prometheus_quiet(asked.result(), by_key, previous if last else {}, now - window)
        else:
            devices, held = selectors.simulated_devices(backend, now)
            by_key = {(device.device, device.namespace, device.pod): device for device in devices}
            quiet = _simulated_quiet(held, devices, now, previous, last)
            workloads = selectors.gpu_workloads(backend)
    except (PrometheusError, ValueError) as exc:
        Backend.objects.filter(pk=backend.pk).update(utilization_error=str(exc))
        logger.warning("utilization of backend %s: %s", backend.name, exc)
        return {"error": str(exc)}
    read = time.monotonic() - started
    moment = datetime.fromtimestamp(now, tz=UTC)
    since = now - round_seconds() if last is None else last  # the GPU-hours since the last round
    with transaction.atomic():
        _quiet_rows_write(backend, by_key, quiet, stored, workloads)
        samples = _pool_samples_write(backend, devices, quiet, moment)
        buckets: dict[tuple, list[float]] = {}
        _bucket_add(buckets, _consumption_totals(devices, quiet, workloads, since, now), now)
        hours = _consumption_write(backend, buckets)
        Backend.objects.filter(pk=backend.pk).update(utilization_at=moment, utilization_error="")
    return {
        "devices": len(devices),
        "quiet": len(quiet),
        "idle": sum(1 for since in quiet.values() if engine.idle_for(since, now, duration=idle_seconds()) is not None),
        "pools": samples,
        "consumption_rows": hours,
        "read_seconds": round(read, 3),
        "seconds": round(time.monotonic() - started, 3),
    }


def _quiet_rows_write(
    backend: Backend,
    by_key: dict[Key, selectors.Device],
    quiet: dict[Key, float],
    stored: dict[Key, tuple[int, float]],
    workloads: dict[tuple[str, str], selectors.Workload],
) -> None:
    """Make the backend's ``QuietGpu`` rows (``stored``: key -> (id, quiet since)) what ``quiet`` says: rows whose
    device is no longer quiet, or began a new quiet stretch, go; new ones come; the others are left as they are."""
    gone = [pk for key, (pk, since) in stored.items() if quiet.get(key) != since]
    for first in range(0, len(gone), 10_000):  # SQLite takes 32,766 values a statement at most
        QuietGpu.objects.filter(pk__in=gone[first : first + 10_000]).delete()
    new = []
    for key, since in quiet.items():
        if key in stored and stored[key][1] == since:
            continue
        device = by_key[key]
        workload = workloads.get((device.namespace, device.pod), selectors.Workload())
        new.append(
            QuietGpu(
                backend=backend,
                node_name=device.node,
                device=device.device,
                model=device.model,
                namespace=device.namespace,
                pod=device.pod,
                user=workload.user,
                project=workload.project,
                pool=workload.pool,
                gpus=device.gpus,
                quiet_since=datetime.fromtimestamp(since, tz=UTC),
            )
        )
    QuietGpu.objects.bulk_create(new, batch_size=1000)


def quiet_gpus_reattribute(*, backend: Backend) -> int:
    """Give the backend's quiet GPUs the pool and project their workloads have now (``selectors.workload_context``):
    after a config change moved nodes between pools, the idle GPUs show under their new pool at once, not at the
    next utilization round. Returns how many rows changed; costs nothing on a backend without quiet GPUs."""
    rows = list(QuietGpu.objects.filter(backend=backend).values_list("pk", "namespace", "pod", "pool", "project"))
    if not rows:
        return 0
    workloads = selectors.gpu_workloads(backend)
    moved: dict[tuple[str, str], list[int]] = defaultdict(list)
    for pk, namespace, pod, pool, project in rows:
        workload = workloads.get((namespace, pod))
        if workload is not None and (workload.pool, workload.project) != (pool, project):
            moved[(workload.pool, workload.project)].append(pk)
    for (pool, project), pks in moved.items():
        for first in range(0, len(pks), 10_000):  # SQLite takes 32,766 values a statement at most
            QuietGpu.objects.filter(pk__in=pks[first : first + 10_000]).update(pool=pool, project=project)
    return sum(len(pks) for pks in moved.values())


def _pool_members(backend: Backend) -> dict[str, list[str]]:
    """Node name -> the pools of the backend holding it."""
    members: dict[str, list[str]] = defaultdict(list)
    for node_name, pool_name in (
        NodeMembership.objects.filter(node__backend=backend).values_list("node__name", "pool__name").distinct()
    ):
        members[node_name].append(pool_name)
    return members


def _pool_samples_write(
    backend: Backend, devices: list[selectors.Device], quiet: dict[Key, float], moment: datetime
) -> int:
    """This minute's sample of every pool of the backend (one sample a minute: a repeat replaces it)."""
    samples = _pool_samples(devices, quiet, moment, _pool_members(backend))
    at = moment.replace(second=0, microsecond=0)
    UtilizationSample.objects.filter(backend=backend, resolution=UsageSample.Resolution.MINUTE, at=at).delete()
    for sample in samples:
        sample.backend = backend
    UtilizationSample.objects.bulk_create(samples, batch_size=1000)
    return len(samples)


def _pool_samples(
    devices: list[selectors.Device],
    quiet: dict[Key, float],
    moment: datetime,
    members: dict[str, list[str]],
    resolution: str = UsageSample.Resolution.MINUTE,
) -> list[UtilizationSample]:
    """A sample per pool over the devices of its nodes (a node in several pools counts in each), at ``moment``'s
    minute (or hour), without its backend. ``gpus`` are the GPUs held there (SEMANTICS §6.1): a device a pod holds
    counts as the one GPU it requested (a time-sliced share too), a MIG slice not at all (it is counted by its
    profile, never as a decimal of a GPU); idle GPUs are those of them quiet for the idle duration. Utilization and
    memory are over every device, weighted by what each is of a GPU."""
    now, duration = moment.timestamp(), idle_seconds()
    idle_keys = {key for key, since in quiet.items() if engine.idle_for(since, now, duration=duration) is not None}
    figures: dict[str, list] = {}  # pool -> [gpus, util x gpus, gpus with util, memory used, total, idle, values]
    for device in devices:
        idle = bool(idle_keys) and (device.device, device.namespace, device.pod) in idle_keys
        for pool in members.get(device.node, ()):
            entry = figures.get(pool)
            if entry is None:
                entry = figures[pool] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, []]
            held = 1.0 if device.pod and not device.profile else 0.0
            entry[0] += held
            if device.util is not None:
                entry[1] += device.util * device.gpus
                entry[2] += device.gpus
                entry[6].append(min(100.0, max(0.0, device.util)))
            entry[3] += device.memory_used
            entry[4] += device.memory_total
            if idle:
                entry[5] += held
    at = moment.replace(second=0, microsecond=0)
    if resolution == UsageSample.Resolution.HOUR:
        at = at.replace(minute=0)
    return [
        UtilizationSample(
            pool=pool,
            resolution=resolution,
            at=at,
            gpus=round(gpus, 3),
            utilization=round(weighted / measured, 2) if measured else None,
            memory_used=used,
            memory_total=total,
            idle_gpus=round(idle_gpus, 3),
            distribution=engine.utilization_distribution(values),
        )
        for pool, (gpus, weighted, measured, used, total, idle_gpus, values) in figures.items()
    ]


def _consumption_totals(
    devices: list[selectors.Device],
    quiet: dict[Key, float],
    workloads: dict[tuple[str, str], selectors.Workload],
    since: float,
    until: float,
) -> dict[tuple[str, str, str], list[float]]:
    """GPU-hours allocated and idle in [since, until) per (pool, dimension, value), each pod holding what it holds at
    ``until`` all along (the engine's ``period_gpu_hours``, grouped by the four keys at once)."""
    held: dict[tuple[str, str], list] = {}  # (namespace, pod) -> [GPUs, [(GPUs, quiet since)]]
    for device in devices:
        if not device.pod:
            continue
        entry = held.setdefault((device.namespace, device.pod), [0.0, []])
        entry[0] += device.gpus
        quiet_since = quiet.get((device.device, device.namespace, device.pod))
        if quiet_since is not None:
            entry[1].append((device.gpus, quiet_since))
    holdings = []
    for (namespace, pod), (gpus, quiet_parts) in held.items():
        workload = workloads.get((namespace, pod), selectors.Workload())
        group = (workload.pool, workload.user, namespace, workload.project)
        holdings.append(engine.Holding(group, gpus, tuple(quiet_parts)))
    hours = engine.period_gpu_hours(holdings, since=since, until=until, duration=idle_seconds())
    totals: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for group, found in hours.items():
        values = dict(zip(engine.GROUP_KEYS, group, strict=True))
        for dimension in ConsumptionBy.values:
            entry = totals[(values["pool"], dimension, values[dimension])]
            entry[0] += found.allocated
            entry[1] += found.idle
    return totals


def _bucket_add(buckets: dict[tuple, list[float]], totals: dict[tuple[str, str, str], list[float]], until: float):
    """Add ``totals`` ((pool, dimension, value) -> GPU-hours) to the hour and the day of ``until`` in ``buckets``."""
    moment = datetime.fromtimestamp(until, tz=UTC)
    for resolution, start in (
        (GpuConsumption.Resolution.HOUR, moment.replace(minute=0, second=0, microsecond=0)),
        (GpuConsumption.Resolution.DAY, moment.replace(hour=0, minute=0, second=0, microsecond=0)),
    ):
        for key, (allocated, idle_hours) in totals.items():
            entry = buckets.setdefault((resolution, start, *key), [0.0, 0.0])
            entry[0] += allocated
            entry[1] += idle_hours


def _consumption_write(backend: Backend, buckets: dict[tuple, list[float]]) -> int:
    """Add ``buckets`` ((resolution, start, pool, dimension, value) -> GPU-hours) to the backend's rows.

    Inserts that add to the row already there (``ON CONFLICT ... DO UPDATE``), where the ORM could only read every
    row first and write it back: on PostgreSQL one statement whose rows come as eight arrays (``unnest``; a
    statement of thousands of single values costs it three times as much), on SQLite a thousand rows a statement.
    """
    table = connection.ops.quote_name(GpuConsumption._meta.db_table)
    columns = "backend_id, resolution, start, pool, dimension, value, allocated, idle"
    on_conflict = (
        "ON CONFLICT (backend_id, resolution, start, pool, dimension, value) DO UPDATE SET "
        f"allocated = {table}.allocated + excluded.allocated, idle = {table}.idle + excluded.idle"
    )
    adapt = connection.ops.adapt_datetimefield_value
    rows = [
        (backend.pk, resolution, adapt(start), pool, dimension, value, allocated, idle_hours)
        for (resolution, start, pool, dimension, value), (allocated, idle_hours) in buckets.items()
    ]
    if not rows:
        return 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = "%s::bigint[], %s::text[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::float8[]"
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({arrays}, %s::float8[]) {on_conflict}",
                [list(column) for column in zip(*rows, strict=True)],
            )
            return len(rows)
        for first in range(0, len(rows), CONSUMPTION_ROWS_PER_STATEMENT):
            chunk = rows[first : first + CONSUMPTION_ROWS_PER_STATEMENT]
            values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * len(chunk))
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {values} {on_conflict}",
                [value for row in chunk for value in row],
            )
    return len(rows)


def utilization_backfill(
    *,
    backend: Backend,
    states: Iterable[tuple[float, list[dict], list[dict]]],
    now: float | None = None,
    minute_span: float = MINUTE_RETENTION.total_seconds(),
) -> int:
    """The rounds a worker would have recorded at past moments of a simulated backend, from its fleet's state at
    each: ``states`` are (moment, nodes, pods holding GPUs), the moments (epoch seconds) in time order. Recorded: a
    utilization sample per pool (minute samples within ``minute_span`` seconds of ``now``, hourly ones before), and
    the GPU-hours
    between one moment and the next. A device stays quiet from one moment to the next while it is quiet at both and
    over the idle duration before the later. Quiet devices are not kept: they are the present's. Returns the number
    of moments recorded.
    """
    now = time.time() if now is None else now
    context = selectors.workload_context(backend)
    members = _pool_members(backend)
    quiet: dict[Key, float] = {}
    previous = None
    samples: list[UtilizationSample] = []
    buckets: dict[tuple, list[float]] = {}
    count = 0
    for moment, nodes, pods in states:
        count += 1
        devices, held = selectors.exporter_devices(nodes, pods, moment)
        quiet = _simulated_quiet(held, devices, moment, quiet, previous)
        workloads = {
            (namespace, pod["metadata"]["name"]): context.workload(
                namespace=namespace,
                labels=pod["metadata"].get("labels") or {},
                pool_label=(pod["metadata"].get("labels") or {}).get(backend.pool_label, ""),
                node_name=pod["spec"].get("nodeName") or "",
            )
            for _, namespace, _, pod, _ in held
        }
        recent = now - moment <= minute_span
        resolution = UsageSample.Resolution.MINUTE if recent else UsageSample.Resolution.HOUR
        samples += _pool_samples(devices, quiet, datetime.fromtimestamp(moment, tz=UTC), members, resolution)
        if previous is not None:
            _bucket_add(buckets, _consumption_totals(devices, quiet, workloads, previous, moment), moment)
        previous = moment
    with transaction.atomic():
        for sample in samples:
            sample.backend = backend
        UtilizationSample.objects.bulk_create(samples, ignore_conflicts=True, batch_size=1000)
        _consumption_write(backend, buckets)
    return count


def utilization_record_all() -> dict[str, dict]:
    """A round of every backend with GPUs to read (a Prometheus, or a simulated fleet); a busy one is skipped."""
    results = {}
    for backend in Backend.objects.exclude(prometheus_url="", kind__in=(BackendKind.FILE, BackendKind.KUBERNETES)):
        try:
            results[backend.name] = utilization_record(backend=backend)
        except UtilizationBusy as exc:
            results[backend.name] = {"skipped": str(exc)}
    return results


def utilization_history_compact(*, now: datetime | None = None) -> dict:
    """Average finished hours of utilization samples into hourly ones; drop samples and GPU-hours past their
    retention (the samples by ``usage.history_compact``, the one compaction of sampled histories)."""
    now = now or timezone.now()
    counts = history_compact(
        UtilizationSample,
        keys=("backend_id", "pool"),
        figures=("gpus", "utilization", "memory_used", "memory_total", "idle_gpus"),
        now=now,
    )
    counts["expired"] += GpuConsumption.objects.filter(
        resolution=GpuConsumption.Resolution.HOUR, start__lt=now - HOURLY_CONSUMPTION_RETENTION
    ).delete()[0]
    counts["expired"] += GpuConsumption.objects.filter(
        resolution=GpuConsumption.Resolution.DAY, start__lt=now - DAILY_CONSUMPTION_RETENTION
    ).delete()[0]
    return counts
