"""Workloads (SEMANTICS §10) as the API answers them: documentation of ``selectors.workloads_visible``'s rows and
``selectors.workload_get``'s detail (the rows are written as the selector gives them)."""

from __future__ import annotations

from rest_framework import serializers


class WorkloadPodsSerializer(serializers.Serializer):
    running = serializers.IntegerField()
    pending = serializers.IntegerField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class WorkloadSerializer(serializers.Serializer):
    """One workload: the pods of a pod group, of a controller (a Deployment for its ReplicaSets), or a pod alone."""

    backend = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField(help_text="PodGroup, a controller's kind (Job, Deployment, DaemonSet, …) or Pod")
    project = serializers.CharField(help_text="its runai/queue label's project, else its namespace's; empty if none")
    pools = serializers.ListField(child=serializers.CharField(), help_text="pool label, selector's pool, or nodes'")
    pool = serializers.CharField(help_text="pools, comma-separated")
    user = serializers.CharField()
    priority_class = serializers.CharField()
    preemptible = serializers.BooleanField()
    gpus = serializers.FloatField(help_text="GPUs requested by all its pods (fractions included)")
    gpus_held = serializers.FloatField(help_text="GPUs of its pods bound to a node")
    mig = serializers.DictField(child=serializers.IntegerField(), help_text="MIG slices requested, by profile")
    pods = WorkloadPodsSerializer()
    phase = serializers.ChoiceField(choices=["Pending", "Running", "Partially running", "Succeeded", "Failed"])
    reason = serializers.CharField(help_text="why a pending workload waits (its verdict's first check); else empty")
    created = serializers.DateTimeField(allow_null=True)
    started = serializers.DateTimeField(allow_null=True, help_text="when its first running pod started")
    waiting_since = serializers.DateTimeField(allow_null=True, help_text="its oldest pending pod's creation")
    likely_start = serializers.DateTimeField(
        allow_null=True,
        help_text="when a waiting workload is likely to start (SEMANTICS §10.1: the learned runtimes' medians); "
        "null when it is not waiting, none could be made, or a wait does not end its reason",
    )
    late_start = serializers.DateTimeField(
        allow_null=True, help_text="the late bound of its start (the learned runtimes' 90th percentiles)"
    )


class WorkloadPodSerializer(serializers.Serializer):
    name = serializers.CharField()
    node = serializers.CharField()
    phase = serializers.CharField()
    gpus = serializers.FloatField()
    mig = serializers.DictField(child=serializers.IntegerField())
    created = serializers.DateTimeField(allow_null=True)
    started = serializers.DateTimeField(allow_null=True)
    scheduled_reason = serializers.CharField(help_text="the PodScheduled condition's reason when not True")
    scheduled_message = serializers.CharField()
    owner = serializers.CharField(help_text="its controller, Kind/name")


class WorkloadPhaseSerializer(serializers.Serializer):
    phase = serializers.CharField()
    at = serializers.DateTimeField()
    event = serializers.CharField()
    pods = serializers.CharField()


class WorkloadDetailSerializer(WorkloadSerializer):
    pod_list = WorkloadPodSerializer(many=True)
    nodes = serializers.ListField(child=serializers.CharField())
    verdict = serializers.DictField(
        allow_null=True,
        help_text="reason, checks (reason, message, figures), victims, start (likely, late, runtime: the learned "
        "runtimes' median, p90, finished runs and basis)",
    )
    victims = serializers.ListField(child=serializers.DictField())
    history = WorkloadPhaseSerializer(many=True)
