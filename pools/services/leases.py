"""Leases: a named lock with an owner and an expiry, held in a table, so that one sync, one watch, one utilization
round runs at a time across every worker; a holder that crashed frees its lease when it expires.

A long holder keeps its lease short and renews it on a thread of its own while it runs (``lease_kept``): a
worker killed mid-sync (SIGKILL, OOM) stops renewing, so its backend is free again within the lease's seconds
rather than after the longest a sync could take.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from pools.models import Lease

logger = logging.getLogger(__name__)


def lease_acquire(*, name: str, owner: str, seconds: float) -> bool:
    """Take or renew the lease ``name`` for ``seconds``; False while someone else holds it."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    if Lease.objects.filter(name=name, owner=owner).update(expires_at=until):
        return True
    if Lease.objects.filter(name=name, expires_at__lt=now).update(owner=owner, since=now, expires_at=until):
        return True
    try:
        with transaction.atomic():
            Lease.objects.create(name=name, owner=owner, since=now, expires_at=until)
        return True
    except IntegrityError:
        return False


def lease_renew(*, name: str, owner: str, seconds: float) -> bool:
    """Extend the lease ``name`` that ``owner`` holds by ``seconds`` from now; False once another holder has it
    (or it was released). One UPDATE: it never takes a lease, nor waits on one being taken."""
    until = timezone.now() + timedelta(seconds=seconds)
    return bool(Lease.objects.filter(name=name, owner=owner).update(expires_at=until))


def lease_release(*, name: str, owner: str) -> None:
    Lease.objects.filter(name=name, owner=owner).delete()


def lease_owner() -> str:
    """This thread's name as a lease holder: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def lease_keep(lease: str, owner: str, seconds: float, stop: threading.Event, lost: threading.Event) -> None:
    """Renew ``lease`` every third of ``seconds`` until ``stop``; on losing it to another holder, set ``lost``
    and ``stop``. A renewal that fails on a database error is tried again a turn later, while the lease holds."""
    try:
        while not stop.wait(seconds / 3):
            try:
                held = lease_renew(name=lease, owner=owner, seconds=seconds)
            except DatabaseError:
                connection.close()  # a broken connection is opened afresh next turn
                continue
            if not held:
                lost.set()
                stop.set()
    finally:
        connection.close()  # this thread's own connection: Django opens one per thread and never closes it


@contextlib.contextmanager
def lease_kept(*, name: str, owner: str, seconds: float) -> Iterator[threading.Event]:
    """Renew the held lease ``name`` on a thread of its own (``lease_keep``) while the block runs; yields the
    event set when it was lost to another holder. Does not release it: the caller does, when it is done."""
    stop, lost = threading.Event(), threading.Event()
    keeper = threading.Thread(
        target=lease_keep, args=(name, owner, seconds, stop, lost), name=f"renew-{name}", daemon=True
    )
    keeper.start()
    try:
        yield lost
    finally:
        stop.set()
        keeper.join(seconds)  # a renewal is one short UPDATE; a hung database does not hold the caller
