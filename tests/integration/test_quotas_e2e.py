"""Quotas per node pool end to end (SEMANTICS §9) on a real kube-apiserver: the figures of `poolctl quota list --json`
and `GET /api/quotas/` for the projects of two departments across two gpuctl label pools, before and after the
cluster changes.

The cluster is shaped through the API as a kubelet and a scheduler would leave it (pod phases through the status
subresource, a pending pod bound through the binding subresource); pools, departments, projects and quotas are
made with `poolctl` as an operator types it; the console reads the cluster with a full sync.
"""

from __future__ import annotations

import shlex

import pytest
from kubernetes.client.exceptions import ApiException
from people import person, role, signed_in
from rest_framework.test import APIClient

from pools import services

pytestmark = pytest.mark.services

POOL_KEY = "runwhere.ai/pool"
POD_POOL_LABEL = "osmo.pool"  # the backend's pool_label: where a pending pod's pool is read from
QUEUE_LABEL = "runai/queue"

FIGURES = (
    "deserved",
    "allocated",
    "pending",
    "request",
    "allocation_ratio",
    "over_quota",
    "fair_share",
    "over_fair_share",
)

POOL_FILES = {
    "train-pool": """kind: pool
version: v0.1
pool:
  name: train-pool
  description: "A100 training"
nodes:
  a100-1:
    gpu-type: A100
  a100-2:
    gpu-type: A100
""",
    "infer-pool": """kind: pool
version: v0.1
pool:
  name: infer-pool
  description: "L40S inference"
nodes:
  l40s-1:
    gpu-type: L40S
  l40s-2:
    gpu-type: L40S
""",
}


# --- the cluster -------------------------------------------------------------------------------------------------


def ensure_namespace(kube, name: str) -> None:
    """Namespaces outlive the ``kube`` fixture's wipe (and a 1.20 API server without a controller manager never
    finishes deleting one), so each test creates the ones it needs if they are not there yet."""
    try:
        kube.api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise


