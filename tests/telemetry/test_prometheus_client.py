"""The Prometheus client without Prometheus: answers parsed from canned JSON, and a canned server on loopback for
what only a connection shows (headers, size bound, timeouts, HTTP statuses) and for the DCGM join."""

from __future__ import annotations

import gzip
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest
from test_architecture import offenders

from pools.telemetry.prometheus import (
    FB_FREE,
    FB_USED,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    GpuReading,
    IdleDevice,
    PrometheusClient,
    PrometheusError,
    Sample,
    Series,
    gpu_utilization,
    idle_query,
    idle_since,
    parse_answer,
    parse_matrix,
    parse_vector,
    reading_query,
)


def answer(result_type, result) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}}).encode()


def vector(*series) -> bytes:
    """A vector answer of (labels, value) pairs at t=1700000000.5."""
    return answer("vector", [{"metric": labels, "value": [1700000000.5, value]} for labels, value in series])


def failure(error_type, message) -> bytes:
    return json.dumps({"status": "error", "errorType": error_type, "error": message}).encode()


def error_of(call) -> PrometheusError:
    with pytest.raises(PrometheusError) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message and message == message.strip()  # one sentence for a status line
    return raised.value


def test_the_package_imports_no_django_and_nothing_of_the_apps():
    allowed = ("pools.telemetry", "pools.inventory.records", "pools.engine")
    assert (
        offenders(
            "pools/telemetry",
            lambda name: (
                name.split(".")[0] in {"django", "rest_framework", "accounts", "celery"}
                or (name.startswith("pools.") and not name.startswith(allowed))
            ),
        )
        == []
    )


# -- parsing canned answers (no network) ---------------------------------------------------------------------------


def test_a_vector_becomes_samples_with_their_labels_time_and_value():
    body = vector(({"__name__": "up", "job": "dcgm"}, "1"), ({"job": "b"}, "0.25"))
    assert parse_vector(*parse_answer(body)) == [
        Sample({"__name__": "up", "job": "dcgm"}, 1700000000.5, 1.0),
        Sample({"job": "b"}, 1700000000.5, 0.25),
    ]
    assert parse_vector(*parse_answer(answer("vector", []))) == []


def test_special_values_are_floats_as_prometheus_writes_them():
    samples = parse_vector(*parse_answer(vector(({}, "NaN"), ({}, "+Inf"), ({}, "-Inf"), ({}, "1e-05"))))
    values = [sample.value for sample in samples]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 1e-05]


def test_a_scalar_is_one_sample_without_labels():
    assert parse_vector(*parse_answer(answer("scalar", [1700000000, "2"]))) == [Sample({}, 1700000000.0, 2.0)]


def test_a_matrix_becomes_series_of_points():
    body = answer(
        "matrix",
        [{"metric": {"gpu": "0"}, "values": [[10, "1"], [25, "2"]]}, {"metric": {"gpu": "1"}, "values": []}],
    )
    assert parse_matrix(*parse_answer(body)) == [
        Series({"gpu": "0"}, ((10.0, 1.0), (25.0, 2.0))),
        Series({"gpu": "1"}, ()),
    ]


def test_prometheus_own_error_is_carried_with_its_type_and_status_but_not_its_words():
    """A backend's URL may lead anywhere: what the service says is never repeated (SEMANTICS §7.4)."""
    error = error_of(lambda: parse_answer(failure("bad_data", "1:5: parse error:\n unexpected end"), status=400))
    assert str(error) == "Prometheus refused the query (bad_data)."
    assert str(error_of(lambda: parse_answer(failure("<script>", "x"), status=400))) == (
        "Prometheus refused the query (error)."
    )
    assert (error.reason, error.error_type, error.status) == ("query", "bad_data", 400)
    error = error_of(lambda: parse_answer(failure("timeout", "query timed out in expression evaluation"), status=503))
    assert (error.reason, error.error_type, error.status) == ("query", "timeout", 503)


def test_http_statuses_without_an_api_answer():
    assert (
        str(error_of(lambda: parse_answer(b"<html>Bad Gateway</html>", status=502))) == "Prometheus answered HTTP 502."
    )
    error = error_of(lambda: parse_answer(b"Unauthorized", status=401))
    assert (str(error), error.reason, error.status) == ("Prometheus refused the credentials (HTTP 401).", "http", 401)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"status": "success"}',
        b'{"status": "success", "data": {"result": []}}',
        b'{"status": "pending", "data": {"resultType": "vector", "result": []}}',
    ],
)
def test_a_body_that_is_not_an_api_answer_is_malformed(body):
    assert error_of(lambda: parse_answer(body)).reason == "malformed"


