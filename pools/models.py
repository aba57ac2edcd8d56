"""The pool domain: configuration objects, the cluster inventory, membership and config history.

Configuration objects (Backend, PodTemplate, ResourceValidation, Pool, Platform) mirror the OSMO JSON
shapes field by field; references between them are by name, in order, as OSMO stores them, and the
services keep them consistent. Nodes and pods keep only what membership and GPU accounting need.
Nothing here writes on its own: every change goes through ``pools.services``.
"""

import functools
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models.functions import Cast, Lower
from django.utils import timezone

from . import querysets
from .choices import BackendKind, BackendStatus, ChangeOrigin, ConfigType, PlacementStrategy, RevisionAction


def default_node_conditions():
    return {"Ready": "True"}


def default_fair_share():
    """Time-based fair share off (SEMANTICS §9.3): k 0, a week's window, no half-life."""
    return {"k_value": 0, "window": "7d", "half_life": None}


def default_pool_resources():
    return {"gpu": {"guarantee": -1, "maximum": -1, "weight": 1}}


def online_window() -> timedelta:
    """How recent a backend's last successful contact must be for it to be online."""
    return timedelta(seconds=settings.GPUPOOL["ONLINE_WINDOW_SECONDS"])


def backend_status(last_heartbeat, now=None) -> BackendStatus:
    """ONLINE while the last successful contact is within ``online_window()``, else OFFLINE."""
    if last_heartbeat and (now or timezone.now()) - last_heartbeat < online_window():
        return BackendStatus.ONLINE
    return BackendStatus.OFFLINE


