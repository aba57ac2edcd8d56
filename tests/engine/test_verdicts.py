"""Why a pending workload waits (SEMANTICS §10): each reason worked by hand, their order, and properties."""

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from pools.engine import verdicts
from pools.engine.reclaim import Reclaimer, reclaim_verdict
from pools.engine.verdicts import (
    NodeState,
    PendingWorkload,
    PoolState,
    RunningJob,
    UnitState,
    pool_verdicts,
    workload_verdict,
)

D = Decimal
H100 = {"nvidia.com/gpu.product": "H100"}


def node(name, free, allocatable=8, product="H100", **labels):
    return NodeState(name, product, D(allocatable), D(free), {"nvidia.com/gpu.product": product, **labels})


def unit(name, parent=None, *, deserved=0, limit=-1, fair_share=0, allocated=0, nonpreemptible=None):
    allocated = D(allocated)
    return UnitState(
        name,
        parent,
        D(deserved),
        D(limit),
        D(fair_share),
        allocated,
        allocated if nonpreemptible is None else D(nonpreemptible),
    )


def pending(project="a", pods=(4,), **more):
    return PendingWorkload(("ns", project, "job"), project, tuple(D(p) for p in pods), **more)


# Department "d" (16 GPUs) with projects a (fair share 8) and b (fair share 8, holding 12, 8 of them preemptible).
UNITS = (
    unit("d", deserved=16, fair_share=16, allocated=12, nonpreemptible=4),
    unit("a", "d", deserved=8, fair_share=8, allocated=0),
    unit("b", "d", deserved=4, fair_share=8, allocated=12, nonpreemptible=4),
)


NODES = (node("n1", 0), node("n2", 4))


def pool(nodes=NODES, units=UNITS, running=(), **more):
    return PoolState("p", nodes=tuple(nodes), units=tuple(units), running=tuple(running), **more)


def reasons(verdict):
    return [check.reason for check in verdict.checks]


def test_fits_now_is_scheduling_and_after_a_minute_names_the_scheduler():
    fresh = workload_verdict(pool(), pending(pods=(4,), waiting_seconds=10))
    assert reasons(fresh) == ["scheduling"]
    assert "scheduler may not be running" not in fresh.checks[0].message
    late = workload_verdict(pool(), pending(pods=(4,), waiting_seconds=300, scheduled_message="0/2 nodes available"))
    assert "scheduler may not be running" in late.checks[0].message
    assert "0/2 nodes available" in late.checks[0].message


def test_maintenance_and_offline_come_first_and_every_check_is_listed():
    verdict = workload_verdict(pool(maintenance=True, online=False), pending(pods=(16,)))
    assert reasons(verdict)[:3] == ["pool_maintenance", "backend_offline", "never_fits"]
    assert verdict.reason == "pool_maintenance"


def test_never_fits_names_the_largest_node():
    verdict = workload_verdict(pool(), pending(pods=(16,), node_selector=H100))
    assert verdict.reason == "never_fits"
    assert verdict.checks[0].message == "no node has 16 GPUs of product H100 (largest: 8)"
    assert verdict.checks[0].figures["largest"] == 8


def test_never_fits_when_the_selector_leaves_no_node_or_a_rule_refuses():
    verdict = workload_verdict(pool(), pending(node_selector={"nvidia.com/gpu.product": "A100"}))
    assert verdict.reason == "never_fits" and "leaves no available node" in verdict.checks[0].message
    refused = workload_verdict(pool(), pending(refused="asks more than 8 GPUs a pod"))
    assert refused.checks[0].message == "asks more than 8 GPUs a pod"


def test_limits_project_then_department():
    units = (
        unit("d", deserved=16, limit=10, fair_share=16, allocated=8),
        unit("a", "d", deserved=8, limit=6, fair_share=8, allocated=4),
        unit("b", "d", fair_share=8, allocated=4),
    )
    verdict = workload_verdict(pool(units=units), pending(pods=(4,)))
    assert reasons(verdict)[:2] == ["project_limit", "department_limit"]
    assert verdict.checks[0].figures == {"unit": "a", "allocated": 4, "request": 4, "limit": 6}


