"""SEMANTICS §4: resource validation rules, static and per node."""

import time
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine.errors import RuleError
from pools.engine.validation import (
    OPERATORS,
    NodeResources,
    Rule,
    check_request,
    evaluate_rule,
    node_variables,
    parse_rules,
    pod_variables,
    refusal_on_empty_nodes,
    requested_amounts,
    rule_is_per_node,
    rule_judges_pods,
    start_on_node,
)
from pools.engine.variables import render_pod_template, resolve_variables

GI = 1024**3


def node(name="n1", *, cpu=64, gpu=8, memory=512 * GI, storage=1024 * GI, free_gpu=None, available=True, **extra):
    return NodeResources(
        name=name,
        cpu=Decimal(cpu),
        gpu=Decimal(gpu),
        memory=Decimal(memory),
        storage=Decimal(storage),
        free_cpu=Decimal(extra.get("free_cpu", cpu)),
        free_gpu=Decimal(gpu if free_gpu is None else free_gpu),
        free_memory=Decimal(extra.get("free_memory", memory)),
        free_storage=Decimal(extra.get("free_storage", storage)),
        gpu_product=extra.get("gpu_product", "NVIDIA-A100"),
        available=available,
        reason=extra.get("reason", ""),
    )


def rule(operator, left, right, message="", source="default_gpu"):
    return Rule(operator, left, right, message, source)


# parse_rules


def test_parse_rules_reads_osmo_rule_sets():
    rules = parse_rules(
        [
            {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "{{K8_GPU}}", "assert_message": "m"},
            {"operator": "gt", "left_operand": "{{USER_CPU}}", "right_operand": 0},
        ],
        source="default_cpu",
    )
    assert rules == [
        Rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "m", "default_cpu"),
        Rule("GT", "{{USER_CPU}}", "0", "", "default_cpu"),
    ]


def test_all_six_operators_are_accepted_including_ne():
    assert OPERATORS == ("EQ", "NE", "LT", "LE", "GT", "GE")
    for operator in OPERATORS:
        assert parse_rules([{"operator": operator, "left_operand": "1", "right_operand": "1"}], source="s")


def test_bad_operator_error_names_set_rule_and_field():
    data = [
        {"operator": "EQ", "left_operand": "1", "right_operand": "1"},
        {"operator": "XX", "left_operand": "1", "right_operand": "1"},
    ]
    with pytest.raises(RuleError) as raised:
        parse_rules(data, source="default_cpu")
    assert str(raised.value) == (
        "resource validation 'default_cpu', rule 2: operator 'XX' is not one of EQ, NE, LT, LE, GT, GE"
    )


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"operator": "EQ", "left_operand": "1"}, "rule 1: right_operand is missing"),
        ({"operator": "EQ", "left_operand": "1", "right_operand": "1", "extra": 1}, "rule 1: unknown field 'extra'"),
        ({"left_operand": "1", "right_operand": "1"}, "rule 1: operator is missing"),
        ({"operator": "EQ", "left_operand": [1], "right_operand": "1"}, "left_operand must be text or a number"),
        ({"operator": "EQ", "left_operand": True, "right_operand": "1"}, "left_operand must be text or a number"),
        ({"operator": "EQ", "left_operand": " ", "right_operand": "1"}, "left_operand is empty"),
        ({"operator": "EQ", "left_operand": "1", "right_operand": "1", "assert_message": 3}, "assert_message"),
        ("EQ", "rule 1: must be an object"),
    ],
)
def test_malformed_rules_are_rejected_naming_the_field(data, fragment):
    with pytest.raises(RuleError, match=fragment):
        parse_rules([data], source="s")


def test_rule_set_must_be_a_list():
    with pytest.raises(RuleError, match="resource validation 's' must be a list"):
        parse_rules({"operator": "EQ"}, source="s")


# evaluate_rule


