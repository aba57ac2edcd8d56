"""SEMANTICS §4: operands are quantities or arithmetic of them, read without eval."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine import expressions
from pools.engine.errors import ExpressionError
from pools.engine.expressions import compile_expression, evaluate_operand


def test_an_operand_can_be_a_quantity():
    assert evaluate_operand("8Gi") == 8 * 1024**3
    assert evaluate_operand("500m") == Decimal("0.5")


def test_an_operand_can_be_a_number():
    assert evaluate_operand("42") == 42
    assert evaluate_operand(" 0.8 ") == Decimal("0.8")
    assert evaluate_operand(8) == 8
    assert evaluate_operand(2.5) == Decimal("2.5")
    assert evaluate_operand(Decimal("3")) == 3


def test_the_documented_osmo_example_works():
    # "{{K8_MEMORY}} * 0.8" raises a TypeError in OSMO.
    assert evaluate_operand("68719476736 * 0.8") == Decimal("54975581388.8")


def test_quantities_mix_with_arithmetic():
    assert evaluate_operand("(8Gi + 512Mi) / 2") == (8 * 1024**3 + 512 * 1024**2) // 2
    assert evaluate_operand("64Gi*0.8") == Decimal(64 * 1024**3) * Decimal("0.8")


def test_multiplication_binds_tighter_than_addition():
    assert evaluate_operand("2 + 3 * 4") == 14
    assert evaluate_operand("(2 + 3) * 4") == 20
    assert evaluate_operand("8 - 2 - 1") == 5
    assert evaluate_operand("8 / 2 / 2") == 2


def test_unary_minus_including_a_substituted_negative_number():
    assert evaluate_operand("-8Gi") == -(8 * 1024**3)
    assert evaluate_operand("8 - -2") == 10
    assert evaluate_operand("2 * -3") == -6
    assert evaluate_operand("-(1 + 1)") == -2


def test_division_by_zero_is_an_expression_error():
    with pytest.raises(ExpressionError, match="division by zero") as raised:
        evaluate_operand("8 / (2 - 2)")
    assert raised.value.reason == "division by zero"
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate_operand("0 / 0")


@pytest.mark.parametrize("text", [None, "", "   "])
def test_empty_or_null_operand_is_an_error(text):
    with pytest.raises(ExpressionError, match="empty"):
        evaluate_operand(text)


def test_garbage_is_an_error_quoting_the_text():
    with pytest.raises(ExpressionError, match=r"^'abc' is not a quantity$"):
        evaluate_operand("abc")
    with pytest.raises(ExpressionError, match=r"^'2 \* 8Gix' is not a quantity expression"):
        evaluate_operand("2 * 8Gix")


@pytest.mark.parametrize("text", ["1.2.3", "1 2", "(1", "1)", "1 +", "*", "--", "Gi", "1e", "2 ** 3", "__import__"])
def test_malformed_expressions_are_errors(text):
    with pytest.raises(ExpressionError):
        evaluate_operand(text)


@pytest.mark.parametrize("value", [True, [1], {"a": 1}, float("inf")])
def test_non_numeric_values_are_errors(value):
    with pytest.raises(ExpressionError):
        evaluate_operand(value)


def test_over_long_input_is_refused():
    with pytest.raises(ExpressionError, match="longer than 1000"):
        evaluate_operand("1+" * 500 + "1")


def test_too_deep_nesting_is_refused():
    with pytest.raises(ExpressionError, match="nests deeper"):
        evaluate_operand("(" * 60 + "1" + ")" * 60)
    with pytest.raises(ExpressionError, match="nests deeper"):
        evaluate_operand("-" * 60 + "1")


def test_overflow_is_an_expression_error():
    with pytest.raises(ExpressionError, match="out of range"):
        evaluate_operand("*".join(["1e60"] * 20))


def test_nothing_is_passed_to_eval(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval must not be used")

    monkeypatch.setattr("builtins.eval", forbidden)
    assert evaluate_operand("1 + 1") == 2
    assert "eval(" not in open(expressions.__file__).read()


def test_compiled_expression_reads_declared_names():
    expression = compile_expression("slot * 0.8 + 1", names={"slot"})
    assert expression.evaluate({"slot": Decimal(10)}) == 9
    assert expression.evaluate({"slot": Decimal(20)}) == 17
    with pytest.raises(ExpressionError):
        compile_expression("other * 2", names={"slot"})
    with pytest.raises(ExpressionError, match="division by zero"):
        compile_expression("1 / slot", names={"slot"}).evaluate({"slot": Decimal(0)})


@given(st.text(max_size=60))
def test_arbitrary_text_raises_only_expression_error(text):
    try:
        evaluate_operand(text)
    except ExpressionError:
        pass


@given(st.text(alphabet="0123456789.+-*/() eEkKMGTPimnu", max_size=60))
def test_arithmetic_looking_text_raises_only_expression_error(text):
    try:
        evaluate_operand(text)
    except ExpressionError:
        pass
