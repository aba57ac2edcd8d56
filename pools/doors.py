"""Every way in, with what it needs: each page, htmx fragment, export, REST endpoint and ``poolctl`` verb, listed from
their own declarations (the door each names in the catalogue, ``pools.engine.doors``), never written twice.

``http_doors()`` walks the URLconf: each route's view declares its doors per method (pages: ``door``, ``doors`` or
``door_by``; the API: ``doors`` per action or method). ``poolctl access doors`` and ``docs/api.md`` show them, the
access-matrix test sends each one as every kind of person, and a route whose view names no door fails
``tests/test_catalogue.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver, resolve

from .engine.doors import Door, door
from .engine.permissions import Permission

# Routes that are no door of the console: the Django admin (its model permissions map onto the catalogue, see
# accounts.backends.policy_request_for), signing in and out, the API's catch-all 404, the icon's address and the
# probes of the process's health (config/health.py: public, they show nothing of the console).
NOT_DOORS = (
    "admin/",
    "accounts/login/",
    "accounts/logout/",
    "accounts/oidc/",
    "accounts/profile/tokens/",
    "favicon.ico",
    "healthz",
    "readyz",
)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Entry:
    """One way in: ``GET /api/pools/{name}/`` (or a ``poolctl`` verb) and the door of the catalogue it goes through."""

    door: str
    through: Door

    @property
    def method(self) -> str:
        return self.door.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.door.split(" ", 1)[1]

    @property
    def key(self) -> str:
        return self.through.key

    @property
    def reads(self) -> Permission | None:
        return self.through.reads

    @property
    def acts(self) -> Permission | None:
        return self.through.acts

    @property
    def object(self) -> str:
        name = self.through.object
        return name if not name or name.isupper() else f"{{{name}}}"

    @property
    def acts_on(self) -> str:
        return self.through.acts_on

    @property
    def rows(self) -> bool:
        return self.through.rows

    @property
    def signed_in(self) -> bool:
        return self.through.signed_in

    @property
    def public(self) -> bool:
        return self.through.public

    @property
    def note(self) -> str:
        return self.through.note or self.through.summary


def _routes(patterns, prefix: str = "") -> Iterator[tuple[str, object]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), pattern.callback


def route_template(route: str) -> str:
    """A route as the doors' list writes it: ``/api/pools/{name}/``."""
    route = route.replace("^", "").replace("$", "")
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
    return "/" + route


def view_doors(callback) -> dict[str, list[tuple[dict, str]]]:
    """``{method: [(URL parameters, door key)]}`` a route's view declares (several for a page over config kinds)."""
    view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view is None:  # a function view names its doors on itself
        return {method: [({}, key)] for method, key in getattr(callback, "doors", {}).items()}
    actions = getattr(callback, "actions", None)  # a viewset's route: {"get": "list", ...}
    declared = getattr(view, "doors", {}) or {}
    found: dict[str, list[tuple[dict, str]]] = {}
    if actions:
        for method, action in actions.items():
            # DRF adds "head" to a route's actions on its first request: a HEAD is the GET's door, not one more
            if method != "head" and action in declared:
                found[method.upper()] = [({}, declared[action])]
        return found
    door_by = getattr(view, "door_by", None)
    for method in METHODS:
        if door_by is not None and method.lower() in _handlers(view):
            param, keys = door_by
            found[method] = [({param: value}, key) for value, key in keys.items()]
        elif method in declared:
            found[method] = [({}, declared[method])]
        elif getattr(view, "door", "") and method.lower() in _handlers(view):
            found[method] = [({}, view.door)]
    return found


def _handlers(view) -> set[str]:
    return {method for method in ("get", "post", "put", "patch", "delete") if hasattr(view, method)}


def _console_routes():
    """``(route, view)`` of every door route: none of ``NOT_DOORS``, nor DRF's format variants and catch-all 404."""
    for route, callback in _routes(get_resolver().url_patterns):
        if not (route.startswith(NOT_DOORS) or "(?P<format>" in route or route == r"api/^[\s\S]*$"):
            yield route, callback


def http_doors() -> list[Entry]:
    """Every page, fragment, export and endpoint with the door it goes through, in the URLconf's order."""
    entries = []
    for route, callback in _console_routes():
        path = route_template(route)
        for method, variants in view_doors(callback).items():
            for parameters, key in variants:
                shown = path
                for name, value in parameters.items():
                    shown = shown.replace(f"{{{name}}}", value)
                entries.append(Entry(f"{method} {shown}", door(key)))
    return entries


def page_door(path: str) -> Door | None:
    """The door a GET of the page at ``path`` goes through, as its view declares it (None for no page)."""
    match = resolve(path)
    door_for = getattr(getattr(match.func, "view_class", None), "door_for", None)
    return door_for("GET", match.kwargs) if door_for is not None else None


def undeclared_routes() -> list[str]:
    """Routes of the console whose view names no door (each is a defect: ``tests/test_catalogue.py``)."""
    return [route_template(route) for route, callback in _console_routes() if not view_doors(callback)]


def markdown(entries: list[Entry]) -> str:
    """The doors as the Markdown table ``docs/api.md`` holds (``poolctl access doors``)."""

    def permission(value: Permission | None, on: str) -> str:
        if value is None:
            return ""
        where = f" on `{value.resource_type}/{on}`" if value.resource_type and on else ""
        return f"`{value.action}`{where}" if where else f"`{value.action}`"

    rows = ["| door | catalogue | sees (else 404) | does (else 403) | note |", "|---|---|---|---|---|"]
    for entry in entries:
        if entry.public:
            sees = "anyone"
        elif entry.signed_in:
            sees = "signed in"
        else:
            sees = permission(entry.reads, "" if entry.rows else entry.object)
            if entry.rows and entry.reads is not None:
                sees += " (rows)"
        cells = [f"`{entry.door}`", f"`{entry.key}`", sees, permission(entry.acts, entry.acts_on), entry.note]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)
