"""SEMANTICS §7, identity: IdP groups and roles map to roles; sync_mode decides what a login changes."""

from pools.engine.identity import RoleMapping, claim_values, reconcile_roles, roles_from_claims

ROLES = [
    RoleMapping("osmo-admin", external_roles=("gpu-admins",)),
    RoleMapping("osmo-team-a", external_roles=("/team-a",), sync_mode="force"),
    RoleMapping("osmo-sim", sync_mode="import"),
    RoleMapping("osmo-frozen", external_roles=("frozen",), sync_mode="ignore"),
]


def test_keycloak_full_group_paths_are_accepted_and_also_count_by_plain_name():
    assert claim_values({"groups": ["/org/team-a"]}) == {"/org/team-a", "org/team-a", "team-a"}


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
