"""Request bodies refused before anything reads them (SEMANTICS §7.3).

Django refuses a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (or a form with too many fields) by raising
while it is read, which happens in CSRF's check before any view runs; with ``DEBUG`` on it then answers
its debug page. This middleware answers first, and cleanly: 413 for a body that is too large (in the
API's error shape under ``/api/``, as a short text elsewhere), 400 for a form Django will not parse.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpResponse, JsonResponse

from pools.api.errors import errors_body

API_PREFIX = "/api/"


def _declared_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _refusal(request, status: int, message: str) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(errors_body([("", message)]), status=status)
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def _too_large(request) -> HttpResponse:
    return _refusal(request, 413, f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes")


class RequestLimitsMiddleware:
    """413 for a body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``; 400 for a page's form Django refuses."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and _declared_length(request) > limit:
            return _too_large(request)
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        # Pages' forms are parsed here, where Django's refusal can still be answered; the API parses its own
        # bodies (pools.api.parsers) and answers in its own shape.
        if request.path.startswith(API_PREFIX):
            return None
        try:
            request.POST  # noqa: B018 -- parsing is the point
        except RequestDataTooBig:
            return _too_large(request)
        except (TooManyFieldsSent, TooManyFilesSent) as exc:
            return _refusal(request, 400, f"the form cannot be read: {exc}")
        return None
