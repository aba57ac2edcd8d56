"""Pages of departments, projects and their quotas per node pool (SEMANTICS §9): Run:ai's projects and departments
views, the quota grid with its bulk save, and a pool's quota dashboard."""

from __future__ import annotations

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect

from .. import selectors, services, tables
from ..choices import UnitStatus
from ..engine.errors import AccessDenied, ConfigError
from ..forms import quota_grid_changes, quota_grid_inputs
from .base import DoorPage, ListPage, refusal_status


class Projects(ListPage):
    """Run:ai's projects view; ``?department=`` keeps one department's, ``?format=csv`` downloads the table."""

    door = "unit.projects"
    template_name = "pools/projects.html"
    table = tables.PROJECTS
    export_name = "projects"

    def rows(self):
        return selectors.project_table(user=self.request.user, department=self.department)

    @property
    def department(self) -> str | None:
        return self.request.GET.get("department", "").strip() or None

    def context(self, rows):
        return {
            "department": self.department or "",
            "departments": [row["name"] for row in selectors.departments_visible(user=self.request.user)],
            "statuses": UnitStatus,
        }


class Departments(ListPage):
    """Each department with its projects, quotas and allocations over every pool; ``?format=csv`` downloads it."""

    door = "unit.departments"
    template_name = "pools/departments.html"
    table = tables.DEPARTMENTS
    export_name = "departments"

    def rows(self):
        return selectors.department_table(user=self.request.user)


class QuotaGrid(DoorPage):
    """Units x pools with each quota editable in place; one save sends every changed cell as one all-or-nothing
    change. An htmx POST with ``preview`` answers the warnings the change would bring, writing nothing."""

    doors = {"GET": "quota.list", "POST": "quota.change"}
    template_name = "pools/quota_grid.html"

    @property
    def department(self) -> str | None:
        return (self.request.GET.get("department") or self.request.POST.get("department") or "").strip() or None

    def grid_page(self, grid: dict, *, errors: list[str] = (), status: int = 200):
        posted = self.request.POST if errors else {}
        quota_grid_inputs(grid, posted)
        context = {
            **grid,
            "department": self.department or "",
            "departments": [row["name"] for row in selectors.departments_visible(user=self.request.user)],
            "errors": list(errors),
            "posted": posted,
            "can_save": any(row["editable"] for row in grid["rows"]),
        }
        return self.page(context, status=status)

    def get(self, request):
        return self.grid_page(selectors.quota_grid(user=request.user, department=self.department))

    def post(self, request):
        grid = selectors.quota_grid(user=request.user, department=self.department)
        preview = "preview" in request.POST
        try:
            changes = quota_grid_changes(request.POST, grid)
            if preview:
                warnings = services.quota_bulk_preview(quotas=changes, actor=self.actor) if changes else None
                context = {"warnings": grid["warnings"] if warnings is None else warnings, "changes": changes}
                return self.page(context, template="pools/_quota_warnings.html")
            if not changes:
                messages.info(request, "Nothing changed.")
            else:
                revisions = services.quota_bulk_set(
                    quotas=changes, actor=self.actor, description=request.POST.get("description", "")[:500]
                )
                numbers = ", ".join(f"{r.config_type} revision {r.revision}" for r in revisions)
                messages.success(request, f"Saved {len(changes)} quota{'s' if len(changes) != 1 else ''}: {numbers}.")
            return redirect(request.get_full_path())
        except (AccessDenied, ConfigError) as exc:
            errors = [str(problem) for problem in getattr(exc, "problems", ())] or [str(exc)]
            status = refusal_status(exc)
        if preview:
            return self.page({"errors": errors}, status=status, template="pools/_quota_warnings.html")
        return self.grid_page(grid, errors=errors, status=status)


class QuotaDashboard(DoorPage):
    """A pool's quotas at a glance: capacity against quotas, allocations against deserved, what waits, who is
    farthest from their fair share, and the allocation against quota over time."""

    door = "quota.dashboard"
    template_name = "pools/quota_dashboard.html"

    def get(self, request, pool: str):
        dashboard = selectors.quota_dashboard(user=request.user, pool=pool)
        return self.page({**dashboard, "ranges": list(selectors.PERIODS)})


class QuotaDashboardChart(DoorPage):
    """The dashboard's chart: GPUs allocated to the pool's departments against their deserved quota and the pool's
    capacity over the chosen window."""

    door = "quota.dashboard"

    def get(self, request, pool: str):
        return JsonResponse(selectors.quota_usage_chart(user=request.user, pool=pool, period=request.GET.get("range")))