class Backend(models.Model):
    """A Kubernetes cluster (or a stand-in for one) whose nodes the pools divide."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=BackendKind.choices, default=BackendKind.FILE)
    source = models.CharField(max_length=1024, blank=True, help_text="file: path to a Kubernetes List (JSON/YAML)")
    kubeconfig = models.CharField(max_length=1024, blank=True, help_text="kubernetes: kubeconfig path")
    context = models.CharField(max_length=256, blank=True, help_text="kubernetes: kubeconfig context")
    in_cluster = models.BooleanField(default=False, help_text="kubernetes: use the pod's service account")
    seed = models.IntegerField(null=True, blank=True, help_text="simulated: random seed")
    size = models.IntegerField(null=True, blank=True, help_text="simulated: number of nodes")
    node_conditions = models.JSONField(default=default_node_conditions, blank=True)
    pool_label = models.CharField(max_length=253, default="osmo.pool")
    priority_label = models.CharField(max_length=253, default="osmo.priority")
    writable = models.BooleanField(default=False, help_text="kubernetes: the console may patch node labels")
    pool_label_key = models.CharField(
        max_length=253, default="runwhere.ai/pool", help_text="the node label gpuctl's pool files set"
    )
    prometheus_url = models.CharField(
        max_length=1024, blank=True, help_text="Prometheus scraping the cluster's DCGM exporters (GPU utilization)"
    )
    prometheus_token_env = models.CharField(
        max_length=128, blank=True, help_text="environment variable holding Prometheus's credentials"
    )
    default_pool = models.CharField(
        max_length=128, blank=True, help_text="the pool holding every node in no other pool of this backend"
    )
    fair_share = models.JSONField(
        default=default_fair_share, blank=True, help_text="time-based fair share: k_value, window, half_life"
    )
    # Where an administrator last confirmed the credentials may go: they are sent only while the backend's
    # prometheus_url and prometheus_token_env are still these (SEMANTICS §7.4). Not part of the document.
    prometheus_confirmed_url = models.CharField(max_length=1024, blank=True, editable=False)
    prometheus_confirmed_env = models.CharField(max_length=128, blank=True, editable=False)
    builtin = models.BooleanField(default=False, editable=False)

    last_heartbeat = models.DateTimeField(null=True, blank=True, editable=False)
    last_sync_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_sync_duration = models.FloatField(null=True, blank=True, editable=False)
    last_sync_error = models.TextField(blank=True, editable=False)
    last_sync_counts = models.JSONField(default=dict, blank=True, editable=False)
    utilization_at = models.DateTimeField(null=True, blank=True, editable=False, help_text="last utilization read")
    utilization_error = models.TextField(blank=True, editable=False, help_text="why the last utilization read failed")

    objects = querysets.BackendQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def status(self) -> BackendStatus:
        return backend_status(self.last_heartbeat)


class PodTemplate(models.Model):
    """A Kubernetes pod-spec fragment; pools merge several of them in order (SEMANTICS.md §2)."""

    name = models.CharField(max_length=128, unique=True)
    spec = models.JSONField(default=dict, blank=True)
    builtin = models.BooleanField(default=False, editable=False)

    objects = querysets.PodTemplateQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class ResourceValidation(models.Model):
    """A named, ordered list of rules a request must satisfy (SEMANTICS.md §4)."""

    name = models.CharField(max_length=128, unique=True)
    rules = models.JSONField(default=list, blank=True)
    builtin = models.BooleanField(default=False, editable=False)

    objects = querysets.ResourceValidationQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


# Who belongs to a department or a project (SEMANTICS §9.4, ``engine.members``).
MEMBERS_HELP = 'who belongs: [{"kind": "user"|"group"|"service_account", "name", "role"}]'


class Department(models.Model):
    """A Run:ai department: projects grouped under one quota per node pool (SEMANTICS §9)."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    resources = models.JSONField(
        default=list, blank=True, help_text="per node pool: nodePool, priority, gpu/cpu/memory deserved and limit"
    )
    members = models.JSONField(default=list, blank=True, help_text=MEMBERS_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = querysets.DepartmentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Project(models.Model):
    """A Run:ai project: owns the workloads of its namespaces (or labelled ``runai/queue=<name>``)."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    department = models.ForeignKey(Department, on_delete=models.CASCADE, related_name="projects")
    namespaces = models.JSONField(default=list, blank=True, help_text="default: runai-<name>")
    resources = models.JSONField(default=list, blank=True)
    members = models.JSONField(default=list, blank=True, help_text=MEMBERS_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = querysets.ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Pool(models.Model):
    """A share of one backend's nodes with its own templates, rules, quota and timeouts."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    backend = models.ForeignKey(Backend, on_delete=models.PROTECT, related_name="pools")
    node_label = models.JSONField(default=dict, blank=True, help_text='{"key": ..., "value": ...}: a label pool')
    default_platform = models.CharField(max_length=128, blank=True)
    enable_maintenance = models.BooleanField(default=False)
    common_default_variables = models.JSONField(default=dict, blank=True)
    common_resource_validations = models.JSONField(default=list, blank=True)
    common_pod_template = models.JSONField(default=list, blank=True)
    default_exec_timeout = models.CharField(max_length=64, blank=True)
    default_queue_timeout = models.CharField(max_length=64, blank=True)
    max_exec_timeout = models.CharField(max_length=64, blank=True)
    max_queue_timeout = models.CharField(max_length=64, blank=True)
    default_exit_actions = models.JSONField(default=dict, blank=True)
    action_permissions = models.JSONField(default=dict, blank=True)
    resources = models.JSONField(default=default_pool_resources, blank=True)
    topology_keys = models.JSONField(default=list, blank=True)
    gpu_placement_strategy = models.CharField(
        max_length=16, choices=PlacementStrategy.choices, default=PlacementStrategy.BINPACK
    )
    cpu_placement_strategy = models.CharField(
        max_length=16, choices=PlacementStrategy.choices, default=PlacementStrategy.BINPACK
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    objects = querysets.PoolQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Platform(models.Model):
    """One hardware type inside a pool, with its own extra templates, rules and variables."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="platforms")
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True)
    host_network_allowed = models.BooleanField(default=False)
    privileged_allowed = models.BooleanField(default=False)
    allowed_mounts = models.JSONField(default=list, blank=True)
    default_variables = models.JSONField(default=dict, blank=True)
    resource_validations = models.JSONField(default=list, blank=True)
    override_pod_template = models.JSONField(default=list, blank=True)

    objects = querysets.PlatformQuerySet.as_manager()

    class Meta:
        ordering = ["pool__name", "name"]
        constraints = [models.UniqueConstraint(fields=["pool", "name"], name="unique_platform_per_pool")]

    def __str__(self):
        return f"{self.pool.name}/{self.name}"


def placements_text(pairs) -> str:
    """``Node.placements`` for (pool id, platform name) pairs: sorted ``<pool id>:<platform>`` words.

    Names cannot hold spaces or colons (``configs.NAME_RE``), so the text splits back unambiguously.
    """
    return " ".join(sorted(f"{pool_id}:{platform}" for pool_id, platform in pairs))


@functools.lru_cache(maxsize=16_384)
def placements_pairs(text: str) -> tuple[tuple[int, str], ...]:
    """The (pool id, platform name) pairs of a ``Node.placements`` text.

    Kept for the texts seen last: every pool list reads each node group's text (a thousand of them at 20,000
    nodes), and a fleet's texts change only with its pools.
    """
    return tuple((int(pool_id), platform) for pool_id, _, platform in (word.partition(":") for word in text.split()))


@functools.lru_cache(maxsize=16_384)
def placements_pool_ids(text: str) -> frozenset[int]:
    """The ids of the pools in a ``Node.placements`` text (kept like ``placements_pairs``)."""
    return frozenset(pool_id for pool_id, _ in placements_pairs(text))


class Node(models.Model):
    """A cluster node as last synced: labels, taints, conditions and the resources accounting needs.

    Resource columns are parsed once at sync time (cpu in cores, memory and storage in bytes) so that
    accounting reads numbers, not Kubernetes quantity strings.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    conditions = models.JSONField(default=list, blank=True)
    unschedulable = models.BooleanField(default=False)
    allocatable = models.JSONField(default=dict, blank=True)
    available = models.BooleanField(default=True)
    unavailable_reason = models.CharField(max_length=256, blank=True)
    gpu_product = models.CharField(max_length=128, blank=True)
    cpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    memory = models.BigIntegerField(default=0)
    storage = models.BigIntegerField(default=0)
    gpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    mig_devices = models.JSONField(default=dict, blank=True, help_text="MIG profile -> allocatable count")
    gpu_replicas = models.IntegerField(default=0, help_text="time-slicing replicas per GPU (0: not time-sliced)")
    gpu_memory = models.BigIntegerField(default=0, help_text="bytes of GPU memory, all GPUs (nvidia.com/gpu.memory)")
    # Requests of the non-terminated pods bound to the node, kept up to date by sync and watch so that
    # reading usage never has to add up every pod of a large cluster.
    cpu_used = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    memory_used = models.BigIntegerField(default=0)
    storage_used = models.BigIntegerField(default=0)
    gpu_used = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    pods = models.IntegerField(default=0, help_text="non-terminated pods bound to the node")
    # The node's memberships as sorted "<pool id>:<platform>" words, written with them by membership_recompute.
    # Nodes with the same placements are grouped by the pool summaries, which then read one row per group
    # instead of every membership (a 5,000-node fleet has ~37,000 memberships but only dozens of groups).
    placements = models.TextField(blank=True, default="")
    # The labels' JSON as text, in lower case, for the label search (``NodeFilterSet.search``). The database
    # writes it with every insert and update, the upserts included, so no writer can forget it; a search then
    # neither serialises each node's JSON nor changes the case of a kilobyte per node (PostgreSQL's UPPER over
    # 5,000 nodes' labels was most of a search's time, more than the serialising).
    labels_text = models.GeneratedField(
        expression=Lower(Cast("labels", models.TextField())), output_field=models.TextField(), db_persist=True
    )
    address = models.CharField(max_length=64, blank=True, help_text="the node's InternalIP (status.addresses)")
    resource_version = models.CharField(max_length=64, blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    objects = querysets.NodeQuerySet.as_manager()

    class Meta:
        ordering = ["backend__name", "name"]
        constraints = [models.UniqueConstraint(fields=["backend", "name"], name="unique_node_per_backend")]

    def __str__(self):
        return self.name


class Pod(models.Model):
    """A pod as last synced, reduced to its node, phase, pool label and effective requests."""

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="pods")
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    uid = models.CharField(max_length=64, blank=True)
    node_name = models.CharField(max_length=253, blank=True, db_index=True)
    phase = models.CharField(max_length=32, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    pool_name = models.CharField(max_length=128, blank=True, db_index=True, help_text="value of the pool label")
    node_selector = models.JSONField(
        default=dict, blank=True, help_text="spec.nodeSelector: the label pool a pod waiting for a node asks for"
    )
    preemptible = models.BooleanField(default=False)
    cpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    memory = models.BigIntegerField(default=0)
    storage = models.BigIntegerField(default=0)
    gpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    mig_devices = models.JSONField(default=dict, blank=True, help_text="MIG profile -> requested count")
    created = models.DateTimeField(null=True, blank=True, help_text="metadata.creationTimestamp")
    resource_version = models.CharField(max_length=64, blank=True)
    # The workload the pod belongs to (SEMANTICS §10, engine.workloads.workload_key), computed by the sync.
    workload_kind = models.CharField(max_length=64, blank=True)
    workload_name = models.CharField(max_length=253, blank=True)
    owner_kind = models.CharField(max_length=64, blank=True, help_text="controller from metadata.ownerReferences")
    owner_name = models.CharField(max_length=253, blank=True)
    annotations = models.JSONField(default=dict, blank=True, help_text="only the annotations workloads read")
    priority_class = models.CharField(max_length=253, blank=True, help_text="spec.priorityClassName")
    started = models.DateTimeField(null=True, blank=True, help_text="status.startTime")
    scheduled_reason = models.CharField(max_length=128, blank=True, help_text="PodScheduled reason when not True")
    scheduled_message = models.CharField(max_length=1000, blank=True, help_text="PodScheduled message when not True")
    user = models.CharField(max_length=253, blank=True, help_text="who submitted it (engine.workloads.workload_user)")

    objects = querysets.PodQuerySet.as_manager()

    class Meta:
        ordering = ["backend__name", "namespace", "name"]
        constraints = [models.UniqueConstraint(fields=["backend", "namespace", "name"], name="unique_pod_per_backend")]
        indexes = [
            models.Index(fields=["backend", "namespace", "workload_kind", "workload_name"], name="pod_workload"),
        ]

    def __str__(self):
        return f"{self.namespace}/{self.name}"


class NodeGroupSums(models.Model):
    """The placed nodes of one backend that share placements, availability, cordoning and GPU product, summed.

    What the pool list, the overview and the node pools read instead of grouping every node on each request
    (``selectors.node_groups``): a 20,000-node fleet has about a thousand such groups. Sync and watch keep it in
    the transaction that changes the nodes: ``services.node_groups_refresh`` recomputes a backend's groups after
    writes that move nodes between groups, and a watch's pod events add their usage deltas
    (``services.usage_apply_deltas``). ``free`` adds up ``max(0, gpu - gpu_used)`` node by node.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="node_groups")
    placements = models.TextField()
    available = models.BooleanField()
    unschedulable = models.BooleanField()
    gpu_product = models.CharField(max_length=128, blank=True)
    nodes = models.IntegerField(default=0)
    gpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    free = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    gpu_used = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    gpu_memory = models.BigIntegerField(default=0)
    cpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    cpu_used = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    memory = models.BigIntegerField(default=0)
    memory_used = models.BigIntegerField(default=0)
    pods = models.IntegerField(default=0)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "placements"]
        verbose_name_plural = "node group sums"

    def __str__(self):
        return f"{self.placements}: {self.nodes} nodes"


class TopologySums(models.Model):
    """A pool's available nodes that share their topology domain, GPU product, whole GPUs and free GPUs, counted.

    What the capacity by topology (SEMANTICS §11, ``selectors.pool_capacity``) reads instead of every member node
    and its labels: a 5,000-node pool in 300 racks makes a few thousand such rows at most. ``domain`` is the JSON
    list of the nodes' values of ``levels`` (the JSON list of the pool's level labels, coarsest first), ``null``
    where a node lacks one; ``gpus`` is a node's allocatable GPUs rounded down and ``free`` its whole free GPUs.
    One more row per pool, its ``domain`` empty and ``nodes`` 0, says that the set is whole for those levels: a
    reader finding none (new levels, an upgrade) reads the nodes instead.

    Sync and watch keep them in the transaction that changes the nodes (``services.topology_sums_refresh``): the
    backend's pools whole after node writes and membership changes, and after a watch batch's pod events only the
    domains of the nodes whose usage moved.
    """

    COMPLETE = ""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="topology_sums")
    levels = models.TextField()
    domain = models.TextField(blank=True)
    gpu_product = models.CharField(max_length=128, blank=True)
    gpus = models.IntegerField(default=0)
    free = models.IntegerField(default=0)
    nodes = models.IntegerField(default=0)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "domain", "gpu_product", "gpus", "free"]
        verbose_name_plural = "topology sums"

    def __str__(self):
        return f"{self.domain or '(whole)'}: {self.nodes} nodes"


class PoolPodUsage(models.Model):
    """GPUs requested by the non-terminated pods carrying one pool label value on one backend.

    ``gpu`` counts every such pod (the pool's usage), ``gpu_quota`` only the non-preemptible ones (its
    quota use). Kept up to date by sync and watch for the pool names their changes touch.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="pool_pod_usage")
    pool_name = models.CharField(max_length=128)
    gpu = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    gpu_quota = models.DecimalField(max_digits=14, decimal_places=3, default=0)

    objects = querysets.PoolPodUsageQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "pool_name"]
        constraints = [models.UniqueConstraint(fields=["backend", "pool_name"], name="unique_pool_usage_per_backend")]

    def __str__(self):
        return f"{self.pool_name}: {self.gpu} GPUs"


