"""Reads of one pool: lookup, platforms, and the pod spec each platform renders (SEMANTICS §2–§3)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..choices import ConfigType, PoolStatus
from ..configs import pool_body
from ..engine.errors import ConfigError, EngineError, NotFound
from ..engine.labels import node_label_template
from ..engine.variables import render_pod_template, resolve_variables
from ..models import (
    Backend,
    Platform,
    PodTemplate,
    Pool,
    backend_status,
)

DEFAULT_PLATFORM = "default"
# The name a label pool's selector goes by among the templates it merges.
NODE_LABEL_LAYER = "node_label"


def pool_get(name: str, *, user) -> Pool:
    """One pool; a pool the user may not see does not exist for them (NotFound, a 404)."""
    pool = Pool.objects.restrict(user).select_related("backend").prefetch_related("platforms").filter(name=name).first()
    if pool is None:
        raise NotFound(f"pool '{name}' does not exist")
    return pool


def pool_platforms(pool: Pool) -> dict[str, Any]:
    """A pool's platforms by name; a pool without platforms has one, ``default``, with nothing of its own."""
    platforms = {platform.name: platform for platform in pool.platforms.all()}
    return platforms or {DEFAULT_PLATFORM: None}


def pool_platform_choice(pool: Pool, platform: str | None) -> str:
    """The platform a request means: the one named, else the pool's ``default_platform``."""
    platforms = pool_platforms(pool)
    chosen = platform or pool.default_platform or (next(iter(platforms)) if len(platforms) == 1 else "")
    if not chosen:
        raise ConfigError(f"pool '{pool.name}' has no default platform; choose one of {', '.join(sorted(platforms))}")
    if chosen not in platforms:
        raise NotFound(f"pool '{pool.name}' has no platform '{chosen}' (it has {', '.join(sorted(platforms))})")
    return chosen


def platform_template_names(pool: Pool, platform) -> list[str]:
    return list(pool.common_pod_template) + (list(platform.override_pod_template) if platform else [])


def platform_validation_names(pool: Pool, platform) -> list[str]:
    return list(pool.common_resource_validations) + (list(platform.resource_validations) if platform else [])


def platform_variables(pool: Pool, platform_name: str, platform, user_values: dict | None = None) -> dict:
    return resolve_variables(
        pool=pool.name,
        platform=platform_name,
        pool_defaults=pool.common_default_variables,
        platform_defaults=platform.default_variables if platform else None,
        user_values=user_values,
    )


def template_layers(node_label: dict | None, names: list[str], templates: dict) -> list[tuple[str, dict]]:
    """What a platform merges, in order: its pool's node label as a first template (SEMANTICS §8), then the
    named templates. Raises ConfigError naming the first template that does not exist.
    """
    missing = [name for name in names if name not in templates]
    if missing:
        raise ConfigError(f"pod template '{missing[0]}' does not exist")
    label = node_label_template(node_label)
    return ([(NODE_LABEL_LAYER, label)] if label else []) + [(name, templates[name]) for name in names]


def _render_platform(pool: Pool, platform_name: str, platform, variables: dict, templates: dict) -> dict:
    names = platform_template_names(pool, platform)
    missing = [name for name in names if name not in templates]
    if missing:
        raise ConfigError(f"pool '{pool.name}' names pod template '{missing[0]}', which does not exist")
    try:
        return render_pod_template(template_layers(pool.node_label, names, templates), variables)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None


def pool_render(*, pool_name: str, user, platform: str | None = None, user_values: dict | None = None) -> dict:
    """The merged, rendered pod template a request to this pool and platform would get."""
    return pool_platform_render(pool_get(pool_name, user=user), platform, user_values)


def pool_platform_render(pool: Pool, platform: str | None, user_values: dict | None) -> dict:
    platform_name = pool_platform_choice(pool, platform)
    platform_obj = pool_platforms(pool)[platform_name]
    variables = platform_variables(pool, platform_name, platform_obj, user_values)
    templates = dict(
        PodTemplate.objects.filter(name__in=platform_template_names(pool, platform_obj)).values_list("name", "spec")
    )
    pod_template = _render_platform(pool, platform_name, platform_obj, variables, templates)
    return {"pool": pool.name, "platform": platform_name, "variables": variables, "pod_template": pod_template}


def platform_selection_specs(*, backend: Backend) -> Iterator[tuple[Pool, str, dict]]:
    """Each (pool, platform, pod spec) of a backend's pools, the spec rendered with default variables.

    Membership uses these specs. A platform whose templates do not render selects no node.
    """
    templates = dict(PodTemplate.objects.values_list("name", "spec"))
    for pool in Pool.objects.filter(backend=backend).prefetch_related("platforms"):
        for platform_name, platform in pool_platforms(pool).items():
            variables = platform_variables(pool, platform_name, platform)
            try:
                merged = _render_platform(pool, platform_name, platform, variables, templates)
            except ConfigError:
                continue
            spec = merged.get("spec")
            yield pool, platform_name, spec if isinstance(spec, dict) else {}


