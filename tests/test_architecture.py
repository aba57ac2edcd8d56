"""The layers of docs/architecture.md, checked on the source: a forbidden import fails here, not in review.

Each rule reads every ``import`` statement of a module (at any depth, function-level ones included), so a
dependency cannot hide inside a function.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def modules(package: str) -> list[Path]:
    return sorted(path for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts)


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, as absolute dotted names (relative imports resolved)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def offenders(package: str, forbidden) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules(package)
        for name in sorted(imported(path))
        if forbidden(name)
    ]


# Pure packages and what of the apps each may use (pools.inventory.records is plain Python too).
PURE = {
    "pools/engine": ("pools.engine",),
    "pools/fleet": ("pools.engine", "pools.fleet", "pools.inventory.records"),
}


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_import_no_django_and_nothing_of_the_apps(package):
    assert (
        offenders(
            package,
            lambda name: (
                name.split(".")[0] in {"django", "rest_framework", "accounts", "celery"}
                or (name.startswith("pools.") and not name.startswith(PURE[package]))
            ),
        )
        == []
    )


def test_accounts_builds_on_the_engine_only_never_on_the_rest_of_pools():
    assert offenders("accounts", lambda name: name.startswith("pools") and not name.startswith("pools.engine")) == []


@pytest.mark.parametrize("layer", ["pools/selectors", "pools/services", "pools/querysets.py", "pools/models.py"])
def test_reads_and_writes_never_reach_up_into_views_the_api_or_commands(layer):
    above = ("pools.views", "pools.api", "pools.management", "pools.forms", "pools.cli", "pools.tasks", "pools.jobs")
    paths = [ROOT / layer] if layer.endswith(".py") else modules(layer)
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in paths
        for name in sorted(imported(path))
        if name.startswith(above)
    ]
    assert found == []


def test_selectors_never_write():
    assert offenders("pools/selectors", lambda name: name.startswith("pools.services")) == []


def test_no_module_is_named_after_its_callers():
    # A module says what it holds ("inventory", "capacity"), not who calls it ("web", "api_helpers").
    caller_words = {"web", "webui", "ui", "rest", "helpers", "utils", "misc", "common"}
    named = [
        str(path.relative_to(ROOT))
        for package in ("pools", "accounts")
        for path in modules(package)
        if path.stem in caller_words
    ]
    assert named == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other_even_through_others():
    """No import cycle among the apps' modules, function-level imports included: a module that needs one above it
    gets it plugged in, or looks a model up (``apps.get_model``) rather than importing it."""
    paths = {_module_name(path): path for package in ("pools", "accounts", "config") for path in modules(package)}
    graph = {}
    for name, path in paths.items():
        # ``from . import cells`` is the submodule ``cells``, not its package's ``__init__``.
        graph[name] = {
            module
            for imported_name in imported(path)
            for module in (imported_name if imported_name in paths else imported_name.rpartition(".")[0],)
            if module in paths and module != name and not name.startswith(module + ".")
        }
    cycles, seen = [], set()

    def walk(node: str, trail: list[str]) -> None:
        for target in sorted(graph[node]):
            if target in trail:
                cycles.append(" -> ".join([*trail[trail.index(target) :], target]))
            elif target not in seen:
                seen.add(target)
                walk(target, [*trail, target])

    for start in sorted(graph):
        if start not in seen:
            seen.add(start)
            walk(start, [start])
    assert cycles == []
