"""The fields of each config document, defined once: how a body is read and checked (``normalize_*``) and
the canonical body of a saved object (``*_body``). The API's serializers and the page's forms take their
field lists from here (``POOL_DOCUMENT``, ``PLATFORM_DOCUMENT``, ``BACKEND_FIELDS``, ``ROLE_FIELDS``,
``DEPARTMENT_FIELDS``, ``PROJECT_FIELDS``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..choices import LABEL_WRITABLE_KINDS, TYPE_LABELS, BackendKind, ConfigType, PlacementStrategy
from ..engine import pastusage
from ..engine.errors import ConfigError, EngineError, Problem
from ..engine.identity import SYNC_MODES
from ..engine.labels import label_key_problem, label_value_problem
from ..engine.members import normalize_members
from ..engine.policy import parse_policies, policies_from_legacy_actions
from ..engine.quantities import parse_duration
from ..engine.validation import parse_rules
from ..inventory.files import inventory_path_problem, kubeconfig_path_problem
from .values import INT32_MAX, INT32_MIN

# Names of every config object and platform (no spaces or colons: Node.placements relies on it).
NAME_RE = re.compile(r"^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$")


POOL_TIMEOUTS = ("default_exec_timeout", "default_queue_timeout", "max_exec_timeout", "max_queue_timeout")


# A simulated fleet is generated in memory on every sync: a bound that still covers the largest clusters.
MAX_SIMULATED_NODES = 100_000


# A backend's and a role's fields, in the order their bodies show them.
BACKEND_FIELDS = (
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
    "pool_label_key",
    "default_pool",
    "prometheus_url",
    "prometheus_token_env",
    "fair_share",
)
# Prometheus's credentials are never in a document: a backend names the environment variable that holds them,
# and only its own variables, ``GPUPOOL_PROMETHEUS_<BACKEND>`` or ``GPUPOOL_PROMETHEUS_<BACKEND>_<WORD>`` (so a
# document can name neither the server's other secrets nor another backend's credentials).
PROMETHEUS_TOKEN_ENV_PREFIX = "GPUPOOL_PROMETHEUS_"


def prometheus_env_key(backend: str) -> str:
    """The part of a credentials variable's name that says which backend it is for: ``prod-a`` is ``PROD_A``."""
    return re.sub(r"[^A-Z0-9]", "_", backend.upper())


def prometheus_env_problem(token_env: str, backend: str) -> str:
    """Why ``token_env`` cannot hold backend ``backend``'s Prometheus credentials (empty when it can)."""
    own = PROMETHEUS_TOKEN_ENV_PREFIX + prometheus_env_key(backend)
    if token_env == own or re.fullmatch(re.escape(own) + r"_[A-Z0-9]+", token_env):
        return ""
    return f"must be {own} or {own}_<WORD> (upper-case letters and digits): the backend's own credentials"


DEFAULT_POOL_LABEL_KEY = "runwhere.ai/pool"
ROLE_FIELDS = ("description", "policies", "external_roles", "sync_mode", "immutable")
# A department's and a project's fields (SEMANTICS §9), in the order their bodies show them. ``resources`` is
# Run:ai's list of quotas, one entry per node pool (``QUOTA_RESOURCES`` says each entry's figures).
# ``members`` lists who belongs to the unit and with which role (``engine.members``, SEMANTICS §9.4).
DEPARTMENT_FIELDS = ("description", "resources", "members")
PROJECT_FIELDS = ("description", "department", "namespaces", "resources", "members")
# Per node pool: Run:ai's names. GPUs and CPU cores may be fractions; CPU memory is in MiB.
QUOTA_RESOURCES = ("gpu", "cpu", "memory")
# Run:ai's over-quota weight names (None: no over-quota, i.e. limit = deserved).
OVER_QUOTA_WEIGHTS = {"none": None, "lowest": 0, "low": 1, "medium": 2, "high": 3}
DEFAULT_OVER_QUOTA_WEIGHT = 2
DEFAULT_QUOTA_PRIORITY = 100
# No pool has a million GPUs; CPU memory in MiB goes further (a petabyte of memory is 10^9 MiB).
QUOTA_MAXIMUM = {"gpu": 10**6, "cpu": 10**7, "memory": 10**10}


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

    def integer(self, key: str, default: int | None, minimum: int = INT32_MIN, maximum: int = INT32_MAX) -> int | None:
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


