"""A pod's effective requests are computed once per distinct set of container resources and shared by the pods
that ask the same; what is not plain strings, and what raised warnings, is computed for each pod."""

from decimal import Decimal

from kube_objects import pod

from pools.engine.accounting import pod_resource_requests
from pools.inventory import records
from pools.inventory.records import pod_record


def requests_of(obj: dict) -> tuple:
    record = pod_record(obj, [])
    return record.cpu, record.memory, record.gpu, record.mig_devices


def test_pods_asking_the_same_get_what_each_would_alone():
    shapes = [
        pod("a", gpu=2, cpu="500m", memory="8Gi"),
        pod("b", gpu=2, cpu="500m", memory="8Gi", init_gpu=4),  # the init container asks more
        pod("c", cpu="2", overhead={"cpu": "250m"}),
        pod("d", gpu=2, cpu="500m", memory="8Gi"),
    ]
    shapes[1]["spec"]["initContainers"][0]["restartPolicy"] = "Always"  # a sidecar: counted with the apps
    records._REQUESTS_SEEN.clear()
    seen = [requests_of(obj) for obj in shapes]
    assert len(records._REQUESTS_SEEN) == 3  # a and d share one
    for obj, got in zip(shapes, seen, strict=True):
        effective = pod_resource_requests(obj["spec"])
        assert got[:3] == (effective["cpu"], int(effective["memory"]), effective.get("nvidia.com/gpu", Decimal(0)))
    assert seen[1][2] == 6 and seen[2][0] == Decimal("2.25")
    assert [requests_of(obj) for obj in shapes] == seen  # read from what was remembered


def test_numbers_where_kubernetes_has_strings_are_not_mistaken_for_them():
    as_text, as_number, as_bool = pod("t", gpu=1), pod("n", gpu=1), pod("b", gpu=1)
    as_number["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": 1}}
    as_bool["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": True}}
    warnings = []

    gpus = [pod_record(obj, warnings).gpu for obj in (as_text, as_bool, as_number, as_bool)]

    assert gpus == [1, 0, 1, 0]
    assert len(warnings) == 2 and all("pod default/b" in warning for warning in warnings)


def test_a_bad_quantity_warns_for_every_pod_that_has_it():
    bad = [pod(f"p{i}", cpu="lots") for i in range(3)]
    warnings = []

    assert [pod_record(obj, warnings).cpu for obj in bad] == [0, 0, 0]
    # Each pod asks for it twice, as its request and its limit.
    assert [warning.split(":")[0] for warning in warnings] == [f"pod default/p{i}" for i in range(3) for _ in "rl"]
