"""Figures that add up (SEMANTICS §6.1), as properties over random fleets.

The engine's identities first (every pool: ``used_on_nodes + total_free = total_capacity``; totals count each node
set once and equal the fleet's available nodes counted once), then the doors: for random fleets synced into the
database, the selector, the overview's CSV, the pool page, ``/api/pool_quota/``, ``poolctl pool list`` and
``/metrics`` give every pool the same numbers, for the whole fleet and for a user who sees part of it.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from decimal import Decimal

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from kube_objects import node, pod
from people import api_client, person, role, run_poolctl

from accounts.access import SYSTEM
from pools import selectors, services
from pools.choices import ConfigType
from pools.engine.accounting import GPU_FIGURES, NodeGpu, PoolGpuInput, pool_gpu_accounting
from pools.engine.permissions import METRICS_ROLE
from pools.models import Node, NodeMembership

# --- the engine ------------------------------------------------------------------------------------------------

node_states = st.builds(
    lambda capacity, used, available: NodeGpu("", Decimal(capacity), Decimal(used), available),
    st.sampled_from([0, 1, 2, 4, 8]),
    st.integers(0, 10),
    st.booleans(),
)


@st.composite
def fleets(draw):
    count = draw(st.integers(1, 12))
    nodes = {f"n{i}": NodeGpu(f"n{i}", *_fields(draw(node_states))) for i in range(count)}
    names = sorted(nodes)
    pools = [
        PoolGpuInput(
            name=f"p{i}",
            nodes=frozenset(draw(st.lists(st.sampled_from(names), max_size=count))),
            guarantee=draw(st.integers(-1, 20)),
            pod_requests=tuple(draw(st.lists(st.tuples(st.integers(0, 8).map(Decimal), st.booleans()), max_size=4))),
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    return pools, nodes


def _fields(state: NodeGpu) -> tuple:
    return state.capacity, state.used, state.available


@given(fleets())
@settings(max_examples=300, deadline=None)
def test_every_pool_and_every_total_adds_up(fleet):
    pools, nodes = fleet
    figures = pool_gpu_accounting(pools, nodes)
    rows = []
    for pool in pools:
        gpu = figures[pool.name]
        assert gpu.used_on_nodes + gpu.total_free == gpu.total_capacity
        assert 0 <= gpu.used_on_nodes <= gpu.total_capacity and gpu.total_free >= 0
        # The node set's GPUs, each available node once: what a node-by-node count gives.
        set_nodes = {name for member in gpu.node_set for name in next(p for p in pools if p.name == member).nodes}
        available = [nodes[name] for name in set_nodes if nodes[name].available]
        assert gpu.total_capacity == sum(n.capacity for n in available)
        assert gpu.used_on_nodes == sum(min(n.used, n.capacity) for n in available)
        assert gpu.quota_free == max(0, gpu.quota_limit - gpu.quota_used) and gpu.quota_used <= gpu.total_usage
        rows.append({"name": pool.name, "node_set": list(gpu.node_set), "gpu": gpu.as_dict()})
    totals = selectors.pool_totals(rows)
    assert totals["used_on_nodes"] + totals["total_free"] == totals["total_capacity"]
    in_any_pool = {name for pool in pools for name in pool.nodes if nodes[name].available}
    assert totals["total_capacity"] == sum(nodes[name].capacity for name in in_any_pool)
    assert totals["total_usage"] == sum(row["gpu"]["total_usage"] for row in rows)


# --- every door, on random fleets in the database ---------------------------------------------------------------

TEMPLATES = {
    "figures-zone-a": {"spec": {"nodeSelector": {"zone": "a"}}},
    "figures-zone-b": {"spec": {"nodeSelector": {"zone": "b"}}},
    "figures-anywhere": {"spec": {"tolerations": [{"operator": "Exists"}]}},
}
# Pools by suffix: OSMO pools selecting zone a, zone b, every node (sharing with both), and a label pool.
POOL_BODIES = {
    "a": {"common_pod_template": ["figures-zone-a"], "resources": {"gpu": {"guarantee": 6}}},
    "b": {"common_pod_template": ["figures-zone-b"]},
    "all": {"common_pod_template": ["figures-anywhere"]},
    "rack": {"node_label": {"key": "rack", "value": "x"}},
}

fleet_nodes = st.lists(
    st.fixed_dictionaries(
        {
            "gpu": st.sampled_from([0, 2, 4, 8]),
            "zone": st.sampled_from("abc"),
            "rack": st.sampled_from("xy"),
            "ready": st.sampled_from(["True", "True", "False"]),
            "cordoned": st.booleans(),
        }
    ),
    min_size=1,
    max_size=8,
)
fleet_pods = st.lists(
    st.fixed_dictionaries(
        {
            "node": st.one_of(st.none(), st.integers(0, 7)),
            "gpu": st.integers(0, 4),
            "pool": st.sampled_from([None, *POOL_BODIES]),
            "priority": st.sampled_from([None, "LOW"]),
        }
    ),
    max_size=12,
)
_examples = itertools.count()


@given(nodes=fleet_nodes, pods=fleet_pods, include_b=st.booleans())
@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: an example is a database's worth of work
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_door_gives_every_pool_the_same_figures(cluster, actor, client, nodes, pods, include_b):
    """Each example is a backend of its own with its own pools (the database keeps the earlier ones: the doors
    must agree over all of them)."""
    example = next(_examples)
    prefix = f"f{example}"
    items = [
        node(
            f"{prefix}-n{index}",
            gpu=spec["gpu"],
            labels={"zone": spec["zone"], "rack": spec["rack"]},
            ready=spec["ready"],
            unschedulable=spec["cordoned"],
        )
        for index, spec in enumerate(nodes)
    ]
    for index, spec in enumerate(pods):
        bound = spec["node"] if spec["node"] is not None and spec["node"] < len(nodes) else None
        items.append(
            pod(
                f"{prefix}-pod-{index}",
                node=None if bound is None else f"{prefix}-n{bound}",
                gpu=spec["gpu"],
                pool=spec["pool"] and f"{prefix}-{spec['pool']}",
                priority=spec["priority"],
                phase="Running" if bound is not None else "Pending",
            )
        )
    backend = cluster(items, name=f"{prefix}-cluster")
    bodies = {name: body for name, body in POOL_BODIES.items() if include_b or name != "b"}
    services.config_apply(
        changes={
            ConfigType.POD_TEMPLATE: TEMPLATES,
            ConfigType.POOL: {f"{prefix}-{name}": {"backend": backend.name, **body} for name, body in bodies.items()},
        },
        actor=actor,
    )
    names = {f"{prefix}-{name}" for name in bodies}

    rows = {row["name"]: row for row in selectors.pool_list(user=SYSTEM)}
    for name in names:
        gpu = rows[name]["gpu"]
        assert gpu["used_on_nodes"] + gpu["total_free"] == gpu["total_capacity"], name
        where = selectors.pool_usage_where(selectors.pool_get(name, user=SYSTEM))
        if where is not None:
            assert where["on_nodes"] + where["outside"] + where["waiting"] == gpu["total_usage"], (name, where)
            assert where["outside"] == _outside_naively(name, backend), name
    mine = [rows[name] for name in sorted(names)]
    totals = selectors.pool_totals(mine)
    assert totals["total_capacity"] == _capacity_naively(names)
    assert totals["used_on_nodes"] + totals["total_free"] == totals["total_capacity"]

    admin = person(f"{prefix}-admin", password=None, is_superuser=True, is_staff=True)
    doors = _doors(admin, client)
    for name in names:
        for door, figures in doors.items():
            assert figures[name] == _expected(rows[name], figures[name]), (door, name)

    # A user who sees one pool gets that pool's figures unchanged, and totals of it alone.
    seen = f"{prefix}-all"
    reader = person(f"{prefix}-reader", role(f"{prefix}-sees-all", _reads(seen)), password=None)
    limited = _doors(reader, client, metrics=False)
    for door, figures in limited.items():
        assert set(figures) == {seen}, door
        assert figures[seen] == _expected(rows[seen], figures[seen]), door
    overview = selectors.pool_overview(user=reader, idle=False)
    assert overview["totals"] == selectors.pool_totals([rows[seen]])


def _expected(row: dict, shown: dict) -> dict:
    """The selector's figures a door shows (a page shows some of them; the others show all of ``GPU_FIGURES``)."""
    assert set(shown) <= set(GPU_FIGURES)
    return {figure: row["gpu"][figure] for figure in shown}


