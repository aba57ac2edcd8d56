"""Resource validation: parse rule sets and check a request against them (SEMANTICS §4).

A rule compares two operands with ``EQ NE LT LE GT GE``. Operands are rendered like templates and read by
``expressions.evaluate_operand``. A rule whose operands mention a ``K8_*`` variable is checked on every
node; the request passes when every other rule passes once and at least one available node passes all of
the per-node rules. A rule never raises while being checked: a bad operand is a failed rule with a message.
The one exception is an operand or message that costs more to render than a render may (``RenderLimitError``,
SEMANTICS §7.3): it is the rule that is broken, not the request, and rendering it again on every node would
multiply the cost, so the check stops there.

Beside the rules, which say whether a node could ever hold the request, the check says whether it could start
there now (**beyond OSMO and Run:ai**): a node that passes its rules starts the request ``now`` when what the
request asks (``USER_GPU``, ``USER_CPU``, ``USER_MEMORY``, ``USER_STORAGE``) fits in what is free on it, else the
request would ``wait`` there, and the verdict names the resources that are short.
"""

import dataclasses
import functools
import operator as python_operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from .errors import ExpressionError, RenderError, RenderLimitError, RuleError
from .expressions import Expression, compile_expression, evaluate_operand
from .quantities import format_quantity, parse_quantity
from .variables import render_value

OPERATORS = ("EQ", "NE", "LT", "LE", "GT", "GE")

_COMPARISONS = {
    "EQ": (python_operator.eq, "=="),
    "NE": (python_operator.ne, "!="),
    "LT": (python_operator.lt, "<"),
    "LE": (python_operator.le, "<="),
    "GT": (python_operator.gt, ">"),
    "GE": (python_operator.ge, ">="),
}
_RULE_FIELDS = ("operator", "left_operand", "right_operand", "assert_message")

_MENTIONS_NODE_VARIABLE = re.compile(r"\bK8_\w*")
_PLAIN_NODE_VARIABLE = re.compile(r"\{\{\s*(K8_\w*)\s*\}\}")

# Node variables that hold numbers, with the NodeResources field each one reads.
_NODE_NUMBERS = {
    "K8_CPU": "cpu",
    "K8_GPU": "gpu",
    "K8_MEMORY": "memory",
    "K8_STORAGE": "storage",
    "K8_FREE_CPU": "free_cpu",
    "K8_FREE_GPU": "free_gpu",
    "K8_FREE_MEMORY": "free_memory",
    "K8_FREE_STORAGE": "free_storage",
}
# While compiling an operand once for all nodes, each node number is rendered as this word so that the
# expression keeps a named slot for it. The prefix is unusual so that no real value collides with it.
_PLACEHOLDER_PREFIX = "__node_value_"
_PLACEHOLDERS = {name: f"{_PLACEHOLDER_PREFIX}{name}" for name in _NODE_NUMBERS}

START_NOW = "now"
START_WAIT = "wait"
# What a request asks of a node: the resource, the variable giving the amount, the NodeResources field saying
# how much of it is free, and the word a shortfall names it by. GPUs first: they are what is usually short.
_REQUESTED = (
    ("gpu", "USER_GPU", "free_gpu", "GPU"),
    ("cpu", "USER_CPU", "free_cpu", "CPU"),
    ("memory", "USER_MEMORY", "free_memory", "memory"),
    ("storage", "USER_STORAGE", "free_storage", "storage"),
)


@dataclass(frozen=True)
class Rule:
    """One comparison of a validation set; ``source`` is the name of the set it came from."""

    operator: str
    left_operand: str
    right_operand: str
    assert_message: str = ""
    source: str = ""


@dataclass(frozen=True)
class NodeResources:
    """What a node offers to validation: allocatable and free amounts (cores, GPUs, bytes)."""

    name: str
    cpu: Decimal
    gpu: Decimal
    memory: Decimal
    storage: Decimal
    free_cpu: Decimal
    free_gpu: Decimal
    free_memory: Decimal
    free_storage: Decimal
    gpu_product: str = ""
    available: bool = True
    reason: str = ""


