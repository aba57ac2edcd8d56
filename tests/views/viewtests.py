"""Tests generated for every page of the console from a few base classes (NetBox's ``ViewTestCases``).

Each ``Test...`` class of ``test_web_pages.py`` names one door of the permission catalogue (a page, an htmx
fragment or a form's post), the object it opens and what it sends. The bases send it as four callers and
expect what the catalogue says:

- anonymous: sent to sign in, and nothing of the estate in the answer;
- signed in without roles: 404 for an object, 403 for a change, otherwise an empty page, and nothing shown
  but what the request itself named;
- holding one object (a pool, a role, a backend, a user): that object's page, and 404 for another's (or 403
  when the permission is held for another config type than the door's);
- the query ceiling: at most ``max_queries`` queries, stated per page, for an administrator and for the holder
  of one object, and the same number after the estate grew by eight pools.

The bases live inside ``PageTestCases`` so pytest does not collect them.
"""

from __future__ import annotations

import re
from typing import ClassVar

import pytest
from console_data import add_team_pools
from django.contrib.auth import get_user_model
from people import person, role

from accounts.access import user_role_names
from accounts.models import Role
from pools.doors import Entry as Door
from pools.doors import http_doors
from pools.models import Backend, PodTemplate, Pool, ResourceValidation

# Doors of the REST API and of scrapers: their tests are the API's. Every other HTTP door is a page, an
# htmx fragment or a form's post.
API = ("/api/", "/accounts/api/", "/metrics")
PAGE_DOORS = {door.door: door for door in http_doors() if not door.path.startswith(API)}
SUCCESS = {200, 201, 286, 302}  # 286: htmx's "done, stop polling"

READ_TEAM_A = {"actions": ["pool:Read"], "resources": ["pool/team-a"]}
MORE_POOLS = [f"team-extra-{index}" for index in range(8)]


def without_roles(door: Door) -> int:
    """What a signed-in caller holding no role gets, as the catalogue says: the object they may not see does
    not exist (404), a change they may not make is refused (403), a list is empty. Pod templates and validations
    are seen type by type: their door's object is the type (``POD_TEMPLATE``), hidden whole from a caller without
    roles."""
    if door.signed_in:
        return 200
    seen_by_type = door.object.isupper()
    if door.object and (seen_by_type or door.object in door.path or door.method == "POST"):  # URL, type, form
        return 404
    if door.acts:
        return 403
    return 200


def estate_names() -> set[str]:
    """The names of everything in the estate: pools, backends, templates, validations, roles and users.

    The backend named ``default`` is left out: the word is everywhere in the pages' own text.
    """
    return {
        *Pool.objects.values_list("name", flat=True),
        *Backend.objects.exclude(name="default").values_list("name", flat=True),
        *PodTemplate.objects.values_list("name", flat=True),
        *ResourceValidation.objects.values_list("name", flat=True),
        *Role.objects.values_list("name", flat=True),
        *get_user_model().objects.values_list("username", flat=True),
    }


def names_in(names, text: str) -> set[str]:
    """Those of ``names`` that ``text`` holds as a whole name (``team-a`` is not in ``team-a-gpu``)."""
    return {name for name in names if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)}


def shown(names, response, request: str) -> list[str]:
    """Those of ``names`` the response shows that the request itself did not name."""
    return sorted(names_in(names, response.content.decode()) - names_in(names, request))


