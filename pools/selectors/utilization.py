"""GPU utilization as the pages, the API, ``poolctl`` and ``/metrics`` read it, and the readers of the devices.

The readers give every device of a backend (a GPU, a MIG instance, a time-sliced share) with its utilization and
memory: from the backend's Prometheus (NVIDIA's DCGM exporter series), else, for a simulated backend, from the
simulated exporter's model (``pools.fleet.dcgm``) over the nodes and pods the console holds. The rounds of
``pools.services.utilization`` store what they found; the reports below read that: the workloads with idle GPUs,
GPU-hours per pool, user, namespace or project, the pools' utilization over time. A node's GPUs are read live.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from django.db.models import Max, Min, Q, Sum
from django.utils import timezone

from ..choices import BackendKind, ConsumptionBy
from ..engine import utilization as engine
from ..engine.errors import ConfigError
from ..filtersets import ConsumptionFilterSet, IdleGpuFilterSet, filtered
from ..fleet import dcgm
from ..fleet.catalogue import GPU, MIG_PREFIX
from ..models import (
    Backend,
    GpuConsumption,
    IdleGpu,
    Node,
    NodeMembership,
    Pod,
    Pool,
    Project,
    UsageSample,
    UtilizationSample,
)
from ..telemetry.prometheus import PrometheusClient, PrometheusError, gpu_utilization, label_matcher
from .gpuctl import USER_LABELS, node_get
from .quotas import QUEUE_LABEL

# The periods the charts and the consumption report offer.
PERIODS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
HOURLY_CONSUMPTION_DAYS = 7  # a report reaching further back than this is counted in whole days


@dataclass(slots=True)
class Device:
    """One device as a round read it, whatever the source."""

    node: str
    device: str  # ``engine.device_name``
    model: str
    namespace: str
    pod: str
    util: float | None  # %
    memory_used: float  # MiB
    memory_total: float  # MiB
    gpus: Fraction  # ``engine.device_share``


@dataclass(frozen=True, slots=True)
class Workload:
    """Who a pod works for: its user, pool and project (each empty when unknown)."""

    user: str = ""
    pool: str = ""
    project: str = ""


# -- reading the devices ---------------------------------------------------------------------------------------


def prometheus_client(backend: Backend) -> PrometheusClient:
    """A client of the backend's Prometheus, with the credentials its ``prometheus_token_env`` names.

    The variable holds a bearer token, or ``user:password`` for basic authentication. Raises PrometheusError when
    the variable is not set (a status line names it) and ValueError for a URL the client refuses.
    """
    token = username = password = None
    if backend.prometheus_token_env:
        secret = os.environ.get(backend.prometheus_token_env)
        if not secret:
            raise PrometheusError(
                f"The environment variable {backend.prometheus_token_env} that holds Prometheus's credentials is "
                "not set.",
                reason="http",
            )
        if ":" in secret:
            username, password = secret.split(":", 1)
        else:
            token = secret
    return PrometheusClient(backend.prometheus_url, token=token, username=username, password=password)


def _node_rows(backend: Backend, host: str = "") -> dict[str, tuple[dict, dict, int]]:
    """Node name -> (labels, allocatable, time-slicing replicas) of the backend's nodes (or of ``host``)."""
    nodes = Node.objects.filter(backend=backend)
    if host:
        nodes = nodes.filter(name=host)
    return {
        name: (labels or {}, allocatable or {}, replicas)
        for name, labels, allocatable, replicas in nodes.values_list("name", "labels", "allocatable", "gpu_replicas")
    }


def _held_pods(backend: Backend, host: str = "") -> list[dict]:
    """The pods bound to a node and holding GPUs or MIG devices, as Pod objects the simulated exporter reads."""
    pods = Pod.objects.filter(backend=backend).exclude(node_name="").exclude(phase__in=("Succeeded", "Failed"))
    if host:
        pods = pods.filter(node_name=host)
    found = []
    rows = pods.filter(Q(gpu__gt=0) | ~Q(mig_devices={})).values_list(
        "namespace", "name", "uid", "node_name", "phase", "gpu", "mig_devices", "created"
    )
    for namespace, name, uid, node_name, phase, gpu, mig, created in rows:
        requests = {f"{MIG_PREFIX}{profile}": count for profile, count in (mig or {}).items()}
        whole = int(gpu or 0)  # a Run:ai fraction holds no whole device of the exporter's
        if whole > 0:
            requests[GPU] = whole
        found.append(
            {
                "metadata": {
                    "namespace": namespace,
                    "name": name,
                    "uid": uid,
                    "creationTimestamp": created.isoformat().replace("+00:00", "Z") if created else "",
                },
                "spec": {"nodeName": node_name, "containers": [{"name": "main", "resources": {"requests": requests}}]},
                "status": {"phase": phase},
            }
        )
    return found


