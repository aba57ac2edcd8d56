"""The demo of ``make run``: the seeds' pools on simulated clusters whose usage moves by itself."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction

from pools import selectors
from pools.choices import ConfigType
from pools.configs import read_document
from pools.fleet.layouts import DEMO_BACKENDS, demo_nodes
from pools.fleet.nodes import node_list
from pools.models import Backend, Pool

from .actors import SYSTEM, Actor
from .config import config_apply, config_import
from .inventory import backend_sync

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
