"""An in-process ANN copy of the vector plane: the hot path for Recall, Search and dedup.

`HotVectorIndex` wraps a durable vector plane (LanceDB) that stays the
source of the vectors. On the first search of a process it loads every row
from the plane in a background thread (searches meanwhile go to the plane),
then answers from memory, one partition per (project, active): a matrix
scanned exactly while the partition is small, through a sketch of its
principal directions once it holds `Sketching.above` rows (the best rows of
the sketch are then scored in full), a USearch HNSW graph (Malkov and
Yashunin 2018) past `exact_below`. Scores are the cosine of f32 vectors
(bfloat16 ones in a sketched partition: within about 3e-4). A filter's
scope and validity pick the partitions, so a scoped page is never short.
The rest of the filter (`items`, `kinds` and Recall's attribute filters,
tags ... until) is applied inside the partition's search, on the copy's
columns (`RowBook.admits`): under an attribute filter a flat partition
scores only the rows it admits (a mask; through the sketch's best pool of
them in a sketched partition: a `min_importance` Recall at 100,000 memories
took 32 ms as a predicate per row, 4 ms so); otherwise a search fetches
deeper until the page is full, and an HNSW partition whose whole graph was
read with the page still short scans the rows it admits exactly, so a
narrow filter (or a graph that lost rows' links to removals) never leaves
the page short.

Writes go to the plane first, then to the copy (this process reads its own
writes at once). Writes by other processes (the index worker, other
gunicorn workers) are picked up by a poller thread: every `poll_seconds` it
asks the plane for its version and, when it moved, reads the rows written
since the last look (the plane's write sequence, `changes`); a deletion
(the counts disagree) makes it compare every (id, fingerprint) pair. The lag
this adds to the worker's is about `poll_seconds` plus that read.

A copy given a `snapshots` folder maps the snapshot the index worker published
there and, with a `journal`, follows the writes journaled since instead of
polling the plane, moving to each newer snapshot published (without a journal
it polls the plane and moves to each newer snapshot too):
recall/indexes/copy_follow.py (`Follower`, a mixin).

Each row has an integer key (what a USearch graph or a flat matrix holds);
a write drops the id's row and adds it again (in its new partition if it
moved), and a dropped row's key goes to the next new row. What the copy
keeps per row beside its vector (id, partition, fingerprint, filters) is
held in columns by key (`recall.indexes.copy_rows.RowBook`).
The first load reads the plane in blocks (`blocks`), so the copy, not a
second whole table, is what stays in memory; a plane that gives them a
partition after another (LanceDB's does) lets the load trim each partition's
spare room as it moves past it and read ahead no further than one partition.
At 100,000 rows (the bench corpus's ids and filters, 2 malloc arenas, a
process that only loads the copy) the load's peak RSS was 638-657 MB, RSS
428-437 once loaded: a reader over the whole table read 200 MB ahead, every
block made several copies of its 8,192 rows, and each sketch's fit made
whole-matrix temporaries. Read a partition at a time in blocks of 2,048 rows
and fitted a chunk at a time: peak 522-527 MB, 416 once loaded.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from recall.errors import IndexUnavailable
from recall.indexes import copy_journal
from recall.indexes.copy_follow import Follower
from recall.indexes.copy_parts import Part, Sketching
from recall.indexes.copy_rows import Partition, RowBook
from recall.ports import VectorIndex, Vectors
from recall.types import Candidate, Facets, Filter, VectorBlock, VectorRow

log = logging.getLogger(__name__)
_TIE_PAD = 8
_LOAD_BLOCK = 2048  # rows read from the plane at a time on the first load
_NO_FACETS = Facets()
_SKETCHING = Sketching()  # the default
_STOPPING = threading.Event()
_THREADS: list[threading.Thread] = []


@atexit.register
def _stop_threads() -> None:
    """Let pollers finish their step before the interpreter goes (a thread left
    inside LanceDB's native code while Python finalises can crash the exit)."""
    _STOPPING.set()
    for thread in _THREADS:
        thread.join(timeout=10)


@runtime_checkable
class Replicable(Protocol):
    """What a plane offers to be copied: a version that moves on every write, rows by
    id, every row in blocks (best a partition after another: see the module
    docstring), and the rows written after a sequence number
    (`VectorBlock.high_water`)."""

    def version(self) -> int: ...

    def block(self, ids: Sequence[str] | None = None) -> VectorBlock: ...

    def blocks(self, size: int) -> Iterator[VectorBlock]: ...

    def changes(self, after: int) -> VectorBlock: ...


class HotVectorIndex(Follower):
    """A VectorIndex answering searches from memory (see the module docstring).

    `inner` is the durable plane (a VectorIndex that is also Replicable).
    `dtype` is the HNSW graphs' storage type ("f32", "f16" or "i8"),
    `connectivity` and `expansion` their degree and search breadth,
    `exact_below` the partition size searched exactly (one matrix-vector
    product: 0.21 ms at 4,600 x 384, 0.44 at 10,700, 1.31 at 32,768, 2.58 at
    65,536 on one core), `poll_seconds` how often other processes' writes are
    looked for (0: only on `refresh()`).

    The defaults, measured on the 100k benchmark corpus (eight projects of
    about 10,700 rows and 4,600 global; 300 Recall queries, top 10 against
    exact search, a busy 2-core machine): HNSW past 8,192 rows with expansion
    128 found 0.965 of the exact top 10 (search p50 1.34 ms), expansion 256
    0.990 (1.81 ms), 512 0.996 (2.54 ms). The exact scan is faster than the
    graph at 0.99 up to about 45,000 rows, finds all of the top 10 and loads
    without a graph to build (1.3 s instead of 22 s at 100k). Hence exact up
    to 32,768 rows and expansion 256 past that.

    `sketching` (`Sketching`), on the same corpus: a search over every
    project (the console's hybrid Search) read all 115,000 rows, 176 MB, for
    each query. Sketched past 8,192 rows with 96 directions and a pool of
    256, per partition of about 10,700 rows the share of the exact top 10
    found was 0.978 / 0.995 / 0.998 with 64 / 96 / 128 directions (pool 256),
    0.990 / 0.995 / 0.998 with a pool of 128 / 256 / 512 (96 directions).
    300 queries over every project: p50 / p95 10.2 / 12.7 -> 6.0 / 7.8 ms,
    all of the exact top 10 found; in one project's scope 1.35 / 2.08 ->
    1.29 / 1.71 ms, 0.997 found; the copy's bulk 178 -> 134 MB.
    `warm` loads the copy in the constructor instead of on the first search.
    `release` is called whenever the first load has trimmed partitions it
    moved past (console passes glibc's `malloc_trim`, so the load's freed
    blocks go back as it goes: at 100,000 rows the load's peak RSS, six runs
    each, median 539 -> 522 MB, range 509-560 -> 500-531).
    """

    def __init__(
        self,
        inner: VectorIndex,
        *,
        dtype: str = "f32",
        connectivity: int = 16,
        expansion: int = 256,
        exact_below: int = 32768,
        sketching: Sketching = _SKETCHING,
        poll_seconds: float = 0.2,
        warm: bool = False,
        release: Callable[[], object] | None = None,
        snapshots: Path | None = None,
        journal: bool = False,
    ) -> None:
        if not isinstance(inner, Replicable):
            raise TypeError(f"{type(inner).__name__} offers no version() and block()")
        self.inner = inner
        self._source: Replicable = inner
        self.dtype = dtype
        self.connectivity = connectivity
        self.expansion = expansion
        self.exact_below = exact_below
        self.sketching = sketching
        self.poll_seconds = poll_seconds
        self.release = release
        self.snapshots = snapshots
        # The writes' journal beside the snapshots; `_cursor` is where this copy is in
        # it while it follows it (None: it reads the plane).
        self.journal = copy_journal.Journal(snapshots) if journal and snapshots else None
        self._cursor: copy_journal.Cursor | None = None
        self._keeper = False  # this copy publishes snapshots: it reads the plane
        self._plane_folder: tuple[int, ...] | None = None  # which plane folder it follows
        self._snapshot: Path | None = None  # the snapshot the copy maps (or last mapped)
        self._pointer: tuple[int, ...] | None = None  # `CURRENT` as last looked at
        self._lock = threading.RLock()
        self._syncing = threading.Lock()  # one refresh at a time (`refresh`)
        self._book = RowBook()  # each row's id, partition, fingerprint, filters, position
        self._changes = 0  # rows put or dropped: part of `stamp`
        self._parts: dict[Partition, Part] = {}
        self._version: int | None = None  # of the plane when the copy was last synced
        self._mark = 0  # the highest write sequence number the copy holds
        self._dims: int | None = None
        self._ready = threading.Event()
        self._started_in: int | None = None  # pid whose threads load and poll
        if warm:
            self.refresh()
            self._ready.set()

    # -- the VectorIndex port ---------------------------------------------------

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        last = list({r.id: r for r in rows}.values())  # as the plane keeps them
        block = VectorBlock(
            ids=[r.id for r in last],
            items=[r.item for r in last],
            projects=[r.project for r in last],
            active=[r.active for r in last],
            kinds=[r.kind for r in last],
            fingerprints=[r.fingerprint for r in last],
            vectors=np.asarray([r.vector for r in last], dtype=np.float32),
            facets=[Facets.of(r) for r in last],
        )
        with self._journaled(lambda: copy_journal.encode_put(block)):
            self.inner.upsert(rows)
        if self._ready.is_set():
            with self._lock:
                self._put(block)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._journaled(lambda: copy_journal.encode_drop(sorted(set(ids)))):
            self.inner.delete(ids)
        if self._ready.is_set():
            with self._lock:
                for id_ in ids:
                    self._drop(id_)

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]:
        """Top `limit` rows by cosine similarity among rows `where` admits."""
        self._start()
        if not self._ready.is_set():
            return self.inner.search(vector, where=where, limit=limit)
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._dims is not None and query.shape[0] != self._dims:
            raise ValueError(f"query vector has {query.shape[0]} dims, index has {self._dims}")
        found: list[tuple[str, float]] = []
        with self._lock:
            for partition, part in self._parts.items():
                if _admits_partition(where, partition):
                    found.extend(self._search_part(partition, part, query, where, limit))
        found.sort(key=lambda pair: (-pair[1], pair[0]))
        return [Candidate(id=i, rank=n, score=s) for n, (i, s) in enumerate(found[:limit], 1)]

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """From the copy once it is loaded, else from the plane."""
        self._start()
        if not self._ready.is_set():
            return self.inner.vectors(ids)
        by_part: dict[Partition, list[tuple[str, int]]] = {}
        with self._lock:
            for i in ids:
                if (found := self._book.find(i)) is not None:
                    key, partition = found
                    by_part.setdefault(partition, []).append((i, key))
            out: dict[str, npt.NDArray[np.float32]] = {}
            for partition, pairs in by_part.items():  # one read per partition
                rows = self._parts[partition].rows([key for _, key in pairs])
                out.update(zip((i for i, _ in pairs), rows, strict=True))
            return out

    def ids(self) -> set[str]:
        return self.inner.ids()

    def fingerprints(self) -> list[tuple[str, str]]:
        return self.inner.fingerprints()

    def count(self) -> int:
        return self.inner.count()

    def clear(self) -> None:
        with self._journaled(copy_journal.encode_clear):
            self.inner.clear()
        with self._lock:
            self._book = RowBook()
            self._parts.clear()
            self._version = None
            self._changes += 1

    def stored_model(self) -> str | None:
        return self.inner.stored_model()

    def __getattr__(self, name: str) -> Any:
        """The plane's maintenance (`optimize`, `build_index`, `path`) passes through."""
        return getattr(self.inner, name)

    # -- keeping the copy current ----------------------------------------------

    def catch_up(self) -> None:
        """See, now, what other processes wrote since the last poll: a search that must
        find a write applied a moment ago elsewhere (the dedup hint: a memory the index
        worker has just applied, whose job is gone, was in neither the copy nor the
        outbox for up to `poll_seconds`). Before the copy is loaded, searches go to the
        plane, whose handle is brought to its latest version instead."""
        if self._ready.is_set():
            self.refresh()
        else:
            self._source.version()

    def refresh(self) -> int:
        """Bring the copy up to the plane's current rows; returns how many rows changed.

        Reads the rows written since the last refresh (`changes`); only when
        the row counts then disagree (a row was deleted) does it compare every
        (id, fingerprint) pair. One at a time (the poller and `catch_up`): two
        overlapping refreshes could put an older delta over a newer one.
        """
        with self._syncing:
            return self._refresh()

    def _refresh(self) -> int:
        if (followed := self._followed()) is not None:
            return followed
        version = self._source.version()
        if (moved := self._moved(version)) is not None:
            return moved
        if version == self._version:
            return 0
        if self._version is None and not self._adopted(version):
            return self._load(version)
        # Mapped from a snapshot just now, or loaded before: read what changed since.
        delta = self._source.changes(self._mark)
        with self._lock:
            self._put(delta)
            self._mark = max(self._mark, delta.high_water)
            self._version = version
            agree = len(self._book) == self.inner.count()
        return len(delta.ids) + (0 if agree else self._reconcile())

    def _load(self, version: int) -> int:
        """Read every row of the plane into the copy (the first load, with no snapshot)."""
        loaded = mark = 0
        filling: set[Partition] = set()  # the partitions the last block added to
        for block in self._source.blocks(_LOAD_BLOCK):
            touched = {(p, bool(a)) for p, a in zip(block.projects, block.active, strict=True)}
            with self._lock:
                self._put(block)
                done = [self._parts[p] for p in filling - touched if p in self._parts]
                for part in done:  # the plane has moved past them
                    part.trim()
            if done and self.release is not None:
                self.release()
            filling = touched
            loaded, mark = loaded + len(block.ids), max(mark, block.high_water)
        with self._lock:
            for part in self._parts.values():
                part.trim()
            self._version, self._mark = version, mark
        return loaded

    def _reconcile(self) -> int:
        """Drop rows the plane no longer has and reload rows whose fingerprint differs."""
        stored = dict(self.inner.fingerprints())
        with self._lock:
            gone = [i for i in self._book.names if i not in stored]
            changed = [i for i, fp in stored.items() if self._book.stale(i, fp)]
        changes = self._source.block(changed) if changed else None
        with self._lock:
            for id_ in gone:
                self._drop(id_)
            if changes is not None:
                self._put(changes)
        return len(gone) + len(changed)

    def stamp(self) -> object:
        """Which rows searches see (`recall.tiers.Stamped`): the plane's version the
        copy last caught up with; None while searches still go to the plane."""
        if not self.ready:
            return None
        with self._lock:
            return (self._version, self._mark, self._changes)

    def held_bytes(self) -> int:
        """Bytes of the partitions' vectors (or graphs), keys and norms: the copy's bulk;
        its per-row bookkeeping (ids, fingerprints, filters) comes on top."""
        with self._lock:
            return sum(part.held_bytes() for part in self._parts.values())

    @property
    def ready(self) -> bool:
        """Whether searches are answered from memory (else by the plane)."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        self._start()
        return self._ready.wait(timeout)

    def _start(self) -> None:
        """Start the loader and poller once per process (threads do not survive a fork)."""
        pid = os.getpid()
        if self._started_in == pid or (self._ready.is_set() and not self.poll_seconds):
            return
        with self._lock:
            if self._started_in == pid:
                return
            self._started_in = pid
        me = weakref.ref(self)  # the thread ends once the index is dropped
        thread = threading.Thread(target=_keep_current, args=(me,), name="hot-vectors", daemon=True)
        _THREADS[:] = [t for t in _THREADS if t.is_alive()] + [thread]
        thread.start()

    # -- the partitions -------------------------------------------------------------

    def _put(self, block: VectorBlock) -> None:
        self._changes += 1
        if not block.ids:
            return
        vectors = np.asarray(block.vectors, dtype=np.float32)
        self._dims = vectors.shape[1]
        last = {id_: row for row, id_ in enumerate(block.ids)}  # an id twice: its last row
        for id_ in last:
            self._drop(id_)
        book, adds = self._book, dict[Partition, tuple[list[int], list[int]]]()
        for id_, row in last.items():
            partition = (block.projects[row], bool(block.active[row]))
            facets = block.facets[row] if block.facets is not None else _NO_FACETS
            key = book.add(
                id_, partition, block.items[row], block.kinds[row], block.fingerprints[row],
                facets,
            )  # fmt: skip
            keys, rows = adds.setdefault(partition, ([], []))
            keys.append(key)
            rows.append(row)
        for partition, (keys, rows) in adds.items():
            self._part(partition).add(np.asarray(keys, dtype=np.uint64), vectors[rows])

    def _drop(self, id_: str) -> None:
        self._changes += 1
        found = self._book.find(id_)
        if found is None:
            return
        key, partition = found
        part = self._parts[partition]
        part.remove(key)
        self._book.drop(id_)
        if not len(part):
            del self._parts[partition]

    def _part(self, partition: Partition) -> Part:
        part = self._parts.get(partition)
        if part is None:
            part = self._parts[partition] = Part(
                self._dims or 0, self._options(), self.exact_below, self.sketching, self._book
            )
        return part

    def _options(self) -> dict[str, Any]:
        """A partition's USearch graph options."""
        return {"dtype": self.dtype, "connectivity": self.connectivity,
                "expansion_search": self.expansion}  # fmt: skip

    def _search_part(
        self,
        partition: Partition,
        part: Part,
        query: npt.NDArray[np.float32],
        where: Filter,
        limit: int,
    ) -> list[tuple[str, float]]:
        size = len(part)
        filtered = where.items is not None or where.kinds is not None or where.narrowed
        if where.narrowed and part.index is None:
            # Flat, under an attribute filter (which may admit few rows): scan only the
            # rows it admits (a mask). Scope-like filters (items, kinds) admit most
            # rows, so those keep the cheaper fetch-deeper loop below.
            keys, distances = part.search_among(
                query, self._admitted(partition, where), limit + _TIE_PAD
            )
            return self._hits(keys, distances)
        fetch = min(size, limit + _TIE_PAD)
        while True:
            keys, distances = part.search(query, fetch)
            if filtered:
                admitted = self._book.admits(keys.astype(np.int64), where)
                keys, distances = keys[admitted], distances[admitted]
            hits = self._hits(keys, distances)
            # Enough hits, unless a tie runs past the window (it could hide a smaller id).
            if len(hits) >= limit + _TIE_PAD and hits[-1][1] < hits[limit - 1][1]:
                return hits
            if fetch >= size:
                break
            fetch = min(size, fetch * 4)
        if part.index is None:  # a flat read of every row is exact
            return hits
        if not filtered and len(hits) >= min(limit, size):
            return hits
        # The whole graph was read and the page is still short (HNSW need not
        # reach every row, least of all after removals): scan the rows the filter
        # admits, exactly.
        keys, distances = part.search_among(
            query, self._admitted(partition, where), limit + _TIE_PAD
        )
        return self._hits(keys, distances)

    def _admitted(self, partition: Partition, where: Filter) -> npt.NDArray[np.int64]:
        """The keys of the partition's rows `where` admits, ascending."""
        return self._book.admitted(partition, where)

    def _hits(
        self, keys: npt.NDArray[np.uint64], distances: npt.NDArray[np.float32]
    ) -> list[tuple[str, float]]:
        ids = self._book.names.ids_of(keys)
        return list(zip(ids, (1.0 - d for d in distances.tolist()), strict=True))


def _keep_current(ref: weakref.ref[HotVectorIndex]) -> None:
    """The loader and poller: refresh, wait, repeat while the index lives."""
    failing = False
    while not _STOPPING.is_set():
        index = ref()
        if index is None:
            return
        try:
            index.refresh()
            index._ready.set()
            failing = False
        except IndexUnavailable as exc:  # a damaged or missing plane: its one line
            if not failing:
                log.warning("refreshing the in-process vector copy failed: %s", exc)
            failing = True
        except Exception:  # anything else: searches keep the copy or fall back
            if not failing:
                log.exception("refreshing the in-process vector copy failed")
            failing = True
        poll, index = index.poll_seconds, None
        if not poll or _STOPPING.wait(poll):
            return


def _admits_partition(where: Filter, partition: Partition) -> bool:
    project, active = partition
    if where.active_only and not active:
        return False
    if project is None:
        return where.include_global
    return where.projects is None or project in where.projects
