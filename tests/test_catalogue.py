"""The permission catalogue is the only place permissions are named, and every door is in it (§7.1)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.html import escape
from people import person, poolctl

from pools.engine.permissions import DOORS, PERMISSIONS

ROOT = Path(__file__).resolve().parent.parent
# An action as policies spell them: "pool:Read", "workflow:*", "*:Read" (not the pattern syntax "*:*").
ACTION_LITERAL = re.compile(r"""["']([a-z]+:(\*|[A-Z][A-Za-z]+)|\*:[A-Z][A-Za-z]+)["']""")
# Routes that are not doors of the console: the Django admin (model permissions map onto the catalogue,
# see accounts.backends.policy_request_for), sign-in and sign-out, and the API's catch-all 404.
NOT_DOORS = ("admin/", "accounts/login/", "accounts/logout/", "accounts/oidc/", "accounts/profile/tokens/")


def test_no_module_but_the_catalogue_types_an_action():
    files = subprocess.check_output(["git", "ls-files", "pools", "accounts", "config", "templates"], cwd=ROOT)
    offenders = []
    for name in files.decode().split():
        if not name.endswith((".py", ".html")) or name == "pools/engine/permissions.py" or "/migrations/" in name:
            continue
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            if ACTION_LITERAL.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def _template(route: str) -> str:
    """A route as the catalogue writes it: ``/api/pools/{name}/``."""
    route = route.replace("^", "").replace("$", "")
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
    return "/" + route


def test_every_route_of_the_console_is_a_door_of_the_catalogue():
    doors = {door.path for door in DOORS if door.path.startswith("/")}
    routes = {
        _template(route)
        for route in _routes(get_resolver().url_patterns)
        if not route.startswith(NOT_DOORS) and "(?P<format>" not in route and route != r"api/^[\s\S]*$"
    }
    assert sorted(routes - doors) == []
    assert sorted(doors - routes) == []


def test_every_door_names_permissions_of_the_catalogue():
    for door in DOORS:
        # Each says what it needs: a permission, or that its rows (or its object) are seen object by object.
        assert door.public or door.signed_in or door.reads or door.acts or door.rows or door.object, door
        assert door.reads is None or door.reads in PERMISSIONS
        assert door.acts is None or door.acts in PERMISSIONS


def test_the_api_documentation_lists_every_door_as_the_catalogue_has_it(db):
    document = (ROOT / "docs" / "api.md").read_text()
    shown = document.split("<!-- doors:start -->\n", 1)[1].split("\n<!-- doors:end -->", 1)[0]
    assert shown == poolctl("access", "doors").strip()


def test_the_access_page_lists_every_permission(client, db):
    client.force_login(person("root", password=None, is_superuser=True))
    page = client.get("/access/").content.decode()
    assert "<title>Access · GPU Pool Console</title>" in page
    for permission in PERMISSIONS:
        assert f'id="permission-{permission.key}"' in page and escape(permission.summary) in page
