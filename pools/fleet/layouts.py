"""Named fleets: the demo's six backends, and a cluster divided into pools by node labels for the benchmarks.

The demo's node names, counts and special nodes are documented in ``pools/demo/README.md``; the pod templates of
``pools/demo/config.yaml`` select these nodes by the labels and taints given here, and every platform there
selects at least one node (a test checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pools.inventory.records import paused_gc

from .catalogue import (
    A10G_G5,
    CPU_64,
    CPU_96,
    CPU_SYSTEM,
    DGX_A100,
    DGX_A100_MIG,
    DGX_A100_MIG_1G,
    DGX_B200,
    DGX_H100,
    DGX_H200,
    GB200_TRAY,
    L40_OVX,
    L40_SIMULATION,
    L40S_4X,
    PRODUCT_LABEL,
    T4_N1,
    Kind,
    dedicated,
    kind_of,
    labelled,
    product_taint,
)
from .nodes import Site, node_object
from .streams import BASE_TIME, Stream
from .timeline import Fleet

CORDON_REASON = "RMA: Xid 79 (GPU fell off the bus) on GPU 3"


@dataclass(frozen=True)
class Group:
    """``count`` nodes of one kind named ``<prefix>-001``...; ``special`` sets a few of them apart by number.

    ``special`` maps a node number to a different kind, ``"NotReady"``, ``"Unknown"`` or ``"cordoned"``.
    """

    prefix: str
    count: int
    kind: Kind
    zone: str = ""
    special: Mapping[int, Kind | str] = field(default_factory=dict)


_L40S_SIMULATION = dedicated(kind_of("sm-l40s-8x", product_taint("L40S")), "simulation")
_T4_GKE = labelled(
    kind_of("n1-standard-32", ("nvidia.com/gpu", "present", "NoSchedule")),
    **{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "cloud.google.com/gke-nodepool": "t4-pool"},
)
_A10G_EKS = labelled(
    kind_of("g5.12xlarge", ("nvidia.com/gpu", "", "NoSchedule")), **{"eks.amazonaws.com/nodegroup": "dev-gpu"}
)

# backend name -> (site, node groups)
DEMO_BACKENDS: dict[str, tuple[Site, tuple[Group, ...]]] = {
    "gpu-cluster-01": (
        Site("dc-santaclara", ("sc1-hall2-row-a", "sc1-hall2-row-b"), "metal://santaclara"),
        (
            Group("h100-a", 8, DGX_H100, "sc1-hall2-row-a", {6: "Unknown"}),
            Group("a100-b", 8, DGX_A100, "sc1-hall2-row-b", {5: "cordoned", 7: DGX_A100_MIG, 8: DGX_A100_MIG_1G}),
            Group("gb200-c", 4, GB200_TRAY, "sc1-hall2-row-a"),
            Group("cpu-sys", 4, CPU_SYSTEM),
        ),
    ),
    "graphics-cluster-01": (
        Site("dc-austin", ("aus1-pod-1", "aus1-pod-2"), "metal://austin"),
        (
            Group("l40-s", 6, L40_SIMULATION, special={3: "NotReady"}),
            Group("l40s-s", 5, _L40S_SIMULATION, special={5: replace(_L40S_SIMULATION, replicas=4)}),
            Group("cpu-sim", 1, CPU_64),
        ),
    ),
    "inference-cluster-01": (
        Site("us-central1", ("us-central1-a", "us-central1-b", "us-central1-c"), "gce://osmo-demo"),
        (
            Group("t4-i", 6, _T4_GKE),
            Group("cpu-i", 4, labelled(kind_of("n2-standard-32"), **{"cloud.google.com/gke-nodepool": "cpu-pool"})),
        ),
    ),
    "dev-cluster-01": (
        Site("us-west-2", ("us-west-2a", "us-west-2b"), "aws://"),
        (
            Group("a10g-d", 3, _A10G_EKS),
            Group(
                "cpu-d",
                5,
                labelled(kind_of("m6i.4xlarge"), **{"eks.amazonaws.com/nodegroup": "dev-cpu"}),
                special={4: "cordoned"},
            ),
        ),
    ),
    # Run:ai-style: node pools are node labels (gpu-type=...), the rest falls into the backend's default pool.
    "runai-cluster-01": (
        Site("dc-reno", ("rno1-row-a", "rno1-row-b"), "metal://reno"),
        (
            Group("l40s-r", 4, labelled(L40S_4X, **{"gpu-type": "L40S"}), "rno1-row-a"),
            Group("a10g-r", 3, labelled(A10G_G5, **{"gpu-type": "A10G"}), "rno1-row-b", {3: "cordoned"}),
            Group("l40-r", 2, L40_OVX, "rno1-row-b"),
            Group("cpu-r", 2, CPU_96),
        ),
    ),
    "default": (
        Site("dc-santaclara", ("sc1-hall1-row-c",), "metal://santaclara"),
        (Group("l40s-d", 4, L40S_4X), Group("a100-d", 4, DGX_A100, special={4: "NotReady"})),
    ),
}


DEMO_SEED = 20251121


def demo_nodes(backend: str, *, seed: int = DEMO_SEED) -> list[dict]:
    """The Node objects of one of the demo's backends (``DEMO_BACKENDS``), as they are while nothing moves."""
    site, groups = DEMO_BACKENDS[backend]
    nodes: list[dict] = []
    for group in groups:
        for number in range(1, group.count + 1):
            special = group.special.get(number)
            nodes.append(
                node_object(
                    seed,
                    f"{group.prefix}-{number:03d}",
                    special if isinstance(special, Kind) else group.kind,
                    index=len(nodes),
                    site=site,
                    zone=group.zone,
                    ready={"NotReady": "False", "Unknown": "Unknown"}.get(special, "True"),
                    cordon_reason=CORDON_REASON if special == "cordoned" else "",
                )
            )
    return nodes


