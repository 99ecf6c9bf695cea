"""A journal of the vector copy's writes, beside its snapshot, followed by serving processes.

Why: a serving process that maps the copy's snapshot (recall/indexes/copy_snapshot.py)
still read the rows written since from the plane, so it imported and ran LanceDB:
at 115,000 rows about 95 MB of its RSS (LanceDB's and pyarrow's libraries, 89 MB of
file pages, and their heap), for a process that only polled the plane's version.
Every write made through the copy (`HotVectorIndex.upsert`, `delete`, `clear`) is
also appended here, after the plane took it and before the write returns (so before
the index worker acknowledges its batch); a serving process follows these records
from the position its snapshot holds and never opens the plane in the steady state.
The plane stays the durable store, the database the source of truth.

On disk, in the snapshot folder: `journal-<first record number>.log` files. A
record is a 20-byte header (magic, payload length, CRC-32 of the number and the
payload, record number) and its payload (a JSON header, then the rows' f32
vectors). Numbers run on by one across files. An append holds the folder's journal
lock, writes one record with one `write`, and flushes it to disk (fsync) before it
returns. A writer killed mid-append leaves a torn tail: readers stop before it, the
next writer cuts it off before appending. A reader that finds a number missing
(files swept past it) or an unreadable record before the tail raises `Broken`
(the copy then reads the plane). Files whose records a kept snapshot holds are swept
when a snapshot is published.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from recall.indexes import copy_snapshot
from recall.locks import FileLock
from recall.types import Facets, VectorBlock

MAGIC = b"RVJ1"
_HEAD = struct.Struct("<4sIIQ")  # magic, payload length, crc32(number + payload), number
_NUMBER = struct.Struct("<Q")
_JSON_LENGTH = struct.Struct("<I")
ROTATE_BYTES = 64 << 20  # a new file past this size, so a sweep can free the old ones
_PREFIX, _SUFFIX = "journal-", ".log"


class Broken(Exception):
    """The journal cannot be followed from a position: a record is missing (swept,
    or the files were removed) or unreadable before the tail."""


@dataclass(frozen=True, slots=True)
class Record:
    """One write: `op` is "put" (`block` holds the rows), "drop" (`ids`) or "clear"."""

    number: int
    op: str
    block: VectorBlock | None = None
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a reader is: the last record number it applied, and (once it has read)
    the file and byte offset just past that record."""

    number: int
    file: str | None = None
    offset: int = 0


def encode_put(block: VectorBlock) -> bytes:
    """A "put" payload: the block's columns as JSON, then its vectors as f32."""
    facets = block.facets or [Facets()] * len(block.ids)
    vectors = np.ascontiguousarray(block.vectors, dtype=np.float32)
    head = {
        "op": "put", "ids": block.ids, "items": block.items, "projects": block.projects,
        "active": block.active, "kinds": block.kinds, "fingerprints": block.fingerprints,
        "dims": int(vectors.shape[1]) if vectors.ndim == 2 else 0,
        "facets": [[list(f.tags), f.agent_id, f.session_id, f.importance,
                    f.created.isoformat() if f.created is not None else None] for f in facets],
    }  # fmt: skip
    return _payload(head, vectors.tobytes())


def encode_drop(ids: list[str]) -> bytes:
    return _payload({"op": "drop", "ids": ids}, b"")


def encode_clear() -> bytes:
    return _payload({"op": "clear"}, b"")


def _payload(head: dict[str, Any], tail: bytes) -> bytes:
    body = json.dumps(head, separators=(",", ":")).encode("utf-8")
    return _JSON_LENGTH.pack(len(body)) + body + tail


def decode(number: int, payload: bytes) -> Record:
    (size,) = _JSON_LENGTH.unpack_from(payload)
    head = json.loads(payload[4 : 4 + size])
    if head["op"] != "put":
        return Record(number, head["op"], ids=tuple(head.get("ids", ())))
    dims, count = head["dims"], len(head["ids"])
    vectors = np.frombuffer(payload, dtype=np.float32, offset=4 + size).reshape(count, dims)
    facets = [Facets(tuple(t), a, s, float(i), None if c is None else datetime.fromisoformat(c))
              for t, a, s, i, c in head["facets"]]  # fmt: skip
    block = VectorBlock(
        ids=head["ids"], items=head["items"], projects=head["projects"],
        active=head["active"], kinds=head["kinds"], fingerprints=head["fingerprints"],
        vectors=vectors.copy(), facets=facets,
    )  # fmt: skip
    return Record(number, "put", block=block)


def _files(folder: Path) -> list[tuple[int, Path]]:
    """The journal files, by their first record number."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for path in folder.iterdir():
            name = path.name
            if name.startswith(_PREFIX) and name.endswith(_SUFFIX):
                with contextlib.suppress(ValueError):
                    found.append((int(name[len(_PREFIX) : -len(_SUFFIX)]), path))
    return sorted(found)


def _name(first: int) -> str:
    return f"{_PREFIX}{first:020d}{_SUFFIX}"


TORN, UNREADABLE = -1, -2  # a last item's number: where the valid records end, and why


def _scan(handle: Any, offset: int) -> Iterator[tuple[int, int, bytes | None]]:
    """(number, end offset, payload) of each whole, valid record from `offset`, then,
    where an invalid record starts, (TORN or UNREADABLE, its offset, None). TORN: the
    file ends inside it (a writer killed mid-append, or still writing), or its bytes
    are zeros to the end; UNREADABLE: a damaged record with more after it."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(offset)
    while True:
        head = handle.read(_HEAD.size)
        if not head:
            return
        if len(head) < _HEAD.size:
            yield TORN, offset, None
            return
        magic, length, crc, number = _HEAD.unpack(head)
        if magic != MAGIC:
            zeros = not (head + handle.read()).strip(b"\0")
            yield (TORN if zeros else UNREADABLE), offset, None
            return
        payload = handle.read(length)
        end = offset + _HEAD.size + length
        if len(payload) < length or zlib.crc32(head[-8:] + payload) != crc:
            yield (TORN if end >= size else UNREADABLE), offset, None
            return
        offset = end
        yield number, offset, payload


