"""The built-in configuration every installation has, in canonical body form (SEMANTICS.md §1).

A data migration installs them on every new database, so the seeds' examples, which name
``default_user``, ``default_ctrl``, ``default_cpu`` and the backend ``default``, work as written.
``poolctl config restore-builtins`` puts them back to these bodies.
"""

from .choices import ConfigType
from .engine.permissions import BUILTIN_ROLES

RESOURCE_NAMES = {
    "cpu": "cpu",
    "memory": "memory",
    "gpu": "nvidia.com/gpu",
    "storage": "ephemeral-storage",
}

_user_resources = {
    "cpu": "{{USER_CPU}}",
    "memory": "{{USER_MEMORY}}",
    "nvidia.com/gpu": "{{USER_GPU}}",
    "ephemeral-storage": "{{USER_STORAGE}}",
}

POD_TEMPLATES = {
    "default_user": {
        "spec": {
            "containers": [
                {
                    "name": "{{USER_CONTAINER_NAME}}",
                    "resources": {"requests": dict(_user_resources), "limits": dict(_user_resources)},
                }
            ]
        }
    },
    "default_ctrl": {
        "metadata": {"labels": {"osmo.pool": "{{WF_POOL}}", "osmo.platform": "{{WF_PLATFORM}}"}},
        "spec": {
            "containers": [
                {
                    "name": "osmo-ctrl",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"cpu": "500m", "memory": "512Mi"},
                    },
                }
            ]
        },
    },
}


def _rules(*rules):
    return [
        {"operator": op, "left_operand": left, "right_operand": right, "assert_message": message}
        for op, left, right, message in rules
    ]


RESOURCE_VALIDATIONS = {
    "default_cpu": _rules(
        ("GT", "{{USER_CPU}}", "0", "CPU request must be positive, got {{USER_CPU}}"),
        ("LE", "{{USER_CPU}}", "{{K8_CPU}}", "CPU request {{USER_CPU}} exceeds the node's allocatable {{K8_CPU}}"),
    ),
    "default_memory": _rules(
        ("GT", "{{USER_MEMORY}}", "0", "Memory request must be positive, got {{USER_MEMORY}}"),
        (
            "LE",
            "{{USER_MEMORY}}",
            "{{K8_MEMORY}}",
            "Memory request {{USER_MEMORY}} exceeds the node's allocatable {{K8_MEMORY}} bytes",
        ),
    ),
    "default_storage": _rules(
        ("GE", "{{USER_STORAGE}}", "0", "Storage request must not be negative, got {{USER_STORAGE}}"),
        (
            "LE",
            "{{USER_STORAGE}}",
            "{{K8_STORAGE}}",
            "Storage request {{USER_STORAGE}} exceeds the node's allocatable {{K8_STORAGE}} bytes",
        ),
    ),
    "default_gpu": _rules(
        ("GE", "{{USER_GPU}}", "0", "GPU request must not be negative, got {{USER_GPU}}"),
        ("LE", "{{USER_GPU}}", "{{K8_GPU}}", "GPU request {{USER_GPU}} exceeds the node's allocatable {{K8_GPU}} GPUs"),
    ),
}

BACKENDS = {
    "default": {
        "description": "The default backend",
        "kind": "file",
        "source": "",
        "kubeconfig": "",
        "context": "",
        "in_cluster": False,
        "seed": None,
        "size": None,
        "node_conditions": {"Ready": "True"},
        "pool_label": "osmo.pool",
        "priority_label": "osmo.priority",
        "writable": False,
        "pool_label_key": "runwhere.ai/pool",
        "default_pool": "",
        "prometheus_url": "",
        "prometheus_token_env": "",
        "fair_share": {"k_value": 0, "window": "7d", "half_life": None},
    }
}

ROLES = {
    name: {
        "description": role["description"],
        "policies": role["policies"],
        "external_roles": [],
        "sync_mode": "import",
        "immutable": role["immutable"],
    }
    for name, role in BUILTIN_ROLES.items()
}

BUILTINS = {
    ConfigType.BACKEND: BACKENDS,
    ConfigType.POD_TEMPLATE: POD_TEMPLATES,
    ConfigType.RESOURCE_VALIDATION: RESOURCE_VALIDATIONS,
    ConfigType.ROLE: ROLES,
}