@dataclass(frozen=True, slots=True)
class SimulatedInputs:
    """What the simulated exporter reads: the nodes (name -> labels, allocatable, replicas) as Node objects, and the
    pods holding GPUs as Pod objects, by (namespace, name)."""

    nodes: dict[str, tuple[dict, dict, int]]
    node_objects: list[dict]
    pods: dict[tuple[str, str], dict]


def simulated_inputs(backend: Backend, *, host: str = "") -> SimulatedInputs:
    """The backend's nodes (or ``host``) and the pods holding their GPUs, read once (two queries)."""
    nodes = _node_rows(backend, host)
    node_objects = [
        {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}
        for name, (labels, allocatable, _) in nodes.items()
    ]
    pods = {(pod["metadata"]["namespace"], pod["metadata"]["name"]): pod for pod in _held_pods(backend, host)}
    return SimulatedInputs(nodes, node_objects, pods)


def simulated_devices(
    backend: Backend, now: float, *, host: str = "", inputs: SimulatedInputs | None = None
) -> tuple[list[Device], list[tuple]]:
    """The simulated exporter's devices at ``now`` over the nodes and pods the console holds (pods created after
    ``now`` left out), and the held devices as (device, namespace, pod, pod object, ordinal) for the idle check."""
    inputs = inputs or simulated_inputs(backend, host=host)
    moment = datetime.fromtimestamp(now, tz=UTC).isoformat().replace("+00:00", "Z")
    pods = [pod for pod in inputs.pods.values() if pod["metadata"]["creationTimestamp"] <= moment]
    devices, held = [], []
    for sample in dcgm.gpu_samples(inputs.node_objects, pods, now):
        instance = "" if sample.gpu_instance_id is None else str(sample.gpu_instance_id)
        vgpu = "" if sample.vgpu is None else str(sample.vgpu)
        name = engine.device_name(sample.uuid, instance, vgpu)
        devices.append(
            Device(
                sample.hostname,
                name,
                sample.model,
                sample.namespace,
                sample.pod,
                float(sample.util),
                float(sample.fb_used),
                float(sample.memory_mib),
                engine.device_share(mig_profile=sample.gpu_instance_profile, replicas=inputs.nodes[sample.hostname][2]),
            )
        )
        if sample.pod:
            pod = inputs.pods[(sample.namespace, sample.pod)]
            held.append((name, sample.namespace, sample.pod, pod, sample.ordinal))
    return devices, held


def prometheus_devices(backend: Backend, client: PrometheusClient, now: float, *, host: str = "") -> list[Device]:
    """The devices the backend's Prometheus reports for the backend's nodes (or ``host``) at ``now``."""
    nodes = _node_rows(backend, host)
    devices = []
    for reading in gpu_utilization(client, at=now, host=host):
        if reading.hostname not in nodes:
            continue  # another cluster's GPU, scraped by the same Prometheus
        util = reading.util
        if util is None and reading.gr_engine_active is not None:
            util = reading.gr_engine_active * 100  # MIG instances: DCGM's signal for them
        used, free = reading.fb_used or 0.0, reading.fb_free or 0.0
        devices.append(
            Device(
                reading.hostname,
                engine.device_name(reading.uuid, reading.gpu_instance_id, reading.vgpu),
                reading.model,
                reading.namespace,
                reading.pod,
                util,
                used,
                used + free,
                engine.device_share(mig_profile=reading.gpu_instance_profile, replicas=nodes[reading.hostname][2]),
            )
        )
    return devices


