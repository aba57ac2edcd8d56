"""Forms of the web console: editors for config objects, the what-if check, rollback and role generation.

Forms only read and shape what people type; saving goes through ``pools.services``, whose problems come
back as ``Problem(field, message)`` and are shown next to the field they name (``attach_problems``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from .choices import PlacementStrategy
from .configs import INT32_MAX, NAME_RE, POOL_DOCUMENT, parse_document, variable_value
from .configs.fields import DEFAULT_OVER_QUOTA_WEIGHT
from .engine.documents import dump_yaml
from .engine.errors import ConfigError
from .engine.members import parse_member_spec
from .engine.numbers import parse_number
from .engine.topology import MAX_SHAPE_NUMBER
from .tables import formats

NAME_HELP = "Letters, digits, '_', '.' and '-'; starts with a letter."
_LINE_RE = re.compile(r"line ([0-9]+)", re.ASCII)


def document_text(value: Any, *, style: str = "yaml") -> str:
    """A document as people edit it: block YAML (keys in their order) or indented JSON."""
    if style == "json":
        return json.dumps(value, indent=2)
    return dump_yaml(value, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)


class DocumentField(forms.CharField):
    """A JSON or YAML text area; a syntax error names the line and column and quotes the line."""

    widget = forms.Textarea

    def __init__(self, *, expect: type | tuple[type, ...] = dict, **kwargs):
        self.expect = expect
        kwargs.setdefault("required", False)
        super().__init__(strip=False, **kwargs)
        defaults = {"class": "code", "spellcheck": "false", "rows": 14, "autocapitalize": "off"}
        self.widget.attrs = {**defaults, **self.widget.attrs}

    def to_python(self, value):
        text = super().to_python(value) or ""
        if not text.strip():
            return self.expect() if isinstance(self.expect, type) else self.expect[0]()
        try:
            data = parse_document(text)
        except ConfigError as exc:
            message = str(exc).removeprefix("document: ")
            match = _LINE_RE.search(message)
            lines = text.splitlines()
            if match and 0 < int(match.group(1)) <= len(lines):
                message += f' — line {match.group(1)} reads: "{lines[int(match.group(1)) - 1].strip()}"'
            raise forms.ValidationError(message, code="syntax") from None
        if data is None:
            data = self.expect() if isinstance(self.expect, type) else self.expect[0]()
        if not isinstance(data, self.expect):
            wanted = "a mapping (key: value)" if self.expect is dict else "a list"
            raise forms.ValidationError(f"must be {wanted}", code="shape")
        return data


class NameListField(forms.CharField):
    """Ordered names, comma-separated; each must be one of ``choices`` (suggested in a datalist)."""

    def __init__(self, *, choices_label: str, **kwargs):
        self.choices_label = choices_label
        self.allowed: list[str] | None = []  # None: any name (the preview shows a missing one per platform)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return ", ".join(value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        return [name.strip() for name in text.split(",") if name.strip()]

    def validate(self, value):
        super().validate(value)
        if self.allowed is None:
            return
        unknown = [name for name in value if name not in self.allowed]
        if unknown:
            known = ", ".join(self.allowed) if len(self.allowed) <= 8 else "pick one of the names suggested as you type"
            raise forms.ValidationError(
                f"{self.choices_label} '{unknown[0]}' does not exist ({known or 'there are none'})", code="unknown"
            )


class ChangeFields(forms.Form):
    """The description and tags every saved change carries into its revision."""

    change_description = forms.CharField(
        required=False, label="Change description", help_text="Why you make this change (kept in the history)."
    )
    tags = forms.CharField(required=False, label="Tags", help_text="Comma-separated labels for this revision.")

    def clean_tags(self):
        return sorted({tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()})


# Pool body fields the form edits as they are, and those it edits as a YAML/JSON document (POOL_DOCUMENT says
# which kind each is). The form keeps the rest of a saved body as it was; ``resources`` has its own GPU fields.
PLAIN_POOL_FIELDS = tuple(
    field.name
    for field in POOL_DOCUMENT
    if field.kind in ("text", "reference", "label", "flag", "choice", "names", "duration")
)
DOCUMENT_POOL_FIELDS = tuple(field.name for field in POOL_DOCUMENT if field.kind in ("variables", "platforms"))


class PoolForm(ChangeFields):
    """A pool: its fields, its ordered references by name and its platforms as a YAML/JSON document."""

    name = forms.RegexField(regex=NAME_RE, max_length=128, help_text=NAME_HELP)
    description = forms.CharField(required=False)
    backend = forms.ChoiceField()
    node_label = forms.CharField(
        required=False,
        label="Node label",
        help_text="key=value: the pool is the nodes carrying this label (gpuctl, Run:ai). Empty for none.",
    )
    default_platform = forms.CharField(required=False, help_text="One of the platforms below; empty for none.")
    enable_maintenance = forms.BooleanField(required=False, label="Maintenance (no new workloads)")
    common_pod_template = NameListField(
        choices_label="pod template", label="Pod templates", help_text="In merge order, comma-separated."
    )
    common_resource_validations = NameListField(
        choices_label="resource validation", label="Resource validations", help_text="In order, comma-separated."
    )
    common_default_variables = DocumentField(
        label="Default variables", help_text="YAML or JSON, e.g. USER_GPU: 1", widget=forms.Textarea(attrs={"rows": 5})
    )
    platforms = DocumentField(
        label="Platforms",
        help_text="YAML or JSON: platform name → description, override_pod_template, resource_validations, "
        "default_variables, …",
    )
    default_exec_timeout = forms.CharField(required=False, help_text="e.g. 2h, 30d, PT15M")
    max_exec_timeout = forms.CharField(required=False)
    default_queue_timeout = forms.CharField(required=False)
    max_queue_timeout = forms.CharField(required=False)
    gpu_guarantee = forms.IntegerField(
        initial=-1,
        min_value=-1,
        max_value=INT32_MAX,
        label="GPU quota (guarantee)",
        help_text="-1: the node set's capacity.",
    )
    gpu_maximum = forms.IntegerField(
        initial=-1, min_value=-1, max_value=INT32_MAX, label="GPU maximum", help_text="-1: no maximum."
    )
    gpu_weight = forms.IntegerField(initial=1, min_value=0, max_value=INT32_MAX, label="GPU weight")
    gpu_placement_strategy = forms.ChoiceField(choices=PlacementStrategy.choices, label="GPU placement")
    cpu_placement_strategy = forms.ChoiceField(choices=PlacementStrategy.choices, label="CPU placement")

    # Where a service problem about a body field is shown (fields not listed here go above the form).
    FIELD_OF_BODY_KEY = {"resources": "gpu_guarantee", "name": "name"}

    def __init__(self, *args, backends: list[str], templates: list[str], validations: list[str], editing: bool, **kw):
        super().__init__(*args, **kw)
        self.fields["backend"].choices = [(name, name) for name in backends]
        self.fields["common_pod_template"].allowed = templates
        self.fields["common_resource_validations"].allowed = validations
        if editing:
            self.fields["name"].disabled = True

    @classmethod
    def initial_from_body(cls, name: str, body: dict) -> dict:
        """The form's initial values for a pool's canonical body."""
        gpu = (body.get("resources") or {}).get("gpu") or {}
        return {
            "name": name,
            **{key: body.get(key) for key in PLAIN_POOL_FIELDS},
            "node_label": "{key}={value}".format(**body["node_label"]) if body.get("node_label") else "",
            **{key: document_text(body.get(key) or {}) for key in DOCUMENT_POOL_FIELDS},
            "gpu_guarantee": gpu.get("guarantee", -1),
            "gpu_maximum": gpu.get("maximum", -1),
            "gpu_weight": gpu.get("weight", 1),
        }

    def body(self, base: dict | None = None) -> dict:
        """The pool body to save: the edited fields over ``base`` (fields the form does not show are kept)."""
        data = self.cleaned_data
        body = dict(base or {})
        body.pop("name", None)
        for key in (*PLAIN_POOL_FIELDS, *DOCUMENT_POOL_FIELDS):
            body[key] = data.get(key)
        resources = dict(body.get("resources") or {})
        resources["gpu"] = {
            "guarantee": data.get("gpu_guarantee", -1),
            "maximum": data.get("gpu_maximum", -1),
            "weight": data.get("gpu_weight", 1),
        }
        body["resources"] = resources
        return body


class DocumentForm(ChangeFields):
    """A named object whose whole body is one document: a pod template, a validation set or a role."""

    name = forms.RegexField(regex=NAME_RE, max_length=128, help_text=NAME_HELP)
    body = DocumentField(label="Body", help_text="YAML or JSON.")

    FIELD_OF_BODY_KEY: dict[str, str] = {}

    def __init__(self, *args, expect: type = dict, body_label: str = "Body", editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["body"].expect = expect
        self.fields["body"].label = body_label
        if editing:
            self.fields["name"].disabled = True


def attach_problems(form: forms.Form, error: ConfigError, *, default_field: str | None = None) -> None:
    """Show each service problem next to the field it names; problems about no shown field go on top.

    Problem fields look like ``pool 'gpu'.platforms.a100.override_pod_template``: the first key after the
    object names the field, or ``FIELD_OF_BODY_KEY`` maps it to one.
    """
    mapping = getattr(form, "FIELD_OF_BODY_KEY", {})
    for problem in error.problems:
        path = problem.field.split("'.", 1)[1] if "'." in problem.field else ""
        key = path.split(".", 1)[0] if path else ""
        field = mapping.get(key, key) if key else default_field
        message = f"{path}: {problem.message}" if path and path != key else problem.message
        if field in form.fields:
            form.add_error(field, message)
        elif default_field and default_field in form.fields and path:
            form.add_error(default_field, message)
        else:
            form.add_error(None, str(problem))


class WhatIfForm(forms.Form):
    """A request to check: pool, platform, the resources the workload asks for and, optionally, its project."""

    pool = forms.ChoiceField()
    platform = forms.CharField(required=False, help_text="Empty: the pool's default platform.")
    project = forms.ChoiceField(
        required=False, help_text="Optional: whether the request fits the project's quota on the pool."
    )
    cpu = forms.CharField(required=False, label="CPU", initial="4", help_text="Cores, e.g. 4 or 500m.")
    gpu = forms.CharField(required=False, label="GPU", initial="1")
    memory = forms.CharField(required=False, initial="16Gi", help_text="e.g. 16Gi")
    storage = forms.CharField(required=False, initial="10Gi", help_text="e.g. 10Gi")
    pods = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SHAPE_NUMBER,
        help_text="A gang of this many such pods (empty: one); the quota counts them all.",
    )
    topology_level = forms.CharField(
        required=False,
        max_length=128,
        label="Topology level",
        help_text="Optional: a level of the pool's topology keys (rack): where the gang could start now.",
    )
    topology_required = forms.BooleanField(required=False, label="The gang must start in one domain of that level")

    def __init__(self, *args, pools: list[str], projects: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["pool"].choices = [(name, name) for name in pools]
        self.fields["project"].choices = [("", "(none)")] + [(name, name) for name in projects]

    def user_values(self) -> dict:
        """The request as template variables (``USER_CPU`` …); numbers become numbers (``variable_value``)."""
        values = {}
        for field, variable in (
            ("cpu", "USER_CPU"),
            ("gpu", "USER_GPU"),
            ("memory", "USER_MEMORY"),
            ("storage", "USER_STORAGE"),
        ):
            text = (self.cleaned_data.get(field) or "").strip()
            if text:
                values[variable] = variable_value(text)
        return values

    def topology(self) -> dict | None:
        """``{level, required}`` for the check when a level is given, else None."""
        level = (self.cleaned_data.get("topology_level") or "").strip()
        return {"level": level, "required": bool(self.cleaned_data.get("topology_required"))} if level else None


class RollbackForm(forms.Form):
    """Confirmation of a rollback, with the reason recorded on the new revision."""

    description = forms.CharField(required=False, label="Reason", help_text="Recorded on the new revision.")
    confirm = forms.BooleanField(required=True, label="I have read the changes above and want to roll back")


class RoleGenerateForm(forms.Form):
    """The pool-name prefix of a generated ``osmo-<prefix>`` role."""

    prefix = forms.RegexField(
        regex=r"^[a-zA-Z0-9]([a-zA-Z0-9_.-]*)$",
        max_length=120,
        label="Pool name prefix",
        help_text="Creates osmo-<prefix>: workflow:* and pool:Read on pool/<prefix>*.",
    )


class UserCreateForm(forms.Form):
    """A new person's account or service account, and the roles it starts with."""

    username = forms.CharField(max_length=150)
    service_account = forms.BooleanField(
        required=False, label="Service account", help_text="A program: no password, no browser sign-in, tokens only."
    )
    roles = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    description = forms.CharField(required=False, max_length=2000)

    def __init__(self, *args, roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roles"].choices = [(name, name) for name in roles]


class UserRolesForm(forms.Form):
    """The roles a user should hold (exactly these)."""

    roles = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, roles: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["roles"].choices = [(name, name) for name in roles]


class ServiceTokenForm(forms.Form):
    """A token for a service account: its name and lifetime."""

    name = forms.CharField(max_length=128, help_text="What uses it, e.g. prometheus.")
    expires = forms.ChoiceField(
        choices=[("7d", "7 days"), ("30d", "30 days"), ("90d", "90 days"), ("365d", "1 year")], initial="90d"
    )


# --- departments and projects (SEMANTICS §9) -------------------------------------------------------------------

# A quota a pool gives a unit until someone sets one (Run:ai's defaults): deserved 0, no limit, weight 2.
DEFAULT_GPU_QUOTA = {"deserved": 0, "limit": -1, "overQuotaWeight": DEFAULT_OVER_QUOTA_WEIGHT}
# Where a service problem about a unit's body is shown: ``resources[N].gpu.<key>`` goes to that pool's field.
_QUOTA_PROBLEM = re.compile(r"resources\[([0-9]+)\]\.gpu\.(deserved|limit|overQuotaWeight)$")
_QUOTA_FIELDS = {"deserved": "deserved", "limit": "limit", "overQuotaWeight": "weight"}


class UnitForm(ChangeFields):
    """A department or a project: its name, description and GPU quota on each pool its editor may see (deserved,
    limit, over quota and its weight); a project also its department and namespaces. Numbers are read by the one
    number parser; the service checks the rest, and its problems come back next to the field they concern."""

    name = forms.RegexField(regex=NAME_RE, max_length=128, help_text=NAME_HELP)
    description = forms.CharField(required=False, max_length=10_000)
    department = forms.ChoiceField(help_text="The department whose share of each pool the project divides with others.")
    namespaces = forms.CharField(
        required=False,
        max_length=4_000,
        help_text="Comma-separated Kubernetes namespaces whose workloads are the project's. Empty: runai-<name>.",
    )

    members = forms.CharField(
        required=False,
        max_length=100_000,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="Who belongs, one a line as KIND:NAME:ROLE: user:rita:researcher, group:/team-a:viewer, "
        "service_account:ci:researcher. Roles: researcher and viewer, and admin for a department (changes its "
        "projects and their quotas). Only someone who administers the unit changes them.",
    )

    def __init__(self, *args, kind: str, pools: list[str], departments: list[str] = (), editing: bool = False, **kw):
        super().__init__(*args, **kw)
        self.kind, self.pools = kind, list(pools)
        if kind == "project":
            self.fields["department"].choices = [(name, name) for name in departments]
        else:
            del self.fields["department"], self.fields["namespaces"]
        if editing:
            self.fields["name"].disabled = True
        for pool in self.pools:
            number = {"inputmode": "decimal", "autocomplete": "off", "class": "figure"}
            self.fields[self.quota_field(pool, "deserved")] = forms.CharField(
                required=False, label=f"{pool}: deserved GPUs", widget=forms.TextInput(attrs=number)
            )
            self.fields[self.quota_field(pool, "limit")] = forms.CharField(
                required=False,
                label=f"{pool}: GPU limit",
                widget=forms.TextInput(attrs={**number, "placeholder": formats.limit(-1)}),
            )
            self.fields[self.quota_field(pool, "over_quota")] = forms.BooleanField(
                required=False, label=f"{pool}: over quota"
            )
            self.fields[self.quota_field(pool, "weight")] = forms.CharField(
                required=False, label=f"{pool}: over-quota weight", widget=forms.TextInput(attrs=number)
            )

    @staticmethod
    def quota_field(pool: str, figure: str) -> str:
        return f"{figure}__{pool}"

    def quota_rows(self) -> list[dict]:
        """The quota fields pool by pool, for the template's table."""
        return [
            {
                "pool": pool,
                **{
                    figure: self[self.quota_field(pool, figure)]
                    for figure in ("deserved", "limit", "over_quota", "weight")
                },
            }
            for pool in self.pools
        ]

    @classmethod
    def initial_for(cls, name: str | None, body: dict, pools: list[str]) -> dict:
        """The form's values for a unit's canonical body (a new unit's: empty, and Run:ai's defaults on each pool)."""
        initial = {"name": name, "description": body.get("description", "")}
        initial["members"] = "\n".join(f"{m['kind']}:{m['name']}:{m['role']}" for m in body.get("members") or [])
        if "department" in body:
            initial["department"] = body["department"]
            initial["namespaces"] = ", ".join(body.get("namespaces") or [])
        entries = {entry["nodePool"]: entry.get("gpu") or {} for entry in body.get("resources") or []}
        for pool in pools:
            gpu = {**DEFAULT_GPU_QUOTA, **entries.get(pool, {})}
            weight = gpu["overQuotaWeight"]
            initial[cls.quota_field(pool, "deserved")] = _figure_text(gpu["deserved"])
            initial[cls.quota_field(pool, "limit")] = _figure_text(gpu["limit"], empty=-1)
            initial[cls.quota_field(pool, "over_quota")] = weight is not None
            initial[cls.quota_field(pool, "weight")] = _figure_text(
                DEFAULT_OVER_QUOTA_WEIGHT if weight is None else weight
            )
        return initial

    def clean_members(self) -> list[dict]:
        """The members' lines as members (``KIND:NAME:ROLE``); the service checks them as a whole."""
        members = []
        for line in self.cleaned_data.get("members", "").splitlines():
            if line.strip():
                try:
                    members.append(parse_member_spec(line.strip()))
                except ConfigError as exc:
                    raise forms.ValidationError(exc.problems[0].message.replace("--member", "line")) from None
        return members

    def clean(self):
        data = super().clean()
        self.quotas = {}
        for pool in self.pools:
            gpu = {}
            for figure, key in (("deserved", "deserved"), ("limit", "limit"), ("weight", "overQuotaWeight")):
                field = self.quota_field(pool, figure)
                text = (data.get(field) or "").strip()
                if figure == "weight" and not data.get(self.quota_field(pool, "over_quota")):
                    gpu[key] = None  # no over-quota: the unit holds at most its deserved quota
                elif not text:
                    gpu[key] = DEFAULT_GPU_QUOTA[key]  # deserved 0, no limit, weight 2
                else:
                    try:
                        gpu[key] = parse_number(text, field=self.fields[field].label)
                    except ConfigError as exc:
                        self.add_error(field, exc.problems[0].message)
            self.quotas[pool] = gpu
        return data

    def body(self, base: dict | None = None) -> dict:
        """The unit's body to save: the form's fields over ``base``; each shown pool's GPU quota over its entry (its
        priority, CPU and memory kept), a pool it had no entry on only when the quota differs from the defaults."""
        data = self.cleaned_data
        body = {"description": data.get("description", ""), "members": data.get("members", [])}
        if self.kind == "project":
            body["department"] = data["department"]
            body["namespaces"] = [name.strip() for name in data.get("namespaces", "").split(",") if name.strip()]
        entries = {entry["nodePool"]: entry for entry in (base or {}).get("resources") or []}
        for pool, gpu in self.quotas.items():
            if pool in entries:
                entries[pool] = {**entries[pool], "gpu": {**entries[pool].get("gpu", {}), **gpu}}
            elif gpu != DEFAULT_GPU_QUOTA:
                entries[pool] = {"nodePool": pool, "gpu": gpu}
        self.resource_pools = sorted(entries)
        body["resources"] = [entries[pool] for pool in self.resource_pools]
        return body

    def attach(self, error: ConfigError, *, unit: str) -> None:
        """Show each service problem about ``unit`` (``project 'x'``) next to the field it concerns: a pool's figure,
        the department, the namespaces, the name; others (about another object, or no field) above the form."""
        for problem in error.problems:
            path = problem.field.removeprefix(f"{unit}.") if problem.field.startswith(f"{unit}.") else problem.field
            if "'" in path:  # about another object: in its own words
                self.add_error(None, str(problem))
                continue
            match = _QUOTA_PROBLEM.match(path)
            field = None
            if match and int(match.group(1)) < len(getattr(self, "resource_pools", ())):
                pool = self.resource_pools[int(match.group(1))]
                if pool in self.pools:
                    field = self.quota_field(pool, _QUOTA_FIELDS[match.group(2)])
            elif path in self.fields:
                field = path
            elif path.startswith("members"):
                line = re.match(r"members\[([0-9]+)\]", path)
                where = f"line {int(line.group(1)) + 1}: " if line else ""
                self.add_error("members", where + problem.message)
                continue
            if field is not None and field in self.fields:
                self.add_error(field, problem.message)
            else:
                self.add_error(None, str(problem))


# --- the quota grid ---------------------------------------------------------------------------------------------

# Over-quota weights as every page writes them (``formats.weight``): the number, Run:ai's names left to its docs.
WEIGHTS = [("", formats.weight(None)), *((str(value), formats.weight(value)) for value in range(4))]
GRID_FIELDS = ("deserved", "limit", "weight")
MAX_GRID_CELLS = 20_000


def quota_grid_changes(post, grid: dict) -> list[dict]:
    """The quotas the grid's form changes: each cell whose deserved, limit or weight differs from the figure the
    page showed (``unit-I``/``pool-J`` name row and column; ``q-I-J-deserved`` etc. the cell's fields), each number
    read by the one number parser. Raises ConfigError naming the cell."""
    shown = {(row["kind"], row["unit"], cell["pool"]): cell for row in grid["rows"] for cell in row["cells"]}
    pools = {key[5:]: post[key] for key in post if key.startswith("pool-")}
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
                    label = f"{unit} on {pool}: GPU {field}"
                    value = quota_figure(post[names[field]], field=label, limit=field == "limit")
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


def quota_figure(text: str, *, field: str, limit: bool = False) -> int | float:
    """A GPU figure as typed, read by the one number parser; an empty limit is no limit (-1), as its input shows
    it (the service checks the range)."""
    if limit and not text.strip():
        return -1
    return parse_number(text, field=field)


def _figure_text(value, *, empty=None) -> str:
    """A figure as an input shows it: ``4``, ``1.5``; ``""`` for ``empty`` (no over-quota, no limit)."""
    if value is None or value == empty:
        return ""
    return str(int(value)) if value == int(value) else str(value)


def quota_grid_inputs(grid: dict, posted) -> None:
    """Give each row and cell of the grid its form names, and the values to show: the posted ones after a refused
    save (so nothing typed is lost), else the current figures."""
    known = {value for value, _ in WEIGHTS}
    for index, row in enumerate(grid["rows"]):
        row["index"] = index
        for column, cell in enumerate(row["cells"]):
            cell["prefix"] = prefix = f"q-{index}-{column}"
            current = {
                "deserved": _figure_text(cell["deserved"]),
                "limit": _figure_text(cell["limit"], empty=-1),
                "weight": _figure_text(cell["over_quota_weight"]),
            }
            cell["shown"] = {field: posted.get(f"{prefix}-{field}", value) for field, value in current.items()}
            cell["weights"] = WEIGHTS + [(current["weight"], current["weight"])] * (current["weight"] not in known)
