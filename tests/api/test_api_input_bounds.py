"""SEMANTICS §7.3 on the API: whatever an admin sends, the answer is never a 5xx, errors keep their shape,
and a refused request writes nothing.

The attacks of the report are reproduced one by one first; then Hypothesis sends random and hostile JSON to
every write endpoint and hostile values to every query parameter of every GET endpoint of the OpenAPI schema.
"""

from __future__ import annotations

import json
import os
import re
import time
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.generators import SchemaGenerator
from hostile_input import NESTED_RANGES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pools import selectors
from pools.api.parsers import BoundedJSONParser
from pools.choices import ConfigType
from pools.models import Backend, ConfigRevision

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
# Objects of the ``two_pools`` cluster that the schema's path parameters name, per endpoint.
PATH_VALUES = {
    "/api/backends/{name}/": "test-cluster",
    "/api/pools/{name}/": "team-a",
    "/api/pod_templates/{name}/": "a",
    "/api/resource_validations/{name}/": "default_cpu",
    "/api/roles/{name}/": "osmo-user",
    "/api/nodes/{name}/": "n1",
    "/api/pools/{pool_name}/platforms/{name}/": "gpu",
}


def url_of(path: str, config_type: str = "POOL") -> str:
    """The schema path with its parameters filled in with objects that exist."""
    prefix = next((key for key in PATH_VALUES if path.startswith(key)), None)
    url = path.replace("{pool_name}", "team-a").replace("{config_type}", config_type)
    url = url.replace("{revision}", "1").replace("{job_id}", "no-such-job")
    return url.replace("{name}", PATH_VALUES[prefix]) if prefix else url


def operations(*methods: str) -> list[tuple[str, str, dict]]:
    return [
        (method.upper(), path, operation)
        for path, item in SCHEMA["paths"].items()
        for method, operation in item.items()
        if method.upper() in methods
    ]


def config_snapshot():
    """Everything a refused request must leave as it was: the whole configuration, its revisions and their tags."""
    revisions = ConfigRevision.objects.order_by("config_type", "revision").values_list(
        "config_type", "revision", "tags"
    )
    return selectors.config_state(), list(revisions)


def assert_error_shape(response):
    body = response.json()
    assert set(body) == {"errors"} and body["errors"], body
    for entry in body["errors"]:
        assert set(entry) == {"field", "message"} and isinstance(entry["field"], str) and entry["message"], entry


def send(client, method: str, url: str, body: str | bytes, **extra):
    return client.generic(method, url, data=body, content_type="application/json", **extra)


def errors_of(response) -> list[dict]:
    assert_error_shape(response)
    return response.json()["errors"]


# --- the attacks of the report, one by one ------------------------------------------------------------------


def test_nested_range_loops_in_a_pod_template_stop_the_render_after_a_second(two_pools, admin_api):
    started = time.monotonic()
    response = admin_api.patch("/api/pod_templates/a/", {"spec": {"hostname": NESTED_RANGES}}, format="json")
    assert response.status_code == 200  # saved: variables come with each request; membership skips the pool
    assert time.monotonic() - started < 3
    started = time.monotonic()
    rendered = admin_api.post("/api/pools/team-a/render/", {}, format="json")
    assert time.monotonic() - started < 2.5
    assert rendered.status_code == 400
    assert "rendering took more than 1 s" in errors_of(rendered)[0]["message"]


def test_json_nested_ten_thousand_levels_is_a_400(two_pools, admin_api):
    before = config_snapshot()
    body = '{"name": "deep", "spec": ' + "[" * 10_000 + "]" * 10_000 + "}"
    response = send(admin_api, "POST", "/api/pod_templates/", body)
    assert response.status_code == 400
    assert errors_of(response) == [{"field": "", "message": "nested deeper than 64 levels at line 1, column 89"}]
    assert config_snapshot() == before


