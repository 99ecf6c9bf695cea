"""The vector plane on PostgreSQL with pgvector: cosine search, filters in the same query.

One table (default `recall_vectors`): id, item, project (NULL = global),
active, kind, model, updated, fingerprint, `text_hash` (what was embedded,
with the model: `Doc.embedding_hash`) and `embedding vector(dims)`, with
an HNSW index on cosine distance (Malkov and Yashunin 2018, "Efficient and
robust approximate nearest neighbor search using Hierarchical Navigable
Small World graphs", IEEE TPAMI; pgvector's `vector_cosine_ops`).

Scope and validity are a WHERE clause of the same query. An HNSW scan
filtered afterwards would return fewer rows than asked when the filter
drops the nearest ones, so searches turn on pgvector's iterative index scans
(`hnsw.iterative_scan = relaxed_order`, pgvector 0.8): the scan goes on until
`limit` rows pass the filter (up to `hnsw.max_scan_tuples`), and the rows
are then put in exact distance order, ties by id. When the tie at the cut
may reach past the fetched rows, the tied rows are read exactly, so ties
break by id whatever the index returned first. The planner still picks an
exact scan when the filter is selective enough to make it cheaper.

Connections: owned or borrowed (`recall.indexes.pg_connection`); with a
borrowed connection an upsert joins the caller's transaction. One table holds
one embedding model's vectors, as with LanceDB: rows of another model raise
ConfigError until the table is cleared. `hashed_vectors` hands the vectors
back by text hash, so a reindex copies what the model already computed
instead of embedding every text again (as the LanceDB plane's does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from recall.errors import ConfigError
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
from recall.ports import Vectors
from recall.types import Candidate, Filter, VectorRow

MAX_DIMS = 2000  # pgvector's limit for an HNSW index on `vector`
_TIE_PAD = 8


def vector_literal(values: Sequence[float] | np.ndarray[Any, Any]) -> str:
    """pgvector's text form of a vector: `[x1,x2,...]` with round-trip float32 digits."""
    array = np.asarray(values, dtype=np.float32)
    return "[" + ",".join(repr(float(x)) for x in array.tolist()) + "]"


def parse_vector(text: str) -> npt.NDArray[np.float32]:
    """A vector from pgvector's text form (`vector_literal`'s inverse)."""
    return np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)


