"""A quiet healthy cluster is not an error: a watch whose read times out with no event (not even a bookmark)
watches again from where it was, and reports no lost connection."""

from __future__ import annotations

import threading
import time

from fake_apiserver import FakeApiServer
from kubernetes import client

from pools.fleet.layouts import pool_cluster
from pools.inventory.sources import KubernetesSource, SourceStatus, WatchEvent


def test_a_read_timeout_without_events_is_a_new_watch_not_a_lost_connection():
    nodes, pods = pool_cluster(nodes=3, pods=30, pools=1, platforms=1, seed=2)
    with FakeApiServer(nodes, pods, bookmark_interval=3600) as server:  # no bookmarks: a quiet cluster
        source = KubernetesSource(api_client=client.ApiClient(client.Configuration(host=server.url)))
        source.request_timeout = (2, 0.4)  # each watch read gives up after 0.4 s without a byte
        source.api  # noqa: B018 - the client is built (and kubernetes imported) before the clock starts
        versions = {"nodes": server.resource_version, "pods": server.resource_version}
        stop = threading.Event()
        problems, events = [], []
        pod = dict(server.objects("pods")[0])
        later = threading.Timer(1.5, lambda: server.apply("Pod", "MODIFIED", pod))  # after a few read timeouts
        started = time.monotonic()
        later.start()
        try:
            for batch in source.watch(versions, stop):
                problems += [item.error for item in batch if isinstance(item, SourceStatus) and not item.ok]
                events += [item for item in batch if isinstance(item, WatchEvent) and item.type == "MODIFIED"]
                if events or time.monotonic() - started > 6:
                    break
        finally:
            stop.set()
            later.cancel()

    assert problems == []
    assert events, "the event sent after the quiet reads never arrived: the watch did not go on"
    assert time.monotonic() - started < 4, "the watch backed off as after an error before it went on"