def test_over_fair_share_waits_and_takes_nothing_back():
    units = (unit("d", fair_share=16, allocated=12), unit("a", "d", fair_share=4, allocated=4), *UNITS[2:])
    jobs = [RunningJob("ns-b", "train", "PodGroup", "b", D(8), nodes={"n1": D(8)})]
    verdict = workload_verdict(pool(units=units, running=jobs), pending(pods=(8,)))
    assert reasons(verdict) == ["over_fair_share"]
    assert verdict.victims == ()
    assert verdict.checks[0].figures["fair_share"] == 4


def test_reclaim_names_victims_as_kai_orders_them():
    # b is above its fair share (12 > 8) and holds 8 preemptible GPUs on n1: the newest low-priority job goes first.
    jobs = [
        RunningJob("ns-b", "old", "PodGroup", "b", D(4), priority=50, started=100, nodes={"n1": D(4)}),
        RunningJob("ns-b", "new", "PodGroup", "b", D(4), priority=50, started=200, nodes={"n1": D(4)}),
        RunningJob("ns-b", "important", "PodGroup", "b", D(4), priority=100, started=300, nodes={"n1": D(4)}),
    ]
    verdict = workload_verdict(pool(running=jobs), pending(pods=(8,)))
    assert verdict.reason == "reclaim"
    assert [job.name for job in verdict.victims] == ["new", "old"]
    assert reasons(verdict) == ["reclaim", "no_capacity"]


def test_no_victims_on_nodes_the_workload_does_not_fit_is_no_capacity():
    nodes = (node("n1", 0), node("n2", 4), node("l1", 0, product="L40S"))
    jobs = [RunningJob("ns-b", "elsewhere", "PodGroup", "b", D(8), nodes={"l1": D(8)})]
    verdict = workload_verdict(pool(nodes=nodes, running=jobs), pending(pods=(8,), node_selector=H100))
    assert reasons(verdict) == ["no_capacity"]
    figures = verdict.checks[0].figures
    assert figures["largest_free"]["H100"] == {"gpus": 4, "nodes": ["n2"], "node_count": 1}


def test_a_gang_needs_all_its_pods_at_once():
    nodes = (node("n1", 4), node("n2", 4))
    alone = workload_verdict(pool(nodes=nodes), pending(pods=(3, 3, 2)))
    assert alone.reason == "scheduling"  # one pod of it could start
    # 8 GPUs free and 8 asked, but a 4-GPU node takes a 3 and leaves 1: the 2 has no room.
    gang = workload_verdict(pool(nodes=nodes), pending(pods=(3, 3, 2), gang=True))
    assert gang.reason == "no_capacity"
    assert "need 8 GPUs at once" in gang.checks[0].message
    fits = workload_verdict(pool(nodes=nodes), pending(pods=(2, 2, 2, 2), gang=True))
    assert fits.reason == "scheduling"


# Two racks in zone z1 (and a rack of the same name in zone z2: another domain), a node with no rack label.
ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"
RACKED = (
    node("a1", 4, **{ZONE: "z1", RACK: "r1"}),
    node("a2", 4, **{ZONE: "z1", RACK: "r1"}),
    node("b1", 8, **{ZONE: "z1", RACK: "r2"}),
    node("c1", 4, **{ZONE: "z2", RACK: "r1"}),
    node("loose", 8),
)


def racked(**more):
    return pool(nodes=RACKED, topology_labels=(ZONE, RACK), **more)


