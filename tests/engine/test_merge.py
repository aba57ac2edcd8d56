"""SEMANTICS §2: pod-template merge."""

import copy

from hypothesis import given
from hypothesis import strategies as st

from pools.engine.merge import merge_pod_templates, merge_values

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["name", "a", "b", "spec", "containers"]), children, max_size=4),
        # Named dicts, so that list merge by name is exercised.
        st.fixed_dictionaries({"name": st.sampled_from(["x", "y", "user"])}, optional={"v": children}),
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


def test_dicts_merge_key_by_key_recursively():
    base = {"spec": {"nodeSelector": {"a": "1"}, "hostNetwork": False}}
    override = {"spec": {"nodeSelector": {"b": "2"}}}
    assert merge_values(base, override) == {"spec": {"nodeSelector": {"a": "1", "b": "2"}, "hostNetwork": False}}


def test_later_scalar_wins_over_scalar():
    assert merge_values({"a": 1}, {"a": 2}) == {"a": 2}


def test_later_value_wins_for_mixed_types():
    assert merge_values({"a": [1]}, {"a": "x"}) == {"a": "x"}
    assert merge_values({"a": "x"}, {"a": [1]}) == {"a": [1]}
    assert merge_values({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    assert merge_values({"a": {"b": 2}}, {"a": 1}) == {"a": 1}


def test_null_wins_over_anything():
    assert merge_values({"a": {"b": 1}}, {"a": None}) == {"a": None}
    assert merge_values({"a": [1, 2]}, {"a": None}) == {"a": None}


def test_named_list_elements_merge_by_name():
    base = {"containers": [{"name": "user", "image": "ubuntu"}, {"name": "ctrl", "image": "osmo"}]}
    override = {"containers": [{"name": "user", "resources": {"limits": {"cpu": "2"}}}]}
    assert merge_values(base, override) == {
        "containers": [
            {"name": "user", "image": "ubuntu", "resources": {"limits": {"cpu": "2"}}},
            {"name": "ctrl", "image": "osmo"},
        ]
    }


def test_named_elements_merge_recursively_through_nested_named_lists():
    base = {"containers": [{"name": "user", "env": [{"name": "A", "value": "1"}]}]}
    override = {"containers": [{"name": "user", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}]}
    assert merge_values(base, override)["containers"][0]["env"] == [
        {"name": "A", "value": "2"},
        {"name": "B", "value": "3"},
    ]


def test_new_names_are_appended_in_order():
    base = {"volumes": [{"name": "a"}]}
    override = {"volumes": [{"name": "c"}, {"name": "b"}]}
    assert merge_values(base, override) == {"volumes": [{"name": "a"}, {"name": "c"}, {"name": "b"}]}


def test_two_new_elements_with_the_same_name_are_both_appended():
    # §2 rule 2: only the earlier list is searched, so the second "x" does not find the first.
    merged = merge_values([], [{"name": "x", "a": 1}, {"name": "x", "b": 2}])
    assert merged == [{"name": "x", "a": 1}, {"name": "x", "b": 2}]


def test_two_later_elements_matching_one_earlier_element_both_merge_into_it_in_order():
    merged = merge_values([{"name": "x", "a": 0}], [{"name": "x", "a": 1, "b": 1}, {"name": "x", "b": 2}])
    assert merged == [{"name": "x", "a": 1, "b": 2}]


def test_a_new_name_appended_does_not_absorb_a_later_element_of_the_same_name():
    merged = merge_values([{"name": "a"}], [{"name": "n", "v": 1}, {"name": "a", "w": 1}, {"name": "n", "v": 2}])
    assert merged == [{"name": "a", "w": 1}, {"name": "n", "v": 1}, {"name": "n", "v": 2}]


def test_lists_without_names_concatenate_and_keep_duplicates():
    toleration = {"key": "gpu", "operator": "Exists"}
    assert merge_values({"tolerations": [toleration]}, {"tolerations": [toleration]}) == {
        "tolerations": [toleration, toleration]
    }
    assert merge_values({"args": ["-v"]}, {"args": ["-v", "--x"]}) == {"args": ["-v", "-v", "--x"]}


def test_empty_list_changes_nothing():
    base = {"containers": [{"name": "user"}]}
    assert merge_values(base, {"containers": []}) == base


def test_string_lists_containing_the_word_name_concatenate_without_crashing():
    # OSMO searches the text for "name" and crashes on this.
    assert merge_values({"command": ["hostname"]}, {"command": ["name", "rename"]}) == {
        "command": ["hostname", "name", "rename"]
    }


def test_names_of_different_types_do_not_merge():
    assert merge_values([{"name": 1}], [{"name": True}]) == [{"name": 1}, {"name": True}]


def test_templates_merge_left_to_right_from_empty():
    templates = [{"a": 1, "b": {"c": 1}}, {"b": {"d": 2}}, {"a": 3}]
    assert merge_pod_templates(templates) == {"a": 3, "b": {"c": 1, "d": 2}}
    assert merge_pod_templates([]) == {}


def test_inputs_are_never_mutated():
    base = {"containers": [{"name": "user", "env": [{"name": "A"}]}]}
    override = {"containers": [{"name": "user", "env": [{"name": "B"}]}]}
    snapshot = copy.deepcopy((base, override))
    merge_values(base, override)
    merge_pod_templates([base, override])
    assert (base, override) == snapshot


def test_results_share_nothing_with_inputs_or_with_each_other():
    common = {"spec": {"containers": [{"name": "user", "env": []}], "tolerations": []}}
    first = merge_pod_templates([common, {"spec": {"nodeSelector": {"a": "1"}}}])
    second = merge_pod_templates([common, {"spec": {"nodeSelector": {"b": "2"}}}])
    first["spec"]["containers"][0]["env"].append({"name": "X"})
    first["spec"]["tolerations"].append({"key": "k"})
    assert second["spec"]["containers"][0]["env"] == []
    assert common["spec"]["containers"][0]["env"] == []
    assert common["spec"]["tolerations"] == []


@given(json_values, json_values)
def test_merge_never_mutates_its_inputs(base, override):
    snapshot = copy.deepcopy((base, override))
    merge_values(base, override)
    assert (base, override) == snapshot


@given(json_objects)
def test_merging_empty_changes_nothing(template):
    assert merge_values(template, {}) == template
    assert merge_values({}, template) == template


@given(json_objects)
def test_merging_one_template_gives_it_back(template):
    assert merge_pod_templates([template]) == template


@given(json_objects, json_objects)
def test_merge_result_shares_no_mutable_object_with_inputs(base, override):
    def containers(value, found):
        if isinstance(value, dict | list):
            found.add(id(value))
            for item in value.values() if isinstance(value, dict) else value:
                containers(item, found)
        return found

    assert not containers(merge_values(base, override), set()) & (containers(base, set()) | containers(override, set()))