def prometheus_url_problem(url: str) -> str:
    """Why ``url`` cannot be a backend's Prometheus (empty when it can, or when it is empty)."""
    if not url:
        return ""
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        return "must be an http:// or https:// URL with a host, such as http://prometheus:9090"
    if parts.username or parts.password:
        return "must not carry credentials: name an environment variable in prometheus_token_env"
    if parts.query or parts.fragment:
        return "must not have a query or a fragment"
    return ""


def normalize_backend(body: Any, where: str, name: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown(set(BACKEND_FIELDS))
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
        "pool_label_key": reader.string("pool_label_key", DEFAULT_POOL_LABEL_KEY, max_length=317)
        or DEFAULT_POOL_LABEL_KEY,
        "default_pool": reader.string("default_pool", max_length=128),
        "prometheus_url": reader.string("prometheus_url", max_length=1024),
        "prometheus_token_env": reader.string("prometheus_token_env", max_length=128),
    }
    normalized["fair_share"], _, problems = pastusage.read_settings(
        reader.body.get("fair_share"), reader.path("fair_share")
    )
    reader.problems.extend(problems)
    problem = prometheus_url_problem(normalized["prometheus_url"])
    if problem:
        reader.fail("prometheus_url", problem)
    token_env = normalized["prometheus_token_env"]
    if token_env and (problem := prometheus_env_problem(token_env, name)):
        reader.fail("prometheus_token_env", problem)
    if token_env and not normalized["prometheus_url"]:
        reader.fail("prometheus_token_env", "credentials need a prometheus_url")
    problem = label_key_problem(normalized["pool_label_key"])
    if problem:
        reader.fail("pool_label_key", problem)
    if normalized["default_pool"]:
        reader.problems.extend(check_name(normalized["default_pool"], reader.path("default_pool")))
    if normalized["writable"] and kind not in LABEL_WRITABLE_KINDS:
        reader.fail("writable", "only a kubernetes or simulated backend can be writable")
    if normalized["kubeconfig"] and (problem := kubeconfig_path_problem(normalized["kubeconfig"])):
        reader.fail("kubeconfig", problem)
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


@dataclass(frozen=True)
class Field:
    """One field of a config document: its name, what kind of value it holds, and a word of help.

    Kinds: ``text``, ``duration`` (text such as ``2h``), ``flag`` (true/false), ``choice`` (one of ``choices``),
    ``names`` (ordered names of other objects), ``variables`` (name → scalar), ``object`` and ``list`` (kept
    as given), and the four a document reads its own way: ``reference`` (the backend's name), ``label`` (a
    label pool's ``{key, value}``), ``resources`` and ``platforms``.
    """

    name: str
    kind: str
    help: str = ""
    choices: tuple[str, ...] = ()


