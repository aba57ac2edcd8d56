"""gpuctl's ``kind: pool`` files (SEMANTICS §8.1): what is accepted, and each refusal naming its field."""

from __future__ import annotations

import pytest

from pools.configs import gpuctl_file_parse, parse_document
from pools.configs.gpuctl import MAX_NODES
from pools.engine.errors import ConfigError

SEED = """kind: pool
version: v0.1
pool:
  name: training-pool
  description: "Dedicated pool for training jobs"
nodes:
  node-1:              # Node hostname (matches kubectl get nodes output)
    gpu-type: A100-100G
  node-2:
    gpuType: A100-100G
"""


def good(**changes) -> dict:
    document = {"kind": "pool", "version": "v0.1", "pool": {"name": "p"}, "nodes": {"n1": {"gpu-type": "A10"}}}
    document.update(changes)
    return document


def problems(document) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as raised:
        gpuctl_file_parse(document)
    return [(problem.field, problem.message) for problem in raised.value.problems]


def test_the_seed_file_reads_with_both_spellings_of_the_gpu_type():
    assert gpuctl_file_parse(parse_document(SEED)) == {
        "name": "training-pool",
        "description": "Dedicated pool for training jobs",
        "nodes": {"node-1": "A100-100G", "node-2": "A100-100G"},
    }


def test_an_empty_gpu_type_and_a_node_without_fields_set_no_type():
    parsed = gpuctl_file_parse(good(nodes={"cpu-node-1": {"gpu-type": ""}, "cpu-node-2": None}))
    assert parsed["nodes"] == {"cpu-node-1": "", "cpu-node-2": ""}


@pytest.mark.parametrize(
    ("document", "field", "words"),
    [
        ([], "", "must be a mapping"),
        (good(kind="job"), "kind", "must be 'pool'"),
        (good(version="v2"), "version", "v0.1"),
        (good(pool="p"), "pool", "mapping"),
        (good(pool={}), "pool.name", "is required"),
        (good(pool={"name": "bad name"}), "pool.name", "must start with a letter"),
        (good(pool={"name": "p" * 64}), "pool.name", "63 characters"),
        (good(pool={"name": "p", "description": 5}), "pool.description", "must be a string"),
        (good(pool={"name": "p", "owner": "x"}), "pool.owner", "unknown field"),
        (good(nodes={}), "nodes", "at least one node"),
        (good(nodes=["n1"]), "nodes", "mapping"),
        (good(nodes={"Node_1": {}}), "nodes.Node_1", "not a node name"),
        (good(nodes={"n1": "A10"}), "nodes.n1", "mapping"),
        (good(nodes={"n1": {"gpu-type": "A 10"}}), "nodes.n1.gpu-type", "not a valid label value"),
        (good(nodes={"n1": {"gpu-type": 10}}), "nodes.n1.gpu-type", "must be a string"),
        (good(nodes={"n1": {"gpu-type": "A", "gpuType": "B"}}), "nodes.n1.gpu-type", "disagree"),
        (good(nodes={"n1": {"gpu": 8}}), "nodes.n1.gpu", "unknown field"),
        (good(extra=1), "extra", "unknown field"),
    ],
)
def test_a_bad_file_is_refused_naming_the_field(document, field, words):
    found = problems(document)
    assert any(f == field and words in message for f, message in found), found


def test_every_problem_is_reported_at_once():
    found = problems({"kind": "job", "version": "v9", "pool": {}, "nodes": {}})
    assert {field for field, _ in found} == {"kind", "version", "pool.name", "nodes"}


def test_a_file_past_the_node_bound_is_refused_before_its_nodes_are_read():
    nodes = {f"n{index}": None for index in range(MAX_NODES + 1)}
    assert problems(good(nodes=nodes)) == [("nodes", f"lists {MAX_NODES + 1} nodes; at most {MAX_NODES} per file")]
