"""SEMANTICS §7.3: a template render stops with a RenderError past 1 s or 1 MB, whatever the template tries."""

import time

import pytest

from pools.engine.errors import RenderError, RenderLimitError
from pools.engine.sandbox import RENDER_CHARACTERS, RENDER_SECONDS, BudgetExceeded, measure
from pools.engine.validation import NodeResources, check_request, parse_rules
from pools.engine.variables import render_pod_template, render_value

SOURCE = "pod template 'bomb'"
BIG = "{% set a = 'x' * 100000 %}"


def stops(template, variables=None, *, within: float = RENDER_SECONDS + 1) -> str:
    """Render ``template``; assert it stops with a RenderLimitError soon enough, and return its message."""
    started = time.monotonic()
    with pytest.raises(RenderLimitError) as raised:
        render_value(template, variables or {}, source=SOURCE)
    assert time.monotonic() - started < within
    assert str(raised.value).endswith(f"(in {SOURCE})")
    return str(raised.value)


@pytest.mark.parametrize(
    "template",
    [
        # The attack as reported: two nested loops with an empty body, nothing printed to count.
        "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
    ],
)
def test_a_render_that_takes_too_long_stops_after_a_second(template):
    assert "rendering took more than 1 s" in stops(template)


def test_the_time_budget_covers_every_string_of_the_template_together():
    slow = "{% for i in range(100000) %}{% for j in range(3) %}{% endfor %}{% endfor %}"  # about 0.2 s each
    started = time.monotonic()
    with pytest.raises(RenderLimitError, match="took more than 1 s"):
        render_pod_template([("bomb", {"spec": {f"k{n}": slow for n in range(20)}})], {})
    assert time.monotonic() - started < RENDER_SECONDS + 1


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'x'|center(999999999) }}",
        '{{ "%999999999d" % 1 }}',
        '{{ "%.999999999f" % X }}',
        "{{ '%999999999s'|format('a') }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ 'x'.ljust(999999999) }}",
        "{{ 'x'.zfill(999999999) }}",
        "{{ ('\t' * 1000).expandtabs(10**6) }}",
        "{{ 'a\nb'|indent(10**9) }}",
        "{{ [1]|batch(10**9, 'x')|list }}",
        "{{ [1]|slice(10**9)|list }}",
        "{% filter center(10**9) %}x{% endfilter %}",
        # Thirty doublings, on one line and on thirty.
        "{% set s = 'x' * 1000 %}" + "{% set s = s ~ s %}" * 30 + "{{ s|length }}",
        "{% set s = 'x' * 1000 %}\n" + "{% set s = s ~ s %}\n" * 30 + "{{ s|length }}",
        "{% set s = 'x' * 1000 %}" + "{% set s = s + s %}" * 30 + "{{ s|length }}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        # One value printed many times over, through every way of turning values into text.
        BIG + "{{ a|replace('x', a) }}",
        BIG + "{{ a.replace('x', a) }}",
        BIG + "{{ ([a] * 1000)|join }}",
        BIG + "{{ [a] * 1000 }}",
        BIG + "{{ range(100000)|join(a) }}",
        BIG + "{{ a.join(range(1000)|map('string')) }}",
        BIG + "{{ ('{0}' * 1000).format(a) }}",
        BIG + "{{ ('%s' * 1000) % ([a] * 1000)|list }}",
        BIG + "{{ {}.fromkeys(range(1000), a) }}",
        BIG + "{{ ([a] * 1000)|string }}",
        BIG + "{{ ([a] * 1000) is lower }}",
        "{{ ([[1] * 1000] * 1000)|sum(start=[]) }}",
        "{{ ('<' * 900000)|e }}",
        "{% macro m() %}{% for i in range(100000) %}" + "y" * 1000 + "{% endfor %}{% endmacro %}{{ m()|length }}",
        "{% set x %}{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}{% endset %}{{ x|length }}",
    ],
)
def test_values_larger_than_the_output_budget_are_refused_before_they_are_built(template):
    assert f"{RENDER_CHARACTERS:,} characters" in stops(template, {"X": 1.0})


