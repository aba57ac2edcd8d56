"""Named fleets: the demo's seven backends, and a cluster divided into pools by node labels for the benchmarks.

The demo's node names, counts and special nodes are documented in ``pools/demo/README.md``; the pod templates of
``pools/demo/config.yaml`` select these nodes by the labels and taints given here, and every platform there
selects at least one node (a test checks it). ``DEMO_WORKLOADS`` gives some backends a load of their own (who runs
the jobs, and standing workloads: holders, idle ones, a backlog), so that the quotas of ``config.yaml`` meet
contention.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pools.engine.workloads import POD_GROUP_ANNOTATION, REQUIRED_PLACEMENT, TEMPLATE_HASH_LABEL
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
    GPU,
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
from .dcgm import ACTIVITY_LABEL
from .nodes import Site, node_list, node_object
from .pods import JOB_VOLUMES, PRIORITY_LABEL, USER_LABEL, job_containers, tolerations_for
from .pods import POOL_LABEL as JOB_POOL_LABEL
from .streams import BASE_TIME, Stream
from .timeline import Fleet

CORDON_REASON = "RMA: Xid 79 (GPU fell off the bus) on GPU 3"
ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.kubernetes.io/rack"
CLIQUE_LABEL = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class Group:
    """``count`` nodes of one kind named ``<prefix>-001``... (numbered from ``first``, on ``digits`` digits);
    ``special`` sets a few of them apart by number.

    ``special`` maps a node number to a different kind, ``"NotReady"``, ``"Unknown"`` or ``"cordoned"``.
    ``rack_size`` puts the nodes in racks of that many (``topology.kubernetes.io/rack`` = ``<prefix>-r1``...); a
    rack of GB200 trays is one NVLink domain (``nvidia.com/gpu.clique`` = ``nvl72-<rack>``).
    """

    prefix: str
    count: int
    kind: Kind
    zone: str = ""
    special: Mapping[int, Kind | str] = field(default_factory=dict)
    first: int = 1
    digits: int = 3
    rack_size: int = 0

    def rack_labels(self, number: int, kind: Kind) -> dict[str, str]:
        """The rack (and, for GB200 trays, NVLink clique) labels of node ``number``; none without racks."""
        if not self.rack_size:
            return {}
        rack = f"{self.prefix}-r{(number - self.first) // self.rack_size + 1}"
        labels = {RACK_LABEL: rack}
        if kind.shape.gpu == "GB200":
            labels[CLIQUE_LABEL] = f"nvl72-{rack}"
        return labels


_L40S_SIMULATION = dedicated(kind_of("sm-l40s-8x", product_taint("L40S")), "simulation")
_T4_GKE = labelled(
    kind_of("n1-standard-32", ("nvidia.com/gpu", "present", "NoSchedule")),
    **{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "cloud.google.com/gke-nodepool": "t4-pool"},
)
_A10G_EKS = labelled(
    kind_of("g5.12xlarge", ("nvidia.com/gpu", "", "NoSchedule")), **{"eks.amazonaws.com/nodegroup": "dev-gpu"}
)
# The A100 nodes OSMO's heterogeneous-pool walk-through selects and tolerates: nvidia.com/gpu.product=NVIDIA-A100.
_A100_AS_DOCUMENTED = kind_of("dgx-a100-320gb", product_taint("A100-40GB"))

# backend name -> (site, node groups)
DEMO_BACKENDS: dict[str, tuple[Site, tuple[Group, ...]]] = {
    "gpu-cluster-01": (
        Site("dc-santaclara", ("sc1-hall2-row-a", "sc1-hall2-row-b"), "metal://santaclara"),
        (
            Group("h100-a", 8, DGX_H100, "sc1-hall2-row-a", {6: "Unknown"}, rack_size=4),
            Group(
                "a100-b",
                8,
                DGX_A100,
                "sc1-hall2-row-b",
                {5: "cordoned", 7: DGX_A100_MIG, 8: DGX_A100_MIG_1G},
                rack_size=4,
            ),
            # One GB200 NVL72 rack: 18 compute trays of 4 GPUs sharing one NVLink domain.
            Group("gb200-c", 18, GB200_TRAY, "sc1-hall2-row-a", rack_size=18),
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
        (Group("l40s-d", 4, L40S_4X), Group("a100-d", 4, _A100_AS_DOCUMENTED, special={4: "NotReady"})),
    ),
    # gpuctl's cluster as its resource-pool guide draws it: nodes named as there, no pool label yet (the guide's
    # four pool files label them), writable.
    "gpuctl-cluster": (
        Site("dc-hangzhou", ("hz1-rack-1", "hz1-rack-2"), "metal://hangzhou"),
        (
            Group("gpu-node", 2, kind_of("dgx-a100"), digits=1),
            Group("gpu-node", 2, kind_of("sm-a10-4x"), first=3, digits=1),
            Group("gpu-node", 1, kind_of("ws-rtx4090-4x"), first=5, digits=1),
            Group("cpu-node", 2, CPU_64, digits=1),
        ),
    ),
}


DEMO_SEED = 20251121


def demo_nodes(backend: str, *, seed: int = DEMO_SEED) -> list[dict]:
    """The Node objects of one of the demo's backends (``DEMO_BACKENDS``), as they are while nothing moves."""
    site, groups = DEMO_BACKENDS[backend]
    nodes: list[dict] = []
    for group in groups:
        for number in range(group.first, group.first + group.count):
            special = group.special.get(number)
            kind = special if isinstance(special, Kind) else group.kind
            nodes.append(
                node_object(
                    seed,
                    f"{group.prefix}-{number:0{group.digits}d}",
                    kind,
                    index=len(nodes),
                    site=site,
                    zone=group.zone,
                    ready={"NotReady": "False", "Unknown": "Unknown"}.get(special, "True"),
                    cordon_reason=CORDON_REASON if special == "cordoned" else "",
                    labels=group.rack_labels(number, kind),
                )
            )
    return nodes


