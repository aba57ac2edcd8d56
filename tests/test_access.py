"""Roles decide what a user sees (SEMANTICS.md §7): lists and lookups agree, a cross-role Deny hides a pool."""

import pytest
from django.contrib.auth.models import Group
from kube_objects import node

from accounts.access import SYSTEM, is_console_admin, user_can, user_role_names
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import NotFound


@pytest.fixture
def pools(cluster, actor):
    cluster([node("n1", labels={"team": "a"}), node("n2", labels={"team": "b"}), node("n3", labels={"team": "x"})])
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "a": {"spec": {"nodeSelector": {"team": "a"}}},
                "b": {"spec": {"nodeSelector": {"team": "b"}}},
            },
            ConfigType.POOL: {
                "team-a": {"backend": "test-cluster", "common_pod_template": ["a"]},
                "team-a-gpu": {"backend": "test-cluster", "common_pod_template": ["a"]},
                "team-b": {"backend": "test-cluster", "common_pod_template": ["b"]},
            },
        },
        actor=actor,
    )
    services.pool_role_generate(name="osmo-team-a", actor=actor)
    services.config_apply(
        changes={
            ConfigType.ROLE: {
                "no-gpu": {"policies": [{"effect": "Deny", "actions": ["*"], "resources": ["pool/team-a-gpu"]}]}
            }
        },
        actor=actor,
    )


def user_with(django_user_model, name, *roles, **flags):
    user = django_user_model.objects.create_user(name, password="pw", **flags)
    user.groups.set(Group.objects.filter(name__in=roles))
    return user


def names(rows):
    return sorted(row["name"] for row in rows)


def test_a_generated_pool_role_shows_only_the_pools_with_its_prefix(pools, django_user_model):
    bob = user_with(django_user_model, "bob", "osmo-team-a")
    assert names(selectors.pool_list(user=bob)) == ["team-a", "team-a-gpu"]
    assert user_can(bob, "workflow:Create", "pool/team-a-gpu").allowed
    with pytest.raises(NotFound):
        selectors.pool_get("team-b", user=bob)


def test_a_deny_in_another_role_hides_the_pool_from_lists_and_requests_alike(pools, django_user_model):
    bob = user_with(django_user_model, "bob", "osmo-team-a", "no-gpu")
    assert names(selectors.pool_list(user=bob)) == ["team-a"]
    assert not user_can(bob, "workflow:Create", "pool/team-a-gpu").allowed
    with pytest.raises(NotFound):
        selectors.pool_render(pool_name="team-a-gpu", user=bob)


def test_resource_rows_follow_the_visible_pools(pools, django_user_model):
    bob = user_with(django_user_model, "bob", "osmo-team-a")
    rows = selectors.resource_list(user=bob)
    assert {row["pool"] for row in rows} == {"team-a", "team-a-gpu"}
    assert "n3" not in {row["node"] for row in rows}  # UNUSED rows need resource:List
    reader = user_with(django_user_model, "reader", "osmo-user")
    assert {row["node"] for row in selectors.resource_list(user=reader)} == {"n1", "n2", "n3"}


def test_nobody_without_roles_sees_pools_and_anonymous_users_hold_nothing(pools, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    carol = user_with(django_user_model, "carol")
    assert selectors.pool_list(user=carol) == []
    assert user_role_names(carol) == {"osmo-default"}
    assert user_role_names(AnonymousUser()) == set()


def test_superusers_hold_osmo_admin_and_the_operator_cli_sees_everything(pools, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="pw")
    assert "osmo-admin" in user_role_names(root) and is_console_admin(root)
    assert (
        names(selectors.pool_list(user=root))
        == names(selectors.pool_list(user=SYSTEM))
        == ["team-a", "team-a-gpu", "team-b"]
    )
    assert not is_console_admin(user_with(django_user_model, "bob", "osmo-team-a"))


def test_each_role_is_a_group_created_and_deleted_with_it(db, actor):
    services.pool_role_generate(name="osmo-sim", actor=actor)
    assert Group.objects.filter(name="osmo-sim").exists()
    services.config_delete(config_type=ConfigType.ROLE, name="osmo-sim", actor=actor)
    assert not Group.objects.filter(name="osmo-sim").exists()