def test_the_output_is_counted_as_it_is_produced():
    template = "{% for i in range(100000) %}{% for j in range(100) %}" + "z" * 100 + "{% endfor %}{% endfor %}"
    assert "the output would exceed" in stops(template)


def test_the_output_budget_covers_every_string_of_the_template():
    body = {"spec": {f"k{n}": "{{ 'x' * 100000 }}" for n in range(11)}}
    with pytest.raises(RenderLimitError, match="output would exceed"):
        render_pod_template([("bomb", body)], {})
    with pytest.raises(RenderLimitError, match="output would exceed"):
        render_value("{{ X }}", {"X": "x" * (RENDER_CHARACTERS + 1)}, source=SOURCE)


def test_computing_more_than_the_work_budget_stops_even_when_little_is_kept():
    template = "{% for i in range(100000) %}{% set s = 'x' * 200000 %}{% endfor %}"
    assert "computed more than" in stops(template)


def test_numbers_and_nesting_are_bounded():
    assert "more than 4096 bits" in stops("{% set n = 2**4000 %}" + "{% set n = n * n %}" * 30)
    assert "more than 4096 bits" in stops("{{ (2**256)**256 }}")
    nest = "{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}"
    assert "nests deeper than 64 levels" in stops(nest)


@pytest.mark.parametrize("template", ["{{ lipsum(100000) }}", "{{ ('x ' * 1000)|wordwrap(1) }}"])
def test_text_generators_with_unbounded_cost_are_not_available(template):
    with pytest.raises(RenderError):
        render_value(template, {}, source=SOURCE)


def test_ordinary_templates_still_render():
    template = (
        "{{ X * 2 }}|{% for i in range(3) %}{{ i }}{% endfor %}|{{ '%d-%s'|format(3, 'x') }}|"
        "{{ '{}:{:>3}'.format('a', 1) }}|{{ 'a b'.replace(' ', '_') }}|{{ ['a', 'b']|join(',') }}|"
        "{{ 'x'|center(5) }}|{{ {'a': [1]}|tojson }}|{{ 'a\nb'|indent(2) }}|{{ [1, 2, 3]|sum }}|"
        "{% macro m(n) %}<{{ n }}>{% endmacro %}{{ m(4) }}|{{ range(10)|batch(3)|list|length }}|{{ 'ab' ~ 1 }}"
    )
    assert render_value(template, {"X": 21}, source=SOURCE) == (
        '42|012|3-x|a:  1|a_b|a,b|  x  |{"a": [1]}|a\n  b|6|<4>|4|ab1'
    )


def test_a_loop_may_fill_a_list_without_its_cost_growing_quadratically():
    template = "{% set l = [] %}{% for i in range(5000) %}{{ l.append(i) or '' }}{% endfor %}{{ l|length }}"
    assert render_value(template, {}, source=SOURCE) == "5000"


def test_a_render_leaves_the_previous_trace_function_in_place():
    import sys

    def tracer(frame, event, arg):
        return None

    sys.settrace(tracer)
    try:
        render_value("{% for i in range(2) %}{{ i }}{% endfor %}", {}, source=SOURCE)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)


def test_measure_counts_shared_parts_each_time_but_walks_them_once():
    items = ["x" * 10]
    for _ in range(20):  # prints as ten million characters
        items = [items, items]
    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        measure(items)
    assert time.monotonic() - started < 0.5
    assert measure(["ab", 1, None]) < 20


def test_a_rule_too_costly_to_render_stops_the_whole_check_at_the_first_node():
    slow = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ K8_GPU }}"
    rules = parse_rules([{"operator": "LE", "left_operand": "1", "right_operand": slow}], source="costly")
    nodes = [
        NodeResources(
            name=f"n{index}",
            cpu=1,
            gpu=8,
            memory=1,
            storage=1,
            free_cpu=1,
            free_gpu=8,
            free_memory=1,
            free_storage=1,
            gpu_product="x",
            available=True,
            reason="",
        )
        for index in range(10)
    ]
    started = time.monotonic()
    with pytest.raises(RenderLimitError, match="resource validation 'costly'"):
        check_request(rules, {}, nodes)
    assert time.monotonic() - started < 2 * RENDER_SECONDS + 1
