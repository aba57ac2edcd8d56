"""Roles and access decisions (SEMANTICS §7).

A role is a list of policies ``{effect, actions, resources}``. An action is ``type:Action`` (``workflow:Create``)
and a resource is ``pool/<name>``, ``backend/<name>``, ``config/<type>`` or empty for unscoped calls. A
matching Deny in any of a user's roles wins over every Allow; the list of visible pools is computed with the
same function, so listing and requesting never disagree (OSMO lets them).
"""

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import PolicyError

EFFECTS = ("Allow", "Deny")
_POLICY_FIELDS = ("effect", "actions", "resources")
_WORD = r"[A-Za-z][A-Za-z0-9_-]*"
_ACTION_PATTERN = re.compile(rf"\*|\*:\*|{_WORD}:\*|\*:{_WORD}|{_WORD}:{_WORD}")


@dataclass(frozen=True)
class Policy:
    """One statement of a role: ``effect`` (Allow or Deny) of ``actions`` on ``resources`` (empty = unscoped)."""

    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]

    def describe(self) -> str:
        """Return the policy as a short phrase: ``Allow workflow:* on pool/team*``."""
        where = ", ".join(self.resources) if self.resources else "unscoped calls"
        return f"{self.effect} {', '.join(self.actions)} on {where}"

    def as_dict(self) -> dict:
        """Return the policy in its JSON shape."""
        return {"effect": self.effect, "actions": list(self.actions), "resources": list(self.resources)}


@dataclass(frozen=True)
class RoleDefinition:
    """A role's name and its parsed policies."""

    name: str
    policies: tuple[Policy, ...]


@dataclass(frozen=True)
class Decision:
    """The answer to "may these roles do this action on this resource?", with the policy that decided it."""

    allowed: bool
    role: str | None
    policy_index: int | None
    effect: str | None
    reason: str

    def as_dict(self) -> dict:
        """Return the decision as plain JSON-ready data."""
        return dataclasses.asdict(self)


def parse_policies(data, *, role: str) -> tuple[Policy, ...]:
    """Return the policies of ``role`` from their JSON list.

    Each item has ``actions`` (non-empty list of ``type:Action``, ``*``, ``*:*``, ``type:*`` or ``*:Action``),
    optional ``effect`` (Allow or Deny in any case, default Allow) and optional ``resources`` (list of
    non-empty strings; none means unscoped calls only). Raises ``PolicyError`` naming the role, the policy
    (1-based) and the field.
    """
    if not isinstance(data, list):
        raise PolicyError(f"role '{role}': policies must be a list")
    return tuple(_parse_policy(item, f"role '{role}', policy {index}") for index, item in enumerate(data, 1))


def _parse_policy(item, where: str) -> Policy:
    if not isinstance(item, Mapping):
        raise PolicyError(f"{where}: must be an object with effect, actions and resources")
    unknown = sorted(str(key) for key in item if key not in _POLICY_FIELDS)
    if unknown:
        raise PolicyError(f"{where}: unknown field '{unknown[0]}' (allowed: {', '.join(_POLICY_FIELDS)})")
    effect = item.get("effect") or "Allow"
    canonical = {name.lower(): name for name in EFFECTS}.get(effect.lower()) if isinstance(effect, str) else None
    if canonical is None:
        raise PolicyError(f"{where}: effect '{effect}' must be Allow or Deny")
    actions = _string_list(item.get("actions"), "actions", where)
    if not actions:
        raise PolicyError(f"{where}: actions must list at least one action")
    for action in actions:
        if not _ACTION_PATTERN.fullmatch(action):
            raise PolicyError(f"{where}: action '{action}' must look like type:Action, type:*, *:Action or *")
    resources = _string_list(item.get("resources") or [], "resources", where)
    if any(not resource.strip() for resource in resources):
        raise PolicyError(f"{where}: resources must not contain an empty name")
    return Policy(effect=canonical, actions=tuple(actions), resources=tuple(resources))


def _string_list(value, field: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise PolicyError(f"{where}: {field} must be a list of strings")
    return value


def policies_from_legacy_actions(actions: list[dict]) -> tuple[Policy, ...]:
    """Translate OSMO's older role format (``{"base": "http", "path": ..., "method": ...}``) into Allow policies.

    - ``/api/pool/<pattern>`` becomes resource ``pool/<pattern>`` with ``workflow:Create`` for POST,
      ``pool:Read`` for GET and ``*`` for ``*``; other methods fall through to the generic rule.
    - ``/api/profile/...`` becomes ``profile:*`` on unscoped calls.
    - Anything else becomes action ``http:<METHOD>`` on resource ``http:<path>``, kept so it is not lost.

    A leading ``http:`` on the path is dropped (OSMO's own example writes ``"http:/api/profile/*"``), and a
    missing leading slash is added (``api/pool/shared*``). Raises ``PolicyError`` for malformed entries.
    """
    if not isinstance(actions, list):
        raise PolicyError("legacy role actions must be a list")
    return tuple(_legacy_policy(entry, index) for index, entry in enumerate(actions, 1))


_LEGACY_POOL_PATH = re.compile(r"/api/pool/([^/]+)")
_LEGACY_POOL_ACTIONS = {"POST": "workflow:Create", "GET": "pool:Read", "*": "*"}


def _legacy_policy(entry, index: int) -> Policy:
    where = f"legacy action {index}"
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where}: must be an object with base, path and method")
    path, method = entry.get("path"), entry.get("method") or "*"
    if not isinstance(path, str) or not path.strip() or not isinstance(method, str):
        raise PolicyError(f"{where}: path and method must be text")
    path = path.strip().removeprefix("http:")
    path = path if path.startswith("/") else "/" + path
    method = method.strip().upper()
    pool = _LEGACY_POOL_PATH.fullmatch(path)
    if pool and method in _LEGACY_POOL_ACTIONS:
        return Policy("Allow", (_LEGACY_POOL_ACTIONS[method],), (f"pool/{pool[1]}",))
    if path == "/api/profile" or path.startswith("/api/profile/"):
        return Policy("Allow", ("profile:*",), ())
    return Policy("Allow", (f"http:{method}",), (f"http:{path}",))


