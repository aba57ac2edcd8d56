#!/usr/bin/env python
"""Self-check of the fake kube-apiserver with the official ``kubernetes`` client, then full-size timings.

1. Small cluster (200 nodes, 3,000 pods), server in this process: paginated raw and typed lists, field
   selectors, a raw watch receiving 100 pod events applied from another thread (in order), the typed
   ``watch.Watch().stream``, a PATCH seen on a node watch, 410 Expired, a dropped watch.
2. Full size (5,000 nodes, 150,000 pods), server in a child process (its own CPU and RSS): generation time,
   raw paginated list of all pods (limit 500, fetch + ``json.loads``), typed ``list_pod_for_all_namespaces``
   (limit 500 pages), typed ``list_node``, and the server's RSS.

    .venv/bin/python scripts/bench/selfcheck.py [--no-full] [--nodes N --pods N]

Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import json
import multiprocessing
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for pools.fleet

from fake_apiserver import FakeApiServer  # noqa: E402
from kubernetes import client, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from pools.fleet.layouts import pool_cluster, pool_config  # noqa: E402

TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
FAILURES: list[str] = []


def check(condition: bool, message: str) -> None:
    print(f"  [{'ok' if condition else 'FAIL'}] {message}", flush=True)
    if not condition:
        FAILURES.append(message)


def api_for(url: str) -> client.CoreV1Api:
    cfg = client.Configuration(host=url, api_key={"authorization": "Bearer x"})
    return client.CoreV1Api(client.ApiClient(cfg))


def raw_list(list_fn, limit: int, **kwargs) -> tuple[list[dict], int, int, str]:
    """All items of a raw paginated list: (items, pages, bytes, resourceVersion of the first page)."""
    items: list[dict] = []
    token, pages, size, rv = None, 0, 0, ""
    for _ in range(100_000):  # bounded: more pages than any test list has
        resp = list_fn(limit=limit, _continue=token, _preload_content=False, **kwargs)
        data = resp.data
        size += len(data)
        page = json.loads(data)
        pages += 1
        rv = rv or page["metadata"]["resourceVersion"]
        items.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            break
    return items, pages, size, rv


def typed_list(list_fn, limit: int, **kwargs) -> tuple[list, int]:
    items: list = []
    token, pages = None, 0
    for _ in range(100_000):
        page = list_fn(limit=limit, _continue=token, **kwargs)
        pages += 1
        items.extend(page.items)
        token = page.metadata._continue
        if not token:
            break
    return items, pages


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


# --- part 1 --------------------------------------------------------------------------------------------


def small_checks() -> None:
    print("== small cluster: 200 nodes, 3,000 pods", flush=True)
    (nodes, pods), seconds = timed(pool_cluster, nodes=200, pods=3000)
    print(f"  generated in {seconds:.2f} s")
    bundle = pool_config()
    pairs = sum(len(pool["platforms"]) for pool in bundle["pools"].values())
    check(pairs == 150 and len(bundle["podTemplates"]) == 53, f"pool_config: {pairs} (pool, platform) pairs")
    check(pool_cluster(nodes=200, pods=3000) == (nodes, pods), "generation is deterministic")
    live = sum(1 for pod in pods if pod["status"]["phase"] not in ("Succeeded", "Failed"))
    pod_names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
    check(len(set(pod_names)) == len(pods), "pod names are unique")

    with FakeApiServer(nodes, pods) as server:
        api = api_for(server.url)
        print(f"  server on {server.url}, resourceVersion {server.resource_version}")

        (items, pages, size, _rv), seconds = timed(raw_list, api.list_node, 50)
        check(len(items) == 200 and pages == 4, f"raw list_node limit 50: {len(items)} nodes, {pages} pages")
        (items, pages, size, rv0), seconds = timed(raw_list, api.list_pod_for_all_namespaces, 500)
        keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items]
        check(
            len(items) == 3000 and pages == 6 and keys == sorted(set(keys)),
            f"raw list pods limit 500: {len(items)} pods, {pages} pages, {size / 1e6:.1f} MB, sorted, {seconds:.3f} s",
        )
        first = json.loads(api.list_pod_for_all_namespaces(limit=500, _preload_content=False).data)
        check(first["metadata"].get("remainingItemCount") == 2500, "remainingItemCount on the first page")
        items, pages, _size, _rv = raw_list(api.list_pod_for_all_namespaces, 500, field_selector=TERMINAL)
        check(len(items) == live, f"fieldSelector {TERMINAL}: {len(items)} pods (expected {live})")
        items, _pages, _size, _rv = raw_list(api.list_pod_for_all_namespaces, 500, label_selector="osmo.pool=pool-03")
        expected = sum(1 for p in pods if p["metadata"]["labels"].get("osmo.pool") == "pool-03")
        check(len(items) == expected, f"labelSelector osmo.pool=pool-03: {len(items)} pods")
        namespace = pods[0]["metadata"]["namespace"]
        items = json.loads(api.list_namespaced_pod(namespace, _preload_content=False).data)["items"]
        check(len(items) == sum(1 for p in pods if p["metadata"]["namespace"] == namespace), "list_namespaced_pod")

        (typed, pages), seconds = timed(typed_list, api.list_pod_for_all_namespaces, 500)
        check(
            len(typed) == 3000 and isinstance(typed[0], client.V1Pod) and typed[0].spec.node_name,
            f"typed list_pod_for_all_namespaces limit 500: {len(typed)} V1Pod, {pages} pages, {seconds:.3f} s",
        )
        typed_nodes, seconds = timed(api.list_node)
        gpus = typed_nodes.items[0].status.allocatable.get("nvidia.com/gpu")
        check(len(typed_nodes.items) == 200 and gpus, f"typed list_node (unpaginated): allocatable gpu {gpus}")
        pod = api.read_namespaced_pod(pods[5]["metadata"]["name"], pods[5]["metadata"]["namespace"])
        check(pod.metadata.uid == pods[5]["metadata"]["uid"], "read_namespaced_pod")
        try:
            api.read_node("no-such-node")
            check(False, "read_node of a missing node raises 404")
        except ApiException as exc:
            check(exc.status == 404, "read_node of a missing node raises 404")

        raw_watch_in_order(server, api, pods)
        churn_on_watch(server, api, pods)
        typed_watch(server, api, rv0)
        selector_watch(server, api, pods)
        patch_seen_on_watch(server, api, nodes)
        expired(server, api, rv0)
        dropped(server, api)
    check(True, "server stopped")


def raw_watch_in_order(server: FakeApiServer, api: client.CoreV1Api, pods: list[dict]) -> None:
    rv = server.resource_version
    sent: dict[int, float] = {}

    def driver() -> None:
        time.sleep(1.2)  # let a bookmark through first
        for seq in range(100):
            pod = copy.deepcopy(pods[seq * 17])
            pod["metadata"]["labels"]["bench.example.com/seq"] = str(seq)
            sent[seq] = time.perf_counter()
            server.apply("Pod", "MODIFIED", pod)
            if seq % 10 == 9:
                time.sleep(0.01)

    resp = api.list_pod_for_all_namespaces(
        watch=True, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=10, _preload_content=False
    )
    thread = threading.Thread(target=driver, daemon=True)
    thread.start()
    seqs, rvs, latencies, bookmarks = [], [], [], 0
    for line in resp:  # ends at timeoutSeconds at the latest
        if not line.strip():
            continue
        event = json.loads(line)
        if event["type"] == "BOOKMARK":
            bookmarks += 1
            continue
        seq = int(event["object"]["metadata"]["labels"]["bench.example.com/seq"])
        latencies.append(time.perf_counter() - sent[seq])
        seqs.append(seq)
        rvs.append(int(event["object"]["metadata"]["resourceVersion"]))
        if len(seqs) == 100:
            break
    resp.close()
    resp.release_conn()
    thread.join(5)
    check(
        seqs == list(range(100)) and rvs == list(range(int(rv) + 1, int(rv) + 101)),
        f"raw watch: {len(seqs)} MODIFIED events in order, resourceVersions {rvs[:1]}..{rvs[-1:]}",
    )
    check(bookmarks >= 1, f"raw watch: {bookmarks} BOOKMARK before the events")
    if latencies:
        print(
            f"  apply -> client latency: median {statistics.median(latencies) * 1e3:.2f} ms,"
            f" max {max(latencies) * 1e3:.2f} ms"
        )
    # readline() on a raw watch response
    resp = api.list_pod_for_all_namespaces(watch=True, resource_version=rv, timeout_seconds=5, _preload_content=False)
    lines = [resp.readline() for _ in range(3)]
    resp.close()
    resp.release_conn()
    check(all(json.loads(line)["type"] == "MODIFIED" for line in lines), "raw watch: resp.readline() gives events")


def churn_on_watch(server: FakeApiServer, api: client.CoreV1Api, pods: list[dict]) -> None:
    rv = server.resource_version
    changed = server.modify_random_pods(0.01, random.Random(7))
    new_pod = copy.deepcopy(pods[0])
    new_pod["metadata"]["name"] = "bench-added"
    added = server.apply("Pod", "ADDED", new_pod)
    server.apply("Pod", "DELETED", {"metadata": {"name": "bench-added", "namespace": added["metadata"]["namespace"]}})
    resp = api.list_pod_for_all_namespaces(watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False)
    types = [json.loads(line)["type"] for line in resp if line.strip()]
    check(
        len(changed) == 30 and types == ["MODIFIED"] * 30 + ["ADDED", "DELETED"],
        f"modify_random_pods(0.01) changed {len(changed)} pods; a watch saw them, then ADDED and DELETED",
    )


def typed_watch(server: FakeApiServer, api: client.CoreV1Api, rv: str) -> None:
    events = []
    stream = watch.Watch().stream(
        api.list_pod_for_all_namespaces, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=2
    )
    for event in stream:
        if event["type"] != "BOOKMARK":
            events.append(event)
    expected = int(server.resource_version) - int(rv)  # every change since rv was a pod change
    ok = len(events) == expected and all(isinstance(e["object"], client.V1Pod) for e in events)
    rvs = [int(e["object"].metadata.resource_version) for e in events]
    check(ok and rvs == sorted(rvs), f"watch.Watch().stream: {len(events)} typed events in order")


def selector_watch(server: FakeApiServer, api: client.CoreV1Api, pods: list[dict]) -> None:
    rv = server.resource_version
    running = next(p for p in pods if p["status"]["phase"] == "Running")
    done = copy.deepcopy(running)
    done["status"]["phase"] = "Succeeded"
    server.apply("Pod", "MODIFIED", done)
    resp = api.list_pod_for_all_namespaces(
        watch=True, resource_version=rv, field_selector=TERMINAL, timeout_seconds=1, _preload_content=False
    )
    events = [json.loads(line) for line in resp if line.strip()]
    types = [e["type"] for e in events]
    check(types == ["DELETED"], f"watch with {TERMINAL}: a pod that succeeded arrives as {types}")


def patch_seen_on_watch(server: FakeApiServer, api: client.CoreV1Api, nodes: list[dict]) -> None:
    rv = server.resource_version
    name = nodes[7]["metadata"]["name"]
    patched = api.patch_node(name, {"metadata": {"labels": {"pool.example.com/name": "pool-99"}}})
    check(patched.metadata.labels["pool.example.com/name"] == "pool-99", "patch_node (strategic merge) sets a label")
    patched = api.patch_node(
        name,
        {"metadata": {"labels": {"pool.example.com/name": None}}},
        _content_type="application/merge-patch+json",
    )
    check("pool.example.com/name" not in patched.metadata.labels, "patch_node (merge patch) removes a label")
    try:
        api.patch_node(name, {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}})
        check(False, "patch with a stale resourceVersion gets 409")
    except ApiException as exc:
        check(exc.status == 409, "patch with a stale resourceVersion gets 409")
    resp = api.list_node(watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False)
    events = [json.loads(line) for line in resp if line.strip()]
    check(
        [e["type"] for e in events] == ["MODIFIED", "MODIFIED"] and events[0]["object"]["metadata"]["name"] == name,
        "both patches arrive on a node watch",
    )


def expired(server: FakeApiServer, api: client.CoreV1Api, old_rv: str) -> None:
    server.expire()
    resp = api.list_pod_for_all_namespaces(
        watch=True, resource_version=old_rv, timeout_seconds=5, _preload_content=False
    )
    events = [json.loads(line) for line in resp if line.strip()]
    check(
        len(events) == 1 and events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410,
        "expire(): a raw watch from an old resourceVersion gets ERROR 410 and the stream ends",
    )
    try:
        for _event in watch.Watch().stream(api.list_pod_for_all_namespaces, resource_version=old_rv, timeout_seconds=5):
            pass
        check(False, "watch.Watch().stream raises ApiException 410")
    except ApiException as exc:
        check(exc.status == 410, "watch.Watch().stream raises ApiException 410")
    resp = api.list_pod_for_all_namespaces(
        watch=True, resource_version=server.resource_version, timeout_seconds=1, _preload_content=False
    )
    check([line for line in resp if line.strip()] == [], "a watch from the current resourceVersion still works")


def dropped(server: FakeApiServer, api: client.CoreV1Api) -> None:
    resp = api.list_pod_for_all_namespaces(
        watch=True, resource_version=server.resource_version, timeout_seconds=10, _preload_content=False
    )
    timer = threading.Timer(0.3, server.drop_watches)
    timer.start()
    start = time.perf_counter()
    outcome = "clean end"
    try:
        for _line in resp:
            pass
    except Exception as exc:  # urllib3 ProtocolError: the connection broke mid-stream
        outcome = type(exc).__name__
    seconds = time.perf_counter() - start
    timer.join()
    check(seconds < 3, f"drop_watches(): the open watch ended after {seconds:.2f} s ({outcome})")


# --- part 2 --------------------------------------------------------------------------------------------


def _serve(nodes: int, pods: int, conn) -> None:
    """Child process: generate, serve, report, wait for 'stop' (bounded)."""
    cluster, seconds = timed(pool_cluster, nodes=nodes, pods=pods)
    server, load = timed(FakeApiServer, *cluster)
    del cluster
    _, warm = timed(server.start)
    conn.send({"url": server.url, "generate": seconds, "load": load, "warm": warm})
    conn.poll(3600)
    server.stop()


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    values = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(("VmRSS:", "VmHWM:")):
                values[line.split(":")[0]] = int(line.split()[1]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


@contextlib.contextmanager
def gc_disabled():
    """Cyclic GC off (and the heap frozen) for the duration, the way a big decode is best run."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()
        gc.collect()


