"""Pages of workloads (SEMANTICS §10): the Workloads list, and a page per workload."""

from __future__ import annotations

from django.core.paginator import Paginator

from .. import selectors, tables
from ..engine.workloads import PHASES
from ..filtersets import WorkloadFilterSet
from .base import DoorPage, ListPage

WORKLOADS_PER_PAGE = 100


class Workloads(ListPage):
    """Workloads the caller may see, GPU holders first, filtered by pool, project, user, phase and reason; CSV and
    JSON exports of every matching row."""

    door = "workload.list"
    template_name = "pools/workloads.html"
    fragment_name = "pools/_workload_table.html"
    table = tables.WORKLOADS
    filterset = WorkloadFilterSet
    export_name = "workloads"

    def rows(self):
        return selectors.workloads_visible(user=self.request.user, filters=self.request.GET)

    def exported(self, rows):
        return list(rows)

    def context(self, rows):
        page = Paginator(rows, WORKLOADS_PER_PAGE).get_page(self.request.GET.get("page"))
        return {
            "page": page,
            "rows": list(page.object_list),
            "total": page.paginator.count,
            "pools": selectors.pool_names_visible(user=self.request.user),
            "phases": PHASES,
        }


class WorkloadDetail(DoorPage):
    """One workload: its figures, pods, nodes, why it waits (with figures and victims), and its phases."""

    door = "workload.get"
    template_name = "pools/workload_detail.html"

    def get(self, request, backend, namespace, name):
        workload = selectors.workload_get(user=request.user, backend=backend, namespace=namespace, name=name)
        return self.page({"workload": workload, "table": tables.WORKLOADS})
