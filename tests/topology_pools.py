"""A pool ``racked`` with zone and rack levels over a cluster's ``team=a`` nodes, as the topology tests set it up."""

from __future__ import annotations

from pools import services
from pools.choices import ConfigType

ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"


def racked_pool(backend, actor, *, others: tuple[str, ...] = ()) -> None:
    """Pool ``racked`` (levels zone, rack) over ``backend``'s nodes labelled ``team=a``, and pools ``others`` over
    the same nodes without levels."""
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {"a": {"spec": {"nodeSelector": {"team": "a"}}}},
            ConfigType.POOL: {
                "racked": {
                    "backend": backend.name,
                    "common_pod_template": ["a"],
                    "topology_keys": [{"key": "zone", "label": ZONE}, {"key": "rack", "label": RACK}],
                },
                **{name: {"backend": backend.name, "common_pod_template": ["a"]} for name in others},
            },
        },
        actor=actor,
    )
