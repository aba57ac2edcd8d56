"""Pages of the inventory: the node table, Run:ai's node-pools view, the backends with their syncs, a node's GPUs."""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.utils import timezone

from .. import jobs, selectors, tables
from ..choices import ConfigType, NodePoolColumn, NodePoolStatus, NodeStatus, ResourceType, SyncState
from ..engine.errors import ConfigError
from ..engine.numbers import parse_number
from ..engine.permissions import CHANGE_CONFIG, OPERATE_BACKEND
from ..filtersets import NodeFilterSet, NodePoolFilterSet
from .base import DoorPage, ListPage

NODES_PER_PAGE = 100


class Nodes(ListPage):
    """Every (node, pool, platform) row the user may see, filterable, with labels, taints and reasons.

    The query string is ``NodeFilterSet``'s, so a link means here what the same parameters mean to
    ``/api/resources/`` and ``poolctl resource list``. The page shows a page of rows; the exports all of them.
    """

    door = "resource.list"
    template_name = "pools/nodes.html"
    fragment_name = "pools/_node_table.html"
    table = tables.RESOURCES
    filterset = NodeFilterSet
    export_name = "nodes"

    def rows(self):
        return selectors.resource_index(user=self.request.user, filters=self.request.GET)

    def exported(self, rows):
        return selectors.resource_rows(rows)

    def context(self, rows):
        page = Paginator(rows, NODES_PER_PAGE).get_page(self.request.GET.get("page"))
        page.object_list = selectors.node_table_page(page.object_list)
        return {
            "page": page,
            "count": len(rows),
            "types": ResourceType.values,
            "statuses": NodeStatus.choices,
            **selectors.node_filter_choices(user=self.request.user),
        }


class NodePools(ListPage):
    """Run:ai's node-pools view: one row per visible pool with its nodes, GPUs, CPUs, memory and workloads.

    The query string is ``NodePoolFilterSet``'s (as for ``/api/node_pools/``), plus ``columns=`` (which columns, in
    the table and the CSV, whose header is the columns' headings).
    """

    door = "node_pool.list"
    template_name = "pools/node_pools.html"
    fragment_name = "pools/_node_pool_table.html"
    filterset = NodePoolFilterSet
    export_name = "node-pools"
    export_headings = True
    offers = {"can_create": (CHANGE_CONFIG, ConfigType.POOL)}

    def setup(self, request, *args, **kwargs):
        super().setup(request, *args, **kwargs)
        self.columns, self.columns_error = chosen_columns(request.GET.getlist("columns"))
        self.table = tables.NODE_POOLS.choose(self.columns)

    def rows(self):
        if self.columns_error:
            raise ConfigError(self.columns_error, field="columns")
        return selectors.node_pool_list(user=self.request.user, filters=self.request.GET)

    def context(self, rows):
        sort = self.request.GET.get("sort", "").strip() if rows or not self.columns_error else ""
        headers = [
            {
                "column": column.key,
                "heading": column.heading,
                "numeric": column.numeric,
                "order": "ascending" if sort == column.key else "descending" if sort == f"-{column.key}" else "",
                # A click sorts by the column, ascending first, then the other way.
                "sort": f"-{column.key}" if sort == column.key else column.key,
            }
            for column in self.table.page_columns
        ]
        return {
            "headers": headers,
            "columns": self.columns,
            "all_columns": NodePoolColumn.choices,
            "sort": sort,
            "statuses": NodePoolStatus.choices,
            "label_keys": sorted({row["label_key"] for row in rows if row["label_key"]}),
            **selectors.pool_filter_choices(user=self.request.user),
        }


def chosen_columns(given: list[str]) -> tuple[list[str], str]:
    """The columns ``?columns=`` chooses (repeated or comma-separated, in their order), the pool's name first; the
    default ones when none is given; and why the choice is refused (an unknown column), or nothing."""
    names = [name.strip() for value in given for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in NodePoolColumn.values]
    default = [str(column) for column in tables.NODE_POOL_DEFAULT_COLUMNS]
    if unknown:
        return default, f"columns: '{unknown[0]}' is not a column (one of {', '.join(NodePoolColumn.values)})"
    chosen = list(dict.fromkeys(names)) or default
    return [NodePoolColumn.NODE_POOL.value, *(name for name in chosen if name != NodePoolColumn.NODE_POOL)], ""


class Backends(ListPage):
    """Each backend the user may read: sync status, last contact, duration, last error, node counts."""

    door = "backend.list"
    template_name = "pools/backends.html"
    table = tables.BACKENDS
    export_name = "backends"
    row_offers = {"can_sync": (OPERATE_BACKEND, "name")}

    def rows(self):
        return selectors.backend_health(user=self.request.user)


class BackendSync(DoorPage):
    """Queue a sync of the backend and answer the progress fragment that polls until it is done."""

    door = "backend.sync"
    template_name = "pools/_sync_progress.html"

    def post(self, request, name: str):
        requested = timezone.now()
        job = jobs.backend_sync_request(name=name, actor=self.actor)
        if job["state"] == "FAILURE" and not job["result"]:  # not queued at all (the broker is out of reach)
            return self.page({"name": name, "state": SyncState.FAILED, "error": job["error"]})
        return self.page({"name": name, "since": requested.timestamp(), "state": SyncState.QUEUED})


class BackendSyncStatus(DoorPage):
    """Progress of a requested sync (``?since=``, when it was asked for in seconds since 1970); answers 286 once
    it finished or failed, so htmx stops polling."""

    door = "backend.sync_status"
    template_name = "pools/_sync_progress.html"

    def get(self, request, name: str):
        try:
            since = datetime.fromtimestamp(parse_number(request.GET.get("since", ""), field="since", minimum=0), tz=UTC)
        except (ConfigError, ValueError, OverflowError, OSError):  # no number, or beyond the years a datetime holds
            return HttpResponse("since= must be when the sync was requested, in seconds since 1970", status=400)
        progress = selectors.sync_progress(name, user=request.user, since=since)
        return self.page({"name": name, **progress}, status=286 if progress["done"] else 200)


class NodeGpus(DoorPage):
    """A node's GPUs now: model, the pod holding each, utilization, memory and idle time; and their history."""

    door = "node.gpus"
    template_name = "pools/node_gpus.html"

    def get(self, request, name: str):
        backend = request.GET.get("backend") or None
        gpus = selectors.node_gpus(name, user=request.user, backend=backend)
        no_source = "" if gpus["source"] else selectors.NO_SOURCE.format(backend=gpus["backend"])
        return self.page({"gpus": gpus, "backend": backend, "ranges": list(selectors.PERIODS), "no_source": no_source})


class NodeGpusChart(DoorPage):
    """A node's average GPU utilization (%) and GPU memory used (GiB) over the chosen window (``?range=``)."""

    door = "node.gpus"

    def get(self, request, name: str):
        chart = selectors.node_gpus_chart(
            user=request.user, node=name, backend=request.GET.get("backend") or None, period=request.GET.get("range")
        )
        return JsonResponse(chart)