def add_pod(
    kube,
    namespace: str,
    name: str,
    *,
    node: str | None = None,
    gpu: int = 0,
    labels: dict | None = None,
    annotations: dict | None = None,
    node_selector: dict | None = None,
    phase: str = "Running",
) -> None:
    requests = {"cpu": "2", "memory": "8Gi", **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
    spec = {
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": requests}}]
    }
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    metadata = {"name": name, "labels": labels or {}, "annotations": annotations or {}}
    kube.api.create_namespaced_pod(namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    if phase != "Pending":
        kube.set_phase(name, phase, namespace=namespace)


def bind(kube, namespace: str, name: str, node: str) -> None:
    """What the scheduler does: a Binding on the pod's binding subresource (sets spec.nodeName), then the kubelet's
    Running. The client cannot read the API server's answer (a Status) as a Binding, hence no preloading."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    kube.api.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
    kube.set_phase(name, "Running", namespace=namespace)


def pending_in(pool: str) -> dict:
    """A pod submitted to a label pool: the pool's selector in its spec and the pool label on it."""
    return {"labels": {POD_POOL_LABEL: pool}, "node_selector": {POOL_KEY: pool}}


@pytest.fixture
def quotas(db, kube, kube_backend, poolctl, tmp_path):
    """Two label pools, departments research (projects alpha, beta) and ops (project gamma), their workloads.

    train-pool: a100-1 and a100-2, 8 GPUs each, ready: capacity 16.
      runai-alpha/alpha-train     a100-1  6 GPUs  Running
      default/stray               a100-1  1 GPU   Running   (no project's namespace or label)
      team-gamma/gamma-scratch    a100-1  1 GPU   Running   (a namespace no project owns, no queue label)
      runai-alpha/alpha-notebook  a100-2  gpu-fraction 0.5  Running
      runai-beta/beta-train       a100-2  4 GPUs  Running
      team-gamma/gamma-train      a100-2  2 GPUs  Running   runai/queue=gamma
      runai-beta/beta-wait        -       4 GPUs  Pending   for train-pool
      runai-alpha/alpha-done      a100-2  8 GPUs  Succeeded (terminated: counts nowhere)
    infer-pool: l40s-1 ready and l40s-2 NotReady, 4 GPUs each: capacity 4.
      runai-alpha/alpha-serve     l40s-1  2 GPUs  Running
      team-gamma/gamma-serve      l40s-1  1 GPU   Running   runai/queue=gamma
      runai-alpha/alpha-serve-2   l40s-2  2 GPUs  Running   (on a node that is not ready: allocated all the same)
      runai-beta/beta-serve-wait  -       2 GPUs  Pending   for infer-pool
    """
    for name in ("a100-1", "a100-2"):
        kube.add_node(name, gpu=8, product="NVIDIA-A100-SXM4-80GB")
    kube.add_node("l40s-1", gpu=4, product="NVIDIA-L40S")
    kube.add_node("l40s-2", gpu=4, product="NVIDIA-L40S", ready="False")
    for namespace in ("runai-alpha", "runai-beta", "team-gamma"):
        ensure_namespace(kube, namespace)
    gamma = {QUEUE_LABEL: "gamma"}
    add_pod(kube, "runai-alpha", "alpha-train", node="a100-1", gpu=6)
    add_pod(kube, "default", "stray", node="a100-1", gpu=1)
    add_pod(kube, "team-gamma", "gamma-scratch", node="a100-1", gpu=1)
    add_pod(kube, "runai-alpha", "alpha-notebook", node="a100-2", annotations={"gpu-fraction": "0.5"})
    add_pod(kube, "runai-beta", "beta-train", node="a100-2", gpu=4)
    add_pod(kube, "team-gamma", "gamma-train", node="a100-2", gpu=2, labels=gamma)
    add_pod(kube, "runai-beta", "beta-wait", gpu=4, phase="Pending", **pending_in("train-pool"))
    add_pod(kube, "runai-alpha", "alpha-done", node="a100-2", gpu=8, phase="Succeeded")
    add_pod(kube, "runai-alpha", "alpha-serve", node="l40s-1", gpu=2)
    add_pod(kube, "team-gamma", "gamma-serve", node="l40s-1", gpu=1, labels=gamma)
    add_pod(kube, "runai-alpha", "alpha-serve-2", node="l40s-2", gpu=2)
    add_pod(kube, "runai-beta", "beta-serve-wait", gpu=2, phase="Pending", **pending_in("infer-pool"))
    backend = kube_backend()
    services.backend_sync(backend=backend)

    def ok(command: str):
        """``poolctl COMMAND`` as an operator types it on the server."""
        result = poolctl(*shlex.split(command))
        assert result.code == 0, f"poolctl {command}: {result.err}"

    for pool, text in POOL_FILES.items():
        path = tmp_path / f"{pool}.yaml"
        path.write_text(text)
        ok(f"create -f {path}")
    # Over-quota weights by number or by Run:ai's names (High 3, Low 1); Medium (2) when not given.
    research, ops = "--department research", "--department ops"
    for command in (
        "department create research --resources nodepool=train-pool,gpu-deserved=8,over-quota-weight=2"
        " --resources nodepool=infer-pool,gpu-deserved=2",
        "department create ops --resources nodepool=train-pool,gpu-deserved=4,over-quota-weight=Low"
        " --resources nodepool=infer-pool,gpu-deserved=2",
        f"project create alpha {research} --resources nodepool=train-pool,gpu-deserved=4,over-quota-weight=High"
        " --resources nodepool=infer-pool,gpu-deserved=1",
        f"project create beta {research} --resources nodepool=train-pool,gpu-deserved=2,over-quota-weight=Low"
        " --resources nodepool=infer-pool,gpu-deserved=1",
        f"project create gamma {ops} --resources nodepool=train-pool,gpu-deserved=4",
        "quota set gamma --pool infer-pool --gpu-deserved 2",
    ):
        ok(command)
    # The nodes carry their pool labels now (written by `create -f`); the console reads the cluster again.
    services.backend_sync(backend=backend)
    return backend


@pytest.fixture
def admin(db) -> APIClient:
    return signed_in(person("root", password=None, is_superuser=True))


def figures(answer: dict) -> dict[tuple[str, str], tuple]:
    """``(pool, unit) -> (deserved, allocated, …, over_fair_share)``, in the order of the rows."""
    return {(row["pool"], row["unit"]): tuple(row[key] for key in FIGURES) for row in answer["quotas"]}


def assert_departments_request_their_projects_sum(answer: dict) -> None:
    rows = answer["quotas"]
    for department in (row for row in rows if row["kind"] == "department"):
        key = (department["pool"], department["unit"])
        projects = [row for row in rows if row["kind"] == "project" and (row["pool"], row["department"]) == key]
        assert projects
        for figure in ("allocated", "pending", "request"):
            assert department[figure] == sum(row[figure] for row in projects), (key, figure)
        assert department["request"] == department["allocated"] + department["pending"]


# Before any change. Fair shares by §9.1, per pool:
#
# train-pool, capacity 16 (a100-1 + a100-2). Requests: alpha 6 + 0.5 = 6.5; beta 4 running + 4 pending = 8;
# gamma 2 (its queue label; gamma-scratch and stray belong to no project); research 14.5, ops 2.
#   Departments, amount 16. Deserved phase: research min(8, 14.5) = 8, ops min(4, 2) = 2; remaining 16 - 10 = 6.
#     Over quota: only research is unsatisfied, W = 2: offered 6 x 2/2 = 6 < missing 6.5, takes floor(6) = 6, loses no
#     fraction; nothing remains. research 14, ops 2.
#   research's 14 among alpha (deserved 4, High = 3) and beta (deserved 2, Low = 1). Deserved phase: 4 + 2 = 6,
#     remaining 8. Round 1, W = 4, R = 8: alpha offered 6, misses 2.5, takes 2.5 (satisfied with less than its offer:
#     another round); beta offered 2 < missing 6, takes 2. Remaining 3.5. Round 2, beta alone, W = 1: offered 3.5 <
#     missing 4, takes 3 and notes 0.5. Leftover 0.5: beta takes min(1, 0.5). alpha 4 + 2.5 = 6.5, beta 2 + 2 + 3 +
#     0.5 = 7.5.
#   ops's 2 to gamma: min(deserved 4, request 2) = 2.
# infer-pool, capacity 4 (l40s-2 is not ready). Requests: alpha 2 + 2 = 4 (l40s-2's pod runs all the same); beta 2
# pending; gamma 1; research 6, ops 1.
#   Departments, amount 4: research min(2, 6) = 2, ops min(2, 1) = 1; remaining 1. research alone, W = 2: offered 1,
#     takes floor(1) = 1. research 3, ops 1.
#   research's 3: alpha min(1, 4) = 1, beta min(1, 2) = 1; remaining 1. W = 2 + 2: each offered 0.5, less than what
#     each misses: 0 whole GPUs each, both note 0.5. Leftover 1: equal fractions, alpha was created first and takes
#     1. alpha 2, beta 1.
#   ops's 1 to gamma.
BEFORE = {
    # (pool, unit): deserved, allocated, pending, request, ratio, over quota, fair share, over fair share
    ("infer-pool", "research"): (2, 4, 2, 6, 2.0, 2, 3, 1),
    ("infer-pool", "alpha"): (1, 4, 0, 4, 4.0, 3, 2, 2),
    ("infer-pool", "beta"): (1, 0, 2, 2, 0.0, 0, 1, 0),
    ("infer-pool", "ops"): (2, 1, 0, 1, 0.5, 0, 1, 0),
    ("infer-pool", "gamma"): (2, 1, 0, 1, 0.5, 0, 1, 0),
    ("train-pool", "research"): (8, 10.5, 4, 14.5, 1.3125, 2.5, 14, 0),
    ("train-pool", "alpha"): (4, 6.5, 0, 6.5, 1.625, 2.5, 6.5, 0),
    ("train-pool", "beta"): (2, 4, 4, 8, 2.0, 2, 7.5, 0),
    ("train-pool", "ops"): (4, 2, 0, 2, 0.5, 0, 2, 0),
    ("train-pool", "gamma"): (4, 2, 0, 2, 0.5, 0, 2, 0),
}


def test_the_cli_and_the_api_give_section_9s_figures(quotas, poolctl, admin):
    listed = poolctl("quota", "list", "--json")
    assert listed.code == 0, listed.err
    cli = listed.json()
    api = admin.get("/api/quotas/")
    assert api.status_code == 200, api.content
    assert api.json() == cli
    # Pools by name; in each, a department then its projects, departments in creation order.
    assert figures(cli) == BEFORE and list(figures(cli)) == list(BEFORE)
    assert cli["warnings"] == []
    assert_departments_request_their_projects_sum(cli)
    alpha = next(row for row in cli["quotas"] if (row["pool"], row["unit"]) == ("train-pool", "alpha"))
    assert (alpha["kind"], alpha["department"], alpha["limit"], alpha["over_quota_weight"], alpha["priority"]) == (
        "project",
        "research",
        -1,
        3,
        100,
    )

    for pool in ("train-pool", "infer-pool"):
        one = poolctl("quota", "list", "--pool", pool, "--json").json()
        assert admin.get(f"/api/quotas/?pool={pool}").json() == one
        assert figures(one) == {key: value for key, value in BEFORE.items() if key[0] == pool}
    assert admin.get("/api/quotas/?pool=nowhere").status_code == 404


# After alpha-train (6 GPUs on a100-1) and alpha-serve-2 (2 GPUs on l40s-2) are deleted and beta-wait is bound to
# a100-1 and runs:
# train-pool, capacity 16. Requests: alpha 0.5, beta 4 + 4 = 8 (all running), gamma 2; research 8.5, ops 2.
#   Departments: research min(8, 8.5) = 8, ops 2; remaining 6. research offered 6 x 2/2, misses 0.5, takes it.
#     research 8.5, ops 2 (5.5 GPUs left over: nobody asks for them).
#   research's 8.5: alpha min(4, 0.5) = 0.5, beta min(2, 8) = 2; remaining 6. beta alone, offered 6, misses 6:
#     takes 6. alpha 0.5, beta 8.
# infer-pool, capacity 4. Requests: alpha 2, beta 2 pending, gamma 1; research 4, ops 1.
#   Departments: research min(2, 4) = 2, ops 1; remaining 1, research takes floor(1) = 1: research 3, ops 1.
#   research's 3: alpha 1 + beta 1, then 0.5 offered each, both note 0.5, alpha (created first) takes the last
#   GPU: alpha 2, beta 1 — the same shares as before, with alpha's allocation now within its share.
AFTER = {
    ("infer-pool", "research"): (2, 2, 2, 4, 1.0, 0, 3, 0),
    ("infer-pool", "alpha"): (1, 2, 0, 2, 2.0, 1, 2, 0),
    ("infer-pool", "beta"): (1, 0, 2, 2, 0.0, 0, 1, 0),
    ("infer-pool", "ops"): (2, 1, 0, 1, 0.5, 0, 1, 0),
    ("infer-pool", "gamma"): (2, 1, 0, 1, 0.5, 0, 1, 0),
    ("train-pool", "research"): (8, 8.5, 0, 8.5, 1.0625, 0.5, 8.5, 0),
    ("train-pool", "alpha"): (4, 0.5, 0, 0.5, 0.125, 0, 0.5, 0),
    ("train-pool", "beta"): (2, 8, 0, 8, 4.0, 6, 8, 0),
    ("train-pool", "ops"): (4, 2, 0, 2, 0.5, 0, 2, 0),
    ("train-pool", "gamma"): (4, 2, 0, 2, 0.5, 0, 2, 0),
}


def test_the_figures_follow_the_cluster(quotas, kube, poolctl, admin):
    kube.delete_pod("alpha-train", namespace="runai-alpha")
    kube.delete_pod("alpha-serve-2", namespace="runai-alpha")
    bind(kube, "runai-beta", "beta-wait", "a100-1")
    assert kube.api.read_namespaced_pod("beta-wait", "runai-beta").spec.node_name == "a100-1"

    services.backend_sync(backend=quotas)

    cli = poolctl("quota", "list", "--json").json()
    assert figures(cli) == AFTER
    assert admin.get("/api/quotas/").json() == cli
    assert_departments_request_their_projects_sum(cli)


def test_a_researcher_of_alpha_sees_alphas_rows_only(quotas, poolctl):
    researcher = person(
        "ada",
        role(
            "alpha-researcher",
            {"actions": ["project:Read"], "resources": ["project/alpha"]},
            {"actions": ["pool:Read"], "resources": ["pool/*"]},
        ),
        password=None,
    )
    client = signed_in(researcher)
    everything = {(row["pool"], row["unit"]): row for row in poolctl("quota", "list", "--json").json()["quotas"]}

    seen = client.get("/api/quotas/")
    assert seen.status_code == 200, seen.content
    # Alpha's shares are those the operator sees: they are computed over every unit, seen or not.
    assert seen.json() == {
        "quotas": [everything[("infer-pool", "alpha")], everything[("train-pool", "alpha")]],
        "warnings": [],
    }
    one = client.get("/api/quotas/?pool=train-pool").json()
    assert one == {"quotas": [everything[("train-pool", "alpha")]], "warnings": []}
    assert figures(one) == {("train-pool", "alpha"): BEFORE[("train-pool", "alpha")]}
