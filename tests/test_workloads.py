"""Workloads (SEMANTICS §10): pods grouped into what users submitted, on every door, and who sees them.

One small cluster, synced from a file as a real backend is: a KAI gang (annotation ``pod-group-name``) with a pod
running and one waiting, a pod group by label, a Deployment's pods (through their ReplicaSet), a Job, a bare pod,
and a bare pod named like the gang. The same rows come out of the page's export, ``/api/workloads/`` and
``poolctl get workloads``; a person sees the workloads of their pools and of their projects, and a workload they
may not see answers as one that does not exist.
"""

from __future__ import annotations

import json
import re

import pytest
from django.db import transaction
from django.test import override_settings
from kube_objects import node, pod, write_list
from people import api_client, person, poolctl, role, run_poolctl, signed_in

from pools import selectors, services
from pools.choices import ConfigType
from pools.engine import workloads as engine
from pools.engine.errors import ConfigError
from pools.inventory.records import pod_record
from pools.models import Backend, Pod

T0 = "2026-01-02T03:00:00Z"
T1 = "2026-01-02T03:05:00Z"
WAITING = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


ITEMS = [
    node("n1", labels={"team": "a"}, gpu=8),
    node("n2", labels={"team": "r"}, gpu=8),
    node("n3", labels={"team": "none"}, gpu=0),
    # a pod of no pool
    pod("stray", namespace="infer", node="n3"),
    # a KAI gang: one pod runs, one waits
    pod(
        "pretrain-0",
        namespace="research",
        node="n1",
        gpu=2,
        pool="team-a",
        annotations={"pod-group-name": "pretrain", "runai/user": "lena"},
        priority_class="train",
        created=T0,
        started=T1,
    ),
    pod(
        "pretrain-1",
        namespace="research",
        gpu=2,
        pool="team-a",
        phase="Pending",
        annotations={"pod-group-name": "pretrain", "runai/user": "lena"},
        priority_class="train",
        created=T0,
        unschedulable=WAITING,
    ),
    # a bare pod named like the gang: the gang is what /research/pretrain/ means
    pod("pretrain", namespace="research", node="n1", gpu=1, pool="team-a", created=T0),
    # a pod group by label
    *(
        pod(
            f"sweep-{n}",
            namespace="research",
            node="n1",
            gpu=1,
            pool="team-a",
            labels={engine.POD_GROUP_LABEL: "sweep"},
        )
        for n in range(2)
    ),
    # a Deployment's pod, no pool label: its node's pool
    pod(
        "web-7d9f8-abcde",
        namespace="infer",
        node="n1",
        owner=("ReplicaSet", "web-7d9f8"),
        labels={"pod-template-hash": "7d9f8"},
    ),
    # a Job on the robotics pool
    pod(
        "etl-x1",
        namespace="robots",
        node="n2",
        gpu=4,
        pool="robotics-training",
        owner=("Job", "etl"),
        labels={"osmo.user": "rob"},
        created=T0,
        started=T1,
    ),
    # a bare pod waiting on the robotics pool
    pod("lonely", namespace="robots", gpu=1, pool="robotics-training", phase="Pending", unschedulable="nope"),
]


