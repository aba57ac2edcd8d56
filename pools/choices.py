"""The console's vocabulary: every word a page, the API, ``poolctl``, a filter, a metric or the docs uses for a
state is defined here once, with its label.
"""

from django.db import models

from .engine import accounting


class ConfigType(models.TextChoices):
    """The kinds of configuration that have a revision history (OSMO's config types)."""

    BACKEND = "BACKEND", "Backend"
    POD_TEMPLATE = "POD_TEMPLATE", "Pod template"
    RESOURCE_VALIDATION = "RESOURCE_VALIDATION", "Resource validation"
    POOL = "POOL", "Pool"
    ROLE = "ROLE", "Role"
    DEPARTMENT = "DEPARTMENT", "Department"
    PROJECT = "PROJECT", "Project"


# A config type as prose says it: "pod template 'x' does not exist".
TYPE_LABELS = {config_type: config_type.label.lower() for config_type in ConfigType}


class BackendKind(models.TextChoices):
    """Where a backend's node and pod inventory comes from."""

    KUBERNETES = "kubernetes", "Kubernetes API"
    FILE = "file", "Kubernetes List file"
    SIMULATED = "simulated", "Simulated fleet"


# The kinds of backend whose node labels the console may write when ``writable: true``: a cluster's API server, and
# a simulated cluster, which keeps what is written (``pools.inventory.node_labels``).
LABEL_WRITABLE_KINDS = (BackendKind.KUBERNETES, BackendKind.SIMULATED)


class PoolStatus(models.TextChoices):
    """A pool: in maintenance (its own switch), else online while its backend is (``BackendStatus``)."""

    ONLINE = "ONLINE", "Online"
    OFFLINE = "OFFLINE", "Offline"
    MAINTENANCE = "MAINTENANCE", "Maintenance"


class BackendStatus(models.TextChoices):
    """A backend is online while its last successful contact is within ``GPUPOOL["ONLINE_WINDOW_SECONDS"]``."""

    ONLINE = "ONLINE", "Online"
    OFFLINE = "OFFLINE", "Offline"


class NodeStatus(models.TextChoices):
    """A node's state; the three never overlap.

    - ``available``: schedulable and every readiness rule of its backend holds; it adds to capacity.
    - ``cordoned``: marked unschedulable (``kubectl cordon``), whatever its conditions.
    - ``unavailable``: not cordoned, but a readiness rule fails (NotReady, pressure); the reason says which.
    """

    AVAILABLE = "available", "Available"
    UNAVAILABLE = "unavailable", "Unavailable"
    CORDONED = "cordoned", "Cordoned"

    @classmethod
    def of(cls, *, available: bool, cordoned: bool) -> "NodeStatus":
        if cordoned:
            return cls.CORDONED
        return cls.AVAILABLE if available else cls.UNAVAILABLE


class PlacementStrategy(models.TextChoices):
    """How the scheduler places a pool's workloads on its nodes (Run:ai's node-pool setting)."""

    BINPACK = "binpack", "Bin-pack (fill nodes first)"
    SPREAD = "spread", "Spread (even out across nodes)"


class NodePoolStatus(models.TextChoices):
    """A node pool as Run:ai shows it: ``Ready`` with at least one node, ``Empty`` with none."""

    READY = "Ready", "Ready"
    EMPTY = "Empty", "Empty"


class UnitStatus(models.TextChoices):
    """How a department's or project's workloads stand against its quota, added up over the pools shown (SEMANTICS
    §9): holding more GPUs than its quota (the excess is preemptible), waiting for GPUs, running within its quota,
    or holding nothing."""

    OVER_QUOTA = "Over quota", "Over quota"
    WAITING = "Waiting", "Waiting"
    WITHIN_QUOTA = "Within quota", "Within quota"
    IDLE = "Idle", "Idle"


