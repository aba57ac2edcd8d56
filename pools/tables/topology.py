"""The tables of capacity by topology (SEMANTICS §11): a level's domains and its shapes, on the pool page and in
``poolctl pool capacity``."""

from __future__ import annotations

from .base import Column, Table
from .formats import count, dash


def _shape(row: dict) -> str:
    return f"{row['pods']}×{row['gpus_per_pod']}"


def _free_of_total(row: dict) -> str:
    return f"{count(row['free'])}/{count(row['gpus'])}"


TOPOLOGY_DOMAINS = Table(
    "topology-domains",
    (
        Column("path", "Domain"),
        Column("nodes", "Nodes", numeric=True, text=count),
        Column("free", "Free / GPUs", value=_free_of_total, numeric=True),
    ),
    empty="No node of the pool carries this level's labels.",
)

TOPOLOGY_SHAPES = Table(
    "topology-shapes",
    (
        Column("shape", "Shape (pods × GPUs)", value=_shape),
        Column("gangs", "Gangs", numeric=True, text=count),
        Column("largest_gang", "Largest gang (pods)", numeric=True, text=count),
        Column("largest_domain", "In domain", text=dash),
        Column("stranded", "Stranded GPUs", numeric=True, text=count),
    ),
)
