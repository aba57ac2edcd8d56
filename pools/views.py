"""Pages of the web console: server-rendered, with htmx fragments for live parts.

Views stay thin: reads go through ``pools.selectors`` with ``user=request.user`` (an invisible pool is a
404), writes through ``pools.services`` with a WEB actor, and every control that changes something is
shown only to those allowed (``config:Update`` / ``backend:Update``) and refused (403) to the others.
A URL that serves both a page and its htmx fragment says ``Vary: HX-Request``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import wraps

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.access import allows
from accounts.models import Role
from accounts.tokens import parse_lifetime

from . import configs, jobs, selectors, services
from .choices import (
    TYPE_LABELS,
    ChangeOrigin,
    ConfigType,
    NodePoolColumn,
    NodePoolStatus,
    NodeStatus,
    PoolStatus,
    ResourceType,
    SyncState,
)
from .configs import body_etag, normalize_body, parse_revision_number, users_of
from .engine.errors import AccessDenied, ConfigError, Conflict, NotFound
from .engine.permissions import CHANGE_CONFIG, CHANGE_USER, OPERATE_BACKEND, PERMISSIONS
from .filtersets import NodeFilterSet, NodePoolFilterSet, PoolFilterSet
from .forms import (
    DocumentForm,
    PoolForm,
    RoleGenerateForm,
    RollbackForm,
    ServiceTokenForm,
    UserCreateForm,
    UserRolesForm,
    WhatIfForm,
    attach_problems,
    document_text,
)
from .inventory.records import InventoryError
from .querysets import sees_whole_fleet
from .tables import csv_text
from .templatetags import console as console_tags

OVERVIEW_POLL_SECONDS = 5
OVERVIEW_IDLE_ROWS = 5  # the longest-idle workloads the overview shows
NODES_PER_PAGE = 100
SYNC_GIVE_UP = timedelta(minutes=2)
# ``since=`` of a sync progress poll: the POSIX time the page put there, in ASCII digits.
SYNC_REQUESTED_AT = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?", re.ASCII)
PREVIEW_FIELDS = ("common_pod_template", "common_default_variables", "platforms")
POOL_COLUMNS = [
    "name",
    "status",
    "backend",
    "shared",
    "node_set",
    "quota_used",
    "quota_limit",
    "quota_free",
    "total_usage",
    "total_capacity",
    "total_free",
]


def can_update_config(user, config_type: ConfigType) -> bool:
    """Whether to offer the controls that change objects of ``config_type`` (the service decides again)."""
    return allows(user, CHANGE_CONFIG, config_type)


def actor_of(request) -> services.Actor:
    return services.Actor.of(request.user, ChangeOrigin.WEB)


def gate_answers(view: Callable) -> Callable:
    """The gate's verdicts as pages: NotFound (missing or invisible) is a 404, AccessDenied a 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            raise Http404(str(exc)) from None
        except AccessDenied as exc:
            raise PermissionDenied(str(exc)) from None

    return wrapper


def filter_values(request, filterset_class) -> dict[str, str]:
    """What the query string gives each of the list's filters, for the filter form to show again."""
    return {key: request.GET.get(key, "").strip() for key in filterset_class.base_filters}