def test_a_required_topology_gang_fits_only_inside_one_domain():
    # 3 pods of 4 (of no project: no quota checks): 28 GPUs are free, but no rack has 12 of them (z1/r1 8, z1/r2 8,
    # z2/r1 4; "loose" is in no rack)
    gang = pending(project=None, pods=(4, 4, 4), gang=True)
    assert workload_verdict(racked(), gang).reason == "scheduling"  # without a topology: anywhere
    waits = workload_verdict(racked(), pending(project=None, pods=(4, 4, 4), gang=True, topology=RACK))
    assert reasons(waits) == ["no_capacity"]
    figures = waits.checks[0].figures
    assert figures["topology"] == RACK
    assert figures["largest_domain"] in ("z1/r1", "z1/r2") and figures["largest_domain_free"] == 8
    assert "inside one topology.kubernetes.io/rack domain" in waits.checks[0].message
    # two pods of 4 fit in z1/r1 (a1 + a2) or z1/r2; rack r1 of z2 is not the same rack as z1's
    assert workload_verdict(racked(), pending(pods=(4, 4), gang=True, topology=RACK)).reason == "scheduling"
    # by zone: z1 has 16 free in one zone, so three 4-GPU pods fit
    by_zone = pending(project=None, pods=(4, 4, 4), gang=True, topology=ZONE)
    assert workload_verdict(racked(), by_zone).reason == "scheduling"


def test_a_required_topology_no_domain_could_ever_hold_never_fits():
    # 24 GPUs in 3 pods of 8: the largest rack (z1/r1, two 8-GPU nodes) holds 16 even empty
    verdict = workload_verdict(racked(), pending(pods=(8, 8, 8), gang=True, topology=RACK))
    assert verdict.reason == "never_fits"
    assert verdict.checks[0].figures == {
        "topology": RACK,
        "domains": 3,
        "largest_domain": "z1/r1",
        "largest_domain_gpus": 16,
    }
    unlabelled = workload_verdict(racked(), pending(pods=(4,), topology="nvidia.com/gpu.clique"))
    assert unlabelled.reason == "never_fits" and unlabelled.checks[0].figures["domains"] == 0


def test_victims_for_a_required_topology_free_gpus_inside_one_domain():
    nodes = (
        node("a1", 0, **{RACK: "r1"}),
        node("a2", 0, **{RACK: "r1"}),
        node("b1", 4, **{RACK: "r2"}),
        node("b2", 4, **{RACK: "r2"}),
    )
    # b's preemptible jobs: one filling a1, one on b1's other half. Freeing b1's job is enough GPUs overall (12 free)
    # but not in one rack for a 2x8 gang on r2 (b1 would have 8, b2 4); freeing a1's job leaves r1 with 8 + 0.
    jobs = [
        RunningJob("ns-b", "on-b1", "PodGroup", "b", D(4), started=300, nodes={"b1": D(4)}),
        RunningJob("ns-b", "on-a1", "PodGroup", "b", D(8), started=200, nodes={"a1": D(8)}),
        RunningJob("ns-b", "on-b2", "PodGroup", "b", D(4), started=100, nodes={"b2": D(4)}),
    ]
    units = (
        unit("d", deserved=32, fair_share=32, allocated=16, nonpreemptible=0),
        unit("a", "d", deserved=16, fair_share=16, allocated=0),
        unit("b", "d", deserved=0, fair_share=0, allocated=16, nonpreemptible=0),
    )
    state = PoolState("p", nodes=nodes, units=units, running=tuple(jobs), topology_labels=(RACK,))
    verdict = workload_verdict(state, pending(pods=(8, 8), gang=True, topology=RACK))
    assert verdict.reason == "reclaim"
    assert sorted(job.name for job in verdict.victims) == ["on-b1", "on-b2"]  # rack r2, both its nodes


def test_a_workload_of_no_project_skips_the_quota_checks():
    verdict = workload_verdict(pool(), pending(project=None, pods=(8,)))
    assert reasons(verdict) == ["no_capacity"]


