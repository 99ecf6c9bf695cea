"""The full-text channel: BM25 over the text index (`recall.ports.TextIndex`)."""

from __future__ import annotations

from collections.abc import Sequence

from recall.planes import Planes
from recall.ports import RANK
from recall.types import Candidate, ChannelQuery, Filter


class FullText:
    """Ranks by the text index's BM25; the palette's last word may be a prefix."""

    name = "fts"
    role = RANK
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._text = planes.text

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        return self._text.search(
            query.text, where=where, limit=depth, snippets=query.snippets, prefix=query.prefix
        )
