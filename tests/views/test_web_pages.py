"""Every page, htmx fragment and form post of the console, tested from the bases of ``viewtests.py``.

Each class names its door of the permission catalogue, the object it opens for someone holding ``grant``
and the most queries it may make: a little over what it made on the demo with the team-a pools when the
ceiling was set (the comment says how many, the higher of an administrator's and the holder's counts). A page
of the catalogue without a class here fails ``test_every_page_of_the_catalogue_has_generated_tests``.
"""

from __future__ import annotations

import json
import re

from console_data import pool_form_data
from people import person, role
from viewtests import PAGE_DOORS, READ_TEAM_A, PageTestCases

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.models import Backend, ConfigRevision

# Someone who edits the team-a pools: they see them, their backend, the templates and validations they use.
POOL_EDITOR = (
    {"actions": ["pool:Read"], "resources": ["pool/team-a*"]},
    {"actions": ["config:Update"], "resources": ["config/POOL"]},
    {"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE", "config/RESOURCE_VALIDATION"]},
    {"actions": ["backend:Read"], "resources": ["backend/dev-cluster-01"]},
)
TEMPLATE_EDITOR = ({"actions": ["config:Read", "config:Update"], "resources": ["config/POD_TEMPLATE"]},)
POOL_CHANGES_ONLY = ({"actions": ["config:Update"], "resources": ["config/POOL"]}, READ_TEAM_A)


def test_every_page_of_the_catalogue_has_generated_tests():
    """Every page has its tests; a page over several kinds of document (``/config/<kind>/``) is one page."""

    def page(door: str) -> str:
        return re.sub(r"/config/(templates|validations|roles)/", "/config/{kind}/", door)

    assert sorted({page(door) for door in PAGE_DOORS} - {page(door) for door in PageTestCases.registry}) == []


# --- pools ------------------------------------------------------------------------------------------------


class TestOverview(PageTestCases.Page):
    door = "GET /"
    shows = ('data-pool="team-a"',)
    # 8 today, the session's two included: the pools, the roles, the node groups, the pods' sums, the idle GPUs (two)
    max_queries = 8


class TestOverviewTable(PageTestCases.Page):
    door = "GET /"
    htmx = True
    shows = ('id="pool-table"', 'data-pool="team-a"')
    max_queries = 8  # 6 today


class TestPool(PageTestCases.Page):
    door = "GET /pools/{name}/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    shows = ("team-a pool",)
    max_queries = 38  # 37 today: pool_get, pool_list, the node summary and resource_list each read the pool;
    # the capacity by topology reads its available nodes once; the "waiting" line (pool_waiting_summary) reads the
    # quota figures (6) and the pool's nodes, candidates, pending pods and projects (4)


class TestPoolUsage(PageTestCases.Page):
    door = "GET /pools/{name}/usage/"
    query = "?range=1h"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    shows = ('"label": "Used"',)
    max_queries = 15  # 12 today


