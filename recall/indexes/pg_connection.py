"""Where a PostgreSQL plane runs its statements, and how its schema is made.

A plane on PostgreSQL (`pg_text_index`, `pg_vector_index`) either owns its
connections or borrows its caller's:

- owned (`dsn` alone): one autocommit connection per thread, opened on first
  use and reopened when it breaks; each write is its own transaction. This is
  how the contract suites, the benchmarks and scripts use a plane.
- borrowed (`dsn` plus `borrow`, a callable returning the caller's live
  connection): every statement runs on that connection, inside whatever
  transaction the caller has open. The console passes Django's connection, so
  a memory's row, its full-text row and its vector commit together or not at
  all (console/pgplanes.py). When the caller has no transaction open, a write
  still runs as one transaction of its own.

A plane never commits or rolls back a borrowed transaction: psycopg's
`Connection.transaction()` is used only on a connection in autocommit mode,
where it means BEGIN ... COMMIT; inside the caller's transaction the
statements simply join it.

The schema (tables, indexes, the text search configuration, the `vector`
extension) is made once per process and table, on a short-lived connection
of its own (`dsn`), never inside a caller's transaction, so a rolled-back
request cannot take the tables with it. Concurrent processes creating it at
once are serialised by a transaction-level advisory lock (`CREATE ... IF NOT
EXISTS` alone races on the catalogue).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from recall.errors import IndexUnavailable
from recall.types import MEMORY, Filter

Borrow = Callable[[], psycopg.Connection[Any]]
Statement = sql.SQL | sql.Composed
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,47}$")
SCHEMA_LOCK = 0x7265_6361_6C6C  # "recall": one advisory lock key for every plane's DDL


def table_name(name: str) -> str:
    """A plane's table name, refused unless it is a plain lower-case identifier.

    Quoted identifiers would accept anything, but index and constraint names
    derive from the table's, and a name that needs quoting is a typo.
    """
    if not _NAME.match(name):
        raise ValueError(
            f"table must be a lower-case identifier of at most 48 characters: {name!r}"
        )
    return name


class Connections:
    """Statements for one plane: on owned connections, or on a borrowed one (see module)."""

    def __init__(self, dsn: str, *, borrow: Borrow | None = None, label: str = "plane") -> None:
        if not dsn:
            raise ValueError("a PostgreSQL plane needs a dsn (its database's connection string)")
        self.dsn = dsn
        self.borrow = borrow
        self.label = label
        self._local = threading.local()
        self._made: set[str] = set()
        self._made_lock = threading.Lock()

    @property
    def joins_caller(self) -> bool:
        """Whether writes join the caller's transaction (a borrowed connection)."""
        return self.borrow is not None

    def _owned(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = psycopg.connect(self.dsn, autocommit=True)
            self._local.conn = conn
        return conn

    @contextmanager
    def cursor(self, *, binary: bool = False) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor whose statements form one unit: the caller's transaction, or their own.

        `binary` asks for a cursor that can return binary results (a borrowed
        Django connection makes client-side cursors, which cannot). Database
        errors become IndexUnavailable (naming the plane); an owned connection
        that broke is dropped so the next call reconnects.
        """
        try:
            conn = self.borrow() if self.borrow is not None else self._owned()
            opened = psycopg.Cursor(conn) if binary else conn.cursor()
            if conn.autocommit:
                with conn.transaction(), opened as cur:
                    yield cur
            else:
                with opened as cur:
                    yield cur
        except psycopg.Error as exc:
            self._drop_broken()
            raise IndexUnavailable(f"the {self.label} cannot be used: {_first_line(exc)}") from exc

    def _drop_broken(self) -> None:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is not None and (conn.closed or conn.broken):
            self._local.conn = None

    def ensure(
        self,
        key: str,
        statements: Callable[[], Sequence[Statement]],
        *,
        relations: Sequence[str],
        verify: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        """Make the schema once per process for `key`, on a connection of its own.

        `relations` (tables and indexes) are looked up in the catalogue first,
        which takes no lock: only when one is missing do `statements` (idempotent
        DDL) run. Even `CREATE INDEX IF NOT EXISTS` locks its table before it
        finds the index there, and would wait forever behind a caller's open
        transaction that has written to it (a second plane object in the same
        request, say). `verify` then checks what is there; its error leaves
        `key` unmade.
        """
        if key in self._made:
            return
        with self._made_lock:
            if key in self._made:
                return
            try:
                with psycopg.connect(self.dsn, autocommit=True) as conn:
                    if not _all_exist(conn, relations):
                        with conn.transaction():
                            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                            for statement in statements():
                                conn.execute(statement)
                    if verify is not None:
                        verify(conn)
            except psycopg.Error as exc:
                raise IndexUnavailable(
                    f"cannot create the {self.label}'s tables: {_first_line(exc)}"
                ) from exc
            self._made.add(key)

    def forget(self, key: str) -> None:
        """Make the next `ensure(key)` run again (after the table was dropped)."""
        with self._made_lock:
            self._made.discard(key)

    def close(self) -> None:
        """Close this thread's owned connection (borrowed ones belong to the caller)."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class PgTable:
    """What both PostgreSQL planes share: one table of rows keyed by `id`, each
    with the `fingerprint` `index_status` compares. A subclass sets `table`
    and `_db` and makes its table in `_ready`."""

    table: str
    _db: Connections

    def _ready(self) -> sql.Identifier:
        raise NotImplementedError

    @property
    def joins_caller(self) -> bool:
        return self._db.joins_caller

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows by id; unknown ids are ignored."""
        if not ids:
            return
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("DELETE FROM {t} WHERE id = ANY(%s)").format(t=t), (list(ids),))

    def clear(self) -> None:
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("DELETE FROM {t}").format(t=t))

    def ids(self) -> set[str]:
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("SELECT id FROM {t}").format(t=t))
            return {r[0] for r in cur.fetchall()}

    def fingerprints(self) -> list[tuple[str, str]]:
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("SELECT id, fingerprint FROM {t}").format(t=t))
            return [(r[0], r[1]) for r in cur.fetchall()]

    def count(self) -> int:
        t = self._ready()
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("SELECT count(*) FROM {t}").format(t=t))
            found = cur.fetchone()
        return int(found[0]) if found else 0

    def drop(self) -> None:
        """Drop the table (tests, `clear --drop`); the next use makes it again."""
        with self._db.cursor() as cur:
            cur.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=sql.Identifier(self.table)))
        self._db.forget(self.table)

    def close(self) -> None:
        self._db.close()


def _all_exist(conn: psycopg.Connection[Any], relations: Sequence[str]) -> bool:
    found = conn.execute(
        "SELECT count(*) FROM unnest(%s::text[]) AS r WHERE to_regclass(r) IS NOT NULL",
        (list(relations),),
    ).fetchone()
    return found is not None and found[0] == len(relations)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# The columns Recall's attribute filters read, on both planes' tables; an
# older table gains them on first use (its rows then drift: reindex fills them).
ATTRIBUTE_COLUMNS = (
    "tags text[] NOT NULL DEFAULT '{}'",
    "agent_id text NOT NULL DEFAULT ''",
    "session_id text NOT NULL DEFAULT ''",
    "importance double precision NOT NULL DEFAULT 0.5",
    "created timestamptz",
)


class Attributed(Protocol):
    """What both planes' rows (`Doc`, `VectorRow`) carry for the attribute filters."""

    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def agent_id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def created(self) -> datetime | None: ...


def attribute_values(rows: Sequence[Attributed]) -> list[list[Any]]:
    """The attribute columns' values for an unnest insert, in the order both planes'
    inserts list them: tags (as jsonb: a text[][] cannot be ragged), agent_id,
    session_id, importance, created."""
    return [
        [Jsonb(list(r.tags)) for r in rows],
        [r.agent_id for r in rows],
        [r.session_id for r in rows],
        [float(r.importance) for r in rows],
        [r.created for r in rows],
    ]


def attribute_ddl(table: str) -> list[Statement]:
    """Add the attribute columns (idempotent) and a GIN index on `tags`."""
    t = sql.Identifier(table)
    return [
        *(
            sql.SQL("ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {c}").format(t=t, c=sql.SQL(column))
            for column in ATTRIBUTE_COLUMNS
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (tags)").format(
            i=sql.Identifier(f"{table}_tags"), t=t
        ),
    ]


def _attribute_sql(where: Filter, clauses: list[sql.Composable], params: list[Any]) -> None:
    """Recall's attribute filters (tags ... until) as clauses (mirrors `Filter.admits`)."""
    if where.memories_only:
        clauses.append(sql.SQL("item = %s"))
        params.append(MEMORY)
    for column in ("agent_id", "session_id"):
        value = getattr(where, column)
        if value is not None:
            clauses.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    if where.tags:
        clauses.append(sql.SQL("tags @> %s::text[]"))
        params.append(list(where.tags))
    if where.any_tags:
        clauses.append(sql.SQL("tags && %s::text[]"))
        params.append(list(where.any_tags))
    if where.min_importance is not None:
        clauses.append(sql.SQL("importance >= %s"))
        params.append(float(where.min_importance))
    if where.since is not None:
        clauses.append(sql.SQL("created >= %s"))
        params.append(where.since)
    if where.until is not None:
        clauses.append(sql.SQL("created <= %s"))
        params.append(where.until)


def filter_sql(where: Filter) -> tuple[sql.Composable, list[Any]]:
    """`where` as a SQL predicate over (item, project, active, kind) and its parameters.

    Mirrors `Filter.admits`; values are always parameters, never SQL text. A
    global item has a NULL project.
    """
    clauses: list[sql.Composable] = []
    params: list[Any] = []
    if where.active_only:
        clauses.append(sql.SQL("active"))
    for column, values in (("item", where.items), ("kind", where.kinds)):
        if values is not None:
            clauses.append(sql.SQL("{} = ANY(%s)").format(sql.Identifier(column)))
            params.append(list(values))
    if where.projects is not None:
        if where.include_global:
            clauses.append(sql.SQL("(project = ANY(%s) OR project IS NULL)"))
        else:
            clauses.append(sql.SQL("project = ANY(%s)"))
        params.append(list(where.projects))
    elif not where.include_global:
        clauses.append(sql.SQL("project IS NOT NULL"))
    if where.narrowed:
        _attribute_sql(where, clauses, params)
    if not clauses:
        return sql.SQL("true"), params
    return sql.SQL(" AND ").join(clauses), params
