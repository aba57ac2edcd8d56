"""GPU utilization from Prometheus: a small client of its HTTP API, and NVIDIA's DCGM exporter series read in bulk.

``PrometheusClient(url)`` answers ``query(expr, at=...)`` (``/api/v1/query``) and ``query_range(expr, start, end,
step)`` (``/api/v1/query_range``) with plain values: ``Sample`` (one series at one instant) and ``Series`` (one
series over time). Times are epoch seconds (floats), values floats (``NaN`` and infinities as Prometheus wrote them).

Every call is bounded and fails the same way. The connection must open within ``connect_timeout`` (2 s), and the
server may stay silent for at most ``read_timeout`` (10 s), the time Prometheus is also given to evaluate (its
``timeout`` parameter); an answer still arriving when the two added up have passed is abandoned at its next read.
The answer is read up to ``max_bytes`` (128 MiB, after decompression) and no further.
Anything that goes wrong raises ``PrometheusError``, whose message is one sentence fit for a status line and whose
``reason`` says which kind of failure it was (``REASONS``): a page that shows utilization catches it, shows the
sentence and goes on.

``gpu_utilization(client)`` reads the four gauges of the DCGM exporter for every GPU in four queries (one per metric,
however many GPUs there are) and joins them per device and workload; ``idle_since(client)`` finds the devices held
by a pod that stayed at or below a utilization threshold over a window, in one query.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import msgspec
import requests
import urllib3
from urllib3.exceptions import ReadTimeoutError

from pools.inventory.records import paused_gc

DEFAULT_CONNECT_TIMEOUT = 2.0  # seconds
DEFAULT_READ_TIMEOUT = 10.0  # seconds of silence, and the time Prometheus may take to evaluate
DEFAULT_MAX_BYTES = 128 * 2**20  # 40,000 series of one DCGM gauge are about 13 MB of JSON
# What went wrong, as ``PrometheusError.reason``: the status a page shows depends on it.
REASONS = ("unreachable", "timeout", "http", "query", "malformed", "too_large")

# NVIDIA dcgm-exporter's gauges (the names of its default counters file) and the labels that name a device.
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"  # %
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # ratio 0-1
DEVICE_LABELS = ("Hostname", "gpu", "UUID", "GPU_I_ID", "vgpu")
WORKLOAD_LABELS = ("namespace", "pod", "container")


# Prometheus's HTTP API error types (its documentation), the only words of an error answer repeated here.
API_ERROR_TYPES = frozenset({"bad_data", "execution", "timeout", "canceled", "internal", "unavailable", "not_found"})
# Its result types: anything else a service answers is "unknown", not echoed.
RESULT_TYPES = frozenset({"vector", "matrix", "scalar", "string"})


def _kind(result_type: str) -> str:
    return result_type if result_type in RESULT_TYPES else "missing" if not result_type else "unknown"


class PrometheusError(Exception):
    """Prometheus did not give an answer: ``str(error)`` is one sentence for a status line.

    ``reason`` is one of ``REASONS``; ``error_type`` is Prometheus's own (``bad_data``, ``execution``, ``timeout``...)
    when it refused the query, and ``status`` the HTTP status when there was one.
    """

    def __init__(self, message: str, *, reason: str, error_type: str = "", status: int | None = None):
        super().__init__(message)
        self.reason = reason
        self.error_type = error_type
        self.status = status


@dataclass(frozen=True, slots=True)
class Sample:
    """One series at one instant: its labels (``__name__`` included when the query keeps it), time and value."""

    labels: Mapping[str, str]
    t: float
    value: float


@dataclass(frozen=True, slots=True)
class Series:
    """One series over time: its labels and its (t, value) points in time order."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


# -- the wire format ---------------------------------------------------------------------------------------------


class _Answer(msgspec.Struct):
    status: str = ""
    data: msgspec.Raw = msgspec.Raw()
    error_type: str = msgspec.field(default="", name="errorType")
    error: str = ""


