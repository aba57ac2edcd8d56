"""Safe arithmetic over quantities for resource-validation operands (SEMANTICS §4).

An operand, once rendered, is a quantity (``8Gi``, ``500m``), a number, or an expression of those with
``+ - * /``, unary minus and parentheses: ``68719476736 * 0.8``, ``(8Gi + 512Mi) / 2``. It is read by the
small tokenizer and recursive-descent parser below; nothing is ever handed to ``eval``.

Grammar (unary minus binds tighter than ``*``, so a substituted negative number behaves as one atom)::

    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/") unary)*
    unary   := ("-" | "+") unary | atom
    atom    := QUANTITY | NAME | "(" sum ")"

``NAME`` is only accepted by ``compile_expression`` when the caller declares it; validation uses that to
parse an operand once and evaluate it for every node.
"""

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, DecimalException, DivisionByZero, InvalidOperation, Overflow

from .errors import ExpressionError, QuantityError
from .quantities import parse_quantity

MAX_EXPRESSION_LENGTH = 1000
MAX_NESTING = 50

# A quantity must not run straight into a letter, digit or dot: "8Gix" and "1.2.3" are errors, not "8Gi x".
_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<quantity>(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[eE][+-]?\d+|[numkMGTPE])?(?![A-Za-z0-9_.]))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<symbol>[-+*/()])"
    r")",
    re.ASCII,
)

# Fifty significant digits and exponents up to 999 are far beyond any byte count; the traps turn what would
# silently become NaN or Infinity into errors.
_ARITHMETIC = Context(prec=50, Emax=999, Emin=-999, traps=[InvalidOperation, DivisionByZero, Overflow])


def _divide(dividend: Decimal, divisor: Decimal) -> Decimal:
    # Checked up front because the decimal module reports 0 / 0 as an invalid operation, not a division by zero.
    if divisor == 0:
        raise ZeroDivisionError
    return _ARITHMETIC.divide(dividend, divisor)


_OPERATIONS = {
    "+": _ARITHMETIC.add,
    "-": _ARITHMETIC.subtract,
    "*": _ARITHMETIC.multiply,
    "/": _divide,
}


@dataclass(frozen=True)
class Expression:
    """A parsed operand: evaluate it as often as needed with different values for its names."""

    text: str
    tree: object

    def evaluate(self, values: Mapping[str, Decimal] | None = None) -> Decimal:
        """Return the value of the expression, reading each declared name from ``values``.

        Raises ``ExpressionError`` on division by zero, overflow or a name missing from ``values``.
        """
        try:
            return _evaluate(self.tree, values or {})
        except ZeroDivisionError:
            raise _error(self.text, "division by zero") from None
        except DecimalException:
            raise _error(self.text, "the result is out of range") from None
        except KeyError as missing:
            raise _error(self.text, f"{missing.args[0]} has no value") from None


def evaluate_operand(text: str | float | Decimal | None) -> Decimal:
    """Return the value of a rendered operand: a quantity, a number or an arithmetic expression of them.

    Raises ``ExpressionError`` quoting the text for anything else: empty or missing input, garbage,
    division by zero, input over 1000 characters or nested too deeply.
    """
    if isinstance(text, int | float | Decimal) and not isinstance(text, bool):
        try:
            return parse_quantity(text)
        except QuantityError:
            raise _error(str(text), "it is not a finite number") from None
    return compile_expression(text).evaluate()


def compile_expression(text, names: Collection[str] = ()) -> Expression:
    """Parse ``text`` once into an ``Expression``; bare words are allowed only if listed in ``names``.

    Raises ``ExpressionError`` for anything that is not a well-formed expression.
    """
    if text is None:
        raise ExpressionError("the operand is empty (null)", text="", reason="empty")
    if not isinstance(text, str):
        raise _error(repr(text), "it is not text or a number")
    if not text.strip():
        raise ExpressionError("the operand is empty", text=text, reason="empty")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise _error(text, f"it is longer than {MAX_EXPRESSION_LENGTH} characters")
    return Expression(text, _Parser(text, names).parse())


def _error(text: str, reason: str) -> ExpressionError:
    shown = text if len(text) <= 80 else text[:77] + "..."
    return ExpressionError(f"'{shown}' is not a quantity expression: {reason}", text=text, reason=reason)