@pytest.mark.parametrize(
    ("operator", "left", "right", "holds"),
    [
        ("EQ", "8", "8", True),
        ("EQ", "8", "7", False),
        ("NE", "8", "7", True),
        ("NE", "8", "8", False),
        ("LT", "7", "8", True),
        ("LT", "8", "8", False),
        ("LE", "8", "8", True),
        ("LE", "9", "8", False),
        ("GT", "9", "8", True),
        ("GT", "8", "8", False),
        ("GE", "8", "8", True),
        ("GE", "7", "8", False),
    ],
)
def test_operators_compare_numerically(operator, left, right, holds):
    assert (evaluate_rule(rule(operator, left, right), {}) is None) is holds


def test_operands_are_rendered_then_read_as_quantities():
    assert (
        evaluate_rule(
            rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.8"), {"USER_MEMORY": "8Gi", "K8_MEMORY": str(16 * GI)}
        )
        is None
    )
    assert evaluate_rule(rule("EQ", "{{USER_CPU}}", "0.5"), {"USER_CPU": "500m"}) is None


def test_failure_message_is_the_rendered_assert_message():
    failed = rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "asked {{USER_GPU}} GPUs, node has {{K8_GPU}}")
    assert evaluate_rule(failed, {"USER_GPU": 16, "K8_GPU": "8"}) == "asked 16 GPUs, node has 8"


def test_without_assert_message_the_failure_message_shows_the_comparison():
    message = evaluate_rule(rule("LE", "{{USER_GPU}}", "8"), {"USER_GPU": 16})
    assert message == "resource validation 'default_gpu': {{USER_GPU}} LE 8 does not hold (16 <= 8 is false)"


def test_an_assert_message_that_cannot_render_falls_back_to_the_generic_message():
    message = evaluate_rule(rule("LE", "16", "8", "needs {{MISSING}}"), {})
    assert message.startswith("resource validation 'default_gpu': 16 LE 8 does not hold")


def test_undefined_operand_variable_fails_the_rule_with_a_clear_message():
    message = evaluate_rule(rule("LE", "{{USER_CPU}}", "8", source="default_cpu"), {})
    assert message == (
        "resource validation 'default_cpu': left operand '{{USER_CPU}}' uses variable USER_CPU, which is not defined"
    )


def test_null_operand_fails_the_rule():
    message = evaluate_rule(rule("LE", "1", "{{USER_CPU}}", source="default_cpu"), {"USER_CPU": None})
    assert message == "resource validation 'default_cpu': right operand '{{USER_CPU}}' is empty"


def test_operand_that_is_not_a_quantity_fails_the_rule():
    message = evaluate_rule(rule("LE", "{{USER_CPU}}", "8", source="default_cpu"), {"USER_CPU": "abc"})
    assert message == "resource validation 'default_cpu': left operand '{{USER_CPU}}' is not a quantity ('abc')"


def test_operand_that_divides_by_zero_fails_the_rule():
    message = evaluate_rule(rule("LE", "1", "8 / {{N}}"), {"N": 0})
    assert "right operand '8 / {{N}}' cannot be evaluated" in message
    assert "division by zero" in message


def test_evaluate_rule_never_raises_on_a_hand_built_rule_with_a_bad_operator():
    assert evaluate_rule(rule("ABOUT", "1", "2"), {}) == (
        "resource validation 'default_gpu': operator 'ABOUT' is not one of EQ, NE, LT, LE, GT, GE"
    )


def test_evaluate_rule_never_raises_on_template_errors():
    for operand in ["{% if %}", "{{ ().__class__ }}", "{{ 1/0 }}", "{{ X }}"]:
        assert evaluate_rule(rule("EQ", operand, "1"), {"X": {"a": 1}})


# per-node rules and node variables


def test_rules_mentioning_a_k8_variable_are_per_node():
    assert rule_is_per_node(rule("LE", "{{USER_GPU}}", "{{K8_GPU}}"))
    assert rule_is_per_node(rule("LE", "{{ K8_MEMORY }} * 0.8", "1"))
    assert not rule_is_per_node(rule("GT", "{{USER_GPU}}", "0"))
    assert not rule_is_per_node(rule("GT", "{{MYK8_X}}", "0"))


