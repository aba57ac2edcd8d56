"""Access decisions at the user level (SEMANTICS.md §7), ``poolctl access explain``, and production settings."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from people import person

from accounts.access import user_can
from pools import services
from pools.choices import ConfigType

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def policy_roles(db, actor):
    services.config_apply(
        changes={
            ConfigType.ROLE: {
                "prefix": {"policies": [{"actions": ["pool:Read"], "resources": ["pool/team-a*"]}]},
                "exact": {"policies": [{"actions": ["workflow:Create"], "resources": ["pool/team-b"]}]},
                "unscoped": {"policies": [{"actions": ["report:Read"]}]},
                "wildcards": {"policies": [{"actions": ["workflow:*", "*:List"], "resources": ["pool/*"]}]},
                "deny-inside": {
                    "policies": [
                        {"actions": ["*"], "resources": ["pool/*"]},
                        {"effect": "Deny", "actions": ["workflow:Delete"], "resources": ["pool/prod"]},
                    ]
                },
                "deny-gpu": {"policies": [{"effect": "Deny", "actions": ["pool:*"], "resources": ["pool/team-a-gpu"]}]},
            }
        },
        actor=actor,
    )


@pytest.mark.parametrize(
    "roles, action, resource, allowed, deciding_role",
    [
        (["prefix"], "pool:Read", "pool/team-a", True, "prefix"),
        (["prefix"], "pool:Read", "pool/team-a-gpu", True, "prefix"),
        (["prefix"], "pool:Read", "pool/team-b", False, None),
        (["exact"], "workflow:Create", "pool/team-b", True, "exact"),
        (["exact"], "workflow:Create", "pool/team-b-gpu", False, None),
        (["unscoped"], "report:Read", "", True, "unscoped"),
        (["unscoped"], "report:Read", "pool/x", False, None),  # no resources: unscoped calls only
        (["wildcards"], "workflow:Cancel", "pool/any", True, "wildcards"),
        (["wildcards"], "node:List", "pool/any", True, "wildcards"),
        (["wildcards"], "pool:Read", "pool/any", False, None),
        (["deny-inside"], "workflow:Delete", "pool/prod", False, "deny-inside"),
        (["deny-inside"], "workflow:Create", "pool/prod", True, "deny-inside"),
        (["prefix", "deny-gpu"], "pool:Read", "pool/team-a-gpu", False, "deny-gpu"),  # Deny across roles
        (["prefix", "deny-gpu"], "pool:Read", "pool/team-a", True, "prefix"),
        ([], "system:Health", "", True, "osmo-default"),  # everyone holds osmo-default
    ],
)
def test_user_decisions(policy_roles, roles, action, resource, allowed, deciding_role):
    decision = user_can(person("u", *roles), action, resource)
    assert (decision.allowed, decision.role) == (allowed, deciding_role)


def test_an_inactive_user_holds_nothing(policy_roles):
    user = person("u", "prefix", is_active=False)
    assert not user_can(user, "pool:Read", "pool/team-a").allowed


def test_explain_names_the_deciding_role_and_policy(policy_roles, poolctl):
    person("dave", "prefix", "deny-gpu")
    text = poolctl("access", "explain", "--user", "dave", "--action", "pool:Read", "--resource", "pool/team-a-gpu")
    assert text.code == 0
    assert text.out.splitlines() == [
        "DENIED: dave pool:Read on pool/team-a-gpu",
        "roles:  deny-gpu, osmo-default, prefix",
        "reason: denied by role deny-gpu policy 1 (Deny pool:* on pool/team-a-gpu)",
    ]
    result = poolctl(
        "access", "explain", "--user", "dave", "--action", "pool:Read", "--resource", "pool/team-a", "--format", "json"
    ).json()
    assert (result["allowed"], result["role"], result["policy_index"]) == (True, "prefix", 1)
    nobody = poolctl("access", "explain", "--user", "nobody", "--action", "pool:Read")
    assert nobody.code == 1 and "user 'nobody' does not exist" in nobody.err


def test_access_sync_recomputes_pool_permissions(team_pools, poolctl):
    # Roles given behind the services' back (no hook recomputes): the sync is what catches up.
    person("bob").groups.set(Group.objects.filter(name="osmo-team-a"))
    first = poolctl("access", "sync")
    assert first.code == 0 and "4 added" in first.out  # view and use on team-a and team-a-gpu
    assert poolctl("access", "sync").out.strip() == "pool permissions: 0 added, 0 removed"


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "ALLOWED_HOSTS": "console.example.com",
        "VAR_DIR": str(tmp_path),
    }
    env.pop("DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout


def test_production_cookies_are_secure_and_https_is_enforced(tmp_path):
    code = (
        "import json; from django.conf import settings as s; print(json.dumps([s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS >= 31536000, s.SESSION_COOKIE_HTTPONLY]))"
    )
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(64), "VAR_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [True, True, True, True, True], result.stderr
