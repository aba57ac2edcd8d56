"""gpuctl's ``kind: pool`` files (SEMANTICS §8.1): read and checked, nothing written.

A file names a pool and the nodes it labels::

    kind: pool
    version: v0.1
    pool: {name: training-pool, description: "..."}
    nodes:
      gpu-node-1: {gpu-type: A100-100G}

``gpuType`` is accepted for ``gpu-type``. Every problem is reported with its field, and the whole file is
refused when one is found.
"""

from __future__ import annotations

import re
from typing import Any

from ..engine.errors import ConfigError, Problem
from ..engine.labels import label_value_problem
from .fields import check_name

KIND = "pool"
VERSIONS = ("v0.1",)
# A node name is a DNS subdomain (what ``kubectl get nodes`` prints).
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_NODES = 10_000  # more than any cluster's pool; a file past it is refused before anything is read
MAX_DESCRIPTION = 4096
GPU_TYPE_KEYS = ("gpu-type", "gpuType")


def gpuctl_file_parse(data: Any) -> dict:
    """``{"name", "description", "nodes": {node: gpu type or ""}}`` from a parsed gpuctl pool file.

    Raises ConfigError listing every problem, each with its field (``pool.name``, ``nodes.gpu-node-1.gpu-type``).
    """
    problems: list[Problem] = []

    def fail(field: str, message: str) -> None:
        problems.append(Problem(field, message))

    if not isinstance(data, dict):
        raise ConfigError([Problem("", "a gpuctl pool file must be a mapping with kind, version, pool and nodes")])
    for key in sorted(set(data) - {"kind", "version", "pool", "nodes"}, key=str):
        fail(str(key), "unknown field (a pool file has kind, version, pool and nodes)")
    if data.get("kind") != KIND:
        fail("kind", f"must be '{KIND}' (got {data.get('kind')!r})")
    if data.get("version") not in VERSIONS:
        fail("version", f"must be one of {', '.join(VERSIONS)} (got {data.get('version')!r})")

    pool = data.get("pool")
    name, description = "", ""
    if not isinstance(pool, dict):
        fail("pool", "must be a mapping with name and description")
    else:
        for key in sorted(set(pool) - {"name", "description"}, key=str):
            fail(f"pool.{key}", "unknown field (pool has name and description)")
        name = pool.get("name")
        if not isinstance(name, str) or not name:
            fail("pool.name", "is required")
            name = ""
        else:
            problems.extend(Problem("pool.name", p.message) for p in check_name(name, ""))
            problem = label_value_problem(name)
            if problem:  # the name is the value of the nodes' pool label
                fail("pool.name", problem)
        description = pool.get("description", "")
        if description is None:
            description = ""
        if not isinstance(description, str):
            fail("pool.description", "must be a string")
            description = ""
        elif len(description) > MAX_DESCRIPTION:
            fail("pool.description", f"must be at most {MAX_DESCRIPTION} characters")

    nodes: dict[str, str] = {}
    listed = data.get("nodes")
    if not isinstance(listed, dict) or not listed:
        fail("nodes", "must be a mapping of node names to {gpu-type: ...}, with at least one node")
    elif len(listed) > MAX_NODES:
        fail("nodes", f"lists {len(listed)} nodes; at most {MAX_NODES} per file")
    else:
        for node, entry in listed.items():
            field = f"nodes.{node}"
            if not isinstance(node, str) or len(node) > 253 or not NODE_NAME.match(node):
                fail(field, f"{node!r} is not a node name (a DNS subdomain: lower-case letters, digits, '-' and '.')")
                continue
            if entry is None:
                entry = {}
            if not isinstance(entry, dict):
                fail(field, "must be a mapping like {gpu-type: A100-100G}")
                continue
            for key in sorted(set(entry) - set(GPU_TYPE_KEYS), key=str):
                fail(f"{field}.{key}", "unknown field (a node has gpu-type)")
            if all(key in entry for key in GPU_TYPE_KEYS) and entry["gpu-type"] != entry["gpuType"]:
                fail(f"{field}.gpu-type", "gpu-type and gpuType disagree")
            gpu_type = next((entry[key] for key in GPU_TYPE_KEYS if key in entry), "")
            if gpu_type is None:
                gpu_type = ""
            problem = label_value_problem(gpu_type)
            if problem:
                fail(f"{field}.gpu-type", problem)
                continue
            nodes[node] = gpu_type
    if problems:
        raise ConfigError(problems)
    return {"name": name, "description": description, "nodes": nodes}


def gpuctl_document(*, name: str, description: str, nodes: list[str], gpu_type: str = "") -> dict:
    """The gpuctl pool file the label-pool page's form amounts to (its name, description, nodes and their GPU type),
    parsed as ``poolctl create -f`` parses one."""
    document = {
        "kind": "pool",
        "version": "v0.1",
        "pool": {"name": name, "description": description},
        "nodes": {node: {"gpu-type": gpu_type} for node in nodes},
    }
    return gpuctl_file_parse(document)
