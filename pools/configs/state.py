"""Rules that span objects: what a pool refers to, who uses an object, and that every reference resolves.
"""

from __future__ import annotations

from ..choices import TYPE_LABELS, ConfigType
from ..engine.errors import ConfigError, Problem


def pool_references(pool: dict) -> dict[ConfigType, list[tuple[str, str]]]:
    """Every name a pool body refers to, by type, each with the field that names it."""
    refs: dict[ConfigType, list[tuple[str, str]]] = {
        ConfigType.BACKEND: [("backend", pool["backend"])],
        ConfigType.POD_TEMPLATE: [("common_pod_template", n) for n in pool["common_pod_template"]],
        ConfigType.RESOURCE_VALIDATION: [
            ("common_resource_validations", n) for n in pool["common_resource_validations"]
        ],
    }
    for platform_name, platform in pool["platforms"].items():
        prefix = f"platforms.{platform_name}"
        refs[ConfigType.POD_TEMPLATE] += [
            (f"{prefix}.override_pod_template", n) for n in platform["override_pod_template"]
        ]
        refs[ConfigType.RESOURCE_VALIDATION] += [
            (f"{prefix}.resource_validations", n) for n in platform["resource_validations"]
        ]
    return refs


def users_of(state: dict, config_type: ConfigType, name: str) -> list[str]:
    """The pools whose bodies refer to ``name`` of ``config_type``, sorted."""
    return sorted(
        pool_name
        for pool_name, pool in state.get(ConfigType.POOL, {}).items()
        if any(ref == name for _, ref in pool_references(pool).get(config_type, []))
    )


def validate_state(state: dict) -> None:
    """Check the rules that span objects: every reference from a pool names an existing object."""
    problems = []
    for pool_name, pool in sorted(state.get(ConfigType.POOL, {}).items()):
        for ref_type, refs in pool_references(pool).items():
            existing = state.get(ref_type, {})
            for field, ref in refs:
                if ref not in existing:
                    problems.append(
                        Problem(
                            f"pool '{pool_name}'.{field}",
                            f"{TYPE_LABELS[ref_type]} '{ref}' does not exist",
                        )
                    )
    if problems:
        raise ConfigError(problems)
