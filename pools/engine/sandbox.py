"""The sandbox templates render in, and what one render may cost (SEMANTICS §7.3).

Jinja's ``SandboxedEnvironment`` keeps templates away from Python's internals, not from the machine: a
template of a few bytes can loop for hours (two nested ``{% for i in range(100000) %}``) or allocate
gigabytes in one step (``'x'|center(999999999)``, ``"%999999999d" % 1``) or in a few (``{% set s = s ~ s %}``
thirty times). Each render of a template therefore gets a ``RenderBudget``: ``RENDER_SECONDS`` of time and
``RENDER_CHARACTERS`` of output, enforced at three places.

- Every value a template computes goes through a check before it is built: operators, ``~``, calls
  (including methods such as ``str.center``), filters, tests and printing. None may exceed
  ``RENDER_CHARACTERS``, and together they may not exceed ``RENDER_WORK_CHARACTERS``. Filters and
  methods whose cost is set by a number (a width, a count, a format) check the number first.
- A trace function on the template's own code checks the deadline on every line, so a loop with an empty
  body stops too, and measures the frame's lists, which is where a loop's output piles up.
- The output is counted as it is produced.

``wordwrap`` (quadratic in its input) and ``lipsum`` (loops for as many paragraphs as asked) are not
available: pod templates have no use for them.

Exceeding the budget raises ``BudgetExceeded``, which is deliberately not a ``ValueError``: Jinja and its
filters catch those, and a limit must not be swallowed. The budget also remembers that it was exceeded,
so the render stops at the next check even if something caught the exception.
"""

from __future__ import annotations

import itertools
import re
import string
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from types import GeneratorType
from typing import Any

from jinja2.compiler import CodeGenerator
from jinja2.filters import FILTERS
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import SandboxedEnvironment
from jinja2.tests import TESTS

RENDER_SECONDS = 1.0
# The most one render may output, and the largest value a template may compute on the way.
RENDER_CHARACTERS = 1_000_000
# Everything a render computes, intermediate values included: room to build a text in steps, not unbounded.
RENDER_WORK_CHARACTERS = 10 * RENDER_CHARACTERS
MAX_INT_BITS = 4096
MAX_NESTING = 64

# Lists shorter than this are measured whole each time; longer ones only in what was appended.
_SMALL_LIST = 64
# The file name Jinja gives the code it compiles from a string: how the tracer tells template code apart.
_TEMPLATE_FILENAME = "<template>"
_WORD_NUMBER = re.compile(r"[0-9]+", re.ASCII)
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|[0-9]*)(?:\.(\*|[0-9]*))?[hlL]?.", re.ASCII | re.DOTALL)


class BudgetExceeded(Exception):
    """A render went past its time or size budget; the message says which."""


class RenderBudget:
    """What is left of one render's time, output and work. Created per render, used on one thread."""

    def __init__(self, *, seconds: float = RENDER_SECONDS):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.output_left = RENDER_CHARACTERS
        self.work_left = RENDER_WORK_CHARACTERS
        self.failure: str | None = None
        # Lists already measured: id -> (the list, kept so the id stays its own; its length then; its size).
        self.lists: dict[int, tuple[list, int, int]] = {}

    def fail(self, reason: str):
        """Remember the first reason and raise it; every later check raises it again."""
        self.failure = self.failure or reason
        raise BudgetExceeded(self.failure)

    def check(self) -> None:
        """Raise if the budget was exceeded or the time is up."""
        if self.failure is not None:
            raise BudgetExceeded(self.failure)
        if time.monotonic() > self.deadline:
            self.fail(f"rendering took more than {self.seconds:g} s")

    def spend_output(self, characters: int) -> None:
        """Count ``characters`` of output."""
        self.output_left -= characters
        if self.output_left < 0:
            self.fail(f"the output would exceed {RENDER_CHARACTERS:,} characters")

    def spend_work(self, characters: int) -> None:
        """Count ``characters`` of computed values."""
        self.check()
        self.work_left -= characters
        if self.work_left < 0:
            self.fail(f"rendering computed more than {RENDER_WORK_CHARACTERS:,} characters")

    def trace_calls(self, frame, event, arg):
        """``sys.settrace`` hook: trace the lines of template code only, not Jinja's or Python's."""
        return self.trace_lines if frame.f_code.co_filename == _TEMPLATE_FILENAME else None

    def trace_lines(self, frame, event, arg):
        if event == "line":
            self.check()
            for value in frame.f_locals.values():
                # A loop's output (and a list a loop appends to) grows here without passing any other check.
                if type(value) is list:
                    self.measure_list(value)
        return self.trace_lines

    def measure_list(self, items: list) -> None:
        """Measure a list the template's code holds, walking only what was appended since it was last seen.

        Measuring it whole on every line would make a loop that fills a list quadratic. Small lists are
        measured whole; what a list holds is measured whole again wherever it is used.
        """
        if len(items) < _SMALL_LIST:
            measure(items)
            return
        _, seen, size = self.lists.get(id(items), (None, 0, 2))
        if seen > len(items):
            seen, size = 0, 2
        for item in items[seen:]:
            size += measure(item) + 2
            if size > RENDER_CHARACTERS:
                raise _too_large()
        self.lists[id(items)] = (items, len(items), size)


