"""The catalogue of doors: every operation a person or a script can ask of the console, and what it needs.

A *door* here is an operation (``pool.get``: see one pool), not a URL: a page, its htmx fragment, its export, a
REST endpoint and a ``poolctl`` verb that do the same thing name the same door, so they can never need different
permissions. Where each door is reached from is declared by the page, endpoint or verb itself (``pools.views``,
``pools.api``, ``poolctl``); ``pools.doors`` lists those ways in, with what each needs, from the declarations.

The gate (``pools.gate.door_check``) decides a door before the code behind it runs:

- ``reads`` on the object the door names (its ``object`` parameter) decides whether that object exists for the
  caller: a 404 otherwise, in the words used for an object that does not exist. A door over ``rows`` shows the
  rows the caller may see (the selectors restrict them);
- ``acts`` on ``acts_on`` (a config type such as ``POOL``, ``{param}`` for a parameter, ``A|B`` for either) is
  what a change needs besides: a 403 otherwise.

The services decide every write again, with what only the change itself tells (the body's names, a node's
backend, no escalation); ``note`` says what they check beyond the door.
"""

from __future__ import annotations

from dataclasses import dataclass

from .permissions import (
    CHANGE_CONFIG,
    CHANGE_USER,
    LIST_FLEET,
    OBJECT_READ,
    OPERATE_BACKEND,
    READ_METRICS,
    VIEW_BACKEND,
    VIEW_CONFIG,
    VIEW_DEPARTMENT,
    VIEW_POOL,
    VIEW_PROJECT,
    VIEW_ROLE,
    VIEW_USER,
    Permission,
)

# What a door's ``object`` parameter names, when it is not the object of ``reads`` itself.
NODE = "node"  # a node of a pool the caller may see (``Node.objects.restrict``)
REVISION = "revision"  # a config revision the caller may see (``{config_type}`` and ``{revision}``)
JOB = "job"  # a job of a backend the caller may see
CONFIG_OBJECT = "config"  # an object of the config type ``{config_type}`` names
WORKLOAD = "workload"  # a workload the caller may see (``{backend}``, ``{namespace}`` and ``{name}``)


@dataclass(frozen=True)
class Door:
    """One operation and what it needs; see the module's docstring."""

    key: str
    summary: str
    reads: Permission | None = None
    acts: Permission | None = None
    object: str = ""
    kind: str = ""
    acts_on: str = ""
    rows: bool = False
    signed_in: bool = False
    public: bool = False
    note: str = ""
    of_type: str = ""  # the config type of a config object's door (what a by-type read is on)

    @property
    def checks_object(self) -> bool:
        """Whether the gate decides an object's existence for the caller before the door runs."""
        return bool(self.object) and (self.reads is not None or self.kind in (REVISION, JOB, CONFIG_OBJECT, WORKLOAD))


_MANAGED = "and department:Update on the project's department, before and after the change"
_LABELS = "and backend:Update on the backend, whose node labels it writes in the cluster"


def _config_doors(config_type: str, label: str, plural: str, note: str = "") -> tuple[Door, ...]:
    """The doors of one config type: list, get, create, change (replace, merge-patch, delete)."""
    reads = OBJECT_READ[config_type]
    by_type = reads is VIEW_CONFIG  # pod templates and validations are seen type by type
    seen = {"object": config_type if by_type else "name", "of_type": config_type}
    prefix = config_type.lower()
    return (
        Door(f"{prefix}.list", f"list the {plural} one may see", reads, rows=True, of_type=config_type),
        Door(f"{prefix}.get", f"read one {label}", reads, **seen),
        Door(
            f"{prefix}.create",
            f"create a {label}",
            reads,
            CHANGE_CONFIG,
            acts_on=config_type,
            note="; ".join(filter(None, ["{name} from the body" if not by_type else "", note])),
            **seen,
        ),
        Door(
            f"{prefix}.change",
            f"replace, change or delete a {label}",
            reads,
            CHANGE_CONFIG,
            acts_on=config_type,
            note=note,
            **seen,
        ),
    )


