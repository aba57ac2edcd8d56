"""The read half of the gate: ``restrict(principal)`` on every model's queryset (NetBox's ``restrict()``).

Every list, detail, history entry, diff, export, htmx fragment and chart starts from
``Model.objects.restrict(principal)``, so they can never disagree about what someone may see: an object
left out here answers 404 on every door. ``principal`` is a user or ``accounts.access.SYSTEM`` (which
sees everything). Each restriction costs a fixed number of queries, whatever the number of rows.
"""

from __future__ import annotations

from django.apps import apps
from django.db import models
from django.db.models import Q

from accounts.access import allows, is_system, visible
from pools.choices import NodeStatus
from pools.engine.permissions import (
    LIST_FLEET,
    OBJECT_READ,
    VIEW_BACKEND,
    VIEW_CONFIG,
    VIEW_DEPARTMENT,
    VIEW_POOL,
    VIEW_PROJECT,
)


def model(name: str):
    """A model of the pool domain, looked up rather than imported: ``pools.models`` builds on this module."""
    return apps.get_model("pools", name)


def visible_pool_ids(principal) -> dict[int, tuple[int, str]]:
    """``{pool id: (backend id, name)}`` of the pools ``principal`` may see (one query)."""
    Pool = model("Pool")
    rows = list(Pool.objects.values_list("id", "backend_id", "name"))
    names = set(visible(principal, VIEW_POOL, [name for _, _, name in rows]))
    return {pool_id: (backend_id, name) for pool_id, backend_id, name in rows if name in names}


def _pool_count() -> int:
    Pool = model("Pool")
    return Pool.objects.count()


def _label_condition(pools, backend_field: str, name_field: str) -> Q:
    """Rows carrying the label of one of ``pools`` (backend id, name) *on that pool's own backend*."""
    by_backend: dict[int, list[str]] = {}
    for backend_id, name in pools:
        by_backend.setdefault(backend_id, []).append(name)
    condition = Q(pk__in=[])
    for backend_id, names in by_backend.items():
        condition |= Q(**{backend_field: backend_id, f"{name_field}__in": names})
    return condition


def _pool_label_restriction(queryset, principal, name_field: str = "pool_name", pools=None):
    """Rows labelled with a pool: those of pools ``principal`` may see (a label is its own backend's word).

    With ``LIST_FLEET`` also the rows of no pool, but never those of a pool hidden from them (a Deny). ``pools``:
    every pool's ``(backend id, name)``, when the caller has read them already (else one query reads them).
    """
    if is_system(principal):
        return queryset
    if pools is None:
        pools = list(model("Pool").objects.values_list("backend_id", "name"))
    names = set(visible(principal, VIEW_POOL, [name for _, name in pools]))
    if not allows(principal, LIST_FLEET):
        seen = [(backend_id, name) for backend_id, name in pools if name in names]
        return queryset.filter(_label_condition(seen, "backend_id", name_field))
    hidden = [(backend_id, name) for backend_id, name in pools if name not in names]
    return queryset.exclude(_label_condition(hidden, "backend_id", name_field)) if hidden else queryset


def sees_whole_fleet(principal) -> bool:
    """``LIST_FLEET`` and no pool hidden: what is summed over the whole fleet may be shown (GPU products)."""
    Pool = model("Pool")
    if is_system(principal):
        return True
    if not allows(principal, LIST_FLEET):
        return False
    names = list(Pool.objects.values_list("name", flat=True))
    return len(visible(principal, VIEW_POOL, names)) == len(names)


class PoolQuerySet(models.QuerySet):
    def restrict(self, principal, permission=VIEW_POOL):
        if is_system(principal):
            return self
        names = self.model.objects.values_list("name", flat=True)
        return self.filter(name__in=visible(principal, permission, names))


class PlatformQuerySet(models.QuerySet):
    def restrict(self, principal):
        return self if is_system(principal) else self.filter(pool_id__in=list(visible_pool_ids(principal)))


