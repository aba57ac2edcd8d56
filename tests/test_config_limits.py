"""SEMANTICS §7.3 in config documents: every number fits its column, every string its field, digits are ASCII."""

from __future__ import annotations

import pytest

from pools.choices import ConfigType
from pools.configs import (
    INT32_MAX,
    normalize_body,
    parse_assignments,
    parse_document,
    parse_revision_number,
    parse_revision_ref,
    read_document,
    variable_value,
)
from pools.engine.errors import ConfigError


def problems(config_type, body, name="x") -> dict[str, str]:
    with pytest.raises(ConfigError) as raised:
        normalize_body(config_type, name, body)
    return {problem.field: problem.message for problem in raised.value.problems}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "simulated", "seed": 2**70}, "seed"),
        ({"kind": "simulated", "seed": -(2**31) - 1}, "seed"),
        ({"kind": "simulated", "size": 2**70}, "size"),
        ({"kind": "simulated", "size": 10**6}, "size"),
        ({"kind": "simulated", "size": -1}, "size"),
        ({"kind": "simulated", "seed": 1.5}, "seed"),
        ({"kind": "simulated", "seed": True}, "seed"),
        ({"kind": "kubernetes", "kubeconfig": "k" * 1025}, "kubeconfig"),
        ({"kind": "kubernetes", "context": "c" * 257}, "context"),
        ({"pool_label": "l" * 254}, "pool_label"),
        ({"priority_label": "l" * 254}, "priority_label"),
    ],
)
def test_backend_numbers_and_strings_must_fit_their_columns(body, field):
    assert field in {key.rsplit(".", 1)[-1] for key in problems(ConfigType.BACKEND, body)}


def test_the_largest_values_the_columns_hold_are_accepted():
    body = normalize_body(ConfigType.BACKEND, "x", {"kind": "simulated", "seed": INT32_MAX, "size": 100_000})
    assert body["seed"] == INT32_MAX and body["size"] == 100_000
    assert normalize_body(ConfigType.BACKEND, "x", {"kind": "simulated", "seed": -(2**31)})["seed"] == -(2**31)


@pytest.mark.parametrize("key", ["guarantee", "maximum", "weight"])
@pytest.mark.parametrize("value", [2**31, 2**70, 10**400, 1e300, "8"])
def test_gpu_figures_are_whole_numbers_a_column_holds(key, value):
    found = problems(ConfigType.POOL, {"resources": {"gpu": {key: value}}})
    assert f"pool 'x'.resources.gpu.{key}" in found


@pytest.mark.parametrize("value", ["²", "PT²H", "0" * 100 + "1"])
def test_timeouts_are_refused_not_a_server_error(value):
    found = problems(ConfigType.POOL, {"default_exec_timeout": value})
    assert "pool 'x'.default_exec_timeout" in found


def test_the_user_gpu_of_the_report_is_refused_when_it_overflows():
    # "USER_GPU: 1e400" was read as infinity; it is now refused where the document is read.
    with pytest.raises(ConfigError, match=r"document: the number 1e400 is out of range"):
        parse_document('{"common_default_variables": {"USER_GPU": 1e400}}')
    with pytest.raises(ConfigError, match=r"document: the number 1.0e\+400 is out of range"):
        parse_document("common_default_variables:\n  USER_GPU: 1.0e+400\n")


@pytest.mark.parametrize("text", ["1", "42", str(INT32_MAX)])
def test_revision_numbers_are_ascii_digits_from_one(text):
    assert parse_revision_number(text, "revision") == int(text)


@pytest.mark.parametrize("text", ["²", "٣", "0", "-1", "", " 1", "1.0", str(INT32_MAX + 1), "9" * 5000])
def test_anything_else_is_not_a_revision_number_and_names_the_field(text):
    with pytest.raises(ConfigError) as raised:
        parse_revision_number(text, "from")
    assert raised.value.problems[0].field == "from"
    assert "is not a revision number" in raised.value.problems[0].message


@pytest.mark.parametrize("text", ["POOL:²", "POOL:0", "POOL:99999999999", "POOL", "POOL:"])
def test_revision_references_read_their_number_the_same_way(text):
    with pytest.raises(ConfigError, match="is not TYPE:REVISION"):
        parse_revision_ref(text)
    assert parse_revision_ref("pod-template:7") == (ConfigType.POD_TEMPLATE, 7)


@pytest.mark.parametrize(
    "text, value",
    [("2", 2), ("-3", -3), ("1.5", 1.5), ("8Gi", "8Gi"), ("²", "²"), ("٣", "٣"), ("9" * 30, "9" * 30)]
    + [("1" + "0" * 400 + ".5", "1" + "0" * 400 + ".5"), (" 4 ", 4)],
)
def test_typed_variables_become_numbers_only_when_they_are_plainly_numbers(text, value):
    assert variable_value(text) == value
    assert parse_assignments([f"USER_GPU={text}"]) == {"USER_GPU": value}


def test_config_files_are_read_only_when_regular_and_not_huge(tmp_path):
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_document("/dev/zero")
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(17 * 1024**2)
    with pytest.raises(ConfigError, match="larger than 16 MiB"):
        read_document(str(big))
    with pytest.raises(ConfigError, match="file not found"):
        read_document(str(tmp_path / "absent.yaml"))
