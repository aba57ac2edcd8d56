"""Reading config files: JSON or YAML within bounds, and splitting any accepted document (an OSMO bundle,
a name-keyed file, one body) into ``{config type: {name: raw body}}``.
"""

from __future__ import annotations

from typing import Any

from ..choices import TYPE_LABELS, BackendKind, ConfigType
from ..engine.documents import load_json, load_yaml
from ..engine.errors import ConfigError, DocumentError
from ..inventory.files import FileTooLarge, read_bounded_text

# The keys of OSMO's Helm values that hold each config type (snake_case spellings accepted too).
BUNDLE_KEYS = {
    "backends": ConfigType.BACKEND,
    "podTemplates": ConfigType.POD_TEMPLATE,
    "pod_templates": ConfigType.POD_TEMPLATE,
    "resourceValidations": ConfigType.RESOURCE_VALIDATION,
    "resource_validations": ConfigType.RESOURCE_VALIDATION,
    "pools": ConfigType.POOL,
    "roles": ConfigType.ROLE,
    "departments": ConfigType.DEPARTMENT,
    "projects": ConfigType.PROJECT,
}


# Config files given to poolctl; request bodies are bounded by DATA_UPLOAD_MAX_MEMORY_SIZE instead.
MAX_DOCUMENT_BYTES = 16 * 1024**2


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