# The order of the Workloads list: GPU holders first (SEMANTICS §10), then by key.
WORKLOAD_ORDER = ["-held", "-gpus", "backend", "namespace", "workload_name", "workload_kind"]


class WorkloadSums(models.Model):
    """The pods of one workload (SEMANTICS §10) on one backend, summed: what orders and filters the Workloads list.

    A list read by a reader who sees the whole fleet orders these rows by an index and reads one page of them,
    where grouping every pod costs a second at 150,000 pods (``selectors.workloads``). Sync and watch keep them in
    the transaction that writes the pods: ``services.workload_sums_refresh`` recomputes the workloads a batch of
    pods touched, or a backend's whole set after a sync that changed most of its pods. ``held`` counts the GPUs
    of the live pods bound to a node.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="workload_sums")
    namespace = models.CharField(max_length=253)
    workload_kind = models.CharField(max_length=64, blank=True)
    workload_name = models.CharField(max_length=253, blank=True)
    gpus = models.DecimalField(max_digits=20, decimal_places=3, default=0)
    held = models.DecimalField(max_digits=20, decimal_places=3, default=0)
    pods = models.IntegerField(default=0)
    running = models.IntegerField(default=0)
    pending = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "namespace", "workload_name", "workload_kind"]
        verbose_name_plural = "workload sums"
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "namespace", "workload_kind", "workload_name"], name="unique_workload_sums"
            )
        ]
        indexes = [
            models.Index(fields=WORKLOAD_ORDER, name="workload_sums_order"),
            models.Index(fields=WORKLOAD_ORDER, name="workload_sums_pending", condition=models.Q(pending__gt=0)),
        ]

    def __str__(self):
        return f"{self.namespace}/{self.workload_name}: {self.pods} pods"


class VerdictRound(models.Model):
    """When the worker last judged every pending workload of a backend (``services.workload_verdicts_keep``), and the
    newest config revision it judged them under: its ``WorkloadVerdict`` rows are read while this is recent and no
    config changed since (``selectors.pending_verdicts``)."""

    backend = models.OneToOneField(Backend, on_delete=models.CASCADE, related_name="verdict_round")
    judged_at = models.DateTimeField(help_text="when the state the verdicts were judged from began to be read")
    config_revision = models.BigIntegerField(default=0, help_text="the newest config revision's id then")
    workloads = models.IntegerField(default=0)
    seconds = models.FloatField(default=0, help_text="how long judging took")

    objects = querysets.FleetInternalsQuerySet.as_manager()

    def __str__(self):
        return f"{self.backend}: {self.workloads} verdicts at {self.judged_at:%H:%M:%S}"


class WorkloadVerdict(models.Model):
    """Why one pending workload waits (SEMANTICS §10), as the worker's last ``VerdictRound`` of its backend judged it.

    ``verdict`` is ``selectors.pending_verdicts``' value for the workload when judged (a reader ages its
    ``scheduling`` check to the time it reads, ``engine.verdicts.aged_verdict``); ``pool`` the pool it waits on
    (none: no pool takes it) and ``gpus`` the GPUs it asks, which the pool page's line and ``/metrics`` add up.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="workload_verdicts")
    namespace = models.CharField(max_length=253)
    workload_kind = models.CharField(max_length=64, blank=True)
    workload_name = models.CharField(max_length=253, blank=True)
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    gpus = models.DecimalField(max_digits=20, decimal_places=3, default=0)
    reason = models.CharField(max_length=32)
    verdict = models.JSONField(default=dict)
    scheduled_message = models.CharField(
        max_length=1000, blank=True, help_text="its pods' PodScheduled message, which the verdict quotes as it ages"
    )
    judged_at = models.DateTimeField(
        null=True, blank=True, help_text="when it was judged (none: with its backend's round), which it is aged from"
    )

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "namespace", "workload_name", "workload_kind"]
        indexes = [
            models.Index(fields=["backend", "namespace", "workload_kind", "workload_name"], name="verdict_workload"),
            models.Index(fields=["pool", "reason"], name="verdict_pool"),
        ]

    def __str__(self):
        return f"{self.namespace}/{self.workload_name}: {self.reason}"


