"""Render and check serializers: requests to a pool and their results (node and quota verdicts)."""

from __future__ import annotations

from rest_framework import serializers


class RenderRequestSerializer(serializers.Serializer):
    """A request to a pool: the platform (default: the pool's) and the user's variable values."""

    platform = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=128)
    variables = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)

    def validate_variables(self, values: dict) -> dict:
        for key, value in values.items():
            if isinstance(value, (dict, list)):
                raise serializers.ValidationError({key: "must be a string, number, boolean or null"})
        return values


class CheckRequestSerializer(RenderRequestSerializer):
    """A request to check: as for a render, and optionally the project whose quota on the pool it would use."""

    project = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=128,
        help_text="With a project, `quota` says whether the request fits its quota on the pool.",
    )


class RenderResultSerializer(serializers.Serializer):
    """The merged, rendered pod template the request would get (``poolctl pool render --format json``)."""

    pool = serializers.CharField()
    platform = serializers.CharField()
    variables = serializers.DictField(child=serializers.JSONField())
    pod_template = serializers.DictField(child=serializers.JSONField())


START_CHOICES = [("now", "now"), ("wait", "wait"), ("", "")]


class NodeVerdictSerializer(serializers.Serializer):
    """The verdict for one node: the rules it failed (or why it is unavailable), and whether it starts now."""

    node = serializers.CharField()
    passed = serializers.BooleanField()
    errors = serializers.ListField(child=serializers.CharField())
    start = serializers.ChoiceField(
        choices=START_CHOICES,
        help_text="`now`: the node has the request free; `wait`: it passes but too little is free; empty: it fails.",
    )
    shortfalls = serializers.ListField(
        child=serializers.CharField(), help_text='What is short when it would wait, e.g. "needs 8 GPUs, 0 free".'
    )


class QuotaVerdictSerializer(serializers.Serializer):
    """Where the request's GPUs would put the project on the pool (SEMANTICS §9; GPUs, fractions allowed)."""

    project = serializers.CharField()
    department = serializers.CharField()
    pool = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["within_quota", "over_quota", "exceeds_limit"])
    exceeded = serializers.ChoiceField(
        choices=[("", ""), ("project", "project"), ("department", "department")],
        help_text="Whose limit an `exceeds_limit` verdict goes past; empty otherwise.",
    )
    message = serializers.CharField()
    requested = serializers.FloatField()
    allocated = serializers.FloatField()
    pending = serializers.FloatField()
    deserved = serializers.FloatField(help_text="-1 already read as the whole amount being divided.")
    limit = serializers.FloatField(help_text="-1: unlimited.")
    over_quota_weight = serializers.FloatField(allow_null=True)
    fair_share = serializers.FloatField()
    department_limit = serializers.FloatField(allow_null=True, help_text="null when the department is hidden.")
    department_allocated = serializers.FloatField(allow_null=True, help_text="null when the department is hidden.")


class CheckResultSerializer(serializers.Serializer):
    """Would the request fit (``poolctl pool check --format json``): rule errors and a verdict per node."""

    pool = serializers.CharField()
    platform = serializers.CharField()
    passed = serializers.BooleanField()
    errors = serializers.ListField(child=serializers.CharField())
    nodes = NodeVerdictSerializer(many=True)
    starts = serializers.ChoiceField(
        choices=START_CHOICES, help_text="`now` when a node could start it now, `wait` when none; empty if it fails."
    )
    start_now_nodes = serializers.IntegerField()
    quota = QuotaVerdictSerializer(allow_null=True, help_text="With `project` in the request; else null.")


class TopologyDomainSerializer(serializers.Serializer):
    """One domain of a topology level: its label value, its path from the coarsest level, nodes, GPUs, free GPUs."""

    value = serializers.CharField()
    path = serializers.CharField()
    nodes = serializers.IntegerField()
    gpus = serializers.IntegerField()
    free = serializers.IntegerField()


class TopologyShapeSerializer(serializers.Serializer):
    """A gang shape at one level: gangs that fit at once, the largest gang and its domain, stranded GPUs."""

    pods = serializers.IntegerField()
    gpus_per_pod = serializers.IntegerField()
    gangs = serializers.IntegerField()
    largest_gang = serializers.IntegerField(help_text="most pods of gpus_per_pod GPUs inside one domain")
    largest_domain = serializers.CharField(allow_null=True, help_text="that domain's path; null when no pod fits")
    stranded = serializers.IntegerField(help_text="free GPUs no pod of gpus_per_pod GPUs can use, over the pool")


class TopologyLevelSerializer(serializers.Serializer):
    """A topology level (``key`` and ``label`` null for the whole pool) with its domains and shapes."""

    key = serializers.CharField(allow_null=True)
    label = serializers.CharField(allow_null=True)
    domains = TopologyDomainSerializer(many=True)
    shapes = TopologyShapeSerializer(many=True)


class CapacityResultSerializer(serializers.Serializer):
    """Capacity by topology (``poolctl pool capacity --json``)."""

    pool = serializers.CharField()
    levels = TopologyLevelSerializer(many=True)
