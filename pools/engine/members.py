"""Who belongs to a department or a project, and what belonging lets them do (SEMANTICS §9.4, Run:ai's access rules).

A unit lists its members: ``{"kind": "user" | "group" | "service_account", "name": ..., "role": ...}``. A user is
a person's username, a service account its username, a group an identity provider's group matched as a whole value
(``/team-a`` and ``team-a`` match the top-level group ``/team-a``; ``/org/team-a`` only that path, as §7.2 matches
roles). The roles:

- ``viewer``: sees the unit's quota, fair share, workloads and their verdicts;
- ``researcher``: the same, and runs workloads there;
- ``admin`` (a department's only): changes its projects and their quotas, as ``department:Update`` on it.

A department's members belong to each of its projects with the same role. What a membership allows is written as
policies (``unit_policies``), so the gate decides it as it decides any role, and a change of members is held to the
no-escalation rule by comparing those policies with the writer's (``policy.ungranted``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .errors import ConfigError, Problem
from .identity import group_values
from .permissions import CHANGE_CONFIG, MANAGE_DEPARTMENT, VIEW_DEPARTMENT, VIEW_PROJECT, resource_name
from .policy import Policy

MEMBER_KINDS = ("user", "group", "service_account")
MEMBER_ROLES = ("researcher", "viewer", "admin")
# What a project's members may be: a project is administered through its department.
PROJECT_ROLES = ("researcher", "viewer")
# Stronger first: when several entries name one identity, the strongest role counts.
ROLE_STRENGTH = {"admin": 3, "researcher": 2, "viewer": 1}
MAX_MEMBERS = 1000
MAX_MEMBER_NAME = 255
DEPARTMENT = "department"
PROJECT = "project"


@dataclass(frozen=True)
class Identity:
    """What membership is matched against: a username, whether it is a service account, and the identity
    provider's groups of the user as the provider sent them (``/team-a``, ``/org/team-a``, ``team-a``)."""

    username: str
    service_account: bool = False
    groups: frozenset[str] = frozenset()

    @property
    def group_values(self) -> frozenset[str]:
        """Every value a member of kind ``group`` may name to match this identity (whole values, §7.2)."""
        return frozenset(value for group in self.groups for value in group_values(group))


@dataclass(frozen=True)
class Membership:
    """One unit an identity belongs to, with its role there; ``via`` names the department it comes from when the
    identity belongs to a project through its department's members (empty when listed in the project itself)."""

    kind: str
    name: str
    role: str
    via: str = ""

    def as_dict(self) -> dict:
        """The membership as plain JSON-ready data."""
        return {"kind": self.kind, "name": self.name, "role": self.role, "via": self.via}


def normalize_members(value, *, unit_kind: str, where: str) -> tuple[list[dict], list[Problem]]:
    """A unit's ``members`` checked and in canonical order (by kind, then name), with every problem at its path.

    ``value`` is a list of ``{"kind", "name", "role"}``; ``None`` is no member. A name is given once per kind; a
    project's members are researchers or viewers (``admin`` is a department's role).
    """
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [Problem(f"{where}.members", 'must be a list of {"kind", "name", "role"}')]
    if len(value) > MAX_MEMBERS:
        return [], [Problem(f"{where}.members", f"must list at most {MAX_MEMBERS} members")]
    roles = MEMBER_ROLES if unit_kind == DEPARTMENT else PROJECT_ROLES
    members: dict[tuple[str, str], dict] = {}
    problems: list[Problem] = []
    for index, entry in enumerate(value):
        path = f"{where}.members[{index}]"
        if not isinstance(entry, dict):
            problems.append(Problem(path, 'must be a JSON object {"kind", "name", "role"}'))
            continue
        unknown = sorted(str(key) for key in entry if key not in ("kind", "name", "role"))
        if unknown:
            problems.append(Problem(f"{path}.{unknown[0]}", "unknown field; expected one of kind, name, role"))
        kind, name, role = entry.get("kind", "user"), entry.get("name"), entry.get("role", "viewer")
        found = len(problems)
        if kind not in MEMBER_KINDS:
            problems.append(Problem(f"{path}.kind", f"{kind!r} is not one of {', '.join(MEMBER_KINDS)}"))
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_MEMBER_NAME or name != name.strip():
            problems.append(
                Problem(
                    f"{path}.name",
                    f"must be a user, group or service account name of 1 to {MAX_MEMBER_NAME} "
                    "characters, without spaces around it",
                )
            )
        if role not in roles:
            why = " (admin is a department's role)" if role == "admin" else ""
            problems.append(Problem(f"{path}.role", f"{role!r} is not one of {', '.join(roles)}{why}"))
        if len(problems) > found or unknown:
            continue
        if (kind, name) in members:
            problems.append(Problem(f"{path}.name", f"{kind} '{name}' is listed twice"))
            continue
        members[kind, name] = {"kind": kind, "name": name, "role": role}
    return [members[key] for key in sorted(members)], problems


