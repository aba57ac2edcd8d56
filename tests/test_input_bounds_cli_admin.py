"""SEMANTICS §7.3 through ``poolctl`` and the Django admin: hostile files and documents get one clear error and
change nothing."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from hostile_input import config_snapshot
from people import person, signed_in

from pools.models import Backend, PodTemplate

ALIAS_BOMB = """\
podTemplates:
  a: &a {spec: {x: [x,x,x,x,x,x,x,x,x]}}
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: [*b,*b,*b,*b,*b,*b,*b,*b,*b]
"""


@pytest.fixture
def admin_client(db):
    return signed_in(person("root", password=None, is_superuser=True, is_staff=True))


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("deep.json", '{"spec": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested deeper than 64 levels at line 1"),
        ("bomb.yaml", ALIAS_BOMB, "YAML aliases are not accepted (line 3"),
        ("inf.json", '{"spec": {"x": 1e400}}', "the number 1e400 is out of range"),
        ("nan.yaml", "spec:\n  x: .nan\n", "the number .nan is out of range"),
        ("nul.json", '{"spec": {"x": "a\\u0000b"}}', "must not contain NUL characters"),
    ],
)
def test_poolctl_refuses_hostile_files_with_one_line_and_writes_nothing(db, poolctl, tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    before = config_snapshot()
    for args in (["config", "update", "POD_TEMPLATE", "bomb", "--file", str(path)], ["config", "import", str(path)]):
        result = poolctl(*args)
        assert result.code == 1 and expected in result.err and "Traceback" not in result.err
    assert config_snapshot() == before


def test_poolctl_refuses_a_backend_file_outside_the_inventory_directory(db, poolctl, tmp_path, inventory_dir):
    path = tmp_path / "backend.json"
    path.write_text(json.dumps({"kind": "file", "source": "/etc/shadow"}))
    result = poolctl("config", "update", "BACKEND", "probe", "--file", str(path))
    assert result.code == 1 and "must be a file under the inventory directory" in result.err
    assert not Backend.objects.filter(name="probe").exists()


@pytest.mark.parametrize("args", [["config", "show", "POOL", "--revision", "²"], ["config", "show", "POOL", "-r", "0"]])
def test_poolctl_revision_options_are_usage_errors(db, poolctl, args):
    result = poolctl(*args)  # in-process, argparse's usage error arrives as a CommandError (exit 2 from a shell)
    assert result.code != 0 and f"argument --revision/-r: '{args[-1]}' is not a revision number" in result.err


@pytest.mark.parametrize("ref", ["POOL:²", "POOL:٣", "POOL:0", "POOL:99999999999999999999"])
def test_poolctl_revision_references_are_refused_in_one_line(db, poolctl, ref):
    for args in (["config", "diff", ref], ["config", "rollback", ref], ["config", "tag", ref, "--set", "t"]):
        result = poolctl(*args)
        assert result.code == 1 and "is not TYPE:REVISION" in result.err


@pytest.mark.parametrize(
    "document, expected",
    [
        (ALIAS_BOMB.replace("podTemplates:\n", "spec:\n"), "YAML aliases are not accepted"),
        ('{"spec": ' + "[" * 10_000 + "]" * 10_000 + "}", "nested deeper than 64 levels"),
        ('{"spec": {"x": NaN}}', "NaN is not a number JSON allows"),
    ],
)
def test_the_admin_shows_hostile_documents_as_form_errors_and_saves_nothing(admin_client, document, expected):
    before = config_snapshot()
    response = admin_client.post(reverse("admin:pools_podtemplate_add"), {"name": "bomb", "document": document})
    assert response.status_code == 200 and expected in response.content.decode()
    assert config_snapshot() == before and not PodTemplate.objects.filter(name="bomb").exists()


def test_the_admin_refuses_a_seed_beyond_its_column(admin_client):
    response = admin_client.post(
        reverse("admin:pools_backend_add"),
        {"name": "sim", "document": json.dumps({"kind": "simulated", "seed": 2**70})},
    )
    assert response.status_code == 200 and "must be a whole number from" in response.content.decode()
    assert not Backend.objects.filter(name="sim").exists()