def test_json_nested_64_levels_is_accepted(two_pools, admin_api):
    body = '{"name": "deep", "spec": {"x": ' + "[" * 62 + "]" * 62 + "}}"
    assert send(admin_api, "POST", "/api/pod_templates/", body).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        '{"common_default_variables": {"USER_GPU": 1e400}}',
        '{"common_default_variables": {"USER_GPU": NaN}}',
        '{"common_default_variables": {"USER_GPU": -Infinity}}',
    ],
)
def test_numbers_that_overflow_to_infinity_are_a_400(two_pools, admin_api, body):
    before = config_snapshot()
    response = send(admin_api, "PATCH", "/api/pools/team-a/", body)
    assert response.status_code == 400
    assert re.search(r"out of range|not a number JSON allows", errors_of(response)[0]["message"])
    assert config_snapshot() == before
    response = send(
        admin_api, "POST", "/api/pools/team-a/render/", body.replace("common_default_variables", "variables")
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "url, body, field",
    [
        ("/api/backends/", {"name": "sim", "kind": "simulated", "seed": 2**70}, "seed"),
        ("/api/backends/", {"name": "sim", "kind": "simulated", "size": 2**70}, "size"),
        ("/api/backends/", {"name": "sim", "kind": "simulated", "seed": 2**31}, "seed"),
        (
            "/api/pools/",
            {"name": "huge", "backend": "test-cluster", "resources": {"gpu": {"guarantee": 2**70}}},
            "resources.gpu.guarantee",
        ),
        (
            "/api/pools/",
            {"name": "huge", "backend": "test-cluster", "resources": {"gpu": {"weight": 10**30}}},
            "resources.gpu.weight",
        ),
        (
            "/api/pools/",
            {"name": "late", "backend": "test-cluster", "default_exec_timeout": "²"},
            "default_exec_timeout",
        ),
    ],
)
def test_numbers_beyond_their_column_are_a_400_naming_the_field(two_pools, admin_api, url, body, field):
    before = config_snapshot()
    response = admin_api.post(url, body, format="json")
    assert response.status_code == 400
    assert field in {entry["field"] for entry in errors_of(response)}
    assert config_snapshot() == before


def test_a_superscript_timeout_on_an_existing_pool_is_a_400(two_pools, admin_api):
    response = admin_api.patch("/api/pools/team-a/", {"default_exec_timeout": "²"}, format="json")
    assert response.status_code == 400
    assert errors_of(response)[0]["field"] == "default_exec_timeout"


@pytest.mark.parametrize(
    "url, field",
    [
        ("/api/configs/POOL/?revision=²", "revision"),
        ("/api/configs/POOL/?revision=99999999999999999999", "revision"),
        ("/api/configs/POOL/diff/?from=²", "from"),
        ("/api/configs/POOL/diff/?from=1&to=٣", "to"),
        ("/api/configs/POOL/99999999999999999999/", "revision"),
    ],
)
def test_revision_numbers_that_are_not_numbers_are_a_400_naming_the_parameter(two_pools, admin_api, url, field):
    response = admin_api.get(url)
    assert response.status_code == 400
    assert errors_of(response)[0]["field"] == field


def test_a_body_over_the_upload_limit_is_a_413_in_the_error_shape(two_pools, admin_api):
    before = config_snapshot()
    padding = "x" * django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    for method, url in [
        ("POST", "/api/pod_templates/"),
        ("PUT", "/api/pod_templates/a/"),
        ("POST", "/api/configs/import/"),
    ]:
        response = send(admin_api, method, url, json.dumps({"name": "big", "spec": {"padding": padding}}))
        assert response.status_code == 413
        assert "larger than" in errors_of(response)[0]["message"]
    assert config_snapshot() == before


