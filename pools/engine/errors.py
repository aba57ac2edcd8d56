"""Errors raised by the engine.

Every message is one sentence meant for the person who typed the input: the web UI, the API and the
CLI show it as it is. All of them are ``ValueError``s, so a caller that only wants "bad input" can catch that.

The second half holds the errors every door of the product shares: ``ConfigError`` with its ``Problem``s
(field path and message) and its kinds, one per answer a caller gets (400, 404, 409, 412), and
``AccessDenied`` (403).
"""

from dataclasses import dataclass


class EngineError(ValueError):
    """Base class of every error the engine raises on bad input."""


class DocumentError(EngineError):
    """A JSON or YAML document cannot be read, or goes past what a document may hold (SEMANTICS §7.3)."""


class QuantityError(EngineError):
    """A value is not a Kubernetes quantity (``8Gi``, ``500m``, ``2``)."""


class DurationError(EngineError):
    """A value is not a duration (``30d``, ``1h30m``, ``PT2H``)."""


class RenderError(EngineError):
    """A template string could not be rendered.

    ``variable`` names the undefined variable when that is the cause, so callers can phrase their own message.
    """

    def __init__(self, message: str, *, variable: str | None = None):
        super().__init__(message)
        self.variable = variable


class RenderLimitError(RenderError):
    """A render went past its budget: more than a second, or more than a million characters (SEMANTICS §7.3).

    Unlike other render errors it does not depend on the request, so whoever renders many times (a check
    over every node) stops at the first one instead of paying the budget again and again.
    """


class RuleError(EngineError):
    """A resource-validation rule set is malformed."""


class ExpressionError(EngineError):
    """An operand is not a quantity or an arithmetic expression of quantities.

    ``text`` is the offending input and ``reason`` a short phrase (``"division by zero"``) for callers that
    build their own sentence around it.
    """

    def __init__(self, message: str, *, text: str = "", reason: str = ""):
        super().__init__(message)
        self.text = text
        self.reason = reason


class PolicyError(EngineError):
    """A role's policy list is malformed."""


class TopologyError(EngineError):
    """A gang shape, or a pool's ``topology_keys``, cannot be read (SEMANTICS §11)."""


# --- errors of a change or a request, shared by every door (web, API, CLI) ---------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document or a request: where (a dotted path) and what, in a sentence."""

    field: str
    message: str

    def __str__(self):
        return f"{self.field}: {self.message}" if self.field else self.message


class ConfigError(ValueError):
    """A document, a proposed state or a request is invalid; nothing has been written (400)."""

    def __init__(self, problems: list[Problem] | str, field: str = ""):
        if isinstance(problems, str):
            problems = [Problem(field, problems)]
        self.problems = problems
        super().__init__(str(self))

    def __str__(self):
        first = str(self.problems[0]) if self.problems else "invalid configuration"
        more = len(self.problems) - 1
        return f"{first} (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else first


class NotFound(ConfigError):
    """The named object does not exist, or not for the one asking (404: the two are not told apart)."""


class Conflict(ConfigError):
    """The request is well formed but the current state refuses it: a name taken, an object in use (409)."""


class Stale(ConfigError):
    """The object changed since the caller read it (``If-Match`` names an older version): 412."""


class AccessDenied(Exception):
    """The one acting may see the object but may not do this to it (403). The message names what is missing."""