class TestPoolNew(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /pools/new/"
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    elsewhere = TEMPLATE_EDITOR
    shows = ('<option value="dev-cluster-01"',)
    max_queries = 10  # 7 today


class TestPoolCreate(PageTestCases.ForAConfigType):
    door = "POST /pools/new/"
    params = {"name": "team-a-new"}
    hidden = {"name": "robotics-new"}  # a name one may not see does not exist for one, created or not
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu", "team-a-new")
    elsewhere = TEMPLATE_EDITOR
    granted = 302

    def body(self, params):
        return pool_form_data("team-a", name=params["name"])


class TestPoolPreview(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "POST /pools/preview/"
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    elsewhere = TEMPLATE_EDITOR
    shows = ("<h3>small-gpu</h3>",)
    max_queries = 14  # 11 today

    def body(self, params):
        return {**pool_form_data("team-a"), "pool_name": "team-a"}


class TestPoolEditor(PageTestCases.Page):
    door = "GET /pools/{name}/edit/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    shows = ('value="team-a pool"',)
    max_queries = 13  # 10 today


class TestPoolEdit(PageTestCases.Door):
    door = "POST /pools/{name}/edit/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    granted = 302

    def body(self, params):
        return pool_form_data(params["name"], description="edited")


class TestPoolMaintenance(PageTestCases.Door):
    door = "POST /pools/{name}/maintenance/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    grant = POOL_CHANGES_ONLY
    granted = 302

    def body(self, params):
        return {"enable": "1"}


# --- nodes and backends -------------------------------------------------------------------------------------


class TestNodes(PageTestCases.Page):
    door = "GET /nodes/"
    shows = ('<a href="/pools/team-a/">team-a</a>',)
    max_queries = 17  # 14 today


class TestNodeTable(PageTestCases.Page):
    door = "GET /nodes/"
    query = "?status=available"
    htmx = True
    shows = ('<div id="node-table"', '<a href="/pools/team-a/">team-a</a>')
    max_queries = 17  # 14 today


class TestNodePools(PageTestCases.Page):
    door = "GET /node-pools/"
    shows = ('data-node-pool="team-a"', '<a href="/pools/team-a/">')
    max_queries = 11  # 8 today


class TestNodePoolTable(PageTestCases.Page):
    door = "GET /node-pools/"
    query = "?sort=-allocated_gpus&columns=status,allocated_gpus"
    htmx = True
    shows = ('<div id="node-pool-table"', 'data-node-pool="team-a"', 'aria-sort="descending"')
    max_queries = 11  # 8 today


class TestNodePoolCsv(PageTestCases.Page):
    door = "GET /node-pools/"
    query = "?format=csv&columns=node_pool,label_key,allocated_gpus"
    shows = ("Node pool,Label key,Allocated GPUs", "team-a,")
    max_queries = 11  # 8 today


class BackendDoor(PageTestCases.Door):
    """dev-cluster-01, whose holder may see it, and gpu-cluster-01, which they may not."""

    params = {"name": "dev-cluster-01"}
    hidden = {"name": "gpu-cluster-01"}
    grant = ({"actions": ["backend:Read"], "resources": ["backend/dev-cluster-01"]},)
    visible = ()

    def hidden_names(self):
        return {
            *super().hidden_names(),
            *Backend.objects.exclude(name__in=("dev-cluster-01", "default")).values_list("name", flat=True),
        }


class TestBackends(BackendDoor, PageTestCases.Page):
    door = "GET /backends/"
    params = {}
    hidden = None
    shows = ('id="backend-dev-cluster-01"',)
    max_queries = 9  # 6 today


class TestBackendSync(BackendDoor):
    door = "POST /backends/{name}/sync/"
    grant = ({"actions": ["backend:Read", "backend:Update"], "resources": ["backend/dev-cluster-01"]},)
    shows = ('hx-trigger="load delay:0.5s, every 2s"',)


class TestBackendSyncProgress(BackendDoor, PageTestCases.Page):
    door = "GET /backends/{name}/sync/status/"
    query = "?since=0"
    granted = 286
    shows = ("synced",)
    max_queries = 9  # 6 today


# --- config documents ---------------------------------------------------------------------------------------


class TestTemplates(PageTestCases.Page):
    door = "GET /config/templates/"
    params = {"kind": "templates"}
    grant = (READ_TEAM_A, *TEMPLATE_EDITOR)
    shows = ('id="templates-training_optimized"', ">team-a</a>")
    max_queries = 10  # 7 today


class TestValidations(PageTestCases.Page):
    door = "GET /config/validations/"
    params = {"kind": "validations"}
    grant = (READ_TEAM_A, {"actions": ["config:Read"], "resources": ["config/RESOURCE_VALIDATION"]})
    shows = ('id="validations-default_cpu"', ">team-a</a>")
    max_queries = 10  # 7 today


class RoleDoor(PageTestCases.Door):
    """A role of the team-a readers, which its holder may edit without giving anyone more than they hold."""

    params = {"kind": "roles", "name": "team-a-readers"}
    hidden = {"kind": "roles", "name": "osmo-team-a"}
    grant = (
        READ_TEAM_A,
        {"actions": ["role:Read"], "resources": ["role/team-a-readers"]},
        {"actions": ["config:Update"], "resources": ["config/ROLE"]},
    )
    elsewhere = (
        {"actions": ["role:Read"], "resources": ["role/team-a-readers"]},
        {"actions": ["config:Update"], "resources": ["config/POOL"]},
    )

    def arrange(self):
        role("team-a-readers", READ_TEAM_A, description="Readers of team-a")

    def hidden_names(self):
        return {*super().hidden_names(), "osmo-team-a", "osmo-admin", "osmo-user"}


class TestRoles(RoleDoor, PageTestCases.Page):
    door = "GET /config/roles/"
    params = {"kind": "roles"}
    hidden = None
    shows = ('id="roles-team-a-readers"',)
    max_queries = 10  # 7 today


class TestTemplateNew(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /config/templates/new/"
    params = {"kind": "templates"}
    grant = TEMPLATE_EDITOR
    elsewhere = POOL_CHANGES_ONLY
    shows = ('name="body"',)
    max_queries = 8  # 5 today


class TestTemplateCreate(PageTestCases.ForAConfigType):
    door = "POST /config/templates/new/"
    params = {"kind": "templates"}
    grant = TEMPLATE_EDITOR
    elsewhere = POOL_CHANGES_ONLY
    granted = 302

    def body(self, params):
        return {"name": "tpl-new", "body": "spec:\n  nodeSelector: {team: a}\n"}


class TestRoleEditor(RoleDoor, PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /config/roles/{name}/edit/"
    shows = ("Readers of team-a",)
    max_queries = 10  # 7 today


class TestRoleEdit(RoleDoor, PageTestCases.ForAConfigType):
    door = "POST /config/roles/{name}/edit/"
    granted = 302

    def body(self, params):
        document = selectors.config_show(config_type=ConfigType.ROLE, name=params["name"], user=SYSTEM)
        return {"name": params["name"], "body": json.dumps(document[params["name"]])}


class TestTemplatePreview(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "POST /config/templates/preview/"
    params = {"pool": "team-a"}
    hidden = {"pool": "robotics-training"}
    grant = (READ_TEAM_A, *TEMPLATE_EDITOR)
    elsewhere = POOL_CHANGES_ONLY
    shows = ("preview-label", "<h3>small-gpu</h3>")
    max_queries = 11  # 8 today

    def body(self, params):
        body = "spec:\n  nodeSelector:\n    preview-label: 'yes'\n"
        return {"body": body, "template_name": "development_template", "preview_pool": params["pool"]}


# --- what-if and history ------------------------------------------------------------------------------------


class TestWhatIf(PageTestCases.Page):
    door = "GET /what-if/"
    shows = ('<option value="team-a">',)
    max_queries = 14  # 11 today


class TestWhatIfVerdict(PageTestCases.Page):
    door = "GET /what-if/"
    query = "?pool=team-a&cpu=1&gpu=0"
    htmx = True
    shows = ('data-testid="verdict"',)
    max_queries = 30  # 27 today: the render and the check each read the pool and its templates; the verdict the
    # request would get if it waited (request_verdict) reads the pool's quota figures, nodes, candidates and projects


class RevisionDoor(PageTestCases.Door):
    """The revision that created the team-a pools, and the demo's first one (of pools team-a cannot see)."""

    grant = (READ_TEAM_A, *POOL_EDITOR[1:])  # team-a only, and what its body refers to

    def arrange(self):
        created = next(r for r in ConfigRevision.objects.filter(config_type="POOL") if "team-a" in r.changed)
        self.params = {"config_type": "POOL", "revision": created.revision}
        self.hidden = {"config_type": "POOL", "revision": 1}


class TestHistory(PageTestCases.Page):
    door = "GET /history/"
    shows = ("team-a",)
    max_queries = 10  # 7 today


class TestRevision(RevisionDoor, PageTestCases.Page):
    door = "GET /history/{config_type}/{revision}/"
    shows = ("team-a pool",)
    max_queries = 10  # 7 today


class TestRollbackConfirmation(RevisionDoor, PageTestCases.Page):
    door = "GET /history/{config_type}/{revision}/rollback/"
    max_queries = 13  # 10 today


class TestRollback(RevisionDoor):
    door = "POST /history/{config_type}/{revision}/rollback/"
    granted = 302

    def arrange(self):
        super().arrange()
        services.pool_maintenance_set(name="team-a", enable=True, actor=services.SYSTEM)  # what is rolled back

    def body(self, params):
        return {"confirm": "on", "description": "undo"}


# --- access -------------------------------------------------------------------------------------------------


class TestAccess(RoleDoor, PageTestCases.Page):
    door = "GET /access/"
    params = {}
    hidden = None
    shows = ('id="role-team-a-readers"',)
    max_queries = 18  # 15 today


class TestRoleGenerate(PageTestCases.ForAConfigType):
    door = "POST /access/"
    params = {"prefix": "team-a"}
    hidden = {"prefix": "robotics"}
    grant = (
        {"actions": ["role:Read"], "resources": ["role/osmo-team-a"]},
        {"actions": ["config:Update"], "resources": ["config/ROLE"]},
        {"actions": ["workflow:*", "pool:Read"], "resources": ["pool/team-a*"]},
    )
    visible = ("team-a", "team-a-gpu")
    elsewhere = ({"actions": ["role:Read"], "resources": ["role/osmo-team-a"]}, *POOL_CHANGES_ONLY)
    granted = 302

    def body(self, params):
        return {"prefix": params["prefix"]}


class UserDoor(PageTestCases.Door):
    """alice, whom the holder may see (and change), and bob, whom they may not."""

    params = {"username": "alice"}
    hidden = {"username": "bob"}
    grant = ({"actions": ["user:Read", "user:Update"], "resources": ["user/alice"]},)
    visible = ()

    def arrange(self):
        person("alice", password=None)
        person("bob", password=None)

    def hidden_names(self):
        return {*super().hidden_names(), "bob"}


class TestUserCreate(UserDoor):
    door = "POST /access/users/new/"
    params = {"username": "carol"}
    hidden = {"username": "dave"}
    refused = 403  # who may create whom is the change's permission: no object to see beforehand
    grant = ({"actions": ["user:Read", "user:Update"], "resources": ["user/carol"]},)
    granted = 302

    def body(self, params):
        return {"username": params["username"]}


class TestUser(UserDoor, PageTestCases.Page):
    door = "GET /access/users/{username}/"
    shows = ("<h1>alice",)
    max_queries = 13  # 10 today


class TestUserRoles(UserDoor):
    door = "POST /access/users/{username}/"
    granted = 302

    def body(self, params):
        return {"roles": []}


class TestProfile(PageTestCases.Page):
    door = "GET /accounts/profile/"
    shows = ('data-pool="team-a"',)
    max_queries = 14  # 11 today


# --- gpuctl's pool workflow (SEMANTICS §8.1) ------------------------------------------------------------------
# The demo's only writable backend (gpuctl-cluster) is hidden from these callers, and team-a's nodes are on backends
# that are not writable: a change the gate lets through is refused by the service (400), with nothing written;
# tests/integration/test_gpuctl.py makes the same changes against a real API server.


def node_of(pool: str) -> str:
    return next(row.node for row in selectors.resource_index(user=SYSTEM, filters={"pool": pool}))


class NodeLabelsDoor(PageTestCases.Door):
    """A node of team-a, whose holder may see it, and one of robotics-training only, which they may not."""

    def arrange(self):
        self.params = {"name": node_of("team-a")}
        mine = {row.node for row in selectors.resource_index(user=SYSTEM, filters={"pool": "team-a"})}
        others = [row.node for row in selectors.resource_index(user=SYSTEM, filters={"pool": "robotics-training"})]
        self.hidden = {"name": next(node for node in others if node not in mine)}


class TestLabelPoolNew(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /label-pools/new/"
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    elsewhere = TEMPLATE_EDITOR
    shows = ('name="nodes"', '<a href="/pools/team-a/">team-a</a>')
    max_queries = 18  # 15 today


class TestLabelPoolNodePicker(PageTestCases.Page):
    door = "GET /label-pools/new/"
    query = "?pool=team-a"
    htmx = True
    grant = POOL_CHANGES_ONLY
    shows = ('<div id="label-pool-nodes">', 'name="nodes"')
    max_queries = 18  # 15 today


class TestLabelPoolCreate(PageTestCases.ForAConfigType):
    door = "POST /label-pools/new/"
    grant = POOL_EDITOR
    visible = ("team-a", "team-a-gpu")
    elsewhere = TEMPLATE_EDITOR
    granted = 400
    shows = ("there is no writable backend",)

    def body(self, params):
        return {"name": "team-a-label", "nodes": [node_of("team-a")]}


class TestLabelPoolDeletePage(PageTestCases.Page):
    door = "GET /label-pools/{name}/delete/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    grant = POOL_CHANGES_ONLY
    shows = ('id="pool-jobs"', "Delete pool team-a")
    max_queries = 20  # 17 today


class TestLabelPoolDelete(PageTestCases.Door):
    door = "POST /label-pools/{name}/delete/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    grant = POOL_CHANGES_ONLY
    granted = 302  # nothing runs on team-a in the demo; a pool without a node label is only deleted from the config


class TestNodeLabels(NodeLabelsDoor, PageTestCases.Page):
    door = "GET /nodes/{name}/labels/"
    shows = ('id="node-labels"',)
    max_queries = 10  # 7 today


class TestNodeLabelChange(NodeLabelsDoor):
    door = "POST /nodes/{name}/labels/"
    grant = (READ_TEAM_A, {"actions": ["backend:Read", "backend:Update"], "resources": ["backend/*"]})
    granted = 400
    shows = ("is not writable",)

    def body(self, params):
        return {"key": "team", "value": "vision"}


# --- departments, projects and quotas (SEMANTICS §9) ----------------------------------------------------------

# Run:ai's department admin of the demo's research department, on the team-a pool only.
RESEARCH_ADMIN = (
    READ_TEAM_A,
    {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
    {"actions": ["department:Read", "department:Update"], "resources": ["department/research"]},
    {"actions": ["project:Read"], "resources": ["project/*"]},
)


class TestProjects(PageTestCases.Page):
    door = "GET /projects/"
    grant = (READ_TEAM_A, {"actions": ["project:Read"], "resources": ["project/team-a"]})
    shows = ('data-project="team-a"', "<td>research</td>")
    max_queries = 24  # 19 today


class TestProjectsCsv(PageTestCases.Page):
    door = "GET /projects/"
    query = "?format=csv&department=research"
    grant = TestProjects.grant
    shows = ("name,department,status,node_pools", "team-a,research,")
    max_queries = 22  # 17 today


class TestDepartments(PageTestCases.Page):
    door = "GET /departments/"
    grant = (READ_TEAM_A, {"actions": ["department:Read"], "resources": ["department/research"]})
    shows = ('data-department="research"',)
    max_queries = 22  # 17 today


class TestQuotaGrid(PageTestCases.Page):
    door = "GET /quotas/"
    grant = RESEARCH_ADMIN
    shows = ('data-unit="project/team-a"', 'name="q-', "save-quotas")
    max_queries = 22  # 17 today


class TestQuotaGridSave(PageTestCases.ForAConfigType):
    door = "POST /quotas/"
    grant = RESEARCH_ADMIN
    granted = 302
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"pool-0": "team-a", "unit-0": "project/team-a", "q-0-0-deserved": "2"}


class TestQuotaGridPreview(PageTestCases.ForAConfigType):
    door = "POST /quotas/"
    htmx = True
    grant = RESEARCH_ADMIN
    shows = ("After this change", "the projects of department &#x27;research&#x27; deserve 2 GPUs, more than its 0")
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"pool-0": "team-a", "unit-0": "project/team-a", "q-0-0-deserved": "2", "preview": "1"}


class TestQuotaDashboard(PageTestCases.Page):
    door = "GET /quotas/{pool}/"
    params = {"pool": "team-a"}
    hidden = {"pool": "robotics-training"}
    grant = (READ_TEAM_A, {"actions": ["project:Read"], "resources": ["project/*"]})
    shows = ("Quotas of team-a", 'data-unit="project/team-a"')
    max_queries = 24  # 19 today


class TestMyProjects(PageTestCases.Page):
    """A researcher of project team-a (a member, SEMANTICS §9.4) sees it, and nothing of another unit."""

    door = "GET /my/projects/"
    shows = ('data-unit="project/team-a"', "researcher")
    # 29 today: the session, the memberships (3), quota_report's, the waiting workloads', the verdicts'
    max_queries = 36

    def arrange(self):
        researcher = [{"kind": "user", "name": "holder", "role": "researcher"}]
        services.unit_members_set(kind="project", name="team-a", members=researcher, actor=services.Actor.system("t"))


class TestQuotaDashboardUsage(PageTestCases.Page):
    door = "GET /quotas/{pool}/usage/"
    query = "?range=1h"
    params = {"pool": "team-a"}
    hidden = {"pool": "robotics-training"}
    shows = ('"label": "Allocated"',)
    max_queries = 10  # 7 today


# The forms of departments and projects: a department's needs config:Update on departments; a project's, also
# department:Update on its department (the research department's admin, who reads the team-a projects only).
DEPARTMENT_EDITOR = (
    READ_TEAM_A,
    {"actions": ["config:Update"], "resources": ["config/DEPARTMENT"]},
    {"actions": ["department:Read"], "resources": ["department/research*"]},
)
PROJECT_MANAGER = (
    READ_TEAM_A,
    {"actions": ["config:Update"], "resources": ["config/PROJECT"]},
    {"actions": ["department:Read", "department:Update"], "resources": ["department/research"]},
    {"actions": ["project:Read"], "resources": ["project/team-a*"]},
)


class TestDepartmentNew(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /departments/new/"
    grant = DEPARTMENT_EDITOR
    elsewhere = POOL_CHANGES_ONLY
    shows = ("New department", 'name="deserved__team-a"', 'name="over_quota__team-a"')
    max_queries = 8  # 5 today


class TestDepartmentCreate(PageTestCases.ForAConfigType):
    door = "POST /departments/new/"
    params = {"name": "research-labs"}
    hidden = {"name": "secret-labs"}
    grant = DEPARTMENT_EDITOR
    granted = 302
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"name": params["name"], "deserved__team-a": "1", "over_quota__team-a": "on", "weight__team-a": "3"}


class TestDepartmentEditor(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /departments/{name}/edit/"
    params = {"name": "research"}
    hidden = {"name": "product"}
    grant = DEPARTMENT_EDITOR
    elsewhere = POOL_CHANGES_ONLY
    shows = ("Edit department research", 'name="deserved__team-a"', 'name="version"')
    max_queries = 10  # 7 today


class TestDepartmentEdit(PageTestCases.ForAConfigType):
    door = "POST /departments/{name}/edit/"
    params = {"name": "research"}
    hidden = {"name": "product"}
    grant = DEPARTMENT_EDITOR
    granted = 302
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"description": "research and labs", "deserved__team-a": "2", "limit__team-a": "4"}


class TestProjectNew(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /projects/new/"
    grant = PROJECT_MANAGER
    elsewhere = POOL_CHANGES_ONLY
    shows = ('<option value="research"', 'name="namespaces"', 'name="deserved__team-a"')
    max_queries = 10  # 7 today


class TestProjectCreate(PageTestCases.ForAConfigType):
    door = "POST /projects/new/"
    params = {"name": "team-a-labs"}
    hidden = {"name": "secret-labs"}
    grant = PROJECT_MANAGER
    granted = 302
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"name": params["name"], "department": "research", "deserved__team-a": "1"}


class TestProjectEditor(PageTestCases.Page, PageTestCases.ForAConfigType):
    door = "GET /projects/{name}/edit/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics"}
    grant = PROJECT_MANAGER
    elsewhere = POOL_CHANGES_ONLY
    shows = ("Edit project team-a", 'value="team-a"', 'name="deserved__team-a"')
    max_queries = 12  # 9 today


class TestProjectEdit(PageTestCases.ForAConfigType):
    door = "POST /projects/{name}/edit/"
    params = {"name": "team-a"}
    hidden = {"name": "robotics"}
    grant = PROJECT_MANAGER
    granted = 302
    elsewhere = POOL_CHANGES_ONLY

    def body(self, params):
        return {"department": "research", "namespaces": "team-a", "deserved__team-a": "1", "limit__team-a": "2"}


# --- GPU utilization ---------------------------------------------------------------------------------


class UtilizationRead(PageTestCases.Door):
    """The demo after two utilization rounds: idle GPUs, GPU-hours and pool samples to show (or to keep hidden)."""

    def arrange(self):
        services.utilization_record_all()
        services.utilization_record_all()


class TestIdle(UtilizationRead, PageTestCases.Page):
    door = "GET /idle/"
    shows = ("<h1>Idle GPUs</h1>", 'id="idle-table"')
    max_queries = 15  # at most 12 today


class TestIdleTable(UtilizationRead, PageTestCases.Page):
    door = "GET /idle/"
    query = "?pool=team-a&q=job"
    htmx = True
    shows = ('id="idle-table"',)
    max_queries = 15  # at most 12 today


class TestIdleCsv(UtilizationRead, PageTestCases.Page):
    door = "GET /idle/"
    query = "?format=csv"
    shows = ("backend,namespace,pod,user,project,pool,node,gpus,idle_gpus,idle_since,idle_for_seconds",)
    max_queries = 15  # at most 12 today


class TestConsumption(UtilizationRead, PageTestCases.Page):
    door = "GET /consumption/"
    query = "?by=pool&period=24h"
    shows = ("<h1>GPU consumption</h1>",)
    max_queries = 15  # at most 12 today


class TestConsumptionJson(UtilizationRead, PageTestCases.Page):
    door = "GET /consumption/"
    query = "?by=user&period=7d&format=json"
    shows = ('"by": "user"', '"total"')
    max_queries = 15  # at most 12 today


class TestPoolUtilization(UtilizationRead, PageTestCases.Page):
    door = "GET /pools/{name}/utilization/"
    query = "?range=1h"
    params = {"name": "team-a"}
    hidden = {"name": "robotics-training"}
    shows = ('"label": "GPU utilization %"', '"start": ')
    max_queries = 15  # at most 12 today


class TestNodeGpus(NodeLabelsDoor, PageTestCases.Page):
    door = "GET /nodes/{name}/gpus/"
    shows = ('id="node-gpus"', "data-usage-url=")
    max_queries = 15  # at most 12 today


class TestNodeGpusHistory(NodeLabelsDoor, PageTestCases.Page):
    door = "GET /nodes/{name}/gpus/history/"
    query = "?range=1h"
    shows = ('"label": "GPU utilization %"',)
    max_queries = 15  # at most 12 today


# --- workloads (SEMANTICS §10) --------------------------------------------------------------------------------------


class TestWorkloads(PageTestCases.Page):
    door = "GET /workloads/"
    shows = ("<h1>Workloads</h1>", 'id="workload-table"')
    # 33 on PostgreSQL today: the page's verdicts carry start estimates, which read the pools' other waiting
    # workloads, the running ones and the learned runtimes
    max_queries = 36


class TestWorkloadsCsv(PageTestCases.Page):
    door = "GET /workloads/"
    query = "?format=csv&pending=1"
    shows = ("backend,namespace,name,kind,project,pool,user",)
    # 38 on PostgreSQL today: the verdicts also read the validation rules, the platforms and the nodes they judge on,
    # and their start estimates the pools' other waiting workloads, the running ones and the learned runtimes
    max_queries = 41


class TestWorkload(PageTestCases.Page):
    """The demo's notebook (a Deployment's pod in namespace team-a, on robotics-training): a researcher of project
    team-a sees it; a gang of project robotics does not exist for them."""

    door = "GET /workloads/{backend}/{namespace}/{name}/"
    params = {"backend": "gpu-cluster-01", "namespace": "team-a", "name": "notebook-priya"}
    hidden = {"backend": "gpu-cluster-01", "namespace": "robotics", "name": "locomotion-pretrain"}
    shows = ("notebook-priya", "Deployment")
    max_queries = 40

    def arrange(self):
        researcher = [{"kind": "user", "name": "holder", "role": "researcher"}]
        services.unit_members_set(kind="project", name="team-a", members=researcher, actor=services.Actor.system("t"))
