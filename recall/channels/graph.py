"""The graph channel: memories within a few hops of the best hits of the other channels.

fabriq's graph plane (Hops, GraphSeeds, GraphReverse) over our edge table:
the seeds are the top `graph_seeds` memories of the pre-graph fused list,
best first, each with its fused score; `recall.graph.traverse` walks their
typed, weighted edges (`[[links]]` at weight 1, explicit associations,
supersessions) `query.walk.hops` deep, forward (and backward with
`reverse`), skipping edges under `min_weight`, scope and validity applied
inside each hop's read. A candidate's score is its best path's score (seed
score x edge weights x decay per hop) and it carries that path; the
pipeline fuses this list with the others by the channel's weight
(`recall.expansion`): a seed another seed links to gets the graph's vote too.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.graph import traverse
from recall.planes import Planes
from recall.ports import EXPAND
from recall.types import Candidate, ChannelQuery, Filter, Walk


class Graph:
    """Expands seeds along their stored edges (`recall.graph`)."""

    name = "graph"
    role = EXPAND
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        walk = query.walk or Walk()
        chosen = seeds if walk.seeds is None else seeds[: walk.seeds]
        reached = traverse(
            self._store,
            [(s.id, s.score) for s in chosen],
            where=where,
            hops=walk.hops,
            reverse=walk.reverse,
            min_weight=walk.min_weight,
            cap=min(walk.cap, depth),
            decay=walk.decay,
        )
        return [Candidate(r.id, n, r.score, path=r.path) for n, r in enumerate(reached, 1)]
