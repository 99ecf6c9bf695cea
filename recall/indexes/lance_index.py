"""The vector plane on LanceDB: cosine search with a SQL prefilter.

One table of rows (id, item, project, active, kind, updated, model, fp, seq,
th, tags, agent_id, session_id, importance, created, vector); a global item
has a null project; `tags` ... `created` are what Recall's attribute filters
read (`created` in microseconds since the epoch, null when unknown); `fp` is the row's
`VectorRow.fingerprint`, which `index_status` compares with the database,
and `th` its `VectorRow.text_hash` (a reindex reuses vectors by it).
`seq` orders writes: every upsert stamps its rows, under the write lock, with
a number above every earlier one, so a reader that has seen up to `seq` s
reads what changed since with `changes(s)` (the in-process copy does).
Scope and validity become a SQL `where` applied as a prefilter, so they act
before the limit. Small tables are scanned exactly; once a table holds more
than `index_threshold` rows an IVF_HNSW_SQ index (Malkov and Yashunin 2018, "Efficient and robust
approximate nearest neighbor search using Hierarchical Navigable Small World
graphs", IEEE TPAMI; inverted-file partitions, scalar-quantised vectors) is
built, and LanceDB still scans rows written after it exactly until
`optimize()` folds them in.

`import lancedb` costs one to two seconds (1.3 s here once the REST client it
never calls is deferred: `_lancedb`), so it happens on first use, never
when this module is imported. The connection and table handle are opened
once and kept.

One table holds one embedding model's vectors: upserting rows of another
model raises ConfigError (a model change means `clear()` and re-embedding).

Writes (`upsert`, `delete`, `clear`, `build_index`, `optimize`) hold an OS
file lock on `<path>/.write.lock`: LanceDB's merge-insert is not atomic
across processes, and two gunicorn workers upserting the same id at once left
two rows for it. A directory written in an older layout (see
`recall.indexes.layout`) is cleared on open, to be rebuilt from the database.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall.errors import ConfigError, IndexUnavailable, RecallError
from recall.indexes import layout, lazy_package
from recall.locks import FileLock
from recall.ports import Vectors
from recall.types import (
    EPOCH,
    MEMORY,
    Candidate,
    Facets,
    Filter,
    VectorBlock,
    VectorRow,
    micros,
)

_DELETE_CHUNK = 500
_TIE_PAD = 8
_EF_BUILD = 150
_PARTITION_ROWS = 25_000
# layout.VERSION 2 plus the `seq` and `th` columns (3), plus the filter columns
# `tags`, `agent_id`, `session_id`, `importance` and `created` (4).
LAYOUT = 4


def sql_string(value: str) -> str:
    """A SQL string literal: single quotes doubled, NUL refused."""
    if "\x00" in value:
        raise ValueError(f"NUL character in filter value {value!r}")
    return "'" + value.replace("'", "''") + "'"


def _lancedb() -> Any:
    """`import lancedb`, its REST client's package `__init__` left to first use
    (`recall.indexes.lazy_package`: 1.7 s and 12 MB less per process)."""
    lazy_package.defer_init("lance_namespace_urllib3_client")
    import lancedb

    return lancedb


def _scalar_indexes(table: Any, *, missing_only: bool) -> None:
    """The indexes beside the vectors' (built with it, once a table is large).

    Bitmaps on project and active serve the search's prefilter. B-trees on id
    and seq find a merge-insert's and a delete's rows and the rows written
    since a copy last looked (`changes`) without scanning the table: at
    100,000 rows a 6-row merge-insert took 17.6 ms p50 without one and 5.7
    with it, a read of `seq > s` 7.0 and 2.2 ms.
    """
    from lancedb.index import Bitmap, BTree

    have = {c for i in table.list_indices() for c in i.columns} if missing_only else set()
    for column, config in (("project", Bitmap()), ("active", Bitmap()), ("id", BTree()),
                           ("seq", BTree())):  # fmt: skip
        if column not in have:
            table.create_index(column, config=config, replace=True)


def _in_list(column: str, values: Sequence[str]) -> str:
    if not values:
        return "false"
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


def where_sql(where: Filter) -> str | None:
    """Translate a Filter into a LanceDB SQL predicate (None: no filter)."""
    clauses: list[str] = []
    if where.active_only:
        clauses.append("active = true")
    if where.items is not None:
        clauses.append(_in_list("item", where.items))
    if where.kinds is not None:
        clauses.append(_in_list("kind", where.kinds))
    scope = _scope_sql(where)
    if scope is not None:
        clauses.append(scope)
    if where.narrowed:
        clauses.extend(_attribute_sql(where))
    return " AND ".join(clauses) or None


def _attribute_sql(where: Filter) -> list[str]:
    """Recall's attribute filters (tags ... until) as SQL (mirrors `Filter.admits`)."""
    clauses: list[str] = []
    if where.memories_only:
        clauses.append(f"item = {sql_string(MEMORY)}")
    for column in ("agent_id", "session_id"):
        value = getattr(where, column)
        if value is not None:
            clauses.append(f"{column} = {sql_string(value)}")
    for test, tags in (("array_has_all", where.tags), ("array_has_any", where.any_tags)):
        if tags:
            clauses.append(f"{test}(tags, [{', '.join(sql_string(t) for t in tags)}])")
    if where.min_importance is not None:
        clauses.append(f"importance >= {float(where.min_importance)!r}")
    if where.since is not None:
        clauses.append(f"created >= {micros(where.since)}")
    if where.until is not None:
        clauses.append(f"created <= {micros(where.until)}")
    return clauses