_active = threading.local()


def _budget() -> RenderBudget | None:
    """The budget of the render running on this thread (None while Jinja folds constants at compile time)."""
    return getattr(_active, "budget", None)


def render_within(template, variables: dict, budget: RenderBudget) -> str:
    """Render a template compiled by ``BoundedSandbox`` with ``variables``, spending from ``budget``.

    Raises ``BudgetExceeded`` past the budget, or whatever the template raised.
    """
    context = template.new_context(dict(variables))
    previous_budget, previous_tracer = _budget(), sys.gettrace()
    _active.budget = budget
    pieces = []
    sys.settrace(budget.trace_calls)
    try:
        for piece in template.root_render_func(context):
            budget.spend_output(len(piece))
            pieces.append(piece)
        budget.check()  # an exceeded budget fails the render even if something swallowed the exception
    finally:
        sys.settrace(previous_tracer)
        _active.budget = previous_budget
    return "".join(pieces)


# --- measuring values ------------------------------------------------------------------------------------


def _exceeded(reason: str) -> BudgetExceeded:
    """The error for ``reason``, remembered by the running render so that it fails even if something catches it."""
    budget = _budget()
    if budget is not None and budget.failure is None:
        budget.failure = reason
    return BudgetExceeded(reason)


def _too_large(limit: int = RENDER_CHARACTERS) -> BudgetExceeded:
    return _exceeded(f"a value would exceed {limit:,} characters")