@pytest.fixture(scope="module")
def estate(django_db_setup, django_db_blocker, tmp_path_factory):
    """The cluster synced from its file, its pools, a project, and tess (the team-a pools' role), nora (no role) and
    root: set up once for the module, in a transaction rolled back after its last test (each test's own is a
    savepoint inside it)."""
    directory = tmp_path_factory.mktemp("workloads")
    actor = services.Actor.system("tester")
    with django_db_blocker.unblock(), transaction.atomic():
        with override_settings(GPUPOOL_INVENTORY_DIR=str(directory)):
            path = write_list(directory / "test-cluster.json", ITEMS)
            services.config_apply(
                changes={ConfigType.BACKEND: {"test-cluster": {"kind": "file", "source": str(path)}}}, actor=actor
            )
            services.backend_sync(backend=Backend.objects.get(name="test-cluster"))
            services.config_apply(
                changes={
                    ConfigType.POD_TEMPLATE: {
                        "a": {"spec": {"nodeSelector": {"team": "a"}}},
                        "r": {"spec": {"nodeSelector": {"team": "r"}}},
                    },
                    ConfigType.POOL: {
                        "team-a": {"backend": "test-cluster", "common_pod_template": ["a"]},
                        "robotics-training": {"backend": "test-cluster", "common_pod_template": ["r"]},
                    },
                    ConfigType.DEPARTMENT: {"rnd": {}},
                    ConfigType.PROJECT: {"robo": {"department": "rnd", "namespaces": ["robots"]}},
                },
                actor=actor,
            )
            poolctl("role", "set", "osmo-team-a", "pool")
            role(
                "fleet-but-robotics",
                {"actions": ["resource:List", "pool:Read"], "resources": ["*"]},
                {"effect": "Deny", "actions": ["*"], "resources": ["pool/robotics*"]},
            )
            role("user-manager", {"actions": ["user:Read", "user:Update"], "resources": ["user/*"]})
            people = {
                "uma": person("uma", "user-manager"),
                "fred": person("fred", "fleet-but-robotics"),
                "nora": person("nora"),
                "tess": person("tess", "osmo-team-a"),
                "root": person("root", is_superuser=True, is_staff=True),
            }
        yield people
        transaction.set_rollback(True)


# A check's figures as ``engine.verdicts`` gives them: the free GPUs and the largest free block per product.
FIGURES = {"free": 3, "largest_free": {"H100": {"gpus": 2, "nodes": ["n1"], "node_count": 1}}}


@pytest.fixture
def verdicts(monkeypatch):
    """The verdicts of the pending workloads, as ``selectors.verdicts.pending_verdicts`` gives them."""
    import pools.selectors.verdicts as verdicts

    def pending_verdicts(*, backend_ids=None, keys=None):
        found = {}
        for backend_id, namespace, kind, name in Pod.objects.filter(phase="Pending").values_list(
            "backend_id", "namespace", "workload_kind", "workload_name"
        ):
            reason = "reclaim" if name == "pretrain" else "no_capacity"
            victims = [{"namespace": "robots", "name": "etl", "kind": "Job", "project": "robo", "gpus": 4}]
            found[(backend_id, namespace, kind, name)] = {
                "reason": reason,
                "checks": [{"reason": reason, "message": f"{name} waits", "figures": FIGURES}],
                "victims": victims if reason == "reclaim" else [],
            }
        return found

    monkeypatch.setattr(verdicts, "pending_verdicts", pending_verdicts)


def _keyed(rows) -> dict:
    return {(row["namespace"], row["kind"], row["name"]): row for row in rows}


# --- the sync keeps what workloads read ------------------------------------------------------------------------------


