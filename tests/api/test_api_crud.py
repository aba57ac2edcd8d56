"""CRUD, permissions and revisions of every config object endpoint, generated from a few base classes.

The bases live inside ``APITestCases`` so pytest does not collect them; each ``Test...`` class below names
its endpoint, the objects it starts with, and the bodies it sends (NetBox's API test layout).
"""

from __future__ import annotations

import pytest
from kube_objects import node
from people import person, role

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ChangeOrigin, ConfigType
from pools.models import ConfigRevision


def names_of(response) -> list[str]:
    return sorted(row["name"] for row in response.json()["results"])


class APITestCases:
    """Containers of the shared tests (not collected: the class name does not start with ``Test``)."""

    class ConfigObjectTests:
        """List, get, create, replace, patch and delete one config type, with who may do what.

        A subclass also defines ``one_object_policies()``: policies granting read on ``names[0]`` (or on
        its type) and nothing else.
        """

        url: str  # the list URL
        config_type: ConfigType
        names: tuple[str, str]  # two objects that exist (and are not in use)
        create_data: dict
        update_data: dict
        patch_data: dict

        @pytest.fixture(autouse=True)
        def objects(self, two_pools, actor):
            self.setup_objects(actor)

        def setup_objects(self, actor) -> None:
            """Create ``names`` (when the shared fixture does not already have them)."""

        def hidden_url(self) -> str:
            """A URL the holder of ``one_object_policies`` must get a 404 for."""
            return self.detail(self.names[1])

        def invalid_data(self) -> tuple[dict, str]:
            """A body the services refuse, and the field the error must name."""
            return {**self.create_data, "unknown_field": 1}, "unknown_field"

        def detail(self, name: str) -> str:
            return f"{self.url}{name}/"

        def shown(self, name: str) -> dict:
            """The object as the API must show it: its name and its canonical body."""
            return {"name": name, **selectors.config_show(user=SYSTEM, config_type=self.config_type, name=name)[name]}

        def latest_revision(self) -> ConfigRevision:
            return ConfigRevision.objects.filter(config_type=self.config_type).order_by("-revision").first()

        def assert_api_revision(self, before: ConfigRevision | None) -> None:
            latest = self.latest_revision()
            assert latest is not None and (before is None or latest.revision == before.revision + 1)
            assert (latest.origin, latest.username) == (ChangeOrigin.API, "admin")

        # --- admin -----------------------------------------------------------------------------------

        def test_list_shows_the_objects(self, admin_api):
            response = admin_api.get(self.url)
            assert response.status_code == 200
            assert set(self.names) <= set(names_of(response))

        def test_get_shows_the_canonical_body_with_an_etag(self, admin_api):
            response = admin_api.get(self.detail(self.names[0]))
            assert response.status_code == 200
            assert {key: value for key, value in response.json().items() if key not in ("status", "pool")} == (
                self.shown(self.names[0])
            )
            assert response["ETag"].startswith('"')

        def test_create_records_an_api_revision(self, admin_api):
            before = self.latest_revision()
            response = admin_api.post(self.url, self.create_data, format="json")
            assert response.status_code == 201, response.content
            name = self.create_data["name"]
            assert response["Location"].endswith(self.detail(name))
            assert admin_api.get(self.detail(name)).json()["name"] == name
            self.assert_api_revision(before)

        def test_creating_an_existing_name_is_a_conflict(self, admin_api):
            response = admin_api.post(self.url, {**self.create_data, "name": self.names[0]}, format="json")
            assert response.status_code == 409
            assert response.json()["errors"][0]["field"] == "name"

        def test_replace_and_patch_change_the_object_and_its_etag(self, admin_api):
            etag = admin_api.get(self.detail(self.names[0]))["ETag"]
            before = self.latest_revision()
            replaced = admin_api.put(self.detail(self.names[0]), self.update_data, format="json", HTTP_IF_MATCH=etag)
            assert replaced.status_code == 200, replaced.content
            assert replaced["ETag"] != etag
            self.assert_api_revision(before)
            patched = admin_api.patch(self.detail(self.names[0]), self.patch_data, format="json")
            assert patched.status_code == 200, patched.content
            for key, value in self.patch_data.items():
                assert patched.json()[key] == value

        def test_a_stale_if_match_is_412_and_changes_nothing(self, admin_api):
            etag = admin_api.get(self.detail(self.names[0]))["ETag"]
            assert admin_api.patch(self.detail(self.names[0]), self.patch_data, format="json").status_code == 200
            before = self.latest_revision()
            stale = admin_api.put(self.detail(self.names[0]), self.update_data, format="json", HTTP_IF_MATCH=etag)
            assert stale.status_code == 412
            assert stale.json()["errors"][0]["message"]
            assert self.latest_revision() == before

        def test_delete_records_an_api_revision(self, admin_api):
            before = self.latest_revision()
            response = admin_api.delete(self.detail(self.names[1]))
            assert response.status_code == 204, response.content
            assert admin_api.get(self.detail(self.names[1])).status_code == 404
            self.assert_api_revision(before)

        def test_an_invalid_body_names_the_field_and_writes_nothing(self, admin_api):
            before = self.latest_revision()
            invalid, field = self.invalid_data()
            response = admin_api.post(self.url, invalid, format="json")
            assert response.status_code == 400
            assert field in [error["field"] for error in response.json()["errors"]]
            assert self.latest_revision() == before

        # --- everyone else ---------------------------------------------------------------------------

        def test_anonymous_callers_are_refused(self, client_for):
            anonymous = client_for(None)
            assert anonymous.get(self.url).status_code in (401, 403)
            assert anonymous.post(self.url, self.create_data, format="json").status_code in (401, 403)
            assert "errors" in anonymous.get(self.url).json()

        def test_without_permission_nothing_is_visible_or_writable(self, client_for):
            client = client_for(person("nobody"))
            listed = client.get(self.url)  # nested lists answer 404 when their pool is invisible
            assert listed.status_code == 404 or names_of(listed) == []
            assert client.get(self.detail(self.names[0])).status_code == 404
            assert client.put(self.detail(self.names[0]), self.update_data, format="json").status_code == 404
            # A name one may not see does not exist for one, created or not: 404 either way (SEMANTICS §7.1).
            assert client.post(self.url, self.create_data, format="json").status_code == 404

        def test_a_reader_may_read_but_not_write(self, client_for):
            client = client_for(person("reader", "osmo-user"))
            assert client.get(self.detail(self.names[0])).status_code == 200
            response = client.put(self.detail(self.names[0]), self.update_data, format="json")
            assert response.status_code == 403
            assert client.delete(self.detail(self.names[0])).status_code == 403

        def test_permission_on_one_object_shows_only_that_one(self, client_for):
            granted = role("just-one", *self.one_object_policies())
            client = client_for(person("scoped", granted))
            assert client.get(self.detail(self.names[0])).status_code == 200
            assert client.get(self.hidden_url()).status_code == 404


