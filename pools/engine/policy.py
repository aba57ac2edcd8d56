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
from .permissions import EVERYTHING, PROFILE_ANY, USE_POOL, VIEW_POOL

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
_LEGACY_POOL_ACTIONS = {"POST": str(USE_POOL.action), "GET": str(VIEW_POOL.action), "*": EVERYTHING}


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
        return Policy("Allow", (PROFILE_ANY,), ())
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


def allows_some(roles: Sequence[RoleDefinition], action: str, resource_type: str) -> bool:
    """Whether ``roles`` may do ``action`` on at least one object of ``resource_type`` there could be, whatever
    objects exist: an Allow of the action on a resource pattern that can name such an object, which no Deny of
    the action takes back whole. ``pool:Read`` on ``pool/team-a*`` is some pool; with a Deny of ``pool:Read``
    on ``pool/*`` (or ``*``) it is none; a Deny on ``pool/team-a-gpu`` leaves some.

    What a way in is offered by (a link of the navigation); each object is still decided by ``evaluate_access``.
    """
    kind = f"{resource_type}/"
    whole_type = kind + "*"
    reached = []
    denials = []
    for role in roles:
        for policy in role.policies:
            if not any(action_matches(pattern, action) for pattern in policy.actions):
                continue
            if policy.effect == "Deny":
                denials.extend(policy.resources)
                continue
            for pattern in policy.resources:
                if pattern == "*" or (pattern.endswith("*") and kind.startswith(pattern[:-1])):
                    reached.append(whole_type)
                elif pattern.startswith(kind) and len(pattern) > len(kind):
                    reached.append(pattern)
    return any(not any(_resource_contains(deny, region) for deny in denials) for region in reached)


def visible_names(roles: Sequence[RoleDefinition], action: str, resource_type: str, names: Iterable[str]) -> list[str]:
    """Return, in the given order, the names of objects of ``resource_type`` on which ``roles`` may do ``action``.

    Uses ``evaluate_access``, so an object is listed exactly when a request on it would be allowed.
    """
    return [name for name in names if evaluate_access(roles, action, f"{resource_type}/{name}").allowed]


# --- escalation: does one set of roles hold everything another grants? --------------------------------------
#
# Kubernetes RBAC's rule, on patterns instead of object lists: a writer may create or change a role only if
# every (action, resource) its Allow policies grant is already allowed to the writer. Patterns make that a
# question of containment: the writer holds a granted pair when one of the writer's Allow pairs contains it
# and none of the writer's Deny pairs meets the part of it the new role does not deny itself. Action verbs
# and type names are open-ended, so a union of narrower patterns never adds up to a wider one; checking
# pattern by pattern is exact for actions and on the safe side for resource prefixes.

_UNSCOPED = None


def _action_parts(pattern: str) -> tuple[str, str]:
    pattern = pattern.lower()
    if pattern in ("*", "*:*"):
        return "*", "*"
    kind, _, verb = pattern.partition(":")
    return kind, verb


def _part_contains(outer: str, inner: str) -> bool:
    return outer == "*" or outer == inner


def _action_contains(outer: str, inner: str) -> bool:
    """Whether every action ``inner`` covers is covered by ``outer``."""
    (outer_kind, outer_verb), (inner_kind, inner_verb) = _action_parts(outer), _action_parts(inner)
    return _part_contains(outer_kind, inner_kind) and _part_contains(outer_verb, inner_verb)


def _action_meet(first: str, second: str) -> str | None:
    """The action pattern covering exactly what both cover, or None when they share nothing."""
    parts = []
    for one, other in zip(_action_parts(first), _action_parts(second), strict=True):
        if one != "*" and other != "*" and one != other:
            return None
        parts.append(other if one == "*" else one)
    return ":".join(parts)


def _resource_contains(outer: str | None, inner: str | None) -> bool:
    """Whether every resource ``inner`` covers is covered by ``outer`` (None: unscoped calls only)."""
    if outer == "*":
        return True
    if inner is _UNSCOPED or outer is _UNSCOPED:
        return inner is outer
    if inner == "*":
        return False
    if outer.endswith("*"):
        return inner.startswith(outer[:-1])
    return not inner.endswith("*") and inner == outer


def _resource_meet(first: str | None, second: str | None) -> str | None | bool:
    """The resource pattern covering what both cover; False when they share nothing."""
    if first == "*":
        return second
    if second == "*":
        return first
    if first is _UNSCOPED or second is _UNSCOPED:
        return first if first is second else False
    for wide, narrow in ((first, second), (second, first)):
        if _resource_contains(wide, narrow):
            return narrow
    return False


def _pairs(policy: Policy) -> list[tuple[str, str | None]]:
    resources = policy.resources or (_UNSCOPED,)
    return [(action, resource) for action in policy.actions for resource in resources]


def ungranted(writer: Sequence[RoleDefinition], policies: Sequence[Policy]) -> list[str]:
    """What a role with ``policies`` would allow that the ``writer``'s roles do not, as phrases; [] if nothing.

    A granted pair is held when some Allow of the writer contains it and every Deny of the writer that meets
    it is matched by a Deny of the role itself (which then grants none of it). ``osmo-admin`` holds everything.
    """
    writer_allows = [pair for role in writer for p in role.policies if p.effect == "Allow" for pair in _pairs(p)]
    writer_denies = [pair for role in writer for p in role.policies if p.effect == "Deny" for pair in _pairs(p)]
    own_denies = [pair for p in policies if p.effect == "Deny" for pair in _pairs(p)]
    missing = []
    for policy in policies:
        if policy.effect != "Allow":
            continue
        for action, resource in _pairs(policy):
            held = any(
                _action_contains(held_action, action) and _resource_contains(held_resource, resource)
                for held_action, held_resource in writer_allows
            )
            for deny_action, deny_resource in writer_denies if held else ():
                action_overlap = _action_meet(deny_action, action)
                resource_overlap = _resource_meet(deny_resource, resource) if action_overlap else False
                if resource_overlap is False:
                    continue
                if not any(
                    _action_contains(own_action, action_overlap) and _resource_contains(own_resource, resource_overlap)
                    for own_action, own_resource in own_denies
                ):
                    held = False
                    break
            if not held:
                missing.append(f"{action} on {resource if resource is not _UNSCOPED else 'unscoped calls'}")
    return missing
