"""Real parts the fault tests break: a Redis and a PostgreSQL of the test's own (never the shared ones on 6379 and
5432), started on free ports, stopped, paused (SIGSTOP) and resumed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class OwnRedis:
    """``redis-server`` on a free port, without persistence; ``stop`` and ``start`` again on the same port."""

    def __init__(self, directory: Path):
        self.port, self.directory, self.process = free_port(), directory, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self.directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.resume()
            self.process.kill()
            self.process.wait(10)

    def pause(self) -> None:
        """SIGSTOP: connections are accepted (by the kernel) and never answered, as with a hung host."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)


def postgres_bin(name: str) -> str | None:
    """A PostgreSQL program: the packaged server's first, else one on the PATH."""
    for directory in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (directory / name).exists():
            return str(directory / name)
    return shutil.which(name)


class OwnPostgres:
    """A PostgreSQL cluster of the test's own (``initdb`` in a temporary directory), trust authentication; run as
    the ``postgres`` user when the tests run as root (PostgreSQL refuses root)."""

    def __init__(self):
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="gpupool-faults-pg-"))
        self.data = self.root / "data"
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        subprocess.run(
            [*self.as_user, postgres_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust"]
            + ["--no-sync"],
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        command = [postgres_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root)]
        self.process = subprocess.Popen(
            [*self.as_user, *command, "-c", "fsync=off", "-c", "listen_addresses=127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_port(self.port, 30)
        time.sleep(0.3)  # accepting connections a moment after the port opens

    def pids(self) -> list[int]:
        """Every process of the cluster (its session: the postmaster and its backends)."""
        out = subprocess.run(["pgrep", "-s", str(self.process.pid)], capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def pause(self) -> None:
        """Stop every process of the cluster (SIGSTOP): connections and queries hang, nothing is refused."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.pids():
            os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the cluster (a fast shutdown of its postmaster); ``start`` brings it back on the same port."""
        if self.process is None or self.process.poll() is not None:
            return
        self.resume()
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGINT)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