@dataclass
class NodeVerdict:
    """The outcome for one node: ``errors`` lists the failed rules' messages (or why it is unavailable).

    ``start`` is ``"now"`` when the node passes and has the request free, ``"wait"`` when it passes but not
    enough is free (``shortfalls`` says what, e.g. ``"needs 8 GPUs, 0 free"``), and ``""`` when it fails.
    """

    node: str
    passed: bool
    errors: list[str]
    start: str = ""
    shortfalls: list[str] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict:
        """Return the verdict as plain JSON-ready data."""
        return dataclasses.asdict(self)


@dataclass
class Verdict:
    """The outcome of a request: overall result, request-level errors and one entry per node.

    ``starts`` is ``"now"`` when the request passes and some node could start it now (``start_now_nodes`` of
    them), ``"wait"`` when it passes but every node that may hold it is too busy, and ``""`` when it fails.
    """

    passed: bool
    errors: list[str]
    nodes: list[NodeVerdict]
    starts: str = ""
    start_now_nodes: int = 0

    def as_dict(self) -> dict:
        """Return the verdict as plain JSON-ready data."""
        return dataclasses.asdict(self)


def parse_rules(data, *, source: str) -> list[Rule]:
    """Return the rules of validation set ``source`` from its JSON list.

    Each item needs ``operator`` (one of OPERATORS, any case), ``left_operand`` and ``right_operand`` (text
    or numbers, stored as text) and may have ``assert_message``. Raises ``RuleError`` naming the set, the
    rule (1-based) and the field for anything else, unknown fields included.
    """
    where = f"resource validation '{source}'"
    if not isinstance(data, list):
        raise RuleError(f"{where} must be a list of rules, not {_kind(data)}")
    return [_parse_rule(item, where=f"{where}, rule {index}", source=source) for index, item in enumerate(data, 1)]


def _parse_rule(item, *, where: str, source: str) -> Rule:
    if not isinstance(item, Mapping):
        raise RuleError(f"{where}: must be an object with operator, left_operand and right_operand")
    unknown = sorted(str(key) for key in item if key not in _RULE_FIELDS)
    if unknown:
        raise RuleError(f"{where}: unknown field '{unknown[0]}' (allowed: {', '.join(_RULE_FIELDS)})")
    operator = item.get("operator")
    if operator is None:
        raise RuleError(f"{where}: operator is missing")
    if not isinstance(operator, str) or operator.strip().upper() not in OPERATORS:
        raise RuleError(f"{where}: operator '{operator}' is not one of {', '.join(OPERATORS)}")
    message = item.get("assert_message")
    if message is not None and not isinstance(message, str):
        raise RuleError(f"{where}: assert_message must be text, not {_kind(message)}")
    return Rule(
        operator=operator.strip().upper(),
        left_operand=_parse_operand(item, "left_operand", where),
        right_operand=_parse_operand(item, "right_operand", where),
        assert_message=message or "",
        source=source,
    )


def _parse_operand(item: Mapping, field: str, where: str) -> str:
    value = item.get(field)
    if value is None:
        raise RuleError(f"{where}: {field} is missing")
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise RuleError(f"{where}: {field} must be text or a number, not {_kind(value)}")
    text = value if isinstance(value, str) else str(value)
    if not text.strip():
        raise RuleError(f"{where}: {field} is empty")
    return text


def _kind(value) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float | Decimal) else type(value).__name__
    )


def rule_is_per_node(rule: Rule) -> bool:
    """Return True when either operand mentions a ``K8_*`` variable, so the rule is checked per node."""
    return bool(_MENTIONS_NODE_VARIABLE.search(rule.left_operand) or _MENTIONS_NODE_VARIABLE.search(rule.right_operand))


def node_variables(node: NodeResources) -> dict:
    """Return the ``K8_*`` variables of ``node``: numbers as plain decimal strings, memory and storage in bytes."""
    variables = {name: _plain(_number(getattr(node, field))) for name, field in _NODE_NUMBERS.items()}
    variables["K8_GPU_PRODUCT"] = node.gpu_product
    return variables


def _plain(value: Decimal) -> str:
    """A number as people write it: ``2`` not ``2.000``, ``1000`` not ``1E+3``, ``0.5`` as is."""
    text = format(value.normalize(), "f")
    return "0" if text == "-0" else text


def _number(value) -> Decimal:
    return value if isinstance(value, Decimal) else parse_quantity(value)


