"""Shared fixtures: running poolctl like an operator, loading the demo, building small clusters, a browser."""

from __future__ import annotations

import os

import pytest
from browser import TIMEOUT_MS, VIEWPORT, chromium
from celery_parts import forget_broker_connections
from django.apps import apps
from django.conf import settings
from django.core import serializers
from django.db import transaction
from django.test import override_settings
from people import api_client, run_poolctl
from pytest_django.plugin import blocking_manager_key

from pools import services
from pools.choices import ConfigType
from pools.models import Backend

# Set before any test module is imported (the schemathesis module reads the schema at import); everything
# else stays as deployed. The test client and the live server speak plain HTTP, while settings without DEBUG
# (the production defaults the tests run with) redirect to HTTPS and mark cookies Secure. Sign-in throttling
# (django-axes) is on only in the tests that ask for it (fixture ``login_throttling``): it refuses
# ``Client.login()``, which authenticates without a request, and would make one test's wrong passwords
# another's lockout. Passwords are hashed with a fast hasher: the deployed one takes a deliberate half second a
# password, and the tests set and check hundreds (what hashing protects is Django's, tested there). Pages link
# static files by their plain names, served from the source folders by the live server: the hashed names of the
# deployed storage exist only after `collectstatic`, which tests/deploy runs and checks on its own.
TEST_SETTINGS = override_settings(
    STORAGES={
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    },
    SECURE_SSL_REDIRECT=False,
    SESSION_COOKIE_SECURE=False,
    CSRF_COOKIE_SECURE=False,
    AXES_ENABLED=False,
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
)


def pytest_configure(config):
    TEST_SETTINGS.enable()


def pytest_unconfigure(config):
    TEST_SETTINGS.disable()


# Tests whose outcome does not hang on the engine of the test database: a browser driving pages other tests read on
# both engines, processes started as in production (workers, gunicorn, a kube-apiserver with RBAC), faults of parts
# that are not the database, Prometheus, the OIDC provider. CI runs the suite on SQLite and then on PostgreSQL;
# with ``ENGINE_AGNOSTIC_ON=postgresql`` these run on that engine's pass only (``.ci/run``).
ENGINE_AGNOSTIC = (
    "tests/deploy/",
    "tests/faults/",
    "tests/telemetry/",
    "tests/integration/test_prometheus.py",
    "tests/integration/test_utilization_prometheus.py",
    "tests/integration/test_label_pool_browser.py",
    "tests/accounts/test_accounts_oidc_e2e.py",
    "tests/views/test_web_browser.py",
    "_browser.py",
)


def pytest_collection_modifyitems(config, items):
    only_on = os.environ.get("ENGINE_AGNOSTIC_ON", "")
    if not only_on or settings.DATABASES["default"]["ENGINE"].endswith(only_on):
        return
    root = str(config.rootpath) + "/"

    def agnostic(item) -> bool:
        path = str(item.path).removeprefix(root)
        return any(path.startswith(part) or path.endswith(part) for part in ENGINE_AGNOSTIC)

    dropped = [item for item in items if agnostic(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not agnostic(item)]


# The rows the migrations write (built-in roles, templates, validations, their revisions), as each test database
# holds them when created. A transactional test empties every table when it ends; its next neighbour in the
# process (any test, in any order pytest-xdist gives) must still find them, so they are put back at once, in
# place of what the post-migrate signals of the emptying wrote again. Content types and permissions are left to
# those signals.
MIGRATED: dict[str, object] = {}
NOT_MIGRATED = {"contenttypes.ContentType", "auth.Permission"}


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        models = [
            model
            for model in apps.get_models()
            if model._meta.label not in NOT_MIGRATED and model._default_manager.exists()
        ]
        MIGRATED["models"] = models
        MIGRATED["rows"] = serializers.serialize(
            "json", (row for model in models for row in model._default_manager.order_by("pk"))
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield
    marker = item.get_closest_marker("django_db")
    flushed = {"transactional_db", "live_server"} & set(item.fixturenames) or (
        marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    )
    if flushed and MIGRATED and nextitem is not None:  # after the last test the database is gone
        with item.config.stash[blocking_manager_key].unblock(), transaction.atomic():
            for model in reversed(MIGRATED["models"]):
                model._base_manager.all().delete()
            for row in serializers.deserialize("json", MIGRATED["rows"]):
                row.save()
    return result


@pytest.fixture
def login_throttling(settings):
    """Sign-in throttling as deployed (django-axes on). Its failures are rows of the test's database."""
    settings.AXES_ENABLED = True


@pytest.fixture(autouse=True)
def celery_as_configured():
    """Every test starts with Celery as the settings configure it (tasks in this process, no broker): a test that
    points the app at a broker of its own gets it back afterwards, without the connections it left open."""
    from config.celery import app

    keys = ("broker_url", "result_backend", "task_always_eager")
    before = {key: app.conf[key] for key in keys}
    yield
    if any(app.conf[key] != value for key, value in before.items()):
        app.conf.update(before)
        forget_broker_connections(app)


@pytest.fixture(autouse=True)
def inventory_dir(settings, tmp_path):
    """Each test's own inventory directory (GPUPOOL_INVENTORY_DIR): its temporary directory, where
    ``cluster`` and the tests write the files their backends read."""
    settings.GPUPOOL_INVENTORY_DIR = str(tmp_path)
    return tmp_path


@pytest.fixture
def poolctl(db):
    """Run ``manage.py poolctl ...`` in-process; returns exit code, stdout and stderr (``people.run_poolctl``)."""
    return run_poolctl


@pytest.fixture
def browser(monkeypatch):
    """A headless Chromium (``tests/browser.py``) to open pages of a live server in."""
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are still synchronous
    # and safe, so Django's guard against async contexts is lifted for the test.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium() as instance:
        yield instance


@pytest.fixture
def page(browser, request):
    """A page of a fresh browser context, at the module's ``VIEWPORT`` (``tests/browser.py``'s otherwise)."""
    context = browser.new_context(viewport=getattr(request.module, "VIEWPORT", VIEWPORT))
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


@pytest.fixture
def client_for():
    """An API client authenticated as ``user`` (anonymous for None): ``people.api_client``."""
    return api_client


@pytest.fixture
def demo(db):
    """The demo configuration of `make run`, with its file backends synced."""
    assert services.demo_install()


@pytest.fixture
def actor():
    return services.Actor.system("tester")


@pytest.fixture
def cluster(db, inventory_dir, actor):
    """A file backend over a Kubernetes List the test writes; call it with items, it syncs and returns the backend."""

    def make(items, *, name="test-cluster", node_conditions=None):
        from kube_objects import write_list

        path = write_list(inventory_dir / f"{name}.json", items)
        body = {"kind": "file", "source": str(path)}
        if node_conditions is not None:
            body["node_conditions"] = node_conditions
        services.config_apply(changes={ConfigType.BACKEND: {name: body}}, actor=actor)
        backend = Backend.objects.get(name=name)
        services.backend_sync(backend=backend)
        backend.refresh_from_db()
        return backend

    return make