@pytest.mark.parametrize(
    "result",
    [
        [{"metric": {}, "value": [1, "abc"]}],  # not a number
        [{"metric": {}}],  # no value
        [{"metric": {"gpu": 0}, "value": [1, "1"]}],  # a label that is not a string
        {"metric": {}},  # not a list
    ],
)
def test_a_vector_with_a_bad_series_is_malformed(result):
    assert error_of(lambda: parse_vector(*parse_answer(answer("vector", result)))).reason == "malformed"


def test_a_range_vector_or_string_is_not_read_as_an_instant_vector():
    error = error_of(lambda: parse_vector(*parse_answer(answer("matrix", []))))
    assert error.reason == "query" and "query_range" in str(error)
    assert error_of(lambda: parse_vector(*parse_answer(answer("string", [1, "x"])))).reason == "malformed"
    assert error_of(lambda: parse_matrix(*parse_answer(answer("vector", [])))).reason == "malformed"


def test_the_idle_query_asks_for_a_quiet_window_and_a_quiet_sample_before_it():
    assert idle_query() == (
        "max by (Hostname,gpu,UUID,vgpu,namespace,pod,container) ("
        'max_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[300s]) <= 0.0'
        ' and (DCGM_FI_DEV_GPU_UTIL{pod!=""} offset 300s) <= 0.0)'
    )
    assert "[1500ms]" in idle_query(threshold_percent=12.5, window_seconds=1.5)
    assert "<= 12.5" in idle_query(threshold_percent=12.5, window_seconds=1.5)


@pytest.mark.parametrize(
    "options",
    [
        {"threshold_percent": -1},
        {"threshold_percent": 100.5},
        {"threshold_percent": math.nan},
        {"threshold_percent": True},
        {"threshold_percent": "5"},
        {"window_seconds": 0.5},
        {"window_seconds": math.inf},
        {"window_seconds": math.nan},
        {"window_seconds": 32 * 86400},
    ],
)
def test_the_idle_query_refuses_a_threshold_or_window_out_of_range(options):
    with pytest.raises(ValueError):
        idle_query(**options)


@pytest.mark.parametrize(
    "options",
    [
        {"url": "127.0.0.1:9090"},
        {"url": "ftp://prometheus"},
        {"url": "http://user:secret@prometheus:9090"},
        {"url": "http://prometheus:9090", "token": "t", "username": "u"},
        {"url": "http://prometheus:9090", "read_timeout": 0},
        {"url": "http://prometheus:9090", "connect_timeout": 1000},
        {"url": "http://prometheus:9090", "connect_timeout": True},
    ],
)
def test_a_client_refuses_a_bad_url_credentials_or_timeouts(options):
    with pytest.raises(ValueError):
        PrometheusClient(**options)


# -- a canned server on loopback -----------------------------------------------------------------------------------


class CannedPrometheus:
    """Answers each query with ``answers[query]`` (default: an empty vector): a body, or (status, body, headers),
    or a callable that writes the answer itself. Keeps the requests it got."""

    def __init__(self):
        self.answers: dict = {}
        self.requests: list[tuple[str, dict, dict]] = []  # (path, form, headers)
        canned = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                form = {key: values[0] for key, values in parse_qs(self.rfile.read(length).decode()).items()}
                canned.requests.append((self.path, form, dict(self.headers)))
                found = canned.answers.get(form.get("query"), answer("vector", []))
                if callable(found):
                    found(self)
                    return
                status, body, headers = found if isinstance(found, tuple) else (200, found, {})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canned():
    server = CannedPrometheus()
    yield server
    server.close()


def test_queries_are_posted_with_the_time_prometheus_timeout_and_no_compression(canned):
    canned.answers["up"] = vector(({"job": "dcgm"}, "1"))
    with PrometheusClient(canned.url + "/", read_timeout=7.5) as client:
        assert client.query("up", at=1700000000.25) == [Sample({"job": "dcgm"}, 1700000000.5, 1.0)]
        canned.answers["rate(up[1m])"] = answer("matrix", [])
        assert client.query_range("rate(up[1m])", 100, 200, 15) == []
    (path, form, headers), (range_path, range_form, _) = canned.requests
    assert (path, form) == ("/api/v1/query", {"query": "up", "time": "1700000000.250", "timeout": "7.5s"})
    assert range_path == "/api/v1/query_range"
    assert range_form == {
        "query": "rate(up[1m])",
        "start": "100.000",
        "end": "200.000",
        "step": "15.000",
        "timeout": "7.5s",
    }
    assert headers["Accept-Encoding"] == "identity" and "Authorization" not in headers


