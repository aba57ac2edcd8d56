"""GPU utilization serializers: idle workloads and GPU-hours consumed."""

from __future__ import annotations

from rest_framework import serializers

from pools.choices import ConsumptionBy
from pools.models import GpuConsumption


class IdleWorkloadSerializer(serializers.Serializer):
    """One workload holding idle GPUs (``selectors.idle_workloads``), a CSV row in this column order."""

    backend = serializers.CharField()
    namespace = serializers.CharField()
    pod = serializers.CharField()
    user = serializers.CharField(allow_blank=True, help_text="empty when unknown")
    project = serializers.CharField(allow_blank=True, help_text="empty when unknown")
    pool = serializers.CharField(allow_blank=True, help_text="empty: a workload in no pool")
    node = serializers.CharField(help_text="a node the pod runs on")
    gpus = serializers.FloatField(help_text="GPUs the pod holds (MIG instances and shares as fractions)")
    idle_gpus = serializers.FloatField(help_text="of those, GPUs idle")
    idle_since = serializers.DateTimeField(help_text="since when all of its idle GPUs have been idle")
    idle_for_seconds = serializers.IntegerField()


class GpuHoursSerializer(serializers.Serializer):
    allocated_gpu_hours = serializers.FloatField(help_text="GPU-hours allocated to workloads")
    idle_gpu_hours = serializers.FloatField(help_text="of those, GPU-hours the GPUs were idle")
    idle_share = serializers.FloatField(help_text="idle / allocated (0 when nothing was allocated)")


class ConsumptionRowSerializer(GpuHoursSerializer):
    """One group of the report: its name under the key ``by`` names (``pool``, ``user``, ...), then its hours."""

    pool = serializers.CharField(required=False, allow_blank=True, help_text="when by=pool")
    user = serializers.CharField(required=False, allow_blank=True, help_text="when by=user")
    namespace = serializers.CharField(required=False, allow_blank=True, help_text="when by=namespace")
    project = serializers.CharField(required=False, allow_blank=True, help_text="when by=project")


class ConsumptionReportSerializer(serializers.Serializer):
    """``selectors.consumption_report``: GPU-hours per group over a period, largest first, and their total."""

    by = serializers.ChoiceField(choices=ConsumptionBy.choices)
    since = serializers.DateTimeField(help_text="start of the period counted (whole hours, or whole days past 7 days)")
    until = serializers.DateTimeField()
    resolution = serializers.ChoiceField(choices=GpuConsumption.Resolution.choices)
    rows = ConsumptionRowSerializer(many=True)
    total = GpuHoursSerializer()