def page_or_fragment(request, page: str, fragment: str, context: dict, status: int = 200) -> HttpResponse:
    """The whole page, or only its live fragment for an htmx request; caches keep the two apart."""
    response = render(request, fragment if request.htmx else page, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def export(rows: list[dict], columns: list[str], filename: str, fmt: str) -> HttpResponse:
    """Rows as a CSV or JSON download (the same rows the table shows, without pagination)."""
    if fmt == "json":
        response = JsonResponse(rows, safe=False, json_dumps_params={"indent": 2})
    else:
        text = csv_text(columns, ([row.get(column, "") for column in columns] for row in rows))
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


# --- overview ---------------------------------------------------------------------------------------------


def overview_rows(request) -> tuple[list[dict], dict]:
    """The visible pools with their GPU numbers, filtered by the query string (``PoolFilterSet``'s parameters)."""
    filters = filter_values(request, PoolFilterSet)
    error = ""
    try:
        rows = selectors.pool_list(user=request.user, filters=request.GET, with_summary=True)
    except ConfigError as exc:
        rows, error = [], str(exc)
    return rows, {"filters": filters, "error": error, **selectors.pool_filter_choices(user=request.user)}


@login_required
@require_GET
def overview(request):
    """Every pool the user may see: status, GPU bar with the quota, sharing, free GPUs, node counts."""
    rows, extra = overview_rows(request)
    fmt = request.GET.get("format")
    if fmt in ("csv", "json"):
        if extra["error"]:
            return HttpResponse(extra["error"], status=400, content_type="text/plain; charset=utf-8")
        flat = [
            {
                "name": row["name"],
                "status": row["status"],
                "backend": row["backend"],
                "shared": row["shared"],
                "node_set": " ".join(row["node_set"]) if fmt == "csv" else row["node_set"],
                **row["gpu"],
            }
            for row in rows
        ]
        return export(flat, POOL_COLUMNS, "pools", fmt)
    for row in rows:
        row["shares_with"] = [name for name in row["node_set"] if name != row["name"]]
    totals = {
        key: sum(row["gpu"][key] for row in rows if not row["shared"])
        for key in ("total_usage", "total_capacity", "total_free")
    }
    context = {
        "rows": rows,
        "totals": totals,
        "statuses": PoolStatus.values,
        "poll_seconds": OVERVIEW_POLL_SECONDS,
        "updated_at": timezone.now(),
        "can_create": can_update_config(request.user, ConfigType.POOL),
        **extra,
    }
    if not request.htmx:  # the panel of idle GPUs is not part of the live table
        idle = selectors.idle_workloads(user=request.user)
        context.update(idle_rows=idle[:OVERVIEW_IDLE_ROWS], idle_count=len(idle))
    status = 400 if extra["error"] else 200
    return page_or_fragment(request, "pools/overview.html", "pools/_pool_table.html", context, status=status)


# --- one pool ---------------------------------------------------------------------------------------------


@login_required
@require_GET
@gate_answers
def pool_detail(request, name: str):
    """One pool: platforms with merged templates, nodes, workloads, rules, usage history, timeouts, quota."""
    pool = selectors.pool_get(name, user=request.user)
    body = configs.pool_body(pool)
    row = selectors.pool_list(names=[pool.name], user=request.user, with_summary=True)[0]
    state = selectors.config_state([ConfigType.POD_TEMPLATE, ConfigType.RESOURCE_VALIDATION])
    rendered = selectors.draft_render(pool_name=pool.name, pool=body, templates=state[ConfigType.POD_TEMPLATE])
    rules = state[ConfigType.RESOURCE_VALIDATION]
    platforms = []
    for platform_name, result in rendered.items():
        platform_body = body["platforms"].get(platform_name) or {}
        names = body["common_resource_validations"] + list(platform_body.get("resource_validations") or [])
        platforms.append(
            {
                "name": platform_name,
                "body": platform_body,
                "templates": result["templates"],
                "error": result.get("error"),
                "yaml": document_text(result["pod_template"]) if "pod_template" in result else "",
                "json": json.dumps(result["pod_template"], indent=2) if "pod_template" in result else "",
                "validations": [(n, rules.get(n, [])) for n in names],
            }
        )
    summary = row["summary"]
    products = sorted({p for info in summary["platforms"].values() for p in info["free_by_product"]})
    context = {
        "pool": pool,
        "body": body,
        "row": row,
        "platforms": platforms,
        "summary": summary,
        "products": products,
        "nodes": selectors.resource_list(user=request.user, filters={"pool": pool.name}),
        "workloads": selectors.pool_workloads(pool),
        "can_edit": can_update_config(request.user, ConfigType.POOL),
        "ranges": list(selectors.PERIODS),
        "utilization": selectors.pool_utilization(pool=pool.name),
        "utilization_ranges": list(selectors.PERIODS),
        "utilization_source": selectors.utilization_source(pool.backend),
    }
    return render(request, "pools/pool_detail.html", context)


@login_required
@require_GET
@gate_answers
def pool_usage(request, name: str):
    """The usage history of a pool and of its GPU products as chart series (JSON for the chart script)."""
    pool = selectors.pool_get(name, user=request.user)
    period = selectors.PERIODS.get(request.GET.get("range", "24h"), selectors.PERIODS["24h"])
    now = timezone.now()
    since = now - period
    summary = selectors.pool_node_summary([pool.name]).get(pool.name, {"platforms": {}})
    products = sorted({p for info in summary["platforms"].values() for p in info["free_by_product"]})
    series = {"used": {}, "capacity": {}, "quota_limit": {}}
    for sample in selectors.usage_series(scope="pool", key=pool.name, since=since):
        for key in series:
            series[key][sample["at"]] = sample[key]
    # A product's series adds up every pool of the fleet: shown only to those who may see the whole fleet.
    products = products if sees_whole_fleet(request.user) else []
    for product in products:
        series[product] = {
            sample["at"]: sample["used"] for sample in selectors.usage_series(scope="product", key=product, since=since)
        }
    times = sorted({at for values in series.values() for at in values})
    return JsonResponse(
        {
            "times": [datetime.fromisoformat(at).timestamp() for at in times],
            "start": since.timestamp(),
            "end": now.timestamp(),
            "series": [
                {"label": label, "values": [values.get(at) for at in times]}
                for label, values in (
                    ("Used", series["used"]),
                    ("Capacity", series["capacity"]),
                    ("Quota", series["quota_limit"]),
                    *((f"{product} used (all pools)", series[product]) for product in products),
                )
            ],
        }
    )


@login_required
@require_POST
@gate_answers
def pool_maintenance(request, name: str):
    """Switch a pool's maintenance mode (a config change like any other, with its revision)."""
    enable = request.POST.get("enable") == "1"
    services.pool_maintenance_set(name=name, enable=enable, actor=actor_of(request))
    return redirect("pools:pool", name=name)


def pool_form_for(request, *, data=None, initial=None, editing: bool) -> PoolForm:
    """The pool form, offering the backends, templates and validations the user may see."""
    state = {
        config_type: selectors.config_objects(config_type=config_type, user=request.user)
        for config_type in (ConfigType.BACKEND, ConfigType.POD_TEMPLATE, ConfigType.RESOURCE_VALIDATION)
    }
    return PoolForm(
        data,
        initial=initial,
        backends=sorted(state[ConfigType.BACKEND]),
        templates=sorted(state[ConfigType.POD_TEMPLATE]),
        validations=sorted(state[ConfigType.RESOURCE_VALIDATION]),
        editing=editing,
    )


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def pool_edit(request, name: str | None = None):
    """Create or edit a pool; problems are shown next to their field and nothing is saved.

    The form carries the version it was opened at: saving over someone else's change since is refused.
    """
    base = configs.pool_body(selectors.pool_get(name, user=request.user)) if name else {}
    if not can_update_config(request.user, ConfigType.POOL):
        raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(ConfigType.POOL)}")
    initial = PoolForm.initial_from_body(name, base) if name else {"backend": "default", "gpu_guarantee": -1}
    form = pool_form_for(
        request, data=request.POST if request.method == "POST" else None, initial=initial, editing=bool(name)
    )
    if request.method == "POST" and form.is_valid():
        pool_name = name or form.cleaned_data["name"]
        version = request.POST.get("version", "")
        expected = services.Expected(etags=frozenset([version])) if name and version else services.PRESENT
        try:
            services.config_update(
                config_type=ConfigType.POOL,
                name=pool_name,
                data=form.body(base),
                actor=actor_of(request),
                description=form.cleaned_data["change_description"],
                tags=form.cleaned_data["tags"],
                expect={(ConfigType.POOL, pool_name): expected if name else services.ABSENT},
            )
        except NotFound:
            raise  # what the user may not see is a 404 page, not a form error
        except Conflict as exc:  # the service's own words: "pool 'x' already exists"
            attach_problems(form, exc, default_field="name")
        except ConfigError as exc:
            attach_problems(form, exc, default_field="platforms")
        else:
            return redirect("pools:pool", name=pool_name)
    # After a refused save the form keeps the version it was opened at, so a stale form stays stale.
    version = (request.POST.get("version") or body_etag(base)) if name else ""
    context = {"form": form, "name": name, "version": version}
    return render(request, "pools/pool_form.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def pool_preview(request):
    """The merged template of every platform of the pool being edited, rendered without saving anything."""
    if not can_update_config(request.user, ConfigType.POOL):
        raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(ConfigType.POOL)}")
    name = request.POST.get("pool_name") or request.POST.get("name") or "draft"
    form = pool_form_for(request, data=request.POST, editing=False)
    form.fields["common_pod_template"].allowed = None
    form.is_valid()
    problems = [
        f"{form.fields[field].label}: {message}"
        for field, messages in form.errors.items()
        if field in ("platforms", "common_default_variables", "common_pod_template")
        for message in messages
    ]
    results = {}
    if not problems:
        try:
            # Only what rendering reads: a half-typed timeout elsewhere must not hide the preview.
            draft = {key: form.cleaned_data.get(key) for key in PREVIEW_FIELDS}
            canonical = normalize_body(ConfigType.POOL, name, draft)
        except ConfigError as exc:
            problems = [str(problem) for problem in exc.problems]
            canonical = None
        if canonical is not None:
            templates = selectors.config_objects(config_type=ConfigType.POD_TEMPLATE, user=request.user)
            results = selectors.draft_render(pool_name=name, pool=canonical, templates=templates)
    return render(request, "pools/_preview.html", {"problems": problems, "results": _preview_results(results)})


