"""The link channel: the `[[name]]` neighbours of the best fused memories.

seamless's link expansion: the links of the top seeds (Recall's best active
in-scope memories, best first), each seed's targets in the order its body
names them, each target once, seeds themselves excluded. A candidate's
`score` is the edge's weight (1 for a `[[link]]`); the pipeline places the
i-th new neighbour at weight x score / (k + i) (`recall.expansion`). Edges are
read from the store (resolved when the body was written), never re-parsed.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.planes import Planes
from recall.ports import EXPAND
from recall.types import Candidate, ChannelQuery, Filter


class Links:
    """Expands seeds along their stored `[[link]]` edges."""

    name = "link"
    role = EXPAND
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        if not seeds:
            return []
        edges = self._store.links([s.id for s in seeds])
        taken = {s.id for s in seeds}
        found: list[tuple[str, float]] = []
        for seed in seeds:
            for link in edges.get(seed.id, ()):
                if link.target not in taken:
                    taken.add(link.target)
                    found.append((link.target, link.weight))
        return [Candidate(i, n, w) for n, (i, w) in enumerate(found[:depth], 1)]
