"""SEMANTICS §3 (quantities) and §1 (durations): Kubernetes units, exact values, clear errors."""

import datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.errors import DurationError, EngineError, QuantityError
from pools.engine.quantities import format_duration, format_quantity, parse_duration, parse_quantity


def test_milli_is_a_thousandth_so_500m_cpu_is_half_a_core():
    assert parse_quantity("500m") == Decimal("0.5")


def test_binary_suffixes_are_powers_of_1024():
    assert parse_quantity("1Ki") == 1024
    assert parse_quantity("1Gi") == 1073741824
    assert parse_quantity("2Ti") == 2 * 1024**4
    assert parse_quantity("1Ei") == 1024**6


def test_decimal_suffixes_are_powers_of_1000_so_G_is_not_Gi():
    assert parse_quantity("1G") == 1_000_000_000
    assert parse_quantity("1.5k") == 1500
    assert parse_quantity("3M") == 3_000_000
    assert parse_quantity("1E") == 10**18


def test_small_suffixes_are_exact_fractions():
    assert parse_quantity("250u") == Decimal("0.00025")
    assert parse_quantity("5n") == Decimal("0.000000005")


def test_exponent_suffix_is_a_power_of_ten():
    assert parse_quantity("1e3") == 1000
    assert parse_quantity("12E-1") == Decimal("1.2")


def test_sign_and_bare_numbers_are_quantities():
    assert parse_quantity("-2") == -2
    assert parse_quantity("+.5") == Decimal("0.5")
    assert parse_quantity("8") == 8


def test_surrounding_whitespace_is_ignored():
    assert parse_quantity("  8Gi \n") == 8 * 1024**3


def test_numbers_are_quantities_but_booleans_are_not():
    assert parse_quantity(3) == 3
    assert parse_quantity(0.1) == Decimal("0.1")
    assert parse_quantity(Decimal("2.5")) == Decimal("2.5")
    with pytest.raises(QuantityError):
        parse_quantity(True)


def test_whole_results_print_without_exponent():
    assert str(parse_quantity("1G")) == "1000000000"


@pytest.mark.parametrize(
    "value", [None, "", "abc", "1.2.3", "Gi", "8 Gi", "8gi", "1e", "--1", [], {}, float("nan"), Decimal("Infinity")]
)
def test_anything_else_is_rejected_with_a_message_naming_it(value):
    with pytest.raises(QuantityError) as raised:
        parse_quantity(value)
    assert "is not a quantity" in str(raised.value)


def test_error_message_quotes_the_text():
    with pytest.raises(QuantityError, match=r"^'abc' is not a quantity$"):
        parse_quantity("abc")


def test_quantity_errors_are_value_errors():
    assert issubclass(QuantityError, EngineError)
    assert issubclass(QuantityError, ValueError)


def test_huge_exponents_are_refused_instead_of_building_huge_numbers():
    with pytest.raises(QuantityError):
        parse_quantity("1e999999999")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal(0), "0"),
        (Decimal(1024), "1Ki"),
        (Decimal(8 * 1024**3), "8Gi"),
        (Decimal("0.5"), "500m"),
        (Decimal(10**9), "1G"),
        (Decimal(1500), "1500"),
        (Decimal(-3), "-3"),
    ],
)
def test_format_quantity_gives_a_short_canonical_spelling(value, text):
    assert format_quantity(value) == text


@given(
    st.one_of(
        st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30, places=9),
        st.integers(min_value=-(10**6), max_value=10**6).map(lambda n: Decimal(n) * 1024**3),
        st.integers(min_value=-(10**25), max_value=10**25).map(Decimal),
    )
)
def test_format_then_parse_round_trips_exactly(value):
    assert parse_quantity(format_quantity(value)) == value


@given(st.text(max_size=30))
def test_parse_quantity_raises_only_quantity_error(text):
    try:
        parse_quantity(text)
    except QuantityError:
        pass


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", datetime.timedelta(days=30)),
        ("2h", datetime.timedelta(hours=2)),
        ("15m", datetime.timedelta(minutes=15)),
        ("10s", datetime.timedelta(seconds=10)),
        ("1h30m", datetime.timedelta(hours=1, minutes=30)),
        ("1d12h", datetime.timedelta(days=1, hours=12)),
    ],
)
def test_compact_durations(text, expected):
    assert parse_duration(text) == expected


def test_plain_integer_duration_is_seconds():
    assert parse_duration(90) == datetime.timedelta(seconds=90)
    assert parse_duration("90") == datetime.timedelta(seconds=90)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PT2H", datetime.timedelta(hours=2)),
        ("P1DT2H30M", datetime.timedelta(days=1, hours=2, minutes=30)),
        ("P2W", datetime.timedelta(weeks=2)),
        ("PT0.5S", datetime.timedelta(seconds=0.5)),
    ],
)
def test_iso_8601_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("value", ["", "x", "P", "PT", "P1DT", "P1Y", "P1M", "-5", -5, "1h 30m", None, True, 1.5])
def test_bad_durations_are_rejected_naming_the_value(value):
    with pytest.raises(DurationError) as raised:
        parse_duration(value)
    assert str(value) in str(raised.value)


@pytest.mark.parametrize("value", ["²", "2²", "٣", "３h", "1²d", "PT²H", "9" * 5000, "9" * 5000 + "s"])
def test_durations_read_ascii_digits_only_and_refuse_absurd_lengths(value):
    # str.isdigit() accepts "²", which int() then refuses: that was a 500 on a pool's timeout (SEMANTICS §7.3).
    with pytest.raises(DurationError):
        parse_duration(value)


@pytest.mark.parametrize("value", ["٣", "２Gi", "1e٣", "¹"])
def test_quantities_read_ascii_digits_only(value):
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_absurdly_long_duration_is_a_duration_error_not_an_overflow():
    with pytest.raises(DurationError):
        parse_duration(10**20)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (datetime.timedelta(hours=2), "2h"),
        (datetime.timedelta(days=1, hours=12), "1d12h"),
        (datetime.timedelta(seconds=30), "30s"),
        (datetime.timedelta(0), "0s"),
        (datetime.timedelta(seconds=1.5), "1.5s"),
    ],
)
def test_format_duration_is_compact(delta, text):
    assert format_duration(delta) == text


@given(st.timedeltas(min_value=datetime.timedelta(0), max_value=datetime.timedelta(days=10**6)))
def test_format_then_parse_duration_round_trips(delta):
    assert parse_duration(format_duration(delta)) == delta