def test_a_bearer_token_or_basic_credentials_are_sent(canned):
    with PrometheusClient(canned.url, token="s3cret") as client:
        client.query("up")
    with PrometheusClient(canned.url, username="console", password="pw") as client:
        client.query("up")
    assert [headers["Authorization"] for _, _, headers in canned.requests] == [
        "Bearer s3cret",
        "Basic Y29uc29sZTpwdw==",
    ]


def test_compressed_answers_when_asked(canned):
    body = vector(({"job": "dcgm"}, "1"))
    canned.answers["up"] = (200, gzip.compress(body), {"Content-Encoding": "gzip"})
    canned.answers["corrupt"] = (200, b"not gzip at all", {"Content-Encoding": "gzip"})
    with PrometheusClient(canned.url, compress=True) as client:
        assert client.query("up") == [Sample({"job": "dcgm"}, 1700000000.5, 1.0)]
        assert error_of(lambda: client.query("corrupt")).reason == "malformed"
    assert canned.requests[0][2]["Accept-Encoding"] == "gzip"


def test_an_error_status_with_prometheus_answer_and_without(canned):
    canned.answers["bad("] = (400, failure("bad_data", "1:5: parse error: unclosed left parenthesis"), {})
    canned.answers["secret"] = (403, b"Forbidden", {})
    with PrometheusClient(canned.url) as client:
        error = error_of(lambda: client.query("bad("))
        assert (error.reason, error.error_type, error.status) == ("query", "bad_data", 400)
        assert "unclosed left parenthesis" not in str(error)
        assert str(error_of(lambda: client.query("secret"))) == "Prometheus refused the credentials (HTTP 403)."


def test_an_answer_larger_than_the_bound_is_not_read(canned):
    big = vector(*[({"gpu": str(n)}, "1") for n in range(2000)])

    def chunked(handler):  # no Content-Length: the bound holds while reading
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for start in range(0, len(big), 4096):
            piece = big[start : start + 4096]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")

    canned.answers["big"] = big
    canned.answers["big chunked"] = chunked
    with PrometheusClient(canned.url, max_bytes=len(big) - 1) as client:
        for query in ("big", "big chunked"):
            error = error_of(lambda query=query: client.query(query))
            assert error.reason == "too_large" and f"larger than {len(big) - 1:,} bytes" in str(error)
    with PrometheusClient(canned.url, max_bytes=len(big)) as client:
        assert len(client.query("big chunked")) == 2000


def test_a_silent_server_times_out_quickly(canned):
    canned.answers["slow"] = lambda handler: time.sleep(5)
    with PrometheusClient(canned.url, read_timeout=0.5) as client:
        started = time.monotonic()
        error = error_of(lambda: client.query("slow"))
        assert time.monotonic() - started < 3
    assert error.reason == "timeout"
    assert str(error) == f"Prometheus at {canned.url} did not answer within 0.5 s."


def test_an_answer_that_trickles_in_is_abandoned_at_the_deadline(canned):
    body = vector(({}, "1"))

    def trickle(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for byte in body:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.1)

    canned.answers["trickle"] = trickle
    with PrometheusClient(canned.url, connect_timeout=0.5, read_timeout=0.5) as client:
        started = time.monotonic()
        error = error_of(lambda: client.query("trickle"))
        assert time.monotonic() - started < 3
    assert error.reason == "timeout" and "did not finish its answer within 0.5 s" in str(error)


