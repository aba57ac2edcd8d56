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

from django.conf import settings
from django.core.cache import cache
from django.db.models import Max, Min, OuterRef, Q, Subquery, Sum
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from accounts import access

from ..choices import BackendKind, ConsumptionBy
from ..engine import utilization as engine
from ..engine.errors import ConfigError
from ..engine.permissions import VIEW_PROJECT
from ..filtersets import ConsumptionFilterSet, IdleGpuFilterSet, filtered
from ..fleet import dcgm
from ..fleet.catalogue import GPU, MIG_PREFIX
from ..inventory.records import GPU_REPLICAS_LABEL
from ..inventory.sources import source_for
from ..models import (
    Backend,
    GpuConsumption,
    Node,
    NodeMembership,
    Pod,
    Pool,
    Project,
    QuietGpu,
    UsageSample,
    UtilizationSample,
)
from ..telemetry.prometheus import GpuReading, PrometheusClient, PrometheusError, gpu_utilization, label_matcher
from .capacity import history
from .gpuctl import USER_LABELS, node_get
from .quotas import QUEUE_LABEL

# The periods the charts and the consumption report offer.
PERIODS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
HELD_NAMES_PER_QUERY = 5000  # pod names a query of the idle workloads' GPUs names (SQLite takes 32,766 values)
HOURLY_CONSUMPTION_DAYS = 7  # a report reaching further back than this is counted in whole days
# The fields of an idle workload's row and of a consumption row (after the value counted by), in the order the
# exports write them.
IDLE_WORKLOAD_COLUMNS = (
    "backend",
    "namespace",
    "pod",
    "user",
    "project",
    "pool",
    "node",
    "gpus",
    "idle_gpus",
    "mig",
    "idle_mig",
    "idle_since",
    "idle_for_seconds",
)
GPU_HOURS_COLUMNS = ("allocated_gpu_hours", "idle_gpu_hours", "idle_share")


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
    gpus: float  # ``engine.device_share``: what the device weighs in averages and GPU-hours
    profile: str = ""  # a MIG instance's profile as NVIDIA names it (``3g.40gb``); "" for a whole GPU or a share


@dataclass(frozen=True, slots=True)
class Workload:
    """Who a pod works for: its user, pool and project (each empty when unknown)."""

    user: str = ""
    pool: str = ""
    project: str = ""


# -- reading the devices ---------------------------------------------------------------------------------------


# A page's live reads of Prometheus (``node_gpus``, ``node_utilization_series``): a web thread waits at most this
# (connect, read) for a slow Prometheus; a node's GPUs then show their last reading and its age (``PAGE_READINGS``).
PAGE_PROMETHEUS_TIMEOUTS = (1.0, 2.0)
# How long a node's last good reading is kept to be shown while Prometheus does not answer.
PAGE_READING_SECONDS = 3600


def prometheus_client(backend: Backend, *, timeouts: tuple[float, float] | None = None) -> PrometheusClient:
    """A client of the backend's Prometheus, with the credentials its ``prometheus_token_env`` names, which go only
    to the URL an administrator confirmed them for (``Backend.prometheus_confirmed_url``).

    The variable holds a bearer token, or ``user:password`` for basic authentication. Raises PrometheusError when
    the variable is not set (a status line names it) and ValueError for a URL the client refuses.
    """
    token = username = password = None
    confirmed = (backend.prometheus_confirmed_url, backend.prometheus_confirmed_env)
    if backend.prometheus_token_env and confirmed != (backend.prometheus_url, backend.prometheus_token_env):
        raise PrometheusError(
            f"The Prometheus credentials of backend {backend.name} are not sent: its prometheus_url or "
            "prometheus_token_env changed since an administrator confirmed where they go (an administrator confirms "
            "by saving the backend).",
            reason="http",
        )
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
    bounds = {"connect_timeout": timeouts[0], "read_timeout": timeouts[1]} if timeouts else {}
    return PrometheusClient(backend.prometheus_url, token=token, username=username, password=password, **bounds)


def _nodes(backend: Backend, host: str = ""):
    nodes = Node.objects.filter(backend=backend)
    return nodes.filter(name=host) if host else nodes


def node_replicas(backend: Backend, *, host: str = "") -> dict[str, int]:
    """Node name -> time-slicing replicas per GPU (0: not time-sliced) of the backend's nodes (or of ``host``)."""
    return dict(_nodes(backend, host).values_list("name", "gpu_replicas"))


