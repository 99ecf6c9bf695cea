"""The full-text channel: BM25 over the text index (`recall.ports.TextIndex`).

A palette query whose last word is one or two letters (`SHORT_PREFIX`) expands
that word to the index's most frequent words starting with it and scores them
all: the slowest full-text search there is, and the one typed most often (26
first letters, a few hundred pairs). Its candidates are kept per (query,
filter, depth, snippets) while the text index's stamp (`recall.tiers.Stamped`:
any commit by any process moves it) is the one they were found under, so a
kept list is exactly what the index would answer now. The records they name
are read afresh by the caller (hydration), as always.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from recall.lru import LRU
from recall.planes import Planes
from recall.ports import RANK
from recall.query import words
from recall.tiers import Stamped
from recall.types import Candidate, ChannelQuery, Filter

SHORT_PREFIX = 2  # letters of a last word whose searches are kept
KEPT = 1024  # searches kept (each a page of candidates)


class ShortPrefixes:
    """The kept candidate lists, least recently used dropped first (thread-safe)."""

    def __init__(self, size: int = KEPT) -> None:
        self._lists: LRU[Hashable, tuple[object, tuple[Candidate, ...]]] = LRU(size)

    def get(self, key: Hashable, stamp: object) -> tuple[Candidate, ...] | None:
        """The list kept for `key` while the index's `stamp` is the one it was kept under."""
        kept = self._lists.get(key, valid=lambda kept: kept[0] == stamp)
        return None if kept is None else kept[1]

    def put(self, key: Hashable, stamp: object, found: Sequence[Candidate]) -> None:
        self._lists.put(key, (stamp, tuple(found)))

    def __len__(self) -> int:
        return len(self._lists)


def short_prefix(query: ChannelQuery) -> bool:
    """A palette query whose last word is at most `SHORT_PREFIX` letters."""
    if not query.prefix:
        return False
    typed = words(query.text, keep_short_last=True)
    return bool(typed) and len(typed[-1]) <= SHORT_PREFIX


class FullText:
    """Ranks by the text index's BM25; the palette's last word may be a prefix."""

    name = "fts"
    role = RANK
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._text = planes.text
        self.kept = ShortPrefixes()

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        stamp = None
        if short_prefix(query) and isinstance(self._text, Stamped):
            stamp = self._text.stamp()
        key = (query.text, where, depth, query.snippets)
        if stamp is not None:
            kept = self.kept.get(key, stamp)
            if kept is not None:
                return list(kept)
        found = self._text.search(
            query.text, where=where, limit=depth, snippets=query.snippets, prefix=query.prefix
        )
        if stamp is not None:
            self.kept.put(key, stamp, found)
        return found
