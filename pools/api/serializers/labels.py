"""gpuctl's label pools (SEMANTICS §8.1) and node labels: requests and results."""

from __future__ import annotations

from rest_framework import serializers


class GpuctlPoolNameSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=128)
    description = serializers.CharField(required=False, allow_blank=True)


class GpuctlNodeSerializer(serializers.Serializer):
    gpu_type = serializers.CharField(required=False, allow_blank=True, help_text="set as runwhere.ai/gpu-type")


class LabelPoolRequestSerializer(serializers.Serializer):
    """A gpuctl ``kind: pool`` file as JSON, and where and how to apply it (the file is checked by the service)."""

    kind = serializers.CharField(help_text="pool")
    version = serializers.CharField(help_text="v0.1")
    pool = GpuctlPoolNameSerializer()
    nodes = serializers.DictField(
        child=GpuctlNodeSerializer(), help_text='node name -> {"gpu-type": T} ("gpuType" accepted too)'
    )
    backend = serializers.CharField(
        required=False, help_text="default: the only writable backend (kubernetes or simulated)"
    )
    overwrite = serializers.BooleanField(required=False, default=False, help_text="move nodes of another pool")


class LabelPoolResultSerializer(serializers.Serializer):
    pool = serializers.CharField()
    backend = serializers.CharField()
    labelled = serializers.ListField(child=serializers.CharField(), help_text="nodes whose labels changed")
    unchanged = serializers.ListField(child=serializers.CharField(), help_text="nodes already labelled")


class PoolJobSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    user = serializers.CharField()
    gpu = serializers.FloatField()
    phase = serializers.CharField()
    node = serializers.CharField()
    age_seconds = serializers.IntegerField(allow_null=True)


class LabelPoolDeleteResultSerializer(serializers.Serializer):
    pool = serializers.CharField()
    unlabelled = serializers.ListField(child=serializers.CharField(), help_text="nodes whose pool label was removed")
    workloads = PoolJobSerializer(many=True, help_text="what still runs (with force); nothing is terminated")


class NodeLabelsSerializer(serializers.Serializer):
    node = serializers.CharField()
    backend = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True))


class NodeLabelChangeRequestSerializer(serializers.Serializer):
    """One label to set (``value``) or remove (``value: null``), like ``kubectl label``."""

    key = serializers.CharField(max_length=317)
    value = serializers.CharField(max_length=63, allow_null=True, allow_blank=True)
    overwrite = serializers.BooleanField(required=False, default=False)
