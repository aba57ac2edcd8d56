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

from dataclasses import dataclass, replace
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


# --- what each door needs --------------------------------------------------------------------------------------
#
# Every way in (an API endpoint, a page or its htmx fragment, a ``poolctl`` verb) and the permissions it
# needs. The services and selectors do the checking, the same for every door; this table says what they
# check, so ``docs/api.md`` and the access page are made from it and the access matrix test sends each
# door's request for each kind of user and expects exactly what it says.


@dataclass(frozen=True)
class Door:
    """One way in and what it needs.

    ``reads`` decides whether the object the door names exists for the caller (404 when not) or, for a
    list, which rows it shows. ``acts`` is what a change needs besides (403 when not held). ``object`` and
    ``acts_on`` say what each permission is about: a path parameter in braces (``{name}``), a config type
    (``POOL``), or nothing for lists and unscoped calls. ``signed_in`` doors need only a signed-in caller,
    ``public`` ones nothing (the API's description, which holds no data).
    """

    door: str
    reads: Permission | None = None
    acts: Permission | None = None
    object: str = ""
    acts_on: str = ""
    rows: bool = False
    signed_in: bool = False
    public: bool = False
    note: str = ""

    @property
    def method(self) -> str:
        return self.door.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.door.split(" ", 1)[1]


def _config_doors(plural: str, config_type: str, reads: Permission) -> list[Door]:
    """The CRUD doors of one config type's REST endpoint; pod templates and validations are seen by type."""
    seen = config_type if reads is VIEW_CONFIG else "{name}"
    item = f"/api/{plural}/{{name}}/"
    return [
        Door(f"GET /api/{plural}/", reads, rows=True),
        Door(f"POST /api/{plural}/", reads, CHANGE_CONFIG, seen, config_type, note="{name} from the body"),
        Door(f"GET {item}", reads, object=seen),
        *(Door(f"{method} {item}", reads, CHANGE_CONFIG, seen, config_type) for method in ("PUT", "PATCH", "DELETE")),
    ]


_MANAGED = "and department:Update on the project's department, before and after the change"

