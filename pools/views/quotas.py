"""Pages of departments, projects and their quotas per node pool (SEMANTICS §9): Run:ai's projects and departments
views, the quota grid with its bulk save, a pool's quota dashboard, and a member's own units (My projects, §9.4)."""

from __future__ import annotations

from typing import ClassVar

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import redirect

from .. import selectors, services, tables
from ..choices import TYPE_LABELS, ConfigType, UnitStatus
from ..engine.errors import AccessDenied, ConfigError, NotFound
from ..engine.permissions import CHANGE_CONFIG
from ..forms import UnitForm, quota_grid_changes, quota_grid_inputs
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
            # the departments whose projects the caller may create and change: the forms' links
            "managed": selectors.departments_managed(user=self.request.user),
        }


class Departments(ListPage):
    """Each department with its projects, quotas and allocations over every pool; ``?format=csv`` downloads it."""

    door = "unit.departments"
    template_name = "pools/departments.html"
    table = tables.DEPARTMENTS
    export_name = "departments"
    offers = {"can_change": (CHANGE_CONFIG, ConfigType.DEPARTMENT)}

    def rows(self):
        return selectors.department_table(user=self.request.user)


class UnitEditor(DoorPage):
    """Create or edit a department or a project: name, description, quota per pool (deserved, limit, over quota
    and its weight) and, for a project, its department and namespaces. Saved as the API saves it, one config change
    through ``services.config_apply``; bad input shows next to its field and changes nothing. The form carries the
    version it was opened at: saving over someone else's change since is refused."""

    template_name = "pools/unit_form.html"
    kind: ClassVar[str]

    @property
    def config_type(self) -> ConfigType:
        return ConfigType.DEPARTMENT if self.kind == "department" else ConfigType.PROJECT

    def form(self, editor: dict, data=None) -> UnitForm:
        name = self.kwargs.get("name")
        initial = UnitForm.initial_for(name, editor["body"], editor["pools"])
        if not name and self.kind == "project":
            initial["department"] = self.request.GET.get("department", "")
        return UnitForm(
            data,
            initial=initial,
            kind=self.kind,
            pools=editor["pools"],
            departments=editor["departments"],
            editing=bool(name),
        )

    def editor_page(self, form: UnitForm, editor: dict, version: str, status: int = 200):
        label = TYPE_LABELS[self.config_type]
        context = {"form": form, "kind": self.kind, "label": label, "name": self.kwargs.get("name"), "version": version}
        return self.page({**context, "departments": editor["departments"]}, status=status)

    def get(self, request, name: str | None = None):
        editor = selectors.unit_editor(user=request.user, kind=self.kind, name=name)
        return self.editor_page(self.form(editor), editor, editor["version"])

    def post(self, request, name: str | None = None):
        editor = selectors.unit_editor(user=request.user, kind=self.kind, name=name)
        form = self.form(editor, data=request.POST)
        version = (request.POST.get("version") or editor["version"]) if name else ""
        if form.is_valid():
            unit, config_type = name or form.cleaned_data["name"], self.config_type
            expected = services.Expected(etags=frozenset([version])) if name else services.ABSENT
            try:
                services.config_apply(
                    changes={config_type: {unit: form.body(editor["body"])}},
                    actor=self.actor,
                    expect={(config_type, unit): expected},
                    description=form.cleaned_data["change_description"],
                    tags=form.cleaned_data["tags"],
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:  # a problem of a field, a name taken, a change made since it was read
                form.attach(exc, unit=f"{TYPE_LABELS[config_type]} '{unit}'")
            else:
                messages.success(request, f"Saved {TYPE_LABELS[config_type]} {unit}.")
                return redirect("pools:departments" if self.kind == "department" else "pools:projects")
        return self.editor_page(form, editor, version, status=400)


class DepartmentCreate(UnitEditor):
    door = "department.create"
    kind = "department"


class DepartmentEdit(UnitEditor):
    door = "department.change"
    kind = "department"


class ProjectCreate(UnitEditor):
    door = "project.create"
    kind = "project"


class ProjectEdit(UnitEditor):
    door = "project.change"
    kind = "project"


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
        what_if = {key: request.GET.get(key, "") for key in ("k_value", "window", "half_life")}
        dashboard = selectors.quota_dashboard(user=request.user, pool=pool, what_if=what_if)
        return self.page({**dashboard, "ranges": list(selectors.PERIODS)})


class QuotaDashboardChart(DoorPage):
    """The dashboard's chart: GPUs allocated to the pool's departments against their deserved quota and the pool's
    capacity over the chosen window."""

    door = "quota.dashboard"

    def get(self, request, pool: str):
        return JsonResponse(selectors.quota_usage_chart(user=request.user, pool=pool, period=request.GET.get("range")))


class MyProjects(DoorPage):
    """The departments and projects the caller belongs to: per pool the quota, fair share, allocated and pending
    GPUs, and each waiting workload with the reason it waits; ``?format=json`` answers as ``/api/my/projects/``."""

    door = "my.projects"
    template_name = "pools/my_projects.html"

    def get(self, request):
        units = selectors.my_projects(user=request.user)
        if request.GET.get("format") == "json":
            return JsonResponse({"units": units})
        return self.page({"units": units})
