"""SEMANTICS §5: node membership (selector, taints, required affinity) and availability."""

import pytest

from pools.engine.membership import (
    MatchResult,
    affinity_matches,
    node_availability,
    node_matches_pod_spec,
    taints_tolerated,
    tolerates,
)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
LABELS = {"nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/gpu.count": "8", "zone": "a"}


def required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expression(key, operator, *values):
    return {"key": key, "operator": operator, "values": list(values)}


# tolerations


def test_equal_is_the_default_operator_and_needs_key_and_value():
    assert tolerates({"key": "nvidia.com/gpu", "value": "present"}, GPU_TAINT)
    assert not tolerates({"key": "nvidia.com/gpu", "value": "other"}, GPU_TAINT)
    assert not tolerates({"key": "other", "value": "present"}, GPU_TAINT)


def test_equal_treats_a_missing_value_as_empty():
    assert tolerates({"key": "dedicated"}, {"key": "dedicated", "effect": "NoSchedule"})
    assert not tolerates({"key": "dedicated"}, {"key": "dedicated", "value": "ml", "effect": "NoSchedule"})


def test_exists_with_a_key_tolerates_any_value_of_that_key():
    assert tolerates({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT)
    assert not tolerates({"key": "other", "operator": "Exists"}, GPU_TAINT)


def test_exists_with_an_empty_key_tolerates_every_taint():
    assert tolerates({"operator": "Exists"}, GPU_TAINT)
    assert tolerates({"operator": "Exists"}, {"key": "x", "value": "y", "effect": "NoExecute"})


def test_an_empty_effect_matches_every_effect_otherwise_effects_must_be_equal():
    assert tolerates({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT)
    assert tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT)
    assert not tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT)


def test_unknown_toleration_operator_tolerates_nothing():
    assert not tolerates({"key": "nvidia.com/gpu", "operator": "Sometimes"}, GPU_TAINT)


def test_only_noschedule_and_noexecute_taints_must_be_tolerated():
    prefer = {"key": "soft", "effect": "PreferNoSchedule"}
    execute = {"key": "hard", "effect": "NoExecute"}
    assert taints_tolerated([prefer, execute, GPU_TAINT], [{"key": "nvidia.com/gpu", "operator": "Exists"}]) == [
        execute
    ]
    assert taints_tolerated([prefer], []) == []


# required node affinity


def test_no_affinity_or_no_required_part_matches_every_node():
    assert affinity_matches(None, LABELS)
    assert affinity_matches({}, LABELS)
    assert affinity_matches({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}, LABELS)


def test_terms_are_ored():
    affinity = required(
        {"matchExpressions": [expression("zone", "In", "b")]}, {"matchExpressions": [expression("zone", "In", "a")]}
    )
    assert affinity_matches(affinity, LABELS)


def test_expressions_within_a_term_are_anded():
    term = {"matchExpressions": [expression("zone", "In", "a"), expression("nvidia.com/gpu.count", "In", "4")]}
    assert not affinity_matches(required(term), LABELS)


@pytest.mark.parametrize(
    ("requirement", "matches"),
    [
        (expression("zone", "In", "a", "b"), True),
        (expression("zone", "In", "b"), False),
        (expression("missing", "In", "a"), False),
        (expression("zone", "NotIn", "b"), True),
        (expression("zone", "NotIn", "a"), False),
        (expression("missing", "NotIn", "a"), True),
        (expression("zone", "Exists"), True),
        (expression("missing", "Exists"), False),
        (expression("missing", "DoesNotExist"), True),
        (expression("zone", "DoesNotExist"), False),
        (expression("nvidia.com/gpu.count", "Gt", "4"), True),
        (expression("nvidia.com/gpu.count", "Gt", "8"), False),
        (expression("nvidia.com/gpu.count", "Lt", "9"), True),
        (expression("nvidia.com/gpu.count", "Lt", "8"), False),
        (expression("zone", "Gt", "1"), False),
        (expression("missing", "Lt", "1"), False),
        (expression("zone", "Matches", "a"), False),
    ],
)
def test_affinity_operators(requirement, matches):
    assert affinity_matches(required({"matchExpressions": [requirement]}), LABELS) is matches


def test_gt_and_lt_compare_integers_not_text():
    assert affinity_matches(required({"matchExpressions": [expression("n", "Gt", "9")]}), {"n": "10"})


