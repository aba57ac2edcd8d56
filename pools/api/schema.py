"""OpenAPI details drf-spectacular cannot infer: error responses, which paths are the API, bearer tokens."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers


class ErrorEntrySerializer(serializers.Serializer):
    """One thing wrong: the field (a dotted path inside the body or a parameter name; empty for the request)."""

    field = serializers.CharField(allow_blank=True)
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """The one error shape of the API."""

    errors = ErrorEntrySerializer(many=True)


ERRORS_EVERYWHERE = {
    "400": "Bad input: malformed JSON, a field or parameter that does not validate",
    "401": "Not signed in (token authentication)",
    "403": "Not signed in (session) or not allowed",
    "404": "No such object, or one the caller may not see",
}
ERRORS_ON_WRITES = {"409": "The current state refuses the change (in use, built in, immutable, exists)"}
ERRORS_ON_CONDITIONAL = {"412": "If-Match names an ETag that is no longer current"}
ERRORS_ON_BODIES = {"413": "The body is larger than the server reads (DATA_UPLOAD_MAX_MEMORY_SIZE)"}


class ApiAutoSchema(AutoSchema):
    """Adds the error responses (with the error shape) that every operation of this API may answer."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        codes = dict(ERRORS_EVERYWHERE)
        if self.method in ("POST", "PUT", "PATCH", "DELETE"):
            codes.update(ERRORS_ON_WRITES)
        if self.method in ("PUT", "PATCH", "DELETE"):
            codes.update(ERRORS_ON_CONDITIONAL)
        if self.method in ("POST", "PUT", "PATCH"):
            codes.update(ERRORS_ON_BODIES)
        for code, description in codes.items():
            if code not in responses:
                response = self._get_response_for_code(ErrorSerializer, code, ["application/json"], direction)
                response["description"] = description
                responses[code] = response
        return responses


def api_paths_only(endpoints, **kwargs):
    """Preprocessing hook: the schema documents the ``/api/`` endpoints (other DRF views are the pages' helpers)."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith("/api/")]


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer gpc_...``: a personal access token (see ``accounts.authentication``)."""

    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "personalToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A personal access token (gpc_...)"}


class KeycloakBearerScheme(OpenApiAuthenticationExtension):
    """``Authorization: Bearer <JWT>``: an access token signed by the Keycloak realm."""

    target_class = "accounts.authentication.KeycloakBearerAuthentication"
    name = "keycloakBearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "A Keycloak access token"}
