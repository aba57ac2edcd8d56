"""Made-up GPU fleets: Kubernetes Node and Pod objects, deterministic from a seed, for the demo, the simulated
backends, the tests and the benchmarks. Pure Python (no Django).

- ``catalogue``: the one list of GPU products, machine shapes and node kinds;
- ``nodes``: Node objects of those kinds, and blueprints (nodes read from a List, grown by copying);
- ``pods``: Pod objects of OSMO jobs and system daemonsets;
- ``timeline``: ``Fleet``, nodes going down and jobs coming and going with time, and snapshots;
- ``layouts``: named fleets: the demo's backends and the benchmark's cluster of pools.
"""

from .nodes import blueprint_from_list, blueprint_namespaces, blueprint_pods
from .timeline import Fleet, FleetEvent

__all__ = ["Fleet", "FleetEvent", "blueprint_from_list", "blueprint_namespaces", "blueprint_pods"]
