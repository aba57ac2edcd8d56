"""The permission catalogue: every action and resource type the product knows, and what each operation needs.

This is the only place where an action (``pool:Read``) or a resource type (``pool/``) is spelled out. A
page, an endpoint, a command or a service that needs a permission names one of the ``Permission`` values
below; ``docs/api.md`` and the access page list them from here, and a test keeps every other module free
of hand-typed action strings.

A permission is an action on a resource type: ``VIEW_POOL.on("team-a")`` is the request
``("pool:Read", "pool/team-a")`` that the role policies decide (SEMANTICS.md §7). Unscoped permissions
(``READ_METRICS``) take no name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ResourceType(StrEnum):
    """What a resource name is prefixed with: ``pool/<name>``, ``config/<TYPE>`` …"""

    POOL = "pool"
    BACKEND = "backend"
    CONFIG = "config"
    ROLE = "role"
    USER = "user"
    DEPARTMENT = "department"
    PROJECT = "project"


class Action(StrEnum):
    """Every action a policy can allow or deny, as policies spell them."""

    POOL_READ = "pool:Read"
    WORKFLOW_CREATE = "workflow:Create"
    CONFIG_READ = "config:Read"
    CONFIG_UPDATE = "config:Update"
    BACKEND_READ = "backend:Read"
    BACKEND_UPDATE = "backend:Update"
    BACKEND_CREDENTIALS = "backend:Credentials"
    ROLE_READ = "role:Read"
    USER_READ = "user:Read"
    USER_UPDATE = "user:Update"
    RESOURCE_LIST = "resource:List"
    SYSTEM_METRICS = "system:Metrics"
    SYSTEM_HEALTH = "system:Health"
    AUTH_LOGIN = "auth:Login"
    PROFILE_READ = "profile:Read"
    PROFILE_UPDATE = "profile:Update"
    DEPARTMENT_READ = "department:Read"
    DEPARTMENT_UPDATE = "department:Update"
    PROJECT_READ = "project:Read"


@dataclass(frozen=True)
class Permission:
    """An action on a type of resource (or on nothing in particular), with what it lets a holder do."""

    key: str
    action: Action
    resource_type: ResourceType | None
    summary: str

    def on(self, name: str = "") -> tuple[str, str]:
        """The (action, resource) request for one object: ``VIEW_POOL.on("a")`` is ``("pool:Read", "pool/a")``."""
        if self.resource_type is None:
            return str(self.action), ""
        if not name:
            raise ValueError(f"{self.key} needs the name of a {self.resource_type}")
        return str(self.action), resource_name(self.resource_type, name)

    def describe(self, name: str = "") -> str:
        """The request as a phrase: ``pool:Read on pool/a`` (``…/*`` without a name)."""
        if self.resource_type is None:
            return f"{self.action} (unscoped)"
        return f"{self.action} on {resource_name(self.resource_type, name or '*')}"


def resource_name(resource_type: ResourceType, name: str) -> str:
    """``pool/team-a``: the resource a policy names for one object."""
    return f"{resource_type}/{name}"


VIEW_POOL = Permission(
    "view_pool", Action.POOL_READ, ResourceType.POOL, "see the pool: its body, platforms, nodes, workloads, usage"
)
USE_POOL = Permission("use_pool", Action.WORKFLOW_CREATE, ResourceType.POOL, "run workloads in the pool")
VIEW_BACKEND = Permission(
    "view_backend", Action.BACKEND_READ, ResourceType.BACKEND, "see the backend, its sync status and jobs"
)
OPERATE_BACKEND = Permission(
    "operate_backend", Action.BACKEND_UPDATE, ResourceType.BACKEND, "sync the backend now, label its nodes"
)
CONFIRM_CREDENTIALS = Permission(
    "confirm_credentials",
    Action.BACKEND_CREDENTIALS,
    ResourceType.BACKEND,
    "send the backend's Prometheus credentials to its prometheus_url: a change of that URL by anyone else drops "
    "them until this is confirmed by saving the backend",
)
VIEW_CONFIG = Permission(
    "view_config", Action.CONFIG_READ, ResourceType.CONFIG, "read pod templates or validation rules (per type)"
)
CHANGE_CONFIG = Permission(
    "change_config",
    Action.CONFIG_UPDATE,
    ResourceType.CONFIG,
    "create, change, delete, import, roll back and tag objects of a config type",
)
VIEW_ROLE = Permission("view_role", Action.ROLE_READ, ResourceType.ROLE, "see the role and its policies")
VIEW_USER = Permission("view_user", Action.USER_READ, ResourceType.USER, "see the user or service account, its roles")
CHANGE_USER = Permission(
    "change_user",
    Action.USER_UPDATE,
    ResourceType.USER,
    "create the user or service account, give it roles (never more than one holds), make its tokens",
)
VIEW_DEPARTMENT = Permission(
    "view_department", Action.DEPARTMENT_READ, ResourceType.DEPARTMENT, "see the department and its quotas"
)
MANAGE_DEPARTMENT = Permission(
    "manage_department",
    Action.DEPARTMENT_UPDATE,
    ResourceType.DEPARTMENT,
    "create, change and delete the department's projects and their quotas (with config:Update on config/PROJECT)",
)
VIEW_PROJECT = Permission(
    "view_project", Action.PROJECT_READ, ResourceType.PROJECT, "see the project, its quotas and its workloads"
)
LIST_FLEET = Permission(
    "list_fleet", Action.RESOURCE_LIST, None, "see every node and pod, in a pool or not, and fleet-wide usage"
)
READ_METRICS = Permission("read_metrics", Action.SYSTEM_METRICS, None, "scrape /metrics")
READ_PROFILE = Permission("read_profile", Action.PROFILE_READ, None, "see one's own profile and tokens")

PERMISSIONS: tuple[Permission, ...] = (
    VIEW_POOL,
    USE_POOL,
    VIEW_BACKEND,
    OPERATE_BACKEND,
    CONFIRM_CREDENTIALS,
    VIEW_CONFIG,
    CHANGE_CONFIG,
    VIEW_ROLE,
    VIEW_USER,
    CHANGE_USER,
    VIEW_DEPARTMENT,
    MANAGE_DEPARTMENT,
    VIEW_PROJECT,
    LIST_FLEET,
    READ_METRICS,
    READ_PROFILE,
)

# How the objects of each config type are seen: object by object for pools, backends and roles, type by
# type for pod templates and validation rules (whose names say nothing about who may use them).
OBJECT_READ: dict[str, Permission] = {
    "BACKEND": VIEW_BACKEND,
    "POD_TEMPLATE": VIEW_CONFIG,
    "RESOURCE_VALIDATION": VIEW_CONFIG,
    "POOL": VIEW_POOL,
    "ROLE": VIEW_ROLE,
    "DEPARTMENT": VIEW_DEPARTMENT,
    "PROJECT": VIEW_PROJECT,
}


def object_read_request(config_type: str, name: str) -> tuple[str, str]:
    """The request that decides whether object ``name`` of ``config_type`` is visible."""
    permission = OBJECT_READ[str(config_type)]
    return permission.on(str(config_type) if permission is VIEW_CONFIG else name)


# --- policies of the built-in and generated roles ------------------------------------------------------------

EVERYTHING = "*"
WORKFLOW_ANY = "workflow:*"
PROFILE_ANY = "profile:*"
ADMIN_ROLE = "osmo-admin"
USER_ROLE = "osmo-user"
DEFAULT_ROLE = "osmo-default"
METRICS_ROLE = "osmo-metrics"


def _policy(actions, resources=(), effect: str = "Allow") -> dict:
    return {"effect": effect, "actions": [str(action) for action in actions], "resources": list(resources)}


def pool_role_policy_data(prefix: str) -> list[dict]:
    """The policies of the ``osmo-<prefix>`` pool role: ``workflow:*`` and ``pool:Read`` on ``pool/<prefix>*``.

    The prefix is a plain prefix, so ``osmo-shared`` covers every pool whose name starts with ``shared``.
    """
    return [_policy([WORKFLOW_ANY, VIEW_POOL.action], [resource_name(ResourceType.POOL, f"{prefix}*")])]


BUILTIN_ROLES: dict[str, dict] = {
    ADMIN_ROLE: {
        "description": "Administrators: every action on every resource.",
        "policies": [_policy(["*:*"], [EVERYTHING])],
        "immutable": True,
    },
    USER_ROLE: {
        "description": "Users: read everything, run workflows in the default pool.",
        "policies": [
            _policy(["*:Read", "*:List"], [EVERYTHING]),
            _policy([WORKFLOW_ANY], [resource_name(ResourceType.POOL, "default")]),
        ],
        "immutable": False,
    },
    DEFAULT_ROLE: {
        "description": "Held by everyone who signs in: health check, login and their own profile.",
        "policies": [_policy([Action.SYSTEM_HEALTH, Action.AUTH_LOGIN, PROFILE_ANY])],
        "immutable": True,
    },
    METRICS_ROLE: {
        "description": "Prometheus: scrape /metrics (give it to a service account and scrape with its token).",
        "policies": [_policy([READ_METRICS.action])],
        "immutable": True,
    },
}