def _preview_results(results: dict) -> dict:
    return {
        platform: {**result, "yaml": document_text(result["pod_template"]) if "pod_template" in result else ""}
        for platform, result in results.items()
    }


# --- documents: pod templates, validation sets, roles ------------------------------------------------------

DOCUMENT_TYPES = {
    "templates": (ConfigType.POD_TEMPLATE, dict, "Pod template (YAML or JSON)"),
    "validations": (ConfigType.RESOURCE_VALIDATION, list, "Rules (YAML or JSON list)"),
    "roles": (ConfigType.ROLE, dict, "Role (YAML or JSON: description, policies, external_roles, sync_mode)"),
}


def document_kind(kind: str) -> tuple[ConfigType, type, str]:
    if kind not in DOCUMENT_TYPES:
        raise Http404("no such config type")
    return DOCUMENT_TYPES[kind]


def visible_users_of(request, config_type: ConfigType, name: str) -> list[str]:
    """The pools the user may see that refer to object ``name`` (the others are not named)."""
    pools = selectors.config_objects(config_type=ConfigType.POOL, user=request.user)
    return users_of({ConfigType.POOL: pools}, config_type, name)


@login_required
@require_GET
def document_list(request, kind: str):
    """Pod templates, validation sets or roles the user may see, with the pools that use each one."""
    config_type, _, _ = document_kind(kind)
    objects = selectors.config_objects(config_type=config_type, user=request.user)
    # The pools the user may see, read once for the whole list (not once per row): the others are not named.
    pools = {ConfigType.POOL: selectors.config_objects(config_type=ConfigType.POOL, user=request.user)}
    items = [
        {"name": item_name, "body": body, "used_by": users_of(pools, config_type, item_name)}
        for item_name, body in sorted(objects.items())
    ]
    context = {
        "kind": kind,
        "label": TYPE_LABELS[config_type],
        "items": items,
        "can_edit": can_update_config(request.user, config_type),
    }
    return render(request, "pools/document_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def document_edit(request, kind: str, name: str | None = None):
    """Create or edit a pod template, a validation set or a role as a YAML/JSON document.

    The form carries the version it was opened at: saving over someone else's change since is refused.
    """
    config_type, expect, body_label = document_kind(kind)
    existing = selectors.config_objects(config_type=config_type, user=request.user)
    if name and name not in existing:
        raise Http404(f"{TYPE_LABELS[config_type]} '{name}' does not exist")
    if not can_update_config(request.user, config_type):
        raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(config_type)}")
    initial = {"name": name, "body": document_text(existing[name])} if name else {"body": ""}
    form = DocumentForm(
        request.POST if request.method == "POST" else None,
        initial=initial,
        expect=expect,
        body_label=body_label,
        editing=bool(name),
    )
    version = (request.POST.get("version") or body_etag(existing[name])) if name else ""
    if request.method == "POST" and form.is_valid():
        object_name = name or form.cleaned_data["name"]
        expected = services.Expected(etags=frozenset([version])) if name else services.ABSENT
        try:
            services.config_update(
                config_type=config_type,
                name=object_name,
                data={object_name: form.cleaned_data["body"]},
                actor=actor_of(request),
                description=form.cleaned_data["change_description"],
                tags=form.cleaned_data["tags"],
                expect={(config_type, object_name): expected},
            )
        except NotFound:
            raise  # what the user may not see is a 404 page, not a form error
        except Conflict as exc:
            attach_problems(form, exc, default_field="name")
        except ConfigError as exc:
            attach_problems(form, exc, default_field="body")
        else:
            return redirect(
                "pools:roles" if kind == "roles" else "pools:documents",
                **({} if kind == "roles" else {"kind": kind}),
            )
    context = {
        "form": form,
        "kind": kind,
        "label": TYPE_LABELS[config_type],
        "name": name,
        "version": version,
        "preview_pools": visible_users_of(request, config_type, name) if name else [],
        "previewable": config_type == ConfigType.POD_TEMPLATE,
    }
    return render(request, "pools/document_form.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def template_preview(request):
    """A pool's merged template with the pod template being edited in place of the saved one, unsaved."""
    if not can_update_config(request.user, ConfigType.POD_TEMPLATE):
        raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(ConfigType.POD_TEMPLATE)}")
    form = DocumentForm(request.POST, expect=dict)
    form.is_valid()
    if "body" in form.errors:
        return render(request, "pools/_preview.html", {"problems": form.errors["body"], "results": {}})
    name = request.POST.get("template_name") or request.POST.get("name") or "draft"
    pool_name = request.POST.get("preview_pool", "")
    templates = selectors.config_objects(config_type=ConfigType.POD_TEMPLATE, user=request.user)
    templates[name] = form.cleaned_data["body"]
    if not pool_name:
        results = selectors.draft_render(
            pool_name="preview", pool={"common_pod_template": [name], "platforms": {}}, templates=templates
        )
    else:
        try:
            pool = selectors.pool_get(pool_name, user=request.user)
        except NotFound:
            raise Http404("no such pool") from None
        results = selectors.draft_render(pool_name=pool.name, pool=configs.pool_body(pool), templates=templates)
    return render(request, "pools/_preview.html", {"problems": [], "results": _preview_results(results)})