def evaluate_rule(rule: Rule, variables: Mapping) -> str | None:
    """Check one rule with ``variables``; return None when it holds, else the message to show.

    The message is the rule's ``assert_message`` rendered with the same variables, or a generic one when
    it has none or cannot be rendered. An operand that is undefined, null or not a quantity gives a message
    that names it. Raises only ``RenderLimitError``.
    """
    left, left_failure = _evaluate_side(rule, "left", variables)
    if left_failure:
        return left_failure
    right, right_failure = _evaluate_side(rule, "right", variables)
    if right_failure:
        return right_failure
    return _compare(rule, left, right, lambda: variables)


def _where(rule: Rule) -> str:
    return f"resource validation '{rule.source}'"


def _evaluate_side(rule: Rule, side: str, variables: Mapping) -> tuple[Decimal | None, str | None]:
    """Render and evaluate one operand: ``(value, None)`` or ``(None, failure message)``."""
    text = rule.left_operand if side == "left" else rule.right_operand
    described = f"{_where(rule)}: {side} operand '{text}'"
    try:
        rendered = render_value(text, variables, source=_where(rule))
    except RenderLimitError:
        raise
    except RenderError as error:
        if error.variable:
            return None, f"{described} uses variable {error.variable}, which is not defined"
        return None, f"{described} cannot be rendered: {error}"
    if rendered is None or (isinstance(rendered, str) and not rendered.strip()):
        return None, f"{described} is empty"
    try:
        return evaluate_operand(rendered), None
    except ExpressionError as error:
        if error.reason == "not a quantity" or not isinstance(rendered, str):
            return None, f"{described} is not a quantity ('{rendered}')"
        return None, f"{described} cannot be evaluated ({error})"


def _compare(rule: Rule, left: Decimal, right: Decimal, scope) -> str | None:
    """Return None if ``left <operator> right`` holds, else the failure message rendered in ``scope()``."""
    comparison = _COMPARISONS.get(str(rule.operator).upper())
    if comparison is None:  # only a Rule built by hand, bypassing parse_rules, can get here
        return f"{_where(rule)}: operator '{rule.operator}' is not one of {', '.join(OPERATORS)}"
    holds, symbol = comparison
    if holds(left, right):
        return None
    if rule.assert_message:
        try:
            message = render_value(rule.assert_message, scope(), source=_where(rule))
        except RenderLimitError:
            raise
        except RenderError:
            message = None
        if message is not None and str(message).strip():
            return str(message)
    return (
        f"{_where(rule)}: {rule.left_operand} {rule.operator.upper()} {rule.right_operand} does not hold "
        f"({format_quantity(left)} {symbol} {format_quantity(right)} is false)"
    )


class _NodeScope:
    """Everything a per-node rule may read about one node, built lazily: numbers first, strings on demand."""

    def __init__(self, node: NodeResources, variables: Mapping):
        self.node = node
        self.base = variables
        self.numbers = {_PLACEHOLDERS[name]: _number(getattr(node, field)) for name, field in _NODE_NUMBERS.items()}

    @functools.cached_property
    def variables(self) -> dict:
        return {**self.base, **node_variables(self.node)}


@dataclass
class _PreparedOperand:
    """One operand made ready for many nodes: a constant result, a compiled expression, or neither.

    With neither, the operand is rendered and evaluated node by node, exactly like ``evaluate_rule``.
    """

    rule: Rule
    side: str
    constant: tuple[Decimal | None, str | None] | None = None
    expression: Expression | None = None

    def value(self, scope: _NodeScope) -> tuple[Decimal | None, str | None]:
        if self.constant is not None:
            return self.constant
        if self.expression is not None:
            try:
                return self.expression.evaluate(scope.numbers), None
            except ExpressionError:
                pass  # e.g. division by zero on this node: the slow path words the message
        return _evaluate_side(self.rule, self.side, scope.variables)


