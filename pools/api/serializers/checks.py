"""Render and check serializers: requests to a pool and their results (node and quota verdicts)."""

from __future__ import annotations

from rest_framework import serializers

from ...engine.topology import MAX_SHAPE_NUMBER


class RenderRequestSerializer(serializers.Serializer):
    """A request to a pool: the platform (default: the pool's) and the user's variable values."""

    platform = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=128)
    variables = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)

    def validate_variables(self, values: dict) -> dict:
        for key, value in values.items():
            if isinstance(value, (dict, list)):
                raise serializers.ValidationError({key: "must be a string, number, boolean or null"})
        return values


class TopologyRequestSerializer(serializers.Serializer):
    """Where the gang should start (SEMANTICS §11): a level of the pool's ``topology_keys``, required or preferred."""

    level = serializers.CharField(max_length=128, help_text="A key of the pool's topology_keys, e.g. rack.")
    required = serializers.BooleanField(
        required=False, default=False, help_text="true: in one domain of the level; false: preferred, may be split."
    )


class CheckRequestSerializer(RenderRequestSerializer):
    """A request to check: as for a render, and optionally the project whose quota on the pool it would use."""

    project = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=128,
        help_text="With a project, `quota` says whether the request fits its quota on the pool.",
    )
    pods = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_SHAPE_NUMBER,
        help_text="A gang of this many such pods (default 1): the quota counts them all, `topology` places them.",
    )
    topology = TopologyRequestSerializer(
        required=False,
        allow_null=True,
        help_text="With a topology, `topology` says whether the gang could start now in one domain of `level`.",
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


class GangDomainSerializer(serializers.Serializer):
    """A domain that could take the whole gang now: its path and the pods of that size it offers."""

    path = serializers.CharField()
    slots = serializers.IntegerField()


class TopologyVerdictSerializer(serializers.Serializer):
    """Where a gang of the request's pods could start now at a topology level (SEMANTICS §11)."""

    level = serializers.CharField()
    required = serializers.BooleanField()
    pods = serializers.IntegerField()
    gpus_per_pod = serializers.IntegerField()
    fits = serializers.BooleanField(help_text="required: one domain takes it; preferred: the pool does.")
    split = serializers.BooleanField(help_text="preferred: it fits, but over several domains.")
    pool_slots = serializers.IntegerField(help_text="pods of gpus_per_pod GPUs the whole pool could start now")
    domains = GangDomainSerializer(many=True, help_text="the level's domains that could take the whole gang")
    message = serializers.CharField()


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
    topology = TopologyVerdictSerializer(allow_null=True, help_text="With `topology` in the request; else null.")
    pending_verdict = serializers.DictField(
        help_text="The verdict the request would get if it waited now (SEMANTICS §10): `reason`, `checks` "
        "[{`reason`, `message`, `figures`}], `victims` [{`namespace`, `name`, `kind`, `project`, `gpus`}]."
    )


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