def test_an_answer_broken_off_is_reported(canned):
    def broken(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        handler.wfile.write(b'{"status": "succ')
        handler.close_connection = True

    canned.answers["broken"] = broken
    with PrometheusClient(canned.url) as client:
        error = error_of(lambda: client.query("broken"))
    assert error.reason == "unreachable" and str(error).startswith(f"Prometheus at {canned.url} broke off its answer")


def test_nothing_listening_is_unreachable():
    server = CannedPrometheus()
    server.close()
    with PrometheusClient(server.url) as client:
        error = error_of(lambda: client.query("up"))
    assert (error.reason, str(error)) == (
        "unreachable",
        f"Prometheus at {server.url} is unreachable (Connection refused).",
    )


# -- the DCGM readings ---------------------------------------------------------------------------------------------


def dcgm(hostname="node-1", gpu="0", **labels) -> dict:
    uuid = f"GPU-{hostname}-{gpu}"
    return {
        "Hostname": hostname,
        "gpu": gpu,
        "UUID": uuid,
        "modelName": "NVIDIA-H100-80GB-HBM3",
        "job": "dcgm",
        **labels,
    }


POD_A = {"namespace": "team", "pod": "a", "container": "main"}
MIG = {"GPU_I_ID": "1", "GPU_I_PROFILE": "1g.10gb"}


def test_gpu_utilization_joins_the_four_metrics_per_device_and_workload(canned):
    canned.answers[reading_query(GPU_UTIL)] = vector(
        (dcgm(gpu="10", **POD_A), "90"),
        (dcgm(gpu="9"), "0"),
        (dcgm(gpu="2", vgpu="1", **POD_A), "40"),
        (dcgm(gpu="3", namespace="team", pod="old", container="main"), "5"),
        (dcgm(gpu="3", namespace="team", pod="new", container="main"), "70"),
    )
    canned.answers[reading_query(FB_USED)] = vector(
        (dcgm(gpu="10", **POD_A, instance="exporter-a"), "60000"),
        (dcgm(gpu="10", **POD_A, instance="exporter-b"), "60000"),  # a second scrape job: the same device
        (dcgm(gpu="9"), "0"),
        (dcgm(gpu="2", vgpu="1", **POD_A), "10000"),
        (dcgm(gpu="0", **MIG, **POD_A), "9000"),
        (dcgm(gpu="3", namespace="team", pod="old", container="main"), "1"),
        (dcgm(gpu="3", namespace="team", pod="new", container="main"), "2"),
    )
    canned.answers[reading_query(FB_FREE)] = vector(
        (dcgm(gpu="10", **POD_A), "21559"), (dcgm(gpu="0", **MIG, **POD_A), "728")
    )
    canned.answers[reading_query(GR_ENGINE_ACTIVE)] = vector(
        (dcgm(gpu="10", **POD_A), "0.81"), (dcgm(gpu="0", **MIG, **POD_A), "0.5")
    )
    with PrometheusClient(canned.url) as client:
        readings = gpu_utilization(client, at=1700000000)

    assert sorted(form["query"] for _, form, _ in canned.requests) == sorted(
        reading_query(metric) for metric in [GPU_UTIL, FB_USED, FB_FREE, GR_ENGINE_ACTIVE]
    )
    assert {form["time"] for _, form, _ in canned.requests} == {"1700000000.000"}
    model = "NVIDIA-H100-80GB-HBM3"
    assert readings == [
        GpuReading("node-1", "0", "GPU-node-1-0", "1", "", model, "1g.10gb", "team", "a", "main", None, 9000, 728, 0.5),
        GpuReading("node-1", "2", "GPU-node-1-2", "", "1", model, "", "team", "a", "main", 40, 10000, None, None),
        GpuReading("node-1", "3", "GPU-node-1-3", "", "", model, "", "team", "new", "main", 70, 2, None, None),
        GpuReading("node-1", "3", "GPU-node-1-3", "", "", model, "", "team", "old", "main", 5, 1, None, None),
        GpuReading("node-1", "9", "GPU-node-1-9", "", "", model, "", "", "", "", 0, 0, None, None),
        GpuReading("node-1", "10", "GPU-node-1-10", "", "", model, "", "team", "a", "main", 90, 60000, 21559, 0.81),
    ]


def test_gpu_utilization_fails_as_a_whole_when_one_query_fails(canned):
    canned.answers[reading_query(FB_FREE)] = (503, failure("unavailable", "TSDB not ready"), {})
    with PrometheusClient(canned.url) as client:
        error = error_of(lambda: gpu_utilization(client))
    assert error.reason == "query" and "TSDB not ready" not in str(error)
    canned.answers[reading_query(FB_FREE)] = answer("vector", [{"metric": {"gpu": 0}, "value": [1, "1"]}])
    with PrometheusClient(canned.url) as client:
        assert error_of(lambda: gpu_utilization(client)).reason == "malformed"


def test_idle_since_sends_one_query_and_sorts_the_devices(canned):
    query = idle_query(threshold_percent=5, window_seconds=600)
    canned.answers[query] = vector(
        (dcgm("node-2", "1", namespace="team", pod="b", container="main"), "3"),
        (dcgm("node-1", "10", namespace="team", pod="a", container="main"), "0"),
        (dcgm("node-1", "9", namespace="team", pod="a", container="main"), "0"),
    )
    with PrometheusClient(canned.url) as client:
        found = idle_since(client, threshold_percent=5, window_seconds=600, at=1700000000)
    assert [form["query"] for _, form, _ in canned.requests] == [query]
    assert found == [
        IdleDevice("node-1", "9", "GPU-node-1-9", "", "team", "a", "main", 0.0),
        IdleDevice("node-1", "10", "GPU-node-1-10", "", "team", "a", "main", 0.0),
        IdleDevice("node-2", "1", "GPU-node-2-1", "", "team", "b", "main", 3.0),
    ]
