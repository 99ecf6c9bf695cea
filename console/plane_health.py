"""A derived plane whose files cannot be read: found, named, and set aside for a rebuild.

The database is the source of truth; the planes are derived from it. A damaged
folder (a `meta.json` cut short, a data file overwritten) made every index command
end in a traceback, `reindex` included, though rebuilding from the database is
what it is for. `unreadable` opens each plane and reads its fingerprints (what
`index_status` and a rebuild read first); `set_aside` renames a damaged folder
(nothing is deleted) so the rebuild starts from an empty one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from console import wiring

# The adapters whose plane is a folder (their `path` option): it can be set aside.
# The PostgreSQL planes are tables: never moved.
FILE_ADAPTERS = (
    "recall.indexes.tantivy_index.",
    "recall.indexes.whoosh_index.",
    "recall.indexes.lance_index.",
)


# What to do about a plane that cannot be read, by where it lives.
FOLDER_ADVICE = (
    "`manage.py reindex` sets a damaged folder aside (renamed, not deleted) and rebuilds "
    "the plane from the database"
)
TABLE_ADVICE = (
    "the plane is a table in the database: check that the database is up and this login "
    "may use it, and that the `vector` extension exists (`CREATE EXTENSION vector;` as "
    'an administrator, README "Deployment: PostgreSQL"), then `manage.py sync_indexes`'
)


@dataclass(frozen=True, slots=True)
class Unreadable:
    plane: str  # "full-text" or "vector"
    error: str  # the first line of what reading it raised
    folder: Path | None  # its folder, when it is a plane of files that exists
    in_database: bool = False  # a table (the PostgreSQL planes), not a folder

    def __str__(self) -> str:
        where = f" at {self.folder}" if self.folder else ""
        return f"the {self.plane} plane{where} cannot be read ({self.error})"

    @property
    def advice(self) -> str:
        return TABLE_ADVICE if self.in_database else FOLDER_ADVICE


def unreadable() -> list[Unreadable]:
    """The planes that cannot be opened or read, each with its error."""
    found = []
    for plane, backend, opened in (
        ("full-text", "TEXT_INDEX", wiring.text_index),
        ("vector", "VECTOR_INDEX", wiring.vector_plane),
    ):
        try:
            made = opened()
            if made is not None:
                made.fingerprints()
        except Exception as exc:  # noqa: BLE001 - whatever a damaged folder raises
            error = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:300]
            table = not wiring.backend(backend)[0].startswith(FILE_ADAPTERS)
            found.append(Unreadable(plane, error, _folder(backend), in_database=table))
    return found


def _folder(backend: str) -> Path | None:
    path, options = wiring.backend(backend)
    if not path.startswith(FILE_ADAPTERS) or "path" not in options:
        return None
    folder = Path(options["path"])
    return folder if folder.exists() else None


Identity = tuple[int, int]  # a folder's (device, inode): what a deletion and a new folder change


def folders() -> dict[str, Identity]:
    """The identity of each plane's folder that exists now, by plane (file planes only).

    A folder deleted under a running process goes unnoticed by it: its open files
    still answer and still take writes, into nothing on disk. The index worker
    compares this with what it saw before (`vanished`) at every poll, a stat per plane.
    """
    found = {}
    for plane, backend in (("full-text", "TEXT_INDEX"), ("vector", "VECTOR_INDEX")):
        if (folder := _folder(backend)) is None:
            continue
        try:
            stat = folder.stat()
        except FileNotFoundError:  # deleted since `_folder` saw it
            continue
        found[plane] = (stat.st_dev, stat.st_ino)
    return found


def vanished(before: dict[str, Identity], now: dict[str, Identity]) -> list[str]:
    """The planes whose folder was there `before` and is gone or another folder `now`."""
    return [plane for plane, identity in before.items() if now.get(plane) != identity]


def set_aside(plane: Unreadable) -> Path:
    """Rename the plane's folder beside itself (`<folder>.unreadable-<UTC time>`) and
    forget the open adapters, so the next use starts an empty plane there."""
    if plane.folder is None:
        raise ValueError(f"{plane}: not a folder of this deployment, nothing to set aside")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    moved = plane.folder.with_name(f"{plane.folder.name}.unreadable-{stamp}")
    wiring.reset()  # before the rename: an open writer holds files in it
    plane.folder.rename(moved)
    return moved
