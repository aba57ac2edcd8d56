"""Config documents: reading files, normalising bodies, validating a whole configuration state.

A *state* maps each config type to ``{name: body}``, bodies in the canonical OSMO shape that
``poolctl config show`` prints and every revision stores. Writes work on states: the services build
the state a change would produce, this module checks it as a whole (field types, names, references,
timeouts), and only then is anything written. That is what makes an import all-or-nothing and a
rollback safe, with one set of rules for every entry point.

This module does not touch the database.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from .choices import BackendKind, ConfigType
from .engine.documents import load_json, load_yaml
from .engine.errors import ConfigError, DocumentError, EngineError, Problem
from .engine.identity import SYNC_MODES
from .engine.policy import parse_policies, policies_from_legacy_actions
from .engine.quantities import parse_duration
from .engine.validation import parse_rules
from .inventory.files import FileTooLarge, inventory_path_problem, read_bounded_text

# Names of every config object and platform (no spaces or colons: Node.placements relies on it).
NAME_RE = re.compile(r"^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$")

TYPE_LABELS = {
    ConfigType.BACKEND: "backend",
    ConfigType.POD_TEMPLATE: "pod template",
    ConfigType.RESOURCE_VALIDATION: "resource validation",
    ConfigType.POOL: "pool",
    ConfigType.ROLE: "role",
}

# The keys of OSMO's Helm values that hold each config type (snake_case spellings accepted too).
BUNDLE_KEYS = {
    "backends": ConfigType.BACKEND,
    "podTemplates": ConfigType.POD_TEMPLATE,
    "pod_templates": ConfigType.POD_TEMPLATE,
    "resourceValidations": ConfigType.RESOURCE_VALIDATION,
    "resource_validations": ConfigType.RESOURCE_VALIDATION,
    "pools": ConfigType.POOL,
    "roles": ConfigType.ROLE,
}

POOL_TIMEOUTS = ("default_exec_timeout", "default_queue_timeout", "max_exec_timeout", "max_queue_timeout")

# What the database columns hold (PostgreSQL's integer is 32-bit signed), so a value is refused, not overflowed.
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
# A simulated fleet is generated in memory on every sync: a bound that still covers the largest clusters.
MAX_SIMULATED_NODES = 100_000
# Config files given to poolctl; request bodies are bounded by DATA_UPLOAD_MAX_MEMORY_SIZE instead.
MAX_DOCUMENT_BYTES = 16 * 1024**2
# Numbers as people type them for variables: short enough to be an int64 or a float without surprise.
_WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}", re.ASCII)
_DECIMAL_NUMBER = re.compile(r"-?[0-9]{1,18}\.[0-9]{1,18}", re.ASCII)
_REVISION_NUMBER = re.compile(r"[0-9]{1,10}", re.ASCII)


def parse_config_type(value: str) -> ConfigType:
    """Read a config type as users type it: any case, dashes or underscores (``pod-template``)."""
    key = value.strip().upper().replace("-", "_")
    try:
        return ConfigType(key)
    except ValueError:
        choices = ", ".join(ConfigType.values)
        raise ConfigError(f"unknown config type '{value}'; choose one of {choices}") from None


# --- reading files ---------------------------------------------------------------------------------


def parse_document(text: str, *, filename: str = "") -> Any:
    """Parse JSON or YAML text; a syntax error names the file, line and column.

    JSON is tried for ``.json`` files and for text that starts with ``{`` or ``[`` (so broken JSON gets
    a JSON error, not a confusing YAML one); anything else is read as YAML. Either is refused past the
    bounds of ``engine.documents``: 64 levels of nesting, YAML aliases, numbers out of range, NUL.
    """
    label = filename or "document"
    stripped = text.lstrip()
    try:
        if filename.endswith(".json") or stripped.startswith(("{", "[")):
            return load_json(text)
        return load_yaml(text)
    except DocumentError as exc:
        raise ConfigError(f"{label}: {exc}") from None


def read_document(path: str) -> Any:
    """Read and parse a file; a missing, unreadable or oversized file is a ConfigError, not a traceback."""
    try:
        text = read_bounded_text(path, limit=MAX_DOCUMENT_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"file not found: {path}") from None
    except FileTooLarge as exc:
        raise ConfigError(f"cannot read {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return parse_document(text, filename=path)


# --- splitting documents into {type: {name: body}} -------------------------------------------------


def is_bundle(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and all(key in BUNDLE_KEYS for key in data)


def infer_config_type(body: Any) -> ConfigType:
    """Guess what a name-keyed entry is from its shape (used by ``config import`` of a name-keyed file)."""
    if isinstance(body, list):
        return ConfigType.RESOURCE_VALIDATION
    if isinstance(body, dict):
        if {"platforms", "backend", "common_pod_template", "common_resource_validations"} & body.keys():
            return ConfigType.POOL
        if {"policies", "actions", "external_roles"} & body.keys():
            return ConfigType.ROLE
        if body.get("kind") in BackendKind.values:
            return ConfigType.BACKEND
    return ConfigType.POD_TEMPLATE


def entries_of(value: Any, config_type: ConfigType, *, where: str) -> dict[str, Any]:
    """A bundle section as ``{name: body}``; sections may be name-keyed mappings or lists of bodies with ``name``."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        entries = {}
        for index, item in enumerate(value, 1):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ConfigError(f"entry {index} needs a 'name'", field=where)
            body = dict(item)
            entries[body.pop("name")] = body
        return entries
    raise ConfigError(f"must be a mapping of names to {TYPE_LABELS[config_type]}s", field=where)


def split_document(data: Any, *, config_type: ConfigType | None = None, name: str | None = None) -> dict:
    """Turn any accepted document into ``{config_type: {name: raw body}}``.

    Accepted: a bundle with OSMO Helm-values keys; a name-keyed file (``{"l40s": {...}}``); a single body
    with a ``name`` field (a pool body like the seeds' ``platform_config.json``, a role); or, when both
    the type and the name are given, the bare body itself.
    """
    if is_bundle(data):
        if config_type is not None:
            raise ConfigError("this file is a bundle of several config types; use 'poolctl config import'")
        changes: dict = {}
        for key, value in data.items():
            ctype = BUNDLE_KEYS[key]
            changes.setdefault(ctype, {}).update(entries_of(value, ctype, where=key))
        return changes

    if config_type is None:
        if (
            isinstance(data, dict)
            and isinstance(data.get("name"), str)
            and infer_config_type(data) != ConfigType.POD_TEMPLATE
        ):
            ctype = infer_config_type(data)
            body = dict(data)
            return {ctype: {body.pop("name"): body}}
        if not isinstance(data, dict) or not data:
            raise ConfigError("expected a bundle, a name-keyed mapping or a pool body with 'name'")
        changes = {}
        for entry_name, body in data.items():
            changes.setdefault(infer_config_type(body), {})[entry_name] = body
        return changes

    label = TYPE_LABELS[config_type]
    if name is not None:
        if isinstance(data, dict) and set(data) == {name}:
            return {config_type: {name: data[name]}}
        if (
            isinstance(data, dict)
            and isinstance(data.get("name"), str)
            and config_type in (ConfigType.POOL, ConfigType.ROLE)
        ):
            if data["name"] != name:
                raise ConfigError(f"the file describes {label} '{data['name']}', not '{name}'")
            body = dict(data)
            body.pop("name")
            return {config_type: {name: body}}
        return {config_type: {name: data}}

    if (
        isinstance(data, dict)
        and isinstance(data.get("name"), str)
        and config_type in (ConfigType.POOL, ConfigType.ROLE)
    ):
        body = dict(data)
        return {config_type: {body.pop("name"): body}}
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"expected a mapping of {label} names to bodies (or give the name)")
    return {config_type: dict(data)}


# --- normalising bodies ----------------------------------------------------------------------------


class _Reader:
    """Reads fields of one body, collecting problems with their dotted paths."""

    def __init__(self, body: Any, where: str):
        self.where = where
        self.problems: list[Problem] = []
        if body is None:
            body = {}
        if not isinstance(body, dict):
            self.problems.append(Problem(where, "must be a JSON object"))
            body = {}
        self.body = body

    def path(self, key: str) -> str:
        return f"{self.where}.{key}"

    def fail(self, key: str, message: str):
        self.problems.append(Problem(self.path(key), message))

    def reject_unknown(self, allowed: set[str]):
        for key in self.body:
            if key not in allowed:
                self.fail(key, f"unknown field; expected one of {', '.join(sorted(allowed))}")

    def string(self, key: str, default: str = "", max_length: int | None = None) -> str:
        value = self.body.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(key, "must be a string")
            return default
        text = str(value)
        if max_length is not None and len(text) > max_length:
            self.fail(key, f"must be at most {max_length} characters")
            return default
        return text

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.body.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(key, "must be true or false")
            return default
        return value

    def integer(
        self, key: str, default: int | None, minimum: int = INT32_MIN, maximum: int = INT32_MAX
    ) -> int | None:
        """A whole number between ``minimum`` and ``maximum``, by default what a database integer holds."""
        value = self.body.get(key, default)
        if value is None:
            return default
        problem = whole_number_problem(value, minimum, maximum)
        if problem:
            self.fail(key, problem)
            return default
        return value

    def mapping(self, key: str) -> dict:
        value = self.body.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, "must be a JSON object")
            return {}
        return copy.deepcopy(value)

    def variables(self, key: str) -> dict:
        values = self.mapping(key)
        for var, value in values.items():
            if not isinstance(var, str) or not var:
                self.fail(key, f"variable name {var!r} must be a non-empty string")
            elif isinstance(value, (dict, list)):
                self.fail(f"{key}.{var}", "must be a string, number, boolean or null")
        return values

    def names(self, key: str) -> list[str]:
        value = self.body.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(key, "must be a list of names")
            return []
        return list(value)

    def items(self, key: str) -> list:
        value = self.body.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(key, "must be a list")
            return []
        return copy.deepcopy(value)