def test_node_variables_are_allocatable_free_and_product():
    variables = node_variables(node(cpu=64, gpu=8, memory=512 * GI, free_gpu=3, gpu_product="NVIDIA-H100"))
    assert variables == {
        "K8_CPU": "64",
        "K8_GPU": "8",
        "K8_MEMORY": str(512 * GI),
        "K8_STORAGE": str(1024 * GI),
        "K8_FREE_CPU": "64",
        "K8_FREE_GPU": "3",
        "K8_FREE_MEMORY": str(512 * GI),
        "K8_FREE_STORAGE": str(1024 * GI),
        "K8_GPU_PRODUCT": "NVIDIA-H100",
    }


# check_request

GPU_RULES = [rule("LE", "{{USER_GPU}}", "{{K8_FREE_GPU}}", "only {{K8_FREE_GPU}} GPUs free on this node")]


def test_request_passes_when_static_rules_pass_and_one_node_passes_every_per_node_rule():
    verdict = check_request(
        GPU_RULES + [rule("GT", "{{USER_GPU}}", "0")], {"USER_GPU": 4}, [node("a", free_gpu=2), node("b", free_gpu=4)]
    )
    assert verdict.passed
    assert verdict.errors == []
    assert [(entry.node, entry.passed) for entry in verdict.nodes] == [("a", False), ("b", True)]
    assert verdict.nodes[0].errors == ["only 2 GPUs free on this node"]


def test_a_failing_static_rule_fails_the_request_even_if_nodes_pass():
    verdict = check_request([rule("GT", "{{USER_GPU}}", "0", "ask for a GPU")], {"USER_GPU": 0}, [node()])
    assert not verdict.passed
    assert verdict.errors == ["ask for a GPU"]
    assert verdict.nodes[0].passed


def test_when_no_node_holds_the_request_the_verdict_says_so():
    verdict = check_request(GPU_RULES, {"USER_GPU": 16}, [node("a"), node("b")], platform="a100")
    assert not verdict.passed
    assert verdict.errors == ["no node in platform 'a100' can hold this request"]
    assert all(entry.errors == ["only 8 GPUs free on this node"] for entry in verdict.nodes)


def test_unavailable_nodes_are_listed_but_cannot_hold_the_request():
    verdict = check_request(
        GPU_RULES, {"USER_GPU": 1}, [node("down", available=False, reason="cordoned"), node("up", free_gpu=0)]
    )
    assert not verdict.passed
    assert verdict.nodes[0].as_dict() == {
        "node": "down",
        "passed": False,
        "errors": ["node unavailable: cordoned"],
        "start": "",
        "shortfalls": [],
    }


def test_with_no_available_node_the_verdict_says_so():
    verdict = check_request(
        GPU_RULES, {"USER_GPU": 1}, [node(available=False, reason="Ready is False")], platform="l40s"
    )
    assert not verdict.passed
    assert "no available node in platform 'l40s'" in verdict.errors


def test_with_no_node_at_all_the_verdict_says_so():
    verdict = check_request(GPU_RULES, {"USER_GPU": 1}, [], platform="l40s")
    assert not verdict.passed
    assert verdict.errors == ["no available node in platform 'l40s' (it has no nodes)"]
    assert verdict.as_dict() == {
        "passed": False,
        "errors": verdict.errors,
        "nodes": [],
        "starts": "",
        "start_now_nodes": 0,
    }


# starting now or waiting (beyond OSMO and Run:ai)

ALLOCATABLE_GPU_RULES = [rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "{{USER_GPU}} GPUs exceed the node's {{K8_GPU}}")]