def _unknown_word(text: str, word: str) -> ExpressionError:
    if text.strip() == word:
        # The whole operand is one bad word ("abc", "1.2.3"): say so plainly.
        return ExpressionError(f"'{word}' is not a quantity", text=text, reason="not a quantity")
    return _error(text, f"'{word[:20]}' is not a number or a quantity")


def _evaluate(tree, values: Mapping[str, Decimal]) -> Decimal:
    # Trees are Decimal (a constant), str (a name), ("neg", operand) or (operator, left, right).
    if isinstance(tree, Decimal):
        return tree
    if isinstance(tree, str):
        return values[tree]
    if tree[0] == "neg":
        return _ARITHMETIC.minus(_evaluate(tree[1], values))
    return _OPERATIONS[tree[0]](_evaluate(tree[1], values), _evaluate(tree[2], values))


class _Parser:
    """Recursive-descent parser over the tokens of one expression; a constant subtree is folded."""

    def __init__(self, text: str, names: Collection[str]):
        self.text = text
        self.names = names
        self.tokens = self._tokenize()
        self.position = 0

    def _tokenize(self) -> list[tuple[str, object]]:
        tokens: list[tuple[str, object]] = []
        index, end = 0, len(self.text.rstrip())
        while index < end:
            match = _TOKEN.match(self.text, index)
            if match is None:
                raise _unknown_word(self.text, self.text[index:].split()[0])
            index = match.end()
            if match["quantity"]:
                try:
                    tokens.append(("value", parse_quantity(match["quantity"])))
                except QuantityError:
                    raise _error(self.text, f"'{match['quantity']}' is out of range") from None
            elif match["name"]:
                if match["name"] not in self.names:
                    raise _unknown_word(self.text, match["name"])
                tokens.append(("name", match["name"]))
            else:
                tokens.append((match["symbol"], None))
        return tokens

    def parse(self):
        tree = self._sum(0)
        if self.position != len(self.tokens):
            raise _error(self.text, f"unexpected '{self._describe()}'")
        return tree

    def _peek(self) -> str | None:
        return self.tokens[self.position][0] if self.position < len(self.tokens) else None

    def _describe(self) -> str:
        kind, value = self.tokens[self.position]
        return str(value) if kind in ("value", "name") else kind

    def _sum(self, depth: int):
        tree = self._product(depth)
        while self._peek() in ("+", "-"):
            operator = self.tokens[self.position][0]
            self.position += 1
            tree = self._fold(operator, tree, self._product(depth))
        return tree

    def _product(self, depth: int):
        tree = self._unary(depth)
        while self._peek() in ("*", "/"):
            operator = self.tokens[self.position][0]
            self.position += 1
            tree = self._fold(operator, tree, self._unary(depth))
        return tree

    def _unary(self, depth: int):
        if depth > MAX_NESTING:
            raise _error(self.text, f"it nests deeper than {MAX_NESTING} levels")
        kind = self._peek()
        if kind in ("-", "+"):
            self.position += 1
            operand = self._unary(depth + 1)
            if kind == "+":
                return operand
            return self._fold_negation(operand)
        return self._atom(depth)

    def _atom(self, depth: int):
        kind = self._peek()
        if kind is None:
            raise _error(self.text, "it ends where a number was expected")
        kind, value = self.tokens[self.position]
        self.position += 1
        if kind in ("value", "name"):
            return value
        if kind == "(":
            tree = self._sum(depth + 1)
            if self._peek() != ")":
                raise _error(self.text, "a parenthesis is not closed")
            self.position += 1
            return tree
        raise _error(self.text, f"unexpected '{kind}'")

    def _fold(self, operator: str, left, right):
        tree = (operator, left, right)
        if isinstance(left, Decimal) and isinstance(right, Decimal):
            return self._constant(tree)
        return tree

    def _fold_negation(self, operand):
        tree = ("neg", operand)
        return self._constant(tree) if isinstance(operand, Decimal) else tree

    def _constant(self, tree) -> Decimal:
        try:
            return _evaluate(tree, {})
        except ZeroDivisionError:
            raise _error(self.text, "division by zero") from None
        except DecimalException:
            raise _error(self.text, "the result is out of range") from None