class BackendQuerySet(models.QuerySet):
    def restrict(self, principal):
        if is_system(principal):
            return self
        names = self.model.objects.values_list("name", flat=True)
        return self.filter(name__in=visible(principal, VIEW_BACKEND, names))


class JobRecordQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Jobs of the backends ``principal`` may read."""
        backends = self.model._meta.get_field("backend").related_model.objects
        return self.filter(backend__in=backends.restrict(principal))


class NamedQuerySet(models.QuerySet):
    """Objects seen one by one through ``permission`` on their name (departments, projects)."""

    permission = None

    def restrict(self, principal):
        if is_system(principal):
            return self
        names = self.model.objects.values_list("name", flat=True)
        return self.filter(name__in=visible(principal, self.permission, names))


class DepartmentQuerySet(NamedQuerySet):
    permission = VIEW_DEPARTMENT


class ProjectQuerySet(NamedQuerySet):
    permission = VIEW_PROJECT


class ConfigTypeQuerySet(models.QuerySet):
    """Objects seen type by type (pod templates, validation rules): all of them or none."""

    config_type: str

    def restrict(self, principal):
        return self if allows(principal, VIEW_CONFIG, self.config_type) else self.none()


class PodTemplateQuerySet(ConfigTypeQuerySet):
    config_type = "POD_TEMPLATE"


class ResourceValidationQuerySet(ConfigTypeQuerySet):
    config_type = "RESOURCE_VALIDATION"


_NODE_STATUS_FIELDS = {
    NodeStatus.AVAILABLE: {"available": True, "unschedulable": False},
    NodeStatus.UNAVAILABLE: {"available": False, "unschedulable": False},
    NodeStatus.CORDONED: {"unschedulable": True},
}


def node_status_q(status: str, prefix: str = "") -> Q:
    """The nodes in ``status`` (a ``NodeStatus``); ``prefix`` is the path from another model, e.g. ``nodes__``."""
    return Q(**{f"{prefix}{field}": value for field, value in _NODE_STATUS_FIELDS[NodeStatus(status)].items()})


class NodeQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Nodes of the pools ``principal`` may see; with ``LIST_FLEET`` also the nodes of no pool.

        A node only in pools hidden from a fleet reader stays hidden: what it holds is those pools' business.
        """
        NodeMembership = model("NodeMembership")
        if is_system(principal):
            return self
        seen = visible_pool_ids(principal)
        members = NodeMembership.objects.filter(pool_id__in=list(seen)).values("node_id")
        if not allows(principal, LIST_FLEET):
            return self.filter(pk__in=members)
        if len(seen) == _pool_count():  # nothing hidden: the whole fleet, without a condition to evaluate per node
            return self
        placed = NodeMembership.objects.values("node_id")
        return self.filter(Q(pk__in=members) | ~Q(pk__in=placed))

    def of_hidden_pools(self, principal):
        """The nodes that belong to at least one pool ``principal`` may not see (none for SYSTEM): a write may not
        take them out of those pools (SEMANTICS §7.4)."""
        NodeMembership = model("NodeMembership")
        if is_system(principal):
            return self.none()
        seen = visible_pool_ids(principal)
        return self.filter(pk__in=NodeMembership.objects.exclude(pool_id__in=list(seen)).values("node_id"))

    def hidden_from(self, principal):
        """The nodes only in pools ``principal`` may not see: for a writer they do not exist (SEMANTICS §7.4)."""
        NodeMembership = model("NodeMembership")
        seen = NodeMembership.objects.filter(pool_id__in=list(visible_pool_ids(principal))).values("node_id")
        return self.of_hidden_pools(principal).exclude(pk__in=seen)


class PodQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Pods labelled with a visible pool of their own backend; with ``LIST_FLEET`` every pod but those."""
        return _pool_label_restriction(self, principal)


class PoolPodUsageQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Usage of visible pools' labels on their own backend; with ``LIST_FLEET`` every row but hidden pools'."""
        return _pool_label_restriction(self, principal)


class FleetInternalsQuerySet(models.QuerySet):
    def restrict(self, principal):
        """The workers' leases, the node groups' sums: the fleet's internals, for those who may see the whole fleet."""
        return self if sees_whole_fleet(principal) else self.none()


