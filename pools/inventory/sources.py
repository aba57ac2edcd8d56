"""Inventory sources behind one interface.

Every source lists the whole inventory (``list_inventory``); live sources also stream changes
(``watch``) from the resourceVersions a list returned. Sync and watch in ``pools.services`` apply both
through the same code path, so a source only has to speak Kubernetes objects. A source that can also list
only its objects' versions (``list_versions``) and read single objects (``object_reads``) lets a resync
read just what changed; one that lists page by page (``list_pages``) lets a sync write each page before
it reads the next.

- ``file``: a Kubernetes List as ``kubectl get nodes,pods -A -o json`` prints it (list only).
- ``kubernetes``: the API server, through the official client but reading raw JSON (its model
  deserialisation costs several times more than the whole sync), paginated, watched with bookmarks.
- ``simulated``: a seeded GPU fleet whose pods come and go with time (``pools.fleet.Fleet``), made of the
  catalogue's kinds or of the nodes of a blueprint List (with its namespaces and standing workloads). Its node
  labels can be written as a cluster's are, kept in an overlay (``node_labels``).
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlsplit

from pools.choices import BackendKind
from pools.configs import parse_document
from pools.engine.errors import ConfigError
from pools.fleet import Fleet, blueprint_from_list, blueprint_namespaces, blueprint_pods

from .files import confined_kubeconfig, node_labels_path, read_inventory_text
from .node_labels import NodeLabelOverlay, entry_patched, overlaid
from .records import Inventory, InventoryError, add_objects, inventory_from_list, paused_gc
from .wire import decode_event, decode_list, decode_object, decode_versions

logger = logging.getLogger(__name__)

KINDS = ("nodes", "pods")
NON_TERMINATED = "status.phase!=Succeeded,status.phase!=Failed"
# Lists of PartialObjectMetadata (names and versions, ~300 bytes an item instead of 3-4 KB), as client-go's
# metadata client asks for them; a server that cannot answer so falls back to the plain JSON list.
METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"


class NodeChanged(InventoryError):
    """A patch carried a node's resourceVersion and the node changed since (HTTP 409)."""


class NodeGone(InventoryError):
    """The node (or, reading objects, the pod) does not exist in the cluster (HTTP 404)."""


class WatchExpired(InventoryError):
    """The watch's resourceVersion is too old (HTTP 410); the caller must list again."""


@dataclass(frozen=True)
class WatchEvent:
    """One change: ``type`` ADDED, MODIFIED or DELETED of a Node or Pod object; BOOKMARK carries only a version."""

    type: str
    kind: str  # "nodes" or "pods"
    object: dict
    # When the watch read it off the connection (time.time()): how long it then waited to be applied is the
    # product's part of its latency; before that it was the API server's and the network's.
    received: float = 0.0

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


@dataclass
class VersionListing:
    """Every node and non-terminated pod, as key -> resourceVersion, with each list's own resourceVersion.

    ``list_kinds`` says what the server answered (``PartialObjectMetadataList`` when it honoured the
    metadata-only Accept header).
    """

    nodes: dict[str, str]
    pods: dict[tuple[str, str], str]
    resource_versions: dict[str, str]
    list_kinds: dict[str, str]


class InventorySource(Protocol):
    def list_inventory(self) -> Inventory:
        """Every node and every non-terminated pod of the cluster, read now."""

    def watch(self, resource_versions: Mapping[str, str], stop: threading.Event) -> Iterator[list[WatchEvent]]:
        """Batches of changes after ``resource_versions`` until ``stop`` is set; raises WatchExpired on 410."""


def read_inventory_document(path: str):
    """The parsed inventory file at ``path``, read only where inventories may be (``files.py``)."""
    try:
        return parse_document(read_inventory_text(path), filename=path)
    except ConfigError as exc:
        raise InventoryError(str(exc)) from None


class FileSource:
    """A Kubernetes List file (JSON or YAML) standing in for a cluster; it has no watch."""

    def __init__(self, path: str):
        self.path = path

    def list_inventory(self) -> Inventory:
        if not self.path:
            raise InventoryError("this file backend has no source path configured")
        return inventory_from_list(read_inventory_document(self.path))

    def watch(self, resource_versions, stop):
        raise InventoryError("a file backend cannot be watched; sync it instead")

    def ping(self) -> None:
        """A file is there as long as it can be read; sync reads it."""