def whole_number_problem(value: Any, minimum: int = INT32_MIN, maximum: int = INT32_MAX) -> str | None:
    """Why ``value`` is not a whole number between ``minimum`` and ``maximum``, or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "must be a whole number"
    if not minimum <= value <= maximum:
        return f"must be a whole number from {minimum} to {maximum}"
    return None


def check_name(name: Any, where: str) -> list[Problem]:
    if not isinstance(name, str) or not NAME_RE.match(name):
        return [
            Problem(
                where,
                f"name {name!r} must start with a letter, end with a letter or digit, "
                "and contain only letters, digits, '_', '.' and '-'",
            )
        ]
    if len(name) > 128:
        return [Problem(where, "name is longer than 128 characters")]
    return []


def normalize_backend(body: Any, where: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown(
        {
            "description",
            "kind",
            "source",
            "kubeconfig",
            "context",
            "in_cluster",
            "seed",
            "size",
            "node_conditions",
            "pool_label",
            "priority_label",
            "writable",
        }
    )
    kind = reader.string("kind", BackendKind.FILE)
    if kind not in BackendKind.values:
        reader.fail("kind", f"'{kind}' is not one of {', '.join(BackendKind.values)}")
    conditions = reader.mapping("node_conditions") if "node_conditions" in reader.body else {"Ready": "True"}
    for condition, status in conditions.items():
        if status not in ("True", "False", "Unknown"):
            reader.fail(f"node_conditions.{condition}", 'must be "True", "False" or "Unknown"')
    normalized = {
        "description": reader.string("description"),
        "kind": kind,
        "source": reader.string("source", max_length=1024),
        "kubeconfig": reader.string("kubeconfig", max_length=1024),
        "context": reader.string("context", max_length=256),
        "in_cluster": reader.boolean("in_cluster"),
        "seed": reader.integer("seed", None),
        "size": reader.integer("size", None, minimum=0, maximum=MAX_SIMULATED_NODES),
        "node_conditions": conditions,
        "pool_label": reader.string("pool_label", "osmo.pool", max_length=253) or "osmo.pool",
        "priority_label": reader.string("priority_label", "osmo.priority", max_length=253) or "osmo.priority",
        "writable": reader.boolean("writable"),
    }
    if normalized["writable"] and kind != BackendKind.KUBERNETES:
        reader.fail("writable", "only a kubernetes backend can be writable")
    if normalized["source"] and kind in (BackendKind.FILE, BackendKind.SIMULATED):
        problem = inventory_path_problem(normalized["source"])
        if problem:
            reader.fail("source", problem)
    return normalized, reader.problems


def normalize_pod_template(body: Any, where: str) -> tuple[dict, list[Problem]]:
    if not isinstance(body, dict):
        return {}, [Problem(where, "a pod template must be a JSON object (a partial pod: metadata, spec)")]
    spec = body.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return {}, [Problem(f"{where}.spec", "must be a JSON object")]
    return copy.deepcopy(body), []


def normalize_resource_validation(body: Any, where: str, name: str) -> tuple[list, list[Problem]]:
    try:
        rules = parse_rules(body, source=name)
    except EngineError as exc:
        return [], [Problem(where, str(exc))]
    normalized = [
        {
            "operator": rule.operator,
            "left_operand": rule.left_operand,
            "right_operand": rule.right_operand,
            "assert_message": rule.assert_message,
        }
        for rule in rules
    ]
    return normalized, []


PLATFORM_FIELDS = {
    "description",
    "host_network_allowed",
    "privileged_allowed",
    "allowed_mounts",
    "default_variables",
    "resource_validations",
    "override_pod_template",
}
POOL_FIELDS = {
    "name",
    "description",
    "backend",
    "default_platform",
    "enable_maintenance",
    "common_default_variables",
    "common_resource_validations",
    "common_pod_template",
    *POOL_TIMEOUTS,
    "default_exit_actions",
    "action_permissions",
    "resources",
    "topology_keys",
    "platforms",
}


def normalize_platform(body: Any, where: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown(PLATFORM_FIELDS)
    normalized = {
        "description": reader.string("description"),
        "host_network_allowed": reader.boolean("host_network_allowed"),
        "privileged_allowed": reader.boolean("privileged_allowed"),
        "default_variables": reader.variables("default_variables"),
        "resource_validations": reader.names("resource_validations"),
        "override_pod_template": reader.names("override_pod_template"),
        "allowed_mounts": reader.items("allowed_mounts"),
    }
    return normalized, reader.problems


def normalize_gpu_resources(reader: _Reader) -> dict:
    resources = reader.mapping("resources")
    gpu = resources.get("gpu") if isinstance(resources.get("gpu"), dict) else {}
    if "gpu" in resources and not isinstance(resources["gpu"], dict):
        reader.fail("resources.gpu", "must be a JSON object")
    normalized_gpu = {}
    for key, default, minimum in (("guarantee", -1, -1), ("maximum", -1, -1), ("weight", 1, 0)):
        value = gpu.get(key, default)
        problem = whole_number_problem(value, minimum)
        if problem:
            reader.fail(f"resources.gpu.{key}", problem)
            value = default
        normalized_gpu[key] = value
    if normalized_gpu["maximum"] >= 0 and normalized_gpu["guarantee"] > normalized_gpu["maximum"]:
        reader.fail("resources.gpu.guarantee", "must not exceed resources.gpu.maximum")
    resources["gpu"] = normalized_gpu
    return resources


def normalize_pool(body: Any, where: str, name: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown(POOL_FIELDS)
    if "name" in reader.body and reader.body["name"] != name:
        reader.fail("name", f"'{reader.body['name']}' does not match the pool name '{name}'")
    backend = reader.string("backend", "default") or "default"
    normalized = {
        "description": reader.string("description"),
        "backend": backend,
        "default_platform": reader.string("default_platform"),
        "enable_maintenance": reader.boolean("enable_maintenance"),
        "common_default_variables": reader.variables("common_default_variables"),
        "common_resource_validations": reader.names("common_resource_validations"),
        "common_pod_template": reader.names("common_pod_template"),
        **{key: reader.string(key, max_length=64) for key in POOL_TIMEOUTS},
        "default_exit_actions": reader.mapping("default_exit_actions"),
        "action_permissions": reader.mapping("action_permissions"),
        "resources": normalize_gpu_resources(reader),
        "topology_keys": reader.items("topology_keys"),
        "platforms": {},
    }
    for kind in ("exec", "queue"):
        default_key, max_key = f"default_{kind}_timeout", f"max_{kind}_timeout"
        parsed = {}
        for key in (default_key, max_key):
            if normalized[key]:
                try:
                    parsed[key] = parse_duration(normalized[key])
                except EngineError as exc:
                    reader.fail(key, str(exc))
        if len(parsed) == 2 and parsed[default_key] > parsed[max_key]:
            reader.fail(default_key, f"{normalized[default_key]} is longer than {max_key} ({normalized[max_key]})")

    platforms = reader.mapping("platforms")
    for platform_name, platform_body in platforms.items():
        path = reader.path(f"platforms.{platform_name}")
        reader.problems.extend(check_name(platform_name, path))
        normalized["platforms"][platform_name], problems = normalize_platform(platform_body, path)
        reader.problems.extend(problems)
    default_platform = normalized["default_platform"]
    if default_platform:
        allowed = normalized["platforms"].keys() or {"default"}
        if default_platform not in allowed:
            choices = ", ".join(sorted(allowed))
            reader.fail("default_platform", f"'{default_platform}' is not a platform of this pool ({choices})")
    return normalized, reader.problems


def normalize_role(body: Any, where: str, name: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown({"name", "description", "policies", "actions", "external_roles", "sync_mode", "immutable"})
    policies: list[dict] = []
    try:
        if "actions" in reader.body and "policies" not in reader.body:
            parsed = policies_from_legacy_actions(reader.items("actions"))
        else:
            parsed = parse_policies(reader.items("policies"), role=name)
        policies = [
            {"effect": policy.effect, "actions": list(policy.actions), "resources": list(policy.resources)}
            for policy in parsed
        ]
    except EngineError as exc:
        reader.problems.append(Problem(reader.path("policies"), str(exc)))
    sync_mode = reader.string("sync_mode", "import") or "import"
    if sync_mode not in SYNC_MODES:
        reader.fail("sync_mode", f"'{sync_mode}' is not one of {', '.join(SYNC_MODES)}")
    normalized = {
        "description": reader.string("description"),
        "policies": policies,
        "external_roles": reader.names("external_roles"),
        "sync_mode": sync_mode,
        "immutable": reader.boolean("immutable"),
    }
    return normalized, reader.problems


def normalize_body(config_type: ConfigType, name: str, body: Any) -> Any:
    """The canonical body of one object; raises ConfigError listing every problem with its field path."""
    where = f"{TYPE_LABELS[config_type]} '{name}'"
    problems = check_name(name, where)
    if config_type == ConfigType.BACKEND:
        normalized, found = normalize_backend(body, where)
    elif config_type == ConfigType.POD_TEMPLATE:
        normalized, found = normalize_pod_template(body, where)
    elif config_type == ConfigType.RESOURCE_VALIDATION:
        normalized, found = normalize_resource_validation(body, where, name)
    elif config_type == ConfigType.POOL:
        normalized, found = normalize_pool(body, where, name)
    else:
        normalized, found = normalize_role(body, where, name)
    problems.extend(found)
    if problems:
        raise ConfigError(problems)
    return normalized


# --- whole-state rules ------------------------------------------------------------------------------


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


def variable_value(text: str) -> int | float | str:
    """A variable's value as typed (``--set USER_GPU=2``, the what-if form): a number when it reads as one.

    Whole numbers of up to 18 ASCII digits become ints and decimals of up to 18 digits on each side floats;
    anything else stays the string it is, for the rules to read as a quantity or to refuse.
    """
    value = text.strip()
    if _WHOLE_NUMBER.fullmatch(value):
        return int(value)
    if _DECIMAL_NUMBER.fullmatch(value):
        return float(value)
    return value


def parse_assignments(assignments: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (``--set USER_GPU=2``) as variables, their values read by ``variable_value``."""
    values: dict[str, Any] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"'{item}' is not KEY=VALUE")
        values[key] = variable_value(value)
    return values