def pool_status(pool: Pool, *, now=None) -> PoolStatus:
    """MAINTENANCE, else the status of its backend (``models.backend_status``): ONLINE or OFFLINE."""
    return pool_status_of(maintenance=pool.enable_maintenance, last_heartbeat=pool.backend.last_heartbeat, now=now)


def pool_status_of(*, maintenance: bool, last_heartbeat, now=None) -> PoolStatus:
    """``pool_status`` of a pool read as values: its maintenance switch and its backend's last heartbeat."""
    if maintenance:
        return PoolStatus.MAINTENANCE
    return PoolStatus(backend_status(last_heartbeat, now))


def draft_render(*, pool_name: str, pool: dict, templates: dict[str, Any], user_values: dict | None = None) -> dict:
    """Each platform's merged template for a pool body that may not be saved yet (the editors' live preview).

    ``pool`` is a canonical pool body and ``templates`` maps template names to specs (the saved ones with the
    draft in its place); nothing is read from or written to the database. Returns ``{platform: {"pod_template":
    ...}}``, or ``{"error": ...}`` for a platform whose templates are missing or do not render.
    """
    platforms = pool.get("platforms") or {DEFAULT_PLATFORM: None}
    results = {}
    for platform_name, platform in platforms.items():
        names = list(pool.get("common_pod_template") or []) + list((platform or {}).get("override_pod_template") or [])
        try:
            layers = template_layers(pool.get("node_label"), names, templates)
        except ConfigError as exc:
            results[platform_name] = {"error": str(exc), "templates": names}
            continue
        variables = resolve_variables(
            pool=pool_name,
            platform=platform_name,
            pool_defaults=pool.get("common_default_variables"),
            platform_defaults=(platform or {}).get("default_variables"),
            user_values=user_values,
        )
        try:
            rendered = render_pod_template(layers, variables)
        except EngineError as exc:
            results[platform_name] = {"error": str(exc), "templates": names}
            continue
        results[platform_name] = {"pod_template": rendered, "templates": names}
    return results


def pools_visible(*, user):
    """Pools ``user`` may read, with their backend and platforms."""
    return Pool.objects.restrict(user).select_related("backend").prefetch_related("platforms")


def platforms_visible(*, user):
    """Platforms of the pools ``user`` may read."""
    return Platform.objects.restrict(user).select_related("pool")


def pool_filter_choices(*, user) -> dict[str, list[str]]:
    """What the pool filters offer ``user``: the backends of the pools they may see."""
    pools = Pool.objects.restrict(user).order_by("backend__name")
    return {"backends": list(pools.values_list("backend__name", flat=True).distinct())}


def pool_platform_views(pool: Pool) -> list[dict]:
    """What a pool's page shows of each platform: its body, the templates it merges, its rendered pod template
    (or why it does not render) and its validation rules by set, in order."""
    from .configs import config_state

    body = pool_body(pool)
    state = config_state([ConfigType.POD_TEMPLATE, ConfigType.RESOURCE_VALIDATION])
    rules = state[ConfigType.RESOURCE_VALIDATION]
    views = []
    for name, result in draft_render(pool_name=pool.name, pool=body, templates=state[ConfigType.POD_TEMPLATE]).items():
        platform = body["platforms"].get(name) or {}
        names = body["common_resource_validations"] + list(platform.get("resource_validations") or [])
        views.append({"name": name, "body": platform, **result, "validations": [(n, rules.get(n, [])) for n in names]})
    return views


def pool_form_choices(*, user) -> dict[str, list[str]]:
    """What the pool editor offers ``user``: the backends, pod templates and validation sets they may see."""
    from .configs import config_objects

    return {
        key: sorted(config_objects(config_type=config_type, user=user))
        for key, config_type in (
            ("backends", ConfigType.BACKEND),
            ("templates", ConfigType.POD_TEMPLATE),
            ("validations", ConfigType.RESOURCE_VALIDATION),
        )
    }


def draft_preview(*, user, pool_name: str, pool: dict, template: tuple[str, dict] | None = None) -> dict:
    """``draft_render`` over the pod templates ``user`` may see, with ``template`` (name, spec) in place of the
    saved one of that name: the editors' live previews, nothing saved."""
    from .configs import config_objects

    templates = config_objects(config_type=ConfigType.POD_TEMPLATE, user=user)
    if template is not None:
        templates[template[0]] = template[1]
    return draft_render(pool_name=pool_name, pool=pool, templates=templates)
