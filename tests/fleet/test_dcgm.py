"""Simulated DCGM exporter metrics: one sample per device, pure in (pods, t), in the exporter's text format."""

import math
import re
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from pools.engine.utilization import idle_for, quiet_since
from pools.fleet import Fleet
from pools.fleet.catalogue import (
    CPU_96,
    DGX_A100_MIG,
    DGX_A100_MIG_1G,
    DGX_H100,
    GPUS,
    L40S_4X_SLICED,
    MIG_MEMORY,
    T4_N1,
)
from pools.fleet.dcgm import (
    ACTIVITY_LABEL,
    FB_FREE,
    FB_USED,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    METRICS,
    Behaviour,
    GpuSample,
    escape_label_value,
    exposition,
    gpu_samples,
    gpu_uuid,
    pod_activity,
    pod_behaviour,
)
from pools.fleet.nodes import MIX_SITE, node_object
from pools.fleet.streams import BASE_TIME

T0 = BASE_TIME
GPU = "nvidia.com/gpu"
UUID_FORMAT = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def node(name, kind, index=0):
    return node_object(1, name, kind, index=index, site=MIX_SITE)


def gpu_pod(name, node_name, gpus=1, *, resource=GPU, namespace="team-a", created="2025-11-21T08:00:00Z", **extra):
    """A pod holding ``gpus`` of ``resource`` on ``node_name`` (its GPU container is "user", after a sidecar)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "creationTimestamp": created,
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "sidecar", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "user", "resources": {"requests": {resource: str(gpus)}, "limits": {resource: str(gpus)}}},
            ],
        },
        "status": {"phase": extra.get("phase", "Running")},
    }


def pod_of(behaviour, node_name, gpus=1, *, start=0, **options):
    """The first pod named ``<behaviour>-<n>`` (n from ``start``) that behaves as asked."""
    for number in range(start, start + 1000):
        pod = gpu_pod(f"{behaviour}-{number}", node_name, gpus, **options)
        if pod_behaviour(pod) == behaviour:
            return pod
    raise AssertionError(f"no {behaviour} pod in 1000 names")


def by_pod(samples):
    found = defaultdict(list)
    for sample in samples:
        if sample.pod:
            found[(sample.namespace, sample.pod)].append(sample)
    return found


@pytest.fixture(scope="module")
def fleet_state():
    fleet = Fleet(seed=7, size=60)
    nodes, pods, _ = fleet.state(T0)
    return nodes, pods


# -- determinism -------------------------------------------------------------------------------------------------------


def test_the_same_moment_gives_the_same_text_and_another_moment_other_values(fleet_state):
    nodes, pods = fleet_state
    text = exposition(gpu_samples(nodes, pods, T0))
    assert exposition(gpu_samples(nodes, pods, T0)) == text
    fresh_nodes, fresh_pods, _ = Fleet(seed=7, size=60).state(T0)
    assert exposition(gpu_samples(fresh_nodes, fresh_pods, T0)) == text  # nothing depends on the process
    assert exposition(gpu_samples(nodes, pods, T0 + 15)) != text
    assert exposition(gpu_samples(nodes, list(reversed(pods)), T0)) == text  # nor on the order of the pods


def test_values_are_what_pod_activity_says(fleet_state):
    nodes, pods = fleet_state
    pod_objects = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
    for t in (T0, T0 + 7.5, T0 + 300):
        for identity, samples in by_pod(gpu_samples(nodes, pods, t)).items():
            pod = pod_objects[identity]
            expected = sorted(pod_activity(pod, ordinal, t) for ordinal in range(len(samples)))
            assert sorted(sample.util for sample in samples) == expected
            assert {sample.behaviour for sample in samples} == {pod_behaviour(pod).value}


# -- devices ---------------------------------------------------------------------------------------------------------


def test_one_sample_per_gpu_mig_instance_and_time_sliced_share():
    nodes = [
        node("h100-001", DGX_H100),
        node("t4-001", T4_N1, 1),
        node("l40s-ts-001", L40S_4X_SLICED, 2),
        node("a100-mig-001", DGX_A100_MIG, 3),
        node("a100-mig1g-001", DGX_A100_MIG_1G, 4),
    ]
    samples = gpu_samples(nodes, [], T0)
    host = defaultdict(list)
    for sample in samples:
        host[sample.hostname].append(sample)
    assert [s.gpu for s in host["h100-001"]] == list(range(8))
    assert [s.device for s in host["h100-001"]] == [f"nvidia{i}" for i in range(8)]
    assert {s.model for s in host["h100-001"]} == {GPUS["H100"].product}
    assert len(host["t4-001"]) == 4
    # time-slicing: 4 GPUs x 4 replicas, each share with its vgpu number and a nominal quarter of the memory
    shares = host["l40s-ts-001"]
    assert [(s.gpu, s.vgpu) for s in shares] == [(g, r) for g in range(4) for r in range(4)]
    assert {s.memory_mib for s in shares} == {GPUS["L40S"].memory_mib // 4}
    # MIG 1g x 56: 7 instances on each of 8 GPUs, numbered from 1 on each GPU
    instances = host["a100-mig1g-001"]
    assert len(instances) == 56 and {s.gpu_instance_profile for s in instances} == {"1g.10gb"}
    assert Counter(s.gpu for s in instances) == dict.fromkeys(range(8), 7)
    assert {s.gpu_instance_id for s in instances if s.gpu == 3} == set(range(1, 8))
    assert {s.memory_mib for s in instances} == {MIG_MEMORY["mig-1g.10gb"]}
    # custom MIG: 14 x 3g and 7 x 1g fit on 7 GPUs (3g + 3g + 1g each); the eighth GPU is reported whole
    mixed = host["a100-mig-001"]
    assert Counter(s.gpu_instance_profile for s in mixed) == {"3g.40gb": 14, "1g.10gb": 7, "": 1}
    assert all(sum(int(s.gpu_instance_profile[0]) for s in mixed if s.gpu == g) == 7 for g in range(7))
    assert [s for s in mixed if not s.gpu_instance_profile][0].gpu == 7
    # the node without GPUs has no samples
    assert gpu_samples([node("cpu-001", CPU_96)], [], T0) == []


def test_uuids_are_stable_unique_and_shaped_like_nvidias():
    nodes = [node(f"h100-{i:03d}", DGX_H100, i) for i in range(1, 6)] + [node("a100-mig-001", DGX_A100_MIG, 6)]
    samples = gpu_samples(nodes, [], T0)
    physical = {(s.hostname, s.gpu): s.uuid for s in samples}
    assert len(set(physical.values())) == len(physical) == 48
    assert all(UUID_FORMAT.match(uuid) for uuid in physical.values())
    assert all(gpu_uuid(host, gpu) == uuid for (host, gpu), uuid in physical.items())
    # the same on every call, every seed and every moment: a function of (node name, index) only
    other_seed = [node_object(99, f"h100-{i:03d}", DGX_H100, index=i, site=MIX_SITE) for i in range(1, 6)]
    assert {(s.hostname, s.gpu): s.uuid for s in gpu_samples(other_seed, [], T0 + 999)}.items() <= physical.items()
    # a MIG instance carries its parent GPU's UUID
    assert {s.uuid for s in samples if s.hostname == "a100-mig-001" and s.gpu == 0} == {physical[("a100-mig-001", 0)]}


def test_framebuffer_used_plus_free_is_the_devices_memory_and_values_stay_in_range(fleet_state):
    nodes, pods = fleet_state
    for t in (T0, T0 + 60, T0 + 3600):
        for sample in gpu_samples(nodes, pods, t):
            assert sample.fb_used + sample.fb_free == sample.memory_mib > 0
            assert 0 <= sample.fb_used <= sample.memory_mib
            assert 0 <= sample.util <= 100 and isinstance(sample.util, int)
            assert 0 <= sample.gr_engine_active <= 1
            assert (sample.gr_engine_active == 0) == (sample.util == 0)
            if not sample.pod:
                assert (sample.util, sample.fb_used, sample.namespace, sample.container, sample.behaviour) == (
                    0,
                    0,
                    "",
                    "",
                    "",
                )
            else:
                assert sample.container == "user" and sample.namespace


def test_whole_gpu_memory_comes_from_the_node_or_the_catalogue():
    h100 = node("h100-001", DGX_H100)
    assert {s.memory_mib for s in gpu_samples([h100], [], T0)} == {GPUS["H100"].memory_mib}
    del h100["metadata"]["labels"]["nvidia.com/gpu.memory"]  # a node read from a cluster without that label
    assert {s.memory_mib for s in gpu_samples([h100], [], T0)} == {GPUS["H100"].memory_mib}


# -- allocation --------------------------------------------------------------------------------------------------------


def test_each_pod_holds_as_many_devices_as_it_requests_in_a_fleet(fleet_state):
    nodes, pods = fleet_state
    held = Counter((s.namespace, s.pod) for s in gpu_samples(nodes, pods, T0) if s.pod)
    wanted = {}
    for pod in pods:
        for container in pod["spec"]["containers"]:
            for resource, value in container["resources"]["requests"].items():
                if resource == GPU or resource.startswith("nvidia.com/mig-"):
                    key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
                    wanted[key] = wanted.get(key, 0) + int(value)
    assert held == wanted and len(wanted) > 20
    mig_pods = {s.pod for s in gpu_samples(nodes, pods, T0) if s.gpu_instance_profile and s.pod}
    shared_pods = {s.pod for s in gpu_samples(nodes, pods, T0) if s.vgpu is not None and s.pod}
    assert mig_pods and shared_pods  # the catalogue's MIG and time-sliced nodes are busy too


def test_pods_get_disjoint_aligned_blocks_oldest_first():
    h100 = node("h100-001", DGX_H100)
    pods = [
        gpu_pod("four", "h100-001", 4, created="2025-11-21T08:00:00Z"),
        gpu_pod("two", "h100-001", 2, created="2025-11-21T08:01:00Z"),
        gpu_pod("one", "h100-001", 1, created="2025-11-21T08:02:00Z"),
        gpu_pod("late", "h100-001", 4, created="2025-11-21T08:03:00Z"),  # only one GPU is left for it
        gpu_pod("elsewhere", "h100-002", 2),
        gpu_pod("done", "h100-001", 8, phase="Succeeded"),
        gpu_pod("cpu-only", "h100-001", 0),
    ]
    samples = gpu_samples([h100], pods, T0)
    devices = defaultdict(list)
    for sample in samples:
        devices[sample.pod].append(sample.gpu)
    assert sorted(len(devices[name]) for name in ("four", "two", "one", "late")) == [1, 1, 2, 4]
    assert len(devices["late"]) == 1
    assert devices["four"] in ([0, 1, 2, 3], [4, 5, 6, 7])
    assert devices["two"][0] % 2 == 0 and devices["two"][1] == devices["two"][0] + 1
    assert "elsewhere" not in devices and "done" not in devices and "cpu-only" not in devices
    assert sum(len(gpus) for name, gpus in devices.items() if name) == 8
    # a younger pod never takes an older pod's devices: without "late" the others keep theirs
    again = defaultdict(list)
    for sample in gpu_samples([h100], pods[:3], T0):
        again[sample.pod].append(sample.gpu)
    assert all(again[name] == devices[name] for name in ("four", "two", "one"))


def test_mig_and_time_sliced_pods_hold_instances_and_shares():
    mig = node("a100-mig-001", DGX_A100_MIG)
    sliced = node("l40s-ts-001", L40S_4X_SLICED, 1)
    pods = [
        gpu_pod("small", "a100-mig-001", 2, resource="nvidia.com/mig-1g.10gb"),
        gpu_pod("big", "a100-mig-001", 1, resource="nvidia.com/mig-3g.40gb"),
        gpu_pod("share", "l40s-ts-001", 3),
    ]
    samples = gpu_samples([mig, sliced], pods, T0)
    assert {s.gpu_instance_profile for s in samples if s.pod == "small"} == {"1g.10gb"}
    assert [s.gpu_instance_profile for s in samples if s.pod == "big"] == ["3g.40gb"]
    shares = [s for s in samples if s.pod == "share"]
    assert len(shares) == 3 and all(s.vgpu is not None for s in shares)


# -- behaviour ---------------------------------------------------------------------------------------------------------


def test_about_a_fifth_of_the_pods_are_idle_a_half_busy_a_quarter_bursty():
    counts = Counter(pod_behaviour(gpu_pod(f"job-{n}", "n", namespace=f"ns-{n % 7}")) for n in range(6000))
    assert abs(counts[Behaviour.IDLE] / 6000 - 0.20) < 0.025
    assert abs(counts[Behaviour.BUSY] / 6000 - 0.55) < 0.025
    assert abs(counts[Behaviour.BURSTY] / 6000 - 0.25) < 0.025


def test_an_idle_pods_gpus_are_at_zero_all_its_life_and_a_busy_pods_never():
    idle = pod_of(Behaviour.IDLE, "h100-001", 2)
    busy = pod_of(Behaviour.BUSY, "h100-001", 4)
    h100 = node("h100-001", DGX_H100)
    for t in range(int(T0), int(T0) + 4 * 3600, 15):
        samples = gpu_samples([h100], [idle, busy], t)
        assert [s.util for s in samples if s.pod == idle["metadata"]["name"]] == [0, 0]
        busy_values = [s.util for s in samples if s.pod == busy["metadata"]["name"]]
        assert len(busy_values) == 4 and all(70 <= value <= 100 for value in busy_values)
    idle_memory = {s.fb_used for s in gpu_samples([h100], [idle], T0) if s.pod}
    assert all(0 < used < GPUS["H100"].memory_mib for used in idle_memory)  # it holds memory it does not use


def test_a_pod_that_declares_its_activity_behaves_so_whatever_its_hash():
    h100 = node("h100-001", DGX_H100)
    for declared in Behaviour:
        for pod in (pod_of(other, "h100-001", 2) for other in Behaviour if other != declared):
            pod["metadata"]["labels"] = {ACTIVITY_LABEL: declared.value}
            assert pod_behaviour(pod) == declared
            samples = [s for s in gpu_samples([h100], [pod], T0) if s.pod]
            assert {s.behaviour for s in samples} == {declared.value}
    notebook = pod_of(Behaviour.BUSY, "h100-001", 2)
    notebook["metadata"]["labels"] = {ACTIVITY_LABEL: "idle"}
    assert {pod_activity(notebook, ordinal, t) for ordinal in (0, 1) for t in range(int(T0), int(T0) + 3600, 15)} == {0}
    notebook["metadata"]["labels"] = {ACTIVITY_LABEL: "sleepy"}  # not a behaviour: the hash decides
    assert pod_behaviour(notebook) == Behaviour.BUSY


def test_busy_values_wander_a_little():
    busy = pod_of(Behaviour.BUSY, "h100-001")
    values = [pod_activity(busy, 0, t) for t in range(int(T0), int(T0) + 600, 5)]
    assert len(set(values)) > 5 and max(values) - min(values) <= 16


def test_a_bursty_pod_alternates_busy_phases_of_2_to_5_minutes_with_idle_ones_of_2_to_8():
    for start in (0, 50, 100):
        bursty = pod_of(Behaviour.BURSTY, "h100-001", start=start)
        runs = []  # (busy?, length in seconds), sampled every second over 2 hours
        for t in range(int(T0), int(T0) + 7200):
            busy = pod_activity(bursty, 0, t) > 0
            if runs and runs[-1][0] == busy:
                runs[-1][1] += 1
            else:
                runs.append([busy, 1])
        inner = runs[1:-1]  # the first and last runs are cut by the window
        assert len(inner) >= 8
        assert all(120 <= length <= 300 for busy, length in inner if busy)
        assert all(120 <= length <= 480 for busy, length in inner if not busy)
        # all of a pod's GPUs burst together
        assert all(
            (pod_activity(bursty, 0, t) > 0) == (pod_activity(bursty, 3, t) > 0)
            for t in range(int(T0), int(T0) + 1800, 7)
        )


def test_the_idle_pods_of_a_node_are_found_idle_by_the_engine():
    """Scrape a node every 15 s for 20 minutes, as Prometheus would, and ask the engine which GPUs are idle."""
    h100 = node("h100-001", DGX_H100)
    idle = pod_of(Behaviour.IDLE, "h100-001", 2)
    busy = pod_of(Behaviour.BUSY, "h100-001", 4)
    series = defaultdict(list)
    owners = {}
    for t in range(int(T0), int(T0) + 1200 + 1, 15):
        for sample in gpu_samples([h100], [idle, busy], t):
            series[(sample.uuid, sample.pod)].append((t, sample.util))
            owners[(sample.uuid, sample.pod)] = sample
    idle_gpus = {}
    for (_, pod_name), samples in series.items():
        found = idle_for(quiet_since(samples, T0 + 1200), T0 + 1200)
        if pod_name and found is not None:
            idle_gpus.setdefault(pod_name, []).append(found)
    assert idle_gpus == {idle["metadata"]["name"]: [1200, 1200]}


# -- the text format ---------------------------------------------------------------------------------------------------


def test_the_exposition_parses_as_prometheus_text_with_the_exporters_names(fleet_state):
    nodes, pods = fleet_state
    samples = gpu_samples(nodes, pods, T0)
    text = exposition(samples)
    assert text.endswith("\n") and not text.endswith("\n\n")
    families = {family.name: family for family in text_string_to_metric_families(text)}
    assert set(families) == {name for name, _ in METRICS} == {GPU_UTIL, FB_USED, FB_FREE, GR_ENGINE_ACTIVE}
    assert all(family.type == "gauge" and family.documentation for family in families.values())
    mig = [s for s in samples if s.gpu_instance_id is not None]
    assert mig and len(families[GPU_UTIL].samples) == len(samples) - len(mig)  # no GPU_UTIL for MIG instances
    assert len(families[FB_USED].samples) == len(families[GR_ENGINE_ACTIVE].samples) == len(samples)
    lines = text.splitlines()
    for name, _ in METRICS:
        at = lines.index(f"# TYPE {name} gauge")
        assert lines[at - 1].startswith(f"# HELP {name} ")

    def identity(labels):
        return labels["Hostname"], labels["gpu"], labels.get("GPU_I_ID", ""), labels.get("vgpu", "")

    expected = {identity(_labels(s)): s for s in samples}
    assert len(expected) == len(samples)  # the labels tell every device apart
    for metric in families[FB_USED].samples:
        sample = expected[identity(metric.labels)]
        assert metric.labels == _labels(sample) and metric.value == sample.fb_used
    for metric in families[GR_ENGINE_ACTIVE].samples:
        assert metric.value == expected[identity(metric.labels)].gr_engine_active
    with_util = {
        family.name: family for family in text_string_to_metric_families(exposition(samples, mig_gpu_util=True))
    }
    assert len(with_util[GPU_UTIL].samples) == len(samples)


def _labels(sample: GpuSample) -> dict:
    labels = {"gpu": str(sample.gpu), "UUID": sample.uuid, "device": sample.device, "modelName": sample.model}
    if sample.gpu_instance_id is not None:
        labels |= {"GPU_I_PROFILE": sample.gpu_instance_profile, "GPU_I_ID": str(sample.gpu_instance_id)}
    labels["Hostname"] = sample.hostname
    if sample.vgpu is not None:
        labels["vgpu"] = str(sample.vgpu)
    if sample.pod:
        labels |= {"container": sample.container, "namespace": sample.namespace, "pod": sample.pod}
    return labels


def test_label_values_are_escaped():
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert escape_label_value("plain-value") == "plain-value"
    awkward = 'host\\with "quotes"\nand a line'
    sample = GpuSample(
        awkward, 0, "GPU-x", "nvidia0", 'Model "X"', "", None, None, 100, "ns", 'p"od', "c\\", "busy", 50, 40, 60, 0.5
    )
    text = exposition([sample])
    assert 'Hostname="host\\\\with \\"quotes\\"\\nand a line"' in text
    assert len([line for line in text.splitlines() if not line.startswith("#")]) == 4  # no raw line feed left
    parsed = {family.name: family.samples[0] for family in text_string_to_metric_families(text)}
    assert parsed[GPU_UTIL].labels["Hostname"] == awkward
    assert parsed[GPU_UTIL].labels["modelName"] == 'Model "X"'
    assert (parsed[GPU_UTIL].labels["pod"], parsed[GPU_UTIL].labels["container"]) == ('p"od', "c\\")
    assert (parsed[GPU_UTIL].value, parsed[FB_USED].value, parsed[FB_FREE].value) == (50, 40, 60)


def test_an_unallocated_device_has_no_pod_labels():
    text = exposition(gpu_samples([node("t4-001", T4_N1)], [], T0))
    assert "pod=" not in text and "namespace=" not in text and 'Hostname="t4-001"' in text


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=T0 - 86400 * 365, max_value=T0 + 86400 * 365, allow_nan=False))
def test_any_moment_gives_consistent_samples(t):
    h100 = node("h100-001", DGX_H100)
    pods = [pod_of(Behaviour.BURSTY, "h100-001", 4), pod_of(Behaviour.BUSY, "h100-001", 2)]
    samples = gpu_samples([h100], pods, t)
    assert samples == gpu_samples([h100], pods, t)
    assert all(s.fb_used + s.fb_free == s.memory_mib and 0 <= s.util <= 100 for s in samples)
    assert all(math.isfinite(s.gr_engine_active) for s in samples)
