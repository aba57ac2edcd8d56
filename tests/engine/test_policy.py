"""SEMANTICS §7: roles, policies and access decisions."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.errors import PolicyError
from pools.engine.permissions import BUILTIN_ROLES, pool_role_policy_data
from pools.engine.policy import (
    Decision,
    Policy,
    RoleDefinition,
    action_matches,
    allows_some,
    evaluate_access,
    parse_policies,
    policies_from_legacy_actions,
    resource_matches,
    ungranted,
    visible_names,
)


def role(name, *policies):
    return RoleDefinition(name, parse_policies(list(policies), role=name))


def builtin(name):
    return RoleDefinition(name, parse_policies(BUILTIN_ROLES[name]["policies"], role=name))


# parsing


def test_parse_policies_defaults_to_allow_and_canonicalises_effect():
    policies = parse_policies(
        [{"actions": ["workflow:*"], "resources": ["pool/a*"]}, {"effect": "deny", "actions": ["*"]}], role="r"
    )
    assert policies == (Policy("Allow", ("workflow:*",), ("pool/a*",)), Policy("Deny", ("*",), ()))


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        ({"effect": "Maybe", "actions": ["*"]}, "role 'r', policy 1: effect 'Maybe' must be Allow or Deny"),
        ({"actions": []}, "role 'r', policy 1: actions must list at least one action"),
        ({"actions": "workflow:Create"}, "role 'r', policy 1: actions must be a list of strings"),
        ({"actions": ["workflow"]}, "role 'r', policy 1: action 'workflow' must look like"),
        ({"actions": ["a:b:c"]}, "action 'a:b:c'"),
        ({"actions": ["*"], "resources": "pool/a"}, "resources must be a list of strings"),
        ({"actions": ["*"], "resources": [""]}, "resources must not contain an empty name"),
        ({"actions": ["*"], "extra": 1}, "unknown field 'extra'"),
        ("Allow", "must be an object"),
    ],
)
def test_bad_policies_are_rejected_naming_role_policy_and_field(policy, fragment):
    with pytest.raises(PolicyError, match=re.escape(fragment)):
        parse_policies([policy], role="r")


def test_policies_must_be_a_list():
    with pytest.raises(PolicyError, match="role 'r': policies must be a list"):
        parse_policies({"actions": ["*"]}, role="r")


# matching


@pytest.mark.parametrize(
    ("pattern", "action", "matches"),
    [
        ("*", "workflow:Create", True),
        ("*:*", "config:Update", True),
        ("workflow:*", "workflow:Cancel", True),
        ("workflow:*", "pool:Read", False),
        ("*:Read", "pool:Read", True),
        ("*:Read", "pool:List", False),
        ("workflow:Create", "workflow:Create", True),
        ("workflow:create", "WORKFLOW:Create", True),
        ("workflow:Create", "workflow:Cancel", False),
    ],
)
def test_action_patterns(pattern, action, matches):
    assert action_matches(pattern, action) is matches


@pytest.mark.parametrize(
    ("pattern", "resource", "matches"),
    [
        ("*", "pool/a", True),
        ("*", "", True),
        ("pool/*", "pool/anything", True),
        ("pool/*", "backend/x", False),
        ("pool/*", "", False),
        ("pool/team-a*", "pool/team-a", True),
        ("pool/team-a*", "pool/team-a-gpu", True),
        ("pool/team-a*", "pool/team-b", False),
        ("pool/a", "pool/a", True),
        ("pool/a", "pool/ab", False),
    ],
)
def test_resource_patterns(pattern, resource, matches):
    assert resource_matches(pattern, resource) is matches


def test_a_policy_without_resources_matches_only_unscoped_calls():
    roles = [role("r", {"actions": ["profile:*"]})]
    assert evaluate_access(roles, "profile:Read").allowed
    assert not evaluate_access(roles, "profile:Read", "pool/a").allowed


# decisions


def test_allow_names_the_deciding_role_and_policy():
    decision = evaluate_access(
        [role("osmo-team", {"actions": ["workflow:*"], "resources": ["pool/team*"]})], "workflow:Create", "pool/team-a"
    )
    assert decision == Decision(
        True, "osmo-team", 1, "Allow", "allowed by role osmo-team policy 1 (Allow workflow:* on pool/team*)"
    )


def test_within_a_role_deny_beats_allow_whatever_the_order():
    allow = {"actions": ["workflow:*"], "resources": ["pool/*"]}
    deny = {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/secret"]}
    for policies in ((allow, deny), (deny, allow)):
        decision = evaluate_access([role("osmo-x", *policies)], "workflow:Create", "pool/secret")
        assert not decision.allowed
        assert decision.effect == "Deny"
        assert decision.reason.startswith("denied by role osmo-x policy")


def test_across_roles_a_deny_in_any_role_wins():
    roles = [builtin("osmo-admin"), role("blocked", {"effect": "Deny", "actions": ["*"], "resources": ["pool/x"]})]
    decision = evaluate_access(roles, "pool:Read", "pool/x")
    assert (decision.allowed, decision.role, decision.policy_index) == (False, "blocked", 1)
    assert evaluate_access(roles, "pool:Read", "pool/y").allowed


def test_nothing_matching_is_denied():
    decision = evaluate_access([], "workflow:Create", "pool/a")
    assert decision == Decision(False, None, None, None, "no policy allows workflow:Create on pool/a")
    assert decision.as_dict()["reason"] == "no policy allows workflow:Create on pool/a"


def test_visible_names_agree_with_request_decisions_including_cross_role_deny():
    roles = [builtin("osmo-user"), role("no-b", {"effect": "Deny", "actions": ["pool:Read"], "resources": ["pool/b"]})]
    names = ["a", "b", "default"]
    assert visible_names(roles, "pool:Read", "pool", names) == ["a", "default"]
    for name in names:
        visible = name in visible_names(roles, "pool:Read", "pool", names)
        assert visible is evaluate_access(roles, "pool:Read", f"pool/{name}").allowed
    assert visible_names(roles, "workflow:Create", "pool", names) == ["default"]


def test_pool_roles_grant_workflows_and_read_on_the_prefix():
    prefix_role = RoleDefinition("osmo-shared", parse_policies(pool_role_policy_data("shared"), role="osmo-shared"))
    assert evaluate_access([prefix_role], "workflow:Create", "pool/shared_simulation_training_pool").allowed
    assert evaluate_access([prefix_role], "pool:Read", "pool/shared").allowed
    assert not evaluate_access([prefix_role], "pool:Update", "pool/shared").allowed
    assert not evaluate_access([prefix_role], "workflow:Create", "pool/other").allowed


# built-in roles


def test_admin_may_do_everything():
    admin = [builtin("osmo-admin")]
    assert evaluate_access(admin, "config:Update", "config/pool").allowed
    assert evaluate_access(admin, "system:Health").allowed


def test_user_reads_everything_and_runs_workflows_only_in_the_default_pool():
    user = [builtin("osmo-user")]
    assert evaluate_access(user, "pool:Read", "pool/any").allowed
    assert evaluate_access(user, "pool:List").allowed
    assert evaluate_access(user, "workflow:Create", "pool/default").allowed
    assert not evaluate_access(user, "workflow:Create", "pool/other").allowed
    assert not evaluate_access(user, "config:Update", "config/pool").allowed


def test_default_role_allows_health_login_and_profile_only():
    default = [builtin("osmo-default")]
    assert all(evaluate_access(default, action).allowed for action in ("system:Health", "auth:Login", "profile:Read"))
    assert not evaluate_access(default, "pool:Read", "pool/default").allowed


def test_builtin_roles_are_described_and_parse():
    assert set(BUILTIN_ROLES) == {"osmo-admin", "osmo-user", "osmo-default", "osmo-metrics"}
    for name, definition in BUILTIN_ROLES.items():
        assert definition["description"]
        assert isinstance(definition["immutable"], bool)
        assert parse_policies(definition["policies"], role=name)


# OSMO's legacy role format


def test_legacy_actions_from_the_osmo_documentation_translate():
    seed = Path("/work/shared/seeds/osmo-pool-configuration.rst")
    if seed.exists():
        text = seed.read_text()
        body = text[text.index("$ echo '{", text.index("Pool Access Control")) + len("$ echo '") :]
        actions = json.loads(body[: body.index("}' > role_config.json") + 1])["actions"]
    else:
        actions = [
            {"base": "http", "path": "/api/pool/shared_simulation_training_pool*", "method": "post"},
            {"base": "http", "path": "http:/api/profile/*", "method": "*"},
        ]
    assert policies_from_legacy_actions(actions) == (
        Policy("Allow", ("workflow:Create",), ("pool/shared_simulation_training_pool*",)),
        Policy("Allow", ("profile:*",), ()),
    )


@pytest.mark.parametrize(
    ("action", "policy"),
    [
        ({"path": "/api/pool/team*", "method": "get"}, Policy("Allow", ("pool:Read",), ("pool/team*",))),
        ({"path": "api/pool/shared*", "method": "*"}, Policy("Allow", ("*",), ("pool/shared*",))),
        ({"path": "/api/workflow", "method": "get"}, Policy("Allow", ("http:GET",), ("http:/api/workflow",))),
        ({"path": "/api/pool/a", "method": "delete"}, Policy("Allow", ("http:DELETE",), ("http:/api/pool/a",))),
    ],
)
def test_legacy_paths_map_to_pool_profile_or_generic_http_policies(action, policy):
    assert policies_from_legacy_actions([{"base": "http", **action}]) == (policy,)


def test_malformed_legacy_actions_are_policy_errors():
    with pytest.raises(PolicyError):
        policies_from_legacy_actions([{"base": "http", "method": "get"}])
    with pytest.raises(PolicyError):
        policies_from_legacy_actions("nope")


# No escalation (SEMANTICS §7.1): a role may allow only what its writer is allowed.


def policies(*items):
    return parse_policies(list(items), role="new")


def test_an_administrator_holds_everything_any_role_can_allow():
    admin = [builtin("osmo-admin")]
    assert ungranted(admin, policies({"actions": ["*"], "resources": ["*"]}, {"actions": ["system:Health"]})) == []


def test_config_writers_cannot_make_an_administrator_role():
    writer = [role("config", {"actions": ["config:Read", "config:Update"], "resources": ["config/*"]})]
    assert ungranted(writer, policies({"actions": ["*:*"], "resources": ["*"]})) == ["*:* on *"]
    assert ungranted(writer, policies({"actions": ["config:Read"], "resources": ["config/POOL"]})) == []


@pytest.mark.parametrize(
    ("granted", "held"),
    [
        ("pool/team-a-gpu", True),
        ("pool/team-a*", True),
        ("pool/team-a-gpu*", True),
        ("pool/team*", False),
        ("pool/*", False),
        ("*", False),
        ("backend/team-a", False),
    ],
)
def test_a_prefix_holds_exactly_the_names_and_prefixes_it_covers(granted, held):
    writer = [role("team", {"actions": ["pool:*"], "resources": ["pool/team-a*"]})]
    missing = ungranted(writer, policies({"actions": ["pool:Read"], "resources": [granted]}))
    assert (missing == []) is held


@pytest.mark.parametrize(
    ("action", "held"),
    [("pool:Read", True), ("*:Read", True), ("pool:Update", False), ("pool:*", False), ("*", False)],
)
def test_action_patterns_hold_only_what_they_contain(action, held):
    writer = [role("reader", {"actions": ["*:Read"], "resources": ["*"]})]
    assert (ungranted(writer, policies({"actions": [action], "resources": ["pool/a"]})) == []) is held


def test_unscoped_calls_are_held_only_by_unscoped_policies_or_everything():
    writer = [role("health", {"actions": ["system:Health"]})]
    assert ungranted(writer, policies({"actions": ["system:Health"]})) == []
    assert ungranted(writer, policies({"actions": ["system:Health"], "resources": ["*"]})) == ["system:Health on *"]
    everything = [role("all", {"actions": ["system:*"], "resources": ["*"]})]
    assert ungranted(everything, policies({"actions": ["system:Metrics"]})) == []


def test_a_writers_deny_must_be_kept_by_the_role_they_write():
    writer = [
        role("reader", {"actions": ["pool:Read"], "resources": ["pool/*"]}),
        role("not-secret", {"effect": "Deny", "actions": ["pool:Read"], "resources": ["pool/secret*"]}),
    ]
    assert ungranted(writer, policies({"actions": ["pool:Read"], "resources": ["pool/*"]})) == ["pool:Read on pool/*"]
    assert ungranted(writer, policies({"actions": ["pool:Read"], "resources": ["pool/public"]})) == []
    kept = policies(
        {"actions": ["pool:Read"], "resources": ["pool/*"]},
        {"effect": "Deny", "actions": ["pool:*"], "resources": ["pool/secret*"]},
    )
    assert ungranted(writer, kept) == []
    narrower = policies(
        {"actions": ["pool:Read"], "resources": ["pool/*"]},
        {"effect": "Deny", "actions": ["pool:Read"], "resources": ["pool/secret-1"]},
    )
    assert ungranted(writer, narrower) == ["pool:Read on pool/*"]


def test_a_deny_of_another_action_does_not_matter():
    writer = [
        role("reader", {"actions": ["pool:Read"], "resources": ["pool/*"]}),
        role("no-runs", {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/*"]}),
    ]
    assert ungranted(writer, policies({"actions": ["pool:Read"], "resources": ["pool/*"]})) == []


def test_actions_compare_without_case_and_a_roles_denies_need_no_holding():
    writer = [role("reader", {"actions": ["POOL:read"], "resources": ["pool/a"]})]
    assert ungranted(writer, policies({"actions": ["pool:Read"], "resources": ["pool/a"]})) == []
    assert ungranted([], policies({"effect": "Deny", "actions": ["*"], "resources": ["*"]})) == []


_ACTIONS = st.sampled_from(["*", "pool:*", "*:Read", "pool:Read", "pool:Update", "config:Read", "workflow:Create"])
_RESOURCES = st.sampled_from(["*", "pool/*", "pool/a*", "pool/ab", "pool/b", "config/POOL", "config/*", None])
_POLICY = st.builds(
    lambda effect, actions, resources: {
        "effect": effect,
        "actions": actions,
        **({"resources": [r for r in resources if r]} if any(resources) else {}),
    },
    st.sampled_from(["Allow", "Allow", "Deny"]),
    st.lists(_ACTIONS, min_size=1, max_size=2),
    st.lists(_RESOURCES, min_size=1, max_size=2),
)
_REQUESTS = [
    (action, resource)
    for action in ("pool:Read", "pool:Update", "config:Read", "workflow:Create", "other:Read")
    for resource in ("pool/a", "pool/ab", "pool/abc", "pool/b", "config/POOL", "config/ROLE", "")
]


@given(writer=st.lists(_POLICY, max_size=4), new=st.lists(_POLICY, max_size=4))
def test_a_role_without_ungranted_pairs_allows_nothing_its_writer_may_not_do(writer, new):
    writer_roles = [role("writer", *writer)]
    new_role = role("new", *new)
    if ungranted(writer_roles, new_role.policies):
        return
    for action, resource in _REQUESTS:
        if evaluate_access([new_role], action, resource).allowed:
            assert evaluate_access(writer_roles, action, resource).allowed, (action, resource)


# some object of a type: what a link of the navigation is offered by

SOME_ROLES = {
    "everything": [role("r", {"actions": ["*:*"], "resources": ["*"]})],
    "a prefix": [role("r", {"actions": ["pool:Read"], "resources": ["pool/team-a*"]})],
    "one pool": [role("r", {"actions": ["pool:*"], "resources": ["pool/team-a"]})],
    "a short prefix": [role("r", {"actions": ["*:Read"], "resources": ["po*"]})],
    "another type": [role("r", {"actions": ["pool:Read"], "resources": ["backend/*"]})],
    "another action": [role("r", {"actions": ["workflow:*"], "resources": ["pool/*"]})],
    "unscoped only": [role("r", {"actions": ["pool:Read"]})],
    "denied whole": [
        role("r", {"actions": ["pool:Read"], "resources": ["pool/team-a*"]}),
        role("d", {"effect": "Deny", "actions": ["pool:*"], "resources": ["pool/*"]}),
    ],
    "denied in part": [
        role("r", {"actions": ["pool:Read"], "resources": ["pool/team-*"]}),
        role("d", {"effect": "Deny", "actions": ["pool:Read"], "resources": ["pool/team-a*"]}),
    ],
    "denied the one": [
        role("r", {"actions": ["pool:Read"], "resources": ["pool/team-a"]}),
        role("d", {"effect": "Deny", "actions": ["*"], "resources": ["pool/team-a"]}),
    ],
}
SOME_EXPECTED = {
    "everything": True,
    "a prefix": True,
    "one pool": True,
    "a short prefix": True,
    "another type": False,
    "another action": False,
    "unscoped only": False,
    "denied whole": False,
    "denied in part": True,
    "denied the one": False,
}


@pytest.mark.parametrize("case", SOME_ROLES)
def test_allows_some_object_of_a_type(case):
    assert allows_some(SOME_ROLES[case], "pool:Read", "pool") is SOME_EXPECTED[case]


@pytest.mark.parametrize("case", SOME_ROLES)
@given(names=st.lists(st.text(alphabet="team-ab", min_size=1, max_size=8), max_size=6))
def test_any_object_allowed_means_some_is_allowed(case, names):
    """Never a link hidden from someone who may open some object behind it."""
    roles = SOME_ROLES[case]
    if any(evaluate_access(roles, "pool:Read", f"pool/{name}").allowed for name in [*names, "team-a", "team-b"]):
        assert allows_some(roles, "pool:Read", "pool")
