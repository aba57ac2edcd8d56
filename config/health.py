"""Liveness and readiness of a web process, for Kubernetes' probes (docs/deploy.md).

``/healthz`` answers as long as the process serves requests, and touches nothing else: a database outage must
not make the kubelet restart every web pod. ``/readyz`` answers 200 only when a request could be served: the
database answers, every migration this code knows is applied, and (when Celery has a broker) the broker
accepts a connection. Otherwise 503, with the check that failed. Neither needs a sign-in; their bodies name
checks and exception classes, never an address, a user or a message that could carry one.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

# The longest the broker check waits for a connection, so that a probe (timeout 5 s) answers in time.
BROKER_TIMEOUT_SECONDS = 2.0
OK = "ok"


@never_cache
@require_GET
def healthz(request):
    """200 while the process answers; no database, no broker."""
    return JsonResponse({"status": "alive"})


@never_cache
@require_GET
def readyz(request):
    """200 when the database, its migrations and the broker (if any) are ready; else 503 naming what is not."""
    checks = {"database": database_check()}
    checks["migrations"] = migrations_check() if checks["database"] == OK else "not checked (no database)"
    if broker_configured():
        checks["broker"] = broker_check()
    ready = all(value == OK for value in checks.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks}, status=200 if ready else 503)


def database_check() -> str:
    """``ok`` when the default database answers a query."""
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any driver's failure to connect or answer
        return f"unreachable ({type(error).__name__})"
    return OK


@lru_cache(maxsize=1)
def known_migrations() -> frozenset[tuple[str, str]]:
    """Every migration the code on disk holds, a squashed one standing for those it replaces. The files do not
    change while the process runs, so they are read once."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return frozenset(loader.graph.nodes)


def migrations_check() -> str:
    """``ok`` when the database has every migration of the code applied (what ``migrate`` would do is nothing)."""
    try:
        applied = set(MigrationRecorder(connections[DEFAULT_DB_ALIAS]).applied_migrations())
    except Exception as error:
        return f"unreadable ({type(error).__name__})"
    missing = known_migrations() - applied
    return OK if not missing else f"{len(missing)} not applied"


def broker_configured() -> bool:
    """Celery sends tasks to a broker (rather than running them in-process, the embedded default)."""
    return not settings.CELERY_TASK_ALWAYS_EAGER


def broker_check() -> str:
    """``ok`` when the Celery broker accepts a connection within ``BROKER_TIMEOUT_SECONDS``."""
    from config.celery import app

    try:
        with app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS) as connection:
            connection.ensure_connection(max_retries=0)
    except Exception as error:  # kombu wraps the transport's errors in its own classes
        return f"unreachable ({type(error).__name__})"
    return OK
