"""Pages of pools: the overview, one pool, its charts, its editor (with the live preview) and the what-if check."""

from __future__ import annotations

import json

from django.http import JsonResponse
from django.shortcuts import redirect
from django.utils import timezone

from .. import configs, selectors, services, tables
from ..choices import ConfigType, PoolStatus
from ..configs import body_etag, normalize_body
from ..engine.errors import ConfigError, Conflict, NotFound
from ..engine.permissions import CHANGE_CONFIG
from ..filtersets import PoolFilterSet
from ..forms import PoolForm, WhatIfForm, attach_problems, document_text
from .base import DoorPage, ListPage

OVERVIEW_POLL_SECONDS = 5
OVERVIEW_IDLE_ROWS = 5  # the longest-idle workloads the overview shows
PREVIEW_FIELDS = ("common_pod_template", "common_default_variables", "platforms")


class Overview(ListPage):
    """Every pool the user may see: status, GPU bar with the quota, sharing, free GPUs, node counts; the totals
    count each node set once. The live table is the htmx fragment of the same URL."""

    door = "pool.list"
    template_name = "pools/overview.html"
    fragment_name = "pools/_pool_table.html"
    table = tables.POOLS
    filterset = PoolFilterSet
    export_name = "pools"
    offers = {"can_create": (CHANGE_CONFIG, ConfigType.POOL)}

    def rows(self):
        # The panel of idle GPUs is not part of the live table, nor of an export.
        idle = not self.request.htmx and self.request.GET.get("format") is None
        self.overview = selectors.pool_overview(user=self.request.user, filters=self.request.GET, idle=idle)
        return self.overview["rows"]

    def context(self, rows):
        context = {
            "totals": self.overview["totals"],
            "backends": self.overview["backends"],
            "statuses": PoolStatus.values,
            "poll_seconds": OVERVIEW_POLL_SECONDS,
            "updated_at": timezone.now(),
        }
        if "idle_rows" in self.overview:
            idle = self.overview["idle_rows"]
            context.update(idle_rows=idle[:OVERVIEW_IDLE_ROWS], idle_count=len(idle))
        return context


class PoolDetail(DoorPage):
    """One pool: platforms with merged templates, nodes, workloads, rules, usage history, timeouts, quota."""

    door = "pool.get"
    template_name = "pools/pool_detail.html"
    offers = {"can_edit": (CHANGE_CONFIG, ConfigType.POOL)}

    def get(self, request, name: str):
        pool = selectors.pool_get(name, user=request.user)
        row = selectors.pool_list(names=[pool.name], user=request.user, with_summary=True)[0]
        return self.page(
            {
                "pool": pool,
                "body": configs.pool_body(pool),
                "row": row,
                "usage_where": selectors.pool_usage_where(pool),
                "platforms": [
                    {**platform, "yaml": _yaml(platform), "json": _json(platform)}
                    for platform in selectors.pool_platform_views(pool)
                ],
                "summary": row["summary"],
                "products": selectors.summary_products(row["summary"]),
                "workloads": selectors.pool_workloads(pool),
                "waiting": selectors.pool_waiting_summary(pool),
                "estimate_accuracy": selectors.estimate_accuracy(user=request.user, pool=pool.name),
                "ranges": list(selectors.PERIODS),
                "utilization": selectors.pool_utilization(pool=pool.name),
                "utilization_ranges": list(selectors.PERIODS),
                "utilization_source": selectors.utilization_source(pool.backend),
                **_capacity(pool),
            }
        )


def _capacity(pool) -> dict:
    """The page's capacity by topology; a pool whose ``topology_keys`` cannot be read shows why instead."""
    tables_of = {"shapes_table": tables.TOPOLOGY_SHAPES, "domains_table": tables.TOPOLOGY_DOMAINS}
    try:
        capacity = selectors.pool_capacity_of(pool, picture=True)
        return {"capacity": capacity, "picture": capacity.pop("picture"), **tables_of}
    except ConfigError as exc:
        return {"capacity_error": str(exc)}


def _yaml(platform: dict) -> str:
    return document_text(platform["pod_template"]) if "pod_template" in platform else ""


def _json(platform: dict) -> str:
    return json.dumps(platform["pod_template"], indent=2) if "pod_template" in platform else ""


class PoolUsageChart(DoorPage):
    """The pool's usage over the chosen window (``?range=``), and its GPU products' to readers of the fleet."""

    door = "pool.usage"

    def get(self, request, name: str):
        return JsonResponse(selectors.pool_usage_chart(user=request.user, pool=name, period=request.GET.get("range")))


class PoolUtilizationChart(DoorPage):
    """A pool's average GPU utilization and GPU memory used (%) over the chosen window."""

    door = "pool.utilization"

    def get(self, request, name: str):
        chart = selectors.pool_utilization_chart(user=request.user, pool=name, period=request.GET.get("range"))
        return JsonResponse(chart)


class PoolMaintenance(DoorPage):
    """Switch a pool's maintenance mode (a config change like any other, with its revision)."""

    door = "pool.maintenance"

    def post(self, request, name: str):
        services.pool_maintenance_set(name=name, enable=request.POST.get("enable") == "1", actor=self.actor)
        return redirect("pools:pool", name=name)