# A platform's fields, in the order bodies show them (``pool.platforms.<name>``).
PLATFORM_DOCUMENT = (
    Field("description", "text"),
    Field("host_network_allowed", "flag"),
    Field("privileged_allowed", "flag"),
    Field("default_variables", "variables", "name → value, over the pool's common_default_variables"),
    Field("resource_validations", "names", "validation sets, after the pool's"),
    Field("override_pod_template", "names", "pod templates merged after the pool's"),
    Field("allowed_mounts", "list"),
)
# A pool's fields, in the order bodies show them. Everything that reads or writes a pool derives its fields
# from here: ``normalize_pool``, ``pool_body``, the API's serializers and the page's form.
POOL_DOCUMENT = (
    Field("description", "text"),
    Field("backend", "reference", "backend name (default: 'default')"),
    Field("node_label", "label", "{key, value}: the pool is the nodes carrying this label (gpuctl, Run:ai)"),
    Field("default_platform", "text", "one of the pool's platforms; empty for none"),
    Field("enable_maintenance", "flag", "no new workloads while on"),
    Field("common_default_variables", "variables", "name → value for every platform"),
    Field("common_resource_validations", "names", "validation sets, in order"),
    Field("common_pod_template", "names", "pod templates, in merge order"),
    *(Field(name, "duration", "30d, 2h, 15m, 10s") for name in POOL_TIMEOUTS),
    Field("default_exit_actions", "object"),
    Field("action_permissions", "object"),
    Field("resources", "resources", '{"gpu": {"guarantee": -1, "maximum": -1, "weight": 1}}'),
    Field("topology_keys", "list"),
    *(
        Field(f"{resource}_placement_strategy", "choice", "binpack or spread", tuple(PlacementStrategy.values))
        for resource in ("gpu", "cpu")
    ),
    Field("platforms", "platforms", "platform name → platform"),
)
PLATFORM_FIELDS = {field.name for field in PLATFORM_DOCUMENT}
POOL_FIELDS = {"name", *(field.name for field in POOL_DOCUMENT)}
# How each plain kind is read from a body; the other kinds are read by the document's own code.
_READERS = {
    "text": lambda reader, key: reader.string(key),
    "duration": lambda reader, key: reader.string(key, max_length=64),
    "flag": lambda reader, key: reader.boolean(key),
    "names": lambda reader, key: reader.names(key),
    "variables": lambda reader, key: reader.variables(key),
    "object": lambda reader, key: reader.mapping(key),
    "list": lambda reader, key: reader.items(key),
}


def _read_choice(reader: _Reader, field: Field) -> str:
    value = reader.string(field.name, field.choices[0]) or field.choices[0]
    if value not in field.choices:
        reader.fail(field.name, f"'{value}' is not one of {', '.join(field.choices)}")
        return field.choices[0]
    return value


def _read_plain(reader: _Reader, document) -> dict:
    values = {field.name: _READERS[field.kind](reader, field.name) for field in document if field.kind in _READERS}
    values.update({field.name: _read_choice(reader, field) for field in document if field.kind == "choice"})
    return values


def normalize_node_label(reader: _Reader) -> dict:
    """A label pool's ``{key, value}`` (``{}`` for none); ``"key=value"`` is accepted as well."""
    label = reader.body.get("node_label")
    if label in (None, "", {}):
        return {}
    if isinstance(label, str) and "=" in label:
        key, _, value = label.partition("=")
        label = {"key": key, "value": value}
    if not isinstance(label, dict) or set(label) - {"key", "value"}:
        reader.fail("node_label", 'must be {"key": ..., "value": ...} or "key=value"')
        return {}
    key, value = label.get("key"), label.get("value", "")
    problem = label_key_problem(key)
    if problem:
        reader.fail("node_label.key", problem)
        return {}
    problem = label_value_problem(value)
    if problem:
        reader.fail("node_label.value", problem)
        return {}
    return {"key": key, "value": value}


