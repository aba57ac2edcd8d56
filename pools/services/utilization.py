"""GPU utilization: every backend's GPUs read once a minute; the idle ones, the pools' history and GPU-hours kept.

A round (``utilization_record``) reads every device of a backend (a GPU, a MIG instance, a time-sliced share):

* from the backend's Prometheus (``prometheus_url``), which scrapes NVIDIA's DCGM exporters: the four gauges in four
  queries and the idle devices in one (``pools.telemetry.prometheus``);
* else, for a simulated backend, from the simulated exporter's model (``pools.fleet.dcgm``) over the nodes and pods
  the console holds, so ``make run`` shows utilization without Prometheus.

Then, in one transaction: the idle devices (``IdleGpu``: held by a pod, at or below ``IDLE_THRESHOLD_PERCENT`` for
``IDLE_SECONDS``; a device idle in the last round keeps its ``idle_since``), a sample per pool (``UtilizationSample``)
and the GPU-hours allocated and idle-allocated since the last round, added to the hour's and the day's
``GpuConsumption`` rows of each (pool, user, namespace, project). A Prometheus that does not answer leaves its
sentence in ``utilization_error`` and changes nothing else. One round per backend at a time (a lease).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from django.conf import settings
from django.db import transaction
from django.db.models import Avg, Max
from django.db.models.functions import TruncHour
from django.utils import timezone

from pools import selectors
from pools.choices import BackendKind, ConsumptionBy
from pools.engine import utilization as engine
from pools.fleet import dcgm
from pools.models import Backend, GpuConsumption, IdleGpu, NodeMembership, UsageSample, UtilizationSample
from pools.telemetry.prometheus import PrometheusClient, PrometheusError, idle_since

from .inventory import lease_acquire, lease_owner, lease_release

logger = logging.getLogger(__name__)

MINUTE_RETENTION = timedelta(days=2)  # utilization samples, as usage samples
HOUR_RETENTION = timedelta(days=90)
HOURLY_CONSUMPTION_RETENTION = timedelta(days=8)  # hourly GPU-hours; daily ones are kept for 400 days
DAILY_CONSUMPTION_RETENTION = timedelta(days=400)
ROUND_LEASE_SECONDS = 300


def idle_threshold() -> float:
    return float(settings.GPUPOOL["IDLE_THRESHOLD_PERCENT"])


def idle_seconds() -> float:
    return float(settings.GPUPOOL["IDLE_SECONDS"])


def round_seconds() -> float:
    return float(settings.GPUPOOL["UTILIZATION_SECONDS"])


class UtilizationBusy(Exception):
    """Another round of the backend runs; this one did not start."""


def _simulated_idle(
    held: list[tuple], devices: list[selectors.Device], now: float, still_idle: dict
) -> dict[tuple, float]:
    """(device, namespace, pod) -> idle since (epoch seconds) for the simulated devices idle at ``now``.

    A device idle in the last round and quiet now stays idle from the same moment; one that is quiet now is checked
    over the last ``IDLE_SECONDS`` of the model, sampled every ``dcgm.NOISE_SECONDS`` from its pod's creation, with
    the engine's rule (``engine.idle_gpus``).
    """
    threshold, duration, step = idle_threshold(), idle_seconds(), dcgm.NOISE_SECONDS
    quiet = {(d.device, d.namespace, d.pod) for d in devices if d.pod and d.util is not None and d.util <= threshold}
    found: dict[tuple, float] = {}
    series = []
    for name, namespace, pod_name, pod, ordinal in held:
        key = (name, namespace, pod_name)
        if key not in quiet:
            continue
        if key in still_idle:
            found[key] = still_idle[key]
            continue
        created = pod["metadata"]["creationTimestamp"]
        born = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp() if created else now - duration
        last = now - now % step
        first = max(born, last - duration - step)
        moments = [last - index * step for index in range(int((last - first) // step), -1, -1)]
        samples = [(t, dcgm.pod_activity(pod, ordinal, t)) for t in moments]
        series.append(engine.GpuSeries(name, namespace, pod_name, samples))
    report = engine.idle_gpus(series, now, threshold=threshold, duration=duration, step=step)
    for gpu in report.gpus:
        found[(gpu.gpu, gpu.namespace, gpu.pod)] = gpu.idle_since
    return found


def _prometheus_idle(client: PrometheusClient, devices: list[selectors.Device], now: float, still_idle: dict) -> dict:
    """(device, namespace, pod) -> idle since, for the devices Prometheus found quiet over the whole window: since
    the last round's moment when they were idle then, else since the window began."""
    duration = idle_seconds()
    known = {(d.device, d.namespace, d.pod) for d in devices}
    found = {}
    for idle in idle_since(client, threshold_percent=idle_threshold(), window_seconds=duration, at=now):
        key = (engine.device_name(idle.uuid, "", idle.vgpu), idle.namespace, idle.pod)
        if key in known:
            found[key] = still_idle.get(key, now - duration)
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
        return _round(backend, time.time() if now is None else now)
    finally:
        lease_release(name=lease, owner=owner)