def test_eight_gpus_on_nodes_whose_eight_gpus_are_all_in_use_fit_but_wait():
    verdict = check_request(ALLOCATABLE_GPU_RULES, {"USER_GPU": 8}, [node("a", free_gpu=0), node("b", free_gpu=0)])
    assert verdict.passed  # the rules say the nodes could hold it: they have 8 GPUs
    assert (verdict.starts, verdict.start_now_nodes) == ("wait", 0)
    assert [(n.node, n.start, n.shortfalls) for n in verdict.nodes] == [
        ("a", "wait", ["needs 8 GPUs, 0 free"]),
        ("b", "wait", ["needs 8 GPUs, 0 free"]),
    ]


def test_a_node_with_the_request_free_starts_it_now():
    verdict = check_request(ALLOCATABLE_GPU_RULES, {"USER_GPU": 8}, [node("busy", free_gpu=2), node("idle")])
    assert (verdict.starts, verdict.start_now_nodes) == ("now", 1)
    assert [(n.node, n.start, n.shortfalls) for n in verdict.nodes] == [
        ("busy", "wait", ["needs 8 GPUs, 2 free"]),
        ("idle", "now", []),
    ]


def test_every_short_resource_is_named_with_its_unit():
    busy = node("busy", free_gpu=0, free_cpu=Decimal("0.5"), free_memory=8 * GI, free_storage=0)
    variables = {"USER_GPU": 1, "USER_CPU": "1500m", "USER_MEMORY": "16Gi", "USER_STORAGE": "2 * 5Gi"}
    assert start_on_node(busy, requested_amounts(variables)) == (
        "wait",
        [
            "needs 1 GPU, 0 free",
            "needs 1.5 CPUs, 0.5 free",
            "needs 16Gi memory, 8Gi free",
            "needs 10Gi storage, 0 free",
        ],
    )


def test_a_node_that_fails_its_rules_or_is_unavailable_says_nothing_about_starting():
    verdict = check_request(
        ALLOCATABLE_GPU_RULES, {"USER_GPU": 8}, [node("small", gpu=4), node("down", available=False), node("ok")]
    )
    assert [(n.node, n.passed, n.start) for n in verdict.nodes] == [
        ("small", False, ""),
        ("down", False, ""),
        ("ok", True, "now"),
    ]


def test_a_request_refused_by_a_static_rule_starts_nowhere():
    verdict = check_request([rule("GT", "{{USER_GPU}}", "0", "ask for a GPU")], {"USER_GPU": 0}, [node()])
    assert not verdict.passed and verdict.nodes[0].passed
    assert (verdict.starts, verdict.start_now_nodes, verdict.nodes[0].start) == ("", 0, "")


def test_amounts_that_are_missing_null_negative_or_not_quantities_ask_for_nothing():
    assert requested_amounts({"USER_GPU": None, "USER_CPU": "lots", "USER_MEMORY": -1, "USER_STORAGE": True}) == {}
    assert requested_amounts({"USER_GPU": "0.5", "USER_MEMORY": "1Gi"}) == {"gpu": Decimal("0.5"), "memory": GI}
    # Nothing asked: any node that passes starts it now, even one with nothing free.
    assert start_on_node(node(free_gpu=0, free_cpu=0), requested_amounts({})) == ("now", [])


def test_overcommitted_nodes_count_as_nothing_free():
    assert start_on_node(node(free_gpu=-2), {"gpu": Decimal(1)}) == ("wait", ["needs 1 GPU, 0 free"])
    assert start_on_node(node(free_gpu=-2), {"gpu": Decimal("0.5")}) == ("wait", ["needs 0.5 GPUs, 0 free"])


