"""Utilization figures that stopped being read are not shown as fresh: ``/metrics`` exports their age per backend,
``gpupool_utilization_age_seconds``, which grows while the reads fail and restarts at the next read."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from kube_objects import node
from people import person
from prometheus_client.parser import text_string_to_metric_families

from pools.engine.permissions import METRICS_ROLE
from pools.models import Backend


def utilization_ages(client) -> dict[str, float]:
    client.force_login(person("prometheus", METRICS_ROLE, password=None))
    response = client.get("/metrics")
    assert response.status_code == 200, response.content
    return {
        sample.labels["backend"]: sample.value
        for family in text_string_to_metric_families(response.content.decode())
        if family.name == "gpupool_utilization_age_seconds"
        for sample in family.samples
    }


def test_the_age_of_each_backends_utilization_is_exported(client, cluster):
    read = cluster([node("gpu-1")], name="read-long-ago")
    cluster([node("gpu-2")], name="never-read")
    # What the last successful round of the first backend left (its reads failed since).
    Backend.objects.filter(pk=read.pk).update(utilization_at=timezone.now() - timedelta(seconds=600))

    ages = utilization_ages(client)

    assert set(ages) == {"read-long-ago"}  # a backend never read has no age
    assert 600 <= ages["read-long-ago"] < 660
