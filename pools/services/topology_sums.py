"""The pools' topology sums (``TopologySums``): their available nodes counted by domain, kept by the node writes.

After writes that may move nodes between domains or pools (a sync, a watch batch's node events, a config change's
membership recompute) the backend's pools with topology levels are counted again whole, one grouping query each;
after a watch batch's pod events, only the domains of the nodes whose usage moved (a rack's nodes, not the pool's).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable

from pools.engine.errors import TopologyError
from pools.engine.topology import topology_levels
from pools.models import Backend, NodeMembership, Pool, TopologySums
from pools.selectors.topology import topology_domain_counts

from .bulk import chunks

# Past this many domains touched in one pool by one batch, the pool is counted again whole: one query either way,
# and an OR of hundreds of domains costs the database more than the grouping.
MAX_TOUCHED_DOMAINS = 64


def topology_sums_refresh(*, backend: Backend, node_names: Iterable[str] | None = None) -> None:
    """Count again the available nodes of ``backend``'s pools that have topology levels, in the caller's
    transaction (which holds the backend's inventory write lock).

    Without ``node_names``, each such pool whole, with its mark of a whole set (``TopologySums.COMPLETE``); a pool
    whose levels are gone or invalid loses its rows. With ``node_names`` (whose usage moved, not their labels or
    pools), only the domains those nodes are in, in the pools whose set is whole already (others whole).
    """
    pools = _pools_with_levels(backend)
    if node_names is None:
        for pool_id, wanted in pools.items():
            _count_whole(pool_id, wanted)
        TopologySums.objects.filter(pool__backend=backend).exclude(pool_id__in=list(pools)).delete()
        return
    names = list(set(node_names))
    if not names or not pools:
        return
    touched: dict[int, set[tuple]] = defaultdict(set)
    for chunk in chunks(names):
        memberships = NodeMembership.objects.filter(
            pool_id__in=list(pools), node__backend=backend, node__name__in=chunk
        ).values_list("pool_id", "node__labels")
        for pool_id, labels in memberships:
            labels = labels or {}
            touched[pool_id].add(tuple(_text(labels.get(label)) for label in pools[pool_id]))
    for pool_id, domains in touched.items():
        wanted = pools[pool_id]
        kept = TopologySums.objects.filter(pool_id=pool_id, levels=json.dumps(wanted))
        if len(domains) > MAX_TOUCHED_DOMAINS or not kept.filter(domain=TopologySums.COMPLETE).exists():
            _count_whole(pool_id, wanted)
            continue
        kept.filter(domain__in=[json.dumps(list(values)) for values in domains]).delete()
        TopologySums.objects.bulk_create(_rows(pool_id, wanted, topology_domain_counts(pool_id, wanted, domains)))


def _pools_with_levels(backend: Backend) -> dict[int, list[str]]:
    """The backend's pools with valid topology levels: their ids and their levels' labels, coarsest first."""
    pools = {}
    for pool_id, keys in (
        Pool.objects.filter(backend=backend).exclude(topology_keys=[]).values_list("id", "topology_keys")
    ):
        try:
            levels = topology_levels(keys)
        except TopologyError:
            continue
        if levels:
            pools[pool_id] = [level.label for level in levels]
    return pools


def _count_whole(pool_id: int, wanted: list[str]) -> None:
    TopologySums.objects.filter(pool_id=pool_id).delete()
    rows = _rows(pool_id, wanted, topology_domain_counts(pool_id, wanted))
    rows.append(TopologySums(pool_id=pool_id, levels=json.dumps(wanted), domain=TopologySums.COMPLETE))
    TopologySums.objects.bulk_create(rows, batch_size=1000)


def _rows(pool_id: int, wanted: list[str], counts) -> list[TopologySums]:
    levels = json.dumps(wanted)
    return [
        TopologySums(
            pool_id=pool_id,
            levels=levels,
            domain=json.dumps(list(values)),
            gpu_product=product,
            gpus=gpus,
            free=free,
            nodes=nodes,
        )
        for values, product, gpus, free, nodes in counts
    ]


def _text(value) -> str | None:
    """A label's value as the database reads it back (``KT``): text, or None when the node lacks the label."""
    return None if value is None else str(value)
