#!/usr/bin/env python
"""Benchmark: render a pool's pod template from 5 templates and validate a request against 100 nodes.

Prints the engine's figures and, in the same run, the naive way: every string compiled by Jinja on every
call and every per-node operand rendered and parsed again for every node. Pure engine, no database.

    make bench            # or: .venv/bin/python scripts/bench_engine.py [--iterations N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

import yaml
from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pools.builtins import POD_TEMPLATES, RESOURCE_VALIDATIONS  # noqa: E402
from pools.engine.expressions import evaluate_operand  # noqa: E402
from pools.engine.merge import merge_pod_templates  # noqa: E402
from pools.engine.validation import NodeResources, check_request, node_variables, parse_rules  # noqa: E402
from pools.engine.variables import render_pod_template, resolve_variables  # noqa: E402

GI = 1024**3
COMPARE = {"EQ": "__eq__", "NE": "__ne__", "LT": "__lt__", "LE": "__le__", "GT": "__gt__", "GE": "__ge__"}


def workload():
    """The robotics-training pool of the demo on its H100 platform: 5 templates, 10 rules, 100 nodes."""
    demo = yaml.safe_load((ROOT / "pools" / "demo" / "config.yaml").read_text())
    specs = {**POD_TEMPLATES, **demo["podTemplates"]}
    names = ["default_user", "default_ctrl", "default_amd64", "training_optimized", "training_h100_template"]
    templates = [(name, specs[name]) for name in names]
    rule_sets = {**RESOURCE_VALIDATIONS, **demo["resourceValidations"]}
    rules = []
    for name in ["default_cpu", "default_memory", "default_storage", "default_gpu", "gpu_training_validation"]:
        rules.extend(parse_rules(rule_sets[name], source=name))
    pool = demo["pools"]["robotics-training"]
    variables = resolve_variables(
        pool="robotics-training",
        platform="h100-platform",
        pool_defaults=pool["common_default_variables"],
        platform_defaults=pool["platforms"]["h100-platform"].get("default_variables"),
        user_values={"USER_GPU": 4},
    )
    rng = random.Random(7)
    nodes = []
    for index in range(100):
        used_gpu = rng.randint(0, 8)
        nodes.append(
            NodeResources(
                name=f"h100-{index:03d}",
                cpu=Decimal(192),
                gpu=Decimal(8),
                memory=Decimal(2048 * GI),
                storage=Decimal(7000 * GI),
                free_cpu=Decimal(192 - 20 * used_gpu // 8),
                free_gpu=Decimal(8 - used_gpu),
                free_memory=Decimal((2048 - 200 * used_gpu) * GI),
                free_storage=Decimal(5000 * GI),
                gpu_product="NVIDIA-H100-80GB-HBM3",
                available=index % 10 != 0,
                reason="" if index % 10 else "cordoned",
            )
        )
    return templates, rules, variables, nodes


def engine_way(templates, rules, variables, nodes):
    render_pod_template(templates, variables)
    return check_request(rules, variables, nodes, platform="h100-platform")


NAIVE_ENVIRONMENT = SandboxedEnvironment(undefined=StrictUndefined)


def naive_render(value, variables):
    """Compile every string on every call (no cache, no shortcut for plain text)."""
    if isinstance(value, str):
        return NAIVE_ENVIRONMENT.from_string(value).render(variables)
    if isinstance(value, dict):
        return {key: naive_render(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [naive_render(item, variables) for item in value]
    return value


def naive_way(templates, rules, variables, nodes):
    merge_pod_templates(naive_render(spec, variables) for _, spec in templates)
    passing = 0
    for node in nodes:
        if not node.available:
            continue
        scope = {**variables, **node_variables(node)}
        failed = False
        for rule in rules:
            left = evaluate_operand(naive_render(rule.left_operand, scope))
            right = evaluate_operand(naive_render(rule.right_operand, scope))
            if not getattr(left, COMPARE[rule.operator])(right):
                naive_render(rule.assert_message, scope)
                failed = True
        passing += not failed
    return passing


def measure(function, args, iterations):
    function(*args)  # warm caches the way a running server has them warm
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        function(*args)
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500)
    options = parser.parse_args()
    args = workload()
    templates, rules, _, nodes = args
    verdict = engine_way(*args)
    print(
        f"workload: {len(templates)} templates, {len(rules)} rules, {len(nodes)} nodes "
        f"({sum(not n.available for n in nodes)} unavailable); verdict passed={verdict.passed}, "
        f"{sum(n.passed for n in verdict.nodes)} nodes pass"
    )
    engine = measure(engine_way, args, options.iterations)
    naive = measure(naive_way, args, max(20, options.iterations // 10))
    print(f"{'way':<8} {'median ms':>10} {'p95 ms':>10}")
    print(f"{'engine':<8} {engine[0]:>10.2f} {engine[1]:>10.2f}")
    print(f"{'naive':<8} {naive[0]:>10.2f} {naive[1]:>10.2f}")
    print(
        f"engine is {naive[0] / engine[0]:.0f}x faster than the naive way (median); target <= 5 ms: "
        f"{'met' if engine[0] <= 5 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