class KubernetesSource:
    """A cluster's API server: paginated raw-JSON lists, and watches that resume from the last version seen."""

    page_size = 500
    metadata_page_size = 5000  # metadata items are a tenth of a full object's size: fewer round trips
    read_workers = 4
    watch_timeout_seconds = 300
    request_timeout = (5, 60)

    def __init__(self, *, kubeconfig: str = "", context: str = "", in_cluster: bool = False, api_client=None):
        self.kubeconfig, self.context, self.in_cluster = kubeconfig, context, in_cluster
        self._api_client = api_client
        self._api = None

    @property
    def api(self):
        """The CoreV1Api, built on first use so that configuration errors surface as InventoryError."""
        if self._api is None:
            from kubernetes import client, config

            try:
                if self._api_client is None:
                    if self.in_cluster:
                        configuration = client.Configuration()
                        config.load_incluster_config(client_configuration=configuration)
                        self._api_client = client.ApiClient(configuration)
                    else:
                        self._api_client = config.new_client_from_config(
                            config_file=self.kubeconfig or None, context=self.context or None
                        )
            except (config.ConfigException, OSError, ValueError, TypeError) as exc:
                raise InventoryError(f"cannot load the Kubernetes configuration: {exc}") from None
            self._api = client.CoreV1Api(self._api_client)
        return self._api

    @property
    def host(self) -> str:
        return self.api.api_client.configuration.host

    def _call(self, what: str, function: Callable, **kwargs):
        """Call the API and return the raw urllib3 response; every failure becomes one InventoryError."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return function(_preload_content=False, _request_timeout=self.request_timeout, **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpired(f"{what}: resource version expired") from None
            if exc.status == 409:
                raise NodeChanged(f"{what}: it changed meanwhile (HTTP 409 Conflict)") from None
            if exc.status == 404:
                raise NodeGone(f"{what}: it does not exist (HTTP 404)") from None
            raise InventoryError(f"{what} at {self.host} failed: HTTP {exc.status} {exc.reason}") from None
        except (HTTPError, OSError) as exc:
            raise InventoryError(f"cannot reach the Kubernetes API at {self.host} ({what}): {_reason(exc)}") from None

    def _list_call(self, kind: str) -> tuple[Callable, dict]:
        """The list function of ``kind`` and its arguments: pods only while not terminated."""
        if kind == "nodes":
            return self.api.list_node, {}
        return self.api.list_pod_for_all_namespaces, {"field_selector": NON_TERMINATED}

    def list_pages(self) -> Iterator[Inventory]:
        """Every node, then every non-terminated pod, one page at a time, as the API server sends them.

        Each page is an ``Inventory`` of its objects, narrowly decoded, with ``resource_versions[kind]`` the
        version of the list it belongs to. A caller that turns each page into rows before it reads the next
        holds one page at a time, not a 150,000-pod cluster's objects at once. Any failure raises
        InventoryError: what the caller made of the pages before it must then be discarded.
        """
        self.api  # noqa: B018 - the client is built here, not by the thread that reads ahead
        yield from _read_ahead(page for kind in KINDS for page in self._pages(kind))

    def _pages(self, kind: str) -> Iterator[Inventory]:
        function, extra = self._list_call(kind)
        default_kind = "Node" if kind == "nodes" else "Pod"
        token = None
        while True:
            response = self._call(f"listing {kind}", function, limit=self.page_size, _continue=token, **extra)
            try:
                items, version, token = decode_list(kind, response.data)
            except ValueError:
                raise InventoryError(f"listing {kind} at {self.host}: the response is not JSON") from None
            page = Inventory(resource_versions={kind: version}, trusted_versions=True)
            add_objects(page, items, default_kind=default_kind)
            yield page
            if not token:
                return

    def list_inventory(self) -> Inventory:
        inventory = Inventory(trusted_versions=True)
        with paused_gc():
            for page in self.list_pages():
                inventory.nodes += page.nodes
                inventory.pods += page.pods
                inventory.warnings += page.warnings
                inventory.resource_versions.update(page.resource_versions)
        return inventory

    def list_versions(self, on_page: Callable[[str, dict], None] | None = None) -> VersionListing:
        """Every node's and non-terminated pod's key and resourceVersion, from metadata-only lists.

        The same paginated lists as ``list_inventory`` (same field selector, so the same objects), asked
        for as PartialObjectMetadataList: a 150,000-pod cluster sends ~45 MB instead of ~500 MB, and only
        three fields of each item are decoded. ``on_page(kind, versions)`` is called with each page's
        versions as it arrives, so that a caller can start reading what changed while the rest is listed.
        """
        listing = VersionListing(nodes={}, pods={}, resource_versions={}, list_kinds={})
        self.api  # noqa: B018 - the client is built here, not by the thread that reads ahead
        with paused_gc():
            pages = _read_ahead((kind, *page) for kind in KINDS for page in self._version_pages(kind))
            for kind, versions, list_kind, version in pages:
                getattr(listing, kind).update(versions)
                listing.resource_versions[kind], listing.list_kinds[kind] = version, list_kind
                if on_page is not None:
                    on_page(kind, versions)
        return listing

    def _version_pages(self, kind: str) -> Iterator[tuple[dict, str, str]]:
        """Each page of one kind's metadata list: (versions by key, the list's kind, its resourceVersion)."""
        function, extra = self._list_call(kind)
        token = None
        while True:
            response = self._call(
                f"listing {kind} metadata",
                function,
                limit=self.metadata_page_size,
                _continue=token,
                _headers={"Accept": METADATA_ACCEPT},
                **extra,
            )
            try:
                page, list_kind, version, token = decode_versions(kind, response.data)
            except ValueError:
                raise InventoryError(f"listing {kind} metadata at {self.host}: the response is not readable") from None
            yield page, list_kind, version
            if not token:
                return

    def read_objects(self, nodes: Iterable[str], pods: Iterable[tuple[str, str]]) -> Inventory:
        """The named nodes and pods as the API server has them now, one GET each, narrowly decoded.

        An object deleted since it was listed (404) is left out, so the sync counts it as gone; any other
        failure raises InventoryError, and the sync then changes nothing.
        """
        with self.object_reads() as reads:
            reads.add(nodes, pods)
            return reads.result()

    def object_reads(self) -> ObjectReads:
        """GETs of single objects that start as they are asked for (``ObjectReads``)."""
        return ObjectReads(self)

    def _read(self, kind: str, what: str, key, plain: PlainReads | None) -> tuple[str, dict | None]:
        """One object of ``kind`` (``key``: a name, or a pod's (namespace, name)), or None when it does not
        exist (any more); read on ``plain`` connections when there are, else with the client's methods."""
        if plain is not None:
            data = plain.get(what, _object_path(kind, key))
            if data is None:
                return kind, None
        else:
            if kind == "nodes":
                function, arguments = self.api.read_node, {"name": key}
            else:
                function, arguments = self.api.read_namespaced_pod, {"namespace": key[0], "name": key[1]}
            try:
                data = self._call(what, function, **arguments).data
            except NodeGone:
                return kind, None
        try:
            return kind, decode_object(kind, data)
        except ValueError:
            raise InventoryError(f"{what} at {self.host}: the response is not JSON") from None

    def ping(self) -> None:
        """One cheap request, to show the API server is reachable while a quiet watch brings no events."""
        self._call("checking the API server", self.api.list_node, limit=1).release_conn()

    def list_nodes(self) -> list[dict]:
        """Every node of the cluster, read now (paginated, narrowly decoded: names, labels, versions, status)."""
        return [node for page in self._pages("nodes") for node in page.nodes]

    def read_node(self, name: str) -> dict:
        """One node as the API server has it now (NodeGone when it does not exist)."""
        response = self._call(f"reading node {name}", self.api.read_node, name=name)
        return json.loads(response.data)

    def patch_node_labels(self, name: str, labels: Mapping[str, str | None], *, resource_version: str = "") -> dict:
        """Set labels on a node (``None`` removes one) with a JSON merge patch; returns the updated Node object.

        With ``resource_version`` the API server applies it only to that version of the node (optimistic
        concurrency): NodeChanged (409) when it changed since, NodeGone (404) when it was deleted.
        """
        metadata: dict = {"labels": dict(labels)}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        response = self._call(
            f"labelling node {name}",
            self.api.patch_node,
            name=name,
            body={"metadata": metadata},
            _content_type="application/merge-patch+json",
        )
        return json.loads(response.data)

    def watch(self, resource_versions: Mapping[str, str], stop: threading.Event) -> Iterator[list[WatchEvent]]:
        """Watch nodes and pods on two threads; yield what has arrived, in batches (``_batches``).

        A dropped connection resumes from the last version seen (bookmarks keep it fresh); a 410 is
        raised as WatchExpired for the caller to relist.
        """
        events: queue.Queue = queue.Queue()
        threads = [
            threading.Thread(
                target=self._watch_kind,
                args=(kind, resource_versions[kind], stop, events),
                name=f"watch-{kind}",
                daemon=True,
            )
            for kind in KINDS
        ]
        for thread in threads:
            thread.start()
        try:
            yield from _batches(events, stop)
        finally:
            stop.set()

    def _watch_kind(self, kind: str, version: str, stop: threading.Event, events: queue.Queue) -> None:
        function, extra = self._list_call(kind)
        failures = 0
        while not stop.is_set():
            try:
                response = self._call(
                    f"watching {kind}",
                    function,
                    watch=True,
                    resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=self.watch_timeout_seconds,
                    **extra,
                )
                for event in _stream_events(response, kind, stop):
                    version = event.resource_version or version
                    events.put(event)
                    failures = 0
                response.release_conn()
            except WatchExpired as exc:
                events.put(exc)
                return
            except InventoryError as exc:
                failures += 1
                logger.warning("%s; retrying", exc)
                events.put(SourceStatus(ok=False, error=str(exc)))
                stop.wait(min(30, 2**failures))


def _read_ahead(pages: Iterator) -> Iterator:
    """``pages``, each produced by a thread while the caller works on the one before.

    A list page is mostly a wait for the API server (and a decode); reading the next one while the caller
    turns this one into rows overlaps the two. One page is read ahead, no more. An exception in the
    thread is raised to the caller in the page's place; a caller that stops early stops the thread once
    its current request ends.
    """
    ready: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def offer(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for page in pages:
                if not offer(page):
                    return
            offer(done)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
            offer(exc)

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


class ObjectReads:
    """GETs of single nodes and pods, ``read_workers`` in flight at once, started as they are asked for.

    A resync asks for the objects of each listed page while the next page is listed; ``result`` waits for
    them all. The GETs go out on plain connections (``PlainReads``) where the client's configuration allows.
    Used as a context manager: leaving it cancels what has not started, so after a failure, or when the
    caller no longer wants them, the rest are not sent.
    """

    def __init__(self, source: KubernetesSource):
        self.source = source
        # The client is built here, not by the threads.
        self.plain = PlainReads.for_client(source.api.api_client, source.request_timeout)
        self.pool = ThreadPoolExecutor(max_workers=source.read_workers, thread_name_prefix="read-objects")
        self.futures: list = []

    def __enter__(self) -> ObjectReads:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(cancel_futures=True)
        if self.plain is not None:
            self.plain.close()

    def add(self, nodes: Iterable[str] = (), pods: Iterable[tuple[str, str]] = ()) -> None:
        read, plain = self.source._read, self.plain
        for name in nodes:
            self.futures.append(self.pool.submit(read, "nodes", f"reading node {name}", name, plain))
        for key in pods:
            self.futures.append(self.pool.submit(read, "pods", f"reading pod {key[0]}/{key[1]}", key, plain))

    def result(self) -> Inventory:
        """Every object asked for that exists, in the order asked; the first failure raises InventoryError."""
        inventory = Inventory(trusted_versions=True)
        for future in self.futures:
            kind, obj = future.result()
            if obj is not None:
                add_objects(inventory, [obj], default_kind="Node" if kind == "nodes" else "Pod")
        return inventory


def _object_path(kind: str, key) -> str:
    if kind == "nodes":
        return f"/api/v1/nodes/{quote(key, safe='')}"
    return f"/api/v1/namespaces/{quote(key[0], safe='')}/pods/{quote(key[1], safe='')}"


class PlainReads:
    """GETs on plain ``http.client`` connections, kept open and shared by the reading threads.

    The client's generated ``read_*`` methods validate their arguments, build the request and go through
    urllib3: ~0.6 ms of Python per object, twice what the request itself costs, and a resync's reads are
    bound by that Python (more threads do not make them faster). These connections are made as the
    client's are, from its configuration: its host, its TLS (CA, client certificate, whether to verify)
    and the headers it sends, authentication included. ``for_client`` answers None for what they do not
    cover (a proxy, a TLS server name or asserted hostname other than the host's): the client reads then.
    """

    def __init__(self, host: str, headers: dict, context: ssl.SSLContext | None, timeouts: tuple[float, float]):
        parts = urlsplit(host)
        self.host, self.headers, self.context, self.timeouts = host, headers, context, timeouts
        self.address = (parts.hostname, parts.port or (443 if context is not None else 80))
        self.prefix = parts.path.rstrip("/")  # an API server behind a path (a proxy's cluster route)
        self.idle: list[http.client.HTTPConnection] = []
        self.lock = threading.Lock()

    @classmethod
    def for_client(cls, api_client, timeouts: tuple[float, float] = (5, 60)) -> PlainReads | None:
        configuration = api_client.configuration
        scheme = urlsplit(configuration.host).scheme
        if (
            scheme not in ("http", "https")
            or configuration.proxy
            or configuration.tls_server_name
            or isinstance(configuration.assert_hostname, str)
        ):
            return None
        try:  # the headers the client sends, its authentication's included (a refreshed token as well)
            _, _, headers, _, _ = api_client.param_serialize(
                method="GET",
                resource_path="/api/v1",
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
        except (AttributeError, TypeError):  # a client version that builds requests otherwise
            return None
        context = None
        if scheme == "https":
            context = ssl.create_default_context(cafile=configuration.ssl_ca_cert, cadata=configuration.ca_cert_data)
            if configuration.cert_file:
                context.load_cert_chain(configuration.cert_file, configuration.key_file)
            if not configuration.verify_ssl or configuration.assert_hostname is False:
                context.check_hostname = False
            if not configuration.verify_ssl:
                context.verify_mode = ssl.CERT_NONE
        return cls(configuration.host, headers, context, timeouts)

    def get(self, what: str, path: str) -> bytes | None:
        """The body of a GET of ``path``, or None for 404; any other failure raises InventoryError."""
        response, data = self._exchange(what, path, retry=True)
        if response.status == 404:
            return None
        if response.status != 200:
            raise InventoryError(f"{what} at {self.host} failed: HTTP {response.status} {response.reason}")
        return data

    def _exchange(self, what: str, path: str, *, retry: bool) -> tuple[http.client.HTTPResponse, bytes]:
        with self.lock:
            connection = self.idle.pop() if self.idle else None
        reused = connection is not None
        try:
            if connection is None:
                connection = self._connect()
            connection.request("GET", self.prefix + path, headers=self.headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            if connection is not None:
                connection.close()
            if reused and retry:  # the server closed it while it was kept: once more, on a new one
                return self._exchange(what, path, retry=False)
            raise InventoryError(f"cannot reach the Kubernetes API at {self.host} ({what}): {_reason(exc)}") from None
        if response.will_close:
            connection.close()
        else:
            with self.lock:
                self.idle.append(connection)
        return response, data

    def _connect(self) -> http.client.HTTPConnection:
        (host, port), (connect, read) = self.address, self.timeouts
        if self.context is None:
            connection = http.client.HTTPConnection(host, port, timeout=connect)
        else:
            connection = http.client.HTTPSConnection(host, port, timeout=connect, context=self.context)
        connection.connect()
        connection.sock.settimeout(read)
        return connection

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for connection in idle:
            connection.close()


@dataclass(frozen=True)
class SourceStatus:
    """Not a change: tells the watch loop that the source could not be reached (it keeps retrying)."""

    ok: bool
    error: str = ""


def _stream_events(response, kind: str, stop: threading.Event) -> Iterator[WatchEvent]:
    """Parse a watch response line by line; an ERROR event with code 410 raises WatchExpired.

    A read that times out (no event, not even a bookmark, within the read timeout) ends the stream like the
    server's own ``timeoutSeconds`` does: a quiet cluster is not a lost connection, and the caller watches again
    from the last version (a server that really went away fails that next request instead).
    """
    from urllib3.exceptions import HTTPError, ReadTimeoutError

    buffer = b""
    try:
        for chunk in response.stream(amt=65536, decode_content=True):
            if stop.is_set():
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    event = decode_event(kind, line)
                except ValueError:
                    logger.warning("watching %s: skipped a line that is not JSON", kind)
                    continue
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise WatchExpired(f"watching {kind}: {status.get('message') or 'expired'}")
                    raise InventoryError(f"watching {kind}: {status.get('message') or status}")
                if isinstance(event.get("object"), dict) and event.get("type"):
                    yield WatchEvent(event["type"], kind, event["object"], time.time())
    except (ReadTimeoutError, TimeoutError):
        logger.debug("watching %s: no event within the read timeout; watching again", kind)
    except (HTTPError, OSError) as exc:
        raise InventoryError(f"watching {kind}: connection lost ({_reason(exc)})") from None


def _batches(events: queue.Queue, stop: threading.Event, limit: int = 5000) -> Iterator[list]:
    """Group queued events into batches; re-raise WatchExpired from a watch thread.

    A batch is the first event plus whatever queued up behind it, without waiting for more: a quiet
    cluster's event is applied at once, and under load the batches grow by themselves to what arrived
    while the previous one was being written (waiting for a fixed window only added its length to every
    event's latency).
    """
    while not stop.is_set():
        try:
            first = events.get(timeout=1.0)
        except queue.Empty:
            yield []
            continue
        batch = [first]
        while len(batch) < limit:
            try:
                batch.append(events.get_nowait())
            except queue.Empty:
                break
        for item in batch:
            if isinstance(item, WatchExpired):
                raise item
        yield batch


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or exc
    text = str(reason)
    if "Connection refused" in text:
        return "connection refused"
    return text.split(": ", 1)[-1][:200]


# A simulated backend's share of GPU jobs that run long enough (20-80 min) to be found idle (Run:ai's 5 minutes).
LONG_GPU_JOBS = 0.4


class SimulatedSource:
    """The seeded fleet: state is a function of time, changes arrive as the clock moves.

    ``pool_labels`` says which pools each node belongs to (so generated pods carry the label of a pool
    that holds their node): a mapping, or a function of the fleet's node objects that the service
    passes, since the nodes only exist once the fleet is built. A blueprint's Namespace items are where its
    jobs run and its Pod items its standing workloads (``pools.fleet.nodes``). With ``labels_path``, node labels
    written to it (``patch_node_labels``, as ``KubernetesSource``'s) are kept there and seen by every list, read
    and watch after.
    """

    def __init__(
        self,
        *,
        seed: int,
        size: int | None,
        blueprint_path: str = "",
        pool_labels=None,
        clock: Callable[[], float] = time.time,
        labels_path: str = "",
    ):
        blueprint, options = None, {}
        if blueprint_path:
            document = read_inventory_document(blueprint_path)
            blueprint = blueprint_from_list(document)
            options["workloads"] = blueprint_pods(document)
            if namespaces := blueprint_namespaces(document):
                options["namespaces"] = namespaces
        self.fleet = Fleet(
            seed=seed,
            size=size,
            nodes=blueprint,
            pool_labels=None if callable(pool_labels) else pool_labels,
            long_gpu_jobs=LONG_GPU_JOBS,
            **options,
        )
        self.clock = clock
        self.overlay = NodeLabelOverlay(labels_path) if labels_path else None
        self._listed: dict = {}  # the overlay's entries the last list showed: a watch goes on from them
        if callable(pool_labels):
            self.fleet.set_pool_labels(pool_labels(self._overlaid(self.fleet.nodes(self.clock()))))

    def _overlaid(self, nodes: list[dict]) -> list[dict]:
        """The fleet's nodes with the labels written to them."""
        entries = self.overlay.entries() if self.overlay is not None else {}
        if not entries:
            return nodes
        return [overlaid(node, entries.get(node["metadata"]["name"])) for node in nodes]

    def list_inventory(self) -> Inventory:
        now = self.clock()
        nodes, pods, _ = self.fleet.state(now)
        inventory = Inventory(resource_versions={"nodes": repr(now), "pods": repr(now)})
        self._listed = self.overlay.entries() if self.overlay is not None else {}
        add_objects(inventory, self._overlaid(nodes), default_kind="Node")
        add_objects(inventory, pods, default_kind="Pod")
        return inventory

    def ping(self) -> None:
        """A simulated fleet is always there."""

    def list_nodes(self) -> list[dict]:
        """Every node of the fleet now, with the labels written to it."""
        return self._overlaid(self.fleet.nodes(self.clock()))

    def read_node(self, name: str) -> dict:
        """One node now, with the labels written to it (NodeGone when the fleet has no such node)."""
        for node in self.list_nodes():
            if node["metadata"]["name"] == name:
                return node
        raise NodeGone(f"reading node {name}: it does not exist (HTTP 404)")

    def patch_node_labels(self, name: str, labels: Mapping[str, str | None], *, resource_version: str = "") -> dict:
        """Set labels on a node (``None`` removes one), as a JSON merge patch does; returns the updated Node object.

        With ``resource_version`` the patch applies only to that version of the node: NodeChanged when it changed
        since (a write, or the fleet's own change), NodeGone when the fleet has no such node. The write is kept in
        the overlay file (``node_labels``), where every process's next list, read and watch find it.
        """
        if self.overlay is None:
            raise InventoryError("this simulated backend keeps no node labels")
        base = next((node for node in self.fleet.nodes(self.clock()) if node["metadata"]["name"] == name), None)
        if base is None:
            raise NodeGone(f"labelling node {name}: it does not exist (HTTP 404)")

        def change(entry):
            current = overlaid(base, entry)
            if resource_version and current["metadata"]["resourceVersion"] != resource_version:
                raise NodeChanged(f"labelling node {name}: it changed meanwhile (HTTP 409 Conflict)")
            patched = entry_patched(base["metadata"].get("labels") or {}, entry, labels)
            return patched, overlaid(base, patched)

        return self.overlay.update(name, change)

    def watch(self, resource_versions: Mapping[str, str], stop: threading.Event) -> Iterator[list[WatchEvent]]:
        """The fleet's changes each second; a node whose labels were written (by any process) comes as MODIFIED."""
        since = float(resource_versions.get("pods") or self.clock())
        entries = self._listed
        while not stop.wait(1.0):
            until = self.clock()
            events = self.fleet.events(since, until)
            written: set[str] = set()
            current = self.overlay.entries() if self.overlay is not None else entries
            if current is not entries:  # the file changed (it is read again only then)
                previous, entries = entries, current
                written = {name for name in previous.keys() | entries.keys() if previous.get(name) != entries.get(name)}
            batch = [
                WatchEvent(
                    event.type,
                    "nodes",
                    overlaid(event.object, entries.get(event.object["metadata"]["name"])),
                )
                if event.object.get("kind") == "Node"
                else WatchEvent(event.type, "pods", event.object)
                for event in events
            ]
            if written:
                batch += [
                    WatchEvent("MODIFIED", "nodes", node)
                    for node in self._overlaid(self.fleet.nodes(until))
                    if node["metadata"]["name"] in written
                ]
            yield batch
            since = until


def source_for(backend, *, pool_labels: Mapping[str, Sequence[str]] | None = None) -> InventorySource:
    """The source that reads ``backend``'s inventory."""
    if backend.kind == BackendKind.FILE:
        return FileSource(backend.source)
    if backend.kind == BackendKind.KUBERNETES:
        kubeconfig = confined_kubeconfig(backend.kubeconfig) if backend.kubeconfig and not backend.in_cluster else ""
        return KubernetesSource(kubeconfig=kubeconfig, context=backend.context, in_cluster=backend.in_cluster)
    return SimulatedSource(
        seed=backend.seed or 0,
        size=backend.size,
        blueprint_path=backend.source,
        pool_labels=pool_labels,
        labels_path=node_labels_path(backend.name),
    )
