"""What a test does when a real service it needs is not there."""

import os

import pytest

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


def service_unavailable(reason: str):
    """Skip with the reason locally; in CI (REQUIRE_SERVICES=1) a missing service is a failure."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service unavailable: {reason}")
    pytest.skip(reason)
