"""Fixtures for identity and access: team pools and an OpenID provider laid out like a Keycloak realm."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from keycloak_realm import CLIENT_ID, CLIENT_SECRET, POOLS, REALM, REALM_USERS
from kube_objects import node
from service_checks import service_unavailable

from accounts import oidc
from accounts.models import Role
from pools import selectors, services
from pools.choices import ConfigType

OIDC_DIR = Path(__file__).resolve().parent.parent / "oidc"


@pytest.fixture
def team_pools(cluster, actor):
    """Pools team-a, team-a-gpu and team-b; role osmo-team-a (from /team-a); a Deny-only role no-gpu.

    ``osmo-admin`` is granted to the Keycloak group ``/gpu-admins``.
    """
    cluster([node("n1", labels={"team": "a"}), node("n2", labels={"team": "b"})])
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {
                "a": {"spec": {"nodeSelector": {"team": "a"}}},
                "b": {"spec": {"nodeSelector": {"team": "b"}}},
            },
            ConfigType.POOL: {name: {"backend": "test-cluster", "common_pod_template": [name[5]]} for name in POOLS},
        },
        actor=actor,
    )
    services.pool_role_generate(name="osmo-team-a", actor=actor)
    team_role = selectors.config_state([ConfigType.ROLE])[ConfigType.ROLE]["osmo-team-a"]
    services.config_apply(
        changes={
            ConfigType.ROLE: {
                "osmo-team-a": {**team_role, "external_roles": ["/team-a"]},
                "no-gpu": {"policies": [{"effect": "Deny", "actions": ["*"], "resources": ["pool/team-a-gpu"]}]},
            }
        },
        actor=actor,
    )
    # osmo-admin is immutable, so the config services refuse any change to it, its identity mapping
    # included; a deployment maps its admin group the same way until that mapping becomes editable.
    Role.objects.filter(name="osmo-admin").update(external_roles=["/gpu-admins"])
    return POOLS


@pytest.fixture
def oidc_provider(live_server, tmp_path, settings):
    """tests/oidc/provider.js on 127.0.0.1, configured as a Keycloak realm for the live server; settings point at it."""
    node_binary = shutil.which("node")
    if node_binary is None:
        service_unavailable("node is not installed")
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        service_unavailable("the test OpenID provider is not installed: npm ci --prefix tests/oidc")
    config = {
        "host": "127.0.0.1",
        "port": 0,
        "realm": REALM,
        "client": {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": [f"{live_server.url}/accounts/oidc/callback/"],
            "post_logout_redirect_uris": [f"{live_server.url}/"],
        },
        "users": {
            name: {**user, "password": f"{name}-password", "email": f"{name}@example.com"}
            for name, user in REALM_USERS.items()
        },
    }
    config_path = tmp_path / "realm.json"
    config_path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [node_binary, str(OIDC_DIR / "provider.js"), str(config_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        issuer = _read_issuer(process)
        settings.KEYCLOAK_URL = issuer.split("/realms/")[0]
        settings.KEYCLOAK_REALM = REALM
        settings.OIDC_RP_CLIENT_ID = CLIENT_ID
        settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
        settings.LOCAL_LOGIN = None
        settings.LOGOUT_REDIRECT_URL = "/"
        oidc.forget_provider()
        yield issuer
    finally:
        oidc.forget_provider()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _read_issuer(process: subprocess.Popen, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            line = process.stdout.readline()
            if line.strip():
                return json.loads(line)["issuer"]
        if process.poll() is not None:
            break
    process.kill()
    pytest.fail(f"the OpenID provider did not start: {process.stderr.read()[-2000:]}")