# -- the demo's load ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Standing:
    """A standing workload of a demo backend: ``gpus`` GPUs for ``namespace``, labelled for ``pool``.

    It runs on ``node``, or with ``waiting`` it waits for a node like it (its GPU product's selector and
    tolerations, plus ``selector``), Pending for ``reason``. ``activity`` declares how it uses its GPUs
    (``dcgm.ACTIVITY_LABEL``: ``idle`` for a notebook left open). ``group`` names the gang (KAI's pod group) it
    is one pod of; ``deployment`` makes it the pod of a Deployment's ReplicaSet; ``preemptible`` gives it the
    priority ``LOW`` (a reclaim may take its GPUs back); ``placement`` is the node label its gang must keep within
    (KAI Scheduler's ``topology-required-placement``).
    """

    namespace: str
    name: str
    gpus: int
    pool: str
    node: str
    user: str
    waiting: bool = False
    selector: Mapping[str, str] = field(default_factory=dict)
    activity: str = ""
    reason: str = ""
    group: str = ""
    deployment: bool = False
    preemptible: bool = False
    placement: str = ""


@dataclass(frozen=True)
class Load:
    """Who runs a demo backend's moving jobs (namespace -> share of them) and its standing workloads."""

    namespaces: Mapping[str, int]
    standing: tuple[Standing, ...] = ()