class NodeMembership(models.Model):
    """A node belongs to a (pool, platform): the platform's merged template selects it (SEMANTICS.md §5).

    ``platform_name`` is ``default`` for a pool without platforms.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="memberships")
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="memberships")
    platform_name = models.CharField(max_length=128)

    objects = querysets.MembershipQuerySet.as_manager()

    class Meta:
        ordering = ["pool__name", "platform_name", "node__name"]
        constraints = [
            models.UniqueConstraint(fields=["node", "pool", "platform_name"], name="unique_node_pool_platform")
        ]

    def __str__(self):
        return f"{self.node.name} in {self.pool.name}/{self.platform_name}"


class ConfigRevision(models.Model):
    """One change to a config type: who, when, why, and the whole type's state after it.

    Revisions are numbered per config type. ``snapshot`` maps every object name of the type to its
    body, so any revision can be shown, diffed against another, or restored as a new revision.
    """

    config_type = models.CharField(max_length=32, choices=ConfigType.choices)
    revision = models.PositiveIntegerField()
    name = models.CharField(max_length=128, blank=True, help_text="the object changed, if one")
    action = models.CharField(max_length=16, choices=RevisionAction.choices)
    username = models.CharField(max_length=150, blank=True)
    origin = models.CharField(max_length=16, choices=ChangeOrigin.choices, default=ChangeOrigin.SYSTEM)
    created_at = models.DateTimeField(auto_now_add=True)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    changed = models.JSONField(default=list, blank=True, help_text="the names of the objects this revision changed")
    snapshot = models.JSONField(default=dict)

    objects = querysets.ConfigRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["config_type", "-revision"]
        constraints = [
            models.UniqueConstraint(fields=["config_type", "revision"], name="unique_revision_per_config_type")
        ]

    def __str__(self):
        return f"{self.config_type}:{self.revision}"


class UsageSample(models.Model):
    """GPU usage at one moment, per pool or per GPU product, for the history charts.

    Minute samples are kept for two days; hourly averages of them for 90 days.
    """

    class Scope(models.TextChoices):
        POOL = "pool", "Pool"
        PRODUCT = "product", "GPU product"
        QUOTA = "quota", "Pool quotas"  # a pool's departments: used = allocated, quota_limit = deserved

    class Resolution(models.TextChoices):
        MINUTE = "minute", "Minute"
        HOUR = "hour", "Hour"

    scope = models.CharField(max_length=8, choices=Scope.choices)
    key = models.CharField(max_length=128, help_text="pool name or GPU product")
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="usage_samples")
    resolution = models.CharField(max_length=8, choices=Resolution.choices, default=Resolution.MINUTE)
    at = models.DateTimeField()
    used = models.FloatField()
    capacity = models.FloatField()
    quota_used = models.FloatField(null=True, blank=True)
    quota_limit = models.FloatField(null=True, blank=True)

    objects = querysets.UsageSampleQuerySet.as_manager()

    class Meta:
        ordering = ["scope", "key", "at"]
        indexes = [models.Index(fields=["scope", "key", "resolution", "at"], name="usage_series")]
        constraints = [
            models.UniqueConstraint(fields=["scope", "key", "backend", "resolution", "at"], name="unique_usage_sample")
        ]

    def __str__(self):
        return f"{self.scope} {self.key} at {self.at:%Y-%m-%d %H:%M}"


class WorkloadRun(models.Model):
    """One run of a workload holding GPUs, as the worker saw it each minute: what start estimates learn runtimes
    from (SEMANTICS §10.1). ``finished`` is the last minute it was seen running, set when it is no longer running
    (done, or gone); its runtime is ``finished - started``."""

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="workload_runs")
    namespace = models.CharField(max_length=253)
    workload_kind = models.CharField(max_length=64, blank=True)
    workload_name = models.CharField(max_length=253, blank=True)
    project = models.CharField(max_length=128, blank=True)
    started = models.DateTimeField()
    last_seen = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "started"]
        indexes = [models.Index(fields=["backend", "project", "workload_kind", "finished"], name="workload_run_kind")]
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "namespace", "workload_kind", "workload_name"],
                condition=models.Q(finished__isnull=True),
                name="unique_open_workload_run",
            )
        ]

    def __str__(self):
        return f"{self.namespace}/{self.workload_name} from {self.started:%Y-%m-%d %H:%M}"


class StartEstimate(models.Model):
    """A waiting workload's start estimate as first made (SEMANTICS §10.1), and when it did start: how the console
    measures its own accuracy. ``likely`` and ``late`` are None when no estimate could be made then."""

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="start_estimates")
    namespace = models.CharField(max_length=253)
    workload_kind = models.CharField(max_length=64, blank=True)
    workload_name = models.CharField(max_length=253, blank=True)
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="start_estimates")
    made_at = models.DateTimeField()
    likely = models.DateTimeField(null=True, blank=True)
    late = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "made_at"]
        indexes = [models.Index(fields=["pool", "started"], name="start_estimate_pool")]
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "namespace", "workload_kind", "workload_name"],
                condition=models.Q(started__isnull=True),
                name="unique_open_start_estimate",
            )
        ]

    def __str__(self):
        return f"{self.namespace}/{self.workload_name} estimated at {self.made_at:%Y-%m-%d %H:%M}"


class ProjectUsageMinute(models.Model):
    """What a backend's projects held at one recorded minute, for time-based fair share (SEMANTICS §9.3).

    ``allocated`` maps each project holding GPUs to the GPUs of its running pods on the backend; ``capacity`` is the
    backend's allocatable GPUs on available nodes; ``seconds`` is how long the sample stands for (60 for the
    worker's minutes; a backfill's coarser moments say more). One row per backend and minute: 550 projects make a
    row of a few kilobytes, a week of them 10,080 rows per backend. Kept as long as the longest window needs.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="project_usage")
    at = models.DateTimeField()
    seconds = models.IntegerField(default=60)
    capacity = models.FloatField()
    allocated = models.JSONField(default=dict)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        ordering = ["backend", "at"]
        constraints = [models.UniqueConstraint(fields=["backend", "at"], name="unique_project_usage_minute")]

    def __str__(self):
        return f"{self.backend_id} at {self.at:%Y-%m-%d %H:%M}"