def test_pool_verdicts_judges_every_workload_by_key():
    workloads = [
        PendingWorkload(("ns", "P", str(i)), "a", (D(i % 10),), node_selector=H100 if i % 2 else {}) for i in range(50)
    ]
    found = pool_verdicts(pool(), workloads)
    assert set(found) == {w.key for w in workloads}
    assert all(found[w.key].as_dict()["reason"] in verdicts.REASONS for w in workloads)


# --- properties ----------------------------------------------------------------------------------------------------

gpus = st.integers(min_value=0, max_value=8).map(D)
rarely = st.sampled_from([False, False, False, False, True])


@st.composite
def node_states(draw):
    return tuple(
        node(f"n{i}", draw(st.sampled_from([0, 0, 0, 2, 4, 8])), 8, draw(st.sampled_from(["H100", "H100", "L40S"])))
        for i in range(draw(st.integers(0, 6)))  # mostly full: what makes reclaim worth a look
    )


@st.composite
def pools_and_workloads(draw):
    projects = ["a", "b", "c"]
    units = [unit("d", deserved=draw(gpus) * 2, fair_share=draw(gpus) * 2, allocated=0)]
    running = []
    allocated_total = D(0)
    for name in projects:
        preemptible_jobs = draw(st.lists(st.integers(1, 4), max_size=4))
        nonpreemptible = draw(st.integers(0, 4))
        allocated = sum(preemptible_jobs) + nonpreemptible
        allocated_total += allocated
        units.append(
            unit(
                name,
                "d",
                deserved=draw(st.integers(0, 4)),
                limit=draw(st.sampled_from([-1, -1, 8, 16])),
                fair_share=draw(gpus) * 2,
                allocated=allocated,
                nonpreemptible=nonpreemptible,
            )
        )
        for index, job in enumerate(preemptible_jobs):
            running.append(
                RunningJob(
                    f"ns-{name}",
                    f"{name}-{index}",
                    "PodGroup",
                    name,
                    D(job),
                    priority=draw(st.integers(0, 2)),
                    started=draw(st.integers(0, 100)),
                    nodes={f"n{draw(st.integers(0, 5))}": D(job)},
                )
            )
    units[0] = unit("d", deserved=units[0].deserved, fair_share=units[0].fair_share, allocated=allocated_total)
    state = PoolState(
        "p",
        maintenance=draw(rarely),
        online=not draw(rarely),
        nodes=draw(node_states()),
        units=tuple(units),
        running=tuple(running),
    )
    workloads = [
        PendingWorkload(
            ("ns", "PodGroup", str(i)),
            draw(st.sampled_from([*projects, None])),
            tuple(draw(st.lists(st.integers(1, 6).map(D), min_size=1, max_size=3))),
            preemptible=draw(st.booleans()),
            gang=draw(st.booleans()),
            node_selector=draw(st.sampled_from([{}, H100, {"nvidia.com/gpu.product": "L40S"}])),
            waiting_seconds=draw(st.integers(0, 120)),
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    return state, workloads


@settings(max_examples=100, deadline=None)
@given(pools_and_workloads())
def test_every_pending_workload_gets_one_reason_the_first_check_in_order(case):
    state, workloads = case
    found = pool_verdicts(state, workloads)
    assert set(found) == {w.key for w in workloads}
    for verdict in found.values():
        order = [verdicts.REASONS.index(reason) for reason in reasons(verdict)]
        assert order and order == sorted(order) and len(set(order)) == len(order)
        assert verdict.as_dict()["reason"] == verdict.checks[0].reason
        assert ("scheduling" in reasons(verdict)) == (reasons(verdict) == ["scheduling"])


def _units_for_reclaim(state):
    from pools.engine.reclaim import Unit

    return [
        Unit(u.name, u.parent, u.deserved, u.limit, u.fair_share, u.allocated, u.allocated_nonpreemptible)
        for u in state.units
    ]


@settings(max_examples=100, deadline=None)
@given(pools_and_workloads())
def test_victims_shown_pass_the_reclaim_check(case):
    state, workloads = case
    units = {u.name: u for u in state.units}
    for workload in workloads:
        verdict = workload_verdict(state, workload)
        if not verdict.victims:
            continue
        assert "reclaim" in reasons(verdict)
        project = units[workload.project]
        assert all(job.project != workload.project for job in verdict.victims)
        decision = reclaim_verdict(
            _units_for_reclaim(state),
            Reclaimer(workload.project, workload.request, workload.preemptible),
            [(job.project, job.gpus) for job in verdict.victims],
        )
        assert decision.can_reclaim and decision.reclaimable, decision.reasons
        if project.allocated + workload.request <= project.fair_share:
            assert decision.refused_by != "saturation"


@settings(max_examples=100, deadline=None)
@given(pools_and_workloads(), st.data())
def test_a_reclaimer_within_its_fair_share_is_never_refused_by_saturation(case, data):
    state, workloads = case
    units = {u.name: u for u in state.units}
    for workload in workloads:
        if workload.project is None:
            continue
        project = units[workload.project]
        others = [job for job in state.running if job.project != workload.project]
        chosen = (
            data.draw(st.lists(st.sampled_from(range(len(others))), unique=True), label="victims") if others else []
        )
        victims = [others[index] for index in chosen]
        decision = reclaim_verdict(
            _units_for_reclaim(state),
            Reclaimer(workload.project, workload.request, workload.preemptible),
            [(job.project, job.gpus) for job in victims],
        )
        if project.allocated + workload.request <= project.fair_share:
            assert decision.refused_by != "saturation", decision.reasons


def _fits_by_brute_force(pods, frees) -> bool:
    """Every assignment of the pods to the nodes, tried: whether one leaves no node below zero."""
    if not pods:
        return True
    first, rest = pods[0], pods[1:]
    for index, free in enumerate(frees):
        if free >= first:
            trial = list(frees)
            trial[index] -= first
            if _fits_by_brute_force(rest, trial):
                return True
    return False


@st.composite
def racked_pools(draw):
    nodes = []
    for i in range(draw(st.integers(0, 6))):
        allocatable = draw(st.sampled_from([4, 8]))
        free = draw(st.integers(0, allocatable))
        rack = draw(st.sampled_from(["r1", "r2", "r3", None]))
        nodes.append(node(f"n{i}", free, allocatable, **({RACK: rack} if rack else {})))
    # A gang of P pods x G GPUs, as KAI's pod groups are (SEMANTICS §11's shapes): placing largest first on the node
    # with the most free GPUs is exact for pods of one size.
    pods = (draw(st.integers(1, 8)),) * draw(st.integers(1, 4))
    return tuple(nodes), pods


@settings(max_examples=300, deadline=None)
@given(racked_pools())
def test_a_required_topology_gang_fits_exactly_when_some_rack_could_place_it(case):
    nodes, pods = case
    state = PoolState("p", nodes=nodes, topology_labels=(RACK,))
    verdict = workload_verdict(state, pending(project=None, pods=pods, gang=True, topology=RACK))
    racks = {n.labels[RACK] for n in nodes if RACK in n.labels}
    in_rack = {rack: [n for n in nodes if n.labels.get(RACK) == rack] for rack in racks}
    fits_now = any(_fits_by_brute_force(sorted(pods), [n.free for n in rack]) for rack in in_rack.values())
    fits_empty = any(_fits_by_brute_force(sorted(pods), [n.allocatable for n in rack]) for rack in in_rack.values())
    largest = max((n.allocatable for n in nodes), default=0)
    if max(pods) > largest or not fits_empty:
        assert verdict.reason == "never_fits"
    elif fits_now:
        assert verdict.reason == "scheduling"
    else:
        assert verdict.reason == "no_capacity"