_H100_TRAINING = "h100-a-001"
_SIM_LIMIT_REASON = (
    "0/38 nodes are available: project sim holds 8 of its 8-GPU limit in node pool robotics-training; "
    "the workload waits until the project holds less."
)
# The contention the quotas of config.yaml meet (SEMANTICS §9): on robotics-training, team-a's jobs run far over
# its quota of 4 and one of its notebooks holds two idle GPUs; robotics and deep-research wait for 8-GPU gangs,
# more than the pool has free, so the fair shares divide less than is asked for; sim holds its limit of 8 with
# more waiting; on l40s-nodes (a Run:ai label pool) a job waits for the nodes its selector names.
DEMO_WORKLOADS: dict[str, Load] = {
    "gpu-cluster-01": Load(
        {"team-a": 4, "robotics": 2, "research": 1, "infer": 1, "sim": 0},
        (
            Standing("sim", "sdg-replicator", 8, "robotics-training", "h100-a-008", "farah"),
            # Small jobs on a few GB200 trays: the NVL72 rack has GPUs free, but not 16 whole trays at once.
            Standing("research", "gr00t-finetune", 2, "robotics-training", "gb200-c-003", "lena"),
            Standing("robotics", "policy-eval", 1, "robotics-training", "gb200-c-007", "mateo"),
            Standing("team-a", "notebook-ana", 1, "robotics-training", "gb200-c-012", "priya", activity="idle"),
            # team-a's sweep holds six whole trays of the NVL72 rack, well above its fair share of the pool.
            *(
                Standing("team-a", f"nvl-sweep-{n}", 4, "robotics-training", f"gb200-c-{n + 12:03d}", "priya")
                for n in range(1, 7)
            ),
            # A 16 x 4 gang that must start inside one NVLink domain (KAI's required placement): it waits.
            *(
                Standing(
                    "research",
                    f"world-model-nvl-{n}",
                    4,
                    "robotics-training",
                    "gb200-c-001",
                    "lena",
                    True,
                    group="world-model-nvl",
                    placement=CLIQUE_LABEL,
                )
                for n in range(1, 17)
            ),
            Standing(
                "sim", "sdg-batch", 8, "robotics-training", _H100_TRAINING, "farah", True, reason=_SIM_LIMIT_REASON
            ),
            Standing(
                "team-a",
                "notebook-priya",
                2,
                "robotics-training",
                "a100-b-002",
                "priya",
                activity="idle",
                deployment=True,
            ),
            *(
                Standing(
                    "robotics",
                    f"locomotion-pretrain-{n}",
                    8,
                    "robotics-training",
                    _H100_TRAINING,
                    "mateo",
                    True,
                    group="locomotion-pretrain",
                )
                for n in range(1, 7)
            ),
            *(
                Standing(
                    "research",
                    f"vla-pretrain-{n}",
                    8,
                    "robotics-training",
                    _H100_TRAINING,
                    "lena",
                    True,
                    group="vla-pretrain",
                )
                for n in range(1, 3)
            ),
        ),
    ),
    "runai-cluster-01": Load(
        {"team-a": 1, "robotics": 1, "sim": 1, "infer": 1, "research": 2},
        (
            Standing(
                "research", "world-model-eval", 4, "l40s-nodes", "l40s-r-001", "kenji", True, {"gpu-type": "L40S"}
            ),
            # More GPUs in one pod than any A10G node has: it can never start (never_fits).
            Standing("infer", "llm-finetune-16x", 16, "a10g-nodes", "a10g-r-001", "omar", True, {"gpu-type": "A10G"}),
        ),
    ),
    # Why workloads wait (SEMANTICS §10), each reason made to hold whatever the moving jobs do: on
    # robotics-inference a canary pinned to t4-i-001 may take back the GPUs of a preemptible backfill holding that
    # node (reclaim), and a replica pinned to t4-i-002 waits behind a non-preemptible one filling it (no_capacity);
    # a CPU-only warm-up fits at once (scheduling). On robotics-simulation sim's 32-GPU gang asks more than
    # product's limit there (department_limit). Each waiting pod keeps to its pool's validation rules (at most 2 GPUs
    # a pod on robotics-inference, 4 on robotics-simulation), or it would never fit (never_fits) before any other
    # reason.
    "inference-cluster-01": Load(
        {"team-a": 1, "robotics": 1, "sim": 1, "infer": 1, "research": 1},
        (
            Standing("research", "embed-backfill", 4, "robotics-inference", "t4-i-001", "lena", preemptible=True),
            Standing(
                "infer",
                "triton-canary",
                2,
                "robotics-inference",
                "t4-i-001",
                "omar",
                True,
                {"kubernetes.io/hostname": "t4-i-001"},
            ),
            Standing("infer", "triton-a", 4, "robotics-inference", "t4-i-002", "omar"),
            Standing(
                "infer",
                "triton-b",
                2,
                "robotics-inference",
                "t4-i-002",
                "omar",
                True,
                {"kubernetes.io/hostname": "t4-i-002"},
            ),
            Standing("infer", "tokenizer-warmup", 0, "robotics-inference", "cpu-i-001", "omar", True),
        ),
    ),
    # On heterogeneous_pool sim (deserved 0 there) waits with a 48-GPU gang: more than the pool's 40 GPUs, so above
    # any fair share they can leave it, whatever the moving jobs ask (over_fair_share).
    "default": Load(
        {"team-a": 1, "robotics": 1, "sim": 1, "infer": 1, "research": 1},
        tuple(
            Standing("sim", f"sdg-sweep-{n}", 8, "heterogeneous_pool", "a100-d-001", "farah", True, group="sdg-sweep")
            for n in range(1, 7)
        ),
    ),
    "graphics-cluster-01": Load(
        {"team-a": 1, "robotics": 1, "sim": 1, "infer": 1, "research": 1},
        tuple(
            Standing(
                "sim", f"sdg-render-{n}", 4, "robotics-simulation", "l40s-s-001", "farah", True, group="sdg-render"
            )
            for n in range(1, 9)
        ),
    ),
}


