"""Pages of config documents and their history: pod templates, validation sets and roles as YAML/JSON documents
(with the live preview of a template), the history, one revision's diff, and a rollback."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect

from .. import selectors, services
from ..choices import TYPE_LABELS, ConfigType
from ..configs import body_etag, parse_config_type
from ..engine.errors import ConfigError, Conflict, NotFound
from ..engine.permissions import CHANGE_CONFIG
from ..forms import DocumentForm, RollbackForm, attach_problems, document_text
from .base import DoorPage
from .pools import effect_context, preview_results

# The config types edited as one document, by the URL's ``kind``: the type, what the body must be, its label.
DOCUMENT_KINDS = {
    "templates": (ConfigType.POD_TEMPLATE, dict, "Pod template (YAML or JSON)"),
    "validations": (ConfigType.RESOURCE_VALIDATION, list, "Rules (YAML or JSON list)"),
    "roles": (ConfigType.ROLE, dict, "Role (YAML or JSON: description, policies, external_roles, sync_mode)"),
}


def _by_kind(action: str) -> tuple[str, dict[str, str]]:
    return "kind", {kind: f"{config_type.lower()}.{action}" for kind, (config_type, _, _) in DOCUMENT_KINDS.items()}


class DocumentPage(DoorPage):
    """A page about one kind of document (``kind`` in the URL)."""

    offers = {"can_edit": (CHANGE_CONFIG, "{config_type}")}

    @property
    def config_type(self) -> ConfigType:
        return DOCUMENT_KINDS[self.kwargs["kind"]][0]

    def offer_values(self):
        return {**self.kwargs, "config_type": self.config_type}


class DocumentList(DocumentPage):
    """Pod templates, validation sets or roles the user may see, with the pools that use each one."""

    door_by = _by_kind("list")
    template_name = "pools/document_list.html"

    def get(self, request, kind: str):
        config_type = self.config_type
        return self.page(
            {
                "kind": kind,
                "label": TYPE_LABELS[config_type],
                "items": selectors.document_list(config_type=config_type, user=request.user),
            }
        )


class DocumentEditor(DocumentPage):
    """Create or edit a pod template, a validation set or a role as a YAML/JSON document.

    The form carries the version it was opened at: saving over someone else's change since is refused.
    """

    template_name = "pools/document_form.html"

    def existing(self) -> dict:
        name = self.kwargs.get("name")
        if not name:
            return {}
        return selectors.config_object(config_type=self.config_type, name=name, user=self.request.user)

    def form(self, data=None, initial=None) -> DocumentForm:
        _, expect, body_label = DOCUMENT_KINDS[self.kwargs["kind"]]
        name = self.kwargs.get("name")
        return DocumentForm(data, initial=initial, expect=expect, body_label=body_label, editing=bool(name))

    def context(self, form, version: str) -> dict:
        name, config_type = self.kwargs.get("name"), self.config_type
        return {
            "form": form,
            "kind": self.kwargs["kind"],
            "label": TYPE_LABELS[config_type],
            "name": name,
            "version": version,
            "preview_pools": selectors.pools_using(config_type=config_type, name=name, user=self.request.user)
            if name
            else [],
            "previewable": config_type == ConfigType.POD_TEMPLATE,
        }

    def get(self, request, kind: str, name: str | None = None):
        existing = self.existing()
        initial = {"name": name, "body": document_text(existing)} if name else {"body": ""}
        return self.page(self.context(self.form(initial=initial), body_etag(existing) if name else ""))

    def post(self, request, kind: str, name: str | None = None):
        existing = self.existing()
        form = self.form(request.POST, initial={"name": name} if name else None)
        version = (request.POST.get("version") or body_etag(existing)) if name else ""
        preview = bool(request.POST.get("preview"))  # "Preview changes": what saving would move, nothing saved
        if form.is_valid():
            config_type = self.config_type
            object_name = name or form.cleaned_data["name"]
            expected = services.Expected(etags=frozenset([version])) if name else services.ABSENT
            try:
                saved = services.config_update(
                    config_type=config_type,
                    name=object_name,
                    data={object_name: form.cleaned_data["body"]},
                    actor=self.actor,
                    description=form.cleaned_data["change_description"],
                    tags=form.cleaned_data["tags"],
                    expect={(config_type, object_name): expected},
                    dry_run=preview,
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except Conflict as exc:
                attach_problems(form, exc, default_field="name")
            except ConfigError as exc:
                attach_problems(form, exc, default_field="body")
            else:
                if preview:
                    return self.page({**self.context(form, version), **effect_context(saved)})
                return redirect("pools:roles") if kind == "roles" else redirect("pools:documents", kind=kind)
        return self.page(self.context(form, version), status=400)


class DocumentCreate(DocumentEditor):
    door_by = _by_kind("create")


class DocumentEdit(DocumentEditor):
    door_by = _by_kind("change")


class TemplatePreview(DoorPage):
    """A pool's merged template with the pod template being edited in place of the saved one, unsaved."""

    door = "pod_template.preview"
    template_name = "pools/_preview.html"

    def post(self, request):
        form = DocumentForm(request.POST, expect=dict)
        form.is_valid()
        if "body" in form.errors:
            return self.page({"problems": form.errors["body"], "results": {}})
        name = request.POST.get("template_name") or request.POST.get("name") or "draft"
        pool_name = request.POST.get("preview_pool", "")
        if pool_name:
            pool = selectors.pool_get(pool_name, user=request.user)
            body = selectors.config_object(config_type=ConfigType.POOL, name=pool.name, user=request.user)
        else:
            pool_name, body = "preview", {"common_pod_template": [name], "platforms": {}}
        results = selectors.draft_preview(
            user=request.user, pool_name=pool_name, pool=body, template=(name, form.cleaned_data["body"])
        )
        return self.page({"problems": [], "results": preview_results(results)})