class ProjectUsageSums(models.Model):
    """A backend's §9.3 sums for one window and half-life, kept as its minutes are recorded: its capacity-seconds
    and each project's GPU-seconds, weighted as of ``through`` (the last minute folded in).

    What the fair share reads instead of a week of minutes (``engine.pastusage.UsageSums``). Each backend has one
    for its own ``fair_share`` settings and one for a planner's "last week" (7 days, no half-life); ``window`` and
    ``half_life`` (seconds, 0 for none) say which, and new settings are counted from the minutes at the next
    recording.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="project_usage_sums")
    window = models.IntegerField()
    half_life = models.IntegerField(default=0, help_text="seconds; 0: none")
    through = models.DateTimeField(null=True, blank=True)
    capacity = models.FloatField(default=0)
    allocated = models.JSONField(default=dict)

    objects = querysets.FleetInternalsQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "project usage sums"
        constraints = [
            models.UniqueConstraint(fields=["backend", "window", "half_life"], name="unique_project_usage_sums")
        ]

    def __str__(self):
        return f"{self.backend_id} through {self.through}"


class NodeLabelChange(models.Model):
    """An audit entry for a node label the console set or removed in the cluster."""

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="label_changes")
    node_name = models.CharField(max_length=253)
    key = models.CharField(max_length=317)
    old_value = models.CharField(max_length=63, null=True, blank=True)
    new_value = models.CharField(max_length=63, null=True, blank=True, help_text="null: label removed")
    username = models.CharField(max_length=150, blank=True)
    origin = models.CharField(max_length=16, choices=ChangeOrigin.choices, default=ChangeOrigin.SYSTEM)
    operation = models.CharField(max_length=256, blank=True, help_text="what the change was part of")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = querysets.NodeLabelChangeQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.node_name} {self.key}={self.new_value}"


class Lease(models.Model):
    """A named lock held until ``expires_at``: one sync or one watch per backend at a time, across workers.

    Taken and renewed by single conditional UPDATE/INSERT statements, so it works on SQLite and
    PostgreSQL alike; a crashed holder's lease simply expires.
    """

    name = models.CharField(max_length=200, unique=True)
    owner = models.CharField(max_length=200)
    since = models.DateTimeField(null=True, blank=True, help_text="when its holder took it")
    expires_at = models.DateTimeField()

    objects = querysets.FleetInternalsQuerySet.as_manager()

    def __str__(self):
        return f"{self.name} held by {self.owner} until {self.expires_at:%H:%M:%S}"


class QuietGpu(models.Model):
    """A GPU (a MIG instance, a time-sliced share) a pod holds, quiet since ``quiet_since``: its utilization has
    stayed at or below the idle threshold since then. Once that has lasted the idle duration the GPU is idle.

    Kept by ``utilization_record``: a row appears when its device goes quiet, keeps ``quiet_since`` while the device
    stays quiet, and goes when the device is used again or its pod ends. ``gpus`` is the device's size in GPUs (a
    share of a time-sliced GPU, a MIG instance's slices of seven). ``pool`` is the workload's pool (its pool label,
    else its node's pool); ``user`` and ``project`` are empty when unknown.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="quiet_gpus")
    node_name = models.CharField(max_length=253)
    device = models.CharField(max_length=128, help_text="UUID, with the MIG instance or time-sliced share")
    model = models.CharField(max_length=128, blank=True)
    namespace = models.CharField(max_length=253)
    pod = models.CharField(max_length=253)
    user = models.CharField(max_length=253, blank=True)
    project = models.CharField(max_length=128, blank=True)
    pool = models.CharField(max_length=128, blank=True)
    gpus = models.FloatField(default=1)
    quiet_since = models.DateTimeField()

    objects = querysets.QuietGpuQuerySet.as_manager()

    class Meta:
        ordering = ["namespace", "pod", "node_name", "device"]
        indexes = [models.Index(fields=["quiet_since"], name="quiet_gpu_since")]
        constraints = [
            models.UniqueConstraint(fields=["backend", "device", "namespace", "pod"], name="unique_quiet_gpu")
        ]

    def __str__(self):
        return f"{self.namespace}/{self.pod} {self.device}"


class UtilizationSample(models.Model):
    """The GPUs of one pool's nodes at one moment: utilization, memory and idle GPUs, for the history charts.

    ``gpus`` and ``idle_gpus`` count GPUs (shares and MIG instances as fractions); ``utilization`` is their
    average in % weighted by size; memory is in MiB; ``distribution`` counts devices per utilization bucket
    (``pools.engine.utilization.BUCKETS``; minute samples only, hourly averages have none). Kept like
    ``UsageSample``: minutes for two days, hours for 90.
    """

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="utilization_samples")
    pool = models.CharField(max_length=128)
    resolution = models.CharField(
        max_length=8, choices=UsageSample.Resolution.choices, default=UsageSample.Resolution.MINUTE
    )
    at = models.DateTimeField()
    gpus = models.FloatField()
    utilization = models.FloatField(null=True, blank=True)
    memory_used = models.FloatField(default=0)
    memory_total = models.FloatField(default=0)
    idle_gpus = models.FloatField(default=0)
    distribution = models.JSONField(default=dict, blank=True)

    objects = querysets.UtilizationSampleQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "at"]
        indexes = [models.Index(fields=["pool", "resolution", "at"], name="utilization_series")]
        constraints = [
            models.UniqueConstraint(fields=["backend", "pool", "resolution", "at"], name="unique_utilization_sample")
        ]

    def __str__(self):
        return f"{self.pool} at {self.at:%Y-%m-%d %H:%M}"