def measure(value: Any, limit: int = RENDER_CHARACTERS) -> int:
    """Roughly how many characters ``value`` prints as; raises ``BudgetExceeded`` past ``limit``.

    A part that occurs several times counts each time, as it prints each time (``[s, s]`` prints ``s``
    twice), but is walked once, so a value built by doubling a list thirty times is measured in thirty
    steps, not two billion.
    """
    sizes: dict[int, int] = {}

    def size(item: Any, depth: int) -> int:
        if isinstance(item, str | bytes | bytearray):
            return len(item)
        if isinstance(item, bool) or item is None:
            return 5
        if isinstance(item, int):
            return item.bit_length() // 3 + 1
        if isinstance(item, range):
            return len(item) * (max(abs(item.start), abs(item.stop)).bit_length() // 3 + 3)
        if not isinstance(item, list | tuple | dict | set | frozenset):
            return 24
        known = sizes.get(id(item))
        if known is not None:
            return known
        if depth >= MAX_NESTING:
            raise _exceeded(f"a value nests deeper than {MAX_NESTING} levels")
        sizes[id(item)] = 5  # a list that holds itself prints as [...]
        parts = itertools.chain.from_iterable(item.items()) if isinstance(item, dict) else item
        total = 2
        for part in parts:
            total += size(part, depth + 1) + 2
            if total > limit:
                raise _too_large(limit)
        sizes[id(item)] = total
        return total

    total = size(value, 0)
    if total > limit:
        raise _too_large(limit)
    return total


def _at_most(characters: int) -> None:
    if characters > RENDER_CHARACTERS:
        raise _too_large()


def _width(number: Any) -> None:
    """A width or count given to a filter or method: each unit may cost a character."""
    if isinstance(number, int) and not isinstance(number, bool):
        _at_most(number)


def _spent(result: Any) -> Any:
    """Charge a computed value to the running render's work, after checking its size."""
    size = measure(result)
    budget = _budget()
    if budget is not None:
        budget.spend_work(size)
    return result


def _checked_inputs(values: Iterable[Any]) -> None:
    """Arguments of a call or filter: none may be too large, since the callee may print it (``str(list)``)."""
    budget = _budget()
    if budget is not None:
        budget.check()
    for value in values:
        measure(value)


def _materialized(values: tuple) -> tuple:
    """Lazy sequences (a ``map`` or ``select`` result) as lists, so they can be measured before being used.

    Only generators and Python's own iterators: a ``loop`` object is an iterator too, and must not be drained.
    """
    return tuple(list(value) if _is_lazy_sequence(value) else value for value in values)


def _is_lazy_sequence(value: Any) -> bool:
    return isinstance(value, GeneratorType) or (isinstance(value, Iterator) and type(value).__module__ == "builtins")


# --- formats ---------------------------------------------------------------------------------------------


def _format_number(text: str) -> int:
    if len(text) > len(str(RENDER_CHARACTERS)):
        raise _too_large()
    return int(text or 0)


def _percent_format(template: str | bytes, values: Any) -> None:
    """``template % values`` (and the ``format`` filter): the widths and precisions, plus each value."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    if isinstance(values, dict):
        arguments = list(values.values())
    else:
        arguments = list(values) if isinstance(values, tuple) else [values]
    widest = max((measure(argument) for argument in arguments), default=0)
    total = len(text)
    for match in _PERCENT_FIELD.finditer(text):
        width, precision = match[1] or "", match[2] or ""
        if "*" in (width, precision):
            raise _exceeded("a '%' format takes its width from its arguments ('*'); write the number")
        total += widest + _format_number(width) + _format_number(precision)
    _at_most(total)


def _brace_format(template: str, args: tuple, kwargs: dict) -> None:
    """``template.format(...)``: the literal text, plus for each field the widest value and its spec's numbers."""
    widest = max((measure(value) for value in (*args, *kwargs.values())), default=0)
    total = 0
    for literal, field, spec, _conversion in string.Formatter().parse(template):
        total += len(literal)
        if field is None:
            continue
        if "{" in (spec or ""):
            raise _exceeded("a format takes a width from its arguments ('{:{}}'); write the number")
        total += widest + sum(_format_number(number) for number in _WORD_NUMBER.findall(spec or ""))
    _at_most(total)


def _replaced(text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if not (isinstance(text, str | bytes) and type(old) is type(new) and isinstance(old, str | bytes)):
        return  # the method itself refuses these
    occurrences = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    _at_most(len(text) + occurrences * max(0, len(new) - len(old)))


def _joined(separator: Any, items: Any) -> None:
    if isinstance(items, list | tuple | str | dict | range):
        _at_most(measure(items) + len(str(separator)) * max(len(items) - 1, 0))


def _translated(text: Any, table: Any) -> None:
    if isinstance(table, dict):
        longest = max((measure(value) for value in table.values()), default=1)
        _at_most(len(text) * max(longest, 1))


# What a method of str or bytes may produce, checked from its arguments before it runs.
_TEXT_METHOD_CHECKS: dict[str, Callable[..., None]] = {
    "center": lambda text, width, *fill: _width(width),
    "ljust": lambda text, width, *fill: _width(width),
    "rjust": lambda text, width, *fill: _width(width),
    "zfill": lambda text, width: _width(width),
    "expandtabs": lambda text, tabsize=8: _at_most(len(text) * max(tabsize, 1)),
    "replace": _replaced,
    "join": _joined,
    "format": lambda text, *args, **kwargs: _brace_format(text, args, kwargs),
    "format_map": lambda text, mapping: _brace_format(text, (), dict(mapping)),
    "translate": _translated,
}


def _check_method(function: Any, args: tuple, kwargs: dict) -> None:
    # The sandbox hands out str.format wrapped (to sandbox the fields); the method is its __wrapped__.
    method = getattr(function, "__wrapped__", function)
    receiver = getattr(method, "__self__", None)
    check = _TEXT_METHOD_CHECKS.get(getattr(method, "__name__", ""))
    if check is None or not isinstance(receiver, str | bytes | bytearray):
        return
    try:
        check(receiver, *args, **kwargs)
    except TypeError:
        pass  # wrong arguments: the method itself says so


# --- filters and tests -----------------------------------------------------------------------------------


def _indented(value: Any, width: Any = 4, first: bool = False, blank: bool = False) -> None:
    unit = len(width) if isinstance(width, str) else width
    if isinstance(unit, int):
        _width(unit)
        text = str(value)
        _at_most(len(text) + (text.count("\n") + 1) * unit)


def _json_indent(value: Any, indent: Any = None) -> None:
    width = len(indent) if isinstance(indent, str) else indent
    if isinstance(width, int) and width > 99:
        raise _exceeded("tojson indents by at most 99 characters")


def _numeric_start(iterable: Any, attribute: Any = None, start: Any = 0) -> None:
    if isinstance(start, bool) or not isinstance(start, int | float):
        raise _exceeded("sum adds numbers; join strings with join")


# Filters whose cost is set by an argument, checked before they run (arguments as the template gives them).
_FILTER_CHECKS: dict[str, Callable[..., None]] = {
    "center": lambda value, width=80: _width(width),
    "indent": _indented,
    "format": lambda value, *args, **kwargs: _percent_format(str(value), kwargs or args),
    "replace": lambda text, old, new, count=None: _replaced(str(text), str(old), str(new), count),
    "join": lambda items, separator="", attribute=None: _joined(separator, items),
    "batch": lambda value, linecount, fill_with=None: _width(linecount),
    "slice": lambda value, slices, fill_with=None: _width(slices),
    "sum": _numeric_start,
    "tojson": _json_indent,
}
_UNAVAILABLE_FILTERS = ("wordwrap",)
_UNAVAILABLE_GLOBALS = ("lipsum",)


def _guarded(name: str, function: Callable) -> Callable:
    """A filter or test that checks its arguments (and ``_FILTER_CHECKS[name]``) and charges its result."""
    leading = 1 if getattr(function, "jinja_pass_arg", None) is not None else 0
    check = _FILTER_CHECKS.get(name)

    def guarded(*args, **kwargs):
        args = args[:leading] + _materialized(args[leading:])
        _checked_inputs((*args[leading:], *kwargs.values()))
        if check is not None:
            try:
                check(*args[leading:], **kwargs)
            except TypeError:
                pass  # wrong arguments: the filter itself says so
        return _spent(function(*args, **kwargs))

    guarded.__name__ = getattr(function, "__name__", name)
    guarded.__doc__ = function.__doc__
    if leading:
        guarded.jinja_pass_arg = function.jinja_pass_arg  # type: ignore[attr-defined]
    return guarded


# --- the environment -------------------------------------------------------------------------------------


class _BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, except that ``~`` goes through ``BoundedSandbox.concat_values``."""

    def visit_Concat(self, node, frame) -> None:
        if frame.eval_ctx.volatile:
            markup = "context.eval_ctx.autoescape"
        else:
            markup = "True" if frame.eval_ctx.autoescape else "False"
        self.write("environment.concat_values((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write(f"), {markup})")


def _power_bits(base, exponent) -> int:
    """Return roughly how many bits ``base ** exponent`` needs when both are ints, else 0."""
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0:
        return base.bit_length() * exponent
    return 0


def _bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise _exceeded(f"a number would need more than {MAX_INT_BITS} bits")


def _sequence_size(value: Any) -> int | None:
    return measure(value) if isinstance(value, str | bytes | list | tuple) else None


class BoundedSandbox(SandboxedEnvironment):
    """A sandbox whose every computed value, call, filter and printed value is checked against the budget.

    Intercepting the operators also keeps Jinja from folding them at compile time, where the cost would be
    paid before any check could run.
    """

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *, finalize: Callable[[Any], Any], **options):
        def printed(value):
            _spent(value)
            return finalize(value)

        super().__init__(finalize=printed, **options)
        filters = {name: function for name, function in FILTERS.items() if name not in _UNAVAILABLE_FILTERS}
        self.filters = {name: _guarded(name, function) for name, function in filters.items()}
        self.tests = {name: _guarded(name, function) for name, function in TESTS.items()}
        for name in _UNAVAILABLE_GLOBALS:
            self.globals.pop(name, None)

    def call_binop(self, context, operator, left, right):
        if operator == "*":
            for sequence, count in ((left, right), (right, left)):
                size = _sequence_size(sequence)
                if size is not None and isinstance(count, int):
                    _at_most(size * max(count, 0))
            if isinstance(left, int) and isinstance(right, int):
                _bits(left.bit_length() + right.bit_length())
        elif operator == "**":
            _bits(_power_bits(left, right))
        elif operator == "+":
            sizes = (_sequence_size(left), _sequence_size(right))
            if None not in sizes:
                _at_most(sum(sizes))
        elif operator == "%" and isinstance(left, str | bytes):
            _percent_format(left, right)
        return _spent(super().call_binop(context, operator, left, right))

    def call(self, context, function, /, *args, **kwargs):
        """Call ``function`` from template code, its arguments and result checked against the budget."""
        args = _materialized(args)
        _checked_inputs((*args, *(value for key, value in kwargs.items() if key not in ("_loop_vars", "_block_vars"))))
        _check_method(function, args, kwargs)
        return _spent(super().call(context, function, *args, **kwargs))

    def concat_values(self, values: tuple, markup: bool) -> str:
        """``a ~ b ~ c``: the parts' sizes are checked before they are joined."""
        _at_most(sum(measure(value) for value in values))
        return _spent(markup_join(values) if markup else str_join(values))