# --- nodes ------------------------------------------------------------------------------------------------

NODE_COLUMNS = [
    "node",
    "backend",
    "pool",
    "platform",
    "type",
    "status",
    "gpu_product",
    "gpu_used",
    "gpu_capacity",
    "cpu_used",
    "cpu_capacity",
    "memory_gi_used",
    "memory_gi_capacity",
    "reason",
]


@login_required
@require_GET
@gate_answers
def nodes(request):
    """Every (node, pool, platform) row the user may see, filterable, with labels, taints and reasons.

    The query string is ``NodeFilterSet``'s, so a link means here what the same parameters mean to
    ``/api/resources/`` and ``poolctl resource list``.
    """
    filters = filter_values(request, NodeFilterSet)
    error = ""
    try:
        index = selectors.resource_index(user=request.user, filters=request.GET)
    except NotFound:
        raise
    except ConfigError as exc:
        index, error = [], str(exc)
    fmt = request.GET.get("format")
    if fmt in ("csv", "json"):
        if error:
            return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
        flat = [
            {
                **{key: row[key] for key in ("node", "backend", "pool", "platform", "type", "status", "gpu_product")},
                **{
                    f"{kind}_{part}": row[kind][part]
                    for kind in ("gpu", "cpu", "memory_gi")
                    for part in ("used", "capacity")
                },
                "reason": row["reason"],
            }
            for row in selectors.resource_rows(index)
        ]
        return export(flat, NODE_COLUMNS, "nodes", fmt)
    page = Paginator(index, NODES_PER_PAGE).get_page(request.GET.get("page"))
    numbers = selectors.resource_numbers(page.object_list)
    details = selectors.node_details({row.node_id for row in page.object_list})
    page.object_list = [
        {
            **row._asdict(),
            **numbers[row.node_id],
            "labels": details.get(row.node_id, {}).get("labels", {}),
            "taints": details.get(row.node_id, {}).get("taints", []),
        }
        for row in page.object_list
        if row.node_id in numbers
    ]
    context = {
        "page": page,
        "count": len(index),
        "filters": filters,
        "error": error,
        **selectors.node_filter_choices(user=request.user),
        "types": ResourceType.values,
        "statuses": NodeStatus.choices,
    }
    return page_or_fragment(
        request, "pools/nodes.html", "pools/_node_table.html", context, status=400 if error else 200
    )


