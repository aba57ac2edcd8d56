"""The stand-in API server (scripts/bench/fake_apiserver.py) the inventory tests sync from."""

import sys
from pathlib import Path

import pytest

from pools.fleet.layouts import pool_cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "bench"))
from fake_apiserver import FakeApiServer  # noqa: E402


@pytest.fixture
def server():
    """A small generated cluster (30 nodes, 600 pods, 4 pools of 2 platforms) served in Kubernetes wire format."""
    nodes, pods = pool_cluster(nodes=30, pods=600, pools=4, platforms=2, seed=5)
    with FakeApiServer(nodes, pods) as running:
        yield running