def gpu_workloads(backend: Backend) -> tuple[dict[tuple[str, str], Workload], dict[str, str]]:
    """(namespace, pod) -> Workload for the backend's pods holding GPUs, and node name -> its first pool."""
    pool_names = set(Pool.objects.filter(backend=backend).values_list("name", flat=True))
    node_pool: dict[str, str] = {}
    for node_name, pool_name in (
        NodeMembership.objects.filter(node__backend=backend)
        .order_by("pool__name")
        .values_list("node__name", "pool__name")
    ):
        node_pool.setdefault(node_name, pool_name)
    owner, projects = {}, set()
    for name, namespaces in Project.objects.values_list("name", "namespaces"):
        projects.add(name)
        for namespace in namespaces or [f"runai-{name}"]:
            owner.setdefault(namespace, name)
    workloads = {}
    rows = (
        Pod.objects.filter(backend=backend)
        .exclude(node_name="")
        .filter(Q(gpu__gt=0) | ~Q(mig_devices={}))
        .values_list("namespace", "name", "node_name", "labels", "pool_name")
    )
    for namespace, name, node_name, labels, pool_name in rows:
        labels = labels or {}
        user = next((labels[key] for key in USER_LABELS if labels.get(key)), "")
        queue = labels.get(QUEUE_LABEL)
        project = queue if queue in projects else owner.get(namespace, "")
        pool = pool_name if pool_name in pool_names else node_pool.get(node_name, "")
        workloads[(namespace, name)] = Workload(str(user), pool, project)
    return workloads, node_pool


# -- idle GPUs ---------------------------------------------------------------------------------------------------


def _held_gpus(rows: list[dict]) -> dict[tuple[int, str, str], Decimal]:
    """GPUs each listed pod holds: whole GPUs and fractions, MIG devices as their slices of seven (one query)."""
    if not rows:
        return {}
    pods = Pod.objects.filter(
        backend_id__in={row["backend_id"] for row in rows}, name__in={row["pod"] for row in rows}
    ).values_list("backend_id", "namespace", "name", "gpu", "mig_devices")
    held = {}
    for backend_id, namespace, name, gpu, mig in pods:
        slices = sum(engine.device_share(mig_profile=profile) * int(count) for profile, count in (mig or {}).items())
        held[(backend_id, namespace, name)] = Decimal(gpu or 0) + Decimal(slices.numerator) / slices.denominator
    return held


def idle_workloads(*, user, filters=None, now: datetime | None = None) -> list[dict]:
    """The workloads holding idle GPUs that ``user`` may see (pools they may read), longest idle first.

    A row per pod: its backend, namespace, user, project and pool, a node it runs on, the GPUs it holds, how many
    of them are idle, and since when all of those have been idle (``idle_for_seconds``: the shortest idle time of
    its idle GPUs). Filters: ``IdleGpuFilterSet``. Two queries.
    """
    now = now or timezone.now()
    queryset = filtered(IdleGpuFilterSet, filters, IdleGpu.objects.restrict(user)).qs
    rows = list(
        queryset.values("backend_id", "namespace", "pod")
        .annotate(
            backend=Max("backend__name"),
            user=Max("user"),
            project=Max("project"),
            pool=Max("pool"),
            node=Min("node_name"),
            idle_gpus=Sum("gpus"),
            since=Max("idle_since"),
        )
        .order_by("since", "namespace", "pod")
    )
    held = _held_gpus(rows)
    return [
        {
            "backend": row["backend"],
            "namespace": row["namespace"],
            "pod": row["pod"],
            "user": row["user"],
            "project": row["project"],
            "pool": row["pool"],
            "node": row["node"],
            "gpus": _number(max(held.get((row["backend_id"], row["namespace"], row["pod"]), 0), row["idle_gpus"])),
            "idle_gpus": _number(row["idle_gpus"]),
            "idle_since": row["since"].isoformat(),
            "idle_for_seconds": max(0, int((now - row["since"]).total_seconds())),
        }
        for row in rows
    ]


def idle_gpus_by_pool(*, user) -> dict[str, float]:
    """Idle GPUs per pool (``""``: workloads in no pool) that ``user`` may see: what ``/metrics`` exports."""
    rows = IdleGpu.objects.restrict(user).values("pool").annotate(gpus=Sum("gpus")).order_by("pool")
    return {row["pool"]: _number(row["gpus"]) for row in rows}


