"""A fake kube-apiserver on 127.0.0.1 serving Nodes and Pods in Kubernetes wire format (JSON), for benchmarks.

Enough of the API for the official ``kubernetes`` client: paginated lists (``limit``/``continue``), field and
label selectors, metadata-only lists (``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``),
watches (chunked newline-delimited JSON with bookmarks, 410 Expired, ``timeoutSeconds``),
GET of single objects and PATCH (merge, strategic-merge as merge, JSON patch). The benchmark driver changes the
cluster through a thread-safe Python API in the same process::

    from fake_apiserver import FakeApiServer
    from pools.fleet.layouts import pool_cluster

    nodes, pods = pool_cluster(nodes=200, pods=3000)
    with FakeApiServer(nodes, pods) as server:           # starts on a free port
        cfg = kubernetes.client.Configuration(host=server.url)
        ...
        server.apply("Pod", "MODIFIED", pod)               # -> watchers get the event
        server.modify_random_pods(0.01, random.Random(1))
        server.drop_watches(); server.expire()
        server.fail("list", after=2); server.heal()        # HTTP 500 from the third list page on

Differences from a real API server, on purpose: a continued list reads the current state after the last key
(not a snapshot at the first page's resourceVersion, though it reports that one); strategic merge patch is
applied as a JSON merge patch (lists replaced, fine for labels and annotations); no auth, no TLS, no protobuf.

Run standalone: ``python scripts/bench/fake_apiserver.py --nodes 5000 --pods 150000 --port 8001``.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import copy
import functools
import gc
import json
import random
import socket
import sys
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

KINDS = {"pod": "Pod", "pods": "Pod", "node": "Node", "nodes": "Node"}
METADATA_LIST = "as=PartialObjectMetadataList"  # in an Accept header: answer with metadata only
EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED")
WRITE_BATCH = 1 << 20  # bytes per socket write of a list body


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _key(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    if kind == "Pod":
        return f"{meta.get('namespace') or 'default'}/{name}"
    return name


def _status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


# --- selectors ------------------------------------------------------------------------------------------


def _split_top(text: str) -> list[str]:
    """Split a selector at commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


@functools.lru_cache(maxsize=256)
def field_selector(text: str | None) -> Callable[[dict], bool] | None:
    """``status.phase!=Failed,spec.nodeName=n1`` -> predicate (None when empty). ``=``, ``==`` and ``!=``.

    One predicate per text, so that list pages remember what it answered (``_Entry.selected``).
    """
    if not text:
        return None
    tests = []
    for term in _split_top(text):
        if "!=" in term:
            path, value = term.split("!=", 1)
            tests.append((tuple(path.strip().split(".")), value.strip(), False))
        else:
            path, value = term.split("==", 1) if "==" in term else term.split("=", 1)
            tests.append((tuple(path.strip().split(".")), value.strip(), True))

    def matches(obj: dict) -> bool:
        # A missing field reads as "". Loops written out: a list of 150,000 pods runs this for each of them.
        for path, value, equal in tests:
            current = obj
            for part in path:
                current = current.get(part) if isinstance(current, dict) else None
                if current is None:
                    break
            if (("" if current is None else str(current)) == value) is not equal:
                return False
        return True

    return matches


def label_selector(text: str | None) -> Callable[[dict], bool] | None:
    """Kubernetes label selector -> predicate on an object (None when empty).

    Supports ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``.
    """
    if not text:
        return None
    tests: list[tuple[str, str, frozenset]] = []  # (operator, key, values)
    for term in _split_top(text):
        padded = f" {term} "
        if " notin " in padded or " in " in padded:
            operator = "notin" if " notin " in padded else "in"
            key, _, rest = term.partition(f" {operator} ")
            tests.append((operator, key.strip(), frozenset(x.strip() for x in rest.strip().strip("()").split(","))))
        elif "!=" in term:
            key, _, value = term.partition("!=")
            tests.append(("notin", key.strip(), frozenset([value.strip()])))
        elif "=" in term:
            key, _, value = term.partition("==") if "==" in term else term.partition("=")
            tests.append(("in", key.strip(), frozenset([value.strip()])))
        elif term.startswith("!"):
            tests.append(("!", term[1:].strip(), frozenset()))
        else:
            tests.append(("exists", term, frozenset()))

    def matches(obj: dict) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for operator, key, values in tests:
            if operator == "in":
                ok = labels.get(key) in values
            elif operator == "notin":
                ok = key not in labels or labels[key] not in values
            elif operator == "!":
                ok = key not in labels
            else:
                ok = key in labels
            if not ok:
                return False
        return True

    return matches


