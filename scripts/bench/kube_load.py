"""The sync benchmark's cluster in a real kube-apiserver: loaded through the API, then changed and streamed.

`scripts/bench_sync.py --apiserver kube` starts the kube-apiserver and etcd of the integration tests
(``scripts/kube-apiserver.sh``) and runs :func:`serve` in a child process. It loads the cluster the stand-in
server serves (``pools.fleet.layouts.pool_cluster``, same generator and seed) the way a kubelet and a scheduler
would leave it: namespaces and priority classes first, then every node created and its status written through
the status subresource, then every pod likewise, ``workers`` requests in flight. Between runs it removes the
pods it streamed, so that each run starts from the same cluster.
"""

from __future__ import annotations

import json
import os
import queue
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from workload import nodes_by_pool, serve_commands, stream_pod

STREAM_NAMESPACE = "bench-stream"
TOUCHED = "bench.example.com/touched"
MERGE_PATCH = "application/merge-patch+json"
# Set by the API server; an object created with them is refused (resourceVersion) or they are overwritten.
SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "selfLink", "managedFields")


def api_client(kubeconfig: str, connections: int):
    """An API client for ``kubeconfig`` with a connection pool as large as the requests kept in flight."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)


def _done(response) -> None:
    """Read an unparsed response to its end, so its connection goes back to the pool."""
    response.data  # noqa: B018 - reading the body is the point
    response.release_conn()


def creatable(obj: dict) -> tuple[dict, dict]:
    """``(body to create, status to write afterwards)`` of a generated Node or Pod.

    The fields the API server sets are dropped, and so are a pod's ``priority`` and ``preemptionPolicy``:
    the Priority admission plugin fills them in from the priority class and refuses a pod that brings its own.
    """
    metadata = {key: value for key, value in obj["metadata"].items() if key not in SERVER_FIELDS}
    spec = {key: value for key, value in (obj.get("spec") or {}).items() if key not in ("priority", "preemptionPolicy")}
    return {"apiVersion": "v1", "kind": obj["kind"], "metadata": metadata, "spec": spec}, obj.get("status") or {}


class KubeLoad:
    """Loads, changes and streams pods into the API server of ``kubeconfig``, ``workers`` requests at a time."""

    def __init__(self, kubeconfig: str, workers: int = 8):
        from kubernetes import client

        self.workers = workers
        self.api_client = api_client(kubeconfig, workers + 2)
        self.core = client.CoreV1Api(self.api_client)
        self.scheduling = client.SchedulingV1Api(self.api_client)
        self.live_pods: list[tuple[str, str]] = []

    def _parallel(self, function, items) -> None:
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kube-load") as pool:
            for _ in pool.map(function, items):
                pass

    def load(self, nodes: list[dict], pods: list[dict]) -> None:
        """Create the namespaces, priority classes, nodes and pods of a generated cluster, with their status."""
        response = self.core.list_namespace(_preload_content=False)
        existing = {item["metadata"]["name"] for item in json.loads(response.data)["items"]}  # kube-system...
        for namespace in sorted(({pod["metadata"]["namespace"] for pod in pods} | {STREAM_NAMESPACE}) - existing):
            _done(self.core.create_namespace({"metadata": {"name": namespace}}, _preload_content=False))
        classes = {
            pod["spec"]["priorityClassName"]: pod["spec"].get("priority", 0)
            for pod in pods
            if pod["spec"].get("priorityClassName") and not pod["spec"]["priorityClassName"].startswith("system-")
        }
        for name, value in sorted(classes.items()):
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
            _done(self.scheduling.create_priority_class({**body, "value": value}, _preload_content=False))
        self._parallel(self._create_node, nodes)
        self._parallel(self._create_pod, pods)
        self.live_pods = [
            (pod["metadata"]["namespace"], pod["metadata"]["name"])
            for pod in pods
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def _create_node(self, node: dict) -> None:
        body, status = creatable(node)
        _done(self.core.create_node(body, _preload_content=False))
        name = body["metadata"]["name"]
        _done(self.core.patch_node_status(name, {"status": status}, _content_type=MERGE_PATCH, _preload_content=False))

    def _create_pod(self, pod: dict) -> None:
        body, status = creatable(pod)
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        _done(self.core.create_namespaced_pod(namespace, body, _preload_content=False))
        _done(
            self.core.patch_namespaced_pod_status(
                name, namespace, {"status": status}, _content_type=MERGE_PATCH, _preload_content=False
            )
        )

    def touch_random_pods(self, fraction: float, rng: random.Random) -> int:
        """Change a label on ``fraction`` of the loaded pods (live ones), so that their resourceVersion moves."""
        picked = rng.sample(self.live_pods, round(len(self.live_pods) * fraction))
        value = str(rng.randrange(1_000_000))

        def touch(key: tuple[str, str]) -> None:
            namespace, name = key
            patch = {"metadata": {"labels": {TOUCHED: value}}}
            _done(
                self.core.patch_namespaced_pod(
                    name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
                )
            )

        self._parallel(touch, picked)
        return len(picked)

    def stream(self, pools: dict[str, list[str]], rate: float, seconds: float, rng: random.Random) -> dict:
        """Create ``rate * seconds`` GPU pods, ``rate`` per second, ``workers`` at a time; returns what was done.

        Each pod is stamped (``EMITTED``) when its request is sent. A pod falls due every ``1 / rate`` s; when
        the server answers slower than that the due pods queue up, and those still queued a second after the
        last fell due are not sent: ``sent / seconds`` is then the rate the server sustained.
        """
        due: queue.Queue = queue.Queue()
        sent, failures, lock = [0], [], threading.Lock()

        def create() -> None:
            while (item := due.get()) is not None:
                name, pool, node = item
                body = stream_pod(name, STREAM_NAMESPACE, pool, node)
                try:
                    _done(self.core.create_namespaced_pod(STREAM_NAMESPACE, body, _preload_content=False))
                except Exception as exc:
                    failures.append(str(exc)[:300])
                    continue
                with lock:
                    sent[0] += 1

        threads = [threading.Thread(target=create, daemon=True) for _ in range(self.workers)]
        for thread in threads:
            thread.start()
        names = sorted(pools)
        total = round(rate * seconds)
        started, scheduled = time.monotonic(), 0
        while scheduled < total:
            for _ in range(min(total, int((time.monotonic() - started) * rate)) - scheduled):
                pool = rng.choice(names)
                due.put((f"stream-{scheduled:06d}", pool, rng.choice(pools[pool])))
                scheduled += 1
            time.sleep(0.005)
        settle = time.monotonic() + 1  # the last pods fell due just now: give the workers a moment to send them
        while not due.empty() and time.monotonic() < settle:
            time.sleep(0.01)
        not_sent = 0
        while True:
            try:
                due.get_nowait()
            except queue.Empty:
                break
            not_sent += 1
        for _ in threads:
            due.put(None)
        for thread in threads:
            thread.join()
        if failures:
            raise RuntimeError(f"{len(failures)} pod creations failed, the first: {failures[0]}")
        return {"sent": sent[0], "seconds": time.monotonic() - started, "not_sent": not_sent}

    def remove_streamed(self) -> int:
        """Delete the streamed pods (one request; no grace period, as no kubelet would confirm it); how many."""
        response = self.core.delete_collection_namespaced_pod(
            STREAM_NAMESPACE, grace_period_seconds=0, _preload_content=False
        )
        deleted = len(json.loads(response.data).get("items") or [])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            response = self.core.list_namespaced_pod(STREAM_NAMESPACE, limit=1, _preload_content=False)
            if not json.loads(response.data).get("items"):
                return deleted
            time.sleep(0.5)
        raise RuntimeError(f"streamed pods still there after 120 s in namespace {STREAM_NAMESPACE}")


def serve(connection, kubeconfig: str, nodes: int, pods: int, seed: int, niceness: int = 0) -> None:
    """Child process: generate the cluster, load it into the API server, then run the driver's commands.

    Commands: ``modify`` (fraction), ``stream`` (rate, seconds), ``reset`` (remove the streamed pods), ``stop``.
    """
    if niceness:
        os.nice(niceness)
    load = KubeLoad(kubeconfig)
    rng = random.Random(seed)
    pools: dict[str, list[str]] = {}

    def ready() -> dict:
        from pools.fleet.layouts import pool_cluster

        node_objects, pod_objects = pool_cluster(nodes=nodes, pods=pods, seed=seed)
        pools.update(nodes_by_pool(node_objects))
        started = time.perf_counter()
        load.load(node_objects, pod_objects)
        seconds = time.perf_counter() - started
        requests = 2 * (len(node_objects) + len(pod_objects))
        return {"load_s": seconds, "requests": requests, "live_pods": len(load.live_pods)}

    serve_commands(
        connection,
        ready,
        {
            "modify": lambda fraction: load.touch_random_pods(fraction, rng),
            "stream": lambda rate, seconds: load.stream(pools, rate, seconds, rng),
            "reset": load.remove_streamed,
            "stop": lambda: None,
        },
    )
