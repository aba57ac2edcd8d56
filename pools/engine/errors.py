"""Errors raised by the engine.

Every message is one sentence meant for the person who typed the input: the web UI, the API and the
CLI show it as it is. All of them are ``ValueError``s, so a caller that only wants "bad input" can catch that.
"""


class EngineError(ValueError):
    """Base class of every error the engine raises on bad input."""


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
