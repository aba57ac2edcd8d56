"""The demo of ``make run``: the seeds' pools on simulated clusters whose usage moves by itself."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction

from pools import selectors
from pools.choices import BackendKind, ConfigType
from pools.configs import read_document
from pools.engine.accounting import pod_resource_requests
from pools.fleet.catalogue import GPU, PRODUCT_LABEL
from pools.fleet.layouts import DEMO_BACKENDS, demo_blueprint
from pools.fleet.streams import parse_iso
from pools.inventory.files import node_labels_path
from pools.inventory.records import pod_record
from pools.models import Backend, Pool, Project, ProjectUsageMinute, UsageSample, UtilizationSample, WorkloadRun
from pools.selectors.quotas import QUEUE_LABEL

from .actors import SYSTEM, Actor
from .config import config_apply, config_import
from .inventory import backend_sync, inventory_source
from .utilization import utilization_backfill

# The demo's configuration bundle; its backends' blueprints are made by pools.fleet.layouts.
DEMO_BUNDLE = Path(__file__).resolve().parents[1] / "demo" / "config.yaml"


def demo_install(*, actor: Actor = SYSTEM) -> bool:
    """Load the demo pools, templates, validations and backends, and sync their inventories.

    Only on a database without pools, so it never overwrites an administrator's work. Returns
    whether it installed anything. On a database that has pools, only demo backends still reading the
    blueprints that used to be committed under ``pools/demo/`` are pointed at the generated ones. A new demo's
    clusters start with no label written to them: labels an earlier demo wrote (gpuctl's pools) are dropped.
    """
    if Pool.objects.exists():
        _demo_blueprints_move(actor)
        return False
    blueprints = demo_blueprints_write()
    for backend in DEMO_BACKENDS:
        Path(node_labels_path(backend)).unlink(missing_ok=True)
    with transaction.atomic():
        config_import(
            data=read_document(str(DEMO_BUNDLE)),
            actor=actor,
            description="Demo configuration",
            tags=["demo"],
            base_dir=str(blueprints),
        )
        default = selectors.config_show(config_type=ConfigType.BACKEND, name="default", user=actor.principal)["default"]
        if not default["source"]:
            default.update(
                kind="simulated",
                seed=5,
                source=str(blueprints / "default.json"),
                description="The default backend (a simulated fleet for the demo)",
            )
            config_apply(
                changes={ConfigType.BACKEND: {"default": default}},
                actor=actor,
                description="Make the default backend a simulated demo fleet",
                tags=["demo"],
            )
    for backend in Backend.objects.exclude(source=""):
        backend_sync(backend=backend)
    return True


def _demo_blueprints_move(actor: Actor) -> None:
    """Demo backends made before the blueprints were generated read ``pools/demo/inventory-<name>.json``, which
    no longer exists: point them at the generated blueprint (one revision), and leave every other backend be."""
    stale = {
        backend.name: backend.source
        for backend in Backend.objects.filter(name__in=list(DEMO_BACKENDS), source__contains="inventory-")
        if Path(backend.source).name == f"inventory-{backend.name}.json"
        and Path(backend.source).parent.match("pools/demo")
    }
    if not stale:
        return
    blueprints = demo_blueprints_write()
    bodies = selectors.config_show(config_type=ConfigType.BACKEND, user=actor.principal)
    changes = {name: {**bodies[name], "source": str(blueprints / f"{name}.json")} for name in stale}
    config_apply(
        changes={ConfigType.BACKEND: changes},
        actor=actor,
        description="Demo backends read their generated blueprints",
        tags=["demo"],
    )


def demo_blueprints_write() -> Path:
    """Write the blueprint of each demo backend (its nodes, and the namespaces and standing workloads of its load)
    as a List ``<backend>.json`` below the inventory directory, where the simulated backends read their
    blueprints; returns that directory. The files are the same every time."""
    directory = Path(settings.GPUPOOL_INVENTORY_DIR) / "demo"
    directory.mkdir(parents=True, exist_ok=True)
    for backend in DEMO_BACKENDS:
        text = json.dumps(demo_blueprint(backend), separators=(",", ":"))
        (directory / f"{backend}.json").write_text(text + "\n")
    return directory


# The last minutes a demo's history holds minute samples of, as a worker that has run for a while would (the
# charts of the last hours read them); before, one sample per hour, as the compaction leaves them.
MINUTE_HISTORY_SECONDS = 90 * 60


def history_moments(now: float, *, days: int = 7) -> list[float]:
    """The moments a demo history is made of, oldest first: every hour of the ``days`` before the last
    ``MINUTE_HISTORY_SECONDS``, then every minute of those (what the charts read: hourly samples over days, minute
    samples within the last hours)."""
    hour = 3600
    end = now - now % 60
    recent = end - MINUTE_HISTORY_SECONDS
    moments = set(range(int(end - days * 86400) // hour * hour, int(recent), hour))
    moments |= set(range(int(recent), int(end) + 1, 60))
    return sorted(float(moment) for moment in moments)


def _resolution(moment: float, now: float) -> str:
    """The resolution of the demo's sample at ``moment`` (``history_moments``)."""
    recent = now - now % 60 - moment <= MINUTE_HISTORY_SECONDS
    return UsageSample.Resolution.MINUTE if recent else UsageSample.Resolution.HOUR


def demo_history_backfill(*, days: int = 7, now: float | None = None) -> int:
    """A week of usage, quota and utilization history for the demo's simulated backends, so that a newcomer's first
    look at the charts shows curves: the rounds the worker would have recorded, from each fleet's state at those
    times, at the resolution the worker's compaction would have left.

    Only on a database without any usage or utilization sample (the first ``make run``). Returns the number of
    moments recorded per backend (0 when nothing was done).
    """
    if UsageSample.objects.exists() or UtilizationSample.objects.exists():
        return 0
    now = time.time() if now is None else now
    moments = history_moments(now, days=days)
    for backend in Backend.objects.filter(kind=BackendKind.SIMULATED).exclude(source=""):
        fleet = inventory_source(backend).fleet
        states = [(moment, fleet.nodes(moment), fleet.gpu_pods(moment)) for moment in moments]
        _usage_backfill(backend, states, now)
        utilization_backfill(backend=backend, states=states, now=now, minute_span=MINUTE_HISTORY_SECONDS)
    return len(moments)


def _usage_backfill(backend: Backend, states: list[tuple[float, list[dict], list[dict]]], now: float) -> None:
    """Usage samples of the backend's pools, GPU products and pools' quotas at each state's moment, as
    ``usage_sample_record`` takes them: the GPUs the fleet's pods held then (``states`` are (moment, nodes, pods
    holding GPUs)), against today's capacity, quota and deserved GPUs (the history of a demo, not a record).

    A pool's ``used`` is what pods hold on its node set (SEMANTICS §6.1); ``quota_used`` its own non-preemptible
    pods' GPUs; a pool's quota sample the GPUs its departments' projects hold on its nodes.
    """
    pools = {row["name"]: row for row in selectors.pool_list(user=SYSTEM.principal) if row["backend"] == backend.name}
    members: dict[str, set[str]] = {}  # node -> the pools whose node set holds it
    pool_nodes: dict[str, set[str]] = {}  # pool -> its own nodes
    for node_name, pool_name in (
        selectors.memberships_visible(user=SYSTEM.principal)
        .filter(node__backend=backend)
        .values_list("node__name", "pool__name")
        .distinct()
    ):
        pool_nodes.setdefault(pool_name, set()).add(node_name)
    for name, row in pools.items():
        for other in row["node_set"]:
            for node_name in pool_nodes.get(other, ()):
                members.setdefault(node_name, set()).add(name)
    project_names, project_namespaces = _demo_projects()
    owner = {
        namespace: name for name, spaces in Project.objects.values_list("name", "namespaces") for namespace in spaces
    }
    capacity = selectors.project_allocations().get(backend.pk, (0.0, {}))[0]
    minutes = []  # time-based fair share's history (SEMANTICS §9.3): what each project held at each moment
    # The runs seen in the minute states (workload key -> [first moment, last moment, earliest start, project]):
    # what start estimates learn runtimes from (SEMANTICS §10.1), as the worker's minutes would have noted them.
    runs: dict[tuple[str, str, str], list] = {}
    quota_pools = {row["pool"]: row for row in selectors.quota_pool_totals() if row["pool"] in pools}
    products = {row["gpu_product"]: row for row in selectors.gpu_product_usage() if row["backend_id"] == backend.pk}
    samples = []
    gpus_of: dict[int, float] = {}  # GPUs requested, by the identity of a pod's containers (the fleet shares them)
    for moment, nodes, pods in states:
        product_of = {
            node["metadata"]["name"]: (node["metadata"].get("labels") or {}).get(PRODUCT_LABEL, "") for node in nodes
        }
        used = dict.fromkeys(pools, 0.0)
        quota_used = dict.fromkeys(pools, 0.0)
        allocated = dict.fromkeys(quota_pools, 0.0)
        product_used = dict.fromkeys(products, 0.0)
        held: dict[str, float] = {}
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            gpus = gpus_of.get(id(pod["spec"]["containers"]))
            if gpus is None:
                gpus = gpus_of[id(pod["spec"]["containers"])] = float(pod_resource_requests(pod["spec"]).get(GPU, 0))
            node_name = pod["spec"].get("nodeName") or ""
            for pool in members.get(node_name, ()):
                used[pool] += gpus
            own = labels.get(backend.pool_label, "")
            if own in pools and labels.get(backend.priority_label) != "LOW":
                quota_used[own] += gpus
            if labels.get(QUEUE_LABEL) in project_names or pod["metadata"].get("namespace") in project_namespaces:
                project = labels.get(QUEUE_LABEL) if labels.get(QUEUE_LABEL) in project_names else None
                project = project or owner[pod["metadata"]["namespace"]]
                if node_name:
                    held[project] = held.get(project, 0.0) + gpus
                for pool in allocated:
                    if node_name in pool_nodes.get(pool, ()):
                        allocated[pool] += gpus
            if product_of.get(node_name) in product_used:
                product_used[product_of[node_name]] += gpus
        resolution = _resolution(moment, now)
        if resolution == UsageSample.Resolution.MINUTE:
            _note_runs(runs, moment, pods, owner, project_names)
        at = datetime.fromtimestamp(moment, tz=UTC).replace(second=0, microsecond=0)
        seconds = 60 if resolution == UsageSample.Resolution.MINUTE else 3600
        minutes.append(ProjectUsageMinute(backend=backend, at=at, seconds=seconds, capacity=capacity, allocated=held))
        for name, row in pools.items():
            gpu = row["gpu"]
            samples.append(
                UsageSample(
                    scope=UsageSample.Scope.POOL,
                    key=name,
                    backend=backend,
                    resolution=resolution,
                    at=at,
                    used=min(used[name], gpu["total_capacity"]),
                    capacity=gpu["total_capacity"],
                    quota_used=quota_used[name],
                    quota_limit=gpu["quota_limit"],
                )
            )
        samples += [
            UsageSample(
                scope=UsageSample.Scope.QUOTA,
                key=name,
                backend=backend,
                resolution=resolution,
                at=at,
                used=allocated[name],
                capacity=row["capacity"],
                quota_used=allocated[name],
                quota_limit=row["deserved"],
            )
            for name, row in quota_pools.items()
        ]
        samples += [
            UsageSample(
                scope=UsageSample.Scope.PRODUCT,
                key=product,
                backend=backend,
                resolution=resolution,
                at=at,
                used=min(product_used[product], row["capacity"]),
                capacity=row["capacity"],
            )
            for product, row in products.items()
        ]
    UsageSample.objects.bulk_create(samples, ignore_conflicts=True, batch_size=1000)
    # The worker's first recording counts these into the backend's sums.
    ProjectUsageMinute.objects.bulk_create(minutes, ignore_conflicts=True, batch_size=1000)
    last = max((seen for _, seen, _, _ in runs.values()), default=None)
    WorkloadRun.objects.bulk_create(
        [
            WorkloadRun(
                backend=backend,
                namespace=namespace,
                workload_kind=kind,
                workload_name=name,
                project=project,
                started=datetime.fromtimestamp(min(first, started or first), tz=UTC),
                last_seen=datetime.fromtimestamp(seen, tz=UTC),
                finished=datetime.fromtimestamp(seen, tz=UTC),
            )
            for (namespace, kind, name), (first, seen, started, project) in runs.items()
            if seen < last and seen > min(first, started or first)  # gone before the last minute: finished
        ],
        batch_size=1000,
    )


def _note_runs(runs: dict, moment: float, pods: list[dict], owner: dict[str, str], projects: set[str]) -> None:
    """Note the workloads holding GPUs at ``moment`` (a minute state of the backfill) in ``runs``."""
    for pod in pods:
        record = pod_record(pod, [])
        if record is None or not record.node_name:
            continue
        key = (record.namespace, record.workload_kind, record.workload_name)
        queue = record.labels.get(QUEUE_LABEL)
        started = parse_iso(record.started) if record.started else None
        run = runs.get(key)
        if run is None:
            project = queue if queue in projects else owner.get(record.namespace, "")
            runs[key] = [moment, moment, started, project]
        else:
            run[1] = moment
            if started is not None and (run[2] is None or started < run[2]):
                run[2] = started


def _demo_projects() -> tuple[set[str], set[str]]:
    """The projects' names and namespaces: a fleet's pod belongs to a project by its ``runai/queue`` label or its
    namespace (SEMANTICS §9)."""
    names, namespaces = set(), set()
    for name, spaces in Project.objects.values_list("name", "namespaces"):
        names.add(name)
        namespaces.update(spaces or ())
    return names, namespaces
