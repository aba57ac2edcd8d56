"""What ``OPTIONS`` answers on every API URL: the endpoint's name, description and formats.

DRF's default also describes the fields a POST or PUT takes by building the view's serializer, which the
endpoints that take documents (``/api/configs/<TYPE>/``) do not have, and which here would only repeat
the OpenAPI schema (``/api/schema/``), where the request shapes are described in full.
"""

from rest_framework.metadata import SimpleMetadata


class EndpointMetadata(SimpleMetadata):
    """``SimpleMetadata`` without the per-method field descriptions."""

    def determine_actions(self, request, view):
        return {}