DOORS: tuple[Door, ...] = (
    # --- config objects ---------------------------------------------------------------------------------------
    *_config_doors("BACKEND", "backend", "backends"),
    *_config_doors("POOL", "pool", "pools"),
    *_config_doors("POD_TEMPLATE", "pod template", "pod templates"),
    *_config_doors("RESOURCE_VALIDATION", "resource validation", "resource validations"),
    *_config_doors("ROLE", "role", "roles", note="no escalation: the role may allow nothing its writer may not do"),
    *_config_doors("DEPARTMENT", "department", "departments"),
    *_config_doors("PROJECT", "project", "projects", note=_MANAGED),
    Door("pool.preview", "render a pool being edited, unsaved", None, CHANGE_CONFIG, acts_on="POOL"),
    Door(
        "pod_template.preview",
        "render a pod template being edited, unsaved",
        None,
        CHANGE_CONFIG,
        acts_on="POD_TEMPLATE",
    ),
    Door("pool.maintenance", "switch a pool's maintenance mode", VIEW_POOL, CHANGE_CONFIG, "name", acts_on="POOL"),
    Door("pool.render", "the merged pod template of a pool's platform", VIEW_POOL, object="name"),
    Door(
        "pool.check",
        "check a request against a pool's rules, nodes and a project's quota",
        VIEW_POOL,
        object="name",
        note="with a project: project:Read on it",
    ),
    Door("pool.whatif", "the what-if page: render and check a request in any visible pool", VIEW_POOL, rows=True),
    Door(
        "pool.usage",
        "a pool's GPU usage over time",
        VIEW_POOL,
        object="name",
        note="GPU products' series to readers of the whole fleet",
    ),
    Door("pool.utilization", "a pool's GPU utilization over time", VIEW_POOL, object="name"),
    Door("pool.capacity", "the gangs of GPUs a pool can start, by topology level", VIEW_POOL, object="name"),
    Door("platform.list", "a pool's platforms", VIEW_POOL, object="pool_name"),
    Door(
        "platform.change",
        "add, replace, change or remove a pool's platform",
        VIEW_POOL,
        CHANGE_CONFIG,
        "pool_name",
        acts_on="POOL",
    ),
    Door("platform.all", "the platforms of every visible pool", VIEW_POOL, rows=True),
    Door(
        "role.generate",
        "generate an osmo-<prefix> pool role",
        VIEW_ROLE,
        CHANGE_CONFIG,
        acts_on="ROLE",
        note="no escalation",
    ),
    # --- config history --------------------------------------------------------------------------------------
    Door("config.history", "revisions of the objects one may see", rows=True),
    Door("config.show", "a config type's objects one may see, now or at a revision", rows=True),
    Door(
        "config.update",
        "create, replace or delete objects of a config type from a document",
        None,
        CHANGE_CONFIG,
        object="name",
        kind=CONFIG_OBJECT,
        acts_on="{config_type}",
        note="every object must be one the writer may see",
    ),
    Door(
        "config.import",
        "import a bundle of several types",
        None,
        CHANGE_CONFIG,
        note="config:Update on every type in the bundle; every object visible",
    ),
    Door("config.diff", "the diff of two revisions, of the objects one may see", rows=True),
    Door("config.revision", "one revision, cut to what one may see", object="revision", kind=REVISION),
    Door("config.tag", "tag a revision", None, CHANGE_CONFIG, "revision", REVISION, acts_on="{config_type}"),
    Door(
        "config.rollback",
        "restore a config type to a revision",
        None,
        CHANGE_CONFIG,
        "revision",
        REVISION,
        acts_on="{config_type}",
        note="every object the rollback changes must be visible",
    ),
    # --- inventory -------------------------------------------------------------------------------------------
    Door("pool.list", "pools with their status and GPU figures", VIEW_POOL, rows=True),
    Door(
        "resource.list",
        "the node table: a row per node, pool and platform",
        VIEW_POOL,
        rows=True,
        note=f"with {LIST_FLEET.action} also nodes of no pool",
    ),
    Door(
        "node.list",
        "nodes as last synced",
        VIEW_POOL,
        rows=True,
        note=f"nodes of visible pools; with {LIST_FLEET.action} also unused ones",
    ),
    Door(
        "node.get",
        "one node, its labels, GPUs and pods",
        VIEW_POOL,
        object="name",
        kind=NODE,
        note="a node of a visible pool",
    ),
    Door(
        "node.label",
        "set or remove a node's label in its cluster",
        VIEW_POOL,
        OPERATE_BACKEND,
        "name",
        NODE,
        note="backend:Update on the node's backend; never a node of a hidden pool",
    ),
    Door(
        "pod.list",
        "pods as last synced",
        VIEW_POOL,
        rows=True,
        note="pods labelled with a visible pool of their own backend",
    ),
    Door("membership.list", "which nodes each pool and platform selects", VIEW_POOL, rows=True),
    Door(
        "usage.list",
        "GPU usage samples",
        VIEW_POOL,
        rows=True,
        note="GPU products' series only to readers of the whole fleet",
    ),
    Door("node_pool.list", "Run:ai's node-pools view", VIEW_POOL, rows=True),
    Door("backend.sync", "sync a backend now", VIEW_BACKEND, OPERATE_BACKEND, "name", acts_on="{name}"),
    Door("backend.sync_status", "how a requested sync goes", VIEW_BACKEND, object="name"),
    Door("job.get", "a job: a sync started over the API", object="job_id", kind=JOB, note="a job of a visible backend"),
    # --- gpuctl's pool workflow (SEMANTICS §8.1) ----------------------------------------------------------------
    Door(
        "label_pool.create",
        "create or update a label pool from a gpuctl pool file",
        VIEW_POOL,
        CHANGE_CONFIG,
        acts_on="POOL",
        note=_LABELS,
    ),
    Door(
        "label_pool.delete",
        "delete a label pool and remove its label from its nodes",
        VIEW_POOL,
        CHANGE_CONFIG,
        "name",
        acts_on="POOL",
        note=_LABELS + "; refused with running workloads unless forced",
    ),
    Door("gpuctl.pools", "gpuctl's pool listing", VIEW_POOL, rows=True),
    Door("gpuctl.pool", "gpuctl's description of one pool", VIEW_POOL, object="name"),
    # --- quotas per node pool (SEMANTICS §9) -----------------------------------------------------------------
    Door("quota.list", "departments' and projects' quotas and figures per visible pool", VIEW_POOL, rows=True),
    Door(
        "quota.change",
        "change many quotas at once, all or nothing",
        VIEW_POOL,
        CHANGE_CONFIG,
        acts_on="DEPARTMENT|PROJECT",
        note="a project's also " + _MANAGED,
    ),
    Door("quota.dashboard", "a pool's quota dashboard", VIEW_POOL, object="pool"),
    Door("quota.simulate", "KAI's fair-share simulator; reads and writes no data", signed_in=True),
    Door("quota.reclaim", "KAI's reclaim check, what-if; reads and writes no data", signed_in=True),
    Door("unit.departments", "departments with their quotas summed over pools", VIEW_DEPARTMENT, rows=True),
    Door("unit.projects", "projects with their quotas summed over pools", VIEW_PROJECT, rows=True),
    Door(
        "unit.create",
        "create a department or a project",
        VIEW_DEPARTMENT,
        CHANGE_CONFIG,
        acts_on="DEPARTMENT|PROJECT",
        note=_MANAGED,
    ),
    Door(
        "my.projects",
        "one's own departments and projects: quota, fair share, allocated, pending and why each workload waits",
        signed_in=True,
        note="only the units one is a member of (SEMANTICS §9.4)",
    ),
    # --- workloads (SEMANTICS §10) -----------------------------------------------------------------------------
    Door(
        "workload.list",
        "workloads: the pods of a pod group, a controller or alone, with why each pending one waits",
        signed_in=True,
        note="rows of the pools the caller may see and of the projects they are a member of",
    ),
    Door(
        "workload.get",
        "one workload: its pods, nodes, verdict, victims and phases",
        object="name",
        kind=WORKLOAD,
        note="404 unless a workload of a pool the caller may see or of a project they are a member of",
    ),
    # --- GPU utilization ----------------------------------------------------------------------------------------
    Door("idle.list", "workloads holding idle GPUs", VIEW_POOL, rows=True),
    Door(
        "consumption.report",
        "GPU-hours allocated and idle",
        VIEW_POOL,
        rows=True,
        note="by project: of the projects one may read",
    ),
    Door(
        "node.gpus",
        "a node's GPUs now and over time",
        VIEW_POOL,
        object="name",
        kind=NODE,
        note="a node of a visible pool",
    ),
    # --- people ----------------------------------------------------------------------------------------------
    Door("access.overview", "roles, users and the permission catalogue", VIEW_ROLE, rows=True),
    Door("user.list", "users and service accounts", VIEW_USER, rows=True),
    Door(
        "user.create",
        "create a user or a service account",
        None,
        CHANGE_USER,
        acts_on="{username}",
        note="every role given must be held entirely",
    ),
    Door("user.get", "one user and the roles they hold", VIEW_USER, object="username"),
    Door(
        "user.roles",
        "set the roles a user holds",
        VIEW_USER,
        CHANGE_USER,
        "username",
        acts_on="{username}",
        note="never one's own; everything the user may do, and every role given, must be held",
    ),
    Door(
        "user.token",
        "make a token that acts as a user",
        VIEW_USER,
        CHANGE_USER,
        "username",
        acts_on="{username}",
        note="everything the user may do must be held (a superuser's: being one)",
    ),
    Door("access.check", "which role and policy decide a request", None, signed_in=True, note="the operator's poolctl"),
    Door(
        "access.sync",
        "recompute every user's pool permissions from the role policies",
        None,
        CHANGE_CONFIG,
        acts_on="ROLE",
    ),
    Door("profile.me", "one's own roles, pools and tokens", signed_in=True),
    # --- the API's description and the scraper ----------------------------------------------------------------
    Door("api.schema", "the OpenAPI description and its readers; no data", public=True),
    Door("metrics.scrape", "Prometheus metrics of every pool and backend", None, READ_METRICS),
)

BY_KEY: dict[str, Door] = {door.key: door for door in DOORS}


def door(key: str) -> Door:
    """The door named ``key``; a name that is not in the catalogue is a programming error (KeyError)."""
    return BY_KEY[key]
