"""Rules that span objects: what a pool, a department or a project refers to, who uses an object, and that every
reference resolves."""

from __future__ import annotations

from collections.abc import Callable

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


def default_pool_of(state: dict, pool_name: str) -> str | None:
    """The backend whose ``default_pool`` is ``pool_name``, or None."""
    for backend_name, backend in sorted(state.get(ConfigType.BACKEND, {}).items()):
        if backend.get("default_pool") == pool_name:
            return backend_name
    return None


def quota_pools(body: dict) -> list[str]:
    """The pools a department's or project's quotas name."""
    return [entry["nodePool"] for entry in body.get("resources", [])]


def quota_holders(state: dict, pool_name: str) -> dict[ConfigType, list[str]]:
    """The departments and the projects with a quota on ``pool_name``, by type, sorted (no empty entries)."""
    holders = {
        config_type: [
            name for name, body in sorted(state.get(config_type, {}).items()) if pool_name in quota_pools(body)
        ]
        for config_type in (ConfigType.DEPARTMENT, ConfigType.PROJECT)
    }
    return {config_type: names for config_type, names in holders.items() if names}


def department_projects(state: dict, department: str) -> list[str]:
    """The projects of ``department``, sorted."""
    return sorted(name for name, body in state.get(ConfigType.PROJECT, {}).items() if body["department"] == department)


# Whether the reader of a problem may see another object it is about (``sees(ConfigType.PROJECT, "x")``): an
# object they may not see is never named to them (SEMANTICS §7.4).
Sees = Callable[[ConfigType, str], bool]


def sees_everything(config_type: ConfigType, name: str) -> bool:
    return True


def named(sees: Sees, config_type: ConfigType, name: str) -> str:
    """``project 'x'``, or ``another project`` for a reader who may not see it."""
    label = TYPE_LABELS[config_type]
    return f"{label} '{name}'" if sees(config_type, name) else f"another {label}"


def listed(sees: Sees, config_type: ConfigType, names: list[str], *, quoted: bool = False) -> str:
    """``a, b`` (``'a', 'b'`` when ``quoted``) of the names the reader may see, ``and others`` for the rest (never
    their names or their number); ``others`` when none may be seen."""
    shown = [f"'{name}'" if quoted else name for name in names if sees(config_type, name)]
    if len(shown) < len(names):
        return f"{', '.join(shown)} and others" if shown else "others"
    return ", ".join(shown)


def _quota_problems(state: dict, sees: Sees) -> list[Problem]:
    """A project's department exists; every quota names an existing pool; a namespace has one project."""
    problems = []
    pools = state.get(ConfigType.POOL, {})
    departments = state.get(ConfigType.DEPARTMENT, {})
    owners: dict[str, str] = {}
    for config_type in (ConfigType.DEPARTMENT, ConfigType.PROJECT):
        for name, body in sorted(state.get(config_type, {}).items()):
            where = f"{TYPE_LABELS[config_type]} '{name}'"
            for index, pool in enumerate(quota_pools(body)):
                if pool not in pools:
                    problems.append(Problem(f"{where}.resources[{index}].nodePool", f"pool '{pool}' does not exist"))
            if config_type != ConfigType.PROJECT:
                continue
            if body["department"] not in departments:
                problems.append(Problem(f"{where}.department", f"department '{body['department']}' does not exist"))
            for namespace in body["namespaces"]:
                owner = owners.setdefault(namespace, name)
                if owner != name:
                    problems.append(
                        Problem(
                            f"{where}.namespaces",
                            f"namespace '{namespace}' belongs to {named(sees, ConfigType.PROJECT, owner)}",
                        )
                    )
    return problems


def _default_pool_problems(state: dict, sees: Sees) -> list[Problem]:
    """A backend's default pool is one of its own pools."""
    problems = []
    pools = state.get(ConfigType.POOL, {})
    for backend_name, backend in sorted(state.get(ConfigType.BACKEND, {}).items()):
        default = backend.get("default_pool")
        if not default:
            continue
        if default not in pools:
            problems.append(Problem(f"backend '{backend_name}'.default_pool", f"pool '{default}' does not exist"))
        elif pools[default]["backend"] != backend_name:
            problems.append(
                Problem(
                    f"backend '{backend_name}'.default_pool",
                    f"pool '{default}' belongs to backend '{pools[default]['backend']}', not to this one",
                )
            )
    return problems


def _node_label_problems(state: dict, sees: Sees) -> list[Problem]:
    """No two pools of a backend are defined by the same node label."""
    problems = []
    labels: dict[tuple[str, str, str], str] = {}
    for pool_name, pool in sorted(state.get(ConfigType.POOL, {}).items()):
        label = pool.get("node_label")
        if not label:
            continue
        owner = labels.setdefault((pool["backend"], label["key"], label["value"]), pool_name)
        if owner != pool_name:
            problems.append(
                Problem(
                    f"pool '{pool_name}'.node_label",
                    f"{named(sees, ConfigType.POOL, owner)} of backend '{pool['backend']}' is already the pool of "
                    f"{label['key']}={label['value']}",
                )
            )
    return problems


def _reference_problems(state: dict, sees: Sees) -> list[Problem]:
    """Every name a pool refers to exists."""
    problems = []
    for pool_name, pool in sorted(state.get(ConfigType.POOL, {}).items()):
        for ref_type, refs in pool_references(pool).items():
            existing = state.get(ref_type, {})
            for field, ref in refs:
                if ref not in existing:
                    problems.append(
                        Problem(f"pool '{pool_name}'.{field}", f"{TYPE_LABELS[ref_type]} '{ref}' does not exist")
                    )
    return problems


# The whole-state rules, each with the types it reads: a change of other types cannot break it.
STATE_RULES: tuple[tuple[frozenset[ConfigType], Callable[[dict, Sees], list[Problem]]], ...] = (
    (frozenset({ConfigType.BACKEND, ConfigType.POOL}), _default_pool_problems),
    (frozenset({ConfigType.POOL}), _node_label_problems),
    (
        frozenset({ConfigType.POOL, ConfigType.BACKEND, ConfigType.POD_TEMPLATE, ConfigType.RESOURCE_VALIDATION}),
        _reference_problems,
    ),
    (frozenset({ConfigType.DEPARTMENT, ConfigType.PROJECT, ConfigType.POOL}), _quota_problems),
)


def validate_state(state: dict, sees: Sees = sees_everything, changed: set | None = None) -> None:
    """Check the rules that span objects: every reference from a pool names an existing object, a backend's
    default pool is one of its pools, no two pools of a backend are defined by the same node label, and the
    departments' and projects' references (``_quota_problems``).

    ``changed``: the types a change touched, when only the rules reading them need checking (and only the types
    those rules read are read from ``state``). ``sees`` says which other objects a problem may name (the project
    owning a namespace, the pool holding a label): a writer is never told the name of something they may not see.
    """
    problems = []
    for reads, rule in STATE_RULES:
        if changed is None or reads & changed:
            problems.extend(rule(state, sees))
    if problems:
        raise ConfigError(problems)