def test_per_node_rules_see_request_variables_and_node_variables():
    rules = [rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.8 - {{RESERVED}}")]
    variables = {"USER_MEMORY": "400Gi", "RESERVED": "1Gi"}
    verdict = check_request(rules, variables, [node("small", memory=256 * GI), node("big", memory=1024 * GI)])
    assert [entry.passed for entry in verdict.nodes] == [False, True]


def test_gpu_product_is_available_to_rules_and_messages():
    rules = [rule("EQ", "{{K8_GPU}}", "8", "{{K8_GPU_PRODUCT}} has {{K8_GPU}}")]
    verdict = check_request(rules, {}, [node(gpu=4, gpu_product="NVIDIA-L40S")])
    assert verdict.nodes[0].errors == ["NVIDIA-L40S has 4"]


def test_a_bad_per_node_operand_fails_each_node_with_a_message_not_an_exception():
    rules = [rule("LE", "{{USER_GPU}}", "{{K8_GPU}} / {{K8_FREE_GPU}}")]
    verdict = check_request(rules, {"USER_GPU": 1}, [node("a", free_gpu=0), node("b", free_gpu=2)])
    assert verdict.passed
    assert "division by zero" in verdict.nodes[0].errors[0]


def test_per_node_results_match_evaluating_each_rule_with_the_node_variables():
    rules = [
        rule("LE", "{{USER_GPU}}", "{{K8_FREE_GPU}}"),
        rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}}*0.8"),
        rule("GE", "{{K8_FREE_CPU}} - {{USER_CPU}}", "-{{K8_FREE_GPU}}"),
        rule("LE", "{{USER_CPU}}", "{% if K8_GPU|int > 4 %}{{K8_CPU}}{% else %}1{% endif %}"),
        rule("LE", "1{{K8_GPU}}", "{{K8_CPU}}m"),
        rule("EQ", "{{K8_GPU_PRODUCT}}", "1"),
        rule("LE", "{{USER_GPU}}", "{{ K8_GPU }} / {{K8_FREE_GPU}}"),
    ]
    nodes = [node(f"n{i}", cpu=8 * i, gpu=i, free_gpu=i % 3 - 1, free_cpu=i * 3) for i in range(6)]
    variables = {"USER_GPU": 2, "USER_MEMORY": "64Gi", "USER_CPU": "4"}
    verdict = check_request(rules, variables, nodes)
    for resources, entry in zip(nodes, verdict.nodes, strict=True):
        scope = variables | node_variables(resources)
        assert entry.errors == [message for item in rules if (message := evaluate_rule(item, scope))]


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.integers(min_value=-4, max_value=16), min_size=1, max_size=5),
    st.integers(min_value=0, max_value=8),
    st.sampled_from(["{{K8_FREE_GPU}}", "{{K8_GPU}} - {{K8_FREE_GPU}}", "8 - -{{K8_FREE_GPU}}", "2*{{K8_FREE_GPU}}"]),
)
def test_fast_per_node_path_agrees_with_rendering_per_node(free_gpus, wanted, right):
    rules = [rule("LE", "{{USER_GPU}}", right, "need {{USER_GPU}} of {{K8_FREE_GPU}}")]
    nodes = [node(f"n{i}", free_gpu=free) for i, free in enumerate(free_gpus)]
    verdict = check_request(rules, {"USER_GPU": wanted}, nodes)
    for resources, entry in zip(nodes, verdict.nodes, strict=True):
        assert entry.errors == [
            m for m in [evaluate_rule(rules[0], {"USER_GPU": wanted} | node_variables(resources))] if m
        ]