def _reads(pool: str) -> dict:
    return {"effect": "Allow", "actions": ["pool:Read"], "resources": [f"pool/{pool}"]}


def _capacity_naively(names: set[str]) -> int:
    """The GPUs of the available nodes any of these pools holds, each node once."""
    held = NodeMembership.objects.filter(pool__name__in=names, node__available=True).values("node_id").distinct()
    return int(sum(Node.objects.filter(id__in=held).values_list("gpu", flat=True)))


def _outside_naively(name: str, backend) -> int:
    """GPUs of the pool's running pods on nodes no pool of its node set holds."""
    from pools.models import Pod

    row = next(row for row in selectors.pool_list(user=SYSTEM) if row["name"] == name)
    inside = set(NodeMembership.objects.filter(pool__name__in=row["node_set"]).values_list("node__name", flat=True))
    return int(
        sum(
            pod.gpu
            for pod in Pod.objects.filter(backend=backend, pool_name=name).exclude(node_name="")
            if pod.node_name not in inside
        )
    )


def _doors(user, client, *, metrics: bool = True) -> dict[str, dict[str, dict]]:
    """Every pool's GPU figures as each door gives them to ``user``: door -> pool -> figure -> number."""
    found: dict[str, dict[str, dict]] = {}
    answer = api_client(user).get("/api/pool_quota/")
    assert answer.status_code == 200
    found["api"] = {row["name"]: row["gpu"] for row in answer.json()["pools"]}

    client.force_login(user)
    exported = client.get("/?format=csv")
    assert exported.status_code == 200
    found["overview csv"] = {
        row["name"]: {figure: int(row[figure]) for figure in GPU_FIGURES}
        for row in csv.DictReader(io.StringIO(exported.content.decode()))
    }
    pages = {}
    for name in found["api"]:
        text = client.get(f"/pools/{name}/").content.decode()
        shown = re.search(r'data-testid="used-on-nodes">([\d,]+) <small>of ([\d,]+)</small>', text)
        pages[name] = {"used_on_nodes": _int(shown[1]), "total_capacity": _int(shown[2])}
    found["pool page"] = pages  # the figures its cards show

    if user.is_superuser:
        result = run_poolctl("pool", "list", "--format", "json")
        assert result.code == 0
        found["poolctl"] = {row["name"]: row["gpu"] for row in result.json()["pools"]}
    if metrics:
        client.force_login(person(f"{user.username}-prometheus", METRICS_ROLE, password=None))
        text = client.get("/metrics").content.decode()
        by_pool: dict[str, dict] = {}
        gauges = {
            "capacity": "total_capacity",
            "usage": "total_usage",
            "free": "total_free",
            "quota_used": "quota_used",
            "quota_limit": "quota_limit",
            "quota_free": "quota_free",
            "used_on_nodes": "used_on_nodes",
        }
        for metric, figure in gauges.items():
            for pool_name, value in re.findall(
                rf'^gpupool_pool_gpu_{metric}{{backend="[^"]*",pool="([^"]*)"}} (\S+)$', text, re.M
            ):
                by_pool.setdefault(pool_name, {})[figure] = int(float(value))
        found["metrics"] = by_pool
    return found


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def test_mig_slices_are_named_by_profile_never_a_decimal_of_a_gpu():
    from pools.tables.utilization import held_gpus, idle_gpus

    mig_only = {"gpus": 0, "idle_gpus": 0, "mig": {"3g.40gb": 2}, "idle_mig": {"3g.40gb": 1}}
    assert (held_gpus(mig_only), idle_gpus(mig_only)) == ("2 × 3g.40gb", "1 × 3g.40gb")
    whole = {"gpus": 4, "idle_gpus": 2, "mig": {}, "idle_mig": {}}
    assert (held_gpus(whole), idle_gpus(whole)) == ("4", "2")
