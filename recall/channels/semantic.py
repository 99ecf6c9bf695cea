"""The semantic channel: cosine nearest neighbours of the query's embedding.

With `ChannelQuery.context` (Recall's `passage_mix` or `context_mix` > 0) its
top `pool` candidates are scored by their best sentence and with the turns
said before each (`recall.context`) and the best `depth` of them returned;
without it, the plain cosine ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall import context
from recall.errors import ChannelOff
from recall.planes import Planes
from recall.ports import RANK
from recall.types import Candidate, ChannelQuery, Filter


class Semantic:
    """Ranks by cosine similarity over the vector index (`recall.ports.VectorIndex`)."""

    name = "semantic"
    role = RANK
    needs_vector = True

    def __init__(self, planes: Planes) -> None:
        self._vectors = planes.vectors
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        if self._vectors is None:
            raise ChannelOff("no vector index configured")
        if query.vector is None:
            raise ChannelOff("the query was not embedded")
        reading = query.context
        if reading is None:
            return self._vectors.search(query.vector, where=where, limit=depth)
        found = self._vectors.search(query.vector, where=where, limit=max(depth, reading.pool))
        return context.rescore(
            found, query.vector, store=self._store, vectors=self._vectors, where=where,
            context=reading,
        )[:depth]  # fmt: skip
