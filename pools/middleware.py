"""Requests refused before anything reads them (SEMANTICS §7.3), and bounded while they run (§7.4).

Django refuses a body past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (or a form with too many fields) by raising
while it is read, which happens in CSRF's check before any view runs; with ``DEBUG`` on it then answers
its debug page. This middleware answers first, and cleanly: 413 for a body that is too large, 400 for a
form Django will not parse, and 400 for a NUL character in the URL or a form (PostgreSQL cannot store or
even compare text holding one, so it would fail in the database). Under ``/api/`` the answer has the API's
error shape; pages get a short text.

``StatementCapMiddleware`` caps every SQL statement a request handler runs on PostgreSQL
(``statement_timeout``): a search or a page that would make the database work for minutes is stopped after
``GPUPOOL_STATEMENT_TIMEOUT_MS`` and answers 503 saying so, never a 500 and never a hung worker. A database out
of reach (stopped, or paused past ``DB_CONNECT_TIMEOUT``) answers 503 with ``Retry-After`` too: the API's error
shape under ``/api/``, a plain page elsewhere.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import OperationalError, connection
from django.http import Http404, HttpResponse, JsonResponse, QueryDict
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.defaults import page_not_found

from pools.api.errors import DATABASE_AWAY, DATABASE_RETRY_SECONDS, database_away, errors_body

API_PREFIX = "/api/"
# What answers in the API's shape (JSON errors), never with a page.
NOT_PAGES = (API_PREFIX, "/accounts/api/", "/metrics")


def _declared_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _holds_nul(texts: Iterable[str]) -> bool:
    return any("\x00" in text for text in texts)


def _texts(query: QueryDict) -> Iterable[str]:
    return (text for key, values in query.lists() for text in (key, *values))


def _refusal(request, status: int, message: str) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(errors_body([("", message)]), status=status)
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def _too_large(request) -> HttpResponse:
    return _refusal(request, 413, f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes")


class RequestLimitsMiddleware:
    """413 for a body over the upload limit, 400 for NUL characters or a form Django refuses to parse."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and _declared_length(request) > limit:
            return _too_large(request)
        if _holds_nul([request.path, *_texts(request.GET)]):
            return _refusal(request, 400, "the URL must not contain NUL characters")
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        # Pages' forms are parsed here, where Django's refusal can still be answered; the API parses its own
        # bodies (pools.api.parsers) and answers in its own shape.
        if request.path.startswith(API_PREFIX):
            return None
        try:
            fields = list(_texts(request.POST))
        except RequestDataTooBig:
            return _too_large(request)
        except (TooManyFieldsSent, TooManyFilesSent) as exc:
            return _refusal(request, 400, f"the form cannot be read: {exc}")
        if _holds_nul(fields):
            return _refusal(request, 400, "the form must not contain NUL characters")
        return None


# PostgreSQL's SQLSTATE for a statement cancelled, by statement_timeout here.
QUERY_CANCELED = "57014"
_CAPPED = "_gpupool_statement_cap"


def statement_cap_ms() -> int:
    return int(settings.GPUPOOL["STATEMENT_TIMEOUT_MS"])


def cap_statements() -> None:
    """Put this thread's open PostgreSQL connection under ``statement_timeout``, once per connection.

    The ``SET`` goes to the driver's connection directly: it is the connection's setting, not one of the
    handler's queries (which the query-count tests count).
    """
    cap = (connection.connection, statement_cap_ms())
    if cap[0] is None or getattr(connection, _CAPPED, None) == cap:
        return
    cap[0].execute(f"SET statement_timeout = {cap[1]:d}")
    setattr(connection, _CAPPED, cap)


def _capped(execute, sql, params, many, context):
    """Every statement of a request runs on a capped connection (capped when the request first uses it: a request
    that reads nothing opens none)."""
    cap_statements()
    return execute(sql, params, many, context)


def statement_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL stopping a statement that ran past ``statement_timeout``."""
    cause = exc.__cause__ if isinstance(exc, OperationalError) else None
    return getattr(cause, "sqlstate", None) == QUERY_CANCELED


def statement_cancelled_message() -> str:
    return (
        f"the database stopped this request after {statement_cap_ms() / 1000:g} s; "
        "nothing was changed: narrow the search or the filters and try again"
    )


class StatementCapMiddleware:
    """Caps the SQL statements of every request; a statement stopped by the cap answers 503, saying so."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if connection.vendor != "postgresql":
            return self.get_response(request)
        with connection.execute_wrapper(_capped):
            return self.get_response(request)

    def process_exception(self, request, exception):
        if statement_cancelled(exception):
            response = _refusal(request, 503, statement_cancelled_message())
        elif database_away(exception):  # refused, or no answer within the connect timeout (config/settings.py)
            response = _refusal(request, 503, DATABASE_AWAY)
        else:
            return None
        response["Retry-After"] = str(DATABASE_RETRY_SECONDS)
        return response


def server_error(request):
    """``handler500``: a failure that no view or middleware answered. The database out of reach, wherever it
    showed (a middleware reading the session, say), is a 503 with ``Retry-After`` (the API's shape under
    ``/api/``); anything else is Django's own 500 page."""
    exception = sys.exc_info()[1]
    if exception is not None and database_away(exception):
        response = _refusal(request, 503, DATABASE_AWAY)
        response["Retry-After"] = str(DATABASE_RETRY_SECONDS)
        return response
    return defaults.server_error(request)


class NotFoundPageMiddleware:
    """The console's own "Not found" page (``404.html``, with its navigation) with ``DEBUG`` on too.

    With ``DEBUG`` on, Django answers a 404 with its technical page, which lists every route and reads as a broken
    product; a hidden object would even look different from a missing one. Under ``DEBUG`` this answers a path no
    route matches, and a page's ``Http404``, with the page people get in production. The API keeps its JSON 404s.
    Off ``DEBUG`` it does nothing: Django's ``handler404`` already renders the same page.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if settings.DEBUG and not request.path.startswith(NOT_PAGES):
            try:
                resolve(request.path_info, getattr(request, "urlconf", None))
            except Resolver404 as exc:
                return page_not_found(request, exc)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if settings.DEBUG and isinstance(exception, Http404) and not request.path.startswith(NOT_PAGES):
            return page_not_found(request, exception)
        return None