def _combine(*predicates: Callable[[dict], bool] | None) -> Callable[[dict], bool] | None:
    active = [p for p in predicates if p is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(p(obj) for p in active)


# --- patches --------------------------------------------------------------------------------------------


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch, returning a new value (``target`` is not modified; untouched parts shared)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict, operations: list) -> dict:
    """RFC 6902 JSON patch (add, replace, remove, test) on a deep copy of ``target``."""
    doc = copy.deepcopy(target)
    for op in operations:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        kind = op["op"]
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise ValueError(f"test failed at {op['path']}")
        elif kind == "remove":
            if isinstance(parent, list):
                del parent[int(last)]
            else:
                del parent[last]
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif kind == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        else:
            raise ValueError(f"unsupported JSON patch op {kind!r}")
    return doc


# --- storage --------------------------------------------------------------------------------------------


class _Entry:
    """One stored object and (lazily) its JSON bytes, whole and as a PartialObjectMetadata item.

    The object is never modified once stored (a change stores a new entry), so neither needs invalidating.
    kube-apiserver's watch cache likewise keeps objects decoded and serialises each once for every watcher.
    """

    __slots__ = ("obj", "raw", "partial_raw", "selected_by", "selected")

    def __init__(self, obj: dict, raw: bytes | None = None) -> None:
        self.obj = obj
        self.raw = raw
        self.partial_raw: bytes | None = None
        # The last list selector asked about the object and its answer: a client lists with the same one
        # each time (``field_selector`` returns one predicate per text), as kube-apiserver keeps each cached
        # object's selectable fields at hand.
        self.selected_by: Callable[[dict], bool] | None = None
        self.selected = False

    def bytes(self) -> bytes:
        raw = self.raw
        if raw is None:
            raw = self.raw = _dumps(self.obj)
        return raw

    def partial(self) -> bytes:
        """The object as a PartialObjectMetadata item: its metadata only."""
        raw = self.partial_raw
        if raw is None:
            item = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": self.obj["metadata"]}
            raw = self.partial_raw = _dumps(item)
        return raw