def _scope_sql(where: Filter) -> str | None:
    if where.projects is None:
        return None if where.include_global else "project IS NOT NULL"
    projects = _in_list("project", where.projects)
    if where.include_global:
        return f"({projects} OR project IS NULL)"
    return projects


def _schema(dims: int) -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("item", pa.string(), nullable=False),
            pa.field("project", pa.string(), nullable=True),
            pa.field("active", pa.bool_(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("updated", pa.timestamp("us", tz="UTC"), nullable=True),
            pa.field("model", pa.string(), nullable=False),
            pa.field("fp", pa.string(), nullable=False),
            pa.field("seq", pa.int64(), nullable=False),
            pa.field("th", pa.string(), nullable=False),
            pa.field("tags", pa.list_(pa.string()), nullable=False),
            pa.field("agent_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("importance", pa.float64(), nullable=False),
            pa.field("created", pa.int64(), nullable=True),
            pa.field("vector", pa.list_(pa.float32(), dims), nullable=False),
        ]
    )


_FACETS = ("tags", "agent_id", "session_id", "importance", "created")
_BLOCK_COLUMNS = ("id", "item", "project", "active", "kind", "fp", "seq", "th", *_FACETS, "vector")


def _block(data: Any, dims: int) -> VectorBlock:
    """An Arrow table or record batch of `_BLOCK_COLUMNS` as a VectorBlock."""
    vectors = data.column("vector")
    if hasattr(vectors, "combine_chunks"):
        vectors = vectors.combine_chunks()
    flat = vectors.flatten().to_numpy(zero_copy_only=False)
    seqs = data.column("seq").to_numpy()
    return VectorBlock(
        ids=[str(v) for v in data.column("id").to_pylist()],
        items=[str(v) for v in data.column("item").to_pylist()],
        projects=data.column("project").to_pylist(),
        active=[bool(v) for v in data.column("active").to_pylist()],
        kinds=[str(v) for v in data.column("kind").to_pylist()],
        fingerprints=[str(v) for v in data.column("fp").to_pylist()],
        vectors=np.asarray(flat, dtype=np.float32).reshape(data.num_rows, dims),
        high_water=int(seqs.max()) if len(seqs) else 0,
        text_hashes=[str(v) for v in data.column("th").to_pylist()],
        facets=[
            Facets(tuple(tags or ()), agent, session, float(importance), _instant(created))
            for tags, agent, session, importance, created in zip(
                *(data.column(c).to_pylist() for c in _FACETS), strict=True
            )
        ],
    )


PARTITION_READS = 64  # past this many (project, active) partitions, `blocks` reads the table whole


def _partition_order(partition: dict[str, Any]) -> tuple[bool, str, bool]:
    """Global first, then projects by slug; inactive rows before active ones."""
    project = partition["project"]
    return project is not None, project or "", bool(partition["active"])


def _instant(stamp: int | None) -> datetime | None:
    """Microseconds since the epoch back as an aware instant (None stays None)."""
    return None if stamp is None else EPOCH + timedelta(microseconds=stamp)


def hashed_vectors(path: Path, *, table: str = "items", batch: int = 8192) -> dict[str, Vectors]:
    """A LanceDB vector directory's vectors by text hash, in any layout that has the
    hash column (3 on), read as it is: never prepared, so never cleared.

    What a rebuild reuses instead of embedding again (`console.indexing.vectors_in`):
    another deployment's table, or this plane's own table from before a layout
    change (`layout.previous`). Empty when there is no such table or column.
    """
    lancedb = _lancedb()
    if not path.is_dir():
        return {}
    try:
        handle = lancedb.connect(path).open_table(table)
    except (ValueError, FileNotFoundError, OSError):
        return {}
    if "th" not in handle.schema.names or "vector" not in handle.schema.names:
        return {}
    found: dict[str, Vectors] = {}
    reader = handle.search().select(["th", "vector"]).limit(None).to_batches(batch)
    for part in reader:
        column = part.column("vector")
        dims = column.type.list_size
        flat = column.flatten().to_numpy(zero_copy_only=False)
        matrix = np.asarray(flat, dtype=np.float32).reshape(part.num_rows, dims)
        hashes = part.column("th").to_pylist()
        found.update((str(h), matrix[i]) for i, h in enumerate(hashes) if h)
    return found


class LanceIndex:
    """A VectorIndex on a LanceDB directory (see the module docstring).

    `path` is the database directory (created when missing), `table` the
    table's name, `dims` the vector length, `index_threshold` the row count
    above which an ANN index is built: by the `upsert` that crosses it when
    `auto_index` is true (that call then takes seconds to minutes: about 30 s
    at 100k rows on two cores), else by the next `optimize()`. `nprobes` and `ef` tune ANN searches
    (ignored while the table is scanned exactly). `read_consistency` is how
    stale this handle may be with respect to writes by other processes
    (None: only this handle's own writes are seen). `cache_mb` bounds LanceDB's
    index and metadata caches each (None: its defaults; a process that
    searches an in-process copy instead keeps them small: 37 MB less RSS after
    reading 100k rows). `compact_every` writes of
    a handle merge the small files they added (0: never; see
    `_compact_now_and_then`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        dims: int = 384,
        table: str = "items",
        index_threshold: int = 50_000,
        auto_index: bool = True,
        nprobes: int = 20,
        ef: int = 100,
        compact_every: int = 100,
        read_consistency: timedelta | None = timedelta(seconds=1),
        cache_mb: int | None = None,
    ) -> None:
        if dims < 1:
            raise ValueError(f"dims must be >= 1, got {dims!r}")
        self.path = Path(path)
        self.dims = dims
        self.table_name = table
        self.index_threshold = index_threshold
        self.auto_index = auto_index
        self.nprobes = nprobes
        self.ef = ef
        self._consistency = read_consistency
        self.cache_mb = cache_mb
        self._lock = threading.RLock()
        self._db: Any = None
        self._table: Any = None
        self._ann: bool | None = None
        self._model: str | None = None
        self._writes = FileLock(self.path / ".write.lock")
        self.compact_every = compact_every
        self._since_compaction = 0

    # -- the VectorIndex port -------------------------------------------------

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        """Insert or replace rows by id (the last of duplicate ids wins)."""
        if not rows:
            return
        latest = list({row.id: row for row in rows}.values())
        model = self._check_model(latest)
        matrix = self._matrix(latest)
        table = self._handle()
        with self._writes.held():
            self._latest(table)
            data = self._arrow(latest, matrix, seq=time.time_ns())
            try:
                (
                    table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(data)
                )
            except Exception as exc:
                raise IndexUnavailable(f"cannot write vectors to {self.path}: {exc}") from exc
            self._model = model
            if self.auto_index:
                self._index_if_large()
            self._compact_now_and_then(table)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows by id; unknown ids are ignored."""
        unique = sorted(set(ids))
        table = self._handle()
        with self._writes.held():
            self._latest(table)
            for start in range(0, len(unique), _DELETE_CHUNK):
                chunk = unique[start : start + _DELETE_CHUNK]
                self._call(table.delete, _in_list("id", chunk), doing="delete vectors from")
            self._compact_now_and_then(table)

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]:
        """Top `limit` rows by cosine similarity among rows `where` admits."""
        if limit <= 0:
            return []
        query = self._query_vector(vector)
        predicate = where_sql(where)
        fetch = limit + _TIE_PAD
        while True:
            found = self._nearest(query, predicate, fetch)
            # A tie that runs past the fetched window could hide a smaller id.
            if len(found) < fetch or found[-1][1] < found[limit - 1][1]:
                break
            fetch *= 4
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return [Candidate(id=i, rank=n, score=s) for n, (i, s) in enumerate(found[:limit], 1)]

    def ids(self) -> set[str]:
        """Every id in the table."""
        table = self._handle()
        data = self._call(
            lambda: table.search().select(["id"]).limit(None).to_arrow(), doing="read"
        )
        return {str(v) for v in data.column("id").to_pylist()}

    def fingerprints(self) -> list[tuple[str, str]]:
        """One (id, fingerprint) pair per row."""
        table = self._handle()
        data = self._call(
            lambda: table.search().select(["id", "fp"]).limit(None).to_arrow(), doing="read"
        )
        ids, fps = data.column("id").to_pylist(), data.column("fp").to_pylist()
        return [(str(i), str(f)) for i, f in zip(ids, fps, strict=True)]

    def count(self) -> int:
        """Number of rows."""
        table = self._handle()
        return int(self._call(table.count_rows, doing="count rows of"))

    def clear(self) -> None:
        """Drop every row and index (the table is recreated empty)."""
        with self._lock, self._writes.held():
            db = self._connect()
            self._call(lambda: db.drop_table(self.table_name, ignore_missing=True), doing="drop")
            self._table = None
            self._ann = None
            self._model = None

    # -- what an in-process copy reads (recall.indexes.hot_vectors) ------------

    def version(self) -> int:
        """The table's version: it moves on every write, by any process."""
        table = self._handle()
        self._call(table.checkout_latest, doing="refresh")
        return int(self._call(lambda: table.version, doing="read the version of"))

    def block(self, ids: Sequence[str] | None = None) -> VectorBlock:
        """Every row, or the rows with these ids, as columns."""
        if ids is None:
            return self._read_block([None])
        chunks = [ids[start : start + _DELETE_CHUNK] for start in range(0, len(ids), _DELETE_CHUNK)]
        return self._read_block([_in_list("id", chunk) for chunk in chunks])

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vector of each of these ids the table holds."""
        if not ids:
            return {}
        found = self.block(list(dict.fromkeys(ids)))
        return {i: found.vectors[n] for n, i in enumerate(found.ids)}

    def hashed_vectors(self) -> dict[str, Vectors]:
        """Every stored vector by the hash of the text it embeds (rows without one left
        out): the module's `hashed_vectors` over this table, two columns a batch."""
        return hashed_vectors(self.path, table=self.table_name)

    def blocks(self, size: int) -> Iterator[VectorBlock]:
        """Every row, `size` rows at a time, one partition (project, active) after
        another, all from the table's version when the read began.

        One reader over the whole table read ahead of its consumer: at 100,000
        rows the process's peak grew 200 MB while it was drained a batch at a
        time. Read a partition at a time, what is read ahead is at most that
        partition, and a copy fills (and can trim) one partition after another.
        Each partition's read scans the table's filter columns (no scalar index:
        about 30 ms a partition at 50,000 rows on a loaded machine: 20 partitions
        1.6 s, 200 partitions 6.6 s, the table read whole 0.4 s), so past
        `PARTITION_READS` partitions the table is read whole, in one reader.
        """
        self._handle()  # opened (or created) and checked as usual
        table = self._call(self._connect().open_table, self.table_name, doing="open")
        self._call(lambda: table.checkout(table.version), doing="read")  # held at this version
        keys = self._call(
            lambda: table.search().select(["project", "active"]).limit(None).to_arrow(),
            doing="read",
        )
        partitions = keys.group_by(["project", "active"]).aggregate([]).to_pylist()
        if len(partitions) > PARTITION_READS:  # one read of the whole table, as before
            reader = self._call(
                lambda: table.search().select(list(_BLOCK_COLUMNS)).limit(None).to_batches(size),
                doing="read",
            )
            while (batch := self._call(next, reader, None, doing="read")) is not None:
                yield _block(batch, self.dims)
            return
        for partition in sorted(partitions, key=_partition_order):
            project, active = partition["project"], bool(partition["active"])
            scope = "project IS NULL" if project is None else f"project = {sql_string(project)}"
            query = (
                table.search()
                .where(f"{scope} AND active = {'true' if active else 'false'}")
                .select(list(_BLOCK_COLUMNS))
                .limit(None)
            )
            reader = self._call(lambda q=query: q.to_batches(size), doing="read")
            while (batch := self._call(next, reader, None, doing="read")) is not None:
                yield _block(batch, self.dims)  # a damaged file fails here, mid-read

    def changes(self, after: int) -> VectorBlock:
        """The rows written after sequence number `after` (see the module docstring)."""
        return self._read_block([f"seq > {int(after)}"])

    def _read_block(self, predicates: Sequence[str | None]) -> VectorBlock:
        import pyarrow as pa

        table = self._handle()
        parts: list[Any] = []
        for predicate in predicates:
            query = table.search().select(list(_BLOCK_COLUMNS)).limit(None)
            if predicate is not None:
                query = query.where(predicate)
            parts.append(self._call(query.to_arrow, doing="read"))
        return _block(pa.concat_tables(parts), self.dims)

    # -- maintenance ------------------------------------------------------------

    def build_index(self) -> None:
        """Build the ANN index on the vectors and scalar indexes for the prefilter."""
        table = self._handle()
        rows = self.count()
        partitions = max(1, -(-rows // _PARTITION_ROWS))  # HNSW graphs of <= 25k rows

        def build() -> None:
            from lancedb.index import IvfHnswSq

            config = IvfHnswSq(
                distance_type="cosine", num_partitions=partitions, ef_construction=_EF_BUILD
            )
            table.create_index("vector", config=config, replace=True)
            _scalar_indexes(table, missing_only=False)

        with self._writes.held():
            self._call(build, doing="index")
        self._ann = True

    def optimize(self, *, keep_versions: timedelta = timedelta(hours=1)) -> None:
        """Compact files, fold new rows into the indexes, prune old versions.

        Then builds the ANN index if the table has outgrown `index_threshold`:
        built on the compacted files, no compaction after it remaps it. At the
        end of a reindex of 100,000 rows written 4,096 at a time this took 40 s,
        against 83 s in the other order with 256-row batches.
        """
        table = self._handle()
        with self._writes.held():
            self._call(lambda: table.optimize(cleanup_older_than=keep_versions), doing="optimize")
            if self._ann:  # a table indexed before the id and seq B-trees gets them here
                self._call(lambda: _scalar_indexes(table, missing_only=True), doing="index")
            self._index_if_large()

    def _compact_now_and_then(self, table: Any) -> None:
        """Every `compact_every` writes of this handle, merge the small files they left.

        Each upsert or delete adds a fragment, and a search scans every one:
        after 1,000 single-row upserts on 5,000 rows a search took 107 ms
        instead of 6, an upsert 61 ms instead of 7. LanceDB's optimize also
        folds the new rows into every index, a cost that hardly depends on how
        many there are: at 100,000 rows about 190 ms after 20 writes or after
        100 (16 ms at 10,000). With the B-trees on id and seq, 100 writes
        left unmerged slow a merge-insert from 5.5 to 6.6 ms and a read of
        the rows since a sequence number from 2.5 to 2.8, hence every 100
        writes (it was 20: at 100,000 rows 9.5 ms a write, the worker's batch
        stalled behind it under load). Building the ANN index is left to
        `optimize` and `auto_index`. Old versions are kept for an hour, so a
        reader on another process's older handle still finds its files.
        """
        self._since_compaction += 1
        if self.compact_every <= 0 or self._since_compaction < self.compact_every:
            return
        self._since_compaction = 0
        keep = timedelta(hours=1)
        self._call(lambda: table.optimize(cleanup_older_than=keep), doing="compact")

    def _latest(self, table: Any) -> None:
        """Move this handle to the table's newest version (under the write lock).

        A merge-insert decides "insert" from the version the handle reads; on a
        handle that has not yet seen another process's insert of the same id,
        it appends a second row, and Lance commits the append without conflict.
        """
        self._call(table.checkout_latest, doing="refresh")

    def _index_if_large(self) -> None:
        if not self._ann and self.count() > self.index_threshold:
            self.build_index()

    def has_ann_index(self) -> bool:
        """Whether the vector column has an ANN index."""
        self._handle()
        return bool(self._ann)

    # -- internals --------------------------------------------------------------

    def _nearest(
        self, query: Vectors, predicate: str | None, fetch: int
    ) -> list[tuple[str, float]]:
        table = self._handle()

        def run() -> Any:
            builder = table.search(query, vector_column_name="vector").distance_type("cosine")
            if predicate is not None:
                builder = builder.where(predicate, prefilter=True)
            # Set even when this handle saw no index (another process may have
            # built one): the index ranks on scalar-quantised vectors, whose
            # distances are far from the true cosine, so hits are re-scored
            # exactly (refine). A flat scan ignores these settings.
            builder = builder.nprobes(self.nprobes).ef(max(self.ef, fetch)).refine_factor(1)
            return builder.select(["id", "_distance"]).limit(fetch).to_arrow()

        data = self._call(run, doing="search")
        ids = data.column("id").to_pylist()
        distances = data.column("_distance").to_numpy()
        return [(str(i), float(1.0 - d)) for i, d in zip(ids, distances, strict=True)]

    def _query_vector(self, vector: Sequence[float] | Vectors) -> Vectors:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dims:
            raise ValueError(f"query vector has {query.shape[0]} dims, index has {self.dims}")
        return query

    def _arrow(
        self, rows: Sequence[VectorRow], matrix: npt.NDArray[np.float32], *, seq: int
    ) -> Any:
        import pyarrow as pa

        vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), self.dims)
        columns = {
            "id": [r.id for r in rows],
            "item": [r.item for r in rows],
            "project": [r.project for r in rows],
            "active": [r.active for r in rows],
            "kind": [r.kind for r in rows],
            "updated": [r.updated for r in rows],
            "model": [r.model for r in rows],
            "fp": [r.fingerprint for r in rows],
            "seq": [seq] * len(rows),
            "th": [r.text_hash for r in rows],
            "tags": [list(r.tags) for r in rows],
            "agent_id": [r.agent_id for r in rows],
            "session_id": [r.session_id for r in rows],
            "importance": [float(r.importance) for r in rows],
            "created": [None if r.created is None else micros(r.created) for r in rows],
        }
        schema = _schema(self.dims)
        arrays = [pa.array(columns[f.name], type=f.type) for f in schema if f.name != "vector"]
        return pa.Table.from_arrays([*arrays, vectors], schema=schema)

    def _matrix(self, rows: Sequence[VectorRow]) -> npt.NDArray[np.float32]:
        for row in rows:
            if len(row.vector) != self.dims:
                raise ValueError(
                    f"row {row.id!r} has {len(row.vector)} dims, index has {self.dims}"
                )
        matrix = np.asarray([r.vector for r in rows], dtype=np.float32)
        if not np.isfinite(matrix).all():
            raise ValueError("vectors must be finite (NaN or infinity found)")
        return matrix

    def _check_model(self, rows: Sequence[VectorRow]) -> str:
        models = {r.model for r in rows}
        if len(models) > 1:
            raise ConfigError(f"one upsert mixes embedding models {sorted(models)}")
        (model,) = models
        stored = self.stored_model()
        if stored is not None and stored != model and self.count() > 0:
            raise ConfigError(
                f"vector table {self.path}/{self.table_name} holds {stored!r} vectors; "
                f"refusing {model!r} rows (clear the index and re-embed to switch models)"
            )
        return model

    def stored_model(self) -> str | None:
        """The embedding model of the stored rows (None when empty)."""
        if self._model is None:
            table = self._handle()
            data = self._call(
                lambda: table.search().select(["model"]).limit(1).to_arrow(), doing="read"
            )
            models = data.column("model").to_pylist()
            self._model = str(models[0]) if models else None
        return self._model

    def _handle(self) -> Any:
        table = self._table
        if table is not None:
            return table
        with self._lock:
            if self._table is None:
                self._table = self._open()
                self._ann = self._call(self._has_vector_index, doing="inspect")
            return self._table

    def _open(self) -> Any:
        db = self._connect()

        def open_or_create() -> Any:
            try:
                return db.open_table(self.table_name)
            except ValueError:  # not found (a reopen must not re-check the schema)
                return db.create_table(self.table_name, schema=_schema(self.dims), exist_ok=True)

        table = self._call(open_or_create, doing="open")
        stored = table.schema.field("vector").type.list_size
        if stored != self.dims:
            raise ConfigError(
                f"vector table {self.path}/{self.table_name} has {stored} dims, "
                f"configured for {self.dims}"
            )
        return table

    def _has_vector_index(self) -> bool:
        table = self._table
        return any("vector" in list(i.columns) for i in table.list_indices())

    def _connect(self) -> Any:
        if self._db is None:
            # Opt in to Lance's coming default now; it warns on every index read otherwise.
            os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
            lancedb = _lancedb()

            def connect() -> Any:
                # A stale layout is moved aside, not deleted: the rebuild copies its
                # vectors by text hash instead of embedding them again.
                layout.prepare(
                    self.path, "vector plane", version=LAYOUT, keep=layout.previous(self.path)
                )
                options: dict[str, Any] = {"read_consistency_interval": self._consistency}
                if self.cache_mb is not None:
                    size = self.cache_mb << 20
                    options["session"] = lancedb.Session(
                        index_cache_size_bytes=size, metadata_cache_size_bytes=size
                    )
                return lancedb.connect(self.path, **options)

            self._db = self._call(connect, doing="connect to")
        return self._db

    def _call(self, action: Any, *args: Any, doing: str) -> Any:
        try:
            return action(*args)
        except RecallError:
            raise
        except Exception as exc:
            raise IndexUnavailable(f"cannot {doing} vector table {self.path}: {exc}") from exc
