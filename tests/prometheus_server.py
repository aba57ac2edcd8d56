"""A simulated DCGM exporter over HTTP, and a real Prometheus (Debian's ``prometheus``) scraping it.

``SimulatedExporter(nodes, pods)`` serves ``exposition(gpu_samples(nodes, pods, t))`` at ``/metrics`` on a free
loopback port, ``t`` being the moment of the request, and remembers the moments it served (``served``): the values
depend only on the pods and ``t``, so a test computes exactly what Prometheus stored. With ``cache_seconds`` one
text serves every request of that many seconds (a 40,000-GPU exposition is 40 MB).

``PrometheusServer(directory, targets)`` writes a ``prometheus.yml`` scraping the targets (``honor_labels``, so the
exporter's ``Hostname``, ``pod``... are kept as written), starts ``prometheus`` on a free loopback port with its data
in ``directory`` and waits until it is ready. Nothing here imports pytest: ``scripts/bench_prometheus.py`` uses it
too; the tests turn ``PrometheusUnavailable`` into ``service_unavailable``.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from pools.fleet.dcgm import CONTENT_TYPE, exposition, gpu_samples


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SimulatedExporter:
    """dcgm-exporter for ``nodes`` and ``pods`` (Kubernetes objects) at ``url``; ``with`` starts and stops it."""

    def __init__(self, nodes: Sequence[dict], pods: Sequence[dict], *, cache_seconds: float = 0):
        self.nodes, self.pods = list(nodes), list(pods)
        self.cache_seconds = cache_seconds
        self.served: list[float] = []  # the moments whose values were served, in order
        self._cached: tuple[float, bytes] | None = None
        self._lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - http.server's name
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="dcgm-exporter", daemon=True
        )

    @property
    def target(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.target}/metrics"

    def render(self) -> bytes:
        """The exposition at this moment (or the cached one of the last ``cache_seconds``)."""
        with self._lock:
            now = time.time()
            if self._cached and self.cache_seconds and now - self._cached[0] < self.cache_seconds:
                return self._cached[1]
            body = exposition(gpu_samples(self.nodes, self.pods, now)).encode()
            self._cached = (now, body)
            self.served.append(now)
            return body

    def served_near(self, t: float, tolerance: float = 0.5) -> float:
        """The moment served closest to ``t`` (a sample's timestamp in Prometheus: when its scrape began)."""
        with self._lock:
            nearest = min(self.served, key=lambda moment: abs(moment - t), default=math.inf)
        if abs(nearest - t) > tolerance:
            raise LookupError(f"no exposition served within {tolerance} s of {t}")
        return nearest

    def start(self) -> SimulatedExporter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> SimulatedExporter:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class PrometheusUnavailable(RuntimeError):
    """Prometheus is not installed here, or did not start."""


class PrometheusServer:
    """A real Prometheus on ``127.0.0.1:<free port>`` scraping ``targets`` every ``scrape_interval`` seconds."""

    def __init__(self, directory: Path, targets: Sequence[str], *, scrape_interval: float = 1):
        self.directory = Path(directory)
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.started_at = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict:
        """prometheus.yml (JSON is YAML): one job, the exporter's labels kept as written."""
        interval = f"{round(self.scrape_interval * 1000)}ms"
        return {
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": "1m"},
            "scrape_configs": [
                {"job_name": "dcgm", "honor_labels": True, "static_configs": [{"targets": self.targets}]},
            ],
        }

    def start(self, timeout: float = 60) -> PrometheusServer:
        binary = shutil.which("prometheus")
        if binary is None:
            raise PrometheusUnavailable("prometheus is not installed (make prometheus-deps)")
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "prometheus.yml"
        config.write_text(json.dumps(self.config(), indent=2))
        self.port = free_port()
        command = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={self.directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]
        with open(self.directory / "prometheus.log", "ab") as log:  # the child keeps its own copy of the file
            self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrometheusUnavailable(f"prometheus exited at start: {self.log_tail()}")
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    self.started_at = time.time()
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise PrometheusUnavailable(f"prometheus was not ready within {timeout:g} s: {self.log_tail()}")

    def stop(self) -> None:
        """Stop Prometheus (SIGTERM, then SIGKILL after 10 s); its port is free when this returns."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self, size: int = 2000) -> str:
        path = self.directory / "prometheus.log"
        return path.read_text(errors="replace")[-size:] if path.exists() else ""

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def wait_until(condition: Callable[[], object], *, timeout: float, what: str, interval: float = 0.2) -> object:
    """Call ``condition`` until it returns something true (returned); TimeoutError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)