def _round(backend: Backend, now: float) -> dict:
    started = time.monotonic()
    previous = {
        (device, namespace, pod): since.timestamp()
        for device, namespace, pod, since in IdleGpu.objects.filter(backend=backend).values_list(
            "device", "namespace", "pod", "idle_since"
        )
    }
    try:
        if backend.prometheus_url:
            with selectors.prometheus_client(backend) as client:
                devices = selectors.prometheus_devices(backend, client, now)
                idle = _prometheus_idle(client, devices, now, previous)
        else:
            devices, held = selectors.simulated_devices(backend, now)
            idle = _simulated_idle(held, devices, now, previous)
    except (PrometheusError, ValueError) as exc:
        Backend.objects.filter(pk=backend.pk).update(utilization_error=str(exc))
        logger.warning("utilization of backend %s: %s", backend.name, exc)
        return {"error": str(exc)}
    read = time.monotonic() - started
    workloads, node_pool = selectors.gpu_workloads(backend)
    moment = datetime.fromtimestamp(now, tz=UTC)
    last = backend.utilization_at.timestamp() if backend.utilization_at else None
    # GPU-hours since the last round: at most two rounds' worth (after a gap nothing is known of the time between).
    since = max(last, now - 2 * round_seconds()) if last is not None and last < now else now - round_seconds()
    with transaction.atomic():
        _idle_rows_write(backend, devices, idle, workloads)
        samples = _pool_samples_write(backend, devices, idle, moment)
        hours = _consumption_add(backend, devices, idle, workloads, since, now)
        Backend.objects.filter(pk=backend.pk).update(utilization_at=moment, utilization_error="")
    return {
        "devices": len(devices),
        "idle": len(idle),
        "pools": samples,
        "consumption_rows": hours,
        "read_seconds": round(read, 3),
        "seconds": round(time.monotonic() - started, 3),
    }


def _idle_rows_write(backend: Backend, devices: list[selectors.Device], idle: dict, workloads: dict) -> None:
    by_key = {(d.device, d.namespace, d.pod): d for d in devices}
    stored = set(IdleGpu.objects.filter(backend=backend).values_list("device", "namespace", "pod"))
    gone = stored - idle.keys()
    for device, namespace, pod in gone:
        IdleGpu.objects.filter(backend=backend, device=device, namespace=namespace, pod=pod).delete()
    new = []
    for key, since in idle.items():
        if key in stored:
            continue
        device = by_key[key]
        workload = workloads.get((device.namespace, device.pod), selectors.Workload())
        new.append(
            IdleGpu(
                backend=backend,
                node_name=device.node,
                device=device.device,
                model=device.model,
                namespace=device.namespace,
                pod=device.pod,
                user=workload.user,
                project=workload.project,
                pool=workload.pool,
                gpus=float(device.gpus),
                idle_since=datetime.fromtimestamp(since, tz=UTC),
            )
        )
    IdleGpu.objects.bulk_create(new, batch_size=1000)


def _pool_samples_write(backend: Backend, devices: list[selectors.Device], idle: dict, moment: datetime) -> int:
    """A minute sample per pool of the backend over the devices of its nodes (a node in several pools counts in
    each)."""
    members: dict[str, list[str]] = defaultdict(list)
    for node_name, pool_name in (
        NodeMembership.objects.filter(node__backend=backend).values_list("node__name", "pool__name").distinct()
    ):
        members[node_name].append(pool_name)
    figures: dict[str, list] = {}  # pool -> [gpus, util x gpus, gpus with util, memory used, total, idle, values]
    for device in devices:
        for pool in members.get(device.node, ()):
            entry = figures.setdefault(pool, [Fraction(0), 0.0, Fraction(0), 0.0, 0.0, Fraction(0), []])
            entry[0] += device.gpus
            if device.util is not None:
                entry[1] += device.util * float(device.gpus)
                entry[2] += device.gpus
                entry[6].append(min(100.0, max(0.0, device.util)))
            entry[3] += device.memory_used
            entry[4] += device.memory_total
            if (device.device, device.namespace, device.pod) in idle:
                entry[5] += device.gpus
    at = moment.replace(second=0, microsecond=0)
    UtilizationSample.objects.filter(backend=backend, resolution=UsageSample.Resolution.MINUTE, at=at).delete()
    UtilizationSample.objects.bulk_create(
        [
            UtilizationSample(
                backend=backend,
                pool=pool,
                at=at,
                gpus=float(gpus),
                utilization=round(weighted / float(measured), 2) if measured else None,
                memory_used=used,
                memory_total=total,
                idle_gpus=float(idle_gpus),
                distribution=engine.utilization_distribution(values),
            )
            for pool, (gpus, weighted, measured, used, total, idle_gpus, values) in figures.items()
        ],
        batch_size=1000,
    )
    return len(figures)


