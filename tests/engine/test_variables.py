"""SEMANTICS §3: variables, precedence and sandboxed rendering."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine import variables as variables_module
from pools.engine.errors import RenderError
from pools.engine.variables import BUILTIN_DEFAULTS, render_pod_template, render_value, resolve_variables

SOURCE = "pod template 'a100'"


def resolve(**overrides):
    arguments = {
        "pool": "pool-a",
        "platform": "a100",
        "pool_defaults": None,
        "platform_defaults": None,
        "user_values": None,
    }
    return resolve_variables(**(arguments | overrides))


def test_user_value_beats_platform_default_beats_pool_default():
    resolved = resolve(
        pool_defaults={"USER_GPU": 1, "USER_CPU": 2, "USER_MEMORY": "4Gi"},
        platform_defaults={"USER_GPU": 8, "USER_CPU": 16},
        user_values={"USER_GPU": 4},
    )
    assert (resolved["USER_GPU"], resolved["USER_CPU"], resolved["USER_MEMORY"]) == (4, 16, "4Gi")


def test_absent_or_null_user_value_does_not_override_a_default():
    resolved = resolve(platform_defaults={"USER_GPU": 8}, user_values={"USER_GPU": None})
    assert resolved["USER_GPU"] == 8
    assert resolve(platform_defaults={"USER_GPU": 8}, user_values={})["USER_GPU"] == 8


def test_pool_and_platform_names_are_always_set_and_cannot_be_overridden():
    resolved = resolve(pool_defaults={"WF_POOL": "x"}, user_values={"WF_PLATFORM": "y"})
    assert (resolved["WF_POOL"], resolved["WF_PLATFORM"]) == ("pool-a", "a100")


def test_user_container_name_defaults_to_user():
    assert BUILTIN_DEFAULTS == {"USER_CONTAINER_NAME": "user"}
    assert resolve()["USER_CONTAINER_NAME"] == "user"
    assert resolve(platform_defaults={"USER_CONTAINER_NAME": "main"})["USER_CONTAINER_NAME"] == "main"


def test_strings_are_rendered_in_values_keys_and_list_items():
    template = {"{{WF_POOL}}-label": ["{{WF_PLATFORM}}", {"x": "gpu-{{USER_GPU}}"}]}
    assert render_value(template, {"WF_POOL": "p", "WF_PLATFORM": "a100", "USER_GPU": 8}, source=SOURCE) == {
        "p-label": ["a100", {"x": "gpu-8"}]
    }


def test_a_string_that_is_exactly_one_variable_renders_as_a_string():
    # Kubernetes wants strings for env values, labels and selectors, and reads quantities from strings.
    rendered = render_value({"gpu": "{{USER_GPU}}", "spaced": "{{  USER_GPU }}"}, {"USER_GPU": 8}, source=SOURCE)
    assert rendered == {"gpu": "8", "spaced": "8"}


def test_the_one_variable_shortcut_prints_like_jinja():
    for value in (8, 0.5, True, "8Gi", None):
        shortcut = render_value("{{V}}", {"V": value}, source=SOURCE)
        through_jinja = render_value("{{V}}{{ '' }}", {"V": value}, source=SOURCE)
        assert shortcut == through_jinja


def test_a_variable_inside_text_renders_as_text():
    assert render_value("{{USER_GPU}} GPUs", {"USER_GPU": 8}, source=SOURCE) == "8 GPUs"


def test_keys_stay_strings_even_when_one_variable():
    assert render_value({"{{N}}": 1}, {"N": 8}, source=SOURCE) == {"8": 1}


def test_non_strings_are_kept():
    assert render_value([1, 2.5, None, True], {}, source=SOURCE) == [1, 2.5, None, True]


def test_undefined_variable_is_an_error_naming_variable_and_template():
    with pytest.raises(RenderError) as raised:
        render_value({"a": ["{{USER_FOO}}"]}, {}, source=SOURCE)
    assert str(raised.value) == "variable USER_FOO is not defined (in pod template 'a100')"
    assert raised.value.variable == "USER_FOO"
    with pytest.raises(RenderError, match="variable USER_FOO is not defined"):
        render_value("x {{ USER_FOO }} y", {}, source=SOURCE)


def test_syntax_error_names_the_template():
    with pytest.raises(RenderError, match=r"syntax error.*pod template 'a100'"):
        render_value("{% if %}", {}, source=SOURCE)


def test_sandbox_blocks_access_to_python_internals():
    for text in ["{{ ().__class__.__mro__ }}", "{{ cycler.__init__.__globals__ }}", "{{ lipsum.__globals__ }}"]:
        with pytest.raises(RenderError, match="pod template 'a100'"):
            render_value(text, {}, source=SOURCE)


def test_sandbox_refuses_templates_that_would_allocate_without_bound():
    for text in ["{{ 'x' * 10**9 }}", "{{ (2**256)**256 }}", "{{ range(10**9)|list }}"]:
        with pytest.raises(RenderError):
            render_value(text, {}, source=SOURCE)


def test_runtime_errors_in_templates_become_render_errors():
    for text in ["{{ 1/0 }}", "{{ USER_GPU + 'a' }}", "{{ USER_GPU.nothing.deeper }}"]:
        with pytest.raises(RenderError, match="pod template 'a100'"):
            render_value(text, {"USER_GPU": 1}, source=SOURCE)


def test_autoescape_is_off():
    assert render_value("{{ X }}!", {"X": "<a & b>"}, source=SOURCE) == "<a & b>!"


def test_strings_without_template_markers_skip_jinja(monkeypatch):
    def fail(text):
        raise AssertionError(f"Jinja was called for {text!r}")

    monkeypatch.setattr(variables_module, "_compiled", fail)
    assert render_value({"a": "plain {text} }} {#", "b": ["x"]}, {}, source=SOURCE) == {
        "a": "plain {text} }} {#",
        "b": ["x"],
    }


def test_compiled_templates_are_cached():
    render_value("{{ A }}-{{ B }}", {"A": 1, "B": 2}, source=SOURCE)
    hits = variables_module._compiled.cache_info().hits
    assert render_value("{{ A }}-{{ B }}", {"A": 3, "B": 4}, source=SOURCE) == "3-4"
    assert variables_module._compiled.cache_info().hits == hits + 1


def test_each_caller_gets_its_own_source_in_cached_errors():
    with pytest.raises(RenderError, match="pod template 'one'"):
        render_value("{% bad %}", {}, source="pod template 'one'")
    with pytest.raises(RenderError, match="pod template 'two'"):
        render_value("{% bad %}", {}, source="pod template 'two'")


def test_render_pod_template_renders_before_merging_so_container_names_line_up():
    templates = [
        ("default_user", {"spec": {"containers": [{"name": "{{USER_CONTAINER_NAME}}", "image": "ubuntu"}]}}),
        ("gpu", {"spec": {"containers": [{"name": "user", "resources": {"limits": {"nvidia.com/gpu": "{{G}}"}}}]}}),
    ]
    assert render_pod_template(templates, {"USER_CONTAINER_NAME": "user", "G": 8}) == {
        "spec": {"containers": [{"name": "user", "image": "ubuntu", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    }


def test_render_pod_template_errors_name_the_failing_template():
    with pytest.raises(RenderError, match=r"^variable NOPE is not defined \(in pod template 'second'\)$"):
        render_pod_template([("first", {"a": "1"}), ("second", {"b": "{{NOPE}}"})], {})


def test_colliding_rendered_keys_are_an_error():
    with pytest.raises(RenderError, match="already a key"):
        render_value({"{{A}}": 1, "b": 2}, {"A": "b"}, source=SOURCE)


json_values = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet="ab{}%# UX", max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(alphabet="abc", max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(deadline=None)
@given(json_values, st.dictionaries(st.sampled_from(["U", "X", "a"]), json_values, max_size=3))
def test_render_never_mutates_inputs_and_raises_only_render_error(value, variables):
    snapshot = copy.deepcopy((value, variables))
    try:
        render_value(value, variables, source=SOURCE)
    except RenderError:
        pass
    assert (value, variables) == snapshot


@settings(deadline=None)
@given(st.one_of(st.text(max_size=40), st.text(alphabet="{}%#()[] +*/.|'_-=UGPabcifend", max_size=40)))
def test_any_text_renders_or_raises_render_error(text):
    try:
        render_value(text, {"USER_GPU": 1}, source=SOURCE)
    except RenderError:
        pass