def _standing_pod(standing: Standing, node: dict) -> dict:
    """The Pod template of a standing workload (the fleet names each run's pod after it)."""
    millis, memory = 8000 * standing.gpus, 32 * 1024**3 * standing.gpus
    containers, init = job_containers(GPU, standing.gpus, millis, memory)[1]
    product = node["metadata"]["labels"].get(PRODUCT_LABEL, "")
    spec: dict = {
        "containers": containers,
        "initContainers": init,
        "nodeSelector": {**({PRODUCT_LABEL: product} if product else {}), **standing.selector},
        "priority": 1000,
        "priorityClassName": "osmo-normal",
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "tolerations": tolerations_for(node),
        "volumes": JOB_VOLUMES,
    }
    if not standing.waiting:
        spec["nodeName"] = standing.node
    metadata: dict = {
        "annotations": {"kubectl.kubernetes.io/default-container": "user"},
        "labels": {
            "app.kubernetes.io/managed-by": "osmo",
            JOB_POOL_LABEL: standing.pool,
            PRIORITY_LABEL: "LOW" if standing.preemptible else "NORMAL",
            USER_LABEL: standing.user,
            "osmo.workflow_id": standing.name,
        },
        "name": standing.name,
        "namespace": standing.namespace,
    }
    if standing.activity:
        metadata["labels"][ACTIVITY_LABEL] = standing.activity
    if standing.group:
        metadata["annotations"][POD_GROUP_ANNOTATION] = standing.group
    if standing.placement:
        metadata["annotations"][REQUIRED_PLACEMENT] = standing.placement
    if standing.deployment:
        template_hash = Stream("template", standing.namespace, standing.name).hex(10)
        metadata["labels"][TEMPLATE_HASH_LABEL] = template_hash
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "ReplicaSet",
                "name": f"{standing.name}-{template_hash}",
                "uid": Stream("replicaset", standing.namespace, standing.name).uid(),
            }
        ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if standing.reason:
        pod["status"] = {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": standing.reason}
            ],
        }
    return pod


def demo_blueprint(backend: str, *, seed: int = DEMO_SEED) -> dict:
    """The blueprint of one of the demo's backends: a List of its nodes and, when ``DEMO_WORKLOADS`` gives it a
    load, the namespaces its jobs run in and its standing workloads."""
    nodes = demo_nodes(backend, seed=seed)
    load = DEMO_WORKLOADS.get(backend)
    if load is None:
        return node_list(nodes)
    by_name = {node["metadata"]["name"]: node for node in nodes}
    pods = [_standing_pod(standing, by_name[standing.node]) for standing in load.standing]
    return node_list(nodes, namespaces=dict(load.namespaces), pods=pods)


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
RACK_NODES = 16
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
    A pool's nodes stand in racks of ``RACK_NODES`` (``topology.kubernetes.io/rack`` = ``<pool>-r01``...), each rack
    in one zone, the racks of a pool going round the site's zones.
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
        rack = index // pools // RACK_NODES
        labels = {POOL_LABEL: pool, POOL_MEMBER_PREFIX + pool: "true", RACK_LABEL: f"{pool}-r{rack + 1:02d}"}
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
                zone=POOL_SITE.zones[(pool_index + rack) % len(POOL_SITE.zones)],
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
