"""deploy/kubernetes as rendered by `kubectl kustomize`: the objects, the ClusterRole's exact rules, the pods'
security, probes and volumes, and a setting for every variable config/settings.py reads."""

import re

import pytest
from deploy_manifests import KUSTOMIZATION, NAMESPACE, ROOT, SERVICE_ACCOUNT, WRITABLE, one, pod_specs, render

READ_NODES_AND_PODS = {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]}
PATCH_NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}
# Settings that belong in the Secret `gpupool-console` the operator creates (docs/deploy.md lists them).
SECRET_SETTINGS = {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "OIDC_RP_CLIENT_SECRET"}
# Settings whose mere presence changes their meaning: the operator adds them only when wanted (docs/deploy.md).
SET_WHEN_WANTED = {"LOCAL_LOGIN"}
ENV_READ = re.compile(
    r"""(?:os\.environ\.get|os\.getenv|env_bool|os\.environ\[)\(?\s*["']([A-Z][A-Z0-9_]*)["']"""
    r"""|["']([A-Z][A-Z0-9_]*)["']\s+in\s+os\.environ"""
)


@pytest.fixture(scope="module")
def base():
    return render(KUSTOMIZATION)


@pytest.fixture(scope="module")
def writable():
    return render(WRITABLE)


def test_the_objects_of_a_deployment(base):
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in base)
    assert [(kind, re.sub(r"-[a-z0-9]{10}$", "-<hash>", name)) for kind, name in kinds] == [
        ("ClusterRole", "gpupool-console"),
        ("ClusterRoleBinding", "gpupool-console"),
        ("ConfigMap", "gpupool-console-<hash>"),
        ("Deployment", "gpupool-console-beat"),
        ("Deployment", "gpupool-console-web"),
        ("Deployment", "gpupool-console-worker"),
        ("Job", "gpupool-console-migrate"),
        ("Namespace", NAMESPACE),
        ("PodDisruptionBudget", "gpupool-console-web"),
        ("Service", "gpupool-console"),
        ("ServiceAccount", SERVICE_ACCOUNT),
    ]
    cluster_wide = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    assert {o["metadata"].get("namespace") for o in base if o["kind"] not in cluster_wide} == {NAMESPACE}


def test_the_cluster_role_reads_nodes_and_pods_and_nothing_else(base):
    assert one(base, "ClusterRole")["rules"] == [READ_NODES_AND_PODS]
    binding = one(base, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": SERVICE_ACCOUNT,
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}]


def test_the_writable_overlay_adds_node_patches_and_changes_nothing_else(base, writable):
    assert one(writable, "ClusterRole")["rules"] == [READ_NODES_AND_PODS, PATCH_NODES]
    assert [o for o in writable if o["kind"] != "ClusterRole"] == [o for o in base if o["kind"] != "ClusterRole"]


def test_every_pod_runs_unprivileged_on_a_read_only_root(base):
    config = one(base, "ConfigMap")
    for name, spec in pod_specs(base).items():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] != 0, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        empty_dirs = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
        for container in spec["containers"]:
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }, name
            assert set(container["resources"]["requests"]) == {"cpu", "memory"}, name
            assert "memory" in container["resources"]["limits"], name
            # What the console writes (/tmp, VAR_DIR: the secret key file, beat's schedule) is an emptyDir.
            writable_mounts = {m["mountPath"] for m in container["volumeMounts"] if m["name"] in empty_dirs}
            assert {"/tmp", config["data"]["VAR_DIR"]} <= writable_mounts, name
            assert container["envFrom"] == [
                {"configMapRef": {"name": config["metadata"]["name"]}},
                {"secretRef": {"name": "gpupool-console"}},
            ], name


def test_the_web_server_is_probed_on_healthz_and_readyz(base):
    web = one(base, "Deployment", "gpupool-console-web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    allowed_hosts = one(base, "ConfigMap")["data"]["ALLOWED_HOSTS"].split(",")
    probes = {kind: container[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe", "startupProbe")}
    assert {kind: probe["path"] for kind, probe in probes.items()} == {
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
        "startupProbe": "/healthz",
    }
    for probe in probes.values():
        assert probe["port"] == "http"
        # Django answers 400 to a Host it does not allow; the kubelet would send the pod's IP.
        assert [h["value"] for h in probe["httpHeaders"] if h["name"] == "Host"][0] in allowed_hosts
    assert container["command"][:2] == ["gunicorn", "config.wsgi:application"]
    assert {"--workers=2", "--threads=4", "--no-control-socket"} <= set(container["command"])
    assert container["ports"] == [{"name": "http", "containerPort": 8000}]

    service, budget = one(base, "Service"), one(base, "PodDisruptionBudget")
    labels = web["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["minAvailable"] == 1 < web["spec"]["replicas"]


def test_one_beat_a_pinged_worker_and_a_migration_job(base):
    beat = one(base, "Deployment", "gpupool-console-beat")
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"] == {"type": "Recreate"}
    assert beat["spec"]["template"]["spec"]["containers"][0]["command"][:3] == ["celery", "--app=config", "beat"]

    worker = one(base, "Deployment", "gpupool-console-worker")
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["celery", "--app=config", "worker"]
    assert "inspect ping" in container["livenessProbe"]["exec"]["command"][-1]
    # Longer than one watch task (GPUPOOL_WATCH_TASK_SECONDS), so that a warm shutdown lets it end.
    watch_seconds = int(one(base, "ConfigMap")["data"]["GPUPOOL_WATCH_TASK_SECONDS"])
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > watch_seconds

    job = one(base, "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == [
        "python",
        "manage.py",
        "migrate",
        "--noinput",
    ]
    # Only the web server and the workers talk to the cluster, as the console's service account.
    specs = pod_specs(base)
    assert {name for name, spec in specs.items() if spec.get("serviceAccountName") == SERVICE_ACCOUNT} == {
        "gpupool-console-web",
        "gpupool-console-worker",
    }
    assert all(
        specs[name]["automountServiceAccountToken"] is False
        for name in ("gpupool-console-beat", "gpupool-console-migrate")
    )


def test_every_setting_the_console_reads_is_configured(base):
    read = {a or b for a, b in ENV_READ.findall((ROOT / "config" / "settings.py").read_text())}
    configured = set(one(base, "ConfigMap")["data"])
    assert sorted(read - configured - SECRET_SETTINGS - SET_WHEN_WANTED) == []
    assert sorted(configured - read) == []  # nothing stale
    guide = (ROOT / "docs" / "deploy.md").read_text()
    assert sorted(name for name in SECRET_SETTINGS | SET_WHEN_WANTED if f"`{name}`" not in guide) == []
