"""Shapes of the API: config objects in their OSMO bodies, read-only inventory rows, action requests and results.

Config objects are shown as ``{"name": ..., **canonical body}``, the body being exactly what
``poolctl config show`` prints (from the selectors), so a pool reads like the seeds' ``platform_config.json``
and can be posted back unchanged. Writes do not go through DRF field validation: the request body is
handed to the services, which check it as a whole and name each bad field; the fields declared here
document the shapes in the OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from rest_framework import serializers

from accounts.models import SyncMode
from pools.choices import (
    BackendKind,
    ConfigType,
    ConsumptionBy,
    NodePoolStatus,
    NodeStatus,
    PlacementStrategy,
    ResourceType,
)
from pools.configs.fields import (
    PLATFORM_DOCUMENT,
    POOL_DOCUMENT,
    backend_body,
    department_body,
    platform_body,
    pool_body,
    project_body,
    role_body,
)
from pools.engine.errors import ConfigError, Problem
from pools.engine.validation import OPERATORS
from pools.models import Backend, ConfigRevision, GpuConsumption, Node, NodeMembership, Platform, Pod, UsageSample
from pools.querysets import quotas_visible

NAME_HELP = "Unique name: a letter first, then letters, digits, '_', '.' or '-', ending with a letter or digit."


def _object_body(data: Any) -> dict:
    if not isinstance(data, dict):
        raise ConfigError("the request body must be a JSON object")
    return dict(data)


class ConfigObjectSerializer(serializers.Serializer):
    """A config object: its name and its canonical OSMO body, side by side."""

    config_type: ConfigType
    name = serializers.CharField(required=False, max_length=128, help_text=NAME_HELP)

    # Each type names where its stored objects' canonical body comes from (as ``poolctl config show`` prints it).
    read_body: Callable[[Any], Any]

    @classmethod
    def body(cls, instance) -> Any:
        """The canonical body of a stored object: what its revision stores and its ETag covers."""
        return cls.read_body(instance)

    @classmethod
    def document(cls, name: str, body: Any) -> dict:
        """The object as the API shows it (without read-only status): its name beside its canonical body."""
        return {"name": name, **{key: value for key, value in body.items() if key != "name"}}

    @classmethod
    def body_from_request(cls, data: dict) -> Any:
        """The service body of a request (the request without ``name``)."""
        return {key: value for key, value in data.items() if key != "name"}

    def to_representation(self, instance):
        return self.document(instance.name, self.body(instance))

    def to_internal_value(self, data):
        return _object_body(data)


class BackendStatusSerializer(serializers.Serializer):
    """What the last contact with the cluster left behind (read-only, not part of the configuration)."""

    builtin = serializers.BooleanField()
    last_heartbeat = serializers.DateTimeField(allow_null=True)
    last_sync_at = serializers.DateTimeField(allow_null=True)
    last_sync_duration = serializers.FloatField(allow_null=True)
    last_sync_error = serializers.CharField(allow_blank=True)
    last_sync_counts = serializers.DictField(child=serializers.JSONField())
    utilization_at = serializers.DateTimeField(allow_null=True, help_text="last successful read of GPU utilization")
    utilization_error = serializers.CharField(allow_blank=True, help_text="why the last read failed")


class BackendSerializer(ConfigObjectSerializer):
    """A cluster backend (SEMANTICS.md §1); ``status`` is read-only."""

    config_type = ConfigType.BACKEND
    description = serializers.CharField(required=False, allow_blank=True)
    kind = serializers.ChoiceField(choices=BackendKind.choices, required=False)
    source = serializers.CharField(required=False, allow_blank=True, help_text="file: path to a Kubernetes List")
    kubeconfig = serializers.CharField(required=False, allow_blank=True)
    context = serializers.CharField(required=False, allow_blank=True)
    in_cluster = serializers.BooleanField(required=False)
    seed = serializers.IntegerField(required=False, allow_null=True)
    size = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    node_conditions = serializers.DictField(child=serializers.CharField(), required=False)
    pool_label = serializers.CharField(required=False)
    priority_label = serializers.CharField(required=False)
    writable = serializers.BooleanField(required=False)
    pool_label_key = serializers.CharField(required=False, help_text="node label of gpuctl pools (runwhere.ai/pool)")
    default_pool = serializers.CharField(
        required=False, allow_blank=True, help_text="the pool holding the nodes in no other pool of this backend"
    )
    prometheus_url = serializers.CharField(
        required=False, allow_blank=True, help_text="Prometheus scraping the cluster's DCGM exporters"
    )
    prometheus_token_env = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="environment variable (GPUPOOL_PROMETHEUS_...) holding a bearer token or user:password",
    )
    status = BackendStatusSerializer(read_only=True)

    read_body = staticmethod(backend_body)

    @classmethod
    def body_from_request(cls, data: dict) -> dict:
        return {key: value for key, value in data.items() if key not in ("name", "status")}

    def to_representation(self, instance: Backend):
        status = BackendStatusSerializer(instance).data
        return {**super().to_representation(instance), "status": status}


def document_fields(document, **special: serializers.Field) -> dict[str, serializers.Field]:
    """The serializer fields of a config document (``pools.configs.fields``), for the OpenAPI schema."""
    kinds = {
        "text": lambda help: serializers.CharField(required=False, allow_blank=True, help_text=help),
        "duration": lambda help: serializers.CharField(required=False, allow_blank=True, help_text=help),
        "flag": lambda help: serializers.BooleanField(required=False, help_text=help),
        "names": lambda help: serializers.ListField(child=serializers.CharField(), required=False, help_text=help),
        "variables": lambda help: serializers.DictField(child=serializers.JSONField(), required=False, help_text=help),
        "object": lambda help: serializers.DictField(child=serializers.JSONField(), required=False, help_text=help),
        "list": lambda help: serializers.ListField(child=serializers.JSONField(), required=False, help_text=help),
        "reference": lambda help: serializers.CharField(required=False, help_text=help),
        "label": lambda help: serializers.DictField(child=serializers.CharField(), required=False, help_text=help),
        "resources": lambda help: serializers.DictField(child=serializers.JSONField(), required=False, help_text=help),
    }

    def serializer_field(field) -> serializers.Field:
        if field.kind == "choice":
            return serializers.ChoiceField(choices=list(field.choices), required=False, help_text=field.help)
        return kinds[field.kind](field.help)

    return {field.name: special.get(field.name) or serializer_field(field) for field in document}


PlatformBodySerializer = type(
    "PlatformBodySerializer",
    (serializers.Serializer,),
    {
        "__doc__": "One platform of a pool, as it sits in the pool body's ``platforms`` mapping.",
        "__module__": __name__,
        **document_fields(PLATFORM_DOCUMENT),
    },
)
PoolSerializer = type(
    "PoolSerializer",
    (ConfigObjectSerializer,),
    {
        "__doc__": "A pool in OSMO's shape, its platforms nested by name (the seeds' ``platform_config.json``).",
        "__module__": __name__,
        "config_type": ConfigType.POOL,
        "read_body": staticmethod(pool_body),
        **document_fields(
            POOL_DOCUMENT,
            platforms=serializers.DictField(
                child=PlatformBodySerializer(), required=False, help_text="platform name → platform"
            ),
        ),
    },
)


class PlatformSerializer(PlatformBodySerializer):
    """A platform addressed on its own (``/api/pools/{pool}/platforms/{name}/``); writes change its pool."""

    name = serializers.CharField(required=False, max_length=128, help_text=NAME_HELP)
    pool = serializers.CharField(read_only=True)

    @classmethod
    def body_from_request(cls, data: dict) -> dict:
        return {key: value for key, value in data.items() if key not in ("name", "pool")}

    def to_representation(self, instance: Platform):
        return {"name": instance.name, "pool": instance.pool.name, **platform_body(instance)}

    def to_internal_value(self, data):
        return _object_body(data)


class PodTemplateSerializer(ConfigObjectSerializer):
    """A pod template: a partial Pod (``metadata``, ``spec``); any other top-level key of the template is kept."""

    config_type = ConfigType.POD_TEMPLATE
    metadata = serializers.DictField(child=serializers.JSONField(), required=False)
    spec = serializers.DictField(child=serializers.JSONField(), required=False)

    read_body = staticmethod(attrgetter("spec"))


class RuleSerializer(serializers.Serializer):
    """One resource-validation rule (SEMANTICS.md §4)."""

    operator = serializers.ChoiceField(choices=sorted(OPERATORS))
    left_operand = serializers.CharField()
    right_operand = serializers.CharField()
    assert_message = serializers.CharField(required=False, allow_blank=True)


class ResourceValidationSerializer(ConfigObjectSerializer):
    """A named, ordered list of rules."""

    config_type = ConfigType.RESOURCE_VALIDATION
    rules = RuleSerializer(many=True, required=False)

    read_body = staticmethod(attrgetter("rules"))

    @classmethod
    def document(cls, name: str, body: list) -> dict:
        return {"name": name, "rules": body}

    @classmethod
    def body_from_request(cls, data: dict) -> list:
        unknown = sorted(key for key in data if key not in ("name", "rules"))
        if unknown:
            raise ConfigError([Problem(key, "unknown field; expected name and rules") for key in unknown])
        return data.get("rules", [])


class PolicySerializer(serializers.Serializer):
    """Allow or Deny ``actions`` on ``resources`` (SEMANTICS.md §7)."""

    effect = serializers.ChoiceField(choices=["Allow", "Deny"], required=False)
    actions = serializers.ListField(child=serializers.CharField())
    resources = serializers.ListField(child=serializers.CharField(), required=False)


class RoleSerializer(ConfigObjectSerializer):
    """A role: policies, the identity-provider roles mapped to it and how sign-in syncs it."""

    config_type = ConfigType.ROLE
    description = serializers.CharField(required=False, allow_blank=True)
    policies = PolicySerializer(many=True, required=False)
    external_roles = serializers.ListField(child=serializers.CharField(), required=False)
    sync_mode = serializers.ChoiceField(choices=SyncMode.choices, required=False)
    immutable = serializers.BooleanField(required=False)

    read_body = staticmethod(role_body)


class RoleGenerateSerializer(serializers.Serializer):
    """``osmo-<prefix>``: a role granting ``workflow:*`` and ``pool:Read`` on ``pool/<prefix>*``."""

    name = serializers.RegexField(r"^osmo-.+$", max_length=128, help_text="osmo-<pool name prefix>")
    description = serializers.CharField(required=False, allow_blank=True, default="")


# --- inventory (read-only) ------------------------------------------------------------------------------


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


# --- actions ------------------------------------------------------------------------------------------


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


class PoolGpuSerializer(serializers.Serializer):
    """The six GPU numbers of a pool, as OSMO's pool listing names them."""

    quota_used = serializers.IntegerField()
    quota_limit = serializers.IntegerField()
    quota_free = serializers.IntegerField()
    total_usage = serializers.IntegerField()
    total_capacity = serializers.IntegerField()
    total_free = serializers.IntegerField()


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
        choices=["SENT", "PENDING", "STARTED", "RETRY", "SUCCESS", "FAILURE", "REVOKED"],
        help_text="SENT: queued, and no result backend is configured to tell more",
    )
    done = serializers.BooleanField()
    result = serializers.DictField(child=serializers.JSONField(), allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_blank=True)


