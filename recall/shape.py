"""Seed 003's hit shape: the 1-hop graph neighbours a hit carries with `include_graph`.

A hit's `graph` lists the memories at the other end of its edges, both
directions, that the request's scope admits (the same `Filter` every channel
used: a neighbour in a project the caller cannot see is never named),
heaviest edge first, at most `GRAPH_CAP`. It is set before packing, so the
tokens it costs are counted like the rest of the item. Two store reads for
the whole page: the edges, then the neighbours' names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from recall.ports import MemoryStore
from recall.results import GraphLink, Hit
from recall.types import MEMORY, Filter, Record

GRAPH_CAP = 5


def with_graph(
    store: MemoryStore,
    ranked: Sequence[tuple[Hit, Record]],
    *,
    where: Filter,
    cap: int = GRAPH_CAP,
) -> list[tuple[Hit, Record]]:
    """`ranked` with each hit's `graph` set (an empty tuple when it has no neighbour)."""
    ids = [hit.id for hit, _ in ranked if hit.kind == MEMORY]
    edges = store.edges(ids, where=where, reverse=True) if ids else {}
    ends = store.hydrate(sorted({link.target for links in edges.values() for link in links}))
    out: list[tuple[Hit, Record]] = []
    for hit, record in ranked:
        links = [
            GraphLink(link.target, ends[link.target].name, link.rel, link.weight, link.reverse)
            for link in edges.get(hit.id, ())
            if link.target in ends and where.admits_record(ends[link.target])
        ]
        links.sort(key=lambda link: -link.weight)  # stable: the store's order among equals
        out.append((replace(hit, graph=tuple(links[:cap])), record))
    return out