class PageTestCases:
    """Containers of the shared tests (not collected: the class name does not start with ``Test``)."""

    registry: ClassVar[dict[str, list[type]]] = {}

    class Door:
        """One door of the catalogue, sent as each kind of caller.

        A subclass sets ``door`` and, as the door needs them: ``params`` (path parameters of the object the
        holder of ``grant`` sees, or fields of the body that name it), ``hidden`` (the same for an object they
        do not see), ``shows`` (text of that object on its page), ``visible`` (the pools ``grant`` shows; every
        other pool is in ``hidden_names``), ``body()`` for a POST, ``query`` and ``htmx`` for a variant of the
        page, and ``max_queries``.
        """

        door: str
        query: str = ""
        htmx: bool = False
        params: dict = {}
        hidden: dict | None = None
        grant: tuple[dict, ...] = (READ_TEAM_A,)
        granted: int = 200  # what the holder of ``grant`` gets on ``params``
        refused: int = 404  # and on ``hidden``
        shows: tuple[str, ...] = ()
        visible: tuple[str, ...] = ("team-a",)
        max_queries: int | None = None

        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            if "door" in cls.__dict__:
                assert cls.door in PAGE_DOORS, f"{cls.__name__}: {cls.door} is not a page of the catalogue"
                PageTestCases.registry.setdefault(cls.door, []).append(cls)

        @pytest.fixture(autouse=True)
        def estate(self, console):
            """The demo with pools team-a and team-a-gpu; then what the door's object needs."""
            self.arrange()

        def arrange(self) -> None:
            """Objects the door needs beyond the demo (a role, a user, a revision)."""

        # --- what is sent ------------------------------------------------------------------------------------

        @property
        def catalogued(self) -> Door:
            return PAGE_DOORS[self.door]

        def path(self, params: dict) -> str:
            return self.catalogued.path.format(**params) + self.query

        def body(self, params: dict) -> dict:
            """The body of a POST, valid so that what answers is the gate and not the validation."""
            return {}

        def send(self, client, params: dict):
            headers = {"HX-Request": "true"} if self.htmx else {}
            if self.catalogued.method == "GET":
                return client.get(self.path(params), headers=headers)
            return client.post(self.path(params), self.body(params), headers=headers)

        def request_text(self, params: dict) -> str:
            return f"{self.path(params)} {self.body(params) if self.catalogued.method == 'POST' else ''}"

        def hidden_names(self) -> set[str]:
            """What the holder of ``grant`` must not see: by default every pool but ``visible``."""
            return set(Pool.objects.exclude(name__in=self.visible).values_list("name", flat=True))

        # --- people ------------------------------------------------------------------------------------------

        def holder(self):
            return person("holder", role("holder-role", *self.grant), password=None)

        # --- the tests ---------------------------------------------------------------------------------------

        def test_anonymous_callers_are_sent_to_sign_in(self, client):
            response = self.send(client, self.params)
            assert response.status_code == 302, response.content[:500]
            assert response["Location"].startswith("/accounts/login/?next=")
            assert shown(estate_names(), response, "") == []

        def test_without_roles_nothing_is_shown(self, client):
            nobody = person("nobody", password=None)
            client.force_login(nobody)
            response = self.send(client, self.params)
            assert response.status_code == without_roles(self.catalogued), response.content[:500]
            own = {nobody.username, *user_role_names(nobody)}
            leaked = shown(estate_names() - own, response, self.request_text(self.params))
            assert leaked == [], leaked

        def test_holding_one_object_shows_that_one_only(self, client):
            client.force_login(self.holder())
            response = self.send(client, self.params)
            assert response.status_code == self.granted, response.content[:500]
            text = response.content.decode()
            assert [part for part in self.shows if part not in text] == []
            assert shown(self.hidden_names(), response, self.request_text(self.params)) == []
            if self.hidden is not None:
                refused = self.send(client, self.hidden)
                assert refused.status_code == self.refused, refused.content[:500]
                assert shown(self.hidden_names(), refused, self.request_text(self.hidden)) == []

    class ForAConfigType(Door):
        """A door whose change is allowed per config type (``config:Update`` on ``config/POOL``)."""

        elsewhere: tuple[dict, ...]  # the policies of someone holding the permission for another type

        def test_holding_the_permission_for_another_type_is_not_enough(self, client):
            client.force_login(person("elsewhere", role("elsewhere-role", *self.elsewhere), password=None))
            # 403, or 404 when the door's object (a name to create) is one the holder may not see either.
            assert self.send(client, self.params).status_code in (403, 404)

    class Page(Door):
        """A page or an htmx fragment: the doors above and a ceiling on the queries it makes."""

        def test_queries_stay_under_the_ceiling_and_do_not_grow_with_the_estate(
            self, client, django_assert_max_num_queries
        ):
            assert self.max_queries is not None, f"{type(self).__name__} states no max_queries"
            people = {"admin": person("root", password=None, is_superuser=True), "holder": self.holder()}
            counts = {}
            for grow in (False, True):
                if grow:
                    add_team_pools(*MORE_POOLS)
                for name, user in people.items():
                    client.force_login(user)
                    self.send(client, self.params)  # the first request fills the process's caches
                    with django_assert_max_num_queries(self.max_queries) as queries:
                        response = self.send(client, self.params)
                    assert response.status_code in SUCCESS, (name, response.content[:500])
                    counts[name, grow] = len(queries)
            assert {name: counts[name, True] for name in people} == {name: counts[name, False] for name in people}