# -- a cluster of pools ---------------------------------------------------------------------------------------------
POOL_LABEL = "pool.example.com/name"
POOL_MEMBER_PREFIX = "pool.example.com/"
SHARED_LABEL = "pool.example.com/shared"
DEDICATED_TAINT = "pool.example.com/dedicated"

# Platforms in the order they are taken: (name, kind). Nodes of OFF_PLATFORM belong to no platform.
PLATFORMS = (
    ("h100", DGX_H100),
    ("a100", DGX_A100),
    ("l40s", L40S_4X),
    ("h200", DGX_H200),
    ("b200", DGX_B200),
    ("a10g", A10G_G5),
)
OFF_PLATFORM = ("t4", T4_N1)
POOL_SITE = Site("us-west-2", ("us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"), "aws://")


def pool_name(index: int) -> str:
    """Pool ``index`` (0-based) as ``pool-01``..."""
    return f"pool-{index + 1:02d}"


def is_dedicated(pool_index: int) -> bool:
    """Every fifth pool has nodes of its own, tainted for it."""
    return pool_index % 5 == 4


def shares_next(pool_index: int, pools: int) -> bool:
    """Pools whose nodes are partly shared with the next pool (never with or from a dedicated pool)."""
    return pool_index % 6 == 0 and pool_index + 1 < pools and not is_dedicated(pool_index + 1)


def _platforms(platforms: int) -> tuple[tuple[str, Kind], ...]:
    if not 1 <= platforms <= len(PLATFORMS):
        raise ValueError(f"platforms must be between 1 and {len(PLATFORMS)}")
    return PLATFORMS[:platforms]