class TestBackends(APITestCases.ConfigObjectTests):
    url = "/api/backends/"
    config_type = ConfigType.BACKEND
    names = ("alpha", "beta")
    create_data = {"name": "gamma", "kind": "simulated", "seed": 3, "size": 4}
    update_data = {"kind": "file", "description": "replaced"}
    patch_data = {"description": "patched"}

    def setup_objects(self, actor):
        services.config_apply(
            changes={ConfigType.BACKEND: {name: {"kind": "file"} for name in self.names}}, actor=actor
        )

    def one_object_policies(self):
        return [{"actions": ["backend:Read"], "resources": ["backend/alpha"]}]

    def test_status_is_shown_but_not_part_of_the_body(self, admin_api, two_pools):
        response = admin_api.get(self.detail(two_pools.name))
        assert response.json()["status"]["last_sync_at"] is not None
        assert "status" not in self.shown(two_pools.name)


class TestPools(APITestCases.ConfigObjectTests):
    url = "/api/pools/"
    config_type = ConfigType.POOL
    names = ("team-a", "team-b")
    create_data = {"name": "team-c", "backend": "test-cluster", "common_pod_template": ["a"], "platforms": {"p": {}}}
    update_data = {"backend": "test-cluster", "common_pod_template": ["b"], "description": "replaced"}
    patch_data = {"description": "patched", "enable_maintenance": True}

    def one_object_policies(self):
        return [{"actions": ["pool:Read"], "resources": ["pool/team-a"]}]

    def test_patch_merges_platforms_and_null_removes_one(self, admin_api):
        added = admin_api.patch(self.detail("team-a"), {"platforms": {"cpu": {"description": "CPU"}}}, format="json")
        assert set(added.json()["platforms"]) == {"gpu", "cpu"}
        removed = admin_api.patch(self.detail("team-a"), {"platforms": {"gpu": None}}, format="json")
        assert set(removed.json()["platforms"]) == {"cpu"}


