"""Placing nodes through the index of the specs' selected labels finds exactly the (pool, platform) pairs that
matching each node against every spec finds (SEMANTICS §5)."""

import random

from pools.engine.membership import SpecIndex, node_matches_pod_spec

PRODUCTS = ("H100", "A100", "L40S")
SPECS = [
    ("pool-a", "h100", {"nodeSelector": {"pool": "a", "product": "H100"}}),
    ("pool-a", "any", {"nodeSelector": {"pool": "a"}}),
    ("pool-b", "a100", {"nodeSelector": {"product": "A100"}, "tolerations": [{"key": "dedicated"}]}),
    ("pool-b", "count", {"nodeSelector": {"gpus": 8}}),  # a number, read as the label text "8"
    ("pool-b", "count-text", {"nodeSelector": {"gpus": "8"}}),  # matches a label 8 that is a number
    ("pool-c", "everything", {"tolerations": [{"operator": "Exists"}]}),  # no selector: every node is a candidate
    ("pool-c", "bad", {"nodeSelector": "not an object"}),
    (
        "pool-d",
        "affinity",
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "product", "operator": "In", "values": ["L40S"]}]}
                        ]
                    }
                }
            }
        },
    ),
]


def everywhere(labels, taints, name):
    return [
        (pool, platform)
        for pool, platform, spec in SPECS
        if node_matches_pod_spec(labels=labels, taints=taints, pod_spec=spec, node_name=name)
    ]


def test_the_index_finds_what_matching_every_spec_finds():
    rng = random.Random(7)
    index = SpecIndex(SPECS)
    for number in range(300):
        labels = {"kubernetes.io/hostname": f"n{number}", "product": rng.choice(PRODUCTS)}
        if rng.random() < 0.7:
            labels["pool"] = rng.choice("abc")
        if rng.random() < 0.3:
            labels["gpus"] = rng.choice(("8", "4"))
        if rng.random() < 0.05:
            labels["gpus"] = 8  # a label value that is not text: the node is matched against every spec
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.3 else []

        found = index.selecting(labels=labels, taints=taints, node_name=f"n{number}")

        assert found == everywhere(labels, taints, f"n{number}")