def normalize_platform(body: Any, where: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown(PLATFORM_FIELDS)
    return _read_plain(reader, PLATFORM_DOCUMENT), reader.problems


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
    plain = _read_plain(reader, POOL_DOCUMENT)
    special = {
        "backend": reader.string("backend", "default") or "default",
        "node_label": normalize_node_label(reader),
        "resources": normalize_gpu_resources(reader),
        "platforms": {},
    }
    normalized = {
        field.name: plain[field.name] if field.name in plain else special[field.name] for field in POOL_DOCUMENT
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
    reader.reject_unknown({"name", "actions", *ROLE_FIELDS})
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


def _quota_amount(value: Any, maximum: int) -> tuple[int | float | None, str | None]:
    """A quota figure: -1, or a number from 0 to ``maximum`` with at most 3 decimal places."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, "must be a number (-1 for the default)"
    if value == -1:
        return -1, None
    if not 0 <= value <= maximum:
        return None, f"must be -1 or a number from 0 to {maximum}"
    if isinstance(value, float):
        if round(value, 3) != value:
            return None, "must have at most 3 decimal places"
        if value.is_integer():
            return int(value), None
    return value, None


def _over_quota_weight(value: Any) -> tuple[int | float | None, str | None]:
    """Run:ai's weight: a number >= 0, a name (None, Lowest, Low, Medium, High) or null (no over-quota)."""
    if value is None:
        return None, None
    if isinstance(value, str) and value.strip().lower() in OVER_QUOTA_WEIGHTS:
        return OVER_QUOTA_WEIGHTS[value.strip().lower()], None
    amount, problem = _quota_amount(value, 1000)
    if problem or amount == -1:
        names = ", ".join(name.capitalize() for name in OVER_QUOTA_WEIGHTS)
        return None, f"must be a number from 0 to 1000, null, or one of {names}"
    return amount, None


def normalize_quotas(reader: _Reader) -> list[dict]:
    """Run:ai's ``resources``: one entry per node pool, sorted by pool, each figure defaulted.

    ``{"nodePool": P, "priority": 100, "gpu": {"deserved": 0, "limit": -1, "overQuotaWeight": 2},
    "cpu": {"deserved": 0, "limit": -1}, "memory": {"deserved": 0, "limit": -1}}`` (memory in MiB).
    """
    entries = reader.items("resources")
    quotas: dict[str, dict] = {}
    for index, entry in enumerate(entries):
        where = f"resources[{index}]"
        if not isinstance(entry, dict):
            reader.fail(where, "must be a JSON object with nodePool, gpu, cpu and memory")
            continue
        for key in entry:
            if key not in ("nodePool", "priority", *QUOTA_RESOURCES):
                reader.fail(f"{where}.{key}", "unknown field; expected one of nodePool, priority, gpu, cpu, memory")
        pool = entry.get("nodePool")
        if isinstance(pool, dict):  # Run:ai's API answers {"id", "name"}
            pool = pool.get("name")
        if not isinstance(pool, str) or check_name(pool, ""):
            reader.fail(f"{where}.nodePool", "must name a pool")
            continue
        if pool in quotas:
            reader.fail(f"{where}.nodePool", f"pool '{pool}' is given twice")
            continue
        priority = entry.get("priority", DEFAULT_QUOTA_PRIORITY)
        problem = whole_number_problem(priority, 0, 10_000)
        if problem:
            reader.fail(f"{where}.priority", problem)
            priority = DEFAULT_QUOTA_PRIORITY
        quota = {"nodePool": pool, "priority": priority}
        for resource in QUOTA_RESOURCES:
            figures = entry.get(resource) or {}
            if not isinstance(figures, dict):
                reader.fail(f"{where}.{resource}", "must be a JSON object (deserved, limit, overQuotaWeight)")
                figures = {}
            allowed = ("deserved", "limit", "overQuotaWeight") if resource == "gpu" else ("deserved", "limit")
            for key in figures:
                if key not in allowed:
                    reader.fail(f"{where}.{resource}.{key}", f"unknown field; expected one of {', '.join(allowed)}")
            normalized = {}
            for key, default in (("deserved", 0), ("limit", -1)):
                value, problem = _quota_amount(figures.get(key, default), QUOTA_MAXIMUM[resource])
                if problem:
                    reader.fail(f"{where}.{resource}.{key}", problem)
                    value = default
                normalized[key] = value
            if (
                normalized["limit"] != -1
                and normalized["deserved"] != -1
                and normalized["deserved"] > normalized["limit"]
            ):
                reader.fail(f"{where}.{resource}.deserved", f"must not exceed {resource}.limit ({normalized['limit']})")
            if resource == "gpu":
                weight, problem = _over_quota_weight(figures.get("overQuotaWeight", DEFAULT_OVER_QUOTA_WEIGHT))
                if problem:
                    reader.fail(f"{where}.gpu.overQuotaWeight", problem)
                    weight = DEFAULT_OVER_QUOTA_WEIGHT
                normalized["overQuotaWeight"] = weight
            quota[resource] = normalized
        quotas[pool] = quota
    return [quotas[pool] for pool in sorted(quotas)]


def normalize_department(body: Any, where: str, name: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown({"name", *DEPARTMENT_FIELDS})
    if "name" in reader.body and reader.body["name"] != name:
        reader.fail("name", f"'{reader.body['name']}' does not match the department name '{name}'")
    members, problems = normalize_members(reader.body.get("members"), unit_kind="department", where=where)
    normalized = {
        "description": reader.string("description", max_length=10_000),
        "resources": normalize_quotas(reader),
        "members": members,
    }
    return normalized, reader.problems + problems


def normalize_project(body: Any, where: str, name: str) -> tuple[dict, list[Problem]]:
    reader = _Reader(body, where)
    reader.reject_unknown({"name", *PROJECT_FIELDS})
    if "name" in reader.body and reader.body["name"] != name:
        reader.fail("name", f"'{reader.body['name']}' does not match the project name '{name}'")
    department = reader.string("department", max_length=128)
    if not department:
        reader.fail("department", "is required: the department the project belongs to")
    namespaces = reader.names("namespaces") or [default_namespace(name)]
    for namespace in namespaces:
        problem = namespace_problem(namespace)
        if problem:
            reader.fail("namespaces", f"'{namespace}': {problem}")
    if len(set(namespaces)) != len(namespaces):
        reader.fail("namespaces", "names a namespace twice")
    members, problems = normalize_members(reader.body.get("members"), unit_kind="project", where=where)
    normalized = {
        "description": reader.string("description", max_length=10_000),
        "department": department,
        "namespaces": sorted(set(namespaces)),
        "resources": normalize_quotas(reader),
        "members": members,
    }
    return normalized, reader.problems + problems


NAMESPACE_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def default_namespace(project: str) -> str:
    """Run:ai's namespace of a project, ``runai-<name>``, made a valid namespace name (``My_Team`` -> ``my-team``)."""
    return re.sub(r"[^a-z0-9-]", "-", f"runai-{project}".lower())[:63].rstrip("-")


def namespace_problem(name: str) -> str | None:
    """Why ``name`` is not a Kubernetes namespace name (a DNS-1123 label), or None."""
    if len(name) > 63 or not NAMESPACE_RE.match(name):
        return "a namespace is at most 63 lower-case letters, digits and '-', starting and ending alphanumeric"
    return None


def normalize_body(config_type: ConfigType, name: str, body: Any) -> Any:
    """The canonical body of one object; raises ConfigError listing every problem with its field path."""
    where = f"{TYPE_LABELS[config_type]} '{name}'"
    problems = check_name(name, where)
    if config_type == ConfigType.BACKEND:
        normalized, found = normalize_backend(body, where, name)
    elif config_type == ConfigType.POD_TEMPLATE:
        normalized, found = normalize_pod_template(body, where)
    elif config_type == ConfigType.RESOURCE_VALIDATION:
        normalized, found = normalize_resource_validation(body, where, name)
    elif config_type == ConfigType.POOL:
        normalized, found = normalize_pool(body, where, name)
    elif config_type == ConfigType.DEPARTMENT:
        normalized, found = normalize_department(body, where, name)
    elif config_type == ConfigType.PROJECT:
        normalized, found = normalize_project(body, where, name)
    else:
        normalized, found = normalize_role(body, where, name)
    problems.extend(found)
    if problems:
        raise ConfigError(problems)
    return normalized


# --- canonical bodies of saved objects ------------------------------------------------------------------
# What ``config show`` prints, revisions store and ETags hash; each reads its fields from the lists above.


def backend_body(backend) -> dict:
    return {name: getattr(backend, name) for name in BACKEND_FIELDS}


def platform_body(platform) -> dict:
    """A platform's body, as its pool's body holds it under ``platforms.<name>``."""
    return {field.name: getattr(platform, field.name) for field in PLATFORM_DOCUMENT}


def pool_body(pool) -> dict:
    """A pool's body in OSMO's shape (platforms prefetched or not: reading them is one query)."""
    platforms = sorted(pool.platforms.all(), key=lambda platform: platform.name)
    special = {
        "backend": pool.backend.name,
        "platforms": {platform.name: platform_body(platform) for platform in platforms},
    }
    return {
        field.name: special[field.name] if field.name in special else getattr(pool, field.name)
        for field in POOL_DOCUMENT
    }


def role_body(role) -> dict:
    return {name: getattr(role, name) for name in ROLE_FIELDS}


def department_body(department) -> dict:
    return {name: getattr(department, name) for name in DEPARTMENT_FIELDS}


def project_body(project) -> dict:
    """A project's body (its department's name read through the relation: select it first)."""
    return {
        name: project.department.name if name == "department" else getattr(project, name) for name in PROJECT_FIELDS
    }
