"""What every endpoint of the API shares, so that an endpoint is a declaration.

An endpoint names its door of the catalogue per action (a viewset's ``list``, ``retrieve``…) or per HTTP method,
the one selector or service it calls, its FilterSet and, for a listing with a CSV, its Table. The base classes here
do the rest, the same for every endpoint: authentication (401 without a credential), the gate before the
endpoint's own code (``DoorPermission``: 404 for an object the caller may not see, 403 for a change they may not
make), JSON in and out within the bounds every door shares, pagination, the one error shape (``errors.py``),
and the CSV of a listing (``?format=csv``): its Table's columns, or else its JSON rows with nested objects as
dotted columns (``gpu.used``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter
from rest_framework.filters import OrderingFilter
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.permissions import BasePermission
from rest_framework.renderers import BaseRenderer, JSONRenderer

from pools import gate, services
from pools.choices import ChangeOrigin
from pools.engine.doors import Door, door
from pools.tables import Table, csv_text

from .errors import bad_request
from .metadata import EndpointMetadata
from .parsers import BoundedJSONParser


class Pagination(LimitOffsetPagination):
    """``?limit=&offset=``; a page holds 100 rows unless asked otherwise, 1000 at most."""

    default_limit = 100
    max_limit = 1000


class DoorPermission(BasePermission):
    """The gate, before the endpoint's code: the caller must be signed in (401 otherwise) unless the door is public;
    then ``gate.door_check`` answers 404 or 403 as the catalogue says."""

    def has_permission(self, request, view) -> bool:
        entered = view.entered_door()
        if entered is not None and entered.public:
            return True
        if not (request.user and request.user.is_authenticated):
            return False
        if entered is None:  # no door by this method: 405 for the signed-in, after the 401 for anybody else
            return True
        gate.door_check(request.user, entered, view.gate_parameters(entered))
        return True


def flat(row: Mapping, prefix: str = "") -> dict[str, Any]:
    """A JSON row as CSV cells: nested objects become dotted columns (``gpu.used``), lists and empty objects are
    written as JSON text."""
    cells: dict[str, Any] = {}
    for key, value in row.items():
        column = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            cells.update(flat(value, f"{column}."))
        elif isinstance(value, dict | list):
            cells[column] = json.dumps(value, sort_keys=True)
        else:
            cells[column] = value
    return cells


class CSVRenderer(BaseRenderer):
    """``?format=csv`` of a listing: its view's Table (``view.table``) when it has one, else its JSON rows flattened
    (the columns in order of appearance); every cell inert."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        view = (renderer_context or {}).get("view")
        rows = data if isinstance(data, list) else []
        table = view.csv_table()
        if table is not None:
            return table.csv(rows).encode(self.charset)
        cells = [flat(row) for row in rows]
        columns = list(dict.fromkeys(column for row in cells for column in row))
        return csv_text(columns, ([row.get(column) for column in columns] for row in cells)).encode(self.charset)


class ApiView:
    """What every endpoint of this API shares: its doors, JSON in and out, filters, ordering, pagination."""

    parser_classes = [BoundedJSONParser]
    metadata_class = EndpointMetadata
    renderer_classes = [JSONRenderer]
    filter_backends = [DjangoFilterBackend, OrderingFilter]
    pagination_class = Pagination
    permission_classes = [DoorPermission]

    # The endpoint's doors: {action or HTTP method: door key}.
    doors: ClassVar[Mapping[str, str]] = {}
    # A listing's Table, for ``?format=csv``.
    table: ClassVar[Table | None] = None

    def entered_door(self) -> Door | None:
        key = self.doors.get(getattr(self, "action", None) or "") or self.doors.get(self.request.method)
        return door(key) if key else None

    def gate_parameters(self, entered: Door) -> dict[str, Any]:
        """What the gate reads of the request: the URL's parameters over the query string's; the body's fields
        only when the door's object or target is named there (a create's ``name``)."""
        parameters = {**self.request.query_params.dict(), **self.kwargs}
        wanted = {entered.object, entered.acts_on.strip("{}")} - {""}
        if wanted - parameters.keys() and self.request.method in ("POST", "PUT", "PATCH"):
            data = self.request.data
            if isinstance(data, dict):
                parameters = {**{k: v for k, v in data.items() if isinstance(v, str)}, **parameters}
        return parameters

    def csv_table(self) -> Table | None:
        return self.table

    def handle_exception(self, exc):
        # Errors are JSON whatever format a listing was asked in (?format=csv): one error shape for all.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)

    def actor(self) -> services.Actor:
        return services.Actor.of(self.request.user, ChangeOrigin.API)

    def change_options(self) -> dict:
        """The revision's description and tags, from the query string."""
        return {
            "description": self.request.query_params.get("description", ""),
            "tags": [tag for tag in self.request.query_params.getlist("tag") if tag.strip()],
        }

    def body(self) -> dict:
        data = self.request.data
        if not isinstance(data, dict):
            raise bad_request("the request body must be a JSON object")
        return dict(data)


def names_parameter(request, key: str) -> list[str]:
    """A list parameter given repeated (``?pools=a&pools=b``) or comma-separated (``?pools=a,b``)."""
    return [name.strip() for value in request.query_params.getlist(key) for name in value.split(",") if name.strip()]


NAMES_PARAMETER = "names, repeated or comma-separated"

# The query parameters ``ApiView.change_options`` reads, for the schema of every endpoint that writes a revision.
CHANGE_PARAMETERS = [
    OpenApiParameter("description", str, description="why the change is made (kept on the revision)"),
    OpenApiParameter("tag", str, many=True, description="tags for the revision (repeat the parameter)"),
]


def filter_parameters(filterset_class, **extra: str) -> list[OpenApiParameter]:
    """The query parameters of a FilterSet for the schema of a view that applies it in its selector."""
    parameters = [
        OpenApiParameter(name, str, description=str(field.label or name))
        for name, field in filterset_class.base_filters.items()
    ]
    return parameters + [OpenApiParameter(name, str, description=text) for name, text in extra.items()]
