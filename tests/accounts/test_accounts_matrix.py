"""The access matrix: people × pools × endpoints (pages, API, selectors). Nothing leaks, nothing needed is refused.

Roles decide what a person sees (SEMANTICS.md §7): ``VISIBLE`` says, for each person, which pools their roles
give them, and the policy engine must agree. Adding an endpoint is one line in ``GATES`` (who gets through,
what a refusal answers) or ``LISTINGS`` (how to read pool names off the response). Their expectations come
from ``accounts.access``, the same policy engine the selectors use, so the matrix checks that every surface
agrees with the policies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import AnonymousUser, Group
from django.test import Client
from guardian.core import ObjectPermissionChecker
from keycloak_realm import POOLS
from kube_objects import node
from people import person

from accounts import services as access_services
from accounts.access import SYSTEM, is_console_admin, user_can, user_role_names
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.errors import NotFound
from pools.models import Pool
from pools.services.access import POOL_PERMISSIONS

ANONYMOUS = "anonymous"
PEOPLE = {
    # username: (roles, flags)
    "root": ((), {"is_superuser": True, "is_staff": True}),
    "alice": (("osmo-admin",), {}),
    "bob": (("osmo-team-a",), {}),
    "dave": (("osmo-team-a", "no-gpu"), {}),
    "reader": (("osmo-user",), {}),
    "staff": ((), {"is_staff": True}),
    "carol": ((), {}),
}
# What each person's roles give them: the pools they see and those they may run workloads in. A generated
# pool role reaches every pool with its prefix; a Deny in another role (no-gpu) wins over it.
VISIBLE = {
    "root": POOLS,
    "alice": POOLS,
    "bob": ["team-a", "team-a-gpu"],
    "dave": ["team-a"],
    "reader": POOLS,
    "staff": [],
    "carol": [],
}
USABLE = {**VISIBLE, "reader": []}  # osmo-user runs workloads only in the pool named "default"


def signed_in(user, pool) -> bool:
    return user.is_authenticated


def console_admin(user, pool) -> bool:
    return is_console_admin(user)


def admin_of(permission: str) -> Callable:
    """Console administrators whose roles (or Django permissions) give ``permission``."""
    return lambda user, pool: is_console_admin(user) and user.has_perm(permission)


def admin_refusal(user) -> int:
    return 403 if is_console_admin(user) else 302


def reads_pool(user, pool) -> bool:
    return user_can(user, "pool:Read", f"pool/{pool}").allowed


@dataclass(frozen=True)
class Gate:
    """A URL (``{pool}`` stands for each pool) that ``may`` decides; refusals answer these statuses.

    ``refused`` is the status for a signed-in person who may not, or a function of that person.
    """

    url: str
    may: Callable
    anonymous: int
    refused: int | Callable
    api: bool = False


@dataclass(frozen=True)
class Listing:
    """A URL listing pools; ``names`` reads the pool names off the response."""

    url: str
    names: Callable
    api: bool = False


def html_pools(response) -> set[str]:
    return set(re.findall(r'data-pool="([^"]+)"', response.content.decode()))


def api_pools(response) -> set[str]:
    body = json.loads(response.content)
    rows = body["results"] if isinstance(body, dict) and "results" in body else body
    return {row["name"] for row in rows}


def me_pools(response) -> set[str]:
    return {row["name"] for row in json.loads(response.content)["pools"]}


GATES = [
    Gate("/accounts/profile/", signed_in, anonymous=302, refused=302),
    # The admin sends non-administrators to its login (302), which answers a signed-in one 403; an
    # administrator whose roles lack a model's permission gets 403 on that model's pages.
    Gate("/admin/", console_admin, anonymous=302, refused=302),
    Gate("/admin/pools/pool/", admin_of("pools.view_pool"), anonymous=302, refused=admin_refusal),
    Gate("/admin/accounts/role/", admin_of("accounts.view_role"), anonymous=302, refused=admin_refusal),
    Gate("/admin/auth/user/", admin_of("auth.view_user"), anonymous=302, refused=admin_refusal),
    Gate("/pools/{pool}/", reads_pool, anonymous=302, refused=404),
    Gate("/api/pools/{pool}/", reads_pool, anonymous=401, refused=404, api=True),
    Gate("/accounts/api/me/", signed_in, anonymous=401, refused=403, api=True),
]
LISTINGS = [
    Listing("/", html_pools),
    Listing("/accounts/profile/", html_pools),
    Listing("/api/pools/", api_pools, api=True),
    Listing("/accounts/api/me/", me_pools, api=True),
]


@pytest.fixture
def people(team_pools):
    users = {}
    for name, (roles, flags) in PEOPLE.items():
        users[name] = person(name, *roles, **flags)
    users[ANONYMOUS] = AnonymousUser()
    return users


def clients_for(user, api: bool):
    """How this person reaches the URL: their browser session, and for API URLs a personal token too."""
    if not user.is_authenticated:
        return {"anonymous": Client()}
    session = Client()
    session.force_login(user)
    if not api:
        return {"session": session}
    _, secret = access_services.api_token_create(user=user, name="matrix", lifetime=parse("1d"))
    return {"session": session, "token": Client(headers={"authorization": f"Bearer {secret}"})}


def parse(text):
    from accounts.tokens import parse_lifetime

    return parse_lifetime(text)


def test_gates_let_through_exactly_who_the_policies_allow(people):
    failures = []
    for gate in GATES:
        for pool in POOLS if "{pool}" in gate.url else [None]:
            url = gate.url.format(pool=pool)
            for name, user in people.items():
                allowed = user.is_authenticated and gate.may(user, pool)
                for way, client in clients_for(user, gate.api).items():
                    status = client.get(url).status_code
                    refused = gate.refused(user) if callable(gate.refused) else gate.refused
                    expected = 200 if allowed else (gate.anonymous if not user.is_authenticated else refused)
                    if status != expected:
                        failures.append(f"{name} ({way}) GET {url}: {status}, expected {expected}")
    assert not failures, "\n".join(failures)


def test_listings_show_exactly_the_visible_pools(people):
    failures = []
    for listing in LISTINGS:
        for name, user in people.items():
            if not user.is_authenticated:
                continue
            expected = {pool for pool in POOLS if reads_pool(user, pool)}
            for way, client in clients_for(user, listing.api).items():
                response = client.get(listing.url)
                shown = listing.names(response) if response.status_code == 200 else f"status {response.status_code}"
                if shown != expected:
                    failures.append(f"{name} ({way}) GET {listing.url}: {shown}, expected {sorted(expected)}")
    assert not failures, "\n".join(failures)


def test_the_policies_give_each_person_the_pools_their_roles_say(people):
    for name, expected in VISIBLE.items():
        user = people[name]
        assert [pool for pool in POOLS if reads_pool(user, pool)] == expected, name
        assert [pool for pool in POOLS if user_can(user, "workflow:Create", f"pool/{pool}").allowed] == USABLE[name]
    assert not any(reads_pool(people[ANONYMOUS], pool) for pool in POOLS)


def test_selectors_agree_with_the_policies_for_every_person_and_pool(people):
    for name, user in {**people, "the operator": SYSTEM}.items():
        visible = {pool for pool in POOLS if user is SYSTEM or reads_pool(user, pool)}
        assert {row["name"] for row in selectors.pool_list(user=user)} == visible, name
        assert {row["pool"] for row in selectors.resource_list(user=user) if row["pool"]} == visible, name
        for pool in POOLS:
            if pool in visible:
                assert selectors.pool_get(pool, user=user).name == pool
            else:
                with pytest.raises(NotFound):
                    selectors.pool_get(pool, user=user)
                with pytest.raises(NotFound):
                    selectors.pool_render(pool_name=pool, user=user)


def guardian_disagreements(people) -> list[str]:
    """Where guardian's object permissions on pools and the policy decisions differ."""
    differences = []
    for name, user in people.items():
        if not user.is_authenticated:
            continue
        checker = ObjectPermissionChecker(user)
        for pool in Pool.objects.all():
            for codename, action in POOL_PERMISSIONS.items():
                granted = checker.has_perm(codename, pool)
                allowed = user_can(user, *action.on(pool.name)).allowed
                if granted != allowed:
                    differences.append(f"{name} {codename} {pool.name}: guardian {granted}, policy {allowed}")
    return differences


