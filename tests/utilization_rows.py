"""Idle GPUs and GPU-hours with exact numbers, written as the utilization rounds write them (``QuietGpu``,
``GpuConsumption``), on a backend whose pods ``train-1`` (4 GPUs, pool team-a) and ``train-2`` (2 GPUs, pool
team-b) run in namespace ``default``."""

from __future__ import annotations

from datetime import timedelta

from pools.models import GpuConsumption, QuietGpu

HOUR, DAY = GpuConsumption.Resolution.HOUR, GpuConsumption.Resolution.DAY


def idle_and_hours(backend, now) -> None:
    """train-1: two of its four GPUs idle, for 3h5m and 2h (so the pod for 2h); train-2: one of two, for 2d4h.

    GPU-hours in the hour that began two hours ago: team-a 10 allocated (2.5 idle), all alice's; team-b 7 (4 idle):
    alice 4 (1 idle) and bob 3 (3 idle). Everything in namespace ``default``.
    """
    QuietGpu.objects.bulk_create(
        [
            QuietGpu(
                backend=backend,
                node_name="n1",
                device="GPU-a0",
                namespace="default",
                pod="train-1",
                user="alice",
                project="vision",
                pool="team-a",
                quiet_since=now - timedelta(hours=3, minutes=5),
            ),
            QuietGpu(
                backend=backend,
                node_name="n1",
                device="GPU-a1",
                namespace="default",
                pod="train-1",
                user="alice",
                project="vision",
                pool="team-a",
                quiet_since=now - timedelta(hours=2),
            ),
            QuietGpu(
                backend=backend,
                node_name="n3",
                device="GPU-b0",
                namespace="default",
                pod="train-2",
                user="bob",
                pool="team-b",
                quiet_since=now - timedelta(days=2, hours=4),
            ),
        ]
    )
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    rows = [
        ("team-a", "pool", "team-a", 10, 2.5),
        ("team-a", "user", "alice", 10, 2.5),
        ("team-a", "namespace", "default", 10, 2.5),
        ("team-b", "pool", "team-b", 7, 4),
        ("team-b", "user", "alice", 4, 1),
        ("team-b", "user", "bob", 3, 3),
        ("team-b", "namespace", "default", 7, 4),
    ]
    # The hour's row and its day's, as the utilization rounds write them: a report over a period that holds that
    # whole day (24 hours read soon after midnight) counts the day's row.
    GpuConsumption.objects.bulk_create(
        GpuConsumption(
            backend=backend,
            resolution=resolution,
            start=bucket,
            pool=pool,
            dimension=dimension,
            value=value,
            allocated=allocated,
            idle=idle,
        )
        for resolution, bucket in ((HOUR, start), (DAY, start.replace(hour=0)))
        for pool, dimension, value, allocated, idle in rows
    )


def two_pools_with_idle_gpus(cluster, actor, now):
    """A backend with pools team-a (n1, 8 GPUs, train-1) and team-b (n3, 4 GPUs, train-2), and the rows above."""
    from kube_objects import node, pod

    from pools import services
    from pools.choices import ConfigType

    backend = cluster(
        [
            node("n1", labels={"team": "a"}, gpu=8),
            node("n3", labels={"team": "b"}, gpu=4),
            pod("train-1", node="n1", gpu=4, pool="team-a"),
            pod("train-2", node="n3", gpu=2, pool="team-b"),
        ]
    )
    services.config_apply(
        changes={
            ConfigType.POOL: {
                "team-a": {"backend": backend.name, "node_label": {"key": "team", "value": "a"}},
                "team-b": {"backend": backend.name, "node_label": {"key": "team", "value": "b"}},
            }
        },
        actor=actor,
    )
    idle_and_hours(backend, now)
    return backend
