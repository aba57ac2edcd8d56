"""The node table's rows made when read (``selectors.inventory.NodeTable``): the same rows as a list of them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
