"""The node table's rows made when read (``selectors.inventory.NodeTable``): the same rows as a list of them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools import tables
from pools.selectors.inventory import NodeTable, NodeTableRow

PAIRS = st.lists(st.tuples(st.sampled_from(["", "pool-a", "pool-b"]), st.sampled_from(["", "x", "y"])), max_size=4)


def table_and_rows(nodes: list[list[tuple[str, str]]]) -> tuple[NodeTable, list[NodeTableRow]]:
    table, rows = NodeTable(), []
    for index, pairs in enumerate(nodes):
        node = (index, f"node-{index}", "lab", "SHARED", "ONLINE", "H100")
        table.add(node, pairs)
        rows += [
            NodeTableRow(index, f"node-{index}", "lab", pool, platform, "SHARED", "ONLINE", "H100")
            for pool, platform in pairs
        ]
    return table, rows


@given(st.lists(PAIRS, max_size=30), st.integers(-40, 80), st.integers(-40, 80))
def test_length_iteration_and_any_slice_are_those_of_the_list(nodes, start, stop):
    table, rows = table_and_rows(nodes)
    assert len(table) == len(rows) and list(table) == rows
    assert table[start:stop] == rows[start:stop]
    assert table[::3] == rows[::3]
    if rows:
        assert table[start % len(rows)] == rows[start % len(rows)] and table[-1] == rows[-1]


def test_an_index_past_the_end_is_an_index_error():
    table, _ = table_and_rows([[("pool-a", "x")]])
    with pytest.raises(IndexError):
        table[1]
    assert NodeTable()[0:5] == [] and len(NodeTable()) == 0


def row_of(**changes) -> dict:
    """A row as the nodes page hands it to ``node_row``."""
    row = {
        "node": "gpu-1",
        "backend": "lab",
        "pool": "train",
        "platform": "h100",
        "type": "SHARED",
        "status": "available",
        "reason": "",
        "gpu_product": "NVIDIA-H100",
        "time_sliced": False,
        "mig": {},
        "gpu": {"used": 2, "capacity": 8},
        "cpu": {"used": 16, "capacity": 128},
        "memory_gi": {"used": 64, "capacity": 2048},
        "labels": {"zone": "a"},
        "taints": [],
    }
    return {**row, **changes}


def test_a_node_row_links_the_node_its_gpus_and_its_pool_with_every_number():
    node_row = tables.RESOURCES.page_row

    html = node_row(row_of())
    assert html.startswith("<tr>") and html.count("<td") == 9
    assert '<a href="/nodes/gpu-1/labels/?backend=lab" title="Labels of gpu-1"><code>gpu-1</code></a>' in html
    assert '<a href="/nodes/gpu-1/gpus/?backend=lab" title="GPU utilization of gpu-1">GPUs</a>' in html
    assert '<a href="/pools/train/">train</a> <span class="muted">/ h100</span>' in html
    assert '<span class="badge shared">SHARED</span>' in html
    assert '<td class="num">2/8</td>' in html and '<td class="num">64/2,048</td>' in html
    assert "<details>" in html  # the labels, as node_tags makes them


def test_a_node_row_escapes_every_text_it_shows():
    node_row = tables.RESOURCES.page_row

    hostile = '<img src=x onerror="alert(1)">'
    html = node_row(
        row_of(
            node="n&1",
            backend="a b/c",
            pool="",
            reason=hostile,
            status="unavailable",
            gpu_product=hostile,
            time_sliced=True,
            mig={hostile: {"used": 1, "capacity": 7}},
            gpu={"used": 0, "capacity": 0},
            labels={hostile: hostile},
        )
    )
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert '<a href="/nodes/n%261/labels/?backend=a%20b/c" title="Labels of n&amp;1">' in html
    assert "GPUs</a>" in html  # a node with MIG devices has GPUs to show even without whole ones
    assert '<span class="muted">—</span>' in html  # no pool
    assert '<span class="badge">time-sliced</span>' in html