def _held_pods(backend: Backend, host: str = "") -> list[dict]:
    """The pods bound to a node and holding GPUs or MIG devices, as Pod objects the simulated exporter reads (with
    the one label it reads, the behaviour a pod may declare)."""
    pods = Pod.objects.filter(backend=backend).exclude(node_name="").exclude(phase__in=("Succeeded", "Failed"))
    if host:
        pods = pods.filter(node_name=host)
    found = []
    rows = (
        pods.filter(Q(gpu__gt=0) | ~Q(mig_devices={}))
        .annotate(activity=KeyTextTransform(dcgm.ACTIVITY_LABEL, "labels"))
        .values_list("namespace", "name", "uid", "node_name", "phase", "gpu", "mig_devices", "created", "activity")
    )
    for namespace, name, uid, node_name, phase, gpu, mig, created, activity in rows:
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
                    "labels": {dcgm.ACTIVITY_LABEL: activity} if activity else {},
                },
                "spec": {"nodeName": node_name, "containers": [{"name": "main", "resources": {"requests": requests}}]},
                "status": {"phase": phase},
            }
        )
    return found


@dataclass(frozen=True, slots=True)
class SimulatedInputs:
    """What the simulated exporter reads: the nodes as Node objects, and the pods holding GPUs as Pod objects, by
    (namespace, name)."""

    node_objects: list[dict]
    pods: dict[tuple[str, str], dict]


def simulated_inputs(backend: Backend, *, host: str = "") -> SimulatedInputs:
    """The backend's nodes (or ``host``) and the pods holding their GPUs, read once (two queries)."""
    node_objects = [
        {"metadata": {"name": name, "labels": labels or {}}, "status": {"allocatable": allocatable or {}}}
        for name, labels, allocatable in _nodes(backend, host).values_list("name", "labels", "allocatable")
    ]
    pods = {(pod["metadata"]["namespace"], pod["metadata"]["name"]): pod for pod in _held_pods(backend, host)}
    return SimulatedInputs(node_objects, pods)


def simulated_devices(
    backend: Backend, now: float, *, host: str = "", inputs: SimulatedInputs | None = None
) -> tuple[list[Device], list[tuple]]:
    """The simulated exporter's devices at ``now`` over the nodes and pods the console holds (pods created after
    ``now`` left out), and the held devices as (device, namespace, pod, pod object, ordinal) for the idle check."""
    inputs = inputs or simulated_inputs(backend, host=host)
    moment = datetime.fromtimestamp(now, tz=UTC).isoformat().replace("+00:00", "Z")
    pods = [pod for pod in inputs.pods.values() if pod["metadata"]["creationTimestamp"] <= moment]
    return exporter_devices(inputs.node_objects, pods, now)


def _replicas(labels: dict) -> int:
    """A node's time-slicing replicas per GPU (``nvidia.com/gpu.replicas``), 0 when it has none."""
    text = str(labels.get(GPU_REPLICAS_LABEL) or "")
    return int(text) if text.isdigit() else 0


def exporter_devices(node_objects: list[dict], pods: list[dict], now: float) -> tuple[list[Device], list[tuple]]:
    """What the simulated exporter reports at ``now`` for these Node and Pod objects, as devices, and the held
    devices as (device, namespace, pod, pod object, ordinal)."""
    replicas = {node["metadata"]["name"]: _replicas(node["metadata"].get("labels") or {}) for node in node_objects}
    by_identity = {(pod["metadata"]["namespace"], pod["metadata"]["name"]): pod for pod in pods}
    devices, held = [], []
    for sample in dcgm.gpu_samples(node_objects, pods, now):
        instance = "" if sample.gpu_instance_id is None else str(sample.gpu_instance_id)
        vgpu = "" if sample.vgpu is None else str(sample.vgpu)
        name = engine.device_name(sample.uuid, instance, vgpu)
        share = engine.device_share(mig_profile=sample.gpu_instance_profile, replicas=replicas.get(sample.hostname, 0))
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
                share,
                sample.gpu_instance_profile or "",
            )
        )
        if sample.pod:
            pod = by_identity[(sample.namespace, sample.pod)]
            held.append((name, sample.namespace, sample.pod, pod, sample.ordinal))
    return devices, held