def pool_nodes(*, nodes: int = 5000, pools: int = 50, platforms: int = 3, seed: int = 1) -> list[dict]:
    """Nodes divided into ``pools`` pools by labels, of the first ``platforms`` GPU products.

    Node ``i`` belongs to pool ``i % pools`` (labels ``pool.example.com/name: <pool>`` and
    ``pool.example.com/<pool>: "true"``); ~12 % of the nodes of every sixth pool also carry the next pool's
    membership label (and ``pool.example.com/shared``); every fifth pool's nodes are tainted
    ``pool.example.com/dedicated=<pool>:NoSchedule``. A node is mostly of its pool's main product, sometimes of
    another platform's, ~5 % of a product outside every platform (T4). ~1 % are NotReady, 0.5 % cordoned.
    """
    if nodes < 1 or pools < 1:
        raise ValueError("need nodes >= 1 and pools >= 1")
    rows = _platforms(platforms)
    rng = Stream("pool-nodes", seed)
    result = []
    for index in range(nodes):
        pool_index = index % pools
        pool = pool_name(pool_index)
        roll = rng.random()
        name, kind = OFF_PLATFORM if roll < 0.05 else rows[pool_index % len(rows)] if roll < 0.75 else rng.choice(rows)
        labels = {POOL_LABEL: pool, POOL_MEMBER_PREFIX + pool: "true"}
        if shares_next(pool_index, pools) and rng.random() < 0.12:
            labels[SHARED_LABEL] = "true"
            labels[POOL_MEMBER_PREFIX + pool_name(pool_index + 1)] = "true"
        taints = ({"effect": "NoSchedule", "key": DEDICATED_TAINT, "value": pool},) if is_dedicated(pool_index) else ()
        state = rng.random()
        result.append(
            node_object(
                seed,
                f"{name}-node-{index:05d}",
                kind,
                index=index,
                site=POOL_SITE,
                ready="False" if state < 0.01 else "True",
                cordon_reason=CORDON_REASON if 0.01 <= state < 0.015 else "",
                labels=labels,
                taints=taints,
            )
        )
    return result


def node_pools(nodes: list[dict]) -> dict[str, list[str]]:
    """Node name -> the pools whose membership label the node carries."""
    return {
        node["metadata"]["name"]: sorted(
            label[len(POOL_MEMBER_PREFIX) :]
            for label, value in node["metadata"]["labels"].items()
            if label.startswith(POOL_MEMBER_PREFIX + "pool-") and value == "true"
        )
        for node in nodes
    }


def pool_cluster(
    nodes: int = 5000, pods: int = 150_000, pools: int = 50, platforms: int = 3, seed: int = 1
) -> tuple[list[dict], list[dict]]:
    """``(nodes, pods)`` of a cluster of pools (``pool_nodes``) at one moment, with exactly ``pods`` pods.

    Job pods carry the ``osmo.pool`` label of a pool that holds their node; see ``Fleet.snapshot``.
    """
    with paused_gc():  # millions of new objects, no cycles: one collection at the end, not one per burst
        node_objects = pool_nodes(nodes=nodes, pools=pools, platforms=platforms, seed=seed)
        fleet = Fleet(seed=seed, nodes=node_objects, pool_labels=node_pools(node_objects))
        return fleet.snapshot(BASE_TIME, pods)


def pool_config(pools: int = 50, platforms: int = 3, backend: str = "bench") -> dict:
    """The configuration bundle of :func:`pool_cluster`: ``{"podTemplates": {...}, "pools": {...}}``.

    Template ``pool-NN`` selects the pool's nodes (membership label, tolerating the dedicated taint when the pool
    has one); template ``platform-<name>`` selects the GPU product and tolerates its taint.
    """
    rows = _platforms(platforms)
    templates: dict = {}
    for name, kind in rows:
        product = kind.gpu.product
        tolerations = (
            [{"key": PRODUCT_LABEL, "operator": "Equal", "value": product, "effect": "NoSchedule"}]
            if kind.product_tainted
            else []
        )
        templates[f"platform-{name}"] = {"spec": {"nodeSelector": {PRODUCT_LABEL: product}, "tolerations": tolerations}}
    bodies: dict = {}
    for index in range(pools):
        pool = pool_name(index)
        tolerations = (
            [{"key": DEDICATED_TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}]
            if is_dedicated(index)
            else []
        )
        templates[pool] = {"spec": {"nodeSelector": {POOL_MEMBER_PREFIX + pool: "true"}, "tolerations": tolerations}}
        bodies[pool] = {
            "backend": backend,
            "common_pod_template": [pool],
            "platforms": {name: {"override_pod_template": [f"platform-{name}"]} for name, _ in rows},
        }
    return {"podTemplates": templates, "pools": bodies}
