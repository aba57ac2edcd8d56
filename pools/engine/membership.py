"""Node membership: does a node belong to a (pool, platform), and is it available? (SEMANTICS §5)

A node belongs when the platform's merged pod template could be scheduled on it by Kubernetes: its
``nodeSelector`` labels are present, its NoSchedule/NoExecute taints are tolerated, and its required node
affinity matches (OSMO ignores affinity; we do not). Matching follows the Kubernetes scheduler's rules.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class MatchResult:
    """Whether a node matches a pod spec and, if not, the first reason why. Truthy when it matches."""

    matched: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.matched


def _label_text(value) -> str:
    """Return how a rendered template value reads as a label value: ``8`` is ``"8"``, ``True`` is ``"true"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def tolerates(toleration: Mapping, taint: Mapping) -> bool:
    """Return True when ``toleration`` tolerates ``taint``, with Kubernetes semantics.

    An empty toleration effect matches every effect. Operator ``Exists`` with an empty key tolerates every
    taint, with a key it tolerates any value of that key; ``Equal`` (the default) needs key and value equal,
    a missing value counting as ``""``.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = _label_text(toleration.get("key"))
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return not key or key == _label_text(taint.get("key"))
    if operator != "Equal":
        return False
    return key == _label_text(taint.get("key")) and _label_text(toleration.get("value")) == _label_text(
        taint.get("value")
    )


def taints_tolerated(taints: Sequence[Mapping], tolerations: Sequence[Mapping]) -> list[Mapping]:
    """Return the taints with effect NoSchedule or NoExecute that no toleration tolerates (empty = all good).

    PreferNoSchedule taints never keep a pod off a node, so they are ignored. So are the taints Kubernetes
    itself puts on cordoned, not-ready or pressured nodes (keys under ``node.kubernetes.io/``): they describe
    the node's condition, which availability reports with its reason; they do not say which pool the node
    belongs to, and counting them would make a cordoned node drop out of its pool instead of showing as
    unavailable there.
    """
    return [
        taint
        for taint in taints
        if taint.get("effect") in _BLOCKING_EFFECTS
        and not str(taint.get("key", "")).startswith(CONDITION_TAINT_PREFIX)
        and not any(isinstance(toleration, Mapping) and tolerates(toleration, taint) for toleration in tolerations)
    ]


def affinity_matches(affinity: Mapping | None, labels: Mapping[str, str], *, node_name: str = "") -> bool:
    """Return True when the required node affinity of ``affinity`` (a pod spec's ``affinity``) matches the node.

    Terms of ``nodeSelectorTerms`` are ORed, expressions within a term ANDed. Operators: In, NotIn, Exists,
    DoesNotExist, Gt, Lt (integer comparison; a label that is not an integer does not match).
    ``matchFields`` on ``metadata.name`` compares with ``node_name``. No affinity, or no required part,
    matches every node. As in Kubernetes, an empty list of terms, and a term with no expressions, match
    no node.
    """
    if not isinstance(affinity, Mapping):
        return affinity is None
    node_affinity = affinity.get("nodeAffinity") or {}
    if not isinstance(node_affinity, Mapping):
        return False
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    if not isinstance(required, Mapping):
        return False
    terms = required.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        return False
    fields = {"metadata.name": node_name}
    return any(_term_matches(term, labels, fields) for term in terms)


def _term_matches(term, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
    if not isinstance(term, Mapping):
        return False
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not isinstance(expressions, list) or not isinstance(field_expressions, list):
        return False
    if not expressions and not field_expressions:
        return False
    return all(_requirement_matches(requirement, labels) for requirement in expressions) and all(
        _requirement_matches(requirement, fields) for requirement in field_expressions
    )


def _requirement_matches(requirement, labels: Mapping[str, str]) -> bool:
    if not isinstance(requirement, Mapping):
        return False
    key = _label_text(requirement.get("key"))
    operator = requirement.get("operator")
    values = requirement.get("values") or []
    if not isinstance(values, list):
        return False
    values = [_label_text(value) for value in values]
    present = key in labels
    label = _label_text(labels.get(key))
    if operator == "In":
        return present and label in values
    if operator == "NotIn":
        return not present or label not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            actual, bound = int(label), int(values[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def _describe_taint(taint: Mapping) -> str:
    value = taint.get("value")
    key = _label_text(taint.get("key"))
    return (
        f"{key}={_label_text(value)}:{taint.get('effect')}"
        if value not in (None, "")
        else f"{key}:{taint.get('effect')}"
    )


def node_matches_pod_spec(
    *, labels: Mapping[str, str], taints: Sequence[Mapping], pod_spec: Mapping, node_name: str = ""
) -> MatchResult:
    """Return whether a pod with ``pod_spec`` (a merged template's ``spec``, may be empty) fits on the node.

    Checks, in order, that every ``nodeSelector`` entry is among ``labels`` (compared as text, so a rendered
    ``8`` matches label ``"8"``), that every blocking taint is tolerated, and that required node affinity
    matches. ``reason`` names the first check that failed.
    """
    if not isinstance(pod_spec, Mapping):
        return MatchResult(False, "pod template spec is not an object")
    selector = pod_spec.get("nodeSelector") or {}
    if not isinstance(selector, Mapping):
        return MatchResult(False, "spec.nodeSelector is not an object")
    for key, wanted in selector.items():
        key, wanted = _label_text(key), _label_text(wanted)
        if key not in labels:
            return MatchResult(False, f"label {key}={wanted} missing")
        if _label_text(labels[key]) != wanted:
            return MatchResult(False, f"label {key}={wanted} missing (node has {key}={labels[key]})")
    tolerations = pod_spec.get("tolerations") or []
    if not isinstance(tolerations, list):
        return MatchResult(False, "spec.tolerations is not a list")
    untolerated = taints_tolerated(taints, tolerations)
    if untolerated:
        return MatchResult(False, f"taint {_describe_taint(untolerated[0])} not tolerated")
    if not affinity_matches(pod_spec.get("affinity"), labels, node_name=node_name):
        return MatchResult(False, "required node affinity not matched")
    return MatchResult(True)


def node_availability(
    *, conditions: Sequence[Mapping], unschedulable: bool, rules: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    """Return ``(available, reason)`` for a node.

    A cordoned node is unavailable ("cordoned"). Otherwise every rule (condition type -> required status,
    default ``{"Ready": "True"}``) must hold; the reason names the first that does not, e.g.
    "Ready is False (want True)" or "condition Ready missing".
    """
    if unschedulable:
        return False, "cordoned"
    statuses = {
        condition.get("type"): condition.get("status") for condition in conditions if isinstance(condition, Mapping)
    }
    for condition_type, wanted in (rules if rules is not None else {"Ready": "True"}).items():
        if condition_type not in statuses:
            return False, f"condition {condition_type} missing"
        if str(statuses[condition_type]) != str(wanted):
            return False, f"{condition_type} is {statuses[condition_type]} (want {wanted})"
    return True, ""


class SpecIndex:
    """(pool, platform, spec) triples, indexed by one label each spec's ``nodeSelector`` requires.

    A 5,000-node backend with 150 platforms asked ``node_matches_pod_spec`` 750,000 times per full
    membership pass, though a node has the selected labels of only a few platforms. Looking up each of the
    node's (label, value) pairs finds the specs it might match; only those are matched in full. Specs
    without a selector, or with one that is not plain strings, are always matched in full. ``pool`` is whatever
    the caller names pools by (a model row, a name).
    """

    def __init__(self, specs: Sequence[tuple]):
        self.specs = list(specs)
        self.by_label: dict[tuple[str, str], list[int]] = {}
        self.unindexed: list[int] = []
        for index, (_, _, spec) in enumerate(self.specs):
            selector = spec.get("nodeSelector") if isinstance(spec, Mapping) else None
            first = next(iter(selector.items()), None) if isinstance(selector, Mapping) else None
            if first is not None and type(first[0]) is str and type(first[1]) is str:
                self.by_label.setdefault(first, []).append(index)
            else:
                self.unindexed.append(index)

    def selecting(self, *, labels: Mapping, taints: Sequence[Mapping], node_name: str) -> list[tuple]:
        """The (pool, platform) of every spec that selects the node, in the specs' order."""
        if all(type(value) is str for value in labels.values()):
            candidates = list(self.unindexed)
            for pair in labels.items():
                candidates.extend(self.by_label.get(pair, ()))
            candidates.sort()
        else:  # a label value read as text may equal a selector's: no shortcut
            candidates = range(len(self.specs))
        return [
            (self.specs[index][0], self.specs[index][1])
            for index in candidates
            if node_matches_pod_spec(labels=labels, taints=taints, pod_spec=self.specs[index][2], node_name=node_name)
        ]


class NodePlacer:
    """Where a node of a backend belongs (SEMANTICS §5, §8): each (pool, platform) whose merged template selects
    it; a node no pool selects goes to the backend's default pool, if it names one.

    The default pool's own platforms still divide its nodes by their templates; a leftover node none of them
    selects is placed in its default platform (else its first). ``specs`` are (pool, platform, spec) triples of
    every renderable platform of the backend's pools; ``is_default(pool)`` tells the default pool's, and
    ``default_platform`` is that pool's ``default_platform``.
    """

    def __init__(self, specs: Sequence[tuple], *, is_default=lambda pool: False, default_platform: str = ""):
        self.specs = SpecIndex([spec for spec in specs if not is_default(spec[0])])
        default_specs = [spec for spec in specs if is_default(spec[0])]
        self.default_specs = SpecIndex(default_specs)
        self.default: tuple | None = None
        if default_specs:
            names = [platform_name for _, platform_name, _ in default_specs]
            self.default = (default_specs[0][0], default_platform if default_platform in names else names[0])

    def place(self, *, labels: Mapping, taints: Sequence[Mapping], node_name: str) -> list[tuple]:
        found = self.specs.selecting(labels=labels, taints=taints, node_name=node_name)
        if found or self.default is None:
            return found
        return self.default_specs.selecting(labels=labels, taints=taints, node_name=node_name) or [self.default]
