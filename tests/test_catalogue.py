"""The permission catalogue is the only place permissions are named, and every door is in it (§7.1)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from django.utils.html import escape
from people import person, poolctl

from pools.doors import http_doors, undeclared_routes
from pools.engine.doors import DOORS
from pools.engine.permissions import PERMISSIONS
from pools.management.commands.poolctl import cli_doors

ROOT = Path(__file__).resolve().parent.parent
# An action as policies spell them: "pool:Read", "workflow:*", "*:Read" (not the pattern syntax "*:*").
ACTION_LITERAL = re.compile(r"""["']([a-z]+:(\*|[A-Z][A-Za-z]+)|\*:[A-Z][A-Za-z]+)["']""")


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


def test_every_route_of_the_console_names_its_door_of_the_catalogue():
    assert undeclared_routes() == []
    assert len(http_doors()) > 140


def test_every_door_names_permissions_of_the_catalogue_and_no_http_path():
    for door in DOORS:
        # Each says what it needs: a permission, or that its rows (or its object) are seen object by object.
        assert door.public or door.signed_in or door.reads or door.acts or door.rows or door.object, door
        assert door.reads is None or door.reads in PERMISSIONS
        assert door.acts is None or door.acts in PERMISSIONS
        assert "/" not in door.key and " " not in door.key, door.key
    assert "/api/" not in (ROOT / "pools" / "engine" / "doors.py").read_text()


def test_every_door_of_the_catalogue_is_reached_by_a_page_an_endpoint_or_a_verb():
    reached = {entry.key for entry in http_doors()} | {entry.key for entry in cli_doors()}
    assert sorted(door.key for door in DOORS if door.key not in reached) == []


# What decides a permission: the gate's functions, a queryset's restrict, raising the gate's refusals.
DECIDES = re.compile(
    r"\b(allows|require|require_visible|visible|user_can|is_system|sees_whole_fleet)\(|\.restrict\(|PermissionDenied|"
    r"raise AccessDenied|can_update_config|can_change_quotas|can_change_unit"
)
# The base classes and the error map: they put the gate in front of every door and turn its refusals into answers.
GATE_KEEPERS = ("pools/views/base.py", "pools/api/base.py", "pools/api/errors.py")


def test_no_page_endpoint_or_verb_decides_a_permission_itself():
    """The gate decides before a door's code runs; services decide writes, querysets restrict reads. A page, an
    endpoint or a verb that decides for itself is a defect: two copies would disagree, one would forget."""
    files = subprocess.check_output(["git", "ls-files", "pools/views", "pools/api", "pools/management"], cwd=ROOT)
    offenders = [
        f"{name}:{number}: {line.strip()}"
        for name in files.decode().split()
        if name.endswith(".py") and name not in GATE_KEEPERS
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1)
        if DECIDES.search(line)
    ]
    assert offenders == []


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