class _Data(msgspec.Struct):
    result_type: str = msgspec.field(name="resultType")
    result: msgspec.Raw


class _InstantSeries(msgspec.Struct):
    value: tuple[float, str]
    metric: dict[str, str] = {}


class _RangeSeries(msgspec.Struct):
    values: list[tuple[float, str]]
    metric: dict[str, str] = {}


_ANSWER = msgspec.json.Decoder(_Answer)
_DATA = msgspec.json.Decoder(_Data)
_VECTOR = msgspec.json.Decoder(list[_InstantSeries])
_MATRIX = msgspec.json.Decoder(list[_RangeSeries])
_SCALAR = msgspec.json.Decoder(tuple[float, str])


def _number(text: str) -> float:
    """A sample value as Prometheus writes it: a decimal, ``NaN``, ``+Inf`` or ``-Inf``."""
    try:
        return float(text)
    except ValueError:
        raise PrometheusError("Prometheus answered a value that is not a number.", reason="malformed")


def parse_answer(body: bytes, *, status: int = 200) -> tuple[str, bytes]:
    """The ``(resultType, raw result)`` of an API answer; raises PrometheusError for an error answer (with
    Prometheus's error type and message), an HTTP status that is not a success, or a body that is not an answer."""
    try:
        answer = _ANSWER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        answer = None
    if answer is not None and answer.status == "error":
        # What the service says is not repeated: a backend's URL may lead anywhere (SEMANTICS §7.4).
        kind = answer.error_type if answer.error_type in API_ERROR_TYPES else "error"
        raise PrometheusError(
            f"Prometheus refused the query ({kind}).",
            reason="query",
            error_type=answer.error_type,
            status=status,
        )
    if not 200 <= status < 300:
        if status in (401, 403):
            raise PrometheusError(f"Prometheus refused the credentials (HTTP {status}).", reason="http", status=status)
        raise PrometheusError(f"Prometheus answered HTTP {status}.", reason="http", status=status)
    if answer is None or answer.status != "success" or not answer.data:
        raise PrometheusError("Prometheus's answer is not an API answer.", reason="malformed", status=status)
    try:
        data = _DATA.decode(answer.data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise PrometheusError("Prometheus's answer has no result.", reason="malformed", status=status)
    return data.result_type, data.result


def parse_vector(result_type: str, result: bytes) -> list[Sample]:
    """An instant query's result as samples: a vector's series, or a scalar as one sample without labels."""
    try:
        if result_type == "vector":
            return [Sample(item.metric, item.value[0], _number(item.value[1])) for item in _VECTOR.decode(result)]
        if result_type == "scalar":
            t, text = _SCALAR.decode(result)
            return [Sample({}, t, _number(text))]
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise PrometheusError(f"Prometheus's {_kind(result_type)} result is malformed.", reason="malformed")
    if result_type == "matrix":
        raise PrometheusError(
            "The query gives a range vector: read it with query_range, or wrap it in a *_over_time function.",
            reason="query",
        )
    raise PrometheusError(f"Prometheus answered a {_kind(result_type)} result, not a vector.", reason="malformed")


def parse_matrix(result_type: str, result: bytes) -> list[Series]:
    """A range query's result as series, their points in time order."""
    if result_type != "matrix":
        raise PrometheusError(f"Prometheus answered a {_kind(result_type)} result, not a matrix.", reason="malformed")
    try:
        items = _MATRIX.decode(result)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise PrometheusError("Prometheus's matrix result is malformed.", reason="malformed")
    return [Series(item.metric, tuple((t, _number(text)) for t, text in item.values)) for item in items]


# -- the client --------------------------------------------------------------------------------------------------


def _seconds(value: float, name: str) -> str:
    """A time or duration in seconds as the API takes it; ValueError when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number of seconds, not {value!r}.")
    return f"{value:.3f}"


def _cause(exc: BaseException) -> str:
    """The operating system's words for why a connection failed ("Connection refused"), else the error's class."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        pending += [arg for arg in current.args if isinstance(arg, BaseException)]
        pending += [link for link in (current.__cause__, current.__context__) if link is not None]
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            pending.append(reason)
    return type(exc).__name__


class PrometheusClient:
    """A Prometheus server's HTTP API at ``url`` (``http://127.0.0.1:9090``, or a path prefix behind a proxy).

    ``token`` sends ``Authorization: Bearer``; ``username``/``password`` basic authentication (not both). ``verify``
    is requests' (False, or a CA bundle's path). Answers come uncompressed unless ``compress``: gzip costs Prometheus
    more CPU than the bytes cost on loopback or a LAN (the four DCGM answers of 40,000 GPUs are 50 MB), and helps
    over a slow link. A client holds a connection pool: ``close()`` it, or use ``with``. Threads may share it.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        token: str | None = None,
        username: str | None = None,
        password: str | None = None,
        verify: bool | str = True,
        compress: bool = False,
    ):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"A Prometheus URL is http:// or https:// and a host, not {url!r}.")
        if parts.username or parts.password:
            raise ValueError("Give Prometheus's credentials as username and password, not in the URL.")
        if token and (username or password):
            raise ValueError("Authenticate to Prometheus with a token or a username and password, not both.")
        for name, value in (("connect_timeout", connect_timeout), ("read_timeout", read_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 300:
                raise ValueError(f"{name} must be between 0 and 300 seconds, not {value!r}.")
        self.url = url.rstrip("/")
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_bytes = max_bytes
        self._session = requests.Session()
        self._session.verify = verify
        self._session.headers["Accept"] = "application/json"
        self._session.headers["Accept-Encoding"] = "gzip" if compress else "identity"
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        elif username or password:
            self._session.auth = (username or "", password or "")

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def query(self, expr: str, *, at: float | None = None) -> list[Sample]:
        """The instant vector (or scalar) ``expr`` evaluates to at ``at`` (default: Prometheus's now).

        Each sample's ``t`` is the evaluation time, not the time it was scraped (``timestamp(expr)`` gives that).
        """
        return parse_vector(*self._instant(expr, at))

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """``expr`` evaluated at ``start``, ``start + step``, ... up to ``end``: one ``Series`` per label set."""
        if not (isinstance(step, int | float) and step > 0):
            raise ValueError(f"step must be a positive number of seconds, not {step!r}.")
        params = {"query": expr, "start": _seconds(start, "start"), "end": _seconds(end, "end")}
        params["step"] = _seconds(step, "step")
        return parse_matrix(*self._call("query_range", params))

    def _instant(self, expr: str, at: float | None) -> tuple[str, bytes]:
        """An instant query's (resultType, raw result), for readers that decode the result their own way."""
        params = {"query": expr}
        if at is not None:
            params["time"] = _seconds(at, "at")
        return self._call("query", params)

    def _call(self, endpoint: str, params: dict[str, str]) -> tuple[str, bytes]:
        # Prometheus gives up evaluating at the same time as we give up waiting.
        params = {**params, "timeout": f"{self.read_timeout:g}s"}
        url = f"{self.url}/api/v1/{endpoint}"
        deadline = time.monotonic() + self.connect_timeout + self.read_timeout
        try:
            response = self._session.post(
                url, data=params, timeout=(self.connect_timeout, self.read_timeout), stream=True
            )
        except requests.exceptions.ConnectTimeout:
            raise self._timeout(f"did not accept a connection within {self.connect_timeout:g} s")
        except requests.exceptions.Timeout:
            raise self._timeout(f"did not answer within {self.read_timeout:g} s")
        except requests.RequestException as exc:
            raise PrometheusError(f"Prometheus at {self.url} is unreachable ({_cause(exc)}).", reason="unreachable")
        with response:
            body = self._read(response, deadline)
        return parse_answer(body, status=response.status_code)

    def _read(self, response: requests.Response, deadline: float) -> bytes:
        """The body, read as it arrives: each read waits at most ``read_timeout``, and past ``deadline`` an answer
        still trickling in is abandoned (``iter_content`` would wait for whole chunks)."""
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        chunks, size = [], 0
        try:
            while chunk := response.raw.read1(1 << 20, decode_content=True):
                size += len(chunk)
                if size > self.max_bytes:
                    raise self._too_large()
                if time.monotonic() > deadline:
                    raise self._timeout(f"did not finish its answer within {self.read_timeout:g} s")
                chunks.append(chunk)
        except ReadTimeoutError:
            raise self._timeout(f"stopped answering for {self.read_timeout:g} s")
        except urllib3.exceptions.DecodeError as exc:
            raise PrometheusError(
                f"Prometheus at {self.url} sent an answer that cannot be decompressed ({_cause(exc)}).",
                reason="malformed",
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise PrometheusError(
                f"Prometheus at {self.url} broke off its answer ({_cause(exc)}).", reason="unreachable"
            )
        return b"".join(chunks)

    def _timeout(self, what: str) -> PrometheusError:
        return PrometheusError(f"Prometheus at {self.url} {what}.", reason="timeout")

    def _too_large(self) -> PrometheusError:
        return PrometheusError(
            f"Prometheus's answer is larger than {self.max_bytes:,} bytes: narrow the query.", reason="too_large"
        )


# -- DCGM exporter series ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One device (a GPU, a MIG instance, a time-sliced share) and the workload on it, at one instant.

    The label values are as the exporter wrote them (``gpu="0"``), ``""`` where it wrote none: ``gpu_instance_id``
    and ``gpu_instance_profile`` for a whole GPU, ``vgpu`` for one that is not time-sliced, the workload's labels
    when no pod holds the device. A metric without a series for the device is None: MIG instances have no
    ``DCGM_FI_DEV_GPU_UTIL`` (``gr_engine_active`` is their signal), and an exporter without the profiling
    counters has no ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``.
    """

    hostname: str
    gpu: str
    uuid: str
    gpu_instance_id: str
    vgpu: str
    model: str
    gpu_instance_profile: str
    namespace: str
    pod: str
    container: str
    util: float | None  # %, 0-100
    fb_used: float | None  # MiB
    fb_free: float | None  # MiB
    gr_engine_active: float | None  # ratio, 0-1


class _DeviceLabels(msgspec.Struct, frozen=True):
    """The labels of a DCGM series that ``GpuReading`` keeps; the others (``instance``, ``device``...) go unread."""

    hostname: str = msgspec.field(default="", name="Hostname")
    gpu: str = ""
    uuid: str = msgspec.field(default="", name="UUID")
    gpu_instance_id: str = msgspec.field(default="", name="GPU_I_ID")
    vgpu: str = ""
    namespace: str = ""
    pod: str = ""
    container: str = ""
    model: str = msgspec.field(default="", name="modelName")
    gpu_instance_profile: str = msgspec.field(default="", name="GPU_I_PROFILE")


class _DeviceSample(msgspec.Struct):
    metric: _DeviceLabels
    value: tuple[float, str]


_DEVICE_VECTOR = msgspec.json.Decoder(list[_DeviceSample])
# The labels a reading keeps: the queries aggregate every series to these (``max by``), so that Prometheus writes,
# and the console decodes, a third less (no ``instance``, ``job``, ``device``, driver...).
_KEPT_LABELS = (*DEVICE_LABELS, *WORKLOAD_LABELS, "modelName", "GPU_I_PROFILE")
_READING_METRICS = (GPU_UTIL, FB_USED, FB_FREE, GR_ENGINE_ACTIVE)  # in the order of GpuReading's values


def label_matcher(name: str, value: str) -> str:
    """``name="value"`` with the value quoted as PromQL reads a string (backslash and double quote escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{escaped}"'


def reading_query(metric: str, *, host: str = "", mig_only: bool = False) -> str:
    """The PromQL ``gpu_utilization`` sends for one DCGM gauge: every device (of ``host`` when given; MIG instances
    only with ``mig_only``), aggregated to the labels a reading keeps."""
    matchers = [label_matcher("Hostname", host)] if host else []
    if mig_only:
        matchers.append('GPU_I_ID!=""')
    selector = f"{metric}{{{','.join(matchers)}}}" if matchers else metric
    return f"max by ({','.join(_KEPT_LABELS)}) ({selector})"


def _device_vector(client: PrometheusClient, expr: str, at: float | None, what: str) -> list[_DeviceSample]:
    """The instant vector ``expr``, decoded straight into the labels a reading keeps (40,000 series in about 0.1 s,
    a third of the time of ``query``'s label dictionaries)."""
    result_type, result = client._instant(expr, at)
    if result_type != "vector":
        raise PrometheusError(
            f"Prometheus answered a {_kind(result_type)} result for {what}, not a vector.", reason="malformed"
        )
    try:
        return _DEVICE_VECTOR.decode(result)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise PrometheusError(f"Prometheus's series of {what} are malformed.", reason="malformed")


def gpu_utilization(
    client: PrometheusClient,
    *,
    at: float | None = None,
    host: str = "",
    engine_activity: str = "all",
    free_memory: bool = True,
) -> list[GpuReading]:
    """Every device the DCGM exporters report (those of the node ``host`` when given), with its four gauges at
    ``at`` (default: now).

    Four instant queries, one per metric, sent together, whatever the number of GPUs. ``engine_activity="mig"``
    reads ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` of MIG instances only (their one utilization signal; a whole GPU has
    ``DCGM_FI_DEV_GPU_UTIL``), which spares Prometheus a quarter of the work; the others' is then None. Without
    ``free_memory`` (a caller that knows each device's memory already), ``DCGM_FI_DEV_FB_FREE`` is not read. Series
    are joined on the device's labels (``DEVICE_LABELS``) and the workload's (``WORKLOAD_LABELS``): a device whose
    previous pod's series has not gone stale yet is one reading per pod, and two scrape jobs reporting the same
    device are one.
    Sorted by host, GPU, MIG instance and share. Raises PrometheusError when any query fails.
    """
    with paused_gc(), ThreadPoolExecutor(max_workers=len(_READING_METRICS)) as pool:
        if engine_activity not in ("all", "mig"):
            raise ValueError(f"engine_activity is 'all' or 'mig', not {engine_activity!r}")
        mig_only = engine_activity == "mig"
        answers = list(
            pool.map(
                lambda metric: (
                    _device_vector(
                        client,
                        reading_query(metric, host=host, mig_only=mig_only and metric == GR_ENGINE_ACTIVE),
                        at,
                        metric,
                    )
                    if free_memory or metric != FB_FREE
                    else []
                ),
                _READING_METRICS,
            )
        )
        found: dict[tuple[str, ...], list] = {}  # key -> [labels, util, fb_used, fb_free, gr_engine_active]
        for position, samples in enumerate(answers, start=1):
            for sample in samples:
                labels = sample.metric
                key = (
                    labels.hostname,
                    labels.gpu,
                    labels.uuid,
                    labels.gpu_instance_id,
                    labels.vgpu,
                    labels.namespace,
                    labels.pod,
                    labels.container,
                )
                entry = found.get(key)
                if entry is None:
                    entry = found[key] = [labels, None, None, None, None]
                entry[position] = _number(sample.value[1])
        readings = [
            GpuReading(
                labels.hostname,
                labels.gpu,
                labels.uuid,
                labels.gpu_instance_id,
                labels.vgpu,
                labels.model,
                labels.gpu_instance_profile,
                labels.namespace,
                labels.pod,
                labels.container,
                util,
                fb_used,
                fb_free,
                gr_engine_active,
            )
            for labels, util, fb_used, fb_free, gr_engine_active in found.values()
        ]
        readings.sort(key=_reading_order)
    return readings


def _index(text: str) -> tuple[int, str]:
    """A label that holds an index (``gpu``, ``GPU_I_ID``, ``vgpu``), to sort "10" after "9"."""
    return (int(text), "") if text.isdigit() else (-1, text)


def _reading_order(reading: GpuReading) -> tuple:
    return (
        reading.hostname,
        _index(reading.gpu),
        _index(reading.gpu_instance_id),
        _index(reading.vgpu),
        reading.namespace,
        reading.pod,
        reading.container,
    )


@dataclass(frozen=True, slots=True)
class IdleDevice:
    """A device held by a pod whose utilization stayed at or below the threshold over the whole window."""

    hostname: str
    gpu: str
    uuid: str
    vgpu: str
    namespace: str
    pod: str
    container: str
    max_util: float  # %, the highest sample in the window


_IDLE_LABELS = ("Hostname", "gpu", "UUID", "vgpu", *WORKLOAD_LABELS)


def idle_query(*, threshold_percent: float = 0, window_seconds: float = 300) -> str:
    """The PromQL ``idle_since`` sends: every sample of the window at or below the threshold, and the last one
    before the window too, so the quiet stretch began at or before the window's start (it is at least as long).
    """
    if isinstance(threshold_percent, bool) or not isinstance(threshold_percent, int | float):
        raise ValueError(f"The utilization threshold must be a number, not {threshold_percent!r}.")
    if not 0 <= threshold_percent <= 100:  # NaN too
        raise ValueError(f"The utilization threshold must be between 0 and 100 %, not {threshold_percent!r}.")
    if isinstance(window_seconds, bool) or not isinstance(window_seconds, int | float):
        raise ValueError(f"The idle window must be a number of seconds, not {window_seconds!r}.")
    if not 1 <= window_seconds <= 31 * 86400:  # NaN too
        raise ValueError(f"The idle window must be between 1 s and 31 days, not {window_seconds!r} s.")
    threshold, window_ms = repr(float(threshold_percent)), round(window_seconds * 1000)
    window = f"{window_ms // 1000}s" if window_ms % 1000 == 0 else f"{window_ms}ms"
    held = f'{GPU_UTIL}{{pod!=""}}'
    quiet = f"max_over_time({held}[{window}]) <= {threshold} and ({held} offset {window}) <= {threshold}"
    return f"max by ({','.join(_IDLE_LABELS)}) ({quiet})"  # only the labels an IdleDevice keeps


def idle_since(
    client: PrometheusClient, *, threshold_percent: float = 0, window_seconds: float = 300, at: float | None = None
) -> list[IdleDevice]:
    """The devices held by a pod and quiet (``DCGM_FI_DEV_GPU_UTIL`` at or below ``threshold_percent``) for at least
    ``window_seconds`` before ``at`` (default: now), as Run:ai counts idle GPUs (0 %, 300 s by default); one query.

    A series counts from its first sample: a pod that started within the window is not idle yet. MIG instances
    have no ``DCGM_FI_DEV_GPU_UTIL`` and are never found. Sorted by namespace, pod, host and GPU. Raises
    ValueError for a threshold outside 0-100 % or a window outside 1 s-31 days, PrometheusError when the query
    fails.
    """
    expr = idle_query(threshold_percent=threshold_percent, window_seconds=window_seconds)
    found = [
        IdleDevice(
            labels.hostname,
            labels.gpu,
            labels.uuid,
            labels.vgpu,
            labels.namespace,
            labels.pod,
            labels.container,
            _number(sample.value[1]),
        )
        for sample in _device_vector(client, expr, at, "the idle devices")
        for labels in (sample.metric,)
    ]
    found.sort(key=lambda idle: (idle.namespace, idle.pod, idle.hostname, _index(idle.gpu), _index(idle.vgpu)))
    return found
