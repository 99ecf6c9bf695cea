"""Whoosh's BM25F with its collection statistics counted over the projects a
search may see (`recall.indexes.scope_statistics` says why).

Whoosh reads IDF and each field's mean length from the whole index (deleted
documents included) through the searcher; `ScopedBM25F` takes them from the
scope's live documents instead: how many there are, each field's mean length
over them and how many of them hold the term. The scorer is Whoosh's own
`BM25FScorer` with those figures, so only the statistics change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import log
from typing import Any

from whoosh.query import Query
from whoosh.scoring import BM25F, BM25FScorer, WeightScorer
from whoosh.searching import Searcher


@dataclass(frozen=True, slots=True)
class Scope:
    """The live documents a search may see (top-level numbers) and each field's
    mean length over them."""

    docs: frozenset[int]
    lengths: dict[str, float]


def scope_of(searcher: Searcher, visible: Query, fields: Iterable[str]) -> Scope:
    """The `Scope` of the documents matching `visible` (one pass per field)."""
    docs = frozenset(searcher.docs_for_query(visible))
    length = searcher.reader().doc_field_length
    rows = len(docs) or 1
    return Scope(docs, {f: sum(length(d, f, 0) or 0 for d in docs) / rows for f in fields})


def held_by(searcher: Searcher, scope: Scope, field: str, text: Any) -> int:
    """How many of the scope's documents hold `text` in `field`."""
    if (field, text) not in searcher.reader():
        return 0
    return sum(1 for d in searcher.postings(field, text).all_ids() if d in scope.docs)


class ScopedBM25F(BM25F):  # type: ignore[misc]
    """BM25F (B 0.75, K1 1.2, Whoosh's defaults) over `scope`'s figures;
    `frequency(field, text)` is how many of its documents hold a term."""

    def __init__(self, scope: Scope, frequency: Callable[[str, Any], int]) -> None:
        super().__init__()
        self.scope = scope
        self.frequency = frequency

    def idf(self, searcher: Searcher, fieldname: str, text: Any) -> float:
        """Whoosh's log(N / (df + 1)) + 1, over the scope."""
        return log(len(self.scope.docs) / (self.frequency(fieldname, text) + 1)) + 1

    def scorer(self, searcher: Searcher, fieldname: str, text: Any, qf: int = 1) -> Any:
        if not searcher.schema[fieldname].scorable:
            return WeightScorer.for_(searcher, fieldname, text)
        scorer = BM25FScorer.__new__(BM25FScorer)
        scorer.idf = self.idf(searcher, fieldname, text)
        scorer.avgfl = self.scope.lengths.get(fieldname) or 1
        scorer.B, scorer.K1, scorer.qf = self.B, self.K1, qf
        scorer.setup(searcher, fieldname, text)
        return scorer