def prometheus_readings(
    client: PrometheusClient, now: float, *, host: str = "", free_memory: bool = True
) -> list[GpuReading]:
    """Every device Prometheus reports (of ``host`` when given) at ``now``: ``gpu_utilization``, the engine activity
    of MIG instances only (the whole GPUs' is not used), the free memory only with ``free_memory``."""
    return gpu_utilization(client, at=now, host=host, engine_activity="mig", free_memory=free_memory)


def prometheus_devices(
    readings: list[GpuReading], replicas: dict[str, int], memory: dict[str, float] | None = None
) -> list[Device]:
    """The devices of ``readings`` on the backend's nodes (``replicas``: node name -> time-slicing replicas).

    A device's memory is its used and free memory; for readings without the free memory, ``memory`` (device name ->
    MiB, as an earlier reading found it), else what it uses (a lower bound until the next full reading).
    """
    devices = []
    for reading in readings:
        if reading.hostname not in replicas:
            continue  # another cluster's GPU, scraped by the same Prometheus
        util = reading.util
        if util is None and reading.gr_engine_active is not None:
            util = reading.gr_engine_active * 100  # MIG instances: DCGM's signal for them
        name = engine.device_name(reading.uuid, reading.gpu_instance_id, reading.vgpu)
        used = reading.fb_used or 0.0
        if reading.fb_free is not None:
            total = used + reading.fb_free
        else:
            total = max(used, (memory or {}).get(name, used))
        devices.append(
            Device(
                reading.hostname,
                name,
                reading.model,
                reading.namespace,
                reading.pod,
                util,
                used,
                total,
                engine.device_share(mig_profile=reading.gpu_instance_profile, replicas=replicas[reading.hostname]),
                reading.gpu_instance_profile or "",
            )
        )
    return devices


@dataclass(frozen=True, slots=True)
class WorkloadContext:
    """What tells a pod's pool and project: the backend's pools, each node's first pool, each namespace's project."""

    pool_names: frozenset[str]
    node_pool: dict[str, str]
    projects: frozenset[str]
    namespace_project: dict[str, str]

    def workload(self, *, namespace: str, labels: dict, pool_label: str, node_name: str) -> Workload:
        """A pod's user (its user label), pool (its pool label when that names a pool of the backend, else its
        node's pool) and project (its ``runai/queue`` label, else its namespace's project)."""
        user = next((labels[key] for key in USER_LABELS if labels.get(key)), "")
        queue = labels.get(QUEUE_LABEL)
        project = queue if queue in self.projects else self.namespace_project.get(namespace, "")
        pool = pool_label if pool_label in self.pool_names else self.node_pool.get(node_name, "")
        return Workload(str(user), pool, project)


def workload_context(backend: Backend) -> WorkloadContext:
    """The backend's pools, its nodes' first pools (by name) and the projects' namespaces (three queries)."""
    node_pool: dict[str, str] = {}
    for node_name, pool_name in (
        NodeMembership.objects.filter(node__backend=backend)
        .order_by("pool__name")
        .values_list("node__name", "pool__name")
    ):
        node_pool.setdefault(node_name, pool_name)
    owner: dict[str, str] = {}
    projects = set()
    for name, namespaces in Project.objects.order_by("created_at", "id").values_list("name", "namespaces"):
        projects.add(name)
        for namespace in namespaces or [f"runai-{name}"]:
            owner.setdefault(namespace, name)
    pool_names = frozenset(Pool.objects.filter(backend=backend).values_list("name", flat=True))
    return WorkloadContext(pool_names, node_pool, frozenset(projects), owner)


def gpu_workloads(backend: Backend) -> dict[tuple[str, str], Workload]:
    """(namespace, pod) -> Workload for the backend's pods bound to a node and holding GPUs (four queries; the
    labels a workload needs are read out of the pods' labels by the database, not every label decoded here)."""
    context = workload_context(backend)
    keys = (*USER_LABELS, QUEUE_LABEL)
    rows = (
        Pod.objects.filter(backend=backend)
        .exclude(node_name="")
        .filter(Q(gpu__gt=0) | ~Q(mig_devices={}))
        .annotate(**{f"label_{index}": KeyTextTransform(key, "labels") for index, key in enumerate(keys)})
        .values_list("namespace", "name", "node_name", "pool_name", *(f"label_{index}" for index in range(len(keys))))
    )
    found = {}
    for namespace, name, node_name, pool_name, *values in rows:
        labels = {key: value for key, value in zip(keys, values, strict=True) if value}
        found[(namespace, name)] = context.workload(
            namespace=namespace, labels=labels, pool_label=pool_name, node_name=node_name
        )
    return found


