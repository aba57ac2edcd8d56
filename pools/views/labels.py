"""Pages of gpuctl's pool workflow (SEMANTICS §8.1): create a label pool by picking nodes, delete one (its running
workloads shown, a force checkbox), relabel a node. The services label the nodes in the cluster all or nothing;
these pages only read the form and show the answer."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse

from .. import configs, selectors, services
from ..engine.errors import ConfigError, Conflict
from ..engine.permissions import OPERATE_BACKEND
from ..filtersets import NodeFilterSet
from ..inventory.records import InventoryError
from .base import DoorPage


class LabelPoolCreate(DoorPage):
    """Pick nodes from the filtered node table, name the pool: the nodes are labelled in the cluster."""

    door = "label_pool.create"
    template_name = "pools/label_pool_form.html"
    fragment_name = "pools/_label_pool_nodes.html"

    def form(self) -> dict:
        request = self.request
        return {
            "name": request.POST.get("name", "").strip(),
            "description": request.POST.get("description", ""),
            "backend": request.POST.get("backend", ""),
            "gpu_type": request.POST.get("gpu_type", "").strip(),
            "overwrite": bool(request.POST.get("overwrite")),
            # Picked nodes travel with every filter request too, so changing the filter keeps them.
            "nodes": (request.POST if request.method == "POST" else request.GET).getlist("nodes"),
        }

    def form_page(self, form: dict, *, error: str = "", status: int = 200):
        user = self.request.user
        filter_error = ""
        try:
            nodes = selectors.label_pool_node_choices(user=user, filters=self.request.GET)
        except ConfigError as exc:
            nodes, filter_error = [], str(exc)
        shown = {row["node"] for row in nodes}
        context = {
            "hidden_picks": [name for name in dict.fromkeys(form["nodes"]) if name not in shown],
            "form": form,
            "error": error,
            "nodes": nodes,
            "filter_error": filter_error,
            "filters": {key: self.request.GET.get(key, "").strip() for key in NodeFilterSet.base_filters},
            "backends": selectors.label_pool_backends(user=user),
            **selectors.node_filter_choices(user=user),
        }
        return self.page(context, status=status)

    def get(self, request):
        return self.form_page(self.form())

    def post(self, request):
        form = self.form()
        try:
            document = configs.gpuctl_document(
                name=form["name"], description=form["description"], nodes=form["nodes"], gpu_type=form["gpu_type"]
            )
            result = services.label_pool_apply(
                document=document, actor=self.actor, backend=form["backend"] or None, overwrite=form["overwrite"]
            )
        except (ConfigError, InventoryError) as exc:
            return self.form_page(form, error=str(exc), status=409 if isinstance(exc, Conflict) else 400)
        messages.success(request, f"Pool {result['pool']}: {len(result['labelled'])} node(s) labelled.")
        return redirect("pools:pool", name=result["pool"])


class LabelPoolDelete(DoorPage):
    """The pool, what still runs on it and a force checkbox; deleting removes its label from its nodes."""

    door = "label_pool.delete"
    template_name = "pools/label_pool_delete.html"

    def get(self, request, name: str):
        return self.page({"pool": selectors.gpuctl_pool_detail(name, user=request.user), "error": ""})

    def post(self, request, name: str):
        pool = selectors.gpuctl_pool_detail(name, user=request.user)
        try:
            result = services.label_pool_delete(name=name, actor=self.actor, force=bool(request.POST.get("force")))
        except (ConfigError, InventoryError) as exc:
            return self.page({"pool": pool, "error": str(exc)}, status=409 if isinstance(exc, Conflict) else 400)
        messages.success(request, f"Pool {name} deleted; label removed from {len(result['unlabelled'])} node(s).")
        return redirect("pools:overview")


class NodeLabels(DoorPage):
    """A node's labels, and one label set (key, value, overwrite) or removed (delete) in its cluster."""

    doors = {"GET": "node.get", "POST": "node.label"}
    template_name = "pools/node_labels.html"
    offers = {"can_label": (OPERATE_BACKEND, "{backend}")}

    def offer_values(self):
        return {**self.kwargs, "backend": self.labels["backend"]}

    def form(self) -> dict:
        post = self.request.POST
        return {
            "key": post.get("key", "").strip(),
            "value": post.get("value", "").strip(),
            "overwrite": bool(post.get("overwrite")),
            "delete": bool(post.get("delete")),
        }

    def get(self, request, name: str):
        self.labels = selectors.node_labels(name, user=request.user, backend=request.GET.get("backend") or None)
        return self.page({"labels": self.labels, "form": self.form(), "error": ""})

    def post(self, request, name: str):
        backend = request.GET.get("backend") or None
        self.labels = selectors.node_labels(name, user=request.user, backend=backend)
        form = self.form()
        try:
            services.node_label(
                node=name,
                key=form["key"],
                value=None if form["delete"] else form["value"],
                overwrite=form["overwrite"],
                backend=self.labels["backend"],
                actor=self.actor,
            )
        except (ConfigError, InventoryError) as exc:
            return self.page({"labels": self.labels, "form": form, "error": str(exc)}, status=400)
        messages.success(request, f"node/{name}: {form['key']} {'removed' if form['delete'] else 'set'}.")
        return redirect(reverse("pools:node-labels", args=[name]) + (f"?backend={backend}" if backend else ""))
