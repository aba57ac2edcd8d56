"""People and roles made the way an administrator makes them: ``poolctl`` on the server.

Tests that need a user with given roles ask ``administrator`` for one, so they read like what happens in a
deployment (``poolctl user create NAME --roles R1,R2``, ``poolctl config update ROLE NAME -f role.json``).
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.test import APIClient

PASSWORD = "people-test-pw"


@dataclass
class Result:
    """What a ``poolctl`` run left: its exit code and what it printed on each stream."""

    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def run_poolctl(*args: str) -> Result:
    """Run ``manage.py poolctl ...`` in-process as an operator types it: exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("poolctl", *args, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        err.write(f"Error: {exc}\n")
        code = exc.returncode
    except SystemExit as exc:
        code = exc.code
    return Result(code, out.getvalue(), err.getvalue())


def poolctl(*args: str) -> str:
    """Run ``poolctl`` as the operator on the server; returns what it printed (a failure raises CommandError)."""
    result = run_poolctl(*args)
    if result.code:
        raise CommandError(result.err.removeprefix("Error: ").strip(), returncode=result.code)
    return result.out


def signed_in(user) -> Client:
    """A browser session signed in as ``user`` (pages, and the API by its session)."""
    client = Client()
    client.force_login(user)
    return client


def api_client(user=None) -> APIClient:
    """An API client authenticated as ``user`` (anonymous for None)."""
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def role(name: str, *policies: dict, description: str = "") -> str:
    """``poolctl config update ROLE <name> -f <file>`` with these policies; returns the role's name."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{name}.json"
        path.write_text(json.dumps({"description": description, "policies": list(policies)}))
        poolctl("config", "update", "ROLE", name, "--file", str(path))
    return name


def person(username: str, *roles: str, password: str | None = PASSWORD, **flags):
    """``poolctl user create <username> --roles ...``, and a local password for signing in to the pages.

    ``password=None`` leaves the account without one, as ``poolctl`` makes it (someone who signs in through
    Keycloak; tests that only ``force_login`` skip the slow hashing). ``flags`` set fields of the user:
    ``is_superuser=True``, ``is_active=False``.
    """
    poolctl("user", "create", username, "--roles", ",".join(roles))
    user = get_user_model().objects.get(username=username)
    if password is not None:
        user.set_password(password)
    for key, value in flags.items():
        setattr(user, key, value)
    user.save()
    return user


def service_account(username: str, *roles: str):
    """``poolctl user create <username> --service-account --roles ...``."""
    poolctl("user", "create", username, "--service-account", "--roles", ",".join(roles))
    return get_user_model().objects.get(username=username)


def token_for(username: str, expires: str = "30d") -> str:
    """``poolctl token create --user <username>``: the token, from the last line it prints."""
    return poolctl("token", "create", "--user", username, "--expires", expires).strip().splitlines()[-1]


def member(unit: str, *members: str, kind: str = "project") -> None:
    """``poolctl project members <unit> --member KIND:NAME:ROLE ...`` (``kind="department"`` for a department):
    who belongs to the unit, as an administrator sets it (it replaces the unit's members)."""
    poolctl(kind, "members", unit, *(arg for spec in members for arg in ("--member", spec)))


def idp_person(username: str, *groups: str):
    """A person who signed in through the identity provider, in these groups (``/team-a``): as the OIDC sign-in
    makes them (``accounts.services.identity_sign_in``), so unit members of kind ``group`` match them."""
    from accounts.services import identity_sign_in

    claims = {"sub": f"sub-{username}", "preferred_username": username, "groups": list(groups)}
    return identity_sign_in(claims=claims, issuer="https://idp.test/realms/lab", client_id="console")