DOORS: tuple[Door, ...] = (
    # REST API: config objects
    *_config_doors("backends", "BACKEND", VIEW_BACKEND),
    Door("POST /api/backends/{name}/sync/", VIEW_BACKEND, OPERATE_BACKEND, "{name}", "{name}"),
    *_config_doors("pools", "POOL", VIEW_POOL),
    Door("POST /api/pools/{name}/render/", VIEW_POOL, object="{name}"),
    Door("POST /api/pools/{name}/check/", VIEW_POOL, object="{name}", note="with `project`: `project:Read` on it"),
    Door("GET /api/pools/{pool_name}/platforms/", VIEW_POOL, object="{pool_name}"),
    Door("POST /api/pools/{pool_name}/platforms/", VIEW_POOL, CHANGE_CONFIG, "{pool_name}", "POOL"),
    Door("GET /api/pools/{pool_name}/platforms/{name}/", VIEW_POOL, object="{pool_name}"),
    *(
        Door(f"{m} /api/pools/{{pool_name}}/platforms/{{name}}/", VIEW_POOL, CHANGE_CONFIG, "{pool_name}", "POOL")
        for m in ("PUT", "PATCH", "DELETE")
    ),
    Door("GET /api/platforms/", VIEW_POOL, rows=True),
    *_config_doors("pod_templates", "POD_TEMPLATE", VIEW_CONFIG),
    *_config_doors("resource_validations", "RESOURCE_VALIDATION", VIEW_CONFIG),
    *_config_doors("roles", "ROLE", VIEW_ROLE),
    Door(
        "POST /api/roles/generate/",
        VIEW_ROLE,
        CHANGE_CONFIG,
        "{name}",
        "ROLE",
        note="{name} from the body; no escalation: the role may allow nothing its writer may not do",
    ),
    # REST API: inventory, listings and history
    Door("GET /api/nodes/", VIEW_POOL, rows=True, note="nodes of visible pools; with list_fleet also unused ones"),
    Door("GET /api/nodes/{name}/", VIEW_POOL, object="{name}", note="a node of a visible pool"),
    Door("GET /api/pods/", VIEW_POOL, rows=True, note="pods labelled with a visible pool of their own backend"),
    Door("GET /api/memberships/", VIEW_POOL, rows=True),
    Door("GET /api/usage/", VIEW_POOL, rows=True, note="GPU-product series only to readers of the whole fleet"),
    Door("GET /api/pool_quota/", VIEW_POOL, rows=True),
    Door("GET /api/resources/", VIEW_POOL, rows=True),
    Door("GET /api/node_pools/", VIEW_POOL, rows=True, note="Run:ai's node-pools view"),
    Door("GET /api/configs/history/", VIEW_POOL, rows=True, note="revisions of objects the reader may see"),
    Door("POST /api/configs/import/", None, CHANGE_CONFIG, acts_on="each type in the bundle", note="per object"),
    Door("GET /api/configs/{config_type}/", None, rows=True, note="the objects of the type the reader may see"),
    Door("POST /api/configs/{config_type}/", None, CHANGE_CONFIG, acts_on="{config_type}", note="per object"),
    Door("GET /api/configs/{config_type}/diff/", None, rows=True, note="of the objects the reader may see"),
    Door("GET /api/configs/{config_type}/{revision}/", None, object="the revision's objects"),
    Door(
        "POST /api/configs/{config_type}/{revision}/tags/",
        None,
        CHANGE_CONFIG,
        "the revision's objects",
        "{config_type}",
    ),
    Door(
        "POST /api/configs/{config_type}/{revision}/rollback/",
        None,
        CHANGE_CONFIG,
        "the revision's objects",
        "{config_type}",
        note="every object the rollback changes must be visible",
    ),
    Door("GET /api/jobs/{job_id}/", VIEW_BACKEND, object="the job's backend"),
    # REST API: gpuctl's pool workflow (SEMANTICS §8.1)
    Door(
        "POST /api/label_pools/",
        VIEW_POOL,
        CHANGE_CONFIG,
        "{name}",
        "POOL",
        note="{name}: pool.name of the body; and operate_backend on the backend, whose node labels it writes",
    ),
    Door(
        "DELETE /api/label_pools/{name}/",
        VIEW_POOL,
        CHANGE_CONFIG,
        "{name}",
        "POOL",
        note="and operate_backend on the pool's backend; 409 lists the running workloads unless ?force=true",
    ),
    Door("GET /api/nodes/{name}/labels/", VIEW_POOL, object="{name}", note="a node of a visible pool"),
    Door(
        "PATCH /api/nodes/{name}/labels/",
        VIEW_POOL,
        OPERATE_BACKEND,
        "{name}",
        "{backend}",
        note="a node of a visible pool; writes the label in the cluster",
    ),
    # REST API: quotas per node pool (SEMANTICS §9)
    *_config_doors("departments", "DEPARTMENT", VIEW_DEPARTMENT),
    *(
        door if door.method == "GET" else replace(door, note=_MANAGED)
        for door in _config_doors("projects", "PROJECT", VIEW_PROJECT)
    ),
    Door(
        "GET /api/quotas/", VIEW_POOL, rows=True, note="departments and projects the reader may see, per visible pool"
    ),
    Door(
        "PATCH /api/quotas/",
        VIEW_POOL,
        CHANGE_CONFIG,
        acts_on="DEPARTMENT|PROJECT",
        note="many quotas, all or nothing; a project's also " + _MANAGED,
    ),
    Door("POST /api/quotas/simulate/", signed_in=True, note="KAI's fair-share simulator; reads and writes no data"),
    # REST API: GPU utilization (issue 13)
    Door("GET /api/idle_gpus/", VIEW_POOL, rows=True, note="workloads holding idle GPUs in visible pools; CSV"),
    Door("GET /api/consumption/", VIEW_POOL, rows=True, note="GPU-hours allocated and idle in visible pools; CSV"),
    # REST API: people
    Door("GET /api/users/", VIEW_USER, rows=True),
    Door(
        "POST /api/users/",
        None,
        CHANGE_USER,
        acts_on="{username}",
        note="{username} from the body; every role given must be held",
    ),
    Door("GET /api/users/{username}/", VIEW_USER, object="{username}"),
    Door(
        "PUT /api/users/{username}/roles/",
        VIEW_USER,
        CHANGE_USER,
        "{username}",
        "{username}",
        note="never one's own; every role given is held",
    ),
    Door(
        "POST /api/users/{username}/tokens/",
        VIEW_USER,
        CHANGE_USER,
        "{username}",
        "{username}",
        note="and every role of the user is held",
    ),
    Door("GET /api/schema/", public=True, note="the OpenAPI description; no data"),
    Door("GET /api/docs/", public=True, note="Swagger UI"),
    Door("GET /api/redoc/", public=True, note="Redoc"),
    Door("GET /accounts/api/me/", signed_in=True, note="the caller's own roles and pools"),
    Door("GET /metrics", None, READ_METRICS),
    # Pages and their htmx fragments
    Door("GET /", VIEW_POOL, rows=True, note="htmx: the pool table fragment"),
    Door("GET /pools/{name}/", VIEW_POOL, object="{name}"),
    Door("GET /pools/{name}/usage/", VIEW_POOL, object="{name}", note="chart data; GPU products to fleet readers"),
    Door("GET /pools/{name}/utilization/", VIEW_POOL, object="{name}", note="chart data: GPU utilization, memory"),
    Door("GET /idle/", VIEW_POOL, rows=True, note="workloads with idle GPUs in visible pools; htmx fragment; CSV"),
    Door("GET /consumption/", VIEW_POOL, rows=True, note="GPU-hours of visible pools; CSV and JSON exports"),
    Door("GET /nodes/{name}/gpus/", VIEW_POOL, object="{name}", note="a node of a visible pool: its GPUs now"),
    Door("GET /nodes/{name}/gpus/history/", VIEW_POOL, object="{name}", note="chart data of the node's GPUs"),
    Door("GET /pools/new/", None, CHANGE_CONFIG, acts_on="POOL"),
    Door("POST /pools/new/", None, CHANGE_CONFIG, acts_on="POOL"),
    Door("POST /pools/preview/", None, CHANGE_CONFIG, acts_on="POOL", note="htmx: the live preview"),
    Door("GET /pools/{name}/edit/", VIEW_POOL, CHANGE_CONFIG, "{name}", "POOL"),
    Door("POST /pools/{name}/edit/", VIEW_POOL, CHANGE_CONFIG, "{name}", "POOL"),
    Door("POST /pools/{name}/maintenance/", VIEW_POOL, CHANGE_CONFIG, "{name}", "POOL"),
    Door("GET /nodes/", VIEW_POOL, rows=True, note="htmx: the node table fragment; CSV and JSON exports"),
    Door("GET /node-pools/", VIEW_POOL, rows=True, note="htmx: the node-pool table fragment; CSV export"),
    Door("GET /backends/", VIEW_BACKEND, rows=True),
    Door("POST /backends/{name}/sync/", VIEW_BACKEND, OPERATE_BACKEND, "{name}", "{name}"),
    Door("GET /backends/{name}/sync/status/", VIEW_BACKEND, object="{name}", note="htmx: the progress fragment"),
    Door("POST /config/templates/preview/", None, CHANGE_CONFIG, acts_on="POD_TEMPLATE", note="htmx: preview"),
    Door("GET /config/{kind}/", None, rows=True, note="templates, validations or roles the reader may see"),
    Door("GET /config/{kind}/new/", None, CHANGE_CONFIG, acts_on="{kind}"),
    Door("POST /config/{kind}/new/", None, CHANGE_CONFIG, acts_on="{kind}"),
    Door("GET /config/{kind}/{name}/edit/", None, CHANGE_CONFIG, "{name}", "{kind}"),
    Door("POST /config/{kind}/{name}/edit/", None, CHANGE_CONFIG, "{name}", "{kind}"),
    Door("GET /what-if/", VIEW_POOL, rows=True, note="htmx: the verdict fragment; offers the projects one may read"),
    Door("GET /history/", None, rows=True, note="revisions of objects the reader may see"),
    Door("GET /history/{config_type}/{revision}/", None, object="the revision's objects"),
    Door(
        "GET /history/{config_type}/{revision}/rollback/",
        None,
        CHANGE_CONFIG,
        "the revision's objects",
        "{config_type}",
    ),
    Door(
        "POST /history/{config_type}/{revision}/rollback/",
        None,
        CHANGE_CONFIG,
        "the revision's objects",
        "{config_type}",
    ),
    Door("GET /departments/", VIEW_DEPARTMENT, rows=True, note="with their quota and allocation summed over pools"),
    Door("GET /projects/", VIEW_PROJECT, rows=True, note="Run:ai's projects view; htmx: the table fragment; CSV"),
    Door("GET /quotas/", VIEW_POOL, rows=True, note="the quota grid: units the reader may see x visible pools"),
    Door(
        "POST /quotas/",
        VIEW_POOL,
        CHANGE_CONFIG,
        acts_on="DEPARTMENT|PROJECT",
        note="the grid's bulk save, all or nothing; a project's also " + _MANAGED,
    ),
    Door("GET /quotas/{pool}/", VIEW_POOL, object="{pool}", note="the pool's quota dashboard"),
    Door("GET /quotas/{pool}/usage/", VIEW_POOL, object="{pool}", note="the dashboard's chart data"),
    Door("GET /access/", VIEW_ROLE, rows=True, note="roles, users and the permission catalogue"),
    Door("POST /access/", VIEW_ROLE, CHANGE_CONFIG, acts_on="ROLE", note="generate a pool role"),
    Door("POST /access/users/new/", None, CHANGE_USER, acts_on="{username}", note="{username} from the form"),
    Door("GET /access/users/{username}/", VIEW_USER, object="{username}"),
    Door("POST /access/users/{username}/", VIEW_USER, CHANGE_USER, "{username}", "{username}"),
    Door("GET /accounts/profile/", signed_in=True, note="one's own roles, pools and tokens"),
    # Pages: gpuctl's pool workflow (SEMANTICS §8.1)
    Door("GET /label-pools/new/", None, CHANGE_CONFIG, acts_on="POOL", note="htmx: the node picker fragment"),
    Door(
        "POST /label-pools/new/",
        None,
        CHANGE_CONFIG,
        acts_on="POOL",
        note="and operate_backend on the backend, whose node labels it writes",
    ),
    Door("GET /label-pools/{name}/delete/", VIEW_POOL, CHANGE_CONFIG, "{name}", "POOL"),
    Door(
        "POST /label-pools/{name}/delete/",
        VIEW_POOL,
        CHANGE_CONFIG,
        "{name}",
        "POOL",
        note="and operate_backend on the pool's backend; refused with running workloads unless forced",
    ),
    Door("GET /nodes/{name}/labels/", VIEW_POOL, object="{name}", note="a node of a visible pool"),
    Door("POST /nodes/{name}/labels/", VIEW_POOL, OPERATE_BACKEND, "{name}", "{backend}", note="writes the cluster"),
    # poolctl: the operator on the server may do everything; with --as USER, exactly what USER may
    Door("poolctl config show|history|diff", None, rows=True, note="objects the user may see"),
    Door("poolctl config update|import|delete|rollback|tag|restore-builtins", None, CHANGE_CONFIG, acts_on="each type"),
    Door("poolctl pool list", VIEW_POOL, rows=True),
    Door("poolctl pool render|check POOL", VIEW_POOL, object="POOL", note="`check --project P`: `project:Read` on it"),
    Door("poolctl resource list", VIEW_POOL, rows=True),
    Door("poolctl backend sync NAME|--all", VIEW_BACKEND, OPERATE_BACKEND, "NAME", "NAME"),
    Door(
        "poolctl node label|unlabel NODE",
        VIEW_POOL,
        OPERATE_BACKEND,
        acts_on="{backend}",
        note="a node of a visible pool",
    ),
    Door(
        "poolctl create -f FILE",
        VIEW_POOL,
        CHANGE_CONFIG,
        "NAME",
        "POOL",
        note="gpuctl pool file; and operate_backend on the backend, whose node labels it writes",
    ),
    Door(
        "poolctl delete pool NAME|-f FILE",
        VIEW_POOL,
        CHANGE_CONFIG,
        "NAME",
        "POOL",
        note="and operate_backend on the pool's backend; refused with running workloads unless --force",
    ),
    Door("poolctl get pools|nodes", VIEW_POOL, rows=True),
    Door("poolctl get labels NODE|describe node NODE", VIEW_POOL, object="NODE", note="a node of a visible pool"),
    Door("poolctl describe pool NAME", VIEW_POOL, object="NAME"),
    Door(
        "poolctl label node NODE KEY=VALUE|KEY --delete",
        VIEW_POOL,
        OPERATE_BACKEND,
        acts_on="{backend}",
        note="a node of a visible pool",
    ),
    Door("poolctl department|project list", VIEW_DEPARTMENT, rows=True, note="and project:Read for projects"),
    Door(
        "poolctl department|project create", VIEW_DEPARTMENT, CHANGE_CONFIG, acts_on="DEPARTMENT|PROJECT", note=_MANAGED
    ),
    Door("poolctl quota list [--pool P]", VIEW_POOL, rows=True, note="departments and projects the reader may see"),
    Door("poolctl quota set UNIT --pool P", VIEW_POOL, CHANGE_CONFIG, acts_on="DEPARTMENT|PROJECT", note=_MANAGED),
    Door("poolctl quota simulate --file F", signed_in=True, note="the fair-share simulator; reads and writes no data"),
    Door("poolctl get idle", VIEW_POOL, rows=True, note="workloads holding idle GPUs in visible pools"),
    Door("poolctl get consumption", VIEW_POOL, rows=True, note="GPU-hours allocated and idle in visible pools"),
    Door("poolctl role set osmo-PREFIX pool", VIEW_ROLE, CHANGE_CONFIG, acts_on="ROLE"),
    Door("poolctl user create|set-roles|list", VIEW_USER, CHANGE_USER, acts_on="NAME"),
    Door("poolctl token create --user NAME", VIEW_USER, CHANGE_USER, acts_on="NAME"),
)
