"""Config history serializers: revisions, diffs, tags and rollbacks."""

from __future__ import annotations

from rest_framework import serializers

from pools.choices import ConfigType
from pools.models import ConfigRevision


class RevisionSerializer(serializers.ModelSerializer):
    """One config revision: who changed what, when, from where, and why."""

    class Meta:
        model = ConfigRevision
        fields = [
            "config_type",
            "revision",
            "name",
            "action",
            "username",
            "origin",
            "created_at",
            "description",
            "tags",
        ]
        read_only_fields = fields


class RevisionDetailSerializer(RevisionSerializer):
    """A revision with the whole type's state after it (``{name: body}``)."""

    snapshot = serializers.DictField(child=serializers.JSONField())

    class Meta(RevisionSerializer.Meta):
        fields = [*RevisionSerializer.Meta.fields, "snapshot"]
        read_only_fields = fields


class EffectWorkloadSerializer(serializers.Serializer):
    """Pods holding GPUs on the nodes leaving a pool, grouped by pool label, namespace and user."""

    pool_label = serializers.CharField(help_text="the pods' pool label (empty: none)")
    namespace = serializers.CharField()
    user = serializers.CharField(help_text="the pods' user label (empty: none)")
    pods = serializers.IntegerField()
    gpu = serializers.FloatField(help_text="GPUs the pods request")
    nodes = serializers.ListField(child=serializers.CharField(), help_text="the leaving nodes they run on")


class EffectPoolSerializer(serializers.Serializer):
    """What a change would move in one pool the caller may see."""

    pool = serializers.CharField()
    backend = serializers.CharField()
    nodes_in = serializers.ListField(child=serializers.CharField(), help_text="nodes that would join the pool")
    nodes_out = serializers.ListField(child=serializers.CharField(), help_text="nodes that would leave the pool")
    gpus_in = serializers.FloatField()
    gpus_out = serializers.FloatField()
    nodes_before = serializers.IntegerField()
    nodes_after = serializers.IntegerField()
    gpus_before = serializers.FloatField()
    gpus_after = serializers.FloatField()
    workloads_affected = serializers.IntegerField(help_text="pods holding GPUs on the nodes that would leave")
    workload_gpus = serializers.FloatField()
    workloads = EffectWorkloadSerializer(many=True, help_text="the first 50 groups, most GPUs first")
    summary = serializers.CharField(help_text="e.g. `4 nodes, 32 GPUs leave heterogeneous_pool, 4 workloads running`")


class ConfigEffectSerializer(serializers.Serializer):
    """What a change would move, before it is saved (``selectors.config_change_effect``)."""

    pools = EffectPoolSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="quota problems the change would bring")


class RevisionListSerializer(serializers.Serializer):
    """The revisions a change recorded (none when nothing changed); with ``?dry_run=1``, none and ``effect``."""

    revisions = RevisionSerializer(many=True)
    effect = ConfigEffectSerializer(required=False, help_text="only on a dry run: what the change would move")


class TagRequestSerializer(serializers.Serializer):
    """Tags to add to and remove from a revision."""

    add = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list)
    remove = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list)


class RollbackRequestSerializer(serializers.Serializer):
    """Why the rollback is made (kept on the new revision)."""

    description = serializers.CharField(required=False, allow_blank=True, default="")


class ConfigDiffSerializer(serializers.Serializer):
    """A unified diff between two revisions, or a revision and the current state (``to`` null)."""

    config_type = serializers.ChoiceField(choices=ConfigType.choices)
    from_revision = serializers.IntegerField()
    to_revision = serializers.IntegerField(allow_null=True)
    diff = serializers.CharField(allow_blank=True)
