"""Inventory serializers (read-only): nodes, pods, memberships, usage samples, pool and node-pool listings, jobs."""

from __future__ import annotations

from rest_framework import serializers

from pools.choices import NodePoolStatus, NodeStatus, PlacementStrategy, ResourceType
from pools.models import Node, NodeMembership, Pod, UsageSample


class NodeSerializer(serializers.ModelSerializer):
    """A cluster node as last synced; cpu in cores, memory and storage in bytes."""

    backend = serializers.CharField(source="backend.name")
    cpu = serializers.FloatField()
    gpu = serializers.FloatField()
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True))
    taints = serializers.ListField(child=serializers.JSONField())
    conditions = serializers.ListField(child=serializers.JSONField())
    allocatable = serializers.DictField(child=serializers.JSONField())
    mig_devices = serializers.DictField(child=serializers.JSONField())

    class Meta:
        model = Node
        fields = [
            "name",
            "backend",
            "available",
            "unavailable_reason",
            "unschedulable",
            "gpu_product",
            "cpu",
            "memory",
            "storage",
            "gpu",
            "mig_devices",
            "gpu_replicas",
            "labels",
            "taints",
            "conditions",
            "allocatable",
            "synced_at",
        ]
        read_only_fields = fields


class PodSerializer(serializers.ModelSerializer):
    """A pod as last synced: where it runs, its pool label and its effective requests."""

    backend = serializers.CharField(source="backend.name")
    pool = serializers.CharField(source="pool_name")
    node = serializers.CharField(source="node_name")
    cpu = serializers.FloatField()
    gpu = serializers.FloatField()
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True))
    mig_devices = serializers.DictField(child=serializers.JSONField())

    class Meta:
        model = Pod
        fields = [
            "namespace",
            "name",
            "backend",
            "node",
            "phase",
            "pool",
            "preemptible",
            "cpu",
            "memory",
            "storage",
            "gpu",
            "mig_devices",
            "labels",
        ]
        read_only_fields = fields


class MembershipSerializer(serializers.ModelSerializer):
    """A node selected by a (pool, platform)."""

    node = serializers.CharField(source="node.name")
    backend = serializers.CharField(source="node.backend.name")
    pool = serializers.CharField(source="pool.name")
    platform = serializers.CharField(source="platform_name")

    class Meta:
        model = NodeMembership
        fields = ["node", "backend", "pool", "platform"]
        read_only_fields = fields


class UsageSampleSerializer(serializers.ModelSerializer):
    """GPUs used and allocatable at one moment, per pool or per GPU product and backend."""

    backend = serializers.CharField(source="backend.name")

    class Meta:
        model = UsageSample
        fields = ["scope", "key", "backend", "resolution", "at", "used", "capacity", "quota_used", "quota_limit"]
        read_only_fields = fields


class PoolGpuSerializer(serializers.Serializer):
    """The six GPU numbers of a pool, as OSMO's pool listing names them, and what its node set's pods use."""

    quota_used = serializers.IntegerField()
    quota_limit = serializers.IntegerField()
    quota_free = serializers.IntegerField()
    total_usage = serializers.IntegerField()
    total_capacity = serializers.IntegerField()
    total_free = serializers.IntegerField()
    used_on_nodes = serializers.IntegerField(
        help_text="GPUs pods of any pool hold on the node set's available nodes: used_on_nodes + total_free = "
        "total_capacity (total_usage counts the pool's own pods, wherever they run)"
    )


class PoolQuotaSerializer(serializers.Serializer):
    """One row of ``poolctl pool list --format json``."""

    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["ONLINE", "OFFLINE", "MAINTENANCE"])
    backend = serializers.CharField()
    shared = serializers.BooleanField()
    node_set = serializers.ListField(child=serializers.CharField())
    gpu = PoolGpuSerializer()


class PoolQuotaListSerializer(serializers.Serializer):
    """``{"pools": [...]}``."""

    pools = PoolQuotaSerializer(many=True)


class NodePoolSerializer(serializers.Serializer):
    """One row of Run:ai's node-pools view (``choices.NodePoolColumn``): memory in bytes, GPUs and CPUs as
    decimal numbers (fractions of GPUs added up, not rounded)."""

    node_pool = serializers.CharField()
    status = serializers.ChoiceField(choices=NodePoolStatus.choices)
    label_key = serializers.CharField(allow_blank=True, help_text="empty for a pool its platforms define")
    label_value = serializers.CharField(allow_blank=True)
    nodes = serializers.IntegerField()
    gpu_devices = serializers.FloatField(help_text="allocatable GPUs of the pool's nodes")
    gpu_memory = serializers.IntegerField(help_text="bytes of GPU memory of the pool's nodes")
    allocated_gpus = serializers.FloatField(help_text="GPU requests of the non-terminated pods on its nodes")
    cpus = serializers.FloatField()
    cpu_memory = serializers.IntegerField(help_text="bytes")
    allocated_cpus = serializers.FloatField()
    allocated_cpu_memory = serializers.IntegerField(help_text="bytes")
    gpu_placement_strategy = serializers.ChoiceField(choices=PlacementStrategy.values)
    cpu_placement_strategy = serializers.ChoiceField(choices=PlacementStrategy.values)
    last_update = serializers.DateTimeField()
    creation_time = serializers.DateTimeField()
    workloads = serializers.IntegerField(help_text="non-terminated pods bound to the pool's nodes")
    backend = serializers.CharField()
    default = serializers.BooleanField(help_text="the backend's default pool (cannot be deleted)")


class NodePoolListSerializer(serializers.Serializer):
    """``{"node_pools": [...]}``."""

    node_pools = NodePoolSerializer(many=True)


class UsagePairSerializer(serializers.Serializer):
    """Used and capacity, used rounded up and capacity rounded down."""

    used = serializers.IntegerField()
    capacity = serializers.IntegerField()


class ResourceSerializer(serializers.Serializer):
    """One row of ``poolctl resource list --format json``: a (node, pool, platform), or an unused node."""

    node = serializers.CharField()
    backend = serializers.CharField()
    pool = serializers.CharField(allow_blank=True)
    platform = serializers.CharField(allow_blank=True)
    type = serializers.ChoiceField(choices=ResourceType.choices)
    status = serializers.ChoiceField(choices=NodeStatus.choices)
    gpu_product = serializers.CharField(allow_blank=True)
    available = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    gpu = UsagePairSerializer()
    cpu = UsagePairSerializer()
    memory_gi = UsagePairSerializer()
    storage_gi = UsagePairSerializer()
    mig = serializers.DictField(child=UsagePairSerializer())
    time_sliced = serializers.BooleanField()


class ResourceListSerializer(serializers.Serializer):
    """``{"resources": [...]}``."""

    resources = ResourceSerializer(many=True)


class JobSerializer(serializers.Serializer):
    """A task started over the API; poll it until ``done``."""

    id = serializers.CharField()
    task = serializers.CharField()
    backend = serializers.CharField()
    state = serializers.ChoiceField(
        choices=["PENDING", "STARTED", "SUCCESS", "FAILURE"],
        help_text="PENDING: queued for a worker; STARTED: a worker runs it; FAILURE: see `error` (a broker out of "
        "reach fails it at once)",
    )
    done = serializers.BooleanField()
    result = serializers.DictField(child=serializers.JSONField(), allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
