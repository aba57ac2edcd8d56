"""The web server as deployed, in a real browser: gunicorn started with the web Deployment's own command, with
DEBUG=0 and the static files collected first into a STATIC_ROOT of its own. The overview is styled, htmx is
loaded, nothing is refused by the Content-Security-Policy, and the static files answer under hashed names with
long cache headers (WhiteNoise)."""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from browser import TIMEOUT_MS, sign_in
from deploy_manifests import KUSTOMIZATION
from django.conf import global_settings
from django.db import connection
from django.test import override_settings
from people import PASSWORD, person

ROOT = Path(__file__).resolve().parents[2]
HASHED_STYLESHEET = re.compile(r"/static/console\.[0-9a-f]{12}\.css$")


def web_command() -> list[str]:
    """The web container's command in deploy/kubernetes."""
    deployment = next(yaml.safe_load_all((KUSTOMIZATION / "base" / "web.yaml").read_text()))
    return deployment["spec"]["template"]["spec"]["containers"][0]["command"]


def database_url() -> str:
    """The test database, for a process of its own."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def production_server(transactional_db, tmp_path):
    """gunicorn as the web Deployment runs it, on a loopback port, over the test database; its base URL."""
    env = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "CELERY_BROKER_URL")}
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        VAR_DIR=str(tmp_path / "var"),
        STATIC_ROOT=str(tmp_path / "static"),
        DATABASE_URL=database_url(),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",  # plain HTTP here; the deployment's TLS ends at its proxy
        LOG_LEVEL="WARNING",
    )
    collect = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collect.returncode == 0, collect.stderr
    port = free_port()
    program, *arguments = web_command()  # gunicorn of this virtualenv, bound to a loopback port of the test's
    command = [str(Path(sys.executable).parent / program)]
    command += [f"--bind=127.0.0.1:{port}" if word.startswith("--bind=") else word for word in arguments]
    log = open(tmp_path / "gunicorn.log", "wb")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "gunicorn.log").read_text()
            assert time.monotonic() < deadline, "gunicorn did not answer /healthz within 60 s"
            time.sleep(0.3)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_the_overview_is_styled_and_scripted_from_hashed_static_files(production_server, browser):
    user = person("operator", is_superuser=True)
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):  # the server's own hasher
        user.set_password(PASSWORD)
        user.save()

    context = browser.new_context(bypass_csp=False)  # the policy applies, as in a person's browser
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    refused, failed = [], []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    sign_in(page, production_server, "operator")
    page.wait_for_load_state("networkidle")

    stylesheets = page.evaluate("[...document.styleSheets].map(sheet => sheet.href)")
    assert any(href and HASHED_STYLESHEET.search(href) for href in stylesheets), stylesheets
    # The console's styles apply: without them the page has the browser's 8px body margin and no background.
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"
    assert page.evaluate("getComputedStyle(document.documentElement).backgroundColor") == "rgb(246, 247, 249)"
    assert page.evaluate("typeof window.htmx") == "object"
    scripts = page.evaluate("[...document.scripts].map(script => script.src).filter(Boolean)")
    assert any(re.search(r"/static/vendor/htmx\.min\.[0-9a-f]{12}\.js$", src) for src in scripts), scripts
    assert refused == [] and failed == []

    stylesheet = next(href for href in stylesheets if href and HASHED_STYLESHEET.search(href))
    answer = page.request.get(stylesheet)
    assert answer.status == 200
    assert "max-age=315360000" in answer.headers["cache-control"] and "immutable" in answer.headers["cache-control"]
    context.close()
