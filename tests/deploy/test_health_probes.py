"""/healthz and /readyz (config/health.py): what the kubelet's probes get, signed in or not."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db.migrations.recorder import MigrationRecorder

from config.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]


def test_healthz_answers_without_the_database(client):
    # No db fixture: pytest-django refuses any query, so a 200 here touched no database.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_is_ready_with_the_database_migrated_and_no_broker(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    # Tasks run in-process in the tests (no broker): there is no broker to check.
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "migrations": "ok"}}


@pytest.mark.django_db
def test_readyz_is_not_ready_while_a_migration_is_not_applied(client):
    MigrationRecorder.Migration.objects.filter(app="pools").order_by("-id").first().delete()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "not ready", "checks": {"database": "ok", "migrations": "1 not applied"}}


@pytest.mark.django_db
def test_readyz_checks_the_broker_when_one_is_configured(client, settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:1/0")  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "broker": "unreachable (OperationalError)",
    }


@pytest.mark.services
@pytest.mark.django_db
def test_readyz_is_ready_with_a_reachable_broker(client, settings, monkeypatch):
    import redis
    from service_checks import service_unavailable

    try:
        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=2).ping()
    except redis.RedisError:
        service_unavailable("Redis is not running on 127.0.0.1:6379")
    settings.CELERY_TASK_ALWAYS_EAGER = False
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:6379/0")
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["broker"] == "ok"


def test_readyz_names_the_unreachable_database_and_nothing_of_its_address(tmp_path):
    """A production process (DEBUG=0, HTTPS redirect on) whose database does not answer: the probe, over plain
    HTTP, gets 503 naming the failed check, and the body holds neither the password nor the host of the URL."""
    password = secrets.token_hex(8)
    code = (
        "import json; from django.test import Client; c = Client(); "
        "print(json.dumps([[r.status_code, r.content.decode()] for r in "
        "(c.get('/healthz', HTTP_HOST='localhost'), c.get('/readyz', HTTP_HOST='localhost'))]))"
    )
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "VAR_DIR": str(tmp_path),
        "DATABASE_URL": f"postgres://console:{password}@127.0.0.1:1/gpupool",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    alive, (status, body) = json.loads(result.stdout.strip().splitlines()[-1])
    # Neither redirects to HTTPS (the kubelet probes over plain HTTP), and the process is alive all the same.
    assert alive == [200, '{"status": "alive"}']
    assert status == 503, body
    assert json.loads(body) == {
        "status": "not ready",
        "checks": {"database": "unreachable (OperationalError)", "migrations": "not checked (no database)"},
    }
    assert password not in body and "127.0.0.1" not in body
