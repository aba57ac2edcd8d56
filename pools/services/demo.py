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
from pools.fleet.layouts import DEMO_BACKENDS, demo_nodes
from pools.fleet.nodes import node_list
from pools.models import Backend, Pool, UsageSample, UtilizationSample

from .actors import SYSTEM, Actor
from .config import config_apply, config_import
from .inventory import backend_sync, inventory_source
from .utilization import MINUTE_RETENTION, utilization_backfill

# The demo's configuration bundle; its backends' blueprints are made by pools.fleet.layouts.
DEMO_BUNDLE = Path(__file__).resolve().parents[1] / "demo" / "config.yaml"


def demo_install(*, actor: Actor = SYSTEM) -> bool:
    """Load the demo pools, templates, validations and backends, and sync their inventories.

    Only on a database without pools, so it never overwrites an administrator's work. Returns
    whether it installed anything. On a database that has pools, only demo backends still reading the
    blueprints that used to be committed under ``pools/demo/`` are pointed at the generated ones.
    """
    if Pool.objects.exists():
        _demo_blueprints_move(actor)
        return False
    blueprints = demo_blueprints_write()
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
    """Write the nodes of each demo backend as a List ``<backend>.json`` below the inventory directory, where
    the simulated backends read their blueprints; returns that directory. The files are the same every time."""
    directory = Path(settings.GPUPOOL_INVENTORY_DIR) / "demo"
    directory.mkdir(parents=True, exist_ok=True)
    for backend in DEMO_BACKENDS:
        text = json.dumps(node_list(demo_nodes(backend)), separators=(",", ":"))
        (directory / f"{backend}.json").write_text(text + "\n")
    return directory


def history_moments(now: float, *, days: int = 7) -> list[float]:
    """The moments a demo history is made of, oldest first: every hour of the ``days`` before the last two days,
    every half hour of the last two days, every two minutes of the last hour (what the charts' periods read:
    hourly samples past two days, minute samples within)."""
    hour, half, minutes = 3600, 1800, 120
    end = now - now % 60
    moments = set(range(int(end - days * 86400) // hour * hour, int(end - 2 * 86400), hour))
    moments |= set(range(int(end - 2 * 86400) // half * half, int(end - hour), half))
    moments |= set(range(int(end - hour), int(end) + 1, minutes))
    return sorted(float(moment) for moment in moments)


def demo_history_backfill(*, days: int = 7, now: float | None = None) -> int:
    """A week of usage and utilization history for the demo's simulated backends, so that a newcomer's first look
    at the charts shows curves: the rounds the worker would have recorded, from each fleet's state at those times.

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
        utilization_backfill(backend=backend, states=states, now=now)
    return len(moments)


def _usage_backfill(backend: Backend, states: list[tuple[float, list[dict], list[dict]]], now: float) -> None:
    """Usage samples of the backend's pools and GPU products at each state's moment: the GPUs the fleet's pods held
    then (``states`` are (moment, nodes, pods holding GPUs)), against today's capacity and quota (the history of a
    demo, not a record)."""
    pools = {row["name"]: row for row in selectors.pool_list(user=SYSTEM.principal) if row["backend"] == backend.name}
    rows = list(Pool.objects.filter(backend=backend).values("id", "name", "backend_id", "node_label"))
    ids = selectors.node_based_pools(rows, [backend.pk])
    node_based = {row["name"] for row in rows if row["id"] in ids}
    members: dict[str, list[str]] = {}
    for node_name, pool_name in (
        selectors.memberships_visible(user=SYSTEM.principal)
        .filter(node__backend=backend)
        .values_list("node__name", "pool__name")
        .distinct()
    ):
        members.setdefault(node_name, []).append(pool_name)
    products = {row["gpu_product"]: row for row in selectors.gpu_product_usage() if row["backend_id"] == backend.pk}
    samples = []
    gpus_of: dict[int, float] = {}  # GPUs requested, by the identity of a pod's containers (the fleet shares them)
    for moment, nodes, pods in states:
        product_of = {
            node["metadata"]["name"]: (node["metadata"].get("labels") or {}).get(PRODUCT_LABEL, "") for node in nodes
        }
        used = dict.fromkeys(pools, 0.0)
        quota_used = dict.fromkeys(pools, 0.0)
        product_used = dict.fromkeys(products, 0.0)
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            gpus = gpus_of.get(id(pod["spec"]["containers"]))
            if gpus is None:
                gpus = gpus_of[id(pod["spec"]["containers"])] = float(pod_resource_requests(pod["spec"]).get(GPU, 0))
            counted = labels.get(backend.pool_label, "")
            node_name = pod["spec"].get("nodeName") or ""
            holders = {pool for pool in members.get(node_name, ()) if pool in node_based}
            if counted in pools and counted not in node_based:
                holders.add(counted)
            for pool in holders & pools.keys():
                used[pool] += gpus
                if labels.get(backend.priority_label) != "LOW":
                    quota_used[pool] += gpus
            if product_of.get(node_name) in product_used:
                product_used[product_of[node_name]] += gpus
        at = datetime.fromtimestamp(moment, tz=UTC).replace(second=0, microsecond=0)
        resolution = UsageSample.Resolution.MINUTE
        if now - moment > MINUTE_RETENTION.total_seconds():
            at, resolution = at.replace(minute=0), UsageSample.Resolution.HOUR
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
                    quota_used=min(quota_used[name], gpu["total_capacity"]),
                    quota_limit=gpu["quota_limit"],
                )
            )
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