# --- gpuctl's label pools (SEMANTICS §8.1) -------------------------------------------------------------------


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
    backend = serializers.CharField(required=False, help_text="default: the only writable kubernetes backend")
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


# --- quotas (SEMANTICS §9) -------------------------------------------------------------------------------------


class QuotaFiguresSerializer(serializers.Serializer):
    deserved = serializers.FloatField(required=False, help_text="guaranteed; -1 = the whole pool (default 0)")
    limit = serializers.FloatField(required=False, help_text="at most; -1 = unlimited (default), 0 = none")


class GpuQuotaSerializer(QuotaFiguresSerializer):
    overQuotaWeight = serializers.JSONField(  # noqa: N815 (Run:ai's field name)
        required=False, help_text="0 Lowest, 1 Low, 2 Medium (default), 3 High, any number >= 0; null = None"
    )


class NodePoolQuotaSerializer(serializers.Serializer):
    """One entry of Run:ai's ``resources``: a unit's quota on one node pool (CPU memory in MiB)."""

    nodePool = serializers.CharField(help_text="pool name")  # noqa: N815 (Run:ai's field name)
    priority = serializers.IntegerField(required=False, help_text="rank among siblings, higher first (100)")
    gpu = GpuQuotaSerializer(required=False)
    cpu = QuotaFiguresSerializer(required=False, help_text="CPU cores")
    memory = QuotaFiguresSerializer(required=False, help_text="CPU memory, MiB")


