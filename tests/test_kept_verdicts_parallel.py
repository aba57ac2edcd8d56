"""Rounds of the worker's verdicts (``services.workload_verdicts_keep``) of one backend at once, on PostgreSQL with
real parallel clients: a watch's and a sync's rounds take the backend's row lock in turn."""

from __future__ import annotations

import pytest
from django.db import connection
from parallel_clients import at_once
from test_pending_verdicts import lab  # noqa: F401 (the fixture)

from pools import services
from pools.models import VerdictRound, WorkloadVerdict
from pools.selectors.verdicts import pending_verdicts


@pytest.mark.django_db(transaction=True)
def test_rounds_of_one_backend_at_once_leave_one_rounds_rows(lab):  # noqa: F811
    """Real parallel clients on PostgreSQL: a watch's and a sync's rounds of the same backend take its row lock in
    turn; the verdicts kept are one round's, each workload once, and read as judging now would."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    live = {key: verdict["reason"] for key, verdict in pending_verdicts().items()}
    errors = at_once(*(lambda: services.workload_verdicts_keep(backend=lab) for _ in range(3)))
    assert not errors, errors
    keys = list(WorkloadVerdict.objects.filter(backend=lab).values_list("namespace", "workload_kind", "workload_name"))
    assert len(keys) == len(set(keys)) and len(keys) >= len(live)
    assert VerdictRound.objects.filter(backend=lab).count() == 1
    assert {key: verdict["reason"] for key, verdict in pending_verdicts().items()} == live