class Journal:
    """The writer's side: appends records under the folder's journal lock."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = FileLock(folder / ".journal.lock")
        self._tail: tuple[Path, int, int] | None = None  # last file, its size, last number

    def append(self, payload: bytes) -> tuple[Cursor, Cursor]:
        """Append one record, flushed to disk; (the tail before, the tail after).
        Takes the journal lock (callers hold it across the plane's write as well, so
        records are in the order the plane took the writes)."""
        with self.lock.held():
            path, size, number = self._open_tail()
            before = Cursor(number, path.name, size)
            if size >= ROTATE_BYTES:
                path, size = self.folder / _name(number + 1), 0
            number += 1
            head = _HEAD.pack(MAGIC, len(payload), zlib.crc32(_NUMBER.pack(number) + payload),
                              number)  # fmt: skip
            created = not path.exists()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, head + payload)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                copy_snapshot.fsync(self.folder)
            size += _HEAD.size + len(payload)
            self._tail = (path, size, number)
            return before, Cursor(number, path.name, size)

    def position(self) -> int:
        """The number of the last whole record (of an empty journal: the one before
        its first, numbered past any earlier journal's)."""
        with self.lock.held():
            path, size, number = self._open_tail()
            if not size:  # an empty journal's first file, so that the number holds
                path.touch()
                copy_snapshot.fsync(self.folder)
            return number

    def _open_tail(self) -> tuple[Path, int, int]:
        """The last file, its length and last record number, a torn tail cut off."""
        files = _files(self.folder)
        if not files:  # numbers above any earlier journal's (its files deleted): a
            # reader still past one of them then finds a gap, not records it skips
            self.folder.mkdir(parents=True, exist_ok=True)
            self._tail = None
            first = time.time_ns() // 1000
            return self.folder / _name(first), 0, first - 1
        first, path = files[-1]
        if self._tail is not None and self._tail[0] == path:
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_size == self._tail[1]:
                    return self._tail
        number, end = first - 1, 0
        with path.open("rb") as handle:
            for found, offset, payload in _scan(handle, 0):
                if found == UNREADABLE:  # never cut valid records off: begin again,
                    # numbered past any earlier record (readers find a gap)
                    self._tail = None
                    later = max(time.time_ns() // 1000, number + 2)
                    return self.folder / _name(later), 0, later - 1
                if payload is None:
                    break
                number, end = found, offset
        if path.stat().st_size > end:  # a writer killed mid-append: cut its torn tail
            with path.open("r+b") as handle:
                handle.truncate(end)
                os.fsync(handle.fileno())
        self._tail = (path, end, number)
        return self._tail

    def sweep(self, upto: int) -> None:
        """Remove files all of whose records are at most `upto` (never the last)."""
        with self.lock.held():
            files = _files(self.folder)
            for (_, path), (next_first, _) in zip(files, files[1:], strict=False):
                if next_first <= upto + 1:
                    path.unlink(missing_ok=True)


def read(folder: Path, cursor: Cursor) -> tuple[list[Record], Cursor]:
    """The records after `cursor`, and the cursor past them. Stops before a torn or
    still-incomplete record at the end of the last file; raises `Broken` on a gap or
    an unreadable record elsewhere."""
    files = _files(folder)
    names = {path.name: first for first, path in files}
    if cursor.file is not None and cursor.file in names:
        start = [(names[cursor.file], folder / cursor.file, cursor.offset)]
    else:  # from a snapshot's position, or the cursor's file was swept once read
        before = [(first, path) for first, path in files if first <= cursor.number + 1]
        if not before:
            if files:
                raise Broken(f"no journal file holds record {cursor.number + 1} in {folder}")
            return [], cursor
        start = [(before[-1][0], before[-1][1], 0)]
    later = [(first, path, 0) for first, path in files if first > start[0][0]]
    records: list[Record] = []
    for n, (_, path, offset) in enumerate(start + later):
        last_file = n == len(later)
        try:
            handle = path.open("rb")
        except FileNotFoundError as exc:
            raise Broken(f"journal file {path.name} was removed while read") from exc
        with handle:
            for number, end, payload in _scan(handle, offset):
                if payload is None:
                    if last_file and number == TORN:  # or a record being written: later
                        return records, cursor
                    raise Broken(f"unreadable journal record after {cursor.number} in {path}")
                if number <= cursor.number:
                    continue
                if number != cursor.number + 1:
                    raise Broken(f"journal record {cursor.number + 1} is missing in {folder}")
                try:
                    records.append(decode(number, payload))
                except (ValueError, KeyError, TypeError) as exc:
                    raise Broken(f"journal record {number} cannot be decoded: {exc}") from exc
                cursor = Cursor(number, path.name, end)
    return records, cursor
