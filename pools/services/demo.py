"""The demo of ``make run``: the seeds' pools on simulated clusters whose usage moves by itself."""

from __future__ import annotations

import os

from django.db import transaction

from pools import selectors
from pools.choices import ConfigType
from pools.configs import read_document
from pools.inventory.files import DEMO_DIR
from pools.models import Backend, Pool

from .actors import SYSTEM, Actor
from .config import config_apply, config_import
from .inventory import backend_sync


def demo_install(*, actor: Actor = SYSTEM) -> bool:
    """Load the demo pools, templates, validations and backends, and sync their inventories.

    Only on a database without pools, so it never overwrites an administrator's work. Returns
    whether it installed anything.
    """
    if Pool.objects.exists():
        return False
    bundle_path = os.path.join(DEMO_DIR, "config.yaml")
    with transaction.atomic():
        config_import(
            data=read_document(bundle_path),
            actor=actor,
            description="Demo configuration",
            tags=["demo"],
            base_dir=DEMO_DIR,
        )
        default = selectors.config_show(config_type=ConfigType.BACKEND, name="default", user=actor.principal)["default"]
        if not default["source"]:
            default.update(
                kind="simulated",
                seed=5,
                source=os.path.join(DEMO_DIR, "inventory-default.json"),
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