def test_render_and_check_of_a_realistic_request_is_fast():
    templates = [
        (
            "default_user",
            {
                "spec": {
                    "containers": [
                        {
                            "name": "{{USER_CONTAINER_NAME}}",
                            "resources": {
                                "requests": {
                                    "cpu": "{{USER_CPU}}",
                                    "memory": "{{USER_MEMORY}}",
                                    "nvidia.com/gpu": "{{USER_GPU}}",
                                },
                                "limits": {
                                    "cpu": "{{USER_CPU}}",
                                    "memory": "{{USER_MEMORY}}",
                                    "nvidia.com/gpu": "{{USER_GPU}}",
                                },
                            },
                        }
                    ]
                }
            },
        ),
        ("default_ctrl", {"spec": {"containers": [{"name": "ctrl", "resources": {"requests": {"cpu": "1"}}}]}}),
        ("a100", {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"}}}),
        ("labels", {"metadata": {"labels": {"pool": "{{WF_POOL}}", "platform": "{{WF_PLATFORM}}"}}}),
        ("user", {"spec": {"containers": [{"name": "user", "env": [{"name": "X", "value": "1"}]}]}}),
    ]
    rules = [
        rule("LE", "{{USER_CPU}}", "{{K8_CPU}}"),
        rule("GT", "{{USER_CPU}}", "0"),
        rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.8"),
        rule("GT", "{{USER_MEMORY}}", "0"),
        rule("LE", "{{USER_STORAGE}}", "{{K8_STORAGE}}"),
        rule("GT", "{{USER_STORAGE}}", "0"),
        rule("LE", "{{USER_GPU}}", "{{K8_GPU}}"),
        rule("GE", "{{USER_GPU}}", "0"),
        rule("LE", "{{USER_GPU}}", "{{K8_FREE_GPU}}", "only {{K8_FREE_GPU}} free"),
        rule("LE", "{{USER_MEMORY}}", "{{K8_FREE_MEMORY}}"),
    ]
    nodes = [node(f"n{i}", free_gpu=i % 9, available=i % 10 != 0, reason="cordoned") for i in range(100)]
    variables = resolve_variables(
        pool="p",
        platform="a100",
        pool_defaults={"USER_CPU": 1, "USER_MEMORY": "8Gi", "USER_STORAGE": "10Gi"},
        platform_defaults=None,
        user_values={"USER_GPU": 4},
    )

    def once():
        render_pod_template(templates, variables)
        return check_request(rules, variables, nodes, platform="a100")

    assert once().passed
    best = min(_timed(once) for _ in range(20))
    assert best < 0.02, f"render + check took {best * 1000:.1f} ms"


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


# --- judging a synced pod (SEMANTICS §10 never_fits) ------------------------------------------------------------------


def test_only_rules_reading_a_pods_requests_and_node_totals_judge_a_synced_pod():
    assert rule_judges_pods(rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "only {{K8_GPU}}"))
    assert rule_judges_pods(rule("LE", "{{USER_MEMORY}}", "{{K8_MEMORY}} * 0.9"))
    assert not rule_judges_pods(rule("LE", "{{USER_GPU}}", "{{K8_FREE_GPU}}"))  # what is free now
    assert not rule_judges_pods(rule("LE", "{{USER_EXEC_TIMEOUT}}", "3600"))  # a submission's variable
    assert not rule_judges_pods(rule("LE", "{{USER_GPU}}", "4", "for {{WORKFLOW_ID}}"))  # its message too


def test_a_pod_is_refused_on_empty_nodes_with_the_first_refusing_rules_message():
    variables = pod_variables(gpu=Decimal(6), cpu=Decimal("0.5"), memory=Decimal(16 * GI), storage=Decimal(0))
    assert variables == {"USER_GPU": "6", "USER_CPU": "0.5", "USER_MEMORY": "16Gi", "USER_STORAGE": "0"}
    per_node = rule("LE", "{{USER_GPU}}", "{{K8_GPU}}", "the node has only {{K8_GPU}}")
    full = node("busy", gpu=8, free_gpu=0, free_cpu=0, free_memory=0)
    assert refusal_on_empty_nodes([per_node], variables, [full]) == ""  # fits once the node empties
    assert refusal_on_empty_nodes([per_node], variables, [node("small", gpu=4)]) == "the node has only 4"
    static = rule("LE", "{{USER_GPU}}", "4", "at most 4 (requested {{USER_GPU}})")
    assert refusal_on_empty_nodes([per_node, static], variables, [node("small", gpu=4)]) == "at most 4 (requested 6)"
    assert refusal_on_empty_nodes([static], variables, []) == ""  # nothing to judge on is no refusal
