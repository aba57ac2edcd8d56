"""What `scripts/bench_sync.py` puts into a cluster, and how its child processes talk to the driver.

Shared by the stand-in server (``bench_sync.serve``) and the loader of the real kube-apiserver
(``kube_load.serve``), so that both clusters receive the same workload.
"""

from __future__ import annotations

import signal
import time
import traceback
from collections.abc import Callable

# The label a streamed pod carries: the wall-clock time it was made, for the watch latency measured end to end.
EMITTED = "bench.example.com/emitted-at"


def nodes_by_pool(nodes: list[dict]) -> dict[str, list[str]]:
    """Pool name -> the names of its nodes, from the generator's ``pool.example.com/name`` label."""
    from pools.fleet.layouts import POOL_LABEL

    pools: dict[str, list[str]] = {}
    for node in nodes:
        pool = node["metadata"]["labels"].get(POOL_LABEL)
        if pool:
            pools.setdefault(pool, []).append(node["metadata"]["name"])
    return pools


def stream_pod(name: str, namespace: str, pool: str, node: str) -> dict:
    """A running one-GPU job pod of ``pool`` on ``node``, stamped with the time it is made (``EMITTED``)."""
    requests = {"cpu": "1", "nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"osmo.pool": pool, "osmo.priority": "NORMAL", EMITTED: repr(time.time())},
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": requests}}
            ],
        },
        "status": {"phase": "Running"},
    }


def serve_commands(connection, ready: Callable[[], object], handlers: dict[str, Callable]) -> None:
    """Run a child process's side of the pipe: ``ready()`` once, then ``(command, *args)`` until ``stop``.

    Each answer is ``("ok", value)``, or ``("error", traceback)`` after which the child ends, so the driver
    shows the child's failure instead of waiting for an answer that never comes. Ctrl-C reaches every
    process of the terminal's group: the children ignore it and the driver, which owns them, stops them.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        connection.send(("ok", ready()))
        while True:
            command, *args = connection.recv()
            connection.send(("ok", handlers[command](*args)))
            if command == "stop":
                return
    except EOFError:  # the driver is gone
        return
    except Exception:
        connection.send(("error", traceback.format_exc()))


def other_work(fraction: float, period: float = 0.1) -> None:
    """Child process: other work on the machine, one CPU busy ``fraction`` of every ``period`` at the default
    niceness and asleep for the rest (``--busy``: targets must hold on a normally busy machine, not a quiet one)."""
    while True:
        until = time.perf_counter() + fraction * period
        while time.perf_counter() < until:
            pass
        time.sleep((1 - fraction) * period)