def test_a_body_without_a_declared_length_is_still_cut_at_the_limit():
    class Stream:
        def __init__(self, size):
            self.left = size

        def read(self, size=-1):
            chunk = min(self.left, size if size >= 0 else self.left)
            self.left -= chunk
            return b" " * chunk

    with pytest.raises(RequestDataTooBig):
        BoundedJSONParser().parse(Stream(10 * django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


@pytest.mark.parametrize("source", ["/etc/shadow", "/dev/zero", "/nonexistent/inventory.json", "escape"])
def test_sources_outside_the_inventory_directory_get_the_same_400_as_a_missing_file(
    two_pools, admin_api, inventory_dir, source
):
    if source == "escape":
        source = str(inventory_dir / "escape.json")
        os.symlink("/etc/hostname", source)
    before = config_snapshot()
    response = admin_api.patch("/api/backends/test-cluster/", {"source": source}, format="json")
    assert response.status_code == 400
    assert errors_of(response) == [
        {"field": "source", "message": f"must be a file under the inventory directory {inventory_dir}"}
    ]
    assert config_snapshot() == before
    assert Backend.objects.get(name="test-cluster").source == str(inventory_dir / "test-cluster.json")


@pytest.mark.parametrize("path", sorted(SCHEMA["paths"]))
def test_options_answers_on_every_url_of_the_schema(two_pools, admin_api, path):
    response = admin_api.options(url_of(path))
    assert response.status_code in (200, 405), response.content[:500]
    if response.status_code == 200:
        assert response.json()["name"] and "Allow" in response
    else:
        assert_error_shape(response)


# --- random and hostile input on every endpoint ----------------------------------------------------------------

FIELD_NAMES = st.sampled_from(
    [
        "name",
        "kind",
        "source",
        "seed",
        "size",
        "kubeconfig",
        "context",
        "in_cluster",
        "node_conditions",
        "pool_label",
        "priority_label",
        "writable",
        "description",
        "backend",
        "default_platform",
        "enable_maintenance",
        "common_default_variables",
        "common_resource_validations",
        "common_pod_template",
        "default_exec_timeout",
        "max_exec_timeout",
        "default_queue_timeout",
        "max_queue_timeout",
        "resources",
        "gpu",
        "guarantee",
        "maximum",
        "weight",
        "platforms",
        "topology_keys",
        "override_pod_template",
        "resource_validations",
        "default_variables",
        "allowed_mounts",
        "policies",
        "actions",
        "resources",
        "external_roles",
        "sync_mode",
        "immutable",
        "spec",
        "metadata",
        "rules",
        "operator",
        "left_operand",
        "right_operand",
        "assert_message",
        "variables",
        "platform",
        "add",
        "remove",
        "podTemplates",
        "pools",
        "backends",
        "roles",
        "resourceValidations",
        "USER_GPU",
    ]
)
HOSTILE_TEXT = st.sampled_from(
    [
        "²",
        "٣",
        "３",
        "\x00",
        "a\x00b",
        "1e400",
        "NaN",
        "-inf",
        "9" * 5000,
        "x" * 3000,
        "/etc/shadow",
        "/dev/zero",
        "../../etc/passwd",
        "{{ range(10**9)|list }}",
        "{{ 'x'|center(999999999) }}",
        "PT²H",
        "",
        " ",
        "-1",
        "0",
        "2147483648",
        "default",
        "team-a",
        "test-cluster",
        "a",
        "osmo-user",
        "POOL",
        "file",
        "simulated",
    ]
)
# NaN and the infinities go out as json.dumps writes them: NaN, Infinity, -Infinity.
HOSTILE_NUMBERS = st.sampled_from(
    [2**31, -(2**31) - 1, 2**63, 2**70, 10**400, 1e300, float("nan"), float("inf"), -float("inf"), 1.5, -1, 0]
)
HOSTILE_SCALARS = st.one_of(HOSTILE_NUMBERS, HOSTILE_TEXT)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), HOSTILE_SCALARS)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.one_of(FIELD_NAMES, st.text(max_size=8)), children, max_size=5)
    ),
    max_leaves=12,
)
RAW_BODIES = st.sampled_from(
    [
        "[" * 10_000 + "]" * 10_000,
        '{"name": "deep", "spec": ' + '{"a": ' * 70 + "1" + "}" * 70 + "}",
        '{"name": "x", "seed": 1e400}',
        '{"variables": {"USER_GPU": NaN}}',
        "[" + "9" * 5000 + "]",
        '{"name": "x", "description": "\\u0000"}',
        '{"name": "x", "description": "\\ud800"}',
        "",
        "null",
        '"text"',
        "{",
        b"\xff\xfe",
    ]
)
WRITES = [
    (method, url_of(path, config_type))
    for method, path, _ in operations("POST", "PUT", "PATCH")
    for config_type in (ConfigType.values if path == "/api/configs/{config_type}/" else ["POOL"])
]
NEW_POOL = {
    "backend": "test-cluster",
    "common_pod_template": ["a"],
    "platforms": {"p": {"override_pod_template": ["b"]}},
}
NEW_BODIES = {
    ConfigType.BACKEND: {"kind": "simulated", "seed": 1, "size": 2, "node_conditions": {"Ready": "True"}},
    ConfigType.POD_TEMPLATE: {"spec": {"nodeSelector": {"team": "a"}, "containers": [{"name": "user"}]}},
    ConfigType.RESOURCE_VALIDATION: [{"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "8"}],
    ConfigType.POOL: {**NEW_POOL, "default_exec_timeout": "2h", "resources": {"gpu": {"guarantee": 4}}},
    ConfigType.ROLE: {"policies": [{"actions": ["pool:Read"], "resources": ["pool/x"]}], "external_roles": ["g"]},
}
# A valid body for each endpoint that creates something or takes a request: hostile values go into it, so
# they reach the checks behind the first one (a random body mostly stops at its first unknown field).
VALID_BODIES = {
    "/api/backends/": {"name": "new", **NEW_BODIES[ConfigType.BACKEND]},
    "/api/pools/": {"name": "new", **NEW_BODIES[ConfigType.POOL]},
    "/api/pools/team-a/platforms/": {"name": "new", "override_pod_template": ["b"], "default_variables": {"X": 1}},
    "/api/pod_templates/": {"name": "new", **NEW_BODIES[ConfigType.POD_TEMPLATE]},
    "/api/resource_validations/": {"name": "new", "rules": NEW_BODIES[ConfigType.RESOURCE_VALIDATION]},
    "/api/roles/": {"name": "new", **NEW_BODIES[ConfigType.ROLE]},
    "/api/roles/generate/": {"name": "osmo-new", "description": "generated"},
    "/api/configs/import/": {"pools": {"new": NEW_POOL}, "podTemplates": {"new": NEW_BODIES[ConfigType.POD_TEMPLATE]}},
    "/api/pools/team-a/render/": {"platform": "gpu", "variables": {"USER_GPU": 1, "USER_CPU": "500m"}},
    "/api/pools/team-a/check/": {"platform": "gpu", "variables": {"USER_GPU": 1, "USER_MEMORY": "8Gi"}},
    "/api/configs/POOL/1/rollback/": {"description": "back"},
    "/api/configs/POOL/1/tags/": {"add": ["good"], "remove": ["bad"]},
    **{f"/api/configs/{config_type}/": {"new": body} for config_type, body in NEW_BODIES.items()},
    # PUT and PATCH of the objects of ``two_pools``.
    "/api/backends/test-cluster/": NEW_BODIES[ConfigType.BACKEND],
    "/api/pools/team-a/": {**NEW_POOL, "platforms": {"gpu": {"override_pod_template": ["b"]}}},
    "/api/pools/team-a/platforms/gpu/": {"override_pod_template": ["b"], "default_variables": {"X": 1}},
    "/api/pod_templates/a/": NEW_BODIES[ConfigType.POD_TEMPLATE],
    "/api/resource_validations/default_cpu/": {"rules": NEW_BODIES[ConfigType.RESOURCE_VALIDATION]},
    "/api/roles/osmo-user/": NEW_BODIES[ConfigType.ROLE],
}


def leaf_paths(value, prefix=()) -> list[tuple]:
    """The key path of every scalar in a JSON value (list items included), and of each container itself."""
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return [prefix]
    return [
        *([prefix] if prefix else []),
        *(path for key, item in children for path in leaf_paths(item, (*prefix, key))),
    ]


def with_value(document, path: tuple, value):
    """A copy of ``document`` with ``value`` at ``path``."""
    document = json.loads(json.dumps(document))
    *parents, last = path
    target = document
    for key in parents:
        target = target[key]
    target[last] = value
    return document


def hostile_like(original):
    """Hostile values for a field, mostly of the kind it holds: numbers for a number, texts for a text."""
    if isinstance(original, int | float) and not isinstance(original, bool):
        return st.one_of(HOSTILE_NUMBERS, HOSTILE_NUMBERS, HOSTILE_NUMBERS, HOSTILE_TEXT, VALUES)
    if isinstance(original, str):
        return st.one_of(HOSTILE_TEXT, HOSTILE_TEXT, HOSTILE_TEXT, HOSTILE_NUMBERS, VALUES)
    return st.one_of(HOSTILE_SCALARS, VALUES)


# A few hundred examples in all, the same ones on every run; BOUNDS_EXAMPLES=50 explores further, at random.
EXPLORE = int(os.environ.get("BOUNDS_EXAMPLES", "0"))
BOUNDED = settings(
    max_examples=EXPLORE or 6,
    deadline=None,
    derandomize=not EXPLORE,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FIELD_WRITES = [(method, url) for method, url in WRITES if url in VALID_BODIES]


def assert_refusal_writes_nothing(client, method: str, url: str, body: str | bytes, before):
    response = send(client, method, url, body if isinstance(body, bytes) else body.encode())
    assert response.status_code < 500
    if response.status_code >= 400:
        assert_error_shape(response)
        assert config_snapshot() == before


@pytest.mark.parametrize("method, url", FIELD_WRITES, ids=[f"{method} {url}" for method, url in FIELD_WRITES])
@settings(BOUNDED, max_examples=EXPLORE or 20)
@given(data=st.data())
def test_every_field_of_every_write_takes_hostile_values_without_failing(two_pools, admin_api, method, url, data):
    """A valid body with one field (or a field it does not have) set to a hostile value of the field's kind."""
    body = VALID_BODIES[url]
    path = data.draw(st.sampled_from([*leaf_paths(body), ("unexpected",)]), label="field")
    value = data.draw(hostile_like(None if path == ("unexpected",) else _at(body, path)), label="value")
    assert_refusal_writes_nothing(admin_api, method, url, json.dumps(with_value(body, path, value)), config_snapshot())


def _at(document, path: tuple):
    for key in path:
        document = document[key]
    return document


@pytest.mark.parametrize("method, url", WRITES, ids=[f"{method} {url}" for method, url in WRITES])
@BOUNDED
@given(
    body=st.one_of(
        st.dictionaries(FIELD_NAMES, VALUES, max_size=6).map(json.dumps), VALUES.map(json.dumps), RAW_BODIES
    ),
    description=st.one_of(st.none(), HOSTILE_TEXT),
)
def test_write_endpoints_take_any_document_and_write_nothing_when_they_refuse(
    two_pools, admin_api, method, url, body, description
):
    query = "" if description is None else "?" + urlencode({"description": description, "tag": description})
    assert_refusal_writes_nothing(admin_api, method, url + query, body, config_snapshot())


def query_values(schema_type: str | None):
    hostile = st.one_of(HOSTILE_TEXT, st.text(max_size=20), st.integers().map(str), st.just("1e400"), st.just("nan"))
    if schema_type == "array":
        return st.lists(hostile, min_size=1, max_size=3)
    return hostile


READS = [
    (
        url_of(path),
        [
            (parameter["name"], parameter.get("schema", {}).get("type"))
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "query"
        ],
    )
    for _, path, operation in operations("GET")
]


@pytest.mark.parametrize("url, parameters", READS, ids=[url for url, _ in READS])
@settings(BOUNDED, max_examples=EXPLORE or 8)
@given(data=st.data())
def test_query_parameters_of_every_read_never_fail(two_pools, admin_api, url, parameters, data):
    query = {
        name: data.draw(query_values(schema_type), label=name)
        for name, schema_type in parameters
        if data.draw(st.booleans(), label=f"send {name}")
    }
    response = admin_api.get(url, query)
    assert response.status_code < 500
    if response.status_code >= 400:
        assert_error_shape(response)