def test_a_pod_record_keeps_owner_annotations_start_and_why_it_is_not_scheduled():
    obj = pod(
        "web-7d9f8-abcde",
        namespace="infer",
        owner=("ReplicaSet", "web-7d9f8"),
        labels={"pod-template-hash": "7d9f8", "user": "ada"},
        annotations={"runai/queue": "robo", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        priority_class="inference",
        phase="Pending",
        started=T1,
        unschedulable="x" * 5000,
    )
    fields = pod_record(obj, []).pod_fields("osmo.pool", "osmo.priority")
    assert (fields["workload_kind"], fields["workload_name"]) == ("Deployment", "web")
    assert (fields["owner_kind"], fields["owner_name"]) == ("ReplicaSet", "web-7d9f8")
    assert fields["annotations"] == {"runai/queue": "robo"}
    assert fields["priority_class"] == "inference" and fields["user"] == "ada"
    assert fields["started"].isoformat() == "2026-01-02T03:05:00+00:00"
    assert fields["scheduled_reason"] == "Unschedulable" and len(fields["scheduled_message"]) == 1000
    # pods keeping the same annotations share one dict (150,000 pods, a few hundred distinct sets)
    twin = pod_record({**obj, "metadata": {**obj["metadata"], "name": "web-7d9f8-fghij"}}, [])
    assert twin.annotations is pod_record(obj, []).annotations
    scheduled = pod("p", node="n1", started=T1)
    scheduled["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "reason": "", "message": "m"}]
    record = pod_record(scheduled, [])
    assert (record.scheduled_reason, record.scheduled_message, record.workload_kind, record.user) == (
        "",
        "",
        "Pod",
        "default",
    )


# --- grouping, phases and doors --------------------------------------------------------------------------------------


def test_pods_group_into_workloads_with_their_phases_and_figures(db, estate, verdicts):
    rows = _keyed(selectors.workloads_visible(user=estate["root"]))
    assert set(rows) == {
        ("research", "PodGroup", "pretrain"),
        ("research", "Pod", "pretrain"),
        ("research", "PodGroup", "sweep"),
        ("infer", "Deployment", "web"),
        ("robots", "Job", "etl"),
        ("robots", "Pod", "lonely"),
        ("infer", "Pod", "stray"),
    }
    gang = rows["research", "PodGroup", "pretrain"]
    assert gang["phase"] == engine.PARTIALLY_RUNNING and gang["pods"] == {
        "running": 1,
        "pending": 1,
        "done": 0,
        "total": 2,
    }
    assert (gang["gpus"], gang["gpus_held"], gang["user"], gang["priority_class"]) == (4, 2, "lena", "train")
    assert gang["pools"] == ["team-a"] and gang["reason"] == "reclaim"
    assert gang["started"] == T1 and gang["waiting_since"] == T0
    assert rows["research", "PodGroup", "sweep"]["phase"] == engine.RUNNING
    web = rows["infer", "Deployment", "web"]
    assert web["pools"] == ["team-a"] and web["reason"] == "" and web["user"] == "infer"  # its node's pool
    etl = rows["robots", "Job", "etl"]
    assert (etl["project"], etl["user"], etl["pools"]) == ("robo", "rob", ["robotics-training"])
    lonely = rows["robots", "Pod", "lonely"]
    assert (lonely["phase"], lonely["reason"], lonely["project"]) == (engine.PENDING, "no_capacity", "robo")
    # GPU holders first
    order = [(row["name"], row["gpus_held"]) for row in selectors.workloads_visible(user=estate["root"])]
    assert order[0] == ("etl", 4) and [held for _, held in order] == sorted((held for _, held in order), reverse=True)
    # filters
    pick = selectors.workloads_visible
    assert {r["name"] for r in pick(user=estate["root"], filters={"pending": "1"})} == {"pretrain", "lonely"}
    assert {r["name"] for r in pick(user=estate["root"], filters={"reason": "reclaim"})} == {"pretrain"}
    assert {r["name"] for r in pick(user=estate["root"], filters={"project": "robo"})} == {"etl", "lonely"}
    assert {r["name"] for r in pick(user=estate["root"], filters={"user": "lena"})} == {"pretrain"}
    assert {r["name"] for r in pick(user=estate["root"], filters={"phase": "pending"})} == {"lonely"}
    assert {r["name"] for r in pick(user=estate["root"], filters={"pool": "team-a"})} == {"pretrain", "sweep", "web"}
    with pytest.raises(ConfigError, match="phase"):
        list(pick(user=estate["root"], filters={"phase": "Sleeping"}))


def test_page_api_and_poolctl_give_the_same_rows(db, estate, verdicts):
    root = estate["root"]
    api = api_client(root).get("/api/workloads/", {"pending": "1"}).json()
    assert api["count"] == 2
    verb = run_poolctl("get", "workloads", "--pending", "--json")
    assert verb.code == 0 and verb.json()["workloads"] == api["results"]
    exported = signed_in(root).get("/workloads/", {"pending": "1", "format": "json"}).json()
    assert [row["name"] for row in exported] == [row["name"] for row in api["results"]]
    page = signed_in(root).get("/workloads/").content.decode()
    assert 'data-workload="test-cluster/research/pretrain"' in page and ">Workloads<" in page
    text = run_poolctl("get", "workloads", "--project", "robo").out
    assert "etl" in text and "lonely" in text and "pretrain" not in text
    csv = api_client(root).get("/api/workloads/", {"format": "csv"}).content.decode()
    assert csv.splitlines()[0].startswith("backend,namespace,name,kind") and len(csv.splitlines()) == 8
    paged = api_client(root).get("/api/workloads/", {"limit": 2, "offset": 2}).json()
    assert paged["count"] == 7 and len(paged["results"]) == 2
    everything = api_client(root).get("/api/workloads/", {"limit": 100}).json()["results"]
    assert everything[2:4] == paged["results"]


def test_a_workload_page_shows_its_pods_verdict_victims_and_phases(db, estate, verdicts):
    root = estate["root"]
    detail = api_client(root).get("/api/workloads/test-cluster/research/pretrain/").json()
    assert detail["kind"] == "PodGroup"  # before the bare pod of the same name
    assert [p["name"] for p in detail["pod_list"]] == ["pretrain-0", "pretrain-1"]
    assert detail["pod_list"][1]["scheduled_message"] == WAITING and detail["nodes"] == ["n1"]
    assert detail["verdict"]["reason"] == "reclaim" and detail["victims"][0]["name"] == "etl"
    assert [step["phase"] for step in detail["history"]] == [engine.PENDING, engine.PARTIALLY_RUNNING]
    page = signed_in(root).get("/workloads/test-cluster/research/pretrain/").content.decode()
    assert "pretrain-1" in page and "<code>reclaim</code>" in page and WAITING in page
    figures = re.search(r'<ul class="figures".*?</ul>', page, re.S).group(0)
    assert [re.sub(r"<[^>]+>", "", item) for item in re.findall(r"<li>.*?</li>", figures)] == [
        "free GPUs: 3",
        "largest free block: H100 2 on n1",
    ]
    verb = run_poolctl("describe", "workload", "research/pretrain", "--json")
    assert verb.json() == detail
    text = run_poolctl("describe", "workload", "research/pretrain").out
    assert "PodGroup" in text and "Victims:" in text
    assert run_poolctl("describe", "workload", "pretrain").code != 0  # not NAMESPACE/NAME


def test_a_verdicts_figures_read_as_label_and_value():
    from pools.templatetags.console import verdict_figures

    def read(figures):
        return [f"{figure['label']}: {figure['value']}" for figure in verdict_figures(figures)]

    block = {"gpus": 4, "nodes": ["h-1", "h-2"], "node_count": 5}
    assert read({"free": 1234.5, "largest_free": {"H100": block, "A100": {"gpus": 8, "nodes": ["a-1"]}}}) == [
        "free GPUs: 1,234.5",
        "largest free block: H100 4 on h-1, h-2 and 3 more, A100 8 on a-1",
    ]
    assert read({"gpus": 16, "product": "", "largest": 8, "largest_by_product": {"H100": 8, "A10G": 4}}) == [
        "GPUs one pod asks: 16",
        "product: —",
        "largest node: 8",
        "largest node per product: H100 8, A10G 4",
    ]
    assert read({"node_selector": {"gpu-type": "L40S"}, "nodes": 0}) == ["nodeSelector: gpu-type=L40S", "nodes: 0"]
    assert read({"waiting_seconds": 3900, "scheduled_message": ""}) == ["waiting: 1h 5m", "PodScheduled: —"]
    assert read({"project": "robo", "fair_share": 6, "victims": ["a", "b"]}) == [
        "project: robo",
        "fair share: 6",
        "victims: a, b",
    ]


# --- who sees what ---------------------------------------------------------------------------------------------------


def test_a_workload_of_a_pool_one_may_not_see_does_not_exist_for_them(db, estate):
    tess, nora = estate["tess"], estate["nora"]
    seen = {row["name"] for row in selectors.workloads_visible(user=tess)}
    assert seen == {"pretrain", "sweep", "web"}
    assert not list(selectors.workloads_visible(user=nora))
    for user in (tess, nora):
        listed = api_client(user).get("/api/workloads/").json()
        assert "etl" not in {row["name"] for row in listed["results"]}
        hidden = api_client(user).get("/api/workloads/test-cluster/robots/etl/")
        missing = api_client(user).get("/api/workloads/test-cluster/robots/none/")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["errors"][0]["message"].replace("etl", "X") == missing.json()["errors"][0][
            "message"
        ].replace("none", "X")
        assert signed_in(user).get("/workloads/test-cluster/robots/etl/").status_code == 404
        assert "etl" not in signed_in(user).get("/workloads/", {"format": "csv"}).content.decode()
        hidden = run_poolctl("--as", user.username, "describe", "workload", "robots/etl")
        missing = run_poolctl("--as", user.username, "describe", "workload", "robots/none")
        assert hidden.code == missing.code != 0
        assert hidden.err.replace("etl", "X") == missing.err.replace("none", "X")
    assert api_client(tess).get("/api/workloads/test-cluster/research/pretrain/").status_code == 200
    # who may list the fleet sees the workloads of no pool too, never those of a pool hidden from them
    seen = {row["name"] for row in selectors.workloads_visible(user=estate["fred"])}
    assert seen == {"pretrain", "sweep", "web", "stray"}
    # the kept sums of every workload order the list of a whole-fleet reader only; the others' own pods are grouped
    for user in (tess, nora, estate["fred"]):
        for filters in ({}, {"pending": "1"}):
            assert selectors.workloads_visible(user=user, filters=filters)._sums is None
    assert selectors.workloads_visible(user=estate["root"], filters={"pending": "1"})._sums is not None
    pending = {row["name"] for row in selectors.workloads_visible(user=tess, filters={"pending": "1"})}
    assert pending == {"pretrain"}  # not robots/lonely, pending in a pool hidden from tess


def test_a_user_manager_sees_no_workload_through_any_door(db, estate):
    """Managing people grants nothing on pools or projects: every door answers a user manager as if no workload
    existed, the pending ones and their verdicts included."""
    uma = estate["uma"]
    assert not list(selectors.workloads_visible(user=uma))
    assert not list(selectors.workloads_visible(user=uma, filters={"pending": "1"}))
    client = api_client(uma)
    assert client.get("/api/workloads/").json()["results"] == []
    assert client.get("/api/workloads/", {"pending": "1"}).json()["results"] == []
    for name in ("pretrain", "etl", "none"):
        namespace = "robots" if name == "etl" else "research"
        assert client.get(f"/api/workloads/test-cluster/{namespace}/{name}/").status_code == 404
        assert signed_in(uma).get(f"/workloads/test-cluster/{namespace}/{name}/").status_code == 404
    page = signed_in(uma).get("/workloads/", {"format": "csv"}).content.decode()
    assert "pretrain" not in page and "etl" not in page
    listed = run_poolctl("--as", "uma", "get", "workloads", "--json")
    assert listed.code == 0 and json.loads(listed.out) == {"workloads": []}
    hidden = run_poolctl("--as", "uma", "describe", "workload", "research/pretrain")
    missing = run_poolctl("--as", "uma", "describe", "workload", "research/none")
    assert hidden.code == missing.code != 0
    assert hidden.err.replace("pretrain", "X") == missing.err.replace("none", "X")
    assert b'href="/workloads/"' not in signed_in(uma).get("/").content


def test_a_project_member_sees_the_projects_workloads(db, estate, monkeypatch):
    import pools.selectors.workloads as workloads

    monkeypatch.setattr(workloads, "projects_of", lambda user: {"robo"} if user.username == "nora" else set())
    assert {row["name"] for row in selectors.workloads_visible(user=estate["nora"])} == {"etl", "lonely"}
    assert api_client(estate["nora"]).get("/api/workloads/test-cluster/robots/etl/").status_code == 200
