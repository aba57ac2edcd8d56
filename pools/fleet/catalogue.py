"""The one catalogue of the made-up fleets: GPU products as GPU Feature Discovery labels them, machine shapes, and
the kinds of node built from them (a shape with its taints, labels, MIG layout or time-slicing)."""

from __future__ import annotations

from dataclasses import dataclass, replace

PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU = "nvidia.com/gpu"  # the resource whole GPUs are requested as
MIG_PREFIX = "nvidia.com/mig-"  # ... and MIG devices, by profile


@dataclass(frozen=True)
class Gpu:
    """A GPU product: the values GFD writes into ``nvidia.com/gpu.*`` labels."""

    product: str
    memory_mib: int
    family: str
    compute: tuple[int, int]
    mig_capable: bool = False


GPUS = {
    "H100": Gpu("NVIDIA-H100-80GB-HBM3", 81559, "hopper", (9, 0), mig_capable=True),
    "H200": Gpu("NVIDIA-H200", 143771, "hopper", (9, 0), mig_capable=True),
    "B200": Gpu("NVIDIA-B200", 183359, "blackwell", (10, 0), mig_capable=True),
    "GB200": Gpu("NVIDIA-GB200", 189471, "blackwell", (10, 0), mig_capable=True),
    "A100": Gpu("NVIDIA-A100-SXM4-80GB", 81920, "ampere", (8, 0), mig_capable=True),
    # The A100 as OSMO's pool-configuration walk-through names it (its pod template selects ``NVIDIA-A100``).
    "A100-40GB": Gpu("NVIDIA-A100", 40960, "ampere", (8, 0), mig_capable=True),
    "L40S": Gpu("NVIDIA-L40S", 46068, "ada-lovelace", (8, 9)),
    "L40": Gpu("NVIDIA-L40", 46068, "ada-lovelace", (8, 9)),
    "A10G": Gpu("NVIDIA-A10G", 23028, "ampere", (8, 6)),
    "A10": Gpu("NVIDIA-A10", 23028, "ampere", (8, 6)),
    "RTX4090": Gpu("NVIDIA-GeForce-RTX-4090", 24564, "ada-lovelace", (8, 9)),
    "T4": Gpu("Tesla-T4", 15360, "turing", (7, 5)),
    "ORIN": Gpu("NVIDIA-Jetson-AGX-Orin-64GB", 62841, "ampere", (8, 7)),
}

# MIG profiles: the memory GFD reports for one device (MiB).
MIG_MEMORY = {"mig-1g.10gb": 9728, "mig-3g.40gb": 39936}


@dataclass(frozen=True)
class Shape:
    """A machine type: what one node of it offers (``machine`` is the system name GFD reports)."""

    instance: str
    machine: str
    arch: str
    cpu: int
    memory_gi: int
    disk_gi: int
    max_pods: int
    gpu: str = ""  # a key of GPUS
    gpus: int = 0


SHAPES = {
    shape.instance: shape
    for shape in (
        Shape("dgx-h100", "DGXH100", "amd64", 224, 2015, 3576, 250, "H100", 8),
        Shape("dgx-h200", "DGXH200", "amd64", 224, 2015, 3576, 250, "H200", 8),
        Shape("dgx-b200", "DGXB200", "amd64", 224, 4031, 3576, 250, "B200", 8),
        Shape("dgx-a100", "DGXA100-920-23687-2530-000", "amd64", 256, 2015, 3576, 250, "A100", 8),
        Shape("dgx-a100-320gb", "DGXA100-920-23687-2510-000", "amd64", 256, 1007, 3576, 250, "A100-40GB", 8),
        Shape("gb200-nvl72-tray", "GB200-NVL72-Compute-Tray", "arm64", 144, 960, 3576, 250, "GB200", 4),
        Shape("sm-l40s-8x", "SYS-421GE-TNRT", "amd64", 128, 1007, 3576, 110, "L40S", 8),
        Shape("sm-l40s-4x", "SYS-421GE-TNRT", "amd64", 64, 503, 1788, 110, "L40S", 4),
        Shape("ovx-l40-4x", "OVX-L40-4GPU", "amd64", 128, 1007, 1788, 110, "L40", 4),
        Shape("g5.12xlarge", "g5.12xlarge", "amd64", 48, 186, 500, 234, "A10G", 4),
        Shape("sm-a10-4x", "SYS-420GP-TNR", "amd64", 64, 503, 1788, 110, "A10", 4),
        Shape("ws-rtx4090-4x", "WS-RTX4090-4GPU", "amd64", 32, 251, 1788, 110, "RTX4090", 4),
        Shape("n1-standard-32", "Google-Compute-Engine", "amd64", 32, 118, 375, 110, "T4", 4),
        Shape("jetson-agx-orin-64gb", "NVIDIA-Jetson-AGX-Orin-Developer-Kit", "arm64", 12, 61, 57, 110, "ORIN", 1),
        Shape("cpu-x86-96c", "", "amd64", 96, 384, 894, 110),
        Shape("cpu-x86-64c", "", "amd64", 64, 256, 894, 110),
        Shape("n2-standard-32", "", "amd64", 32, 125, 375, 110),
        Shape("m6i.4xlarge", "", "amd64", 16, 62, 200, 234),
    )
}

