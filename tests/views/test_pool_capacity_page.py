"""The pool page's "Capacity by topology" panel (SEMANTICS §11): the figures of ``pool_capacity``, per level."""

from __future__ import annotations

from kube_objects import node
from people import person, signed_in

from pools import services
from pools.choices import ConfigType

RACK = "topology.kubernetes.io/rack"


def make_pool(cluster, actor, topology_keys):
    backend = cluster([node("n1", labels={RACK: "r7"}, gpu=8), node("n2", gpu=4)])
    services.config_apply(
        changes={ConfigType.POOL: {"racked": {"backend": backend.name, "topology_keys": topology_keys}}},
        actor=actor,
    )
    return signed_in(person("root", password=None, is_superuser=True))


def test_the_pool_page_shows_gangs_and_domains_per_level(cluster, actor):
    page = make_pool(cluster, actor, [{"key": "rack", "label": RACK}]).get("/pools/racked/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Capacity by topology" in html
    assert 'data-testid="capacity-pool"' in html and 'data-testid="capacity-rack"' in html
    assert "<td>1×8</td>" in html and '<td class="num">8/8</td>' in html and "<td>r7</td>" in html


def test_the_pool_page_draws_each_rack_as_a_row_of_nodes_coloured_by_free_gpus(cluster, actor):
    page = make_pool(cluster, actor, [{"key": "rack", "label": RACK}]).get("/pools/racked/")
    html = page.content.decode()
    assert 'data-testid="rack-picture"' in html and "<strong>By rack</strong>" in html
    assert '<div class="rack-row" data-domain="r7">' in html
    assert '<span class="gpu-node free" data-node="n1" data-free="8" title="n1: 8 of 8 GPUs free">8/8</span>' in html
    assert '<div class="rack-row" data-domain="">' in html and "in no rack" in html  # n2 has no rack label
    no_levels = {"racked": {"backend": "test-cluster", "topology_keys": []}}
    services.config_apply(changes={ConfigType.POOL: no_levels}, actor=actor)
    without = signed_in(person("root2", password=None, is_superuser=True)).get("/pools/racked/")
    assert 'data-testid="rack-picture"' not in without.content.decode()  # no levels, no picture


def test_past_its_limit_the_picture_counts_a_racks_nodes_instead_of_drawing_each(cluster, actor, monkeypatch):
    import pools.selectors.topology as topology

    monkeypatch.setattr(topology, "PICTURE_NODES", 1)
    html = make_pool(cluster, actor, [{"key": "rack", "label": RACK}]).get("/pools/racked/").content.decode()
    assert "too many to draw one by one" in html and 'data-node="n1"' not in html
    assert '<span class="gpu-node free" data-state="free" data-count="1">1 all free</span>' in html
    assert "8 of 8 GPUs free on 1 node</small>" in html  # counted from the kept sums, not from nodes drawn


def test_a_level_of_many_domains_lists_the_first_and_says_where_the_rest_are(cluster, actor):
    backend = cluster([node(f"n{i:02d}", labels={RACK: f"r{i:02d}"}, gpu=8) for i in range(30)])
    services.config_apply(
        changes={
            ConfigType.POOL: {"racked": {"backend": backend.name, "topology_keys": [{"key": "rack", "label": RACK}]}}
        },
        actor=actor,
    )
    html = signed_in(person("root", password=None, is_superuser=True)).get("/pools/racked/").content.decode()
    assert "<td>r23</td>" in html and "<td>r24</td>" not in html
    assert "The first 24 of 30 domains" in html and "poolctl pool capacity racked --level rack" in html


def test_unreadable_topology_keys_are_explained_on_the_page(cluster, actor):
    page = make_pool(cluster, actor, ["rack"]).get("/pools/racked/")
    assert page.status_code == 200
    assert "topology_keys[0] must be {key, label}" in page.content.decode()


def test_the_page_loads_its_nodes_from_the_node_table_of_the_pool(cluster, actor):
    client = make_pool(cluster, actor, [])
    html = client.get("/pools/racked/").content.decode()
    assert 'hx-get="/nodes/?pool=racked" hx-trigger="load"' in html and "n1" not in html.split('id="node-table"')[1]
    fragment = client.get("/nodes/?pool=racked", HTTP_HX_REQUEST="true").content.decode()
    assert fragment.strip().startswith('<div id="node-table"') and "n1" in fragment and "n2" in fragment
