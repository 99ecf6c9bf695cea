"""Which layout a plane's files were written in, so a stale one is rebuilt, not misread.

A plane directory carries `recall-layout` with the layout version it was
built with. Opening a directory without it, or with another version, clears
the plane (it is derived data: the database is the source of truth) and
logs why; `manage.py index_status` then reports every row missing and
`manage.py reindex` (which `make run` runs on drift) rebuilds it.

Versions: 1 had no per-row fingerprint; 2 stores one (`Doc.fingerprint`),
so `index_status` can see content drift, not only missing ids. A plane may
count its own versions past that (the tantivy text plane is at 6: the fields
its BM25F scoring and its filters read, kana and ideographs as words of their
own, words folded; Whoosh at 6; the LanceDB vector plane is at 3: a write
sequence and a text hash per row).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)
VERSION = 2
MARKER = "recall-layout"


def current(path: Path, version: int = VERSION) -> bool:
    """Whether `path` holds a plane in layout `version`.

    A directory with no marker is current while it holds nothing but dot files
    (lock files, a marker being written).
    """
    marker = path / MARKER
    if marker.exists():
        return marker.read_text(encoding="ascii").strip() == str(version)
    return not path.exists() or not any(not p.name.startswith(".") for p in path.iterdir())


def previous(path: Path) -> Path:
    """Where `prepare(..., keep=...)` moves a plane written in another layout."""
    return path.with_name(path.name + ".previous")


def prepare(path: Path, plane: str, *, version: int = VERSION, keep: Path | None = None) -> None:
    """Make `path` a directory in layout `version`, clearing a stale plane first.

    With `keep`, a stale plane is moved there instead of deleted (replacing an
    older one), for a rebuild to reuse what it can (the vector plane's vectors);
    the rebuild removes it.

    The marker is written only when it is missing or stale, and atomically
    (a temporary file renamed over it): another process opening the plane at
    the same moment must never read a half-written marker and clear a good plane.
    """
    path.mkdir(parents=True, exist_ok=True)
    if current(path, version) and (path / MARKER).exists():
        return
    if not current(path, version) and keep is not None:
        log.warning(
            "%s at %s was written in another layout: moved to %s; run manage.py reindex",
            plane, path, keep,
        )  # fmt: skip
        shutil.rmtree(keep, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process moved it first
            os.replace(path, keep)
        path.mkdir(parents=True, exist_ok=True)
    if not current(path, version):
        log.warning(
            "%s at %s was written in an older layout: cleared; run manage.py reindex", plane, path
        )
        for child in path.iterdir():
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path, prefix=f".{MARKER}.")
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(f"{version}\n")
    os.replace(temporary, path / MARKER)
