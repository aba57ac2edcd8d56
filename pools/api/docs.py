"""The API's own description: its OpenAPI schema, Swagger UI and Redoc (served from the sidecar package, no request
leaving the server), and the one error shape for a URL under ``/api/`` that is no endpoint."""

from __future__ import annotations

from django.http import HttpResponse
from django.template import engines
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from pools.engine.errors import NotFound

from .base import ApiView

# The stock Redoc page loads web fonts from Google; this one keeps everything on the server.
REDOC_PAGE = """{% extends "drf_spectacular/redoc.html" %}{% block head %}
<title>{{ title }}</title><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<style>body { margin: 0; padding: 0; }</style>{% endblock head %}"""


class SchemaView(SpectacularAPIView):
    """The OpenAPI description (public: it holds no data)."""

    doors = {"GET": "api.schema"}


class SwaggerView(SpectacularSwaggerSplitView):
    """Swagger UI, its script a file of its own (the Content-Security-Policy allows no inline script)."""

    doors = {"GET": "api.schema"}


class RedocView(SpectacularRedocView):
    """Redoc for the schema, served from the sidecar package with no request leaving the server."""

    doors = {"GET": "api.schema"}

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        page = engines["django"].from_string(REDOC_PAGE)
        return HttpResponse(page.render(response.data, request))


class UnknownEndpointView(ApiView, APIView):
    """Any other URL under ``/api/``: a 404 in the error shape rather than Django's HTML page."""

    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def dispatch(self, request, *args, **kwargs):
        return super().dispatch(request, *args, **kwargs)

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise NotFound(f"no API endpoint at {request.path}")
