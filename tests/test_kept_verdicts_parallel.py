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


@pytest.mark.django_db(transaction=True)
def test_a_pools_rounds_racing_whole_rounds_leave_each_workload_once_and_the_verdicts_of_now(lab):  # noqa: F811
    """Real parallel clients on PostgreSQL: the judging thread's rounds of one pool (a watch batch freed GPUs on its
    nodes) race the whole backend's rounds; whichever is kept last, each workload is kept once, the backend keeps
    one round, and every verdict reads as judging now would."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (SQLite serialises every write); CI's PostgreSQL pass runs this")
    services.workload_verdicts_keep(backend=lab)
    pool_ids = [lab.pools.get(name="p").pk]
    live = {key: verdict["reason"] for key, verdict in pending_verdicts().items()}
    errors = at_once(
        lambda: services.workload_verdicts_keep(backend=lab, pool_ids=pool_ids),
        lambda: services.workload_verdicts_keep(backend=lab),
        lambda: services.workload_verdicts_keep(backend=lab, pool_ids=pool_ids),
        lambda: services.workload_verdicts_keep(backend=lab),
    )
    assert not errors, errors
    keys = list(WorkloadVerdict.objects.filter(backend=lab).values_list("namespace", "workload_kind", "workload_name"))
    assert len(keys) == len(set(keys)) and len(keys) >= len(live)
    assert VerdictRound.objects.filter(backend=lab).count() == 1
    assert {key: verdict["reason"] for key, verdict in pending_verdicts().items()} == live
