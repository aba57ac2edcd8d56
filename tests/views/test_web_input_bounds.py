"""SEMANTICS §7.3 on the pages: editors and their htmx previews answer hostile input with an inline error or a
clean 4xx, quickly, and save nothing; never a 500 or a debug page."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from hostile_input import ALIAS_BOMB, NESTED_RANGES, config_snapshot
from kube_objects import node
from people import person

from pools import services
from pools.choices import ConfigType


@pytest.fixture
def admin(client, cluster, actor):
    """A signed-in superuser, and a cluster with a template ``a`` and a pool ``team-a`` using it."""
    backend = cluster([node("n1", labels={"team": "a"})])
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: {"a": {"spec": {"nodeSelector": {"team": "a"}}}},
            ConfigType.POOL: {"team-a": {"backend": backend.name, "common_pod_template": ["a"]}},
        },
        actor=actor,
    )
    client.force_login(person("root", password=None, is_superuser=True))
    return client


def test_the_256_byte_alias_bomb_of_the_report_is_refused_by_the_template_preview(admin):
    assert len(ALIAS_BOMB) <= 256
    started = time.monotonic()
    response = admin.post("/config/templates/preview/", {"body": ALIAS_BOMB, "template_name": "bomb"})
    assert time.monotonic() - started < 2
    assert response.status_code == 200 and len(response.content) < 10_000
    assert "YAML aliases are not accepted (line 2, column 8)" in response.content.decode()


def test_the_alias_bomb_is_refused_by_the_editors_and_nothing_is_saved(admin):
    before = config_snapshot()
    for url, data in [
        ("/config/templates/new/", {"name": "bomb", "body": ALIAS_BOMB}),
        ("/config/templates/a/edit/", {"body": ALIAS_BOMB}),
        (
            "/pools/new/",
            {
                "name": "bomb",
                "backend": "test-cluster",
                "platforms": ALIAS_BOMB,
                "gpu_guarantee": -1,
                "gpu_maximum": -1,
                "gpu_weight": 1,
            },
        ),
    ]:
        response = admin.post(url, data)
        assert response.status_code == 400
        assert "YAML aliases are not accepted" in response.content.decode()
    assert config_snapshot() == before


def test_nesting_deeper_than_64_levels_is_an_inline_error(admin):
    deep = "[" * 10_000 + "]" * 10_000
    response = admin.post("/config/templates/preview/", {"body": '{"spec": ' + deep + "}", "template_name": "x"})
    assert "nested deeper than 64 levels" in response.content.decode()
    response = admin.post("/pools/preview/", {"name": "draft", "platforms": "p: " + deep, "common_pod_template": "a"})
    assert "nested deeper than 64 levels" in response.content.decode()


def test_a_template_that_renders_forever_gives_the_preview_an_error_after_a_second(admin):
    started = time.monotonic()
    response = admin.post(
        "/config/templates/preview/",
        {"body": f"spec:\n  hostname: '{NESTED_RANGES}'", "template_name": "a", "preview_pool": "team-a"},
    )
    assert time.monotonic() - started < 3
    assert response.status_code == 200
    assert "rendering took more than 1 s" in response.content.decode()


@pytest.mark.parametrize("since", ["1e400", "-1e400", "nan", "inf", "²", "٣", "1" * 400, "", "999999999999999"])
def test_the_sync_status_poll_refuses_a_since_that_is_not_a_time(admin, since):
    response = admin.get("/backends/test-cluster/sync/status/", {"since": since})
    assert response.status_code == 400
    assert b"since=" in response.content


def test_the_sync_status_poll_still_answers_a_real_time(admin):
    response = admin.get("/backends/test-cluster/sync/status/", {"since": f"{time.time():.3f}"})
    assert response.status_code in (200, 286)


def test_a_body_over_the_upload_limit_is_a_clean_413_on_pages(admin):
    before = config_snapshot()
    padding = "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    for url in ["/config/templates/new/", "/pools/preview/", "/config/templates/preview/", "/admin/login/"]:
        response = admin.post(url, {"name": "big", "body": padding})
        assert response.status_code == 413
        assert response["Content-Type"].startswith("text/plain")
        assert b"larger than" in response.content and b"Traceback" not in response.content
    assert config_snapshot() == before


def test_nul_characters_in_a_url_or_a_form_are_a_clean_400(admin, client):
    # PostgreSQL cannot even compare text holding NUL: /nodes/?q=%00 was a 500 there.
    response = admin.get("/nodes/", {"q": "a\x00b"})
    assert response.status_code == 400 and b"NUL" in response.content
    response = admin.post("/config/templates/preview/", {"body": "spec: {}", "preview_pool": "team-a\x00"})
    assert response.status_code == 400 and b"NUL" in response.content
    api = admin.get("/api/pools/", {"name": "\x00"})
    assert api.status_code == 400
    assert api.json() == {"errors": [{"field": "", "message": "the URL must not contain NUL characters"}]}


def test_a_form_with_too_many_fields_is_a_clean_400(admin):
    fields = {f"f{index}": "x" for index in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}
    response = admin.post("/config/templates/new/", fields)
    assert response.status_code == 400
    assert b"the form cannot be read" in response.content


@pytest.mark.parametrize("field, value", [("gpu_guarantee", "99999999999"), ("default_exec_timeout", "²")])
def test_the_pool_editor_refuses_numbers_out_of_range_inline(admin, field, value):
    before = config_snapshot()
    data = {"backend": "test-cluster", "gpu_guarantee": -1, "gpu_maximum": -1, "gpu_weight": 1, field: value}
    response = admin.post("/pools/team-a/edit/", data)
    assert response.status_code == 400
    assert config_snapshot() == before


@pytest.mark.parametrize("gpu", ["9" * 5000, "²", "٣", "1e400", "1" * 19, "2"])
def test_the_what_if_form_takes_any_number_without_failing(admin, gpu):
    response = admin.get("/what-if/", {"pool": "team-a", "gpu": gpu, "cpu": "1"})
    assert response.status_code == 200


@pytest.mark.parametrize("revision", ["99999999999999999999", "2147483648"])
def test_revision_pages_of_numbers_no_revision_can_have_are_a_400_as_on_the_api(admin, revision):
    """The one number parser decides a revision number on every door (SEMANTICS §7.4): out of range is bad input."""
    for url in (f"/history/POOL/{revision}/", f"/history/POOL/{revision}/rollback/"):
        response = admin.get(url)
        assert response.status_code == 400
        assert "revision" in response.content.decode()
    assert admin.get(f"/api/configs/POOL/{revision}/").status_code == 400
