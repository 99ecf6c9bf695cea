"""The semantic channel: cosine nearest neighbours of the query's embedding."""

from __future__ import annotations

from collections.abc import Sequence

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

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        if self._vectors is None:
            raise ChannelOff("no vector index configured")
        if query.vector is None:
            raise ChannelOff("the query was not embedded")
        return self._vectors.search(query.vector, where=where, limit=depth)