class QuotaHolderSerializer(ConfigObjectSerializer):
    """A department or a project as the caller may see it: without its quotas on pools hidden from them."""

    def to_representation(self, instance):
        body = self.body(instance)
        request = self.context.get("request")
        if request is not None:
            body = quotas_visible(request.user, body)
        return self.document(instance.name, body)


class DepartmentSerializer(QuotaHolderSerializer):
    """A department: its quotas per node pool; its projects divide its share."""

    config_type = ConfigType.DEPARTMENT
    description = serializers.CharField(required=False, allow_blank=True)
    resources = NodePoolQuotaSerializer(many=True, required=False)

    read_body = staticmethod(department_body)


class ProjectSerializer(QuotaHolderSerializer):
    """A project: its department, the namespaces whose workloads it owns, its quotas per node pool."""

    config_type = ConfigType.PROJECT
    description = serializers.CharField(required=False, allow_blank=True)
    department = serializers.CharField()
    namespaces = serializers.ListField(child=serializers.CharField(), required=False, help_text="runai-<name>")
    resources = NodePoolQuotaSerializer(many=True, required=False)

    read_body = staticmethod(project_body)


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


class QuotaSimulationSerializer(serializers.Serializer):
    capacity = serializers.FloatField(help_text="allocatable GPUs of the pool's available nodes")
    queues = QueueSerializer(many=True)


class FairShareSerializer(serializers.Serializer):
    fair_share = serializers.DictField(child=serializers.FloatField(), help_text="unit name -> fair share in GPUs")


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
    fair_share = serializers.FloatField(help_text="what the scheduler steers towards (SEMANTICS §9.1)")
    over_fair_share = serializers.FloatField(help_text="max(0, allocated - fair_share)")
    workloads = serializers.IntegerField(help_text="its pods asking for GPUs there, bound to a node or waiting")


class QuotaListSerializer(serializers.Serializer):
    quotas = QuotaFiguresRowSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField(), help_text="SEMANTICS §9's warnings")


# --- GPU utilization: idle GPUs and GPU-hours (issue 13) -------------------------------------------------------


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
