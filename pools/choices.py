"""Enumerations shared by models, services, forms and the CLI."""

from django.db import models


class ConfigType(models.TextChoices):
    """The kinds of configuration that have a revision history (OSMO's config types)."""

    BACKEND = "BACKEND", "Backend"
    POD_TEMPLATE = "POD_TEMPLATE", "Pod template"
    RESOURCE_VALIDATION = "RESOURCE_VALIDATION", "Resource validation"
    POOL = "POOL", "Pool"
    ROLE = "ROLE", "Role"


class BackendKind(models.TextChoices):
    """Where a backend's node and pod inventory comes from."""

    KUBERNETES = "kubernetes", "Kubernetes API"
    FILE = "file", "Kubernetes List file"
    SIMULATED = "simulated", "Simulated fleet"


class PoolStatus(models.TextChoices):
    ONLINE = "ONLINE", "Online"
    OFFLINE = "OFFLINE", "Offline"
    MAINTENANCE = "MAINTENANCE", "Maintenance"


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