def fetch_only(list_fn, limit: int) -> tuple[int, int]:
    """Page through without decoding items (only the page's metadata is looked at): (pages, bytes)."""
    token, pages, size = None, 0, 0
    for _ in range(100_000):
        data = list_fn(limit=limit, _continue=token, _preload_content=False).data
        pages += 1
        size += len(data)
        # the list metadata comes first: {"kind":..,"apiVersion":..,"metadata":{..},"items":[
        head = data[: data.index(b',"items":[')] + b"}"
        token = json.loads(head)["metadata"].get("continue")
        if not token:
            break
    return pages, size


def full_timings(nodes: int, pods: int, typed: bool) -> None:
    print(f"== full size: {nodes:,} nodes, {pods:,} pods (server in a child process)", flush=True)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(nodes, pods, child), daemon=True)
    start = time.perf_counter()
    process.start()
    if not parent.poll(600):
        check(False, "server child started within 600 s")
        process.kill()
        return
    info = parent.recv()
    print(f"  pool_cluster: {info['generate']:.1f} s; load into the server: {info['load']:.1f} s;", end="")
    print(f" serialise every object (warm): {info['warm']:.1f} s")
    print(f"  child ready after {time.perf_counter() - start:.1f} s; server RSS {rss_mb(process.pid)[0]:,.0f} MB")
    api = api_for(info["url"])
    pods_api = api.list_pod_for_all_namespaces
    try:
        (pages, size), seconds = timed(fetch_only, pods_api, 500)
        print(f"  raw pods, limit 500, fetch only (no decode): {seconds:.2f} s, {pages} pages, {size / 1e6:,.0f} MB")
        (items, pages, size, _rv), seconds = timed(raw_list, pods_api, 500)
        check(len(items) == pods, f"raw paginated list of all pods, limit 500, fetch + json.loads: {len(items):,} pods")
        print(f"    {seconds:.2f} s, {pages} pages, {size / 1e6:,.0f} MB ({size / len(items):,.0f} B/pod)")
        del items
        with gc_disabled():
            (items, pages, size, _rv), seconds = timed(raw_list, pods_api, 500)
            del items
        print(f"  same with the cyclic GC off: {seconds:.2f} s")
        (items, pages, size, _rv), seconds = timed(raw_list, pods_api, 500, field_selector=TERMINAL)
        print(f"  raw paginated list, fieldSelector {TERMINAL}: {len(items):,} pods, {seconds:.2f} s")
        del items
        (items, pages, size, _rv), seconds = timed(raw_list, api.list_node, 500)
        check(len(items) == nodes, f"raw paginated list of all nodes, limit 500: {len(items):,} nodes")
        print(f"    {seconds:.2f} s, {pages} pages, {size / 1e6:,.0f} MB ({size / len(items):,.0f} B/node)")
        del items
        if typed:
            (items, pages), seconds = timed(typed_list, pods_api, 500)
            check(len(items) == pods, f"typed list_pod_for_all_namespaces, limit 500: {len(items):,} V1Pod")
            print(f"    {seconds:.2f} s, {pages} pages")
            del items
            with gc_disabled():
                (items, pages), seconds = timed(typed_list, pods_api, 500)
                del items
            print(f"  same with the cyclic GC off: {seconds:.2f} s")
            result, seconds = timed(api.list_node)
            check(len(result.items) == nodes, f"typed list_node (one request): {len(result.items):,} V1Node")
            print(f"    {seconds:.2f} s")
            del result
        rss, peak = rss_mb(process.pid)
        print(f"  server RSS after serving: {rss:,.0f} MB (peak {peak:,.0f} MB)")
        print(f"  this (client) process peak RSS: {rss_mb(os.getpid())[1]:,.0f} MB")
    finally:
        parent.send("stop")
        process.join(30)
        if process.is_alive():
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-full", action="store_true", help="skip the full-size timing pass")
    parser.add_argument("--no-typed", action="store_true", help="skip the (slow) typed lists at full size")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    args = parser.parse_args()
    random.seed(1)
    small_checks()
    if not args.no_full:
        full_timings(args.nodes, args.pods, typed=not args.no_typed)
    print("FAILED: " + "; ".join(FAILURES) if FAILURES else "all checks passed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
