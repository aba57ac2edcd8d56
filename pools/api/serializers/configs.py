"""Config object serializers: backends, pools, platforms, pod templates, validations, roles, departments, projects."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from rest_framework import serializers

from accounts.models import SyncMode
from pools.choices import BackendKind, ConfigType
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
from pools.models import Backend, Platform
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
    sync_holder = serializers.CharField(
        allow_null=True, default=None, help_text="who syncs it now (its sync lease's holder: host:pid:thread)"
    )
    sync_since = serializers.DateTimeField(allow_null=True, default=None, help_text="since when the holder syncs it")
    sync_expires = serializers.DateTimeField(
        allow_null=True, default=None, help_text="when the lease frees itself unless its holder renews it"
    )


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
    fair_share = serializers.JSONField(
        required=False,
        help_text='time-based fair share (SEMANTICS §9.3): {"k_value": 0, "window": "7d", "half_life": null}',
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


class MemberSerializer(serializers.Serializer):
    """One who belongs to a department or a project, and their role there (SEMANTICS §9.4)."""

    kind = serializers.ChoiceField(choices=["user", "group", "service_account"], help_text="group: an IdP group")
    name = serializers.CharField(help_text="username, or the IdP group as a whole value (/team-a)")
    role = serializers.ChoiceField(
        choices=["researcher", "viewer", "admin"], help_text="admin: a department's only (manages its projects)"
    )


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
    members = MemberSerializer(many=True, required=False)

    read_body = staticmethod(department_body)


class ProjectSerializer(QuotaHolderSerializer):
    """A project: its department, the namespaces whose workloads it owns, its quotas per node pool."""

    config_type = ConfigType.PROJECT
    description = serializers.CharField(required=False, allow_blank=True)
    department = serializers.CharField()
    namespaces = serializers.ListField(child=serializers.CharField(), required=False, help_text="runai-<name>")
    resources = NodePoolQuotaSerializer(many=True, required=False)
    members = MemberSerializer(many=True, required=False)

    read_body = staticmethod(project_body)