def _number(value) -> int | float:
    """A GPU count: whole numbers without a decimal point, fractions to three places."""
    value = round(float(value), 3)
    return int(value) if value == int(value) else value


# -- GPU-hours ---------------------------------------------------------------------------------------------------


def consumption_period(filters, *, now: datetime | None = None) -> tuple[datetime, datetime, str]:
    """(since, until, resolution) of a report: ``since``/``until`` when given, else the ``period`` (default 30d)
    up to now. Counted in whole hours; a period reaching back more than ``HOURLY_CONSUMPTION_DAYS`` in whole days
    (UTC), the days' rows being the only ones kept that long."""
    now = now or timezone.now()
    until = filters.get("until") or now
    since = filters.get("since") or until - PERIODS[filters.get("period") or "30d"]
    if since >= until:
        raise ConfigError("since: the period's start must be before its end.")
    if since < now - timedelta(days=HOURLY_CONSUMPTION_DAYS):
        return since.replace(hour=0, minute=0, second=0, microsecond=0), until, GpuConsumption.Resolution.DAY
    return since.replace(minute=0, second=0, microsecond=0), until, GpuConsumption.Resolution.HOUR


def consumption_report(*, user, filters=None, now: datetime | None = None) -> dict:
    """GPU-hours allocated and idle-allocated per pool, user, namespace or project (``by``) over a period, counted
    in the pools ``user`` may see; rows by allocated hours, largest first. Filters: ``ConsumptionFilterSet``
    (``by``, ``period`` or ``since``/``until``, ``pool``, ``backend``). One query.
    """
    filterset = filtered(ConsumptionFilterSet, filters, GpuConsumption.objects.restrict(user))
    cleaned = filterset.form.cleaned_data
    by = cleaned.get("by") or ConsumptionBy.POOL
    since, until, resolution = consumption_period(cleaned, now=now)
    rows = (
        filterset.qs.filter(dimension=by, resolution=resolution, start__gte=since, start__lt=until)
        .values("value")
        .annotate(allocated=Sum("allocated"), idle=Sum("idle"))
        .order_by("-allocated", "value")
    )
    found = [_hours({by: row["value"]}, row["allocated"], row["idle"]) for row in rows]
    total = _hours({}, sum(row["allocated_gpu_hours"] for row in found), sum(row["idle_gpu_hours"] for row in found))
    return {
        "by": by,
        "since": since.isoformat(),
        "until": until.isoformat(),
        "resolution": str(resolution),
        "rows": found,
        "total": total,
    }


def _hours(head: dict, allocated: float, idle: float) -> dict:
    return {
        **head,
        "allocated_gpu_hours": round(allocated, 2),
        "idle_gpu_hours": round(idle, 2),
        "idle_share": round(idle / allocated, 4) if allocated else 0,
    }


# -- utilization over time ---------------------------------------------------------------------------------------


def utilization_series(*, pool: str, since: datetime, until: datetime | None = None) -> list[dict]:
    """A pool's utilization samples between two times: minute samples for up to two days, else hourly (the caller
    has checked the pool is visible). Samples of the same moment from several backends are added up."""
    until = until or timezone.now()
    resolution = UsageSample.Resolution.MINUTE if until - since <= timedelta(days=2) else UsageSample.Resolution.HOUR
    rows = UtilizationSample.objects.filter(pool=pool, resolution=resolution, at__gte=since, at__lte=until).order_by(
        "at"
    )
    return [
        {
            "at": row.at.timestamp(),
            "utilization": row.utilization,
            "memory_used": row.memory_used,
            "memory_total": row.memory_total,
            "gpus": row.gpus,
            "idle_gpus": row.idle_gpus,
        }
        for row in rows
    ]


def pool_utilization(*, pool: str) -> dict | None:
    """A pool's latest utilization sample (its distribution included), or None when there is none."""
    row = UtilizationSample.objects.filter(pool=pool, resolution=UsageSample.Resolution.MINUTE).order_by("-at").first()
    if row is None:
        return None
    return {
        "at": row.at.isoformat(),
        "gpus": _number(row.gpus),
        "utilization": row.utilization,
        "memory_used": row.memory_used,
        "memory_total": row.memory_total,
        "idle_gpus": _number(row.idle_gpus),
        "distribution": {bucket: row.distribution.get(bucket, 0) for bucket in engine.BUCKETS},
    }