class TestPodTemplates(APITestCases.ConfigObjectTests):
    url = "/api/pod_templates/"
    config_type = ConfigType.POD_TEMPLATE
    names = ("t1", "t2")
    create_data = {"name": "t3", "spec": {"nodeSelector": {"zone": "b"}}}
    update_data = {"spec": {"nodeSelector": {"zone": "c"}}, "metadata": {"labels": {"x": "y"}}}
    patch_data = {"spec": {"nodeSelector": {"zone": "d"}}}

    def setup_objects(self, actor):
        services.config_apply(
            changes={ConfigType.POD_TEMPLATE: {name: {"spec": {"nodeSelector": {"zone": "a"}}} for name in self.names}},
            actor=actor,
        )

    def one_object_policies(self):
        # Templates are readable per type (config/POD_TEMPLATE): the same grant hides the other types.
        return [{"actions": ["config:Read"], "resources": ["config/POD_TEMPLATE"]}]

    def hidden_url(self):
        return "/api/resource_validations/default_cpu/"

    def invalid_data(self):
        return {"name": "t3", "spec": ["not", "an", "object"]}, "spec"

    def test_deleting_a_template_in_use_is_a_conflict_naming_the_pool(self, admin_api):
        response = admin_api.delete(self.detail("a"))
        assert response.status_code == 409
        assert "team-a" in response.json()["errors"][0]["message"]


class TestResourceValidations(APITestCases.ConfigObjectTests):
    url = "/api/resource_validations/"
    config_type = ConfigType.RESOURCE_VALIDATION
    names = ("v1", "v2")
    rule = {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "{{K8_GPU}}", "assert_message": "m"}
    create_data = {"name": "v3", "rules": [rule]}
    update_data = {"rules": [rule, {**rule, "operator": "GE", "right_operand": "0"}]}
    patch_data = {"rules": [{**rule, "operator": "NE"}]}

    def setup_objects(self, actor):
        services.config_apply(
            changes={ConfigType.RESOURCE_VALIDATION: {n: [self.rule] for n in self.names}}, actor=actor
        )

    def shown(self, name):
        return {
            "name": name,
            "rules": selectors.config_show(user=SYSTEM, config_type=self.config_type, name=name)[name],
        }

    def one_object_policies(self):
        return [{"actions": ["config:Read"], "resources": ["config/RESOURCE_VALIDATION"]}]

    def hidden_url(self):
        return "/api/pod_templates/default_user/"