def member_matches(member: Mapping, identity: Identity) -> bool:
    """Whether one entry of a unit's members names ``identity``."""
    kind, name = member.get("kind"), member.get("name")
    if kind == "user":
        return not identity.service_account and name == identity.username
    if kind == "service_account":
        return identity.service_account and name == identity.username
    if kind == "group":
        return name in identity.group_values
    return False


def _strongest(members: Iterable[Mapping], identity: Identity) -> str:
    roles = [member["role"] for member in members if member_matches(member, identity)]
    return max(roles, key=ROLE_STRENGTH.__getitem__) if roles else ""


def memberships(
    identity: Identity,
    departments: Mapping[str, Iterable[Mapping]],
    projects: Mapping[str, tuple[str, Iterable[Mapping]]],
) -> list[Membership]:
    """The units ``identity`` belongs to: departments (``name -> members``) first, then projects (``name ->
    (department, members)``), each by name, with the strongest role that names it. A project's members come
    from its own list and from its department's (``via`` the department when that gives the stronger role)."""
    found = []
    of_department = {}
    for name in sorted(departments):
        role = _strongest(departments[name], identity)
        if role:
            of_department[name] = role
            found.append(Membership(DEPARTMENT, name, role))
    for name in sorted(projects):
        department, members = projects[name]
        own, inherited = _strongest(members, identity), of_department.get(department, "")
        if inherited and (not own or ROLE_STRENGTH[inherited] > ROLE_STRENGTH[own]):
            found.append(Membership(PROJECT, name, inherited, via=department))
        elif own:
            found.append(Membership(PROJECT, name, own))
    return found


def unit_policies(kind: str, name: str, role: str, *, projects: Iterable[str] = ()) -> tuple[Policy, ...]:
    """What the role ``role`` on unit ``name`` allows, as policies; ``projects`` are a department's projects.

    Every member sees the unit (a department's members also its projects); a department's admin also manages it
    (``department:Update``) and may change projects (``config:Update`` on projects, which the services grant only
    for projects of departments one manages).
    """
    if kind == PROJECT:
        return (_allow(VIEW_PROJECT, [name]),)
    policies = [_allow(VIEW_DEPARTMENT, [name])]
    projects = sorted(projects)
    if projects:
        policies.append(_allow(VIEW_PROJECT, projects))
    if role == "admin":
        policies.append(_allow(MANAGE_DEPARTMENT, [name]))
        policies.append(_allow(CHANGE_CONFIG, ["PROJECT"]))
    return tuple(policies)


def membership_policies(found: Iterable[Membership], department_projects: Mapping[str, Iterable[str]]) -> tuple:
    """Every policy the memberships ``found`` give, the role they come from aside (what the gate adds to a user's
    roles). A project's membership through its department adds nothing beyond the department's."""
    policies: list[Policy] = []
    for membership in found:
        if membership.via:
            continue
        projects = department_projects.get(membership.name, ()) if membership.kind == DEPARTMENT else ()
        policies.extend(unit_policies(membership.kind, membership.name, membership.role, projects=projects))
    return tuple(dict.fromkeys(policies))


def members_added(before: Iterable[Mapping], after: Iterable[Mapping]) -> list[dict]:
    """The entries of ``after`` that are new or changed against ``before``: what a change of members grants."""
    old = {(member["kind"], member["name"]): member["role"] for member in before}
    return [dict(member) for member in after if old.get((member["kind"], member["name"])) != member["role"]]


def _allow(permission, names: list[str]) -> Policy:
    return Policy(
        "Allow", (str(permission.action),), tuple(resource_name(permission.resource_type, name) for name in names)
    )


def parse_member_spec(text: str) -> dict:
    """``KIND:NAME:ROLE`` as a member (``user:rita:researcher``, ``group:/team-a:viewer``): what ``poolctl``'s
    ``--member`` takes. Only the words are split here; the unit's reader checks the member as a whole."""
    kind, sep, rest = text.partition(":")
    name, sep_role, role = rest.rpartition(":")
    if not sep or not sep_role or not kind or not name or not role:
        raise ConfigError(f"--member '{text}' is not KIND:NAME:ROLE (user:rita:researcher, group:/team-a:viewer)")
    return {"kind": kind.strip(), "name": name, "role": role.strip()}
