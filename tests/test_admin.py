"""The Django admin lists every model, and its saves and deletes go through the services."""

import json

import pytest
from django.contrib import admin
from django.urls import reverse
from people import person, signed_in

from pools.models import ConfigRevision, PodTemplate, Pool


@pytest.fixture
def admin_client(db):
    return signed_in(person("root", password=None, is_superuser=True, is_staff=True))


def test_every_model_is_registered():
    from django.apps import apps

    for app in ("pools", "accounts"):
        for model in apps.get_app_config(app).get_models():
            assert admin.site.is_registered(model), model


@pytest.mark.parametrize(
    "model",
    [
        "backend",
        "podtemplate",
        "resourcevalidation",
        "pool",
        "platform",
        "node",
        "pod",
        "nodemembership",
        "configrevision",
    ],
)
def test_changelists_render(demo, admin_client, model):
    assert admin_client.get(reverse(f"admin:pools_{model}_changelist")).status_code == 200


def test_change_form_shows_the_canonical_document(demo, admin_client):
    pool = Pool.objects.get(name="heterogeneous_pool")
    page = admin_client.get(reverse("admin:pools_pool_change", args=[pool.pk])).content.decode()
    assert "&quot;override_pod_template&quot;: [" in page


def test_adding_through_the_admin_records_a_revision(db, admin_client):
    response = admin_client.post(
        reverse("admin:pools_podtemplate_add"),
        {"name": "gpu", "document": json.dumps({"spec": {"nodeSelector": {"a": "b"}}})},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert PodTemplate.objects.get(name="gpu").spec == {"spec": {"nodeSelector": {"a": "b"}}}
    revision = ConfigRevision.objects.filter(config_type="POD_TEMPLATE").latest("revision")
    assert (revision.name, revision.username, revision.origin) == ("gpu", "root", "admin")


def test_an_invalid_document_is_shown_inline_and_nothing_is_saved(demo, admin_client):
    pool = Pool.objects.get(name="heterogeneous_pool")
    before = ConfigRevision.objects.count()
    url = reverse("admin:pools_pool_change", args=[pool.pk])
    body = {"backend": "default", "common_pod_template": ["ghost"]}
    response = admin_client.post(url, {"document": json.dumps(body)})
    assert response.status_code == 200
    assert "pod template &#x27;ghost&#x27; does not exist" in response.content.decode()
    broken = admin_client.post(url, {"document": '{\n "backend": "default",,\n}'})
    assert "invalid JSON at line 2" in broken.content.decode()
    assert ConfigRevision.objects.count() == before


def test_deleting_a_template_in_use_is_refused_with_the_pools_named(demo, admin_client):
    template = PodTemplate.objects.get(name="l40s")
    response = admin_client.post(
        reverse("admin:pools_podtemplate_delete", args=[template.pk]), {"post": "yes"}, follow=True
    )
    assert "is used by pool heterogeneous_pool" in response.content.decode()
    assert PodTemplate.objects.filter(name="l40s").exists()


def test_deleting_an_unused_template_goes_through_the_services(db, admin_client):
    template = PodTemplate.objects.create(name="spare", spec={})
    admin_client.post(reverse("admin:pools_podtemplate_delete", args=[template.pk]), {"post": "yes"})
    assert not PodTemplate.objects.filter(name="spare").exists()