# --- backends ---------------------------------------------------------------------------------------------


@login_required
@require_GET
def backends(request):
    """Each backend the user may read: sync status, last contact, duration, last error, node counts."""
    rows = selectors.backend_health(user=request.user)
    for row in rows:
        row["can_sync"] = allows(request.user, OPERATE_BACKEND, row["name"])
    return render(request, "pools/backends.html", {"rows": rows})


@login_required
@require_POST
@gate_answers
def backend_sync(request, name: str):
    """Queue a sync of the backend and answer the progress fragment that polls until it is done."""
    requested = timezone.now()
    jobs.backend_sync_request(name=name, actor=actor_of(request))
    return render(
        request, "pools/_sync_progress.html", {"name": name, "since": requested.timestamp(), "state": SyncState.QUEUED}
    )


@login_required
@require_GET
@gate_answers
def backend_sync_status(request, name: str):
    """Progress of a requested sync; answers 286 once it finished or failed, so htmx stops polling."""
    backend = selectors.backend_get(name, user=request.user)
    text = request.GET.get("since", "")
    try:
        since = datetime.fromtimestamp(float(text), tz=UTC) if SYNC_REQUESTED_AT.fullmatch(text) else None
    except (ValueError, OverflowError, OSError):  # beyond the years a datetime holds
        since = None
    if since is None:
        return HttpResponse("since= must be when the sync was requested, in seconds since 1970", status=400)
    state = SyncState.RUNNING
    if backend.last_sync_at and backend.last_sync_at >= since:
        state = SyncState.DONE
    elif backend.last_sync_error and timezone.now() - since > timedelta(seconds=2):
        state = SyncState.FAILED
    elif timezone.now() - since > SYNC_GIVE_UP:
        state = SyncState.TIMEOUT
    context = {"name": name, "since": since.timestamp(), "state": state, "backend": backend}
    return render(request, "pools/_sync_progress.html", context, status=200 if state == SyncState.RUNNING else 286)


# --- what-if ----------------------------------------------------------------------------------------------


@login_required
@require_GET
def what_if(request):
    """Pick a pool and platform, enter resources: the merged pod spec and the verdict per node, nothing submitted.

    With a project, the verdict also says whether the request fits the project's quota on the pool; per node,
    whether it could start now on the free resources or would wait.
    """
    platforms = selectors.pool_platform_names(user=request.user)
    pools = list(platforms)
    projects = list(selectors.projects_queryset(user=request.user).order_by("name").values_list("name", flat=True))
    # A link with only ?pool= (and ?project=) preselects them; the check runs once the request itself is given.
    submitted = any(key in request.GET for key in ("platform", "cpu", "gpu", "memory", "storage"))
    initial = {"pool": request.GET.get("pool"), "project": request.GET.get("project")}
    form = WhatIfForm(request.GET if submitted else None, pools=pools, projects=projects, initial=initial)
    result = None
    if submitted and form.is_valid():
        values = form.user_values()
        pool_name, platform = form.cleaned_data["pool"], form.cleaned_data["platform"] or None
        try:
            rendered = selectors.pool_render(
                pool_name=pool_name, platform=platform, user_values=values, user=request.user
            )
            verdict = selectors.pool_check(
                pool_name=pool_name,
                platform=platform,
                user_values=values,
                user=request.user,
                project=form.cleaned_data["project"] or None,
            )
        except NotFound as exc:
            problem = exc.problems[0]
            if problem.field == "project":
                form.add_error("project", problem.message)
            else:
                form.add_error("platform" if platform else "pool", str(exc))
        except ConfigError as exc:
            form.add_error(None, str(exc))
        else:
            result = {"rendered": rendered, "yaml": document_text(rendered["pod_template"]), "verdict": verdict}
    context = {"form": form, "result": result, "platforms": platforms}
    return page_or_fragment(request, "pools/what_if.html", "pools/_what_if_result.html", context)


# --- history ----------------------------------------------------------------------------------------------


@login_required
@require_GET
def history(request):
    """Revisions the user may see, per config type: who, when, what, tags; each opens its diff and rollback."""
    filters = request.GET.copy()
    if "type" in filters:  # the page's older name of config_type
        filters.setlist("config_type", filters.pop("type"))
    chosen = filters.get("config_type", "")
    try:
        revisions = selectors.config_history(user=request.user, filters=filters)
    except ConfigError as exc:
        messages.error(request, str(exc))
        revisions = selectors.config_history(user=request.user, filters={"config_type": []}).none()
    page = Paginator(revisions, 50).get_page(request.GET.get("page"))
    page.object_list = [selectors.redacted(revision, request.user) for revision in page.object_list]
    return render(request, "pools/history.html", {"page": page, "types": list(ConfigType), "chosen": chosen})