# -- one node's GPUs, read live ----------------------------------------------------------------------------------


def utilization_source(backend: Backend) -> str:
    """Where a backend's GPU utilization comes from: ``prometheus``, ``simulated`` or ``""`` (nowhere)."""
    if backend.prometheus_url:
        return "prometheus"
    return "simulated" if backend.kind == BackendKind.SIMULATED else ""


def node_gpus(name: str, *, user, backend: str | None = None, now: float | None = None) -> dict:
    """A node's GPUs now, each with its utilization, memory and idle time (a node ``user`` may not see is
    NotFound). Read live from the backend's Prometheus or the simulated exporter; a Prometheus that does not
    answer gives ``error`` and no GPUs, never an exception."""
    node = node_get(name, user, backend)
    now = timezone.now().timestamp() if now is None else now
    source, error, devices = utilization_source(node.backend), "", []
    try:
        if source == "prometheus":
            with prometheus_client(node.backend) as client:
                devices = prometheus_devices(node.backend, client, now, host=node.name)
        elif source == "simulated":
            devices = simulated_devices(node.backend, now, host=node.name)[0]
    except (PrometheusError, ValueError) as exc:
        error = str(exc)
    idle = {
        (device, namespace, pod): since
        for device, namespace, pod, since in IdleGpu.objects.filter(
            backend=node.backend, node_name=node.name
        ).values_list("device", "namespace", "pod", "idle_since")
    }
    moment = datetime.fromtimestamp(now, tz=UTC)
    gpus = []
    for device in devices:
        since = idle.get((device.device, device.namespace, device.pod))
        gpus.append(
            {
                "device": device.device,
                "model": device.model,
                "gpus": _number(device.gpus),
                "namespace": device.namespace,
                "pod": device.pod,
                "utilization": device.util,
                "memory_used": device.memory_used,
                "memory_total": device.memory_total,
                "idle_for_seconds": max(0, int((moment - since).total_seconds())) if since else None,
            }
        )
    return {"node": node.name, "backend": node.backend.name, "source": source, "error": error, "gpus": gpus}


def node_utilization_series(name: str, *, user, since: float, until: float, backend: str | None = None) -> dict:
    """A node's average GPU utilization (%) and GPU memory used (MiB) over [since, until), about 240 points: from
    Prometheus (``query_range``), or the simulated exporter's model over the pods the node holds now. A Prometheus
    that does not answer gives ``error`` and no points."""
    node = node_get(name, user, backend)
    step = max(15.0, (until - since) / 240)
    source, error, times, utilization, memory = utilization_source(node.backend), "", [], [], []
    try:
        if source == "prometheus":
            host = label_matcher("Hostname", node.name)
            with prometheus_client(node.backend) as client:
                mig = f'100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{host},GPU_I_ID!=""}}'
                util = client.query_range(
                    f"avg(DCGM_FI_DEV_GPU_UTIL{{{host}}} or {mig})",
                    since,
                    until,
                    step,
                )
                used = client.query_range(f"sum(DCGM_FI_DEV_FB_USED{{{host}}})", since, until, step)
            points = {t: value for series in util for t, value in series.points}
            used_points = {t: value for series in used for t, value in series.points}
            times = sorted(points.keys() | used_points.keys())
            utilization = [points.get(t) for t in times]
            memory = [used_points.get(t) for t in times]
        elif source == "simulated":
            inputs = simulated_inputs(node.backend, host=node.name)
            t = since - since % step + step
            while t < until:
                devices = simulated_devices(node.backend, t, inputs=inputs)[0]
                measured = [device for device in devices if device.util is not None]
                weight = float(sum(device.gpus for device in measured))
                times.append(t)
                utilization.append(
                    round(sum(device.util * float(device.gpus) for device in measured) / weight, 2) if weight else None
                )
                memory.append(sum(device.memory_used for device in devices))
                t += step
    except (PrometheusError, ValueError) as exc:
        error, times, utilization, memory = str(exc), [], [], []
    return {
        "node": node.name,
        "source": source,
        "error": error,
        "start": since,
        "end": until,
        "times": times,
        "utilization": utilization,
        "memory_used": memory,
    }