def _prepare_operand(rule: Rule, side: str, variables: Mapping) -> _PreparedOperand:
    """Do the per-call work for one operand so that each node costs only an arithmetic evaluation.

    The fast path applies when every ``K8_*`` mention is a plain ``{{ K8_X }}`` of a numeric node variable:
    the operand is rendered once with a placeholder word for each, and compiled with those words as names.
    Substituting a number's text or evaluating a name give the same value (unary minus binds tightest), so
    the result is the same as rendering per node. Anything else falls back to rendering per node.
    """
    text = rule.left_operand if side == "left" else rule.right_operand
    prepared = _PreparedOperand(rule, side)
    mentions = _MENTIONS_NODE_VARIABLE.findall(text)
    if not mentions:
        prepared.constant = _evaluate_side(rule, side, variables)
        return prepared
    plain = _PLAIN_NODE_VARIABLE.findall(text)
    if len(plain) != len(mentions) or not all(name in _NODE_NUMBERS for name in plain):
        return prepared
    try:
        rendered = render_value(text, {**variables, **_PLACEHOLDERS}, source=_where(rule))
    except RenderLimitError:
        raise
    except RenderError:
        return prepared
    # Each substitution must have printed exactly one placeholder (no loops, comments or raw blocks).
    if not isinstance(rendered, str) or rendered.count(_PLACEHOLDER_PREFIX) != len(plain):
        return prepared
    try:
        prepared.expression = compile_expression(rendered, names=_PLACEHOLDERS.values())
    except ExpressionError:
        pass
    return prepared


def requested_amounts(variables: Mapping) -> dict[str, Decimal]:
    """What a request asks of one node: ``{"gpu": 8, "cpu": 4, "memory": 16 GiB in bytes, "storage": ...}``.

    Read from ``USER_GPU``, ``USER_CPU``, ``USER_MEMORY`` and ``USER_STORAGE`` like a rule reads an operand
    (``16Gi``, ``500m``, ``2 * 4``). A variable that is missing, null, negative or not a quantity asks for
    nothing here: the rules are what judge such a request, and they say what is wrong with it.
    """
    amounts = {}
    for resource, variable, _, _ in _REQUESTED:
        value = variables.get(variable)
        if value is None:
            continue
        try:
            amount = evaluate_operand(value)
        except ExpressionError:
            continue
        if amount > 0:
            amounts[resource] = amount
    return amounts


def start_on_node(node: NodeResources, amounts: Mapping[str, Decimal]) -> tuple[str, list[str]]:
    """``("now", [])`` when every amount of ``requested_amounts`` fits in what is free on ``node``, else
    ``("wait", shortfalls)`` with one ``"needs 8 GPUs, 0 free"`` per resource that is short.

    Free amounts below zero (pods asking more than the node has) count as nothing free. Says nothing about
    the rules: the caller asks only for nodes that pass them.
    """
    shortfalls = []
    for resource, _, free_field, word in _REQUESTED:
        wanted = amounts.get(resource)
        if wanted is None:
            continue
        free = max(Decimal(0), _number(getattr(node, free_field)))
        if wanted > free:
            shortfalls.append(f"needs {_amount(wanted, word)}, {_amount(free, word, unit=False)} free")
    return (START_WAIT, shortfalls) if shortfalls else (START_NOW, [])


def _amount(value: Decimal, word: str, *, unit: bool = True) -> str:
    """``8 GPUs``, ``1 GPU``, ``0.5 CPUs``, ``16Gi memory``; without the unit, only the number."""
    if word in ("GPU", "CPU"):
        number = _plain(value)
        return f"{number} {word}{'' if value == 1 else 's'}" if unit else number
    number = format_quantity(value)
    return f"{number} {word}" if unit else number


# What a running pod says of itself, and so what a rule may read to judge a synced pod: its requests and the node's
# allocatable amounts (SEMANTICS §10 ``never_fits``: "even if empty", so never what is free now).
POD_VARIABLES = frozenset({"USER_GPU", "USER_CPU", "USER_MEMORY", "USER_STORAGE"})
_TOTALS = frozenset({"K8_CPU", "K8_GPU", "K8_MEMORY", "K8_STORAGE", "K8_GPU_PRODUCT"})
_VARIABLE_NAME = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def rule_judges_pods(rule: Rule) -> bool:
    """True when ``rule`` reads only what a synced pod says (``POD_VARIABLES``) and a node's allocatable amounts.

    A rule that reads another submission variable (a timeout, a priority the template fills) or what is free on a
    node now cannot say that a pod never fits, so it is left out of that judgement.
    """
    text = " ".join((rule.left_operand, rule.right_operand, rule.assert_message))
    return set(_VARIABLE_NAME.findall(text)) <= POD_VARIABLES | _TOTALS