# -- idle GPUs ---------------------------------------------------------------------------------------------------


def _held_gpus(rows: list[dict]) -> dict[tuple[int, str, str], float]:
    """GPUs each pod of ``rows`` holds: whole GPUs and fractions, MIG devices as their slices of seven.

    The pods are asked for by name, a query per ``HELD_NAMES_PER_QUERY`` (a list, not a subquery on the quiet GPUs:
    PostgreSQL, its statistics taken while there were none, would scan them once per pod).
    """
    keys = {(row["backend_id"], row["namespace"], row["pod"]) for row in rows}
    backends, names = {key[0] for key in keys}, sorted({key[2] for key in keys})
    held = {}
    for first in range(0, len(names), HELD_NAMES_PER_QUERY):
        pods = (
            Pod.objects.filter(backend_id__in=backends, name__in=names[first : first + HELD_NAMES_PER_QUERY])
            .order_by()
            .values_list("backend_id", "namespace", "name", "gpu", "mig_devices")
        )
        for backend_id, namespace, name, gpu, mig in pods:
            if (backend_id, namespace, name) in keys:
                slices = sum(
                    engine.device_share(mig_profile=profile) * int(count) for profile, count in (mig or {}).items()
                )
                held[(backend_id, namespace, name)] = (float(gpu or 0) + slices, float(gpu or 0), dict(mig or {}))
    return held


def idle_duration() -> timedelta:
    """How long a GPU a pod holds must stay quiet to be idle (``GPUPOOL["IDLE_SECONDS"]``)."""
    return timedelta(seconds=float(settings.GPUPOOL["IDLE_SECONDS"]))


def _idle(user, *, now: datetime, pools=None):
    """The quiet GPUs ``user`` may see that are idle at ``now``: quiet for at least the idle duration."""
    return QuietGpu.objects.restrict(user, pools=pools).filter(quiet_since__lte=now - idle_duration())


def idle_workloads(*, user, filters=None, now: datetime | None = None, pools=None) -> list[dict]:
    """The workloads holding idle GPUs that ``user`` may see (pools they may read), longest idle first.

    A row per pod: its backend, namespace, user, project and pool, a node it runs on, the GPUs it holds and how many
    of them are idle (whole GPUs in ``gpus`` and ``idle_gpus``; MIG slices by profile in ``mig`` and ``idle_mig``),
    and since when all of those have been quiet (``idle_for_seconds``: the shortest time of its
    idle GPUs'). Filters: ``IdleGpuFilterSet``. Three queries (up to 5,000 idle workloads), two when ``pools``
    gives every pool's backend id and name, read already.
    """
    now = now or timezone.now()
    queryset = filtered(IdleGpuFilterSet, filters, _idle(user, now=now, pools=pools)).qs
    rows = list(
        queryset.values("backend_id", "namespace", "pod")
        .annotate(
            backend=Max("backend__name"),
            user=Max("user"),
            project=Max("project"),
            pool=Max("pool"),
            node=Min("node_name"),
            idle_gpus=Sum("gpus"),
            since=Max("quiet_since"),
        )
        .order_by("since", "namespace", "pod")
    )
    held = _held_gpus(rows)
    found = []
    for row in rows:
        total, whole, slices = held.get((row["backend_id"], row["namespace"], row["pod"]), (0.0, 0.0, {}))
        total = max(total, row["idle_gpus"])
        part = row["idle_gpus"] / total if total else 0.0
        found.append(
            {
                "backend": row["backend"],
                "namespace": row["namespace"],
                "pod": row["pod"],
                "user": row["user"],
                "project": row["project"],
                "pool": row["pool"],
                "node": row["node"],
                # Whole GPUs, and MIG slices by profile (SEMANTICS §6.1: a slice is never a decimal of a GPU).
                "gpus": _number(whole if slices else total),
                "idle_gpus": _number((whole if slices else total) * part if slices else row["idle_gpus"]),
                "mig": slices,
                "idle_mig": {profile: round(count * part) for profile, count in slices.items()},
                "idle_since": row["since"].isoformat(),
                "idle_for_seconds": max(0, int((now - row["since"]).total_seconds())),
            }
        )
    return found


