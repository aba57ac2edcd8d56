"""A workload's key (backend id, namespace, kind, name) as a database condition, for the selectors and services that
read the pods or the sums of a few workloads."""

from __future__ import annotations

from django.db.models import Q


def workload_key_condition(keys) -> Q:
    """The pods (or sums) of the workloads ``keys`` (backend id, namespace, kind, name) and maybe of a few more: one
    ``IN`` list per column of the key, which the index ``pod_workload`` serves; callers pick their rows by key. A
    hundred keys as a hundred ORed conditions cost the ORM more than the query."""
    keys = list(keys)
    if not keys:
        return Q(pk__in=[])
    backends, namespaces, kinds, names = (sorted(set(column)) for column in zip(*keys, strict=True))
    return Q(backend_id__in=backends, namespace__in=namespaces, workload_kind__in=kinds, workload_name__in=names)