def action_matches(pattern: str, action: str) -> bool:
    """Return True when action ``pattern`` (``*``, ``*:*``, ``type:*``, ``*:Action`` or exact) covers ``action``.

    Comparison ignores case.
    """
    pattern, action = pattern.lower(), action.lower()
    if pattern in ("*", "*:*"):
        return True
    pattern_type, _, pattern_verb = pattern.partition(":")
    action_type, _, action_verb = action.partition(":")
    return pattern_type in ("*", action_type) and pattern_verb in ("*", action_verb)


def resource_matches(pattern: str, resource: str) -> bool:
    """Return True when resource ``pattern`` covers ``resource``.

    ``*`` covers everything, the unscoped resource ``""`` included; a trailing ``*`` is a plain prefix
    (``pool/*`` is every pool, ``pool/team-a*`` covers ``pool/team-a`` and ``pool/team-a-gpu``); anything
    else must be equal.
    """
    if pattern == "*":
        return True
    if not resource:
        return False
    if pattern.endswith("*"):
        return resource.startswith(pattern[:-1])
    return pattern == resource


def _policy_matches(policy: Policy, action: str, resource: str) -> bool:
    if not any(action_matches(pattern, action) for pattern in policy.actions):
        return False
    if not policy.resources:
        return resource == ""
    return any(resource_matches(pattern, resource) for pattern in policy.resources)


def evaluate_access(roles: Sequence[RoleDefinition], action: str, resource: str = "") -> Decision:
    """Decide whether ``roles`` together may perform ``action`` on ``resource`` ("" = unscoped).

    A matching Deny in any role wins, within a role and across roles; otherwise the first matching Allow
    grants; otherwise access is denied because no policy allows it. ``reason`` names the deciding role and
    policy (1-based).
    """
    allowing: Decision | None = None
    for role in roles:
        for index, policy in enumerate(role.policies, 1):
            if not _policy_matches(policy, action, resource):
                continue
            verdict = "denied" if policy.effect == "Deny" else "allowed"
            decision = Decision(
                allowed=policy.effect != "Deny",
                role=role.name,
                policy_index=index,
                effect=policy.effect,
                reason=f"{verdict} by role {role.name} policy {index} ({policy.describe()})",
            )
            if not decision.allowed:
                return decision
            allowing = allowing or decision
    if allowing is not None:
        return allowing
    target = resource or "unscoped calls"
    return Decision(False, None, None, None, f"no policy allows {action} on {target}")


def pool_role_policies(prefix: str) -> tuple[Policy, ...]:
    """Return the policies of the ``osmo-<prefix>`` pool role: ``workflow:*`` and ``pool:Read`` on ``pool/<prefix>*``.

    The prefix is a plain prefix, so ``osmo-shared`` covers every pool whose name starts with ``shared``.
    """
    return (Policy("Allow", ("workflow:*", "pool:Read"), (f"pool/{prefix}*",)),)


def visible_pools(roles: Sequence[RoleDefinition], pool_names: Iterable[str], action: str = "pool:Read") -> list[str]:
    """Return, in the given order, the pools on which ``roles`` may perform ``action``.

    Uses ``evaluate_access``, so a pool is listed exactly when a request on it would be allowed.
    """
    return [name for name in pool_names if evaluate_access(roles, action, f"pool/{name}").allowed]


BUILTIN_ROLES: dict[str, dict] = {
    "osmo-admin": {
        "description": "Administrators: every action on every resource.",
        "policies": [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}],
        "immutable": True,
    },
    "osmo-user": {
        "description": "Users: read everything, run workflows in the default pool.",
        "policies": [
            {"effect": "Allow", "actions": ["*:Read", "*:List"], "resources": ["*"]},
            {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/default"]},
        ],
        "immutable": False,
    },
    "osmo-default": {
        "description": "Held by everyone who signs in: health check, login and their own profile.",
        "policies": [{"effect": "Allow", "actions": ["system:Health", "auth:Login", "profile:*"], "resources": []}],
        "immutable": True,
    },
}
