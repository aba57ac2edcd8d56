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
