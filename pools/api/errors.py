"""One error shape for the whole API: ``{"errors": [{"field": "...", "message": "..."}]}``.

The services raise ``ConfigError`` (its ``problems`` carry the field paths) or ``NotFound``; DRF raises its
own exceptions for bad JSON, missing credentials and the like. The handler here turns all of them into
the same body, so a script reads one shape whatever went wrong: 400 bad input, 401/403 credentials,
404 unknown or invisible, 405 method, 409 conflict, 412 stale ``If-Match``, 413 a body too large, 503 (with
``Retry-After``) while the database is out of reach.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from pools.choices import TYPE_LABELS, ConfigType
from pools.engine.errors import AccessDenied, ConfigError, EngineError, NotFound, Problem, Stale
from pools.engine.errors import Conflict as ServiceConflict
from pools.inventory.records import InventoryError


class ConfigProblems(exceptions.APIException):
    """A rejected change or request: each ``Problem`` of the ConfigError becomes one error entry."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "invalid request"

    def __init__(self, problems: list[Problem], status_code: int | None = None):
        super().__init__(detail=[str(problem) for problem in problems])
        self.problems = problems
        if status_code is not None:
            self.status_code = status_code


class Conflict(ConfigProblems):
    """The request is well formed but the current state refuses it (a template in use, an immutable role)."""

    status_code = status.HTTP_409_CONFLICT


# PostgreSQL's SQLSTATE for a statement it cancelled (``statement_timeout``): answered by pools.middleware.
QUERY_CANCELED = "57014"
DATABASE_AWAY = "the database is out of reach; nothing was changed, try again in a few seconds"
DATABASE_RETRY_SECONDS = 5


def database_away(exc: BaseException) -> bool:
    """Whether ``exc`` is the database out of reach (refused, timed out, restarted under a request): not a
    statement the database itself stopped, which answers its own 503 (``StatementCapMiddleware``)."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    return getattr(exc.__cause__, "sqlstate", None) != QUERY_CANCELED


class DatabaseAway(exceptions.APIException):
    """503 with ``Retry-After`` while the database is out of reach."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = DATABASE_AWAY
    wait = DATABASE_RETRY_SECONDS


class PayloadTooLarge(exceptions.APIException):
    """The body is larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``; it was not read further (SEMANTICS §7.3)."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE

    def __init__(self):
        super().__init__(f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes")


def bad_request(message: str, field: str = "") -> ConfigProblems:
    """A 400 for one bad field or parameter, to raise."""
    return ConfigProblems([Problem(field, message)])


@contextlib.contextmanager
def service_errors(*, where: str = "", conflict: bool = False) -> Iterator[None]:
    """Turn a service's ConfigError into an API error: 404 for NotFound, else 400 (or 409 with ``conflict``).

    ``where`` (see ``object_path``) is the object one endpoint writes: field paths lose that prefix, which
    the services put in front, so they become paths inside the body the caller sent.
    """
    try:
        yield
    except NotFound as exc:
        raise ConfigProblems(exc.problems, status_code=status.HTTP_404_NOT_FOUND) from None
    except Stale as exc:
        raise ConfigProblems(exc.problems, status_code=status.HTTP_412_PRECONDITION_FAILED) from None
    except ServiceConflict as exc:
        raise Conflict(exc.problems) from None
    except ConfigError as exc:
        problems = [_relative(problem, where) for problem in exc.problems] if where else exc.problems
        raise (Conflict(problems) if conflict else ConfigProblems(problems)) from None


def object_path(config_type: ConfigType, name: str) -> str:
    """How the services name an object in field paths: ``pool 'team-a'``."""
    return f"{TYPE_LABELS[config_type]} '{name}'"


def _relative(problem: Problem, where: str) -> Problem:
    if problem.field == where:
        return Problem("", problem.message)
    if problem.field.startswith(where + "."):
        return Problem(problem.field[len(where) + 1 :], problem.message)
    return problem


def errors_body(entries: list[tuple[str, str]]) -> dict:
    """The error body for ``(field, message)`` pairs."""
    return {"errors": [{"field": field, "message": message} for field, message in entries]}


def _flatten(detail, prefix: str = "") -> list[tuple[str, str]]:
    """DRF's nested validation detail (dicts of lists) as field paths with their messages: ``quotas[1].nodePool``,
    the paths the services name too."""
    if isinstance(detail, dict):
        entries = []
        for key, value in detail.items():
            if isinstance(key, int):  # a ListField's errors come by index
                entries.extend(_flatten(value, f"{prefix}[{key}]"))
                continue
            field = "" if key in ("non_field_errors", "detail") else str(key)
            path = f"{prefix}.{field}" if prefix and field else prefix or field
            entries.extend(_flatten(value, path))
        return entries
    if isinstance(detail, list):
        entries = []
        for index, value in enumerate(detail):
            nested = isinstance(value, (dict, list))
            entries.extend(_flatten(value, f"{prefix}[{index}]" if nested and prefix else prefix))
        return entries
    return [(prefix, str(detail))]


def _problem_entries(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(problem.field, problem.message) for problem in problems] or [("", "invalid request")]


def exception_handler(exc, context):
    """DRF's exception handler, answering every known failure in the one error shape.

    Anything not recognised here is left to Django (a 500, logged): that is a bug to fix, not an
    answer to dress up.
    """
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    elif isinstance(exc, AccessDenied):
        exc = exceptions.PermissionDenied(str(exc))
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, SuspiciousOperation):  # too many form fields, and the like: the request is refused
        exc = exceptions.ParseError(str(exc))
    elif isinstance(exc, NotFound):
        exc = ConfigProblems(exc.problems, status_code=status.HTTP_404_NOT_FOUND)
    elif isinstance(exc, Stale):
        exc = ConfigProblems(exc.problems, status_code=status.HTTP_412_PRECONDITION_FAILED)
    elif isinstance(exc, ServiceConflict):
        exc = Conflict(exc.problems)
    elif isinstance(exc, ConfigError):
        exc = ConfigProblems(exc.problems)
    elif isinstance(exc, EngineError):
        exc = ConfigProblems([Problem("", str(exc))])
    elif isinstance(exc, InventoryError):  # the cluster could not be read or written: nothing was changed
        exc = ConfigProblems([Problem("", str(exc))], status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
    elif database_away(exc):
        exc = DatabaseAway()

    if not isinstance(exc, exceptions.APIException):
        return None
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    if isinstance(exc, ConfigProblems):
        entries = _problem_entries(exc.problems)
    else:
        entries = _flatten(exc.detail) or [("", str(exc.default_detail))]
    set_rollback()
    return Response(errors_body(entries), status=exc.status_code, headers=headers)