def parse_revision_number(text: str, field: str) -> int:
    """A revision number as typed (``?revision=3``, ``POOL:3``): ASCII digits, from 1 to what the column holds.

    Raises ``ConfigError`` naming ``field``. Every revision number a caller types goes through here.
    """
    if not _REVISION_NUMBER.fullmatch(text) or not 1 <= int(text) <= INT32_MAX:
        raise ConfigError(f"'{text[:40]}' is not a revision number (1 to {INT32_MAX})", field=field)
    return int(text)


def parse_revision_ref(text: str) -> tuple[ConfigType, int]:
    """``POOL:3`` as (ConfigType.POOL, 3)."""
    type_text, sep, number = text.rpartition(":")
    if not sep:
        raise ConfigError(f"'{text}' is not TYPE:REVISION (for example POOL:3)")
    try:
        revision = parse_revision_number(number, "revision")
    except ConfigError:
        raise ConfigError(f"'{text}' is not TYPE:REVISION (for example POOL:3)") from None
    return parse_config_type(type_text), revision


# --- versions of an object: ETags and merge patches ----------------------------------------------------


def body_etag(body: Any) -> str:
    """A strong ETag (quoted) of a canonical body: it changes exactly when the configuration changes."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return '"' + hashlib.sha256(canonical.encode()).hexdigest()[:32] + '"'


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON Merge Patch (RFC 7386): objects merge key by key, ``null`` removes a key, anything else replaces.

    ``PATCH /api/pools/p/ {"platforms": {"old": null}}`` removes one platform and keeps the others.
    """
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged
