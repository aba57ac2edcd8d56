"""What every endpoint of the API shares, so that an endpoint is a declaration.

An endpoint names its door of the catalogue per action (a viewset's ``list``, ``retrieve``…) or per HTTP method,
the one selector or service it calls, its FilterSet and, for a listing with a CSV, its Table. The base classes here
do the rest, the same for every endpoint: authentication (401 without a credential), the gate before the
endpoint's own code (``DoorPermission``: 404 for an object the caller may not see, 403 for a change they may not
make), JSON in and out within the bounds every door shares, pagination, the one error shape (``errors.py``),
and the CSV of a listing from its Table (``?format=csv``).
"""

from __future__ import annotations

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
from pools.tables import Table

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
        if entered is None or entered.public:
            return True
        if not (request.user and request.user.is_authenticated):
            return False
        gate.door_check(request.user, entered, view.gate_parameters(entered))
        return True


class CSVRenderer(BaseRenderer):
    """``?format=csv`` of a listing: its view's Table (``view.table``), every cell inert."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        view = (renderer_context or {}).get("view")
        rows = data if isinstance(data, list) else []
        return view.csv_table().csv(rows).encode(self.charset)


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

    def csv_table(self) -> Table:
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


def filter_parameters(filterset_class, **extra: str) -> list[OpenApiParameter]:
    """The query parameters of a FilterSet for the schema of a view that applies it in its selector."""
    parameters = [
        OpenApiParameter(name, str, description=str(field.label or name))
        for name, field in filterset_class.base_filters.items()
    ]
    return parameters + [OpenApiParameter(name, str, description=text) for name, text in extra.items()]