class _Store:
    """The objects of one kind, by key, with the keys sorted (list order = key order, like etcd)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.entries: dict[str, _Entry] = {}
        self.keys: list[str] = []

    def load(self, objects: Iterable[dict]) -> None:
        for obj in objects:
            self.entries[_key(self.kind, obj)] = _Entry(obj)
        self.keys = sorted(self.entries)

    def put(self, key: str, entry: _Entry) -> None:
        if key not in self.entries:
            bisect.insort(self.keys, key)
        self.entries[key] = entry

    def remove(self, key: str) -> None:
        del self.entries[key]
        index = bisect.bisect_left(self.keys, key)
        del self.keys[index]


class _Event:
    __slots__ = ("rv", "kind", "type", "obj", "prev", "raw")

    def __init__(self, rv: int, kind: str, type_: str, obj: dict, prev: dict | None, raw: bytes) -> None:
        self.rv, self.kind, self.type, self.obj, self.prev, self.raw = rv, kind, type_, obj, prev, raw

    def line(self, type_: str | None = None) -> bytes:
        return b'{"type":"' + (type_ or self.type).encode() + b'","object":' + self.raw + b"}\n"

    def filtered(self, predicate: Callable[[dict], bool] | None) -> bytes | None:
        """The event line a watcher with ``predicate`` gets, or None (the API server's filtering rules)."""
        if predicate is None:
            return self.line()
        now = predicate(self.obj)
        if self.type == "ADDED":
            return self.line() if now else None
        before = self.prev is not None and predicate(self.prev)
        if self.type == "DELETED":
            return self.line() if before or now else None
        if now and before:
            return self.line()
        if now:
            return self.line("ADDED")
        if before:
            return self.line("DELETED")
        return None


# --- the server -----------------------------------------------------------------------------------------


class FakeApiServer:
    """A threaded fake kube-apiserver for Nodes and Pods; see the module docstring.

    ``nodes`` and ``pods`` are taken over (not copied) and must not be changed afterwards; every object needs
    ``metadata.name`` (pods ``metadata.namespace``) and ``metadata.resourceVersion`` (an integer string).

    :param event_log_size: watch events kept; a watch from before the oldest gets 410 Expired.
    :param bookmark_interval: seconds between BOOKMARK events on watches that allow them.
    :param max_watch_seconds: how long a watch without ``timeoutSeconds`` stays open.
    """

    def __init__(
        self,
        nodes: Iterable[dict] = (),
        pods: Iterable[dict] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        event_log_size: int = 100_000,
        bookmark_interval: float = 1.0,
        max_watch_seconds: float = 600.0,
    ) -> None:
        self.host, self.port = host, port
        self.bookmark_interval = bookmark_interval
        self.max_watch_seconds = max_watch_seconds
        self._stores = {"Node": _Store("Node"), "Pod": _Store("Pod")}
        gc_was_enabled = gc.isenabled()
        gc.disable()  # hundreds of thousands of new entries would trigger full GC passes over the whole cluster
        try:
            self._stores["Node"].load(nodes)
            self._stores["Pod"].load(pods)
        finally:
            gc.freeze()  # the cluster lives as long as the server: keep it out of every later GC pass
            if gc_was_enabled:
                gc.enable()
        self._rv = max(
            (
                int(e.obj["metadata"].get("resourceVersion") or 0)
                for s in self._stores.values()
                for e in s.entries.values()
            ),
            default=0,
        )
        self._rv = max(self._rv, 1)
        self._log: deque[_Event] = deque(maxlen=max(event_log_size, 1))
        self._floor = self._rv  # every event with rv > floor is in the log
        self._cond = threading.Condition(threading.Lock())
        self._watch_generation = 0
        self._stopping = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._active_watches = 0
        self.requests = 0
        self.served: Counter[str] = Counter()  # answered list pages ("list") and single-object reads ("get")
        self._failing: dict[str, int] = {}

    # -- lifecycle

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def start(self, warm: bool = True) -> FakeApiServer:
        """Listen and serve in a background thread. ``warm`` serialises every object (whole and as metadata) now,
        not on the first list that reads it."""
        if self._httpd is not None:
            return self
        if warm:
            for store in self._stores.values():
                for entry in store.entries.values():
                    entry.bytes()
                    entry.partial()
        handler = type("Handler", (_Handler,), {"api": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self._stopping = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving: end watches, close every connection, wait (bounded) for watch threads."""
        if self._httpd is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._httpd.shutdown()
        self._close_connections()
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._active_watches and time.monotonic() < deadline:
                self._cond.wait(0.05)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _close_connections(self) -> None:
        with self._cond:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    # -- state, for the driver

    @property
    def resource_version(self) -> str:
        """The cluster's current resourceVersion."""
        with self._cond:
            return str(self._rv)

    def count(self, kind: str) -> int:
        with self._cond:
            return len(self._stores[self._kind(kind)].entries)

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        """The stored object (read-only!) or None."""
        entry = self._entry(kind, name, namespace)
        return entry.obj if entry else None

    def _entry(self, kind: str, name: str, namespace: str | None = None) -> _Entry | None:
        kind = self._kind(kind)
        key = f"{namespace or 'default'}/{name}" if kind == "Pod" else name
        with self._cond:
            return self._stores[kind].entries.get(key)

    def objects(self, kind: str) -> list[dict]:
        """Every stored object of ``kind`` in key order (read-only!)."""
        store = self._stores[self._kind(kind)]
        with self._cond:
            return [store.entries[key].obj for key in store.keys]

    @staticmethod
    def _kind(kind: str) -> str:
        try:
            return KINDS[kind.lower()]
        except KeyError:
            raise ValueError(f"unknown kind {kind!r} (Node or Pod)")

    # -- mutation API

    def apply(self, kind: str, type: str, obj: dict, *, copy_obj: bool = True) -> dict | None:
        """Add, modify or delete an object; returns the stored object (for DELETED, its last state) or None.

        Assigns the next resourceVersion, appends the event to the watch log and wakes the watchers.
        ``ADDED`` of an existing object acts as ``MODIFIED`` and ``MODIFIED`` of a missing one as ``ADDED``;
        ``DELETED`` needs only ``metadata.name`` (and ``namespace``) and returns None when there is no such
        object. ``obj`` is deep-copied unless ``copy_obj=False`` (then it must not be changed afterwards).
        """
        kind = self._kind(kind)
        if type not in EVENT_TYPES:
            raise ValueError(f"type must be one of {EVENT_TYPES}")
        if copy_obj:
            obj = copy.deepcopy(obj)
        with self._cond:
            stored = self._apply_locked(kind, type, obj)
            self._cond.notify_all()
        return stored

    def apply_many(self, changes: Iterable[tuple[str, str, dict]], *, copy_obj: bool = True) -> list[dict | None]:
        """:meth:`apply` for ``(kind, type, obj)`` triples under one lock: watchers see them as one batch."""
        prepared = [(self._kind(k), t, copy.deepcopy(o) if copy_obj else o) for k, t, o in changes if t in EVENT_TYPES]
        with self._cond:
            stored = [self._apply_locked(k, t, o) for k, t, o in prepared]
            self._cond.notify_all()
        return stored

    def _apply_locked(self, kind: str, type_: str, obj: dict) -> dict | None:
        store = self._stores[kind]
        key = _key(kind, obj)
        old = store.entries.get(key)
        if type_ == "DELETED":
            if old is None:
                return None
            obj = dict(old.obj)
        elif old is None:
            type_ = "ADDED"
        elif type_ == "ADDED":
            type_ = "MODIFIED"
        self._rv += 1
        meta = dict(obj.get("metadata") or {})
        meta["resourceVersion"] = str(self._rv)
        if kind == "Pod":
            meta.setdefault("namespace", "default")
        if old is None:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        else:
            meta["uid"] = old.obj["metadata"].get("uid", meta.get("uid"))
        obj = {**obj, "metadata": meta}
        obj.setdefault("apiVersion", "v1")
        obj.setdefault("kind", kind)
        entry = _Entry(obj, _dumps(obj))
        if type_ == "DELETED":
            store.remove(key)
        else:
            store.put(key, entry)
        if len(self._log) == self._log.maxlen:
            self._floor = self._log[0].rv
        self._log.append(_Event(self._rv, kind, type_, obj, old.obj if old else None, entry.raw))
        return obj

    def modify_random_pods(self, fraction: float, rng: random.Random) -> list[dict]:
        """Change ``fraction`` of the pods at random, as one batch; returns the changed (stored) pods.

        Pending pods start Running; a tenth of the others finish (Succeeded, or Failed one time in four);
        the rest get a label change (``osmo.priority`` and ``bench.example.com/touched``).
        """
        store = self._stores["Pod"]
        with self._cond:
            keys = list(store.keys)
            picked = [store.entries[keys[i]].obj for i in rng.sample(range(len(keys)), round(len(keys) * fraction))]
        changes = []
        for pod in picked:
            status = pod.get("status") or {}
            phase = status.get("phase")
            if phase == "Pending":
                new = {**pod, "status": {**status, "phase": "Running"}}
            elif phase == "Running" and rng.random() < 0.1:
                new = {**pod, "status": {**status, "phase": "Succeeded" if rng.random() < 0.75 else "Failed"}}
            else:
                meta = pod["metadata"]
                labels = {
                    **(meta.get("labels") or {}),
                    "osmo.priority": rng.choice(("HIGH", "NORMAL", "LOW")),
                    "bench.example.com/touched": str(rng.randrange(1_000_000)),
                }
                new = {**pod, "metadata": {**meta, "labels": labels}}
            changes.append(("Pod", "MODIFIED", new))
        return [obj for obj in self.apply_many(changes, copy_obj=False) if obj is not None]

    def fail(self, what: str, after: int = 0) -> None:
        """Answer requests of ``what`` (``"list"``: list pages, ``"get"``: single objects) with HTTP 500 once
        ``after`` more of them have been answered, as an API server going away part way through does."""
        with self._cond:
            self._failing[what] = after

    def heal(self) -> None:
        """Stop failing requests (``fail``)."""
        with self._cond:
            self._failing.clear()

    def _served(self, what: str) -> None:
        """Count a request of ``what``; HTTP 500 instead if ``fail`` asked for it."""
        with self._cond:
            remaining = self._failing.get(what)
            if remaining is not None:
                if remaining <= 0:
                    raise _HttpError(500, "InternalError", f"the server failed this {what} request (fail)")
                self._failing[what] = remaining - 1
            self.served[what] += 1

    def drop_watches(self) -> int:
        """Cut every open watch connection abruptly (no final chunk), like a lost connection; returns how many."""
        with self._cond:
            self._watch_generation += 1
            count = self._active_watches
            self._cond.notify_all()
        return count

    def expire(self) -> None:
        """Forget the event log: a watch from any resourceVersion older than the current one gets 410 Expired.

        Open watches carry on (they are up to date).
        """
        with self._cond:
            self._log.clear()
            self._floor = self._rv

    # -- serving (called from handler threads)

    def list_page(
        self,
        kind: str,
        limit: int,
        token: str | None,
        predicate: Callable[[dict], bool] | None,
        metadata_only: bool = False,
    ) -> tuple[list[bytes], dict]:
        """One page: the items' JSON (as PartialObjectMetadata with ``metadata_only``) and the list metadata."""
        store = self._stores[kind]
        list_rv = None
        after = None
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token.encode()))
                list_rv, after = str(state["rv"]), state["start"]
            except (ValueError, KeyError, TypeError):
                raise _HttpError(400, "BadRequest", "invalid continue token")
        with self._cond:
            if list_rv is None:
                list_rv = str(self._rv)
            keys = store.keys
            start = bisect.bisect_right(keys, after) if after is not None else 0
            picked: list[_Entry] = []
            index = start
            end = len(keys)
            want = limit if limit > 0 else end
            entries = store.entries
            if predicate is None:
                stop = min(start + want, end)
                picked = [entries[key] for key in keys[start:stop]]
                index = stop
            else:
                while index < end and len(picked) < want:
                    entry = entries[keys[index]]
                    if entry.selected_by is not predicate:
                        entry.selected_by, entry.selected = predicate, predicate(entry.obj)
                    if entry.selected:
                        picked.append(entry)
                    index += 1
            last_key = keys[index - 1] if index > start else after
            remaining = end - index
        meta: dict = {"resourceVersion": list_rv}
        if limit > 0 and remaining > 0:
            meta["continue"] = base64.urlsafe_b64encode(_dumps({"rv": int(list_rv), "start": last_key})).decode()
            if predicate is None:  # like the API server: with a selector the count is unknown
                meta["remainingItemCount"] = remaining
        if metadata_only:
            return [entry.partial() for entry in picked], meta
        return [entry.bytes() for entry in picked], meta

    def watch_start(self, kind: str, rv_text: str | None, predicate) -> tuple[int, list[bytes] | None, int]:
        """Where a new watch starts: ``(cursor, initial ADDED lines or None, generation)``; cursor -1 = expired.

        Unless expired, the watch is counted as active until :meth:`watch_done`.
        """
        with self._cond:
            generation = self._watch_generation
            if not rv_text or rv_text == "0":
                store = self._stores[kind]
                entries = [store.entries[key] for key in store.keys]
                initial = [
                    b'{"type":"ADDED","object":' + e.bytes() + b"}\n"
                    for e in entries
                    if predicate is None or predicate(e.obj)
                ]
                self._active_watches += 1
                return self._rv, initial, generation
            try:
                cursor = int(rv_text)
            except ValueError:
                raise _HttpError(400, "BadRequest", f"invalid resourceVersion {rv_text!r}")
            if cursor < self._floor:
                return -1, None, generation
            self._active_watches += 1
            return cursor, None, generation

    def watch_done(self) -> None:
        with self._cond:
            self._active_watches -= 1
            self._cond.notify_all()

    def watch_wait(self, cursor: int, generation: int, until: float) -> tuple[str, list[_Event], int]:
        """Wait until there are events after ``cursor`` or ``until`` (monotonic); returns (state, events, rv).

        state: "events", "idle" (timed out waiting), "expired", "dropped" or "stopping".
        """
        with self._cond:
            while True:
                if self._stopping:
                    return "stopping", [], cursor
                if generation != self._watch_generation:
                    return "dropped", [], cursor
                if cursor < self._floor:
                    return "expired", [], cursor
                if cursor < self._rv:
                    first = cursor - self._floor  # log[i].rv == floor + 1 + i
                    count = min(self._rv - cursor, 2000)
                    events = [self._log[first + i] for i in range(count)]
                    return "events", events, events[-1].rv
                remaining = until - time.monotonic()
                if remaining <= 0:
                    return "idle", [], cursor
                self._cond.wait(remaining)

    def track(self, conn: socket.socket, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


class _HttpError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


class _Dropped(Exception):
    """The watch connection is to be cut without a final chunk."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver/1"
    disable_nagle_algorithm = True
    timeout = 300  # idle keep-alive connections are closed after this many seconds
    api: FakeApiServer

    def setup(self) -> None:
        super().setup()
        self.api.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.api.track(self.connection, False)

    def log_message(self, format, *args) -> None:  # quiet
        pass

    # -- plumbing

    def _send_json(self, code: int, body: bytes | dict) -> None:
        data = body if isinstance(body, bytes) else _dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self) -> tuple[str, str | None, str | None, dict]:
        """(kind, namespace, name, query) for an API path, else 404."""
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
            if rest[:1] == ["nodes"] and len(rest) <= 2:
                return "Node", None, rest[1] if len(rest) == 2 else None, query
            if rest[:1] == ["pods"] and len(rest) == 1:
                return "Pod", None, None, query
            if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == "pods":
                return "Pod", rest[1], rest[3] if len(rest) == 4 else None, query
        raise _HttpError(404, "NotFound", f"the server could not find the requested resource ({url.path})")

    def _handle(self, method: Callable[[], None]) -> None:
        self.api.requests += 1
        try:
            method()
        except _HttpError as exc:
            self._send_json(exc.code, _status(exc.code, exc.reason, exc.message))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        self._handle(self._get)

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle(self._patch)

    # -- GET

    def _get(self) -> None:
        path = urlsplit(self.path).path
        if path in ("/version", "/version/"):
            return self._send_json(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.4-fake"})
        if path in ("/healthz", "/readyz", "/livez"):
            return self._send_json(200, b"ok")
        kind, namespace, name, query = self._route()
        if name is not None:
            self.api._served("get")
            entry = self.api._entry(kind, name, namespace)
            if entry is None:
                raise _HttpError(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            return self._send_json(200, entry.bytes())
        predicate = _combine(
            field_selector(query.get("fieldSelector")),
            label_selector(query.get("labelSelector")),
            (lambda ns: lambda obj: obj["metadata"].get("namespace") == ns)(namespace) if namespace else None,
        )
        if query.get("watch", "").lower() in ("1", "true"):
            return self._watch(kind, query, predicate)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise _HttpError(400, "BadRequest", "invalid limit")
        self.api._served("list")
        metadata_only = METADATA_LIST in (self.headers.get("Accept") or "")
        items, meta = self.api.list_page(kind, limit, query.get("continue"), predicate, metadata_only)
        list_kind, api_version = (
            ("PartialObjectMetadataList", "meta.k8s.io/v1") if metadata_only else (f"{kind}List", "v1")
        )
        head = _dumps({"kind": list_kind, "apiVersion": api_version, "metadata": meta})[:-1] + b',"items":['
        total = len(head) + sum(len(item) for item in items) + max(len(items) - 1, 0) + 2
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(total))
        self.end_headers()
        self._write_items(head, items, b"]}")

    def _write_items(self, head: bytes, items: list[bytes], tail: bytes) -> None:
        batch = [head]
        size = len(head)
        for index, item in enumerate(items):
            if index:
                batch.append(b",")
            batch.append(item)
            size += len(item)
            if size >= WRITE_BATCH:
                self.wfile.write(b"".join(batch))
                batch, size = [], 0
        batch.append(tail)
        self.wfile.write(b"".join(batch))

    # -- watch

    def _start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _watch(self, kind: str, query: dict, predicate) -> None:
        api = self.api
        try:
            timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else api.max_watch_seconds
        except ValueError:
            raise _HttpError(400, "BadRequest", "invalid timeoutSeconds")
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("1", "true")
        cursor, initial, generation = api.watch_start(kind, query.get("resourceVersion"), predicate)
        if cursor < 0:
            self._start_chunked()
            error = _status(410, "Expired", "too old resource version")
            self._chunk(_dumps({"type": "ERROR", "object": error}) + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        try:
            self._start_chunked()
            self._stream(kind, cursor, initial or [], generation, timeout, bookmarks, predicate)
        except _Dropped:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        finally:
            api.watch_done()

    def _stream(self, kind, cursor, initial, generation, timeout, bookmarks, predicate) -> None:
        api = self.api
        start = time.monotonic()
        deadline = start + max(min(timeout, api.max_watch_seconds), 0)
        for offset in range(0, len(initial), 500):
            self._chunk(b"".join(initial[offset : offset + 500]))
        next_bookmark = start + api.bookmark_interval
        while True:  # bounded by the deadline
            now = time.monotonic()
            if now >= deadline:
                self.wfile.write(b"0\r\n\r\n")
                return
            if bookmarks and now >= next_bookmark:
                bookmark = {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(cursor)}}
                self._chunk(_dumps({"type": "BOOKMARK", "object": bookmark}) + b"\n")
                next_bookmark = now + api.bookmark_interval
            until = min(deadline, next_bookmark) if bookmarks else deadline
            state, events, cursor = api.watch_wait(cursor, generation, until)
            if state in ("dropped", "stopping"):
                raise _Dropped
            if state == "expired":
                error = _status(410, "Expired", "too old resource version")
                self._chunk(_dumps({"type": "ERROR", "object": error}) + b"\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            lines = [line for e in events if e.kind == kind for line in (e.filtered(predicate),) if line]
            self._chunk(b"".join(lines))

    # -- PATCH

    def _patch(self) -> None:
        kind, namespace, name, _query = self._route()
        if name is None:
            raise _HttpError(405, "MethodNotAllowed", "PATCH needs an object")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            patch = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            raise _HttpError(400, "BadRequest", "patch is not JSON")
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        api = self.api
        with api._cond:  # read-modify-write under the lock: patches do not race each other or apply()
            store = api._stores[kind]
            entry = store.entries.get(f"{namespace or 'default'}/{name}" if kind == "Pod" else name)
            if entry is None:
                raise _HttpError(404, "NotFound", f'{kind.lower()}s "{name}" not found')
            current = entry.obj
            if content_type == "application/json-patch+json":
                if not isinstance(patch, list):
                    raise _HttpError(400, "BadRequest", "a JSON patch is a list of operations")
                try:
                    new = json_patch(current, patch)
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise _HttpError(422, "Invalid", f"JSON patch failed: {exc}")
            elif content_type in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                if not isinstance(patch, dict):
                    raise _HttpError(400, "BadRequest", "a merge patch is a JSON object")
                wanted_rv = (patch.get("metadata") or {}).get("resourceVersion")
                if wanted_rv is not None and str(wanted_rv) != current["metadata"].get("resourceVersion"):
                    raise _HttpError(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {kind.lower()}s "{name}": the object has been modified',
                    )
                new = merge_patch(current, patch)
            else:
                raise _HttpError(415, "UnsupportedMediaType", f"unsupported patch type {content_type!r}")
            meta = new.get("metadata") or {}
            if meta.get("name") != name or (
                kind == "Pod" and meta.get("namespace") != current["metadata"].get("namespace")
            ):
                raise _HttpError(422, "Invalid", "metadata.name and metadata.namespace cannot change")
            stored = api._apply_locked(kind, "MODIFIED", new)
            api._cond.notify_all()
        self._send_json(200, stored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--platforms", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--duration", type=float, default=3600, help="seconds to serve (default 3600)")
    parser.add_argument("--churn", type=float, default=0.0, help="fraction of pods changed every second")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for pools.fleet
    from pools.fleet.layouts import pool_cluster

    started = time.perf_counter()
    nodes, pods = pool_cluster(args.nodes, args.pods, args.pools, args.platforms, args.seed)
    print(f"generated {len(nodes)} nodes, {len(pods)} pods in {time.perf_counter() - started:.1f} s", flush=True)
    rng = random.Random(args.seed)
    with FakeApiServer(nodes, pods, port=args.port) as server:
        print(f"serving on {server.url} for {args.duration:.0f} s (Ctrl-C stops)", flush=True)
        try:
            for _ in range(int(args.duration)):
                time.sleep(1)
                if args.churn:
                    server.modify_random_pods(args.churn, rng)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
