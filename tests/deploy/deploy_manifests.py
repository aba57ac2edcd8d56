"""The manifests of deploy/kubernetes as `kubectl kustomize` renders them, for the tests of tests/deploy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml
from service_checks import service_unavailable

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZATION = ROOT / "deploy" / "kubernetes"
WRITABLE = KUSTOMIZATION / "overlays" / "writable"
NAMESPACE = "gpupool"
SERVICE_ACCOUNT = "gpupool-console"


def kubectl() -> str:
    """The kubectl on the machine (``make kubectl-deps``)."""
    found = shutil.which("kubectl")
    if not found:
        service_unavailable("kubectl is not installed (make kubectl-deps)")
    return found


def rendered_text(directory: Path) -> str:
    """``kubectl kustomize DIRECTORY``: the YAML an operator applies."""
    result = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def render(directory: Path) -> list[dict]:
    """The objects ``kubectl kustomize DIRECTORY`` renders."""
    return [obj for obj in yaml.safe_load_all(rendered_text(directory)) if obj]


def one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    """The only object of ``kind`` (named ``name``, if given)."""
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} objects of kind {kind} named {name}"
    return found[0]


def pod_specs(objects: list[dict]) -> dict[str, dict]:
    """The pod spec of every Deployment and Job, by the object's name."""
    return {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objects if o["kind"] in ("Deployment", "Job")}
