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


# A config type as prose says it: "pod template 'x' does not exist".
TYPE_LABELS = {config_type: config_type.label.lower() for config_type in ConfigType}


class BackendKind(models.TextChoices):
    """Where a backend's node and pod inventory comes from."""

    KUBERNETES = "kubernetes", "Kubernetes API"
    FILE = "file", "Kubernetes List file"
    SIMULATED = "simulated", "Simulated fleet"


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