def pod_variables(*, gpu: Decimal, cpu: Decimal, memory: Decimal, storage: Decimal) -> dict:
    """The ``USER_*`` variables of a pod's requests, as a submission would give them (memory and storage as
    quantities such as ``16Gi``)."""
    return {
        "USER_GPU": _plain(_number(gpu)),
        "USER_CPU": _plain(_number(cpu)),
        "USER_MEMORY": format_quantity(_number(memory)),
        "USER_STORAGE": format_quantity(_number(storage)),
    }


def refusal_on_empty_nodes(rules: Sequence[Rule], variables: Mapping, nodes: Sequence[NodeResources]) -> str:
    """Why ``rules`` refuse a request on every one of ``nodes`` were they empty, or "" when some node would take it.

    ``nodes`` are a platform's available nodes (their allocatable amounts: nothing is read of what is free). The
    message is the first refusing rule's: a static rule's, else the first node's first failing per-node rule.
    No node at all is no refusal: the rules did not refuse, there was nothing to judge on.
    """
    if not nodes:
        return ""
    empty = [
        dataclasses.replace(
            node,
            free_cpu=node.cpu,
            free_gpu=node.gpu,
            free_memory=node.memory,
            free_storage=node.storage,
            available=True,
        )
        for node in nodes
    ]
    verdict = check_request(rules, variables, empty)
    if verdict.passed:
        return ""
    for error in verdict.errors:
        if not error.startswith("no node in "):
            return error
    return next((node.errors[0] for node in verdict.nodes if node.errors), verdict.errors[0])


def check_request(
    rules: Sequence[Rule], variables: Mapping, nodes: Sequence[NodeResources], *, platform: str = ""
) -> Verdict:
    """Check a request against ``rules`` on the ``nodes`` of one platform.

    Static rules are checked once with ``variables``; per-node rules on each available node with
    ``variables`` plus ``node_variables(node)``. The request passes when every static rule passes and at
    least one available node passes every per-node rule. ``nodes`` of the verdict lists every node, an
    unavailable one as failed with its reason; when the static rules pass, each node that passes says whether
    the request could start there now (``start_on_node``). Never raises on bad operands; raises
    ``RenderLimitError`` when a rule costs more to render than a render may.
    """
    errors = [message for rule in rules if not rule_is_per_node(rule) and (message := evaluate_rule(rule, variables))]
    prepared = [
        (rule, _prepare_operand(rule, "left", variables), _prepare_operand(rule, "right", variables))
        for rule in rules
        if rule_is_per_node(rule)
    ]
    amounts = requested_amounts(variables)
    verdicts = []
    for node in nodes:
        if not node.available:
            verdicts.append(NodeVerdict(node.name, False, [f"node unavailable: {node.reason or 'unknown reason'}"]))
            continue
        scope = _NodeScope(node, variables)
        failures = []
        for rule, left_operand, right_operand in prepared:
            left, failure = left_operand.value(scope)
            if failure is None:
                right, failure = right_operand.value(scope)
                if failure is None:
                    failure = _compare(rule, left, right, lambda scope=scope: scope.variables)
            if failure:
                failures.append(failure)
        if failures:
            verdicts.append(NodeVerdict(node.name, False, failures))
        elif errors:  # a static rule refuses the request: it starts nowhere, however free the node
            verdicts.append(NodeVerdict(node.name, True, []))
        else:
            verdicts.append(NodeVerdict(node.name, True, [], *start_on_node(node, amounts)))

    platform_name = f"platform '{platform}'" if platform else "the platform"
    if not any(node.available for node in nodes):
        errors.append(f"no available node in {platform_name}" + ("" if nodes else " (it has no nodes)"))
    elif not errors and not any(verdict.passed for verdict in verdicts):
        errors.append(f"no node in {platform_name} can hold this request")
    if errors:
        return Verdict(passed=False, errors=errors, nodes=verdicts)
    start_now = sum(verdict.start == START_NOW for verdict in verdicts)
    return Verdict(
        passed=True,
        errors=[],
        nodes=verdicts,
        starts=START_NOW if start_now else START_WAIT,
        start_now_nodes=start_now,
    )
