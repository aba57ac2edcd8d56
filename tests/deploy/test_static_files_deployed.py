"""Static files as deployed: `collectstatic` with the settings' storage (hashed names, gzip copies), served by
WhiteNoise from STATIC_ROOT with long cache headers. (The other tests use plain names: tests/conftest.py.)"""

import gzip
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from config import settings as deployed

ROOT = Path(__file__).resolve().parents[2]
HASHED = re.compile(r"/static/(console\.[0-9a-f]{12}\.css)")
TEN_YEARS = "max-age=315360000"
# Every test of the module with a database, so that pytest-django (which runs those first) keeps them together
# and the files are collected once.
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    """What `collectstatic` writes with the deployed storage, collected once for the module."""
    root = tmp_path_factory.mktemp("staticfiles")
    with override_settings(STATIC_ROOT=str(root), STORAGES=deployed.STORAGES):
        call_command("collectstatic", "--noinput", verbosity=0)
    return root


@pytest.fixture
def deployed_static(static_root, settings):
    settings.STATIC_ROOT = str(static_root)
    settings.STORAGES = deployed.STORAGES
    return static_root


def test_the_deployed_storage_hashes_and_compresses():
    assert deployed.STORAGES["staticfiles"]["BACKEND"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert deployed.MIDDLEWARE[1] == "whitenoise.middleware.WhiteNoiseMiddleware"  # right after SecurityMiddleware


def test_every_static_file_a_template_names_is_collected(static_root):
    """A name missing from the manifest is a 500 on every page that names it, in production only."""
    manifest = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    named = {
        match
        for folder in (ROOT / "templates", ROOT / "pools" / "templates", ROOT / "accounts" / "templates")
        if folder.exists()
        for template in folder.rglob("*.html")
        for match in re.findall(r"{%\s*static\s+['\"]([^'\"]+)['\"]", template.read_text())
    }
    assert {"console.css", "console.js", "vendor/htmx.min.js", "favicon.svg"} <= named
    assert sorted(named - manifest.keys()) == []


def test_pages_link_hashed_names_that_whitenoise_serves_for_ten_years(client, deployed_static):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    name = HASHED.search(page.content.decode()).group(1)
    assert "Content-Security-Policy" in page  # django-csp still answers every page

    answer = client.get(f"/static/{name}")
    assert answer.status_code == 200
    assert TEN_YEARS in answer["Cache-Control"] and "immutable" in answer["Cache-Control"]
    assert answer["Content-Type"].startswith("text/css")
    assert b"".join(answer.streaming_content) == (deployed_static / name).read_bytes()

    compressed = client.get(f"/static/{name}", HTTP_ACCEPT_ENCODING="gzip")
    assert compressed["Content-Encoding"] == "gzip"
    assert gzip.decompress(b"".join(compressed.streaming_content)) == (deployed_static / name).read_bytes()

    # The plain name still answers (for whatever links it), but is not cached for long: it changes in place.
    plain = client.get("/static/console.css")
    assert plain.status_code == 200 and TEN_YEARS not in plain["Cache-Control"]


def test_favicon_redirects_to_the_hashed_icon(client, deployed_static):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 302
    assert re.fullmatch(r"/static/favicon\.[0-9a-f]{12}\.svg", answer["Location"])
