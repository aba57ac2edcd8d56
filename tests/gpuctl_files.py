"""gpuctl's pool files as its resource-pool guide writes them: the tests of the gpuctl workflow on a simulated
and on a real (kube-apiserver) cluster run the same files."""

from pathlib import Path

POOL_KEY = "runwhere.ai/pool"
TYPE_KEY = "runwhere.ai/gpu-type"

# The seed's four files (gpuctl's resource-pool guide, "Four-Pool Design"), as written there.
POOL_FILES = {
    "training-pool": """kind: pool
version: v0.1
pool:
  name: training-pool
  description: "Large model training (high-end GPUs)"
nodes:
  gpu-node-1:
    gpu-type: A100-100G
  gpu-node-2:
    gpu-type: A100-100G
""",
    "inference-pool": """kind: pool
version: v0.1
pool:
  name: inference-pool
  description: "Inference services (mid-range GPUs)"
nodes:
  gpu-node-3:
    gpu-type: A10-24G
  gpu-node-4:
    gpu-type: A10-24G
""",
    "dev-pool": """kind: pool
version: v0.1
pool:
  name: dev-pool
  description: "Notebook development and debugging (low-end GPUs)"
nodes:
  gpu-node-5:
    gpu-type: RTX4090-24G
""",
    "compute-pool": """kind: pool
version: v0.1
pool:
  name: compute-pool
  description: "CPU compute services (no GPU nodes)"
nodes:
  cpu-node-1:
    gpu-type: ""
  cpu-node-2:
    gpu-type: ""
""",
}


def write_pool_files(directory: Path) -> dict[str, str]:
    """The seed's four files written into ``directory``: pool name -> path."""
    paths = {}
    for name, text in POOL_FILES.items():
        path = directory / f"{name}.yaml"
        path.write_text(text)
        paths[name] = str(path)
    return paths