def idle_gpus_by_pool(*, user, now: datetime | None = None) -> dict[str, float]:
    """Idle GPUs per pool (``""``: workloads in no pool) that ``user`` may see: what ``/metrics`` exports."""
    rows = _idle(user, now=now or timezone.now()).values("pool").annotate(gpus=Sum("gpus")).order_by("pool")
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
    # In UTC (the days are UTC days); a moment that has none (year 1 or 9999 with an offset) is refused.
    until, since = filters.get("until") or now, filters.get("since")
    try:
        until = until.astimezone(UTC)
    except OverflowError:
        raise ConfigError("until: the moment is out of range.") from None
    try:
        since = since.astimezone(UTC) if since else until - PERIODS[filters.get("period") or "30d"]
    except OverflowError:
        raise (
            ConfigError("since: the moment is out of range.")
            if since
            else ConfigError("until: the period would start before year 1.")
        ) from None
    if since >= until:
        raise ConfigError("since: the period's start must be before its end.")
    if since < now - timedelta(days=HOURLY_CONSUMPTION_DAYS):
        return since.replace(hour=0, minute=0, second=0, microsecond=0), until, GpuConsumption.Resolution.DAY
    return since.replace(minute=0, second=0, microsecond=0), until, GpuConsumption.Resolution.HOUR


def _consumption_rows(since: datetime, until: datetime, resolution: str) -> Q:
    """The rows that count [since, until): in whole days, the days' rows; in whole hours, the days' rows of the whole
    days within and the hours' rows of the parts before and after them (a week is 7 day rows and 48 hour rows a
    value at most, not 168)."""
    days, hours = GpuConsumption.Resolution.DAY, GpuConsumption.Resolution.HOUR
    if resolution == days:
        return Q(resolution=days, start__gte=since, start__lt=until)
    midnight = since.replace(hour=0, minute=0, second=0, microsecond=0)
    first_day = midnight if midnight == since else midnight + timedelta(days=1)
    last_day = until.replace(hour=0, minute=0, second=0, microsecond=0)
    if first_day >= last_day:
        return Q(resolution=hours, start__gte=since, start__lt=until)
    return (
        Q(resolution=days, start__gte=first_day, start__lt=last_day)
        | Q(resolution=hours, start__gte=since, start__lt=first_day)
        | Q(resolution=hours, start__gte=last_day, start__lt=until)
    )


def consumption_report(*, user, filters=None, now: datetime | None = None) -> dict:
    """GPU-hours allocated and idle-allocated per pool, user, namespace or project (``by``) over a period, counted
    in the pools ``user`` may see (by project: of the projects they may see); rows by allocated hours, largest
    first; the total is the rows' sum. Filters: ``ConsumptionFilterSet``
    (``by``, ``period`` or ``since``/``until``, ``pool``, ``backend``). One query.
    """
    filterset = filtered(ConsumptionFilterSet, filters, GpuConsumption.objects.restrict(user))
    cleaned = filterset.form.cleaned_data
    by = cleaned.get("by") or ConsumptionBy.POOL
    since, until, resolution = consumption_period(cleaned, now=now)
    rows = (
        filterset.qs.filter(_consumption_rows(since, until, resolution), dimension=by)
        .values("value")
        .annotate(allocated=Sum("allocated"), idle=Sum("idle"))
        .order_by("-allocated", "value")
    )
    rows = list(rows)
    if by == ConsumptionBy.PROJECT:
        # A project's figures are read like every project read (SEMANTICS §7.4): only of projects one may see.
        shown = set(access.visible(user, VIEW_PROJECT, [row["value"] for row in rows if row["value"]]))
        rows = [row for row in rows if not row["value"] or row["value"] in shown]
    found = [_hours({by: row["value"]}, row["allocated"], row["idle"]) for row in rows]
    total = _hours({}, sum(row["allocated"] for row in rows), sum(row["idle"] for row in rows))
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


UTILIZATION_FIGURES = ("utilization", "memory_used", "memory_total", "gpus", "idle_gpus")


def utilization_series(*, pool: str, since: datetime, until: datetime | None = None) -> list[dict]:
    """A pool's utilization samples between two times, at one resolution (``history``; the caller has checked the
    pool is visible)."""
    until = until or timezone.now()
    _, rows = history(
        UtilizationSample.objects.filter(pool=pool),
        since=since,
        until=until,
        figures=UTILIZATION_FIGURES,
        read=lambda queryset: queryset.values("at", *UTILIZATION_FIGURES),
    )
    return [{**row, "at": row["at"].timestamp()} for row in rows]


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