Taint = tuple[str, str, str]  # (key, value or "", effect)


@dataclass(frozen=True)
class Kind:
    """How a node is set up: its shape plus taints, labels and how its GPUs are offered.

    ``mig`` lists the MIG devices the node advertises instead of whole GPUs; ``replicas`` > 0 offers each GPU
    that many times (time-slicing).
    """

    shape: Shape
    taints: tuple[Taint, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    mig: tuple[tuple[str, int], ...] = ()
    mig_config: str = ""
    replicas: int = 0

    @property
    def gpu(self) -> Gpu | None:
        return GPUS[self.shape.gpu] if self.shape.gpu else None

    @property
    def product_tainted(self) -> bool:
        return any(key == PRODUCT_LABEL for key, _, _ in self.taints)


def product_taint(gpu: str) -> Taint:
    """The taint that keeps pods without a matching toleration off a GPU product's nodes."""
    return (PRODUCT_LABEL, GPUS[gpu].product, "NoSchedule")


def dedicated(kind: Kind, purpose: str) -> Kind:
    """``kind`` reserved for one purpose: labelled and tainted ``dedicated=<purpose>``."""
    return replace(
        kind,
        taints=(*kind.taints, ("dedicated", purpose, "NoSchedule")),
        labels=(*kind.labels, ("dedicated", purpose)),
    )


def labelled(kind: Kind, **labels: str) -> Kind:
    """``kind`` with more labels on its nodes."""
    return replace(kind, labels=(*kind.labels, *labels.items()))


def kind_of(instance: str, *taints: Taint, **options) -> Kind:
    """Nodes of the machine type ``instance`` with ``taints`` (``options``: the other fields of Kind)."""
    return Kind(SHAPES[instance], taints=taints, **options)


# The kinds the layouts share.
DGX_H100 = kind_of("dgx-h100", product_taint("H100"))
DGX_H200 = kind_of("dgx-h200", product_taint("H200"))
DGX_B200 = kind_of("dgx-b200", product_taint("B200"))
DGX_A100 = kind_of("dgx-a100", product_taint("A100"))
DGX_A100_MIG = replace(DGX_A100, mig=(("mig-1g.10gb", 7), ("mig-3g.40gb", 14)), mig_config="custom-1g7-3g14")
DGX_A100_MIG_1G = replace(DGX_A100, mig=(("mig-1g.10gb", 56),), mig_config="all-1g.10gb")
GB200_TRAY = kind_of("gb200-nvl72-tray", product_taint("GB200"))
L40S_4X = kind_of("sm-l40s-4x")
L40_OVX = kind_of("ovx-l40-4x")
A10G_G5 = kind_of("g5.12xlarge")
T4_N1 = kind_of("n1-standard-32")
JETSON_ORIN = kind_of("jetson-agx-orin-64gb")
CPU_96 = kind_of("cpu-x86-96c")
CPU_64 = kind_of("cpu-x86-64c")
CPU_SYSTEM = dedicated(CPU_64, "system")
L40S_4X_SLICED = replace(L40S_4X, replicas=4)
L40_SIMULATION = dedicated(L40_OVX, "simulation")

# A fleet made of the catalogue alone: (node name prefix, weight, kind).
MIX = (
    ("h100", 18, DGX_H100),
    ("a100", 12, DGX_A100),
    ("a100-mig", 2, DGX_A100_MIG),
    ("gb200", 8, GB200_TRAY),
    ("l40s", 10, L40S_4X),
    ("l40s-ts", 3, L40S_4X_SLICED),
    ("l40", 8, L40_SIMULATION),
    ("t4", 10, T4_N1),
    ("jetson", 2, JETSON_ORIN),
    ("cpu", 12, CPU_96),
    ("cpu-sys", 3, CPU_SYSTEM),
)
