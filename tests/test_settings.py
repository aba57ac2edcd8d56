"""Production defaults of ``config/settings.py``: without ``DEBUG`` in the environment the deploy checks pass."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "DJANGO_SETTINGS_MODULE")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_is_off_unless_the_environment_turns_it_on():
    show = (
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings; print(settings.DEBUG, settings.SECURE_SSL_REDIRECT)",
    )
    assert manage(*show).stdout.split() == ["False", "True"]
    assert manage(*show, DEBUG="1").stdout.split() == ["True", "False"]


def test_the_deploy_checks_pass_with_only_a_secret_key_set():
    result = manage("check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=secrets.token_urlsafe(60))
    assert result.returncode == 0, result.stderr + result.stdout


def test_the_web_servers_entry_points_leave_what_they_loaded_out_of_full_collections():
    """``config.wsgi`` and ``config.asgi`` load every view and freeze what is alive then (``config.startup``):
    a full garbage collection afterwards has only what was made since to traverse, not the ~100,000 objects
    of Django and the project (each full collection took ~50 ms before)."""
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    for entry in ("config.wsgi", "config.asgi"):
        script = (
            f"import gc, sys, {entry}; "
            "print(gc.get_freeze_count(), len(gc.get_objects()), 'pools.views' in sys.modules, "
            "'pools.api.configs' in sys.modules)"
        )
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
        )
        frozen, collectable, views, api_views = result.stdout.split()
        assert int(frozen) > 50_000, result.stderr
        assert int(collectable) < int(frozen) / 100
        assert views == api_views == "True"