class GpuConsumption(models.Model):
    """GPU-hours allocated to workloads, and the idle part of them, in one hour or one day of one pool.

    One row per (bucket, pool, dimension, value): ``dimension`` is what the hours are counted by (``pool``,
    ``user``, ``namespace``, ``project``; ``ConsumptionBy``) and ``value`` the pool, user, namespace or project.
    Every row carries its pool, so a reader is shown only the hours of the pools they may see.
    """

    class Resolution(models.TextChoices):
        HOUR = "hour", "Hour"
        DAY = "day", "Day"

    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="gpu_consumption")
    resolution = models.CharField(max_length=8, choices=Resolution.choices)
    start = models.DateTimeField()
    pool = models.CharField(max_length=128, blank=True)
    dimension = models.CharField(max_length=16)
    value = models.CharField(max_length=253, blank=True)
    allocated = models.FloatField(default=0, help_text="GPU-hours")
    idle = models.FloatField(default=0, help_text="GPU-hours of allocated GPUs left idle")

    objects = querysets.GpuConsumptionQuerySet.as_manager()

    class Meta:
        ordering = ["start", "pool", "dimension", "value"]
        indexes = [models.Index(fields=["resolution", "dimension", "start"], name="consumption_period")]
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "resolution", "start", "pool", "dimension", "value"], name="unique_consumption"
            )
        ]

    def __str__(self):
        return f"{self.dimension}={self.value} in {self.pool} from {self.start:%Y-%m-%d %H:%M}"


class JobRecord(models.Model):
    """A sync asked for over the API or a page ("Sync now"), polled at ``/api/jobs/{id}/`` from any web process.

    The worker that runs it writes its state here (``pools.jobs``); one job per backend is queued or running at a
    time (``one_active_job_per_backend``): asking again meanwhile answers that job.
    """

    class State(models.TextChoices):
        PENDING = "PENDING", "Queued"
        STARTED = "STARTED", "Running"
        SUCCESS = "SUCCESS", "Done"
        FAILURE = "FAILURE", "Failed"

    ACTIVE = (State.PENDING, State.STARTED)

    id = models.UUIDField(primary_key=True)
    task = models.CharField(max_length=64)
    backend = models.ForeignKey(Backend, on_delete=models.CASCADE, related_name="jobs")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = querysets.JobRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["backend", "task"],
                condition=models.Q(state__in=["PENDING", "STARTED"]),
                name="one_active_job_per_backend",
            )
        ]

    def __str__(self):
        return f"{self.task} of {self.backend_id}: {self.state}"
