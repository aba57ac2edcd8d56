"""Variables and template rendering (SEMANTICS §3).

Template strings are Jinja2, rendered in a sandbox with strict undefined so that a typo in a variable name
is an error that names the variable and the template, never a silently empty string. Each render of a value
(a whole pod template, all its strings) has a budget of time and output (``sandbox.py``, SEMANTICS §7.3).
"""

import functools
import re
from collections.abc import Callable, Mapping, Sequence

from jinja2 import StrictUndefined, TemplateError, UndefinedError
from jinja2.sandbox import SecurityError

from .errors import RenderError, RenderLimitError
from .merge import copy_json, merge_pod_templates
from .sandbox import BoundedSandbox, BudgetExceeded, RenderBudget, render_within

BUILTIN_DEFAULTS = {"USER_CONTAINER_NAME": "user"}


def _printable(value):
    """How a value prints into a template: null prints as nothing, so a null operand reads as empty."""
    return "" if value is None else value


_ENVIRONMENT = BoundedSandbox(
    undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, finalize=_printable
)

_SINGLE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# Jinja reads these as literals, not variables, so "{{ true }}" must go through Jinja.
_JINJA_LITERALS = frozenset({"true", "false", "none", "True", "False", "None"})
_UNDEFINED_NAME = re.compile(r"^'([^']+)' is undefined$")


def resolve_variables(
    *,
    pool: str,
    platform: str,
    pool_defaults: Mapping | None,
    platform_defaults: Mapping | None,
    user_values: Mapping | None,
) -> dict:
    """Return the variables for one request: user value > platform default > pool default > built-in.

    A value that is ``None`` at any level counts as not given, so a null user value keeps the default.
    ``WF_POOL`` and ``WF_PLATFORM`` are always the pool and platform names; nothing can override them.
    """
    variables = dict(BUILTIN_DEFAULTS)
    for layer in (pool_defaults, platform_defaults, user_values):
        for name, value in (layer or {}).items():
            if value is not None:
                variables[name] = value
    variables["WF_POOL"] = pool
    variables["WF_PLATFORM"] = platform
    return variables


def render_value(value, variables: Mapping, *, source: str):
    """Return a new deep copy of ``value`` with every string rendered with ``variables``.

    Dict values, dict keys and list items are rendered; other scalars are kept. A rendered string stays a
    string (``"{{ USER_GPU }}"`` with ``USER_GPU=2`` gives ``"2"``): Kubernetes wants strings for env values,
    labels and node selectors, and reads quantities from strings too. ``source`` (``"pod template 'a100'"``)
    is named in every error. Raises only ``RenderError``; ``RenderLimitError`` when the whole render takes
    more than a second or outputs more than a million characters.
    """
    try:
        return _render(value, variables, source, RenderBudget())
    except BudgetExceeded as exceeded:
        raise RenderLimitError(f"template stopped: {exceeded} (in {source})") from None


def _render(value, variables: Mapping, source: str, budget: RenderBudget):
    if isinstance(value, str):
        return _render_string(value, variables, source, budget)
    if isinstance(value, Mapping):
        rendered: dict = {}
        for key, item in value.items():
            new_key = _render_string(key, variables, source, budget) if isinstance(key, str) else key
            if new_key in rendered:
                raise RenderError(f"key '{key}' renders to '{new_key}', which is already a key (in {source})")
            rendered[new_key] = _render(item, variables, source, budget)
        return rendered
    if isinstance(value, list | tuple):
        return [_render(item, variables, source, budget) for item in value]
    return copy_json(value)


def render_pod_template(templates: Sequence[tuple[str, Mapping]], variables: Mapping) -> dict:
    """Render each ``(name, template)`` with ``variables``, then merge them in order.

    Rendering comes first so that a container named ``{{USER_CONTAINER_NAME}}`` in one template merges with
    the container named ``user`` in another. Raises ``RenderError`` naming the template that failed.
    """
    return merge_pod_templates(
        render_value(template, variables, source=f"pod template '{name}'") for name, template in templates
    )


def _needs_rendering(text: str) -> bool:
    return "{{" in text or "{%" in text


def _render_string(text: str, variables: Mapping, source: str, budget: RenderBudget):
    if not _needs_rendering(text):
        return text
    rendered = _compiled(text)(variables, source, budget)
    budget.spend_output(len(rendered))
    return rendered


@functools.lru_cache(maxsize=4096)
def _compiled(text: str) -> Callable[[Mapping, str, RenderBudget], str]:
    """Return a renderer for ``text``; cached because the same template strings render on every request."""
    single = _SINGLE_VARIABLE.fullmatch(text)
    if single and single[1] not in _JINJA_LITERALS:
        name = single[1]

        # The common case, one bare variable, skips Jinja and prints the value as Jinja would.
        def variable_text(variables: Mapping, source: str, budget: RenderBudget) -> str:
            if name not in variables:
                raise _undefined(name, source)
            value = _printable(variables[name])
            return value if isinstance(value, str) else str(value)

        return variable_text

    try:
        template = _compile_template(text)
    except RenderError as error:
        # Keep the compile error (it does not depend on the variables) but name each caller's source.
        reason = str(error)

        def invalid(variables: Mapping, source: str, budget: RenderBudget):
            raise RenderError(f"{reason} (in {source})")

        return invalid

    def rendered(variables: Mapping, source: str, budget: RenderBudget) -> str:
        return _run_template(template, variables, source, budget)

    return rendered


def _compile_template(text: str):
    try:
        return _ENVIRONMENT.from_string(text)
    except TemplateError as error:
        raise RenderError(f"template syntax error: {error.message or error}") from None
    except Exception as error:  # the compiler can fail oddly on odd input; callers get one exception type
        raise RenderError(f"template cannot be compiled: {error}") from None


def _run_template(template, variables: Mapping, source: str, budget: RenderBudget) -> str:
    try:
        return render_within(template, variables, budget)
    except BudgetExceeded:
        raise
    except UndefinedError as error:
        match = _UNDEFINED_NAME.match(str(error.message))
        if match:
            raise _undefined(match[1], source) from None
        raise RenderError(f"{error.message} (in {source})") from None
    except SecurityError as error:
        raise RenderError(f"template is not allowed to do that: {error} (in {source})") from None
    except Exception as error:  # a template can divide by zero or add a str to an int; callers get one type
        raise RenderError(f"template failed: {error} (in {source})") from None


def _undefined(name: str, source: str) -> RenderError:
    return RenderError(f"variable {name} is not defined (in {source})", variable=name)
