"""A file-backed snapshot of the in-process vector copy, mapped by serving processes.

Why: every serving process used to read the whole vector plane through
LanceDB at start and hold its own copy of the vectors as anonymous memory
(at 100,000 memories about 116 MB of vectors per process, and LanceDB's
reads on top). The process that keeps the copy current for writing (the
index worker) writes the copy's arrays here as `.npy` files; a serving
process maps them (`numpy.load(mmap_mode="c")`), so the vectors are file
pages shared by every process on the machine, read from disk only where a
search touches them, and a write a process applies itself copies only the
pages it changes (copy on write). The plane stays the source of the rows:
a snapshot records the plane's version and write sequence it holds, and a
reader brings it up to the plane with the plane's `changes` as before.

On disk, under `folder`: `snap-<n>/` folders (one `meta.json` and one
`.npy` per array), and `CURRENT`, a file naming the snapshot to read. A
snapshot is written into a `tmp-*` folder, every file and the folder
flushed to disk (fsync), renamed to `snap-<n>`, then `CURRENT` replaced
atomically (a temporary file renamed over it). A writer killed at any point
leaves `CURRENT` naming a complete snapshot (or none); its temporary folder
is swept by the next writer, under the folder's write lock. The snapshot
before the current one is kept (a reader may have just read `CURRENT`);
older ones are removed, which a reader that has mapped them does not notice
(a mapped file outlives its name; its disk space is freed when the last
process mapping it exits).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall.locks import FileLock

FORMAT = 2  # the layout of `meta.json` and the arrays; another is ignored (the plane is read)
CURRENT = "CURRENT"
_CHUNK = 4096  # rows copied into a file at a time (no whole-array temporary)

Writer = Callable[[Path], None]  # writes one file at the given path (a USearch graph)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A published snapshot: its folder and its `meta.json`."""

    path: Path
    meta: dict[str, Any]

    def array(self, name: str) -> npt.NDArray[Any]:
        """The array `name`, mapped copy-on-write: reads share the file's pages,
        a write makes a private copy of the pages it touches, never of the file."""
        mapped = np.load(self.path / f"{name}.npy", mmap_mode="c", allow_pickle=False)
        return np.asarray(mapped)  # a plain ndarray view; it keeps the mapping alive

    def file(self, name: str) -> Path:
        return self.path / name


def current(folder: Path) -> Snapshot | None:
    """The snapshot `CURRENT` names, or None (none written, another format, or
    removed between the two reads)."""
    try:
        name = (folder / CURRENT).read_text(encoding="ascii").strip()
        meta = json.loads((folder / name / "meta.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        return None
    return Snapshot(folder / name, meta)


def publish(
    folder: Path,
    meta: Mapping[str, Any],
    arrays: Mapping[str, tuple[npt.NDArray[Any], int]],
    writers: Mapping[str, Writer] | None = None,
) -> Snapshot:
    """Write a snapshot and make it the current one; returns it.

    `arrays` maps a name to (array, length): the file holds the array's rows
    followed by zero rows up to `length` (spare room, so a reader's next
    writes append in place instead of copying the whole mapped array).
    `writers` write other files (a USearch graph) by name.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(folder / ".write.lock").held():
        keep = _named(folder)
        _sweep(folder, keep={keep} if keep else set())  # a killed writer's leftovers
        temp = Path(tempfile.mkdtemp(prefix="tmp-", dir=folder))
        for name, (array, length) in arrays.items():
            _write_array(temp / f"{name}.npy", array, length)
        for name, write in (writers or {}).items():
            write(temp / name)
            fsync(temp / name)
        body = json.dumps({**meta, "format": FORMAT}, separators=(",", ":"))
        (temp / "meta.json").write_text(body, encoding="utf-8")
        fsync(temp / "meta.json")
        fsync(temp)
        final = folder / f"snap-{time.time_ns()}"
        os.rename(temp, final)
        pointer = folder / f".{CURRENT}.tmp"
        pointer.write_text(final.name, encoding="ascii")
        fsync(pointer)
        os.replace(pointer, folder / CURRENT)
        fsync(folder)
        _sweep(folder, keep={final.name} | ({keep} if keep else set()))
    return Snapshot(final, json.loads(body))


def _named(folder: Path) -> str | None:
    with contextlib.suppress(FileNotFoundError):
        return (folder / CURRENT).read_text(encoding="ascii").strip() or None
    return None


def _sweep(folder: Path, *, keep: set[str]) -> None:
    """Remove temporary folders and snapshots other than `keep` (under the lock)."""
    for path in folder.iterdir():
        if path.is_dir() and path.name not in keep and path.name.startswith(("tmp-", "snap-")):
            shutil.rmtree(path, ignore_errors=True)


def _write_array(path: Path, array: npt.NDArray[Any], length: int) -> None:
    rows = len(array)
    shape = (max(length, rows), *array.shape[1:])
    out = np.lib.format.open_memmap(path, mode="w+", dtype=array.dtype, shape=shape)
    for start in range(0, rows, _CHUNK):
        end = min(start + _CHUNK, rows)
        out[start:end] = array[start:end]
    out.flush()
    del out
    fsync(path)


def fsync(path: Path) -> None:
    """Flush a file's or a folder's contents (a folder: its names) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
