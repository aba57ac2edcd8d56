"""Leases: a named lock with an owner and an expiry, held in a table, so that one sync, one watch, one utilization
round runs at a time across every worker; a holder that crashed frees its lease when it expires."""

from __future__ import annotations

import os
import socket
import threading
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from pools.models import Lease


def lease_acquire(*, name: str, owner: str, seconds: float) -> bool:
    """Take or renew the lease ``name`` for ``seconds``; False while someone else holds it."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    if (
        Lease.objects.filter(name=name)
        .filter(Q(expires_at__lt=now) | Q(owner=owner))
        .update(owner=owner, expires_at=until)
    ):
        return True
    try:
        with transaction.atomic():
            Lease.objects.create(name=name, owner=owner, expires_at=until)
        return True
    except IntegrityError:
        return False


def lease_release(*, name: str, owner: str) -> None:
    Lease.objects.filter(name=name, owner=owner).delete()


def lease_owner() -> str:
    """This thread's name as a lease holder: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