class NodePoolColumn(models.TextChoices):
    """The columns of the node-pools list (Run:ai's node-pools table): the field names the API and the
    ``sort=``/``columns=`` parameters use, with Run:ai's headings (the page's headers and the CSV's first row).

    ``backend`` (Run:ai's cluster) and ``default`` (a backend's default pool) are the console's own.
    """

    NODE_POOL = "node_pool", "Node pool"
    STATUS = "status", "Status"
    LABEL_KEY = "label_key", "Label key"
    LABEL_VALUE = "label_value", "Label value"
    NODES = "nodes", "Node(s)"
    GPU_DEVICES = "gpu_devices", "GPU devices"
    GPU_MEMORY = "gpu_memory", "GPU memory"
    ALLOCATED_GPUS = "allocated_gpus", "Allocated GPUs"
    CPUS = "cpus", "CPUs (Cores)"
    CPU_MEMORY = "cpu_memory", "CPU memory"
    ALLOCATED_CPUS = "allocated_cpus", "Allocated CPUs (Cores)"
    ALLOCATED_CPU_MEMORY = "allocated_cpu_memory", "Allocated CPU memory"
    GPU_PLACEMENT_STRATEGY = "gpu_placement_strategy", "GPU placement strategy"
    CPU_PLACEMENT_STRATEGY = "cpu_placement_strategy", "CPU placement strategy"
    LAST_UPDATE = "last_update", "Last update"
    CREATION_TIME = "creation_time", "Creation time"
    WORKLOADS = "workloads", "Workload(s)"
    BACKEND = "backend", "Backend"
    DEFAULT = "default", "Default"


class GpuctlPoolStatus(models.TextChoices):
    """A pool's status as gpuctl's ``get pools`` prints it (lower case).

    ``maintenance`` and ``offline`` are ``PoolStatus``; an online pool is ``active``, or ``empty`` when it has no
    node — except a backend's default pool, which gpuctl always lists as ``active`` (it is where new nodes go).
    """

    ACTIVE = "active", "Active"
    MAINTENANCE = "maintenance", "Maintenance"
    OFFLINE = "offline", "Offline"
    EMPTY = "empty", "Empty"

    @classmethod
    def of(cls, *, status: str, nodes: int, default: bool) -> "GpuctlPoolStatus":
        """From the pool's ``PoolStatus``, its number of nodes and whether it is a backend's default pool."""
        if status == PoolStatus.MAINTENANCE:
            return cls.MAINTENANCE
        if status == PoolStatus.OFFLINE:
            return cls.OFFLINE
        return cls.ACTIVE if nodes or default else cls.EMPTY


class ResourceType(models.TextChoices):
    """How a node is used, by the number of pools that select it (OSMO's resource type)."""

    RESERVED = accounting.RESERVED, "Reserved (one pool)"
    SHARED = accounting.SHARED, "Shared (several pools)"
    UNUSED = accounting.UNUSED, "Unused (no pool)"


class SyncState(models.TextChoices):
    """Where a sync the web console asked for stands (``/api/jobs/{id}/`` answers Celery's task states)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Syncing"
    DONE = "done", "Synced"
    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "No answer"


class RevisionAction(models.TextChoices):
    CREATE = "create", "Created"
    UPDATE = "update", "Updated"
    DELETE = "delete", "Deleted"
    ROLLBACK = "rollback", "Rolled back"
    IMPORT = "import", "Imported"


class ChangeOrigin(models.TextChoices):
    """Where a change was made, kept on every revision for the audit trail."""

    CLI = "cli", "poolctl"
    WEB = "web", "Web"
    API = "api", "API"
    ADMIN = "admin", "Django admin"
    SYSTEM = "system", "System"


class ConsumptionBy(models.TextChoices):
    """What GPU-hours are counted by in a consumption report (``pools.engine.utilization.GROUP_KEYS``)."""

    POOL = "pool", "Pool"
    USER = "user", "User"
    NAMESPACE = "namespace", "Namespace"
    PROJECT = "project", "Project"