class History(DoorPage):
    """Revisions the user may see, per config type: who, when, what, tags; each opens its diff and rollback."""

    door = "config.history"
    template_name = "pools/history.html"
    per_page = 50

    def get(self, request):
        filters = request.GET.copy()
        if "type" in filters:  # the page's older name of config_type
            filters.setlist("config_type", filters.pop("type"))
        try:
            revisions = selectors.config_history(user=request.user, filters=filters)
        except ConfigError as exc:
            messages.error(request, str(exc))
            revisions = selectors.config_history(user=request.user, filters={"config_type": []}).none()
        page = Paginator(revisions, self.per_page).get_page(request.GET.get("page"))
        page.object_list = [selectors.redacted(revision, request.user) for revision in page.object_list]
        chosen = filters.get("config_type", "")
        return self.page({"page": page, "types": list(ConfigType), "chosen": chosen})


class RevisionPage(DoorPage):
    """A page about one revision the user may see (the gate answers 404 for any other)."""

    @property
    def config_type(self) -> ConfigType:
        return parse_config_type(self.kwargs["config_type"])

    def offer_values(self):
        return {**self.kwargs, "config_type": self.config_type}

    def revision(self):
        return selectors.config_revision_get(
            config_type=self.config_type, revision=self.kwargs["revision"], user=self.request.user
        )


class RevisionDetail(RevisionPage):
    """One revision: what it changed, side by side with the revision before it."""

    door = "config.revision"
    template_name = "pools/revision.html"
    offers = {"can_rollback": (CHANGE_CONFIG, "{config_type}")}

    def get(self, request, config_type: str, revision: int):
        target = self.revision()
        previous, diff = selectors.revision_changes(revision=target, user=request.user)
        snapshot = "" if previous else document_text(target.snapshot)
        return self.page({"revision": target, "previous": previous, "diff": diff, "snapshot": snapshot})


class Rollback(RevisionPage):
    """Confirm, then restore a config type to a revision (a new revision; refused with the reason if unsafe)."""

    door = "config.rollback"
    template_name = "pools/rollback.html"

    def context(self, form) -> dict:
        target = self.revision()
        diff = selectors.config_diff(config_type=self.config_type, revision=target.revision, user=self.request.user)
        return {"revision": target, "diff": diff, "form": form}

    def get(self, request, config_type: str, revision: int):
        return self.page(self.context(RollbackForm()))

    def post(self, request, config_type: str, revision: int):
        form = RollbackForm(request.POST)
        if form.is_valid():
            try:
                created = services.config_rollback(
                    config_type=self.config_type,
                    revision=revision,
                    actor=self.actor,
                    description=form.cleaned_data["description"],
                )
            except NotFound:
                raise  # what the user may not see is a 404 page, not a form error
            except ConfigError as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("pools:revision", config_type=config_type, revision=created[0].revision)
        return self.page(self.context(form), status=400)
