"""Real parallel clients for the race tests on PostgreSQL (SQLite serialises every write and hides races)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import close_old_connections, connection


def at_once(*clients: Callable[[], None], timeout: float = 120) -> list[BaseException]:
    """Run each client on a thread of its own (so on a database connection of its own), all released together,
    and wait for them all. Returns what they raised, for the test to assert on."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(clients), timeout=30)

    def run(client: Callable[[], None]) -> None:
        try:
            start.wait()
            client()
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    close_old_connections()
    assert not any(thread.is_alive() for thread in threads), f"a client still runs after {timeout} s"
    return errors
