"""BM25F on PostgreSQL's full-text search: weights, lengths, document frequencies.

The pieces of `pg_text_index`'s scoring (BM25F: Robertson, Zaragoza and
Taylor 2004, "Simple BM25 extension to multiple weighted fields"; BM25:
Robertson and Zaragoza 2009, "The Probabilistic Relevance Framework: BM25
and Beyond"). A word's weighted term frequency comes from `ts_rank_cd` of
that word alone with normalisation 0, which sums the field weights of its
occurrences; a row's length is its words counted at their field's weight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from recall import background
from recall.bm25 import Bm25F
from recall.bm25 import idf as bm25_idf
from recall.types import Visible

# Field weights, in ts_rank_cd's order {D, C, B, A}: context, body, description and tags,
# name and title. A word's term frequency and a row's length both count each word at its
# field's weight (BM25F). The parameters follow the embedded profile's scorer
# (`recall.bm25`): the item's own text at 1 whatever its field, the neighbour turns' text
# at 0.45 (one field here, the 0.5 / 0.35 of distance 1 and 2 there), b 0.4 for short
# memories, each query word weighted idf^0.5 on top of its idf (`QUERY_IDF_POWER`).
# Measured with `manage.py bench quality --profile both`: these moved the PostgreSQL
# fused default on LoCoMo turns from 0.774 / 0.563 to 0.806 / 0.606 R@10 / nDCG@10
# (embedded 0.800 / 0.605); the earlier (0.1, 0.4, 0.6, 1.0) and b 0.75 had been chosen
# before the embedded scorer was. Changing them changes the rows' lengths: rows written
# under other weights read as drift (`pg_text_index.LENGTHS`) until rewritten.
WEIGHTS = (0.45, 1.0, 1.0, 1.0)
FIELD_WEIGHT = dict(zip("DCBA", WEIGHTS, strict=True))
K1 = 1.2  # term-frequency saturation (Robertson and Zaragoza 2009, section 3.3)
B = 0.4  # how far a row's length against the average scales its term frequency
QUERY_IDF_POWER = 0.5  # a query word's weight: idf ** (1 + this), each word counted once
PRIOR_ROWS = Bm25F().prior_rows  # rows of general English each idf leans on (`recall.background`)


def weighted_length(fields: dict[str, str]) -> float:
    """A row's BM25F length: its words counted at their field's weight (`fields`: weight
    letter -> the field's index text)."""
    return sum(FIELD_WEIGHT[w] * len(text.split()) for w, text in fields.items())


def bm25(idf: float, tf: float, length: float, average: float) -> float:
    """One word's BM25 score (Robertson and Zaragoza 2009, eq. 3.15), in Python as in SQL.

    idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average)).
    """
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / (average or 1.0)))


def norm_sql(average: float) -> sql.Composable:
    """A row's `norm` column: K1 * (1 - B + B * doclen / average), as `bm25` divides by."""
    return sql.SQL("{k1} * (1 - {b} + {b} * doclen / {avg}) AS norm").format(
        k1=sql.Literal(K1), b=sql.Literal(B), avg=sql.Literal(average or 1.0)
    )


def bm25_sql(idf: float, tf: str) -> sql.Composable:
    """`bm25` in SQL over a row's term frequency column `tf` and its `norm` column."""
    return sql.SQL("{idf} * {tf} * {k1plus} / ({tf} + norm)").format(
        idf=sql.Literal(idf), tf=sql.Identifier(tf), k1plus=sql.Literal(K1 + 1)
    )


