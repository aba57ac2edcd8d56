"""Load check of the console: concurrent clients on its pages and API, against gunicorn on 127.0.0.1.

Prepares a throw-away SQLite database with the demo (``migrate`` + ``bootstrap``) unless ``--database-url``
names one (migrated and given the demo if it has none), starts gunicorn on a free loopback port, signs in as the
local admin, then runs ``--clients`` threads for ``--seconds`` seconds, each going round the paths of ``--mix``:

- ``api``: ``GET /api/pool_quota/`` and ``GET /api/pools/``;
- ``console``: the overview, a pool's page, the nodes, backends and quota pages, and the pools, quota and nodes
  listings of the API, as people and scripts use them.

``--worker`` runs ``manage.py runworker`` beside the server for the whole run, so the demo's simulated backends
stream watch events and its file backends are synced every ``--sync-seconds`` while the clients read.
``--root`` serves another checkout of the console (e.g. an older commit in a git worktree) with the same clients,
to compare before and after. Prints requests per second, latency percentiles, the slowest paths and the error
count; exits 1 on any error. Traffic goes to 127.0.0.1 only, and the run is bounded in time.

    .venv/bin/python scripts/api_load.py [--clients 32] [--seconds 30] [--workers 2] [--threads 4]
        [--mix api|console] [--worker] [--root CHECKOUT] [--database-url URL]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
MIXES = {
    "api": ("/api/pool_quota/", "/api/pools/"),
    "console": (
        "/",
        "/pools/{pool}/",
        "/nodes/",
        "/backends/",
        "/quotas/",
        "/api/pools/",
        "/api/pool_quota/",
        "/api/nodes/?limit=50",
    ),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(root: Path, env: dict, *args: str) -> str:
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=root, env=env, check=True, capture_output=True, text=True)
    return result.stdout


def prepare(root: Path, env: dict) -> tuple[str, str]:
    """Migrate, load the demo and return the local admin's username and password."""
    manage(root, env, "migrate", "--noinput")
    out = manage(root, env, "bootstrap")
    username = re.search(r"username: (\S+)", out).group(1)
    password_file = Path(env["VAR_DIR"]) / "admin-password"
    match = re.search(r"password: (\S+)", out)
    if not match and not password_file.exists():
        raise SystemExit("the database has a local admin whose password this run cannot know: give it a new database")
    password = match.group(1) if match else password_file.read_text().strip()
    return username, password


def wait_until_up(base: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            requests.get(f"{base}/api/pool_quota/", timeout=5)  # 403 without a session: the server answers
            return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


def sign_in(base: str, username: str, password: str) -> dict:
    """The session and CSRF cookies of a signed-in admin (GET requests need only the session)."""
    session = requests.Session()
    session.get(f"{base}/accounts/login/", timeout=10)
    response = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=10,
    )
    if "sessionid" not in session.cookies:
        raise SystemExit(f"sign-in failed ({response.status_code})")
    return session.cookies.get_dict()


def first_pool(base: str, cookies: dict) -> str:
    """The name of a pool the signed-in admin sees, for the paths that name one."""
    response = requests.get(f"{base}/api/pools/", cookies=cookies, timeout=30)
    response.raise_for_status()
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    return rows[0]["name"]


def run_clients(
    base: str, cookies: dict, clients: int, seconds: float, paths: tuple[str, ...]
) -> tuple[list[tuple[str, float]], list[str]]:
    latencies: list[tuple[str, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(index: int) -> None:
        session = requests.Session()
        session.cookies.update(cookies)
        mine, failures, turn = [], [], index
        while time.monotonic() < stop_at:
            path = paths[turn % len(paths)]
            turn += 1
            started = time.perf_counter()
            try:
                response = session.get(f"{base}{path}", timeout=30)
                if response.status_code != 200:
                    failures.append(f"{path}: HTTP {response.status_code}")
            except requests.RequestException as exc:
                failures.append(f"{path}: {exc.__class__.__name__}")
            mine.append((path, time.perf_counter() - started))
        with lock:
            latencies.extend(mine)
            errors.extend(failures)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--database-url", help="use this database (default: a new SQLite demo)")
    parser.add_argument("--mix", choices=sorted(MIXES), default="api", help="which paths the clients go round")
    parser.add_argument("--worker", action="store_true", help="run manage.py runworker beside the server")
    parser.add_argument("--sync-seconds", type=int, default=10, help="how often the worker syncs file backends")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve (default: this one)")
    options = parser.parse_args()
    root = options.root.resolve()

    with tempfile.TemporaryDirectory(prefix="api-load-") as tmp:
        # DEBUG=0 would demand HTTPS (secure cookies, SSL redirect), which a loopback run does not have.
        env = {**os.environ, "DEBUG": "1", "VAR_DIR": tmp, "LOG_LEVEL": "WARNING"}
        env["DATABASE_URL"] = options.database_url or f"sqlite:///{tmp}/db.sqlite3"
        env["GPUPOOL_SYNC_SECONDS"] = str(options.sync_seconds)
        username, password = prepare(root, env)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "config.wsgi",
                f"--bind=127.0.0.1:{port}",
                f"--workers={options.workers}",
                f"--threads={options.threads}",
                "--log-level=warning",
            ],
            cwd=root,
            env=env,
        )
        worker = None
        try:
            wait_until_up(base)
            cookies = sign_in(base, username, password)
            paths = tuple(path.format(pool=first_pool(base, cookies)) for path in MIXES[options.mix])
            if options.worker:
                worker = subprocess.Popen(
                    [PYTHON, "manage.py", "runworker"], cwd=root, env=env, stdout=subprocess.DEVNULL
                )
            run_clients(base, cookies, 2, 2, paths)  # warm-up: imports, connections, caches
            timed, errors = run_clients(base, cookies, options.clients, options.seconds, paths)
        finally:
            for process in (worker, server):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=60)

    latencies = sorted(seconds for _, seconds in timed)
    count = len(latencies)
    if not count:
        print("no request completed")
        return 1

    def percentile(p: float) -> float:
        return latencies[min(count - 1, int(p * count))] * 1000

    print(
        f"clients={options.clients} seconds={options.seconds} gunicorn={options.workers}x{options.threads} "
        f"mix={options.mix} worker={'yes' if options.worker else 'no'} root={root}"
    )
    print(f"requests={count} errors={len(errors)} req/s={count / options.seconds:.1f}")
    print(
        f"latency ms: median={statistics.median(latencies) * 1000:.1f} p95={percentile(0.95):.1f} "
        f"p99={percentile(0.99):.1f} max={latencies[-1] * 1000:.1f}"
    )
    by_path: dict[str, list[float]] = {}
    for path, seconds in timed:
        by_path.setdefault(path, []).append(seconds)
    for path, values in sorted(by_path.items(), key=lambda item: -statistics.median(item[1])):
        print(f"  {path:<28} n={len(values):>5} median={statistics.median(values) * 1000:7.1f} ms")
    for error in sorted(set(errors))[:10]:
        print(f"  error: {error}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
