"""What every page and htmx fragment of the console shares, so that a page is a declaration.

A page names its door in the catalogue (``pools.engine.doors``), its template (and its htmx fragment's), and the
one selector or service it calls. The base classes here do the rest, the same for every page:

- sign-in (a redirect to the sign-in page), and the gate (``pools.gate.door_check``): a 404 for an object the
  caller may not see, a 403 for a change they may not make, before the page's own code runs;
- ``offers``: which controls to show (whether the caller may make the change behind them), decided by the gate;
- the htmx fragment of the same URL, with ``Vary: HX-Request``;
- a list's filters (its FilterSet's parameters), its Table and its CSV and JSON exports;
- the one error-to-status map (``pools.answers``).

A page never checks a permission, parses a number or builds a row itself.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.views import View

from .. import gate, services
from ..answers import status_of
from ..choices import ChangeOrigin
from ..engine.doors import Door, door
from ..engine.errors import AccessDenied, ConfigError, NotFound
from ..engine.permissions import Permission
from ..tables.base import EXPORTS, Table


class DoorPage(View):
    """A page (and its htmx fragment) behind one door of the catalogue, or one per HTTP method."""

    door: ClassVar[str] = ""
    doors: ClassVar[Mapping[str, str]] = {}  # {"GET": key, "POST": key} when the methods' doors differ
    # A page over several config types names its door by a URL parameter: ("kind", {"templates": key, ...}).
    door_by: ClassVar[tuple[str, Mapping[str, str]] | None] = None
    template_name: ClassVar[str] = ""
    fragment_name: ClassVar[str] = ""  # the htmx fragment the same URL answers (Vary: HX-Request)
    # The controls the page offers: context name -> (permission, target), the target a config type, a literal or
    # "{param}" (a URL parameter). The gate decides them; the door behind each control decides again.
    offers: ClassVar[Mapping[str, tuple[Permission, str]]] = {}

    @classmethod
    def door_for(cls, method: str, kwargs: Mapping[str, Any] | None = None) -> Door | None:
        """The door a request by ``method`` (with the URL's ``kwargs``) goes through, None for another method."""
        if method not in cls.allowed_methods():
            return None
        if cls.door_by is not None:
            param, keys = cls.door_by
            key = keys.get((kwargs or {}).get(param, ""), "")
        else:
            key = cls.doors.get(method) or cls.door
        return door(key) if key else None

    @classmethod
    def allowed_methods(cls) -> list[str]:
        if cls.doors:
            return list(cls.doors)
        return [method.upper() for method in ("get", "post") if hasattr(cls, method)]

    def dispatch(self, request, *args, **kwargs):
        method = "GET" if request.method == "HEAD" else request.method
        if method not in self.allowed_methods():
            return HttpResponseNotAllowed(self.allowed_methods())
        entered = self.door_for(method, kwargs)
        if entered is None:
            raise Http404("no such config type")
        if not entered.public and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        try:
            gate.door_check(request.user, entered, self.parameters(kwargs))
            response = super().dispatch(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(str(exc)) from None
        except AccessDenied as exc:
            raise PermissionDenied(str(exc)) from None
        except ConfigError as exc:  # bad input (a revision number out of range…): the one map decides the status
            return render(request, "refused.html", {"exception": str(exc)}, status=refusal_status(exc))
        if self.fragment_name:
            patch_vary_headers(response, ["HX-Request"])
        return response

    def parameters(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """What the gate reads of the request: the form's and the query's fields, the URL's over them."""
        fields = {**self.request.GET.dict(), **(self.request.POST.dict() if self.request.method == "POST" else {})}
        return {**fields, **kwargs}

    @property
    def actor(self) -> services.Actor:
        return services.Actor.of(self.request.user, ChangeOrigin.WEB)

    def offer_values(self) -> dict[str, Any]:
        """What an offer's target may name in braces: the URL's parameters."""
        return dict(self.kwargs)

    def offered(self) -> dict[str, bool]:
        user, values = self.request.user, self.offer_values()
        return {
            name: gate.allowed(user, permission, target.format(**values) if "{" in target else target)
            for name, (permission, target) in self.offers.items()
        }

    def page(self, context: Mapping[str, Any], *, status: int = 200, template: str = "") -> HttpResponse:
        """The page, or its fragment for an htmx request, with the controls it offers."""
        name = template or (self.fragment_name if self.fragment_name and self.request.htmx else self.template_name)
        return render(self.request, name, {**self.offered(), **context}, status=status)


def refusal_status(error: Exception) -> int:
    """The status a page answers for a refused change it shows on the form (400, 404, 409...)."""
    return status_of(error) or 400


class ListPage(DoorPage, abc.ABC):
    """A list: its rows from one selector (filtered by ``filterset``'s parameters), shown through ``table``, and
    exported as CSV and JSON (``?format=csv``, ``?format=json``) when the page names an ``export_name``.

    A bad parameter is a 400 naming it: on the page as a message, in an export as its text.
    """

    table: ClassVar[Table | None] = None
    filterset: ClassVar[type | None] = None
    # Per row, whether to offer a control: flag -> (permission, the row's field naming its target). The gate
    # decides; the door behind the control decides again.
    row_offers: ClassVar[Mapping[str, tuple[Permission, str]]] = {}
    export_name: ClassVar[str] = ""
    export_headings: ClassVar[bool] = False  # the CSV's header: the headings rather than the keys

    @abc.abstractmethod
    def rows(self) -> list:
        """The list's rows, for the caller, as the selector gives them (``ConfigError`` for a bad parameter)."""

    def context(self, rows: list) -> dict[str, Any]:
        """What the page shows besides its rows."""
        return {}

    def exported(self, rows: list) -> list:
        """The rows an export writes (the page's own rows by default)."""
        return rows

    def filter_values(self) -> dict[str, str]:
        """What the query string gives each filter, for the filter form to show again."""
        if self.filterset is None:
            return {}
        return {key: self.request.GET.get(key, "").strip() for key in self.filterset.base_filters}

    def get(self, request, *args, **kwargs):
        error = ""
        try:
            rows = self.rows()
        except ConfigError as exc:
            if isinstance(exc, NotFound):
                raise
            rows, error = [], str(exc)
        for flag, (permission, field) in self.row_offers.items():
            for row in rows:
                row[flag] = gate.allowed(request.user, permission, row[field])
        fmt = request.GET.get("format")
        if self.export_name and fmt in EXPORTS:
            if error:
                return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
            return self.table.download(self.exported(rows), fmt, self.export_name, headings=self.export_headings)
        context = {"rows": rows, "table": self.table, "filters": self.filter_values(), "error": error}
        return self.page({**context, **self.context(rows)}, status=400 if error else 200)