def pool_utilization_latest(*, user) -> dict[str, dict]:
    """Pool name -> its latest minute sample (``at``, ``gpus``, ``utilization``, ``memory_used``, ``memory_total``,
    ``idle_gpus``) for the pools ``user`` may see that have one: what ``/metrics`` exports. One query."""
    latest = (
        UtilizationSample.objects.filter(pool=OuterRef("name"), resolution=UsageSample.Resolution.MINUTE)
        .order_by("-at")
        .values("pk")[:1]
    )
    rows = (
        UtilizationSample.objects.restrict(user)
        .filter(pk__in=Pool.objects.annotate(sample=Subquery(latest)).values("sample"))
        .order_by("pool")
        .values("pool", "at", "gpus", "utilization", "memory_used", "memory_total", "idle_gpus")
    )
    return {row.pop("pool"): row for row in rows}


# -- one node's GPUs, read live ----------------------------------------------------------------------------------


def utilization_source(backend: Backend) -> str:
    """Where a backend's GPU utilization comes from: ``prometheus``, ``simulated`` or ``""`` (nowhere)."""
    if backend.prometheus_url:
        return "prometheus"
    return "simulated" if backend.kind == BackendKind.SIMULATED else ""


def node_gpus(name: str, *, user, backend: str | None = None, now: float | None = None) -> dict:
    """A node's GPUs now, each with its utilization, memory and idle time (a node ``user`` may not see is
    NotFound). Read live from the backend's Prometheus (bounded: ``PAGE_PROMETHEUS_TIMEOUTS``) or the simulated
    exporter; a Prometheus that does not answer gives ``error`` and the node's last reading, ``age_seconds`` old
    (none when this process has none), never an exception."""
    node = node_get(name, user, backend)
    now = timezone.now().timestamp() if now is None else now
    source, error, devices, read_at = utilization_source(node.backend), "", [], now
    last_reading = f"gpupool:node-gpus:{node.backend_id}:{node.name}"
    try:
        if source == "prometheus":
            with prometheus_client(node.backend, timeouts=PAGE_PROMETHEUS_TIMEOUTS) as client:
                readings = prometheus_readings(client, now, host=node.name)
            devices = prometheus_devices(readings, node_replicas(node.backend, host=node.name))
            cache.set(last_reading, (now, devices), PAGE_READING_SECONDS)
        elif source == "simulated":
            devices = simulated_devices(node.backend, now, host=node.name)[0]
    except (PrometheusError, ValueError) as exc:
        error = str(exc)
        kept = cache.get(last_reading) if source == "prometheus" else None
        if kept is not None:  # a slow or absent Prometheus: the last reading, saying how old it is
            read_at, devices = kept
            error += f" Showing the last reading, {max(0, now - read_at):.0f} s old."
    quiet = {
        (device, namespace, pod): since.timestamp()
        for device, namespace, pod, since in QuietGpu.objects.filter(
            backend=node.backend, node_name=node.name
        ).values_list("device", "namespace", "pod", "quiet_since")
    }
    duration = idle_duration().total_seconds()
    gpus = []
    for device in devices:
        idle_for = engine.idle_for(quiet.get((device.device, device.namespace, device.pod)), now, duration=duration)
        gpus.append(
            {
                "device": device.device,
                "model": device.model,
                "gpus": _number(device.gpus),
                # What the device is, as the node table counts it: a MIG slice by its profile, else GPUs.
                "slice": device.profile,
                "namespace": device.namespace,
                "pod": device.pod,
                "utilization": device.util,
                "memory_used": device.memory_used,
                "memory_total": device.memory_total,
                "idle_for_seconds": None if idle_for is None else int(idle_for),
            }
        )
    return {
        "node": node.name,
        "backend": node.backend.name,
        "source": source,
        "error": error,
        "gpus": gpus,
        "age_seconds": round(max(0.0, now - read_at), 1),
    }


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
            with prometheus_client(node.backend, timeouts=PAGE_PROMETHEUS_TIMEOUTS) as client:
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
            # The fleet at each moment, as its exporter would have reported then: the pods the node held at that
            # time, not the ones it holds now (which would draw an idle node until they started).
            fleet = source_for(node.backend).fleet
            t = since - since % step + step
            while t < until:
                node_objects = [item for item in fleet.nodes(t) if item["metadata"]["name"] == node.name]
                pods = [pod for pod in fleet.gpu_pods(t) if pod["spec"].get("nodeName") == node.name]
                devices = exporter_devices(node_objects, pods, t)[0]
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
        "step": step,
        "utilization": utilization,
        "memory_used": memory,
    }