def visible_revision(request, config_type: str, revision: int):
    """The revision as the user may see it; 404 for an unknown type or a revision of nothing they may see."""
    if config_type not in ConfigType.values:
        raise Http404("no such revision")
    try:
        number = parse_revision_number(str(revision), "revision")
    except ConfigError as exc:  # a number no revision can have
        raise Http404(str(exc)) from None
    return selectors.config_revision_get(config_type=ConfigType(config_type), revision=number, user=request.user)


@login_required
@require_GET
@gate_answers
def revision_detail(request, config_type: str, revision: int):
    """One revision: what it changed, side by side with the revision before it."""
    target = visible_revision(request, config_type, revision)
    previous, diff = selectors.revision_changes(revision=target, user=request.user)
    context = {
        "revision": target,
        "previous": previous,
        "diff": diff,
        "snapshot": "" if previous else document_text(target.snapshot),
        "can_rollback": can_update_config(request.user, ConfigType(config_type)),
    }
    return render(request, "pools/revision.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def revision_rollback(request, config_type: str, revision: int):
    """Confirm, then restore a config type to a revision (a new revision; refused with the reason if unsafe)."""
    target = visible_revision(request, config_type, revision)
    ctype = ConfigType(config_type)
    if not can_update_config(request.user, ctype):
        raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(ctype)}")
    form = RollbackForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            created = services.config_rollback(
                config_type=ctype,
                revision=revision,
                actor=actor_of(request),
                description=form.cleaned_data["description"],
            )
        except NotFound:
            raise  # what the user may not see is a 404 page, not a form error
        except ConfigError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("pools:revision", config_type=config_type, revision=created[0].revision)
    diff = selectors.config_diff(config_type=ctype, revision=revision, user=request.user)
    context = {"revision": target, "diff": diff, "form": form}
    return render(request, "pools/rollback.html", context, status=400 if form.errors else 200)


# --- access -----------------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def roles(request):
    """Roles the user may see, their policies and the pools each reaches; generate a pool role."""
    can_edit = can_update_config(request.user, ConfigType.ROLE)
    form = RoleGenerateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied(f"this needs {CHANGE_CONFIG.describe(ConfigType.ROLE)}")
        if form.is_valid():
            role_name = f"osmo-{form.cleaned_data['prefix']}"
            try:
                services.pool_role_generate(name=role_name, actor=actor_of(request))
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                form.add_error("prefix", str(exc))
            else:
                return redirect(f"{reverse('pools:roles')}#role-{role_name}")
    visible = [row["name"] for row in selectors.pool_list(user=request.user)]
    rows = selectors.role_reach(user=request.user, pool_names=visible)
    users = account_selectors.users_visible(principal=request.user)
    context = {
        "rows": rows,
        "form": form,
        "can_edit": can_edit,
        "users": users,
        "user_form": UserCreateForm(roles=[row["role"].name for row in rows]),
        "permissions": PERMISSIONS,
    }
    return render(request, "pools/roles.html", context, status=400 if form.errors else 200)


def _role_names(request) -> list[str]:
    return list(Role.objects.restrict(request.user).order_by("name").values_list("name", flat=True))


