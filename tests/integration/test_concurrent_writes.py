"""SEMANTICS.md §7.1 under real concurrency: parallel clients against a live server on PostgreSQL.

Each round lines two HTTP clients up on a barrier and lets them go at once; the server handles each
request on its own thread with its own database connection, so the two transactions really overlap.
SQLite takes one writer at a time and would hide every race here: these run in CI's PostgreSQL pass.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.db import connection
from kube_objects import node
from people import person, token_for

from pools import selectors, services
from pools.choices import ConfigType
from pools.configs import validate_state
from pools.models import ConfigRevision, Department, PodTemplate, Pool, Project

ROUNDS = 50

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(live_server, cluster, actor):
    """A live server on PostgreSQL with a cluster, a template and a pool, and an administrator's token."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs these")
    cluster([node("n1", labels={"team": "a"})])
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {"a": {"spec": {"nodeSelector": {"team": "a"}}}},
            ConfigType.POOL: {"shared": {"backend": "test-cluster", "common_pod_template": ["a"]}},
        },
        actor=actor,
    )
    person("root", is_superuser=True)
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token_for('root')}", "Accept": "application/json"})
    return live_server.url, session


def together(*calls):
    """Run the calls at the same moment, each on its own client thread; their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(run, call) for call in calls]]


def test_of_two_changes_made_against_one_version_one_wins_and_the_other_gets_412(server):
    url, session = server
    pool = f"{url}/api/pools/shared/"
    for round_number in range(ROUNDS):
        read = session.get(pool)
        body, etag = read.json(), read.headers["ETag"]
        revisions = ConfigRevision.objects.filter(config_type="POOL").count()
        changed = [{**body, "description": f"{round_number}-{who}"} for who in ("first", "second")]
        answers = together(
            *(lambda new=new, etag=etag: session.put(pool, json=new, headers={"If-Match": etag}) for new in changed)
        )
        assert sorted(answer.status_code for answer in answers) == [200, 412], [a.text for a in answers]
        winner = next(answer for answer in answers if answer.status_code == 200).json()["description"]
        assert Pool.objects.get(name="shared").description == winner
        assert ConfigRevision.objects.filter(config_type="POOL").count() == revisions + 1


def test_two_creates_of_one_name_give_one_201_and_one_409(server):
    url, session = server
    for round_number in range(ROUNDS):
        name = f"twin-{round_number}"
        body = {"name": name, "backend": "test-cluster", "common_pod_template": ["a"]}
        answers = together(*(lambda body=body: session.post(f"{url}/api/pools/", json=body) for _ in range(2)))
        assert sorted(answer.status_code for answer in answers) == [201, 409], [a.text for a in answers]
        assert Pool.objects.filter(name=name).count() == 1
        assert sum(name in revision.changed for revision in ConfigRevision.objects.filter(config_type="POOL")) == 1


def test_a_delete_racing_a_new_reference_never_leaves_a_reference_to_nothing(server):
    url, session = server
    for round_number in range(ROUNDS):
        template, pool = f"tmp-{round_number}", f"user-{round_number}"
        services.config_apply(changes={ConfigType.POD_TEMPLATE: {template: {"spec": {}}}}, actor=services.SYSTEM)
        deleted, created = together(
            lambda template=template: session.delete(f"{url}/api/pod_templates/{template}/"),
            lambda pool=pool, template=template: session.post(
                f"{url}/api/pools/",
                json={"name": pool, "backend": "test-cluster", "common_pod_template": ["a", template]},
            ),
        )
        # Exactly one of the two happened, whichever came first, and the other was refused with the reason.
        assert {(deleted.status_code, created.status_code)} <= {(204, 400), (409, 201)}, (deleted.text, created.text)
        assert PodTemplate.objects.filter(name=template).exists() == Pool.objects.filter(name=pool).exists()
    validate_state(selectors.config_state())
    # Unrelated writes go on as before.
    unrelated = session.patch(f"{url}/api/pools/shared/", json={"description": "still writable"})
    assert unrelated.status_code == 200


def test_a_department_deleted_while_a_project_joins_it_never_leaves_a_project_without_one(server):
    """SEMANTICS §9 on the same serialised path: a project names its department, as a pool names its templates."""
    url, session = server
    for round_number in range(ROUNDS):
        department, project = f"dept-{round_number}", f"proj-{round_number}"
        services.config_apply(changes={ConfigType.DEPARTMENT: {department: {}}}, actor=services.SYSTEM)
        deleted, created = together(
            lambda department=department: session.delete(f"{url}/api/departments/{department}/"),
            lambda project=project, department=department: session.post(
                f"{url}/api/projects/", json={"name": project, "department": department}
            ),
        )
        assert {(deleted.status_code, created.status_code)} <= {(204, 400), (409, 201)}, (deleted.text, created.text)
        assert Department.objects.filter(name=department).exists() == Project.objects.filter(name=project).exists()
    validate_state(selectors.config_state())


def test_tags_added_at_once_are_all_kept(server):
    url, session = server
    revision = ConfigRevision.objects.filter(config_type="POOL").order_by("-revision").first().revision
    tags_url = f"{url}/api/configs/POOL/{revision}/tags/"
    for round_number in range(ROUNDS // 5):
        added = [[f"t{round_number}-{k}"] for k in range(4)]
        together(*(lambda tags=tags: session.post(tags_url, json={"add": tags}) for tags in added))
    tags = ConfigRevision.objects.get(config_type="POOL", revision=revision).tags
    assert len(tags) == 4 * (ROUNDS // 5)