def test_empty_term_list_and_empty_term_match_no_node_as_in_kubernetes():
    assert not affinity_matches(required(), LABELS)
    assert not affinity_matches(required({}), LABELS)


def test_match_fields_compare_metadata_name_with_the_node_name():
    affinity = required({"matchFields": [expression("metadata.name", "In", "gpu-1")]})
    assert affinity_matches(affinity, LABELS, node_name="gpu-1")
    assert not affinity_matches(affinity, LABELS, node_name="gpu-2")


def test_malformed_affinity_does_not_crash_and_does_not_match():
    assert not affinity_matches(required({"matchExpressions": "zone"}), LABELS)
    assert not affinity_matches(
        required({"matchExpressions": [{"key": "zone", "operator": "In", "values": "a"}]}), LABELS
    )
    assert not affinity_matches({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}, LABELS)


# node_matches_pod_spec


def test_empty_pod_spec_matches_an_untainted_node():
    assert node_matches_pod_spec(labels=LABELS, taints=[], pod_spec={}) == MatchResult(True)


def test_every_node_selector_entry_must_be_among_the_labels():
    spec = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100", "zone": "a"}}
    assert node_matches_pod_spec(labels=LABELS, taints=[], pod_spec=spec)
    result = node_matches_pod_spec(labels={"zone": "a"}, taints=[], pod_spec=spec)
    assert not result
    assert result.reason == "label nvidia.com/gpu.product=NVIDIA-A100 missing"


def test_node_selector_values_compare_as_text():
    assert node_matches_pod_spec(labels=LABELS, taints=[], pod_spec={"nodeSelector": {"nvidia.com/gpu.count": 8}})
    assert node_matches_pod_spec(labels={"x": "true"}, taints=[], pod_spec={"nodeSelector": {"x": True}})


def test_untolerated_taint_keeps_the_node_out_and_says_which():
    taints = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    result = node_matches_pod_spec(labels=LABELS, taints=taints, pod_spec={})
    assert result == MatchResult(False, "taint dedicated=ml:NoSchedule not tolerated")
    spec = {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]}
    assert node_matches_pod_spec(labels=LABELS, taints=taints, pod_spec=spec)


def test_required_affinity_must_match():
    spec = {"affinity": required({"matchExpressions": [expression("zone", "In", "b")]})}
    assert node_matches_pod_spec(labels=LABELS, taints=[], pod_spec=spec) == MatchResult(
        False, "required node affinity not matched"
    )


def test_malformed_pod_spec_is_a_reason_not_a_crash():
    assert not node_matches_pod_spec(labels=LABELS, taints=[], pod_spec={"nodeSelector": ["zone"]})
    assert not node_matches_pod_spec(labels=LABELS, taints=[GPU_TAINT], pod_spec={"tolerations": "all"})


# availability


def test_a_ready_uncordoned_node_is_available():
    assert node_availability(conditions=[{"type": "Ready", "status": "True"}], unschedulable=False) == (True, "")


def test_a_cordoned_node_is_unavailable():
    assert node_availability(conditions=[{"type": "Ready", "status": "True"}], unschedulable=True) == (
        False,
        "cordoned",
    )


def test_condition_rules_default_to_ready_true():
    assert node_availability(conditions=[{"type": "Ready", "status": "False"}], unschedulable=False) == (
        False,
        "Ready is False (want True)",
    )
    assert node_availability(conditions=[], unschedulable=False) == (False, "condition Ready missing")


def test_custom_condition_rules_replace_the_default():
    conditions = [{"type": "Ready", "status": "Unknown"}, {"type": "DiskPressure", "status": "False"}]
    assert node_availability(conditions=conditions, unschedulable=False, rules={"DiskPressure": "False"}) == (True, "")
    assert node_availability(
        conditions=conditions, unschedulable=False, rules={"DiskPressure": "False", "Ready": "True"}
    ) == (False, "Ready is Unknown (want True)")


def test_condition_taints_that_kubernetes_manages_do_not_decide_membership():
    # A cordoned or not-ready node stays in its pool and shows as unavailable there (availability has the reason).
    taints = [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    ]
    assert taints_tolerated(taints, []) == []
    assert node_matches_pod_spec(labels={}, taints=taints, pod_spec={}).matched