def _consumption_add(
    backend: Backend, devices: list[selectors.Device], idle: dict, workloads: dict, since: float, until: float
) -> int:
    """Add the GPU-hours of [since, until) to the hour's and the day's rows of each (pool, dimension, value)."""
    allocations: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    intervals = []
    for device in devices:
        if not device.pod:
            continue
        allocations[(device.namespace, device.pod)] += device.gpus
        idle_from = idle.get((device.device, device.namespace, device.pod))
        if idle_from is not None:
            intervals.append(
                engine.IdleInterval(device.namespace, device.pod, Fraction(max(idle_from, since)), None, device.gpus)
            )
    keys = ("pool", "user", "namespace", "project")
    report = engine.consumption(
        [
            engine.Allocation(
                namespace, pod, gpus, Fraction(since), None, workload.user, workload.pool, workload.project
            )
            for (namespace, pod), gpus in allocations.items()
            for workload in (workloads.get((namespace, pod), selectors.Workload()),)
        ],
        intervals,
        since=Fraction(since),
        until=Fraction(until),
        by=keys,
    )
    totals: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for group, hours in report.groups.items():
        values = dict(zip(keys, group, strict=True))
        for dimension in ConsumptionBy.values:
            entry = totals[(values["pool"], dimension, values[dimension])]
            entry[0] += float(hours.allocated)
            entry[1] += float(hours.idle)
    moment = datetime.fromtimestamp(until, tz=UTC)
    written = 0
    for resolution, start in (
        (GpuConsumption.Resolution.HOUR, moment.replace(minute=0, second=0, microsecond=0)),
        (GpuConsumption.Resolution.DAY, moment.replace(hour=0, minute=0, second=0, microsecond=0)),
    ):
        rows = {
            (row.pool, row.dimension, row.value): row
            for row in GpuConsumption.objects.filter(backend=backend, resolution=resolution, start=start)
        }
        changed, new = [], []
        for key, (allocated, idle_hours) in totals.items():
            row = rows.get(key)
            if row is None:
                new.append(
                    GpuConsumption(
                        backend=backend,
                        resolution=resolution,
                        start=start,
                        pool=key[0],
                        dimension=key[1],
                        value=key[2],
                        allocated=allocated,
                        idle=idle_hours,
                    )
                )
            else:
                row.allocated += allocated
                row.idle += idle_hours
                changed.append(row)
        GpuConsumption.objects.bulk_update(changed, ["allocated", "idle"], batch_size=1000)
        GpuConsumption.objects.bulk_create(new, batch_size=1000)
        written += len(changed) + len(new)
    return written


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
    """Average finished hours of minute samples into hourly ones; drop samples and GPU-hours past their retention."""
    now = now or timezone.now()
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    minutes = UtilizationSample.objects.filter(
        resolution=UsageSample.Resolution.MINUTE, at__lt=this_hour, at__gte=this_hour - MINUTE_RETENTION
    )
    hourly = (
        minutes.annotate(hour=TruncHour("at"))
        .values("backend_id", "pool", "hour")
        .annotate(
            gpus=Avg("gpus"),
            utilization=Avg("utilization"),
            memory_used=Avg("memory_used"),
            memory_total=Avg("memory_total"),
            idle_gpus=Avg("idle_gpus"),
            last=Max("at"),
        )
    )
    last_distribution = {
        (backend_id, pool, at): distribution
        for backend_id, pool, at, distribution in minutes.values_list("backend_id", "pool", "at", "distribution")
    }
    created = UtilizationSample.objects.bulk_create(
        [
            UtilizationSample(
                backend_id=row["backend_id"],
                pool=row["pool"],
                resolution=UsageSample.Resolution.HOUR,
                at=row["hour"],
                gpus=row["gpus"],
                utilization=row["utilization"],
                memory_used=row["memory_used"],
                memory_total=row["memory_total"],
                idle_gpus=row["idle_gpus"],
                distribution=last_distribution.get((row["backend_id"], row["pool"], row["last"]), {}),
            )
            for row in hourly
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    expired = UtilizationSample.objects.filter(
        resolution=UsageSample.Resolution.MINUTE, at__lt=now - MINUTE_RETENTION
    ).delete()[0]
    expired += UtilizationSample.objects.filter(
        resolution=UsageSample.Resolution.HOUR, at__lt=now - HOUR_RETENTION
    ).delete()[0]
    expired += GpuConsumption.objects.filter(
        resolution=GpuConsumption.Resolution.HOUR, start__lt=now - HOURLY_CONSUMPTION_RETENTION
    ).delete()[0]
    expired += GpuConsumption.objects.filter(
        resolution=GpuConsumption.Resolution.DAY, start__lt=now - DAILY_CONSUMPTION_RETENTION
    ).delete()[0]
    return {"hourly": len(created), "expired": expired}
