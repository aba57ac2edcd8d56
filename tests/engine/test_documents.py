"""SEMANTICS §7.3: documents are read within bounds (nesting, aliases, numbers, NUL), with where it went wrong."""

import json
import time

import pytest
from hostile_input import ALIAS_BOMB
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.documents import MAX_DEPTH, dump_yaml, load_json, load_yaml
from pools.engine.errors import DocumentError


def nested_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def nested_yaml(levels: int) -> str:
    return "".join("  " * level + f"k{level}:\n" for level in range(levels)) + "  " * levels + "leaf"


def test_yaml_aliases_are_refused_before_anything_is_expanded():
    assert len(ALIAS_BOMB) <= 256
    started = time.monotonic()
    with pytest.raises(DocumentError, match=r"YAML aliases are not accepted \(line 2, column 8\)"):
        load_yaml(ALIAS_BOMB)
    assert time.monotonic() - started < 0.5


def test_anchors_alone_are_harmless_and_accepted():
    assert load_yaml("a: &x 1\nb: 2") == {"a": 1, "b": 2}


@pytest.mark.parametrize("load, nested", [(load_json, nested_json), (load_yaml, nested_json), (load_yaml, nested_yaml)])
def test_documents_may_nest_64_levels_and_no_more(load, nested):
    load(nested(MAX_DEPTH))
    with pytest.raises(DocumentError, match="nested deeper than 64 levels at line"):
        load(nested(MAX_DEPTH + 1))


def test_json_nested_ten_thousand_levels_is_refused_not_a_recursion_error():
    with pytest.raises(DocumentError, match="nested deeper than 64 levels at line 1, column 65"):
        load_json(nested_json(10_000))
    with pytest.raises(DocumentError, match="nested deeper than 64 levels"):
        load_json('{"a": ' * 10_000 + "1" + "}" * 10_000)


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"spec": {"command": ["[" * 500, '{"x\\"[' * 100]}})
    assert load_json(text)["spec"]["command"][0] == "[" * 500


@pytest.mark.parametrize("text", ['{"USER_GPU": 1e400}', '{"x": -1e400}', "[NaN]", "[Infinity]", "[-Infinity]"])
def test_json_numbers_that_are_not_finite_are_refused(text):
    with pytest.raises(DocumentError, match="out of range|not a number JSON allows"):
        load_json(text)


@pytest.mark.parametrize("text", ["x: 1.0e+400", "x: .inf", "x: -.Inf", "x: .nan"])
def test_yaml_numbers_that_are_not_finite_are_refused(text):
    with pytest.raises(DocumentError, match="out of range"):
        load_yaml(text)


@pytest.mark.parametrize("load, text", [(load_json, "[" + "9" * 5000 + "]"), (load_yaml, "x: " + "9" * 5000)])
def test_numbers_with_thousands_of_digits_are_refused(load, text):
    with pytest.raises(DocumentError, match="more than 1000 digits"):
        load(text)


@pytest.mark.parametrize(
    "load, text",
    [(load_json, '["a\\u0000b"]'), (load_json, '{"\\u0000": 1}'), (load_json, '["\\ud800"]')]
    + [(load_yaml, 'x: "a\\0b"'), (load_yaml, '"\\0": 1')],
)
def test_strings_postgresql_cannot_store_are_refused(load, text):
    with pytest.raises(DocumentError, match="NUL characters"):
        load(text)


def test_yaml_is_read_as_the_json_it_stands_for():
    assert load_yaml("when: 2024-01-01\nn: 3\nf: 2.5\nok: true\nnothing: null") == {
        "when": "2024-01-01",
        "n": 3,
        "f": 2.5,
        "ok": True,
        "nothing": None,
    }
    for text in ["x: !!binary aGVsbG8=", "x: !!set {a, b}", "x: !!omap [a: 1]", "x: !!timestamp 2024-01-01"]:
        with pytest.raises(DocumentError, match="YAML tag !!.* is not accepted"):
            load_yaml(text)


def test_syntax_errors_keep_their_line_and_column():
    with pytest.raises(DocumentError, match="invalid JSON at line 2, column 3: Expecting value"):
        load_json('{"a":\n  }')
    with pytest.raises(DocumentError, match="invalid YAML at line 2, column 1"):
        load_yaml("a: [1\n")


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(deadline=None, max_examples=100)
@given(json_documents)
def test_any_storable_json_reads_back_as_itself(document):
    text = json.dumps(document, ensure_ascii=False)  # strings as they are; only NUL is escaped, as \u0000
    if "\\u0000" in text:
        with pytest.raises(DocumentError):
            load_json(text)
    else:
        assert load_json(text) == document


def test_yaml_written_for_people_has_no_aliases_so_it_reads_back():
    shared = {"name": "user", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    document = {"spec": {"containers": [shared, shared]}}
    text = dump_yaml(document, sort_keys=False)
    assert "&" not in text and "*" not in text
    assert load_yaml(text) == document