@login_required
@require_POST
@gate_answers
def user_create(request):
    """Create a person's account or a service account from the access page (the service decides)."""
    form = UserCreateForm(request.POST, roles=_role_names(request))
    if form.is_valid():
        try:
            created = account_services.user_create(principal=request.user, **form.cleaned_data)
        except NotFound:
            raise  # what the user may not see is a 404 page, not a form error
        except ConfigError as exc:
            form.add_error("username", str(exc))
        else:
            messages.success(request, f"Created {created.username}.")
            return redirect("pools:user", username=created.username)
    context = {"form": form, "errors": form.errors}
    return render(request, "pools/user_create.html", context, status=400)


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def user_detail(request, username: str):
    """One user: the roles they hold (changed only as the services allow) and, for a service account, tokens.

    A new token is shown once, on this response, which no cache keeps.
    """
    shown = account_selectors.user_visible(principal=request.user, username=username)
    roles_form = UserRolesForm(initial={"roles": shown["roles"]}, roles=_role_names(request))
    token_form = ServiceTokenForm()
    new_token = None
    status = 200
    if request.method == "POST" and request.POST.get("action") == "token":
        token_form = ServiceTokenForm(request.POST)
        status = 400
        if token_form.is_valid():
            user = get_user_model().objects.get(username=username)
            try:
                token, secret = account_services.api_token_create(
                    user=user,
                    name=token_form.cleaned_data["name"],
                    lifetime=parse_lifetime(token_form.cleaned_data["expires"]),
                    principal=request.user,
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                token_form.add_error(None, str(exc))
            else:
                new_token, status = {"token": token, "secret": secret}, 201
    elif request.method == "POST":
        roles_form = UserRolesForm(request.POST, roles=_role_names(request))
        if roles_form.is_valid():
            try:
                account_services.user_roles_set(
                    principal=request.user, username=username, roles=roles_form.cleaned_data["roles"]
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                roles_form.add_error(None, str(exc))
            else:
                messages.success(request, f"Roles of {username} saved.")
                return redirect("pools:user", username=username)
        status = 400
    context = {
        "shown": shown,
        "roles_form": roles_form,
        "token_form": token_form,
        "new_token": new_token,
        "can_change": allows(request.user, CHANGE_USER, username),
    }
    response = render(request, "pools/user_detail.html", context, status=status)
    if new_token:
        response["Cache-Control"] = "no-store"
    return response


# --- node pools (Run:ai's node-pools view, issue 11) -------------------------------------------------------

# The columns a first visit shows; the others are a checkbox away (``?columns=``). The pool's name is always in.
NODE_POOL_DEFAULT_COLUMNS = [
    NodePoolColumn.NODE_POOL,
    NodePoolColumn.STATUS,
    NodePoolColumn.LABEL_KEY,
    NodePoolColumn.LABEL_VALUE,
    NodePoolColumn.NODES,
    NodePoolColumn.GPU_DEVICES,
    NodePoolColumn.GPU_MEMORY,
    NodePoolColumn.ALLOCATED_GPUS,
    NodePoolColumn.CPUS,
    NodePoolColumn.ALLOCATED_CPUS,
    NodePoolColumn.WORKLOADS,
    NodePoolColumn.BACKEND,
]
# Columns shown right-aligned, as numbers.
NODE_POOL_NUMBERS = {str(column) for column in selectors.NODE_POOL_SUMS}


def node_pool_columns(request) -> list[str]:
    """The columns ``?columns=`` chooses (repeated or comma-separated, in their order), the pool's name first;
    the default ones when none is given. An unknown column raises ConfigError naming ``columns``."""
    given = [name.strip() for value in request.GET.getlist("columns") for name in value.split(",") if name.strip()]
    unknown = [name for name in given if name not in NodePoolColumn.values]
    if unknown:
        raise ConfigError(f"columns: '{unknown[0]}' is not a column (one of {', '.join(NodePoolColumn.values)})")
    chosen = list(dict.fromkeys(given)) or [str(column) for column in NODE_POOL_DEFAULT_COLUMNS]
    return [NodePoolColumn.NODE_POOL.value, *(name for name in chosen if name != NodePoolColumn.NODE_POOL)]


def node_pool_text(column: str, value) -> str:
    """A cell of the node-pools table as people read it: memory in GiB/TiB, GPUs and CPUs with up to two
    decimals, times in UTC (the page and the CSV show the same)."""
    if column in (NodePoolColumn.GPU_MEMORY, NodePoolColumn.CPU_MEMORY, NodePoolColumn.ALLOCATED_CPU_MEMORY):
        return console_tags.size(value)
    if column in NODE_POOL_NUMBERS:
        return console_tags.count(value)
    if column in (NodePoolColumn.LAST_UPDATE, NodePoolColumn.CREATION_TIME):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if column == NodePoolColumn.DEFAULT:
        return "yes" if value else "no"
    return str(value)


@login_required
@require_GET
def node_pools(request):
    """Run:ai's node-pools view: one row per visible pool with its nodes, GPUs, CPUs, memory and workloads.

    The query string is ``NodePoolFilterSet``'s (as for ``/api/node_pools/``), plus ``columns=`` (which columns,
    in the table and the CSV) and ``format=csv``. A bad parameter is a 400 naming it.
    """
    filters = filter_values(request, NodePoolFilterSet)
    error = ""
    columns, rows = [str(column) for column in NODE_POOL_DEFAULT_COLUMNS], []
    try:
        columns = node_pool_columns(request)
        rows = selectors.node_pool_list(user=request.user, filters=request.GET)
    except ConfigError as exc:
        error = str(exc)
    if request.GET.get("format") == "csv":
        if error:
            return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
        headings = [NodePoolColumn(column).label for column in columns]
        cells = [
            {heading: node_pool_text(column, row[column]) for heading, column in zip(headings, columns, strict=True)}
            for row in rows
        ]
        return export(cells, headings, "node-pools", "csv")
    sort = filters["sort"] if not error else ""
    headers = [
        {
            "column": column,
            "heading": NodePoolColumn(column).label,
            "numeric": column in NODE_POOL_NUMBERS,
            "order": "ascending" if sort == column else "descending" if sort == f"-{column}" else "",
            # A click sorts by the column, ascending first, then the other way.
            "sort": f"-{column}" if sort == column else column,
        }
        for column in columns
    ]
    context = {
        "rows": [
            {
                "name": row["node_pool"],
                "default": row["default"],
                "status": row["status"],
                "cells": [
                    (column, node_pool_text(column, row[column]), row[column], column in NODE_POOL_NUMBERS)
                    for column in columns
                ],
            }
            for row in rows
        ],
        "headers": headers,
        "columns": columns,
        "all_columns": NodePoolColumn.choices,
        "filters": filters,
        "sort": sort,
        "error": error,
        "statuses": NodePoolStatus.choices,
        "label_keys": sorted({row["label_key"] for row in rows if row["label_key"]}),
        "can_create": can_update_config(request.user, ConfigType.POOL),
        **selectors.pool_filter_choices(user=request.user),
    }
    return page_or_fragment(
        request, "pools/node_pools.html", "pools/_node_pool_table.html", context, status=400 if error else 200
    )


# === gpuctl's pool workflow (SEMANTICS §8.1) =================================================================
# Create a label pool by picking nodes, delete one (its running workloads shown, a force checkbox), relabel a
# node. Writes go through ``services.label_pool_apply`` / ``label_pool_delete`` / ``node_label``, which label
# the nodes in the cluster all or nothing; this section only reads the form and shows the answer.

LABEL_POOL_NODES_SHOWN = 500


def _label_pool_nodes(request) -> tuple[list[dict], str]:
    """The nodes to pick from: one row per node of the node table (``NodeFilterSet``'s filters), by name."""
    try:
        index = selectors.resource_index(user=request.user, filters=request.GET)
    except ConfigError as exc:
        return [], str(exc)
    rows: dict[str, dict] = {}
    for row in index:
        entry = rows.setdefault(
            row.node,
            {
                "node": row.node,
                "backend": row.backend,
                "status": row.status,
                "gpu_product": row.gpu_product,
                "pools": [],
            },
        )
        if row.pool and row.pool not in entry["pools"]:
            entry["pools"].append(row.pool)
    return list(rows.values())[:LABEL_POOL_NODES_SHOWN], ""


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def label_pool_create(request):
    """Pick nodes from the filtered node table, name the pool: the nodes are labelled in the cluster."""
    if not can_update_config(request.user, ConfigType.POOL):
        raise PermissionDenied("changing pools needs config:Update on config/POOL")
    form = {
        "name": request.POST.get("name", "").strip(),
        "description": request.POST.get("description", ""),
        "backend": request.POST.get("backend", ""),
        "gpu_type": request.POST.get("gpu_type", "").strip(),
        "overwrite": bool(request.POST.get("overwrite")),
        # Picked nodes travel with every filter request too, so changing the filter keeps them.
        "nodes": (request.POST if request.method == "POST" else request.GET).getlist("nodes"),
    }
    error, status = "", 200
    if request.method == "POST":
        document = {
            "kind": "pool",
            "version": "v0.1",
            "pool": {"name": form["name"], "description": form["description"]},
            "nodes": {node: {"gpu-type": form["gpu_type"]} for node in form["nodes"]},
        }
        try:
            result = services.label_pool_apply(
                document=configs.gpuctl_file_parse(document),
                actor=actor_of(request),
                backend=form["backend"] or None,
                overwrite=form["overwrite"],
            )
        except (ConfigError, InventoryError) as exc:
            error, status = str(exc), 409 if isinstance(exc, Conflict) else 400
        else:
            messages.success(request, f"Pool {result['pool']}: {len(result['labelled'])} node(s) labelled.")
            return redirect("pools:pool", name=result["pool"])
    nodes, filter_error = _label_pool_nodes(request)
    shown = {row["node"] for row in nodes}
    context = {
        "hidden_picks": [name for name in dict.fromkeys(form["nodes"]) if name not in shown],
        "form": form,
        "error": error,
        "nodes": nodes,
        "filter_error": filter_error,
        "filters": filter_values(request, NodeFilterSet),
        "backends": selectors.label_pool_backends(user=request.user),
        **selectors.node_filter_choices(user=request.user),
    }
    return page_or_fragment(
        request, "pools/label_pool_form.html", "pools/_label_pool_nodes.html", context, status=status
    )


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def label_pool_delete(request, name: str):
    """The pool, what still runs on it and a force checkbox; deleting removes its label from its nodes."""
    pool = selectors.gpuctl_pool_detail(name, user=request.user)
    if not can_update_config(request.user, ConfigType.POOL):
        raise PermissionDenied("changing pools needs config:Update on config/POOL")
    error, status = "", 200
    if request.method == "POST":
        try:
            result = services.label_pool_delete(
                name=name, actor=actor_of(request), force=bool(request.POST.get("force"))
            )
        except (ConfigError, InventoryError) as exc:
            error, status = str(exc), 409 if isinstance(exc, Conflict) else 400
        else:
            messages.success(request, f"Pool {name} deleted; label removed from {len(result['unlabelled'])} node(s).")
            return redirect("pools:overview")
    return render(request, "pools/label_pool_delete.html", {"pool": pool, "error": error}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
@gate_answers
def node_labels(request, name: str):
    """A node's labels, and one label set (key, value, overwrite) or removed (delete) in its cluster."""
    backend = request.GET.get("backend") or None
    labels = selectors.node_labels(name, user=request.user, backend=backend)
    form = {
        "key": request.POST.get("key", "").strip(),
        "value": request.POST.get("value", "").strip(),
        "overwrite": bool(request.POST.get("overwrite")),
        "delete": bool(request.POST.get("delete")),
    }
    error, status = "", 200
    if request.method == "POST":
        try:
            services.node_label(
                node=name,
                key=form["key"],
                value=None if form["delete"] else form["value"],
                overwrite=form["overwrite"],
                backend=labels["backend"],
                actor=actor_of(request),
            )
        except (ConfigError, InventoryError) as exc:
            error, status = str(exc), 400
        else:
            messages.success(request, f"node/{name}: {form['key']} {'removed' if form['delete'] else 'set'}.")
            return redirect(reverse("pools:node-labels", args=[name]) + (f"?backend={backend}" if backend else ""))
    can_label = allows(request.user, OPERATE_BACKEND, labels["backend"])
    context = {"labels": labels, "form": form, "error": error, "can_label": can_label}
    return render(request, "pools/node_labels.html", context, status=status)