def test_guardian_permissions_agree_with_the_policies_and_follow_role_changes(people, actor):
    services.pool_permissions_sync()
    assert not guardian_disagreements(people)
    assert ObjectPermissionChecker(people["dave"]).has_perm("use_pool", Pool.objects.get(name="team-a"))
    assert not ObjectPermissionChecker(people["dave"]).has_perm("view_pool", Pool.objects.get(name="team-a-gpu"))

    # The team's role moves to the team-b pools: the hook config changes call recomputes everything.
    changes = {
        ConfigType.ROLE: {
            "osmo-team-a": {"policies": [{"actions": ["workflow:*", "pool:Read"], "resources": ["pool/team-b*"]}]}
        }
    }
    services.config_apply(changes=changes, actor=actor)
    fresh = {
        name: type(user).objects.get(pk=user.pk) if user.is_authenticated else user for name, user in people.items()
    }
    assert not guardian_disagreements(fresh)
    assert ObjectPermissionChecker(fresh["bob"]).has_perm("view_pool", Pool.objects.get(name="team-b"))
    assert not ObjectPermissionChecker(fresh["bob"]).has_perm("view_pool", Pool.objects.get(name="team-a"))


def test_a_users_role_change_recomputes_their_pool_permissions_and_the_admin_cannot_change_roles(people, client):
    services.pool_permissions_sync()
    carol = people["carol"]
    access_services.user_roles_set(principal=people["root"], username="carol", roles=["osmo-team-a"])
    assert ObjectPermissionChecker(carol).has_perm("view_pool", Pool.objects.get(name="team-a"))

    # The Django admin shows a user's roles but does not change them: that would go around the gate.
    client.force_login(people["root"])
    page = client.get(f"/admin/auth/user/{carol.pk}/change/")
    assert page.status_code == 200 and "groups" not in page.context["adminform"].form.fields


def test_unused_nodes_are_listed_only_to_readers_of_the_whole_fleet(people, cluster):
    cluster([node("n3", labels={"team": "x"})], name="spare-cluster")  # in no pool: an UNUSED row
    assert "n3" not in {row["node"] for row in selectors.resource_list(user=people["bob"])}
    assert {row["node"] for row in selectors.resource_list(user=people["reader"])} == {"n1", "n2", "n3"}


def test_everyone_signed_in_holds_osmo_default_and_superusers_hold_osmo_admin(people):
    assert user_role_names(people["carol"]) == {"osmo-default"}
    assert user_role_names(people[ANONYMOUS]) == set()
    assert "osmo-admin" in user_role_names(people["root"]) and is_console_admin(people["root"])
    assert not is_console_admin(people["bob"])


def test_each_role_is_a_group_created_and_deleted_with_it(db, actor):
    services.pool_role_generate(name="osmo-sim", actor=actor)
    assert Group.objects.filter(name="osmo-sim").exists()
    services.config_delete(config_type=ConfigType.ROLE, name="osmo-sim", actor=actor)
    assert not Group.objects.filter(name="osmo-sim").exists()
