"""The identifier channel: exact id, exact name/slug, id prefix (Search's lane).

seamless's identifier lane: a query that is one token is looked up as an id
(lane 0), a name or slug (lane 1) and an id prefix of 8+ characters (lane 2),
in that order, and the matches are pinned above every fused hit. A candidate's
`score` is its lane; its rank its place in this list.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.planes import Planes
from recall.ports import PIN
from recall.types import Candidate, ChannelQuery, Filter, Record


def lane(record: Record, text: str) -> int:
    """0 exact id, 1 exact name/slug, 2 id prefix."""
    if record.id.upper() == text.upper():
        return 0
    if text in (record.name, record.title):
        return 1
    return 2


class Identifier:
    """Pins what the query names exactly (`MemoryStore.identifiers`)."""

    name = "identifier"
    role = PIN
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        if not query.text or " " in query.text:
            return []
        found = self._store.identifiers(query.text, where=where, limit=depth)
        return [
            Candidate(r.id, rank, float(lane(r, query.text))) for rank, r in enumerate(found, 1)
        ]
