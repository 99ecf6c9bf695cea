"""The full-text plane on PostgreSQL: weighted tsvectors, GIN, filters in the same query.

One table (default `recall_text`): id, item, project (NULL = global),
active, kind, the visible text (name, title, description, body, for
snippets), fingerprint, updated, and two tsvectors, each with a GIN index:

- `document`: the words stemmed by `recall_english` (Snowball English
  without a stop list, so `not` or `the` are words like any other), weighted
  per field: A name and title, B description and tags, C body, D context
  (index-only text such as a session's previous turns; never shown);
- `words`: the visible words unstemmed (`simple`), for the palette's last
  word as a prefix (`deploym` must find "deployment", whose stem is
  `deploy`).

Text is split into words in Python exactly as the query is
(`recall.indexes.fragments.tokens`, words over 40 characters dropped) before
PostgreSQL's parser sees it, so `example.com` or `chroma-boot-race` index
their parts, as tantivy does. A query's words (`recall.query.words`, letters
and digits only, so never tsquery syntax) are OR-ed; the score is BM25F
(`PgTextIndex._scoring`): each word's weighted term frequency is
`ts_rank_cd` of that word alone with normalisation 0, which sums the field
weights of its occurrences, saturated and length-normalised against the
table's average weighted length, times its IDF. Scope and validity are in
the WHERE clause, before the limit; ties break by id.

Measured on the LoCoMo eval sets (`manage.py bench quality --profile
postgres`), BM25F scores the full-text leg a little above IDF times
`ts_rank` on average (docs/FIGURES.md), and fixes its worst case: ts_rank's
length normalisation (a division by the log of the length) let a short
document lacking a query word outrank a longer one holding them all.

Snippets come from `recall.indexes.fragments`: the hits' stored fields are
cut in Python, and a word is marked when its stem (asked of the same
dictionary, in one query per search) is a query stem, or when it starts
with the typed prefix.

Connections: owned or borrowed (`recall.indexes.pg_connection`); with a
borrowed connection a write joins the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from recall.indexes import fragments, pg_bm25
from recall.indexes.pg_bm25 import (
    WEIGHTS,
    DocumentFrequencies,
    bm25_sql,
    weighted_length,
)
from recall.indexes.pg_connection import (
    Borrow,
    Connections,
    PgTable,
    Statement,
    attribute_ddl,
    attribute_values,
    filter_sql,
    table_name,
)
from recall.query import words
from recall.types import Candidate, Doc, Filter

CONFIG = "recall_english"
DICTIONARY = "recall_english_stem"
MAX_WORD = 40
WORD_TYPES = (
    "asciiword, word, numword, asciihword, hword, numhword,"
    " hword_asciipart, hword_part, hword_numpart"
)


def index_text(text: str) -> str:
    """The words of `text` as the index sees them (no punctuation, no over-long words)."""
    return " ".join(w for w in fragments.tokens(text) if len(w) <= MAX_WORD)


def stored(text: str) -> str:
    """Text PostgreSQL can store: no NUL, no lone surrogate."""
    return text.replace("\x00", " ").encode("utf-8", errors="replace").decode("utf-8")


def config_ddl() -> list[Statement]:
    """The text search configuration: the english parser, Snowball stems, no stop list."""
    return [
        sql.SQL(
            "DO $$ BEGIN"
            " IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = {d}"
            "  AND dictnamespace = current_schema()::regnamespace) THEN"
            "  CREATE TEXT SEARCH DICTIONARY {di} (TEMPLATE = snowball, Language = english);"
            " END IF;"
            " IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = {c}"
            "  AND cfgnamespace = current_schema()::regnamespace) THEN"
            "  CREATE TEXT SEARCH CONFIGURATION {ci} (COPY = english);"
            "  ALTER TEXT SEARCH CONFIGURATION {ci} ALTER MAPPING FOR {types} WITH {di};"
            " END IF; END $$"
        ).format(
            d=sql.Literal(DICTIONARY),
            di=sql.Identifier(DICTIONARY),
            c=sql.Literal(CONFIG),
            ci=sql.Identifier(CONFIG),
            types=sql.SQL(WORD_TYPES),
        )
    ]


# The rows' lengths (`doclen`) are counted at `pg_bm25.WEIGHTS`; the stored fingerprint
# carries which weights, and a row written under others reads as drift (`fingerprints`),
# so `index_status` reports it and `sync_indexes --repair` or `reindex` rewrites it.
# w3: a kana or ideograph counts as a word of its own (`recall.query.CJK`); w4: the
# words are folded (`recall.query.fold`), so a row written before is rewritten; w5: full-width
# letters and digits are folded too.
LENGTHS = "w5"


class PgTextIndex(PgTable):
    """A TextIndex on a PostgreSQL table (see the module docstring).

    `dsn` names the database; `borrow`, when given, returns the caller's
    connection for every statement (writes join its transaction); `table` is
    the table's name; `prefix_weight` scales a prefix match against a whole
    word's; `stats_ttl_s` is how long document frequencies are reused.
    """

    def __init__(
        self,
        *,
        dsn: str,
        borrow: Borrow | None = None,
        table: str = "recall_text",
        prefix_weight: float = 0.5,
        stats_ttl_s: float = 60.0,
    ) -> None:
        if prefix_weight < 0:
            raise ValueError(f"prefix_weight must be >= 0, got {prefix_weight}")
        self.table = table_name(table)
        self.prefix_weight = prefix_weight
        self._db = Connections(dsn, borrow=borrow, label=f"text table {self.table}")
        self._stats = DocumentFrequencies(CONFIG, stats_ttl_s)

    def _ddl(self) -> list[Statement]:
        t = sql.Identifier(self.table)
        return [
            *config_ddl(),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} ("
                " id text PRIMARY KEY, item text NOT NULL, project text,"
                " active boolean NOT NULL, kind text NOT NULL, name text NOT NULL,"
                " title text NOT NULL, description text NOT NULL, body text NOT NULL,"
                " fingerprint text NOT NULL, updated timestamptz, doclen real NOT NULL,"
                " document tsvector NOT NULL, words tsvector NOT NULL)"
            ).format(t=t),
            *(
                sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin ({c})").format(
                    i=sql.Identifier(f"{self.table}_{column}"), t=t, c=sql.Identifier(column)
                )
                for column in ("document", "words")
            ),
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (project, kind)").format(
                i=sql.Identifier(f"{self.table}_scope"), t=t
            ),
            *attribute_ddl(self.table),
        ]

    def _ready(self) -> sql.Identifier:
        kinds = ("document", "words", "scope", "tags")
        made = [self.table, *(f"{self.table}_{i}" for i in kinds)]
        self._db.ensure(self.table, self._ddl, relations=made)
        return sql.Identifier(self.table)

    def fingerprints(self) -> list[tuple[str, str]]:
        """(id, fingerprint); a row whose lengths were counted at other weights (an
        older release) gets a fingerprint no database row has: drift, to rewrite."""
        out = []
        for row_id, marked in super().fingerprints():
            weights, sep, fingerprint = marked.partition(":")
            out.append((row_id, fingerprint if sep and weights == LENGTHS else f"old:{marked}"))
        return out

    # -- writes ---------------------------------------------------------------

    def upsert(self, docs: Sequence[Doc]) -> None:
        """Replace documents by id in one statement; the last version of an id in a batch wins."""
        if not docs:
            return
        t = self._ready()
        latest = sorted({d.id: d for d in docs}.values(), key=lambda d: d.id)
        statement = sql.SQL(
            "INSERT INTO {t} (id, item, project, active, kind, name, title, description, body,"
            " fingerprint, updated, doclen, document, words, tags, agent_id, session_id,"
            " importance, created)"
            " SELECT id, item, project, active, kind, name, title, description, body,"
            " fingerprint, updated, doclen,"
            " setweight(to_tsvector({c}, w_a), 'A') || setweight(to_tsvector({c}, w_b), 'B')"
            " || setweight(to_tsvector({c}, w_c), 'C') || setweight(to_tsvector({c}, w_d), 'D'),"
            " to_tsvector('simple', w_a || ' ' || w_b || ' ' || w_c),"
            " ARRAY(SELECT jsonb_array_elements_text(tags)), agent_id, session_id,"
            " importance, created"
            " FROM unnest(%s::text[], %s::text[], %s::text[], %s::boolean[], %s::text[],"
            " %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::timestamptz[],"
            " %s::real[], %s::text[], %s::text[], %s::text[], %s::text[], %s::jsonb[],"
            " %s::text[], %s::text[], %s::float8[], %s::timestamptz[])"
            " AS u(id, item, project, active, kind, name, title, description, body, fingerprint,"
            " updated, doclen, w_a, w_b, w_c, w_d, tags, agent_id, session_id, importance,"
            " created)"
            " ON CONFLICT (id) DO UPDATE SET item = excluded.item, project = excluded.project,"
            " active = excluded.active, kind = excluded.kind, name = excluded.name,"
            " title = excluded.title, description = excluded.description, body = excluded.body,"
            " fingerprint = excluded.fingerprint, updated = excluded.updated,"
            " doclen = excluded.doclen, document = excluded.document, words = excluded.words,"
            " tags = excluded.tags, agent_id = excluded.agent_id,"
            " session_id = excluded.session_id, importance = excluded.importance,"
            " created = excluded.created"
        ).format(t=t, c=sql.Literal(CONFIG))
        fields = [
            {
                "A": index_text(f"{d.name} {d.title}"),
                "B": index_text(f"{d.description} {' '.join(d.tags)}"),
                "C": index_text(d.body),
                "D": index_text(" ".join(d.context)),  # the previous turns, nearest first
            }
            for d in latest
        ]
        columns: list[list[Any]] = [
            [d.id for d in latest],
            [d.item for d in latest],
            [d.project for d in latest],
            [d.active for d in latest],
            [d.kind for d in latest],
            [stored(d.name) for d in latest],
            [stored(d.title) for d in latest],
            [stored(d.description) for d in latest],
            [stored(d.body) for d in latest],
            [f"{LENGTHS}:{d.fingerprint()}" for d in latest],
            [d.updated for d in latest],
            [weighted_length(f) for f in fields],
            *([f[w] for f in fields] for w in "ABCD"),
            *attribute_values(latest),
        ]
        with self._db.cursor() as cur:
            cur.execute(statement, columns)
        self._stats.invalidate()

    def delete(self, ids: Sequence[str]) -> None:
        super().delete(ids)
        self._stats.invalidate()

    def clear(self) -> None:
        super().clear()
        self._stats.invalidate()

    # -- reads ----------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        where: Filter,
        limit: int,
        snippets: bool = False,
        prefix: bool = False,
    ) -> list[Candidate]:
        """BM25F over the text fields, filtered by `where`, ties by id ascending."""
        query = [w for w in words(text, keep_short_last=prefix) if len(w) <= MAX_WORD]
        if not query or limit <= 0:
            return []
        t = self._ready()
        predicate, params = filter_sql(where)
        typed = query[-1] + ":*" if prefix else None
        with self._db.cursor() as cur:
            idf, average = self._stats.idf(cur, t, query, typed, where.visible)
            terms, score, match, match_params = self._scoring(query, typed, idf, average)
            fields = sql.SQL(", name, title, description, body" if snippets else "")
            statement = sql.SQL(
                "SELECT id, {score} AS score{fields} FROM (SELECT id{fields}, {terms}"
                " FROM {t} WHERE {match} AND {p}) AS hits ORDER BY score DESC, id LIMIT %s"
            ).format(score=score, terms=terms, fields=fields, t=t, match=match, p=predicate)
            cur.execute(statement, [*match_params, *params, limit])
            rows = cur.fetchall()
            marks = self._marker(cur, query, rows, prefix=prefix) if snippets and rows else None
        return [
            Candidate(
                id=row[0],
                rank=n,
                score=float(row[1]),
                snippet=(
                    fragments.snippet([row[5], row[4], row[3]], marks, fallback=row[2])
                    if marks is not None
                    else None
                ),
            )
            for n, row in enumerate(rows, 1)
        ]

    def snippets(
        self, text: str, ids: Sequence[str], *, where: Filter, prefix: bool = False
    ) -> dict[str, str]:
        """Each of `ids` that `search` finds: the snippet it gives (a page's hits
        after a deeper ranking read without them)."""
        query = [w for w in words(text, keep_short_last=prefix) if len(w) <= MAX_WORD]
        if not query or not ids:
            return {}
        t = self._ready()
        predicate, params = filter_sql(where)
        typed = query[-1] + ":*" if prefix else None
        with self._db.cursor() as cur:
            idf, average = self._stats.idf(cur, t, query, typed, where.visible)
            match, match_params = self._scoring(query, typed, idf, average)[2:]
            statement = sql.SQL(
                "SELECT id, 0, name, title, description, body FROM {t}"
                " WHERE {match} AND {p} AND id = ANY(%s)"
            ).format(t=t, match=match, p=predicate)
            cur.execute(statement, [*match_params, *params, list(ids)])
            rows = cur.fetchall()
            if not rows:
                return {}
            marks = self._marker(cur, query, rows, prefix=prefix)
        return {
            row[0]: fragments.snippet([row[5], row[4], row[3]], marks, fallback=row[2])
            for row in rows
        }

    def _scoring(
        self,
        query: list[str],
        typed: str | None,
        idf: dict[str, tuple[float, bool]],
        average: float,
    ) -> tuple[sql.Composable, sql.Composable, sql.Composable, list[Any]]:
        """Per-row terms, the score over them, and the match condition with its parameters.

        BM25F (Robertson, Zaragoza and Taylor 2004, "Simple BM25 extension to
        multiple weighted fields"): a word's term frequency is
        ts_rank_cd(WEIGHTS, document, word, 0), which for a one-word query sums
        the field weights of the word's occurrences; the row's length is its
        weighted word count (`doclen`). score = sum over query words of
        bm25(idf, tf, doclen, average) (see `bm25`), plus, for the palette's
        prefix, the same over the unstemmed words' occurrences at
        `prefix_weight`. A word in most documents still scores, but selects no
        rows unless every word is that common. The numbers (idf, weights) go in
        as literals: they are floats computed here, never user text, and the
        word itself is a literal too, escaped by psycopg.
        """
        weights = sql.Literal("{" + ",".join(str(w) for w in WEIGHTS) + "}")
        config = sql.Literal(CONFIG)
        terms: list[sql.Composable] = [pg_bm25.norm_sql(average)]
        scores: list[sql.Composable] = []
        power = 1 + pg_bm25.QUERY_IDF_POWER  # each query word once, at idf ** power
        factors = [(word, idf[word][0] ** power) for word in dict.fromkeys(query)]
        for n, (word, weight) in enumerate(factors):
            terms.append(
                sql.SQL(
                    "ts_rank_cd({w}::float4[], document, to_tsquery({c}, {q}), 0) AS {tf}"
                ).format(w=weights, c=config, q=sql.Literal(word), tf=sql.Identifier(f"tf{n}"))
            )
            scores.append(bm25_sql(weight, f"tf{n}"))
        selective = [w for w in query if not idf[w][1]]
        chosen = selective if selective or typed is not None else query
        matches: list[sql.Composable] = []
        match_params: list[Any] = []
        if chosen:
            matches.append(sql.SQL("document @@ to_tsquery({c}, %s)").format(c=config))
            match_params.append(" | ".join(chosen))
        if typed is not None:
            terms.append(
                sql.SQL(
                    "ts_rank_cd('{{1,1,1,1}}', words, to_tsquery('simple', {q}), 0) AS tfp"
                ).format(q=sql.Literal(typed))
            )
            scores.append(bm25_sql(idf[typed][0] * self.prefix_weight, "tfp"))
            matches.append(sql.SQL("words @@ to_tsquery('simple', %s)"))
            match_params.append(typed)
        return (
            sql.SQL(", ").join(terms),
            sql.SQL(" + ").join(scores),
            sql.SQL("({})").format(sql.SQL(" OR ").join(matches)),
            match_params,
        )

    def _marker(
        self, cur: Any, query: list[str], rows: Sequence[Sequence[Any]], *, prefix: bool
    ) -> Any:
        """Whether a word matched, from the stems of the query and of the hits' words.

        Only the hits' words that start with a query word's first letter are
        stemmed: Snowball English rewrites endings and keeps a word's first
        letter (even its exceptions: skies -> sky, dying -> die), so no other
        word can share a query word's stem.
        """
        initials = {w[0] for w in query}
        seen = {
            w
            for row in rows
            for text in row[3:6]
            for w in fragments.tokens(text)
            if w[0] in initials
        }
        seen |= set(query)
        cur.execute(
            sql.SQL("SELECT w, ts_lexize({d}, w) FROM unnest(%s::text[]) AS w").format(
                d=sql.Literal(DICTIONARY)
            ),
            (sorted(seen),),
        )
        stem = {w: tuple(lexemes or ()) for w, lexemes in cur.fetchall()}
        wanted = {s for w in query for s in stem.get(w, ())}
        typed = query[-1] if prefix else None

        def matched(word: str) -> bool:
            if typed is not None and word.startswith(typed):
                return True
            return any(s in wanted for s in stem.get(word, ()))

        return matched