class DocumentFrequencies:
    """Each word's document frequency, the row count and the average weighted length,
    for IDF and BM25's length normalisation, cached for `ttl_s`.

    All three are counted over the projects the search may see (`Filter.visible`,
    `recall.indexes.scope_statistics` says why), kept per scope.

    Counting a word's rows through the GIN index is cheap for a rare word
    and costs milliseconds for one in most rows, so counts are kept a while:
    IDF only weighs words against each other, and a count a minute old
    weighs them the same. The row count and the average length are full
    scans (about 4 ms each at 10k rows), so this process's own writes drop
    the cache only while the table holds fewer than `EXACT_BELOW` rows, where
    one write moves IDF visibly and a recount is cheap; past that a write
    moves the row count by under 0.1% and the counts live out their `ttl_s`
    (a write-heavy server would otherwise rescan the table on every search).
    Words in more than `COMMON_SHARE` of the rows (of a table holding more
    than `COMMON_MIN`) are common: they score but select no rows (see
    `PgTextIndex._scoring`), as tantivy's prefix expansions skip them.
    """

    COMMON_SHARE = 0.2
    COMMON_MIN = 1000
    EXACT_BELOW = 1000
    ROWS = ""  # cache keys of the table-wide figures (no query word is empty or has a space)
    AVERAGE = " average"

    def __init__(self, config: str, ttl_s: float = 60.0) -> None:
        self.config = config
        self.ttl_s = ttl_s
        self._counts: dict[tuple[Visible, str], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """After a write by this process: forget the counts of a small table (see class)."""
        with self._lock:
            rows = [c for (_, k), (c, _) in self._counts.items() if k == self.ROWS]
            if not rows or max(rows) < self.EXACT_BELOW:
                self._counts.clear()

    def idf(
        self,
        cur: Any,
        table: sql.Identifier,
        query: Sequence[str],
        typed: str | None,
        visible: Visible = None,
    ) -> tuple[dict[str, tuple[float, bool]], float]:
        """word (and the typed prefix) -> (BM25 idf, whether it is common); the average length.

        idf = ln(1 + (N - df + 0.5) / (df + 0.5)), Lucene's non-negative form of
        Robertson and Sparck Jones's weight, each df and N also counting
        `PRIOR_ROWS` rows of general English (`recall.background`; the typed
        prefix counts as a rare word).
        """
        keys = [self.ROWS, self.AVERAGE, *query, *([typed] if typed is not None else [])]
        now = time.monotonic()
        with self._lock:
            known = {}
            for k in keys:
                kept = self._counts.get((visible, k))
                if kept is not None and now - kept[1] < self.ttl_s:
                    known[k] = kept[0]
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        if missing:
            counted = self._count(cur, table, missing, typed, visible)
            known.update(zip(missing, counted, strict=True))
            with self._lock:
                self._counts.update({(visible, k): (known[k], now) for k in missing})
        total, average = known[self.ROWS], known[self.AVERAGE]
        prior = background.Prior(background.term_frequencies(query, _itself), average)
        out: dict[str, tuple[float, bool]] = {}
        for key in keys[2:]:
            df = min(known[key], total)
            idf = bm25_idf(df + PRIOR_ROWS * prior.share(key), total + PRIOR_ROWS)
            common = total > self.COMMON_MIN and df > self.COMMON_SHARE * total
            out[key] = (idf, common)
        return out, average

    def _count(
        self, cur: Any, table: sql.Identifier, keys: list[str], typed: str | None, visible: Visible
    ) -> list[float]:
        seen, seen_params = _visible_sql(visible)
        parts: list[sql.Composable] = []
        params: list[Any] = []
        for key in keys:
            if key == self.ROWS:
                part = "(SELECT count(*) FROM {t} WHERE {seen})"
            elif key == self.AVERAGE:
                part = "(SELECT coalesce(avg(doclen), 0) FROM {t} WHERE {seen})"
            elif key == typed:
                part = (
                    "(SELECT count(*) FROM {t} WHERE words @@ to_tsquery('simple', %s) AND {seen})"
                )
                params.append(key)
            else:
                part = "(SELECT count(*) FROM {t} WHERE document @@ to_tsquery({c}, %s)"
                part += " AND {seen})"
                params.append(key)
            parts.append(sql.SQL(part).format(t=table, c=sql.Literal(self.config), seen=seen))
            params.extend(seen_params)
        cur.execute(sql.SQL("SELECT {}").format(sql.SQL(", ").join(parts)), params)
        row = cur.fetchone()
        return [float(v) for v in row] if row else [0.0] * len(keys)


def _visible_sql(visible: Visible) -> tuple[sql.Composable, list[Any]]:
    """The rows of the projects a search may see (`Filter.visible`; NULL: global)."""
    if visible is None:
        return sql.SQL("TRUE"), []
    projects, include_global = visible
    if include_global:
        return sql.SQL("(project = ANY(%s) OR project IS NULL)"), [list(projects)]
    return sql.SQL("project = ANY(%s)"), [list(projects)]


def _itself(word: str) -> tuple[str]:
    """A query word as its own term (PostgreSQL's `simple` lexemes are the words)."""
    return (word,)
