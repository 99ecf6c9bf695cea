"""The vector copy's snapshot and journal, for `HotVectorIndex` (recall/indexes/hot_vectors.py).

Why apart: the copy (partitions, searches, the plane's polling) reads as the copy;
how it is published for other processes and how a serving process follows those
is this module's. `Follower` is a mixin `HotVectorIndex` takes: it holds no state of
its own, only methods over the copy's.

A copy given a `snapshots` folder starts from the snapshot the process that
writes the plane published there (`publish`, recall/indexes/copy_snapshot.py)
when one fits: its arrays mapped from the files (pages shared by every process
mapping them), then the plane's rows written since, read as a poll reads them.
With a `journal` too (recall/indexes/copy_journal.py), every write made through a
copy is also appended there, and a copy that mapped a snapshot follows those
records from the snapshot's position instead of polling the plane: a serving
process then never opens LanceDB in the steady state. A gap or an unreadable
record (or no snapshot) and it reads the plane, until the next snapshot is
published. A follower moves to every snapshot published after its own
(`_switched`): the rows it followed into private memory, or read from the plane,
give way to the new snapshot's shared file pages. Without a journal, a copy
that polls the plane moves to each newer snapshot too (`_moved`), then reads the
plane's rows written since it, as a poll does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from recall.indexes import copy_journal, copy_snapshot, layout
from recall.indexes.copy_parts import Part, Sketching
from recall.indexes.copy_rows import Partition, RowBook
from recall.ports import VectorIndex

if TYPE_CHECKING:
    from recall.types import VectorBlock

log = logging.getLogger(__name__)


class _Versioned(Protocol):
    def version(self) -> int: ...

    def changes(self, after: int) -> VectorBlock: ...


class Follower:
    """The snapshot and journal side of `HotVectorIndex` (see the module docstring).
    The attributes below are the copy's, set by its constructor."""

    inner: VectorIndex
    _source: _Versioned
    snapshots: Path | None
    journal: copy_journal.Journal | None
    _cursor: copy_journal.Cursor | None  # where the copy is in the journal (None: the plane)
    _keeper: bool  # this copy publishes snapshots: it reads the plane
    _plane_folder: tuple[int, ...] | None  # which plane folder it follows
    _snapshot: Path | None  # the snapshot the copy maps (or last mapped)
    _pointer: tuple[int, ...] | None  # `CURRENT` as last looked at (`_pointer_of`)
    release: Callable[[], object] | None
    _lock: threading.RLock
    _syncing: threading.Lock
    _book: RowBook
    _parts: dict[Partition, Part]
    _changes: int
    _version: int | None
    _mark: int
    _dims: int | None
    _ready: threading.Event
    dtype: str
    connectivity: int
    expansion: int
    exact_below: int
    sketching: Sketching

    if TYPE_CHECKING:  # the copy's own, which these methods call

        def _refresh(self) -> int: ...

        def _put(self, block: VectorBlock) -> None: ...

        def _drop(self, id_: str) -> None: ...

        def _reconcile(self) -> int: ...

        def _options(self) -> dict[str, Any]: ...

    @contextlib.contextmanager
    def _journaled(self, payload: Callable[[], bytes]) -> Iterator[None]:
        """Around a write to the plane: append its record once the plane took it, under
        the journal's lock (so records are in the plane's order), flushed before the
        write returns. A copy following the journal moves past its own record when
        nothing came between (it applies the write itself)."""
        if self.journal is None:
            yield
            return
        with self.journal.lock.held():
            yield
            before, after = self.journal.append(payload())
        with self._lock:
            if self._cursor == before:
                self._cursor = after

    def _followed(self) -> int | None:
        """With a journal, in a copy that does not publish: adopt a snapshot holding a
        journal position if the copy has none yet, then apply the records since; the
        rows changed, or None when the copy reads the plane instead."""
        if self.journal is None or self._keeper:
            return None
        self._switched()  # to a snapshot published since, if any: then follow it
        if self._cursor is None:
            return None
        try:
            return self._follow(self.journal.folder, self._cursor)
        except (copy_journal.Broken, OSError) as exc:
            log.warning("the vector copy stops following its journal (%s): "
                        "reading the plane", exc)  # fmt: skip
            # No plane version matches: the plane's rows written since the
            # snapshot are read, and the counts compared (a replaced plane's
            # version may equal the snapshot's).
            self._cursor, self._version = None, -1
            return None

    def _follow(self, folder: Path, cursor: copy_journal.Cursor) -> int:
        """Apply the journal's records past `cursor` (see the module docstring). A plane
        whose folder was deleted or replaced since (rebuilt from the database, which
        journals only what the new plane lacks) is read instead."""
        if _folder_identity(self.inner) != self._plane_folder:
            raise copy_journal.Broken("the vector plane's folder was replaced")
        records, moved = copy_journal.read(folder, cursor)
        with self._lock:
            if self._cursor != cursor:  # a write here moved it meanwhile: read again
                return 0
            changed = self._apply(records)
            self._cursor = moved
        return changed

    def _apply(self, records: list[copy_journal.Record]) -> int:
        """Apply journal records to the copy (under its lock); the rows they change."""
        changed = 0
        for record in records:
            if record.block is not None:
                self._put(record.block)
                changed += len(record.block.ids)
            elif record.op == "clear":
                self._book = RowBook()
                self._parts.clear()
                self._changes += 1
            for id_ in record.ids:
                self._drop(id_)
            changed += len(record.ids)
        return changed

    def _switched(self, *, again: bool = True) -> bool:
        """Map the snapshot published since the copy last looked, with the records
        journaled after it, in place of what the copy holds; whether it did.

        Why: a follower's own copy of the rows it followed (a mapped array that
        outgrew its spare room is copied whole) is private memory, and a process that
        read the plane holds every row privately; the newest snapshot holds them as
        file pages every process shares. The look is one `stat` of `CURRENT`, so the
        poller does it at every step. The new book and partitions are mapped and the
        records read before the copy's lock is taken; under it they are swapped in
        whole and the records applied, so a search (which holds the lock) sees the
        old copy or the new one, never a mix. The old arrays are only let go: a
        mapping is unmapped when nothing refers to it any more."""
        if self.snapshots is None or self.journal is None:
            return False
        pointer = _pointer_of(self.snapshots)
        if pointer is None or pointer == self._pointer:
            return False
        self._pointer = pointer
        snap = copy_snapshot.current(self.snapshots)
        if snap is None or snap.path == self._snapshot or not self._fits(snap, None):
            return False
        meta = snap.meta
        try:
            book, parts = self._mapped(snap)
            start = copy_journal.Cursor(int(meta["journal"]))
            records, moved = copy_journal.read(self.journal.folder, start)
        except FileNotFoundError:  # removed after `current` read it: a newer one is there
            self._pointer = None
            return again and self._switched(again=False)
        except copy_journal.Broken as exc:
            log.info("the vector copy's snapshot %s cannot be followed (%s)", snap.path, exc)
            return False
        folder = _folder_identity(self.inner)
        with self._lock:
            held = self._book, self._parts, self._dims
            self._book, self._parts, self._dims = book, parts, meta["dims"]
            try:
                self._apply(records)
            except BaseException:
                self._book, self._parts, self._dims = held
                raise
            self._cursor, self._plane_folder, self._snapshot = moved, folder, snap.path
            self._version, self._mark = int(meta["version"]), int(meta["mark"])
            self._changes += 1
        del held, book, parts
        if self.release is not None:
            self.release()
        return True

    def _moved(self, version: int) -> int | None:
        """Without a journal, in a copy that does not publish: map the snapshot published
        since the copy last looked, with the plane's rows written after it, in place of
        what the copy holds (at plane `version` now); the rows read, or None when
        there is none to move to.

        Why: such a copy polls the plane, and without this it kept every row it read
        or followed since its first snapshot as private memory however many
        snapshots the worker published after (at 100,000 rows a copy that read the
        plane held about 230 MB anonymous). As `_switched`: the new book and
        partitions are mapped and the plane's rows since read before the lock is
        taken, then swapped in whole; a deletion since (the counts disagree) is
        reconciled after, as a poll does."""
        if self.snapshots is None or self.journal is not None or self._keeper:
            return None
        if self._version is None:  # the first load: `_adopted` maps it
            return None
        pointer = _pointer_of(self.snapshots)
        if pointer is None or pointer == self._pointer:
            return None
        self._pointer = pointer
        snap = copy_snapshot.current(self.snapshots)
        if snap is None or snap.path == self._snapshot or not self._fits(snap, version):
            return None
        try:
            book, parts = self._mapped(snap)
        except FileNotFoundError:  # removed after `current` read it: the next look maps it
            self._pointer = None
            return None
        mark = int(snap.meta["mark"])
        delta = self._source.changes(mark)
        with self._lock:
            held = self._book, self._parts, self._dims
            self._book, self._parts, self._dims = book, parts, snap.meta["dims"]
            try:
                self._put(delta)
            except BaseException:
                self._book, self._parts, self._dims = held
                raise
            self._snapshot, self._version = snap.path, version
            self._mark = max(mark, delta.high_water)
            self._changes += 1
            agree = len(self._book) == self.inner.count()
        del held, book, parts
        if self.release is not None:
            self.release()
        return len(delta.ids) + (0 if agree else self._reconcile())

    def publish(self) -> copy_snapshot.Snapshot:
        """Bring the copy up to the plane and write it as the current snapshot.

        For the process that keeps the plane (the index worker): serving
        processes built with the same `snapshots` folder then map the copy's
        arrays instead of reading the plane (`_adopted`). Holds the copy's lock
        while it writes (searches here wait; a serving process's do not), then maps
        what it wrote: the writer's rows are shared file pages too.
        """
        if self.snapshots is None:
            raise ValueError("this copy has no snapshots folder to publish to")
        with self._syncing:
            # The publisher's copy is the plane's (what it writes must be), and the
            # journal's position is read first: the plane then holds every record up to
            # it, and a follower's replay of later ones, in order, is idempotent.
            self._cursor, self._keeper = None, True
            position = self.journal.position() if self.journal is not None else None
            kept = copy_snapshot.current(self.snapshots)
            self._refresh()
            self._ready.set()
            with self._lock:
                book_arrays, book = self._book.state()
                arrays = {f"book.{n}": (a, len(a)) for n, a in book_arrays.items()}
                parts, writers = [], dict[str, copy_snapshot.Writer]()
                ordered = sorted(self._parts.items(), key=_partition_order)
                for n, ((project, active), part) in enumerate(ordered):
                    plain, held = part.state(f"p{n}")
                    arrays.update(held)
                    if part.index is not None:
                        writers[plain["graph"]] = _graph_writer(part.index)
                    parts.append({"project": project, "active": active, **plain})
                meta = {"version": self._version, "mark": self._mark, "dims": self._dims,
                        "shape": self._shape(), "book": book, "parts": parts,
                        "journal": position, "plane": _folder_identity(self.inner)}  # fmt: skip
                snap = copy_snapshot.publish(self.snapshots, meta, arrays, writers)
                if self.journal is not None and kept is not None:  # the kept one's records
                    self.journal.sweep(kept.meta.get("journal") or 0)
                # This copy now maps what it wrote (nothing changed meanwhile: the lock is
                # held), so its rows are shared file pages here too, not a private copy.
                self._book, self._parts = self._mapped(snap)
                self._snapshot = snap.path
                self._changes += 1
                return snap

    def snapshot_behind(self) -> bool:
        """Whether the plane has moved since the current snapshot was written (or
        there is none), or, with a journal, a follower could not follow it (written
        before the journal, or of another plane folder: a deployment copied or
        restored elsewhere, whose processes then all read the plane): what the
        publisher checks before writing one again."""
        if self.snapshots is None:
            return False
        snap = copy_snapshot.current(self.snapshots)
        if snap is None:
            return True
        meta = snap.meta
        followed = meta.get("journal") is not None and meta.get("plane") == _json_identity(
            self.inner
        )
        return (self.journal is not None and not followed) or meta["version"] != (
            self._source.version()
        )

    def _shape(self) -> list[Any]:
        """The settings a snapshot's partitions were built under (a reader with
        others reads the plane instead: its partitions would not match them)."""
        sketch = self.sketching
        return [self.dtype, self.connectivity, self.expansion, self.exact_below,
                sketch.above, sketch.dims, sketch.pool]  # fmt: skip

    def _fits(self, snap: copy_snapshot.Snapshot, version: int | None) -> bool:
        """Whether this copy can use `snap`: written under the same settings, of a
        plane version not past `version`, of vectors as long as the plane's. With
        `version` None (the plane not read), only a snapshot holding a journal
        position, of this plane folder (not one deleted and made again since)."""
        meta, dims = snap.meta, getattr(self.inner, "dims", None)
        if version is None and (
            meta.get("journal") is None
            or meta.get("plane") != _json_identity(self.inner)  # of a plane replaced
        ):
            return False
        if (
            meta["shape"] != self._shape()
            or meta["version"] is None
            or (version is not None and meta["version"] > version)  # a plane begun again
            or (isinstance(dims, int) and meta["dims"] not in (None, dims))  # another model's
        ):
            log.info("the vector copy's snapshot %s does not fit this copy: reading the plane",
                     snap.path)  # fmt: skip
            return False
        return True

    def _adopted(self, version: int, *, again: bool = True) -> bool:
        """Map the current snapshot as the copy if it fits (`_fits`), for a copy that
        then reads the plane's rows written since (at plane `version` now)."""
        snap = copy_snapshot.current(self.snapshots) if self.snapshots is not None else None
        if snap is None or not self._fits(snap, version):
            return False
        try:
            mapped = self._mapped(snap)
        except FileNotFoundError:  # removed after `current` read it: a newer one is there
            return again and self._adopted(version, again=False)
        with self._lock:
            self._book, self._parts = mapped
            self._dims, self._snapshot = snap.meta["dims"], snap.path
            self._version, self._mark = int(snap.meta["version"]), int(snap.meta["mark"])
            self._changes += 1
        return True

    def _mapped(self, snap: copy_snapshot.Snapshot) -> tuple[RowBook, dict[Partition, Part]]:
        """The book and partitions `snap` holds, their arrays mapped from its files."""
        meta = snap.meta
        book = RowBook.restored({n[5:]: snap.array(n) for n in _book_arrays(snap)}, meta["book"])
        parts: dict[Partition, Part] = {}
        for n, plain in enumerate(meta["parts"]):
            part = Part(meta["dims"] or 0, self._options(), self.exact_below, self.sketching, book)
            part.restore(plain, f"p{n}", snap)
            parts[(plain["project"], bool(plain["active"]))] = part
        return book, parts