class PgVectorIndex(PgTable):
    """A VectorIndex on a PostgreSQL table with pgvector (see the module docstring).

    `dsn` names the database; `borrow`, when given, returns the caller's
    connection for every statement (writes join its transaction); `table` is
    the table's name; `dims` the vector length. `ef_search` is HNSW's
    candidate list per search (pgvector's default is 40; a larger one finds
    more of the true neighbours for a little more time), `m` and
    `ef_construction` shape the graph when the index is built.
    """

    def __init__(
        self,
        *,
        dims: int,
        dsn: str,
        borrow: Borrow | None = None,
        table: str = "recall_vectors",
        ef_search: int = 100,
        m: int = 16,
        ef_construction: int = 64,
    ) -> None:
        if not 1 <= dims <= MAX_DIMS:
            raise ValueError(f"dims must be between 1 and {MAX_DIMS}, got {dims}")
        if ef_search < 1 or m < 2 or ef_construction < 2 * m:
            raise ValueError(
                f"bad HNSW settings: ef_search={ef_search}, m={m}, "
                f"ef_construction={ef_construction}"
            )
        self.dims = dims
        self.table = table_name(table)
        self.ef_search = ef_search
        self._m = m
        self._ef_construction = ef_construction
        self._db = Connections(dsn, borrow=borrow, label=f"vector table {self.table}")

    # -- schema ---------------------------------------------------------------

    def _ddl(self) -> list[Statement]:
        t = sql.Identifier(self.table)
        return [
            sql.SQL("CREATE EXTENSION IF NOT EXISTS vector"),
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} ("
                " id text PRIMARY KEY, item text NOT NULL, project text,"
                " active boolean NOT NULL, kind text NOT NULL, model text NOT NULL,"
                " updated timestamptz, fingerprint text NOT NULL DEFAULT '',"
                " embedding vector({dims}) NOT NULL)"
            ).format(t=t, dims=sql.Literal(self.dims)),
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
                " WITH (m = {m}, ef_construction = {ef})"
            ).format(
                i=sql.Identifier(f"{self.table}_hnsw"),
                t=t,
                m=sql.Literal(self._m),
                ef=sql.Literal(self._ef_construction),
            ),
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (project, kind)").format(
                i=sql.Identifier(f"{self.table}_scope"), t=t
            ),
            *attribute_ddl(self.table),
            sql.SQL(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS text_hash text NOT NULL DEFAULT ''"
            ).format(t=t),
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (text_hash)").format(
                i=sql.Identifier(f"{self.table}_text_hash"), t=t
            ),
        ]

    def _ready(self) -> sql.Identifier:
        """The table, made on first use; ConfigError when it holds another dimension."""
        made = [self.table, *(f"{self.table}_{i}" for i in ("hnsw", "scope", "tags", "text_hash"))]
        self._db.ensure(self.table, self._ddl, relations=made, verify=self._check_dims)
        return sql.Identifier(self.table)

    def _check_dims(self, conn: psycopg.Connection[Any]) -> None:
        found = conn.execute(
            "SELECT atttypmod FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            (self.table,),
        ).fetchone()
        if found is not None and int(found[0]) != self.dims:
            raise ConfigError(
                f"the vector table {self.table} holds {found[0]} dims, the embedder makes "
                f"{self.dims}: drop it and reindex (manage.py reindex)"
            )

    # -- writes ---------------------------------------------------------------

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Replace rows by id in one statement (one row per id, whoever writes)."""
        if not rows:
            return
        latest = {r.id: r for r in rows}  # the last version of an id in the batch wins
        models = {r.model for r in latest.values()}
        if len(models) > 1:
            raise ConfigError(f"one upsert mixes embedding models: {sorted(models)}")
        for r in latest.values():
            if len(r.vector) != self.dims:
                raise ValueError(
                    f"vector of {r.id!r} has {len(r.vector)} dims, expected {self.dims}"
                )
            if not np.all(np.isfinite(r.vector)):
                raise ValueError(f"vector of {r.id!r} is not finite")
        t = self._ready()
        (model,) = models
        stored = self.stored_model()
        if stored is not None and stored != model:
            raise ConfigError(
                f"the vector table {self.table} holds {stored!r} vectors, not {model!r}: "
                "clear it and reindex (manage.py reindex)"
            )
        statement = sql.SQL(
            "INSERT INTO {t} (id, item, project, active, kind, model, updated, fingerprint,"
            " text_hash, embedding, tags, agent_id, session_id, importance, created)"
            " SELECT id, item, project, active, kind, model, updated, fingerprint, text_hash,"
            " embedding, ARRAY(SELECT jsonb_array_elements_text(tags)), agent_id, session_id,"
            " importance, created FROM unnest(%s::text[], %s::text[], %s::text[],"
            " %s::boolean[], %s::text[], %s::text[], %s::timestamptz[], %s::text[], %s::text[],"
            " %s::vector[], %s::jsonb[], %s::text[], %s::text[], %s::float8[],"
            " %s::timestamptz[]) AS u(id, item, project, active, kind, model, updated,"
            " fingerprint, text_hash, embedding, tags, agent_id, session_id, importance,"
            " created)"
            " ON CONFLICT (id) DO UPDATE SET item = excluded.item, project = excluded.project,"
            " active = excluded.active, kind = excluded.kind, model = excluded.model,"
            " updated = excluded.updated, fingerprint = excluded.fingerprint,"
            " text_hash = excluded.text_hash, embedding = excluded.embedding, tags = excluded.tags,"
            " agent_id = excluded.agent_id, session_id = excluded.session_id,"
            " importance = excluded.importance, created = excluded.created"
        ).format(t=t)
        ordered = sorted(latest.values(), key=lambda r: r.id)  # one lock order for every writer
        columns = [
            [r.id for r in ordered],
            [r.item for r in ordered],
            [r.project for r in ordered],
            [r.active for r in ordered],
            [r.kind for r in ordered],
            [r.model for r in ordered],
            [r.updated for r in ordered],
            [r.fingerprint for r in ordered],
            [r.text_hash for r in ordered],
            [vector_literal(r.vector) for r in ordered],
            *attribute_values(ordered),
        ]
        with self._db.cursor() as cur:
            cur.execute(statement, columns)

    # -- reads ----------------------------------------------------------------

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]:
        """The `limit` nearest rows in scope, by cosine similarity, ties by id."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dims:
            raise ValueError(f"query vector has {query.shape[0]} dims, expected {self.dims}")
        if limit <= 0:
            return []
        t = self._ready()
        predicate, params = filter_sql(where)
        literal = vector_literal(query)
        fetch = limit + _TIE_PAD
        nearest = sql.SQL(
            "WITH nearest AS MATERIALIZED (SELECT id, embedding <=> %s::vector AS distance"
            " FROM {t} WHERE {p} ORDER BY distance LIMIT %s)"
            " SELECT id, distance FROM nearest ORDER BY distance, id"
        ).format(t=t, p=predicate)
        with self._db.cursor() as cur:
            cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(self.ef_search),))
            cur.execute(nearest, [literal, *params, fetch])
            found: list[tuple[str, float]] = [(r[0], float(r[1])) for r in cur.fetchall()]
            if len(found) == fetch and found[-1][1] <= found[limit - 1][1]:
                # The tie at the cut may go on past the fetched rows: read it exactly.
                cut = found[limit - 1][1]
                tied = sql.SQL(
                    "SELECT id, embedding <=> %s::vector AS distance FROM {t}"
                    " WHERE {p} AND (embedding <=> %s::vector) <= %s"
                    " ORDER BY distance, id LIMIT %s"
                ).format(t=t, p=predicate)
                cur.execute(tied, [literal, *params, literal, cut, limit])
                found = [(r[0], float(r[1])) for r in cur.fetchall()]
        return [
            Candidate(id=i, rank=n, score=1.0 - distance)
            for n, (i, distance) in enumerate(found[:limit], 1)
        ]

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vector of each of these ids the table holds (one read)."""
        if not ids:
            return {}
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(
                sql.SQL("SELECT id, embedding::text FROM {t} WHERE id = ANY(%s)").format(t=t),
                (list(ids),),
            )
            return {r[0]: parse_vector(r[1]) for r in cur.fetchall()}

    def hashed_vectors(self) -> dict[str, npt.NDArray[np.float32]]:
        """Every stored vector by the hash of the text it embeds (`VectorRow.text_hash`;
        rows written before the column existed have none and are left out).

        Read in pgvector's binary form (a 4-byte header, then big-endian
        float4s): 20,000 vectors of 384 dims in 0.37 s, where parsing the text
        form took 5.4 s (and `real[]` 3.7 s).
        """
        t = self._ready()
        query = sql.SQL(
            "SELECT DISTINCT ON (text_hash) text_hash, embedding FROM {t} WHERE text_hash <> ''"
        ).format(t=t)
        with self._db.cursor(binary=True) as cur:
            cur.execute(query, binary=True)
            return {
                h: np.frombuffer(raw, dtype=">f4", offset=4).astype(np.float32)
                for h, raw in cur.fetchall()
            }

    def stored_model(self) -> str | None:
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("SELECT model FROM {t} LIMIT 1").format(t=t))
            found = cur.fetchone()
        return str(found[0]) if found else None
