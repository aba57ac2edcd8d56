"""Pages of departments, projects and their quotas per node pool (SEMANTICS §9): Run:ai's projects and
departments tables, the quota grid with its bulk save, and a pool's quota dashboard.

Thin like the other pages: figures from ``pools.selectors`` (``quota_figures`` underneath, as the API and
``poolctl`` read them), every change one ``services.quota_bulk_set`` call that the gate decides.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from . import selectors, services
from .choices import UnitStatus
from .engine.errors import AccessDenied, ConfigError, NotFound
from .engine.numbers import parse_number
from .views import actor_of, export, gate_answers

PROJECT_COLUMNS = [
    "name",
    "department",
    "status",
    "node_pools",
    "allocated_gpus",
    "allocation_ratio",
    "gpu_quota",
    "cpu_quota",
    "memory_quota_mib",
    "workloads",
]
DEPARTMENT_COLUMNS = ["name", "projects", *PROJECT_COLUMNS[2:]]
WEIGHTS = [("", "None"), ("0", "Lowest"), ("1", "Low"), ("2", "Medium"), ("3", "High")]
GRID_FIELDS = ("deserved", "limit", "weight")
MAX_GRID_CELLS = 20_000


def _csv_rows(rows: list[dict], columns: list[str]) -> list[dict]:
    return [
        {column: ",".join(row[column]) if isinstance(row[column], list) else row[column] for column in columns}
        for row in rows
    ]


@login_required
@require_GET
def projects(request):
    """Run:ai's projects view; ``?department=`` keeps one department's, ``?format=csv`` downloads the table."""
    department = request.GET.get("department", "").strip() or None
    rows = selectors.project_table(user=request.user, department=department)
    if request.GET.get("format") == "csv":
        return export(_csv_rows(rows, PROJECT_COLUMNS), PROJECT_COLUMNS, "projects", "csv")
    context = {
        "rows": rows,
        "department": department or "",
        "departments": [row["name"] for row in selectors.departments_visible(user=request.user)],
        "statuses": UnitStatus,
    }
    return render(request, "pools/projects.html", context)


@login_required
@require_GET
def departments(request):
    """Each department with its projects, quotas and allocations over every pool; ``?format=csv`` downloads it."""
    rows = selectors.department_table(user=request.user)
    if request.GET.get("format") == "csv":
        return export(_csv_rows(rows, DEPARTMENT_COLUMNS), DEPARTMENT_COLUMNS, "departments", "csv")
    return render(request, "pools/departments.html", {"rows": rows})


# --- the quota grid ------------------------------------------------------------------------------------------


def grid_changes(post, grid: dict) -> list[dict]:
    """The quotas the grid's form changes: each cell whose deserved, limit or weight differs from the figure the
    page showed (``unit-I``/``pool-J`` name row and column; ``q-I-J-deserved`` etc. the cell's fields)."""
    shown = {(row["kind"], row["unit"], cell["pool"]): cell for row in grid["rows"] for cell in row["cells"]}
    pools = {}
    for key in post:
        if key.startswith("pool-"):
            pools[key[5:]] = post[key]
    if len(pools) * sum(1 for key in post if key.startswith("unit-")) > MAX_GRID_CELLS:
        raise ConfigError(f"at most {MAX_GRID_CELLS} cells in one save")
    changes = []
    for key in post:
        if not key.startswith("unit-"):
            continue
        index = key[5:]
        kind, _, unit = post[key].partition("/")
        for column, pool in pools.items():
            cell = shown.get((kind, unit, pool))
            names = {field: f"q-{index}-{column}-{field}" for field in GRID_FIELDS}
            if cell is None or not any(name in post for name in names.values()):
                continue
            gpu = {}
            for field, current in (("deserved", cell["deserved"]), ("limit", cell["limit"])):
                if names[field] in post:
                    value = parse_number(post[names[field]], field=f"{unit} on {pool}: GPU {field}")
                    if value != current:
                        gpu[field] = value
            if names["weight"] in post:
                text = post[names["weight"]].strip()
                weight = None if text == "" else parse_number(text, field=f"{unit} on {pool}: over-quota weight")
                if weight != cell["over_quota_weight"]:
                    gpu["overQuotaWeight"] = weight
            if gpu:
                changes.append({"unit": f"{kind}/{unit}", "pool": pool, "figures": {"gpu": gpu}})
    return changes


def _text(value) -> str:
    """A figure as an input shows it: ``4``, ``1.5``, ``""`` for None (no over-quota)."""
    if value is None:
        return ""
    return str(int(value)) if value == int(value) else str(value)


def _decorate(grid: dict, posted) -> None:
    """Give each row and cell of the grid its form names, and the values to show: the posted ones after a refused
    save (so nothing typed is lost), else the current figures."""
    for index, row in enumerate(grid["rows"]):
        row["index"] = index
        for column, cell in enumerate(row["cells"]):
            cell["prefix"] = prefix = f"q-{index}-{column}"
            current = {
                "deserved": _text(cell["deserved"]),
                "limit": _text(cell["limit"]),
                "weight": _text(cell["over_quota_weight"]),
            }
            cell["shown"] = {field: posted.get(f"{prefix}-{field}", value) for field, value in current.items()}
            known = {value for value, _ in WEIGHTS}
            cell["weights"] = WEIGHTS + [(current["weight"], current["weight"])] * (current["weight"] not in known)


@login_required
@require_http_methods(["GET", "POST"])
def quota_grid(request):
    """Units x pools with each quota editable in place; one save sends every changed cell as one all-or-nothing
    change. An htmx POST with ``preview`` answers the warnings the change would bring, writing nothing."""
    department = (request.GET.get("department") or request.POST.get("department") or "").strip() or None
    grid = selectors.quota_grid(user=request.user, department=department)
    errors: list[str] = []
    status = 200
    if request.method == "POST":
        if not selectors.can_change_quotas(request.user):
            raise PermissionDenied("changing quotas needs config:Update on config/DEPARTMENT or config/PROJECT")
        preview = "preview" in request.POST
        try:
            changes = grid_changes(request.POST, grid)
            if preview:
                warnings = services.quota_bulk_preview(quotas=changes, actor=actor_of(request)) if changes else None
                context = {"warnings": grid["warnings"] if warnings is None else warnings, "changes": changes}
                return render(request, "pools/_quota_warnings.html", context)
            if not changes:
                messages.info(request, "Nothing changed.")
            else:
                revisions = services.quota_bulk_set(
                    quotas=changes, actor=actor_of(request), description=request.POST.get("description", "")[:500]
                )
                numbers = ", ".join(f"{r.config_type} revision {r.revision}" for r in revisions)
                messages.success(request, f"Saved {len(changes)} quota{'s' if len(changes) != 1 else ''}: {numbers}.")
            return redirect(request.get_full_path())
        except AccessDenied as exc:
            errors, status = [str(exc)], 403
        except ConfigError as exc:
            errors, status = [str(problem) for problem in exc.problems], 404 if isinstance(exc, NotFound) else 400
        if preview:
            return render(request, "pools/_quota_warnings.html", {"errors": errors}, status=status)
    _decorate(grid, request.POST if errors else {})
    context = {
        **grid,
        "department": department or "",
        "departments": [row["name"] for row in selectors.departments_visible(user=request.user)],
        "errors": errors,
        "posted": request.POST if errors else {},
        "can_save": any(row["editable"] for row in grid["rows"]),
    }
    return render(request, "pools/quota_grid.html", context, status=status)


# --- a pool's quota dashboard ----------------------------------------------------------------------------------


@login_required
@require_GET
@gate_answers
def quota_dashboard(request, pool: str):
    """A pool's quotas at a glance: capacity against quotas, allocations against deserved, what waits, who is
    farthest from their fair share, and the allocation against quota over time."""
    context = {**selectors.quota_dashboard(user=request.user, pool=pool), "ranges": list(selectors.PERIODS)}
    return render(request, "pools/quota_dashboard.html", context)


@login_required
@require_GET
@gate_answers
def quota_dashboard_usage(request, pool: str) -> HttpResponse:
    """The dashboard's chart: GPUs allocated to the pool's departments against their deserved quota and the pool's
    capacity over time (JSON for the chart script, as the pool page's usage chart reads it)."""
    period = selectors.PERIODS.get(request.GET.get("range", "24h"), selectors.PERIODS["24h"])
    now = timezone.now()
    samples = selectors.quota_series(user=request.user, pool=pool, since=now - period)
    times = [datetime.fromisoformat(sample["at"]).timestamp() for sample in samples]
    return JsonResponse(
        {
            "times": times,
            "start": (now - period).timestamp(),
            "end": now.timestamp(),
            "series": [
                {"label": label, "values": [sample[key] for sample in samples]}
                for label, key in (("Allocated", "allocated"), ("Deserved", "deserved"), ("Capacity", "capacity"))
            ],
        }
    )
