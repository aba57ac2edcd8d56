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


class RevisionListSerializer(serializers.Serializer):
    """The revisions a change recorded (none when nothing changed)."""

    revisions = RevisionSerializer(many=True)


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