class TestRoles(APITestCases.ConfigObjectTests):
    url = "/api/roles/"
    config_type = ConfigType.ROLE
    names = ("r1", "r2")
    create_data = {"name": "r3", "policies": [{"actions": ["pool:Read"], "resources": ["pool/x"]}]}
    update_data = {"policies": [{"actions": ["pool:Read"], "resources": ["pool/y"]}], "description": "replaced"}
    patch_data = {"external_roles": ["/team-a"]}

    def setup_objects(self, actor):
        services.config_apply(
            changes={ConfigType.ROLE: {n: {"policies": [{"actions": ["pool:Read"]}]} for n in self.names}}, actor=actor
        )

    def one_object_policies(self):
        return [{"actions": ["role:Read"], "resources": ["role/r1"]}]

    def test_changing_an_immutable_role_is_a_conflict(self, admin_api):
        response = admin_api.patch(self.detail("osmo-admin"), {"description": "mine"}, format="json")
        assert response.status_code == 409


class TestPlatforms(APITestCases.ConfigObjectTests):
    url = "/api/pools/team-a/platforms/"
    config_type = ConfigType.POOL
    names = ("gpu", "cpu")
    create_data = {"name": "big", "description": "big nodes", "override_pod_template": ["b"]}
    update_data = {"description": "replaced", "default_variables": {"USER_GPU": 1}}
    patch_data = {"privileged_allowed": True}

    def setup_objects(self, actor):
        services.config_update(
            config_type=ConfigType.POOL, name="team-a", data={"platforms": {"gpu": {}, "cpu": {}}}, actor=actor
        )

    def shown(self, name):
        platform = selectors.config_show(user=SYSTEM, config_type=ConfigType.POOL, name="team-a")["team-a"][
            "platforms"
        ][name]
        return {"name": name, **platform}

    def one_object_policies(self):
        return [{"actions": ["pool:Read"], "resources": ["pool/team-a"]}]

    def hidden_url(self):
        return "/api/pools/team-b/platforms/"

    def test_a_platform_is_also_listed_across_pools(self, admin_api):
        rows = admin_api.get("/api/platforms/", {"pool": "team-a"}).json()["results"]
        assert {(row["pool"], row["name"]) for row in rows} == {("team-a", "gpu"), ("team-a", "cpu")}


def test_nodes_pods_and_memberships_follow_the_visible_pools(two_pools, client_for, actor):
    granted = role("team-a-reader", {"actions": ["pool:Read"], "resources": ["pool/team-a"]})
    client = client_for(person("bob", granted))
    assert names_of(client.get("/api/nodes/")) == ["n1", "n2"]
    assert client.get("/api/nodes/n3/").status_code == 404
    assert [row["name"] for row in client.get("/api/pods/").json()["results"]] == ["train-1"]
    rows = client.get("/api/memberships/").json()["results"]
    assert {(row["node"], row["pool"], row["platform"]) for row in rows} == {
        ("n1", "team-a", "gpu"),
        ("n2", "team-a", "gpu"),
    }
    everything = client_for(person("reader", "osmo-user"))
    assert names_of(everything.get("/api/nodes/")) == ["n1", "n2", "n3", "n4"]


def test_a_node_name_shared_by_two_backends_needs_the_backend(two_pools, cluster, admin_api):
    cluster([node("n1")], name="other-cluster")
    assert admin_api.get("/api/nodes/n1/").status_code == 400
    assert admin_api.get("/api/nodes/n1/", {"backend": "other-cluster"}).json()["backend"] == "other-cluster"


def test_filters_and_ordering_apply_to_lists(two_pools, admin_api):
    assert names_of(admin_api.get("/api/pools/", {"q": "team-b"})) == ["team-b"]
    assert [row["name"] for row in admin_api.get("/api/nodes/", {"ordering": "-gpu"}).json()["results"]][-1] == "n4"
    page = admin_api.get("/api/nodes/", {"limit": 2}).json()
    assert page["count"] == 4 and len(page["results"]) == 2 and page["next"]
    invalid = admin_api.get("/api/backends/", {"kind": "nonsense"})
    assert invalid.status_code == 400 and invalid.json()["errors"][0]["field"] == "kind"
