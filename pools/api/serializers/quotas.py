"""Quota serializers (SEMANTICS §9): the quota figures report, bulk changes and the fair-share simulation, the
reclaim check."""

from __future__ import annotations

from rest_framework import serializers

from .configs import NodePoolQuotaSerializer
from .history import RevisionListSerializer


class QuotaChangeSerializer(NodePoolQuotaSerializer):
    """One quota of a bulk change: whose (``unit``) on which pool, and the figures to set (the others are kept)."""

    unit = serializers.CharField(help_text="a department or project; department/NAME or project/NAME when both exist")


MAX_BULK_QUOTAS = 10_000


class QuotaBulkSerializer(serializers.Serializer):
    """Many quotas to change at once: each names its unit and pool; the figures given are set, the others kept."""

    quotas = QuotaChangeSerializer(many=True, allow_empty=False, max_length=MAX_BULK_QUOTAS)

    def changes(self) -> list[dict]:
        """The validated quotas as the services take them: ``[{"unit", "pool", "figures"}]``."""
        return [
            {
                "unit": item["unit"],
                "pool": item["nodePool"],
                "figures": {key: value for key, value in item.items() if key not in ("unit", "nodePool")},
            }
            for item in self.validated_data["quotas"]
        ]


class QuotaBulkResultSerializer(RevisionListSerializer):
    warnings = serializers.ListField(child=serializers.CharField(), help_text="SEMANTICS §9's warnings, after")


class QueueSerializer(serializers.Serializer):
    """One department or project of a fair-share simulation (the fields of ``pools.engine.fairshare.Queue``)."""

    name = serializers.CharField()
    parent = serializers.CharField(required=False, allow_null=True, help_text="null or absent: a top-level unit")
    deserved = serializers.FloatField(required=False, default=0, help_text="GPUs; -1 = the whole amount divided")
    limit = serializers.FloatField(required=False, default=-1, help_text="GPUs; -1 = unlimited, 0 = none")
    over_quota_weight = serializers.FloatField(
        required=False, allow_null=True, default=2, help_text="null = no over-quota; 0 Lowest, 1 Low, 2 Medium, 3 High"
    )
    priority = serializers.IntegerField(required=False, default=100, help_text="rank among siblings, higher first")
    request = serializers.FloatField(required=False, default=0, help_text="GPUs asked for (a parent: its children's)")
    creation_order = serializers.IntegerField(required=False, help_text="default: the position in the list")
    usage = serializers.FloatField(
        required=False, default=0, help_text="0 to 1: its past usage (SEMANTICS §9.3), read only with k_value above 0"
    )


class QuotaSimulationSerializer(serializers.Serializer):
    capacity = serializers.FloatField(help_text="allocatable GPUs of the pool's available nodes")
    k_value = serializers.FloatField(
        required=False, default=0, help_text="time-based fair share (SEMANTICS §9.3): 0 or below = off (§9.1)"
    )
    queues = QueueSerializer(many=True)


class FairShareSerializer(serializers.Serializer):
    fair_share = serializers.DictField(child=serializers.FloatField(), help_text="unit name -> fair share in GPUs")


class ReclaimUnitSerializer(serializers.Serializer):
    """One department or project of a reclaim check (the fields of ``pools.engine.reclaim.Unit``)."""

    name = serializers.CharField()
    parent = serializers.CharField(required=False, allow_null=True, help_text="null or absent: a top-level unit")
    deserved = serializers.FloatField(required=False, default=0, help_text="GPUs; -1 = unlimited")
    limit = serializers.FloatField(required=False, default=-1, help_text="GPUs; -1 = unlimited")
    fair_share = serializers.FloatField(required=False, default=0, help_text="GPUs; -1 = unlimited")
    allocated = serializers.FloatField(required=False, default=0, help_text="GPUs of running jobs (a parent: sum)")
    allocated_nonpreemptible = serializers.FloatField(
        required=False, default=0, help_text="GPUs of running non-preemptible jobs (a parent: its children's sum)"
    )


class ReclaimerSerializer(serializers.Serializer):
    queue = serializers.CharField(help_text="the pending job's unit, one with no units below it")
    gpus = serializers.FloatField(help_text="GPUs the job asks for")
    preemptible = serializers.BooleanField(required=False, default=True)


class QuotaReclaimSerializer(serializers.Serializer):
    queues = ReclaimUnitSerializer(many=True)
    reclaimer = ReclaimerSerializer()
    victims = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField(), min_length=2, max_length=2),
        required=False,
        help_text='running preemptible jobs, in order: [["queue", gpus], ...]',
    )
    multiplier = serializers.FloatField(required=False, default=1, help_text="saturation multiplier; below 1 is 1")


class ReclaimVerdictSerializer(serializers.Serializer):
    can_reclaim = serializers.BooleanField(help_text="the reclaimer's unit stays within its fair share")
    reclaimable = serializers.BooleanField(help_text="the victims may be taken from, judged alone")
    reasons = serializers.ListField(child=serializers.CharField(), help_text="one sentence per decision")


class QuotaFiguresRowSerializer(serializers.Serializer):
    """One (department or project, pool) with every figure of SEMANTICS §9 (GPUs, fractions summed)."""

    unit = serializers.CharField()
    kind = serializers.CharField(help_text="department or project")
    department = serializers.CharField()
    pool = serializers.CharField()
    deserved = serializers.FloatField(help_text="-1: the whole amount divided")
    limit = serializers.FloatField(help_text="-1: unlimited")
    over_quota_weight = serializers.FloatField(allow_null=True, help_text="null: no over-quota")
    priority = serializers.IntegerField()
    allocated = serializers.FloatField(help_text="GPUs of running pods")
    pending = serializers.FloatField(help_text="GPUs of pods waiting for a node")
    request = serializers.FloatField(help_text="allocated + pending")
    allocation_ratio = serializers.FloatField(allow_null=True, help_text="allocated / deserved; null when 0")
    over_quota = serializers.FloatField(help_text="max(0, allocated - deserved)")
    fair_share = serializers.FloatField(
        help_text="what the scheduler steers towards (SEMANTICS §9.1; §9.3 when the backend's k_value is above 0)"
    )
    usage = serializers.FloatField(
        help_text="0 to 1: its GPU-seconds over the backend's capacity-seconds in the backend's fair-share window "
        "(SEMANTICS §9.3); a department's is its projects' sum"
    )
    over_fair_share = serializers.FloatField(help_text="max(0, allocated - fair_share)")
    workloads = serializers.IntegerField(help_text="its pods asking for GPUs there, bound to a node or waiting")
    what_if_usage = serializers.FloatField(required=False, help_text="with k_value given: the usage the what-if reads")
    what_if_fair_share = serializers.FloatField(
        required=False, help_text="with k_value given: the fair share with that k and usage (nothing written)"
    )


class QuotaListSerializer(serializers.Serializer):
    quotas = QuotaFiguresRowSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="SEMANTICS §9's warnings")