def _folder_identity(plane: object) -> tuple[int, ...] | None:
    """Which plane folder this is: its layout marker's inode and time (written when the
    folder is made, `recall.indexes.layout`) and the folder's inode; None without
    one. A folder deleted and made again has another (a freed inode is often reused
    at once, hence the marker's time too)."""
    path = getattr(plane, "path", None)
    if not isinstance(path, Path):
        return None
    try:
        folder, marker = path.stat(), (path / layout.MARKER).stat()
    except OSError:
        return None
    return (folder.st_ino, marker.st_ino, marker.st_mtime_ns)


def _pointer_of(folder: Path) -> tuple[int, ...] | None:
    """`CURRENT`'s inode and times: another when a snapshot is published (a new file is
    renamed over it), None while there is none."""
    try:
        found = (folder / copy_snapshot.CURRENT).stat()
    except OSError:
        return None
    return (found.st_ino, found.st_mtime_ns, found.st_ctime_ns)


def _json_identity(plane: object) -> list[int] | None:
    """`_folder_identity` as a snapshot's meta.json holds it."""
    found = _folder_identity(plane)
    return None if found is None else list(found)


def _partition_order(pair: tuple[Partition, Part]) -> tuple[bool, str, bool]:
    (project, active), _ = pair
    return (project is not None, project or "", active)


def _graph_writer(index: Any) -> copy_snapshot.Writer:
    def write(path: Path) -> None:
        index.save(str(path))

    return write


def _book_arrays(snap: copy_snapshot.Snapshot) -> list[str]:
    return sorted(p.stem for p in snap.path.glob("book.*.npy"))
