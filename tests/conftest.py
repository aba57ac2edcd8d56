"""Shared fixtures: running poolctl like an operator, loading the demo, building small clusters, a browser."""

from __future__ import annotations

import pytest
from browser import TIMEOUT_MS, VIEWPORT, chromium
from django.test import override_settings
from people import api_client, run_poolctl

from pools import services
from pools.choices import ConfigType
from pools.models import Backend

# Set before any test module is imported (the schemathesis module reads the schema at import); everything
# else stays as deployed. The test client and the live server speak plain HTTP, while settings without DEBUG
# (the production defaults the tests run with) redirect to HTTPS and mark cookies Secure. Sign-in throttling
# (django-axes) is on only in the tests that ask for it (fixture ``login_throttling``): it refuses
# ``Client.login()``, which authenticates without a request, and would make one test's wrong passwords
# another's lockout. Passwords are hashed with a fast hasher: the deployed one takes a deliberate half second a
# password, and the tests set and check hundreds (what hashing protects is Django's, tested there).
TEST_SETTINGS = override_settings(
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


@pytest.fixture
def login_throttling(settings):
    """Sign-in throttling as deployed (django-axes on). Its failures are rows of the test's database."""
    settings.AXES_ENABLED = True


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
    """The demo configuration of `make run`, with its file backends synced. The built-ins come first: a transactional
    test run before this one in the same process empties every table, those of the migrations included."""
    services.builtins_restore(actor=services.SYSTEM)
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
