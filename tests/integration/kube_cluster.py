"""A real kube-apiserver + etcd on 127.0.0.1 (scripts/kube-apiserver.sh), and helpers to shape its contents.

Nodes and pods are created through the API like a kubelet and a scheduler would leave them: node
capacity and conditions and pod phases are written through the status subresource.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "kube-apiserver.sh"


class KubeCluster:
    def __init__(self, directory: Path):
        self.directory = directory
        self.kubeconfig = str(directory / "kubeconfig")
        self.api = client.CoreV1Api(config.new_client_from_config(config_file=self.kubeconfig))
        self._apiserver_command: list[str] | None = None

    # --- lifecycle -----------------------------------------------------------------------------------

    @classmethod
    def start(cls, directory: Path) -> KubeCluster:
        result = subprocess.run([str(SCRIPT), "start", str(directory)], capture_output=True, text=True, timeout=180)
        if result.returncode != 0:
            raise RuntimeError(f"kube-apiserver did not start: {result.stderr[-2000:]}")
        return cls(directory)

    def stop(self) -> None:
        subprocess.run([str(SCRIPT), "stop", str(self.directory)], capture_output=True, timeout=60)

    def _apiserver_pid(self) -> int:
        """The script writes the API server's pid on the first line of DIR/pids, etcd's on the second."""
        return int((self.directory / "pids").read_text().split()[0])

    def kill_apiserver(self) -> None:
        """SIGKILL the API server (etcd keeps the data); remembers how to start it again on the same port."""
        pid = self._apiserver_pid()
        self._apiserver_command = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid):
                return
            time.sleep(0.05)

    def restart_apiserver(self, timeout: float = 60) -> None:
        assert self._apiserver_command, "kill_apiserver first"
        log = open(self.directory / "apiserver-restart.log", "ab")
        process = subprocess.Popen(self._apiserver_command, stdout=log, stderr=log, start_new_session=True)
        lines = (self.directory / "pids").read_text().split()
        (self.directory / "pids").write_text("\n".join([str(process.pid), *lines[1:]]) + "\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.api.list_namespace(limit=1, _request_timeout=2)
                return
            except Exception:
                time.sleep(0.5)
        raise RuntimeError("kube-apiserver did not come back")

    # --- contents --------------------------------------------------------------------------------------

    def wipe(self) -> None:
        for pod in self.api.list_pod_for_all_namespaces().items:
            self.api.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
        for node in self.api.list_node().items:
            self.api.delete_node(node.metadata.name)

    def add_node(
        self,
        name: str,
        *,
        gpu: int = 8,
        product: str = "NVIDIA-H100-80GB-HBM3",
        ready: str = "True",
        labels: dict | None = None,
        taints: list | None = None,
        unschedulable: bool = False,
    ) -> None:
        node_labels = {
            "kubernetes.io/hostname": name,
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.count": str(gpu),
            "nvidia.com/gpu.memory": "81559",
            **(labels or {}),
        }
        spec = {"taints": taints or [], "unschedulable": unschedulable}
        self.api.create_node(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node_labels}, "spec": spec}
        )
        resources = {
            "cpu": "96",
            "memory": "1024Gi",
            "ephemeral-storage": "2Ti",
            "pods": "110",
            "nvidia.com/gpu": str(gpu),
        }
        self.api.patch_node_status(
            name,
            {
                "status": {
                    "capacity": resources,
                    "allocatable": resources,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": ready,
                            "reason": "KubeletReady" if ready == "True" else "Test",
                            "lastHeartbeatTime": _now(),
                            "lastTransitionTime": _now(),
                        }
                    ],
                }
            },
        )

    def add_pod(
        self,
        name: str,
        *,
        node: str | None,
        gpu: int = 1,
        pool: str | None = None,
        priority: str = "NORMAL",
        phase: str = "Running",
        namespace: str = "default",
    ) -> None:
        labels = {"osmo.priority": priority, **({"osmo.pool": pool} if pool else {})}
        requests = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": str(gpu)}
        spec = {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": requests, "limits": requests}}
            ]
        }
        if node:
            spec["nodeName"] = node
        self.api.create_namespaced_pod(
            namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}
        )
        if phase != "Pending":
            self.set_phase(name, phase, namespace=namespace)

    def set_phase(self, name: str, phase: str, *, namespace: str = "default") -> None:
        self.api.patch_namespaced_pod_status(name, namespace, {"status": {"phase": phase}})

    def delete_pod(self, name: str, *, namespace: str = "default") -> None:
        self.api.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    def delete_node(self, name: str) -> None:
        self.api.delete_node(name)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "zombie"
