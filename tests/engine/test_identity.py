"""SEMANTICS §7, identity: IdP groups and roles map to roles; sync_mode decides what a login changes."""

from pools.engine.identity import RoleMapping, claim_values, group_values, reconcile_roles, roles_from_claims

ROLES = [
    RoleMapping("osmo-admin", external_roles=("gpu-admins",)),
    RoleMapping("osmo-team-a", external_roles=("/team-a",), sync_mode="force"),
    RoleMapping("osmo-sim", sync_mode="import"),
    RoleMapping("osmo-frozen", external_roles=("frozen",), sync_mode="ignore"),
]


def test_a_top_level_group_counts_by_its_path_and_its_plain_name():
    assert group_values("/team-a") == {"/team-a", "team-a"}
    assert group_values("team-a") == {"team-a"}
    assert claim_values({"groups": ["/osmo-admin"]}) == {"/osmo-admin", "osmo-admin"}


def test_a_nested_group_counts_only_as_its_whole_path():
    assert claim_values({"groups": ["/org/team-a"]}) == {"/org/team-a"}
    assert group_values("/") == {"/"}


def test_a_subgroup_named_like_a_role_does_not_grant_it():
    # Whoever may create groups under /team-a must not become an administrator by naming one osmo-admin.
    assert roles_from_claims({"groups": ["/team-a/osmo-admin"]}, ROLES) == set()
    assert roles_from_claims({"groups": ["/team-a/gpu-admins"]}, ROLES) == set()
    assert roles_from_claims({"groups": ["/org/team-a"]}, ROLES) == set()


def test_a_nested_group_grants_a_role_when_its_path_is_listed_in_external_roles():
    roles = [RoleMapping("osmo-admin", external_roles=("/team-a/osmo-admin",))]
    assert roles_from_claims({"groups": ["/team-a/osmo-admin"]}, roles) == {"osmo-admin"}
    assert roles_from_claims({"groups": ["/team-b/osmo-admin"]}, roles) == set()


def test_a_top_level_group_or_a_plain_value_named_like_a_role_grants_it():
    assert roles_from_claims({"groups": ["/osmo-sim"]}, ROLES) == {"osmo-sim"}
    assert roles_from_claims({"groups": ["osmo-sim"]}, ROLES) == {"osmo-sim"}


def test_a_claim_value_equal_to_a_role_name_grants_it():
    assert roles_from_claims({"roles": ["osmo-sim"]}, ROLES) == {"osmo-sim"}


def test_a_value_listed_in_external_roles_grants_the_role():
    assert roles_from_claims({"groups": ["/gpu-admins"]}, ROLES) == {"osmo-admin"}
    assert roles_from_claims({"groups": ["/team-a"]}, ROLES) == {"osmo-team-a"}


def test_roles_come_from_realm_access_and_this_clients_resource_access_only():
    claims = {
        "realm_access": {"roles": ["osmo-sim"]},
        "resource_access": {"console": {"roles": ["gpu-admins"]}, "other-app": {"roles": ["frozen"]}},
    }
    assert roles_from_claims(claims, ROLES, client_id="console") == {"osmo-sim", "osmo-admin"}


def test_malformed_claims_grant_nothing_and_do_not_crash():
    claims = {"groups": "not-a-list", "roles": [1, None], "realm_access": "x", "resource_access": {"c": 3}}
    assert roles_from_claims(claims, ROLES, client_id="c") == set()


def test_import_only_adds_roles_at_login():
    change = reconcile_roles(held={"osmo-sim"}, granted=set(), roles=ROLES)
    assert change.roles == {"osmo-sim"} and not change.removed
    assert reconcile_roles(held=set(), granted={"osmo-sim"}, roles=ROLES).added == {"osmo-sim"}


def test_force_also_removes_roles_the_idp_no_longer_gives():
    change = reconcile_roles(held={"osmo-team-a", "osmo-sim"}, granted=set(), roles=ROLES)
    assert change.removed == {"osmo-team-a"} and change.roles == {"osmo-sim"}


def test_ignore_leaves_the_role_alone_either_way():
    assert reconcile_roles(held=set(), granted={"osmo-frozen"}, roles=ROLES).roles == frozenset()
    assert reconcile_roles(held={"osmo-frozen"}, granted=set(), roles=ROLES).roles == {"osmo-frozen"}


def test_roles_not_managed_here_are_kept():
    assert "local-only" in reconcile_roles(held={"local-only"}, granted=set(), roles=ROLES).roles
