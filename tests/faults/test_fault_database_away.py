"""A PostgreSQL that hangs (paused with SIGSTOP) or is stopped: the web process answers 503 with ``Retry-After``
within its connect timeout (the API in its JSON error shape, pages with a plain page), never hangs and never
answers an HTML 500; once the database is back, the next request is served.

The real parts: a PostgreSQL of the test's own and gunicorn serving the console from it, as in production.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_parts import free_port, wait_port

ROOT = Path(__file__).resolve().parents[2]
CONNECT_TIMEOUT = 2
TOKEN = "Bearer gpc_" + "x" * 40  # the shape of a personal access token: looking it up needs the database


@pytest.fixture(scope="module")
def console(own_postgres):
    env = {
        **os.environ,
        "DATABASE_URL": own_postgres.url,
        "DEBUG": "0",
        "DB_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT),
        "CELERY_BROKER_URL": "",
        "SECURE_SSL_REDIRECT": "0",  # plain HTTP, as behind a proxy ending TLS
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    port = free_port()
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = subprocess.Popen(
        [str(gunicorn), "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1", "--threads", "4", "--timeout", "120"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, 60)
        yield port
    finally:
        server.terminate()
        server.wait(20)


def get(port: int, path: str, headers: dict) -> tuple[int, dict, bytes, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read(), time.monotonic() - started
    finally:
        connection.close()


def api(port: int):
    return get(port, "/api/backends/", {"Authorization": TOKEN, "Accept": "application/json"})


def page(port: int):
    return get(port, "/backends/", {"Cookie": "sessionid=" + "s" * 32})


def assert_database_away(port: int) -> None:
    status, headers, body, seconds = api(port)
    print(f"database away: the API answered {status} in {seconds:.2f} s")
    assert status == 503, body[:300]
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["errors"][0]["message"].startswith("the database is out of reach")
    assert int(headers["Retry-After"]) > 0
    assert seconds < CONNECT_TIMEOUT + 3, f"the API took {seconds:.1f} s to answer"
    status, headers, body, seconds = page(port)
    assert status == 503, body[:300]
    assert headers["Content-Type"].startswith("text/plain")
    assert b"database is out of reach" in body
    assert "Retry-After" in headers
    assert seconds < CONNECT_TIMEOUT + 3, f"the page took {seconds:.1f} s to answer"
    print(f"database away: the page answered {status} in {seconds:.2f} s")


def assert_served_again(port: int, timeout: float = 20) -> float:
    """Seconds until the API answers as it does with its database (401: the token is unknown)."""
    started = time.monotonic()
    while api(port)[0] != 401:
        assert time.monotonic() - started < timeout, "the console did not come back with its database"
        time.sleep(0.2)
    print(f"served again {time.monotonic() - started:.2f} s after the database came back")
    return time.monotonic() - started


def test_a_paused_database_answers_503_within_the_connect_timeout(console, own_postgres):
    assert api(console)[0] == 401
    own_postgres.pause()
    try:
        assert_database_away(console)
    finally:
        own_postgres.resume()
    assert assert_served_again(console) < 10


def test_a_stopped_database_answers_503_in_json_then_recovers(console, own_postgres):
    assert api(console)[0] == 401
    own_postgres.stop()
    try:
        assert_database_away(console)
    finally:
        own_postgres.start()
    assert assert_served_again(console) < 10
