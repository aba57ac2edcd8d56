"""Fixtures of the fault tests: a Redis and a PostgreSQL of the test's own (``fault_parts``), and the stand-in API
server's module on the path."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from fault_parts import OwnPostgres, OwnRedis, postgres_bin

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "bench"))


@pytest.fixture
def own_redis(tmp_path):
    if not shutil.which("redis-server"):
        pytest.skip("no redis-server")
    redis = OwnRedis(tmp_path)
    redis.start()
    yield redis
    redis.stop()


@pytest.fixture(scope="module")
def own_postgres():
    if not postgres_bin("initdb"):
        pytest.skip("no initdb")
    postgres = OwnPostgres()
    postgres.init()
    postgres.start()
    yield postgres
    postgres.stop()
    postgres.remove()