class MembershipQuerySet(models.QuerySet):
    def restrict(self, principal):
        return self if is_system(principal) else self.filter(pool_id__in=list(visible_pool_ids(principal)))


class UsageSampleQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Samples of visible pools; GPU-product samples (sums over every pool) only to whole-fleet readers."""
        pools = _pool_label_restriction(self.filter(scope=self.model.Scope.POOL), principal, name_field="key")
        if sees_whole_fleet(principal):
            return pools | self.filter(scope=self.model.Scope.PRODUCT)
        return pools


class QuietGpuQuerySet(models.QuerySet):
    def restrict(self, principal, pools=None):
        """Quiet GPUs of workloads in visible pools; with ``LIST_FLEET`` also those of no pool (``pools``: every
        pool's backend id and name, when read already)."""
        return _pool_label_restriction(self, principal, name_field="pool", pools=pools)


class UtilizationSampleQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Samples of visible pools."""
        return _pool_label_restriction(self, principal, name_field="pool")


class GpuConsumptionQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Hours spent in visible pools; with ``LIST_FLEET`` also those of workloads in no pool."""
        return _pool_label_restriction(self, principal, name_field="pool")


class NodeLabelChangeQuerySet(models.QuerySet):
    def restrict(self, principal):
        if is_system(principal):
            return self
        Backend = model("Backend")
        return self.filter(backend__in=Backend.objects.restrict(principal))


class ConfigRevisionQuerySet(models.QuerySet):
    def restrict(self, principal):
        """Revisions that changed at least one object ``principal`` may see (SEMANTICS.md §7.1).

        What a visible revision shows of other objects (its snapshot, its diff) is filtered by
        ``visible_objects``; a revision that changed only invisible objects is left out altogether.
        """
        if is_system(principal):
            return self
        decided: dict[tuple[str, str], bool] = {}

        def sees(config_type: str, name: str) -> bool:
            key = (config_type, name)
            if key not in decided:
                decided[key] = visible_object(principal, config_type, name)
            return decided[key]

        rows = self.model.objects.values_list("id", "config_type", "changed")
        ids = [pk for pk, config_type, changed in rows if any(sees(config_type, name) for name in changed)]
        return self.filter(pk__in=ids)


def visible_object(principal, config_type: str, name: str) -> bool:
    """Whether ``principal`` may see object ``name`` of ``config_type`` (whether it exists or not)."""
    permission = OBJECT_READ[str(config_type)]
    return allows(principal, permission, str(config_type) if permission is VIEW_CONFIG else name)


# Config types whose bodies hold quotas per pool (SEMANTICS §9): what a reader sees of them is cut to their pools.
QUOTA_HOLDERS = ("DEPARTMENT", "PROJECT")


def hidden_quota_pools(principal, body: dict) -> set[str]:
    """The pools of a department's or project's quotas that ``principal`` may not see."""
    if is_system(principal):
        return set()
    pools = {entry["nodePool"] for entry in body.get("resources", [])}
    return pools - set(visible(principal, VIEW_POOL, sorted(pools)))


def quotas_visible(principal, body: dict) -> dict:
    """A department's or project's body without its quotas on pools ``principal`` may not see (a Deny)."""
    hidden = hidden_quota_pools(principal, body)
    if not hidden:
        return body
    return {**body, "resources": [entry for entry in body["resources"] if entry["nodePool"] not in hidden]}


def visible_objects(principal, config_type: str, objects: dict) -> dict:
    """``{name: body}`` without the objects ``principal`` may not see (nor their quotas on pools hidden from them)."""
    if is_system(principal):
        return objects
    permission = OBJECT_READ[str(config_type)]
    if permission is VIEW_CONFIG:
        return objects if allows(principal, permission, str(config_type)) else {}
    names = set(visible(principal, permission, objects))
    shown = {name: body for name, body in objects.items() if name in names}
    if str(config_type) in QUOTA_HOLDERS:
        shown = {name: quotas_visible(principal, body) for name, body in shown.items()}
    return shown