class PoolForms:
    """The pool form of the editor and of its live preview."""

    def form(self, *, data=None, initial=None) -> PoolForm:
        """The pool form, offering the backends, templates and validations the user may see."""
        choices = selectors.pool_form_choices(user=self.request.user)
        return PoolForm(data, initial=initial, editing=bool(self.kwargs.get("name")), **choices)


class PoolEditor(PoolForms, DoorPage):
    """Create or edit a pool; problems are shown next to their field and nothing is saved.

    The form carries the version it was opened at: saving over someone else's change since is refused.
    """

    template_name = "pools/pool_form.html"

    def base(self) -> dict:
        name = self.kwargs.get("name")
        return configs.pool_body(selectors.pool_get(name, user=self.request.user)) if name else {}

    def get(self, request, name: str | None = None):
        base = self.base()
        initial = PoolForm.initial_from_body(name, base) if name else {"backend": "default", "gpu_guarantee": -1}
        return self.page({"form": self.form(initial=initial), "name": name, "version": body_etag(base) if name else ""})

    def post(self, request, name: str | None = None):
        base = self.base()
        initial = PoolForm.initial_from_body(name, base) if name else None
        form = self.form(data=request.POST, initial=initial)
        version = request.POST.get("version", "")
        preview = bool(request.POST.get("preview"))  # "Preview changes": what saving would move, nothing saved
        if form.is_valid():
            pool_name = name or form.cleaned_data["name"]
            expected = services.Expected(etags=frozenset([version])) if name and version else services.PRESENT
            try:
                saved = services.config_update(
                    config_type=ConfigType.POOL,
                    name=pool_name,
                    data=form.body(base),
                    actor=self.actor,
                    description=form.cleaned_data["change_description"],
                    tags=form.cleaned_data["tags"],
                    expect={(ConfigType.POOL, pool_name): expected if name else services.ABSENT},
                    dry_run=preview,
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except Conflict as exc:  # the service's own words: "pool 'x' already exists"
                attach_problems(form, exc, default_field="name")
            except ConfigError as exc:
                attach_problems(form, exc, default_field="platforms")
            else:
                if preview:
                    version = (version or body_etag(base)) if name else ""
                    return self.page({"form": form, "name": name, "version": version, **effect_context(saved)})
                return redirect("pools:pool", name=pool_name)
        # After a refused save the form keeps the version it was opened at, so a stale form stays stale.
        version = (version or body_etag(base)) if name else ""
        return self.page({"form": form, "name": name, "version": version}, status=400)


class PoolCreate(PoolEditor):
    door = "pool.create"


class PoolEdit(PoolEditor):
    door = "pool.change"


class PoolPreview(PoolForms, DoorPage):
    """The merged template of every platform of the pool being edited, rendered without saving anything."""

    door = "pool.preview"
    template_name = "pools/_preview.html"

    def post(self, request):
        name = request.POST.get("pool_name") or request.POST.get("name") or "draft"
        form = self.form(data=request.POST)
        form.fields["common_pod_template"].allowed = None
        form.is_valid()
        problems = [
            f"{form.fields[field].label}: {message}"
            for field, messages in form.errors.items()
            if field in PREVIEW_FIELDS
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
            else:
                results = selectors.draft_preview(user=request.user, pool_name=name, pool=canonical)
        return self.page({"problems": problems, "results": preview_results(results)})


def effect_context(preview: services.Preview) -> dict:
    """What the editors' "Preview changes" step shows (``pools/_effect.html``): the dry run's effect and its table."""
    return {"effect": preview.effect, "effect_table": tables.CONFIG_EFFECT}


def preview_results(results: dict) -> dict:
    """Each platform's rendering with its YAML, as the preview fragment shows it."""
    return {platform: {**result, "yaml": _yaml(result)} for platform, result in results.items()}


class WhatIf(DoorPage):
    """Pick a pool and platform, enter resources: the merged pod spec and the verdict per node, nothing submitted.

    With a project, the verdict also says whether the request fits the project's quota on the pool; per node,
    whether it could start now on the free resources or would wait.
    """

    door = "pool.whatif"
    template_name = "pools/what_if.html"
    fragment_name = "pools/_what_if_result.html"

    def get(self, request):
        choices = selectors.what_if_choices(user=request.user)
        # A link with only ?pool= (and ?project=) preselects them; the check runs once the request itself is given.
        submitted = any(key in request.GET for key in ("platform", "cpu", "gpu", "memory", "storage"))
        initial = {"pool": request.GET.get("pool"), "project": request.GET.get("project")}
        form = WhatIfForm(
            request.GET if submitted else None,
            pools=list(choices["platforms"]),
            projects=choices["projects"],
            initial=initial,
        )
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
                    pods=form.cleaned_data["pods"],
                    topology=form.topology(),
                )
            except NotFound as exc:
                problem = exc.problems[0]
                if problem.field == "project":
                    form.add_error("project", problem.message)
                else:
                    form.add_error("platform" if platform else "pool", str(exc))
            except ConfigError as exc:
                field = exc.problems[0].field if exc.problems else ""
                if field in ("topology", "pods"):
                    form.add_error("topology_level" if field == "topology" else "pods", exc.problems[0].message)
                else:
                    form.add_error(None, str(exc))
            else:
                result = {"rendered": rendered, "yaml": document_text(rendered["pod_template"]), "verdict": verdict}
        return self.page({"form": form, "result": result, "platforms": choices["platforms"]})
