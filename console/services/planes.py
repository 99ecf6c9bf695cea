"""The derived planes: apply queued jobs, rebuild, upkeep."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from console import indexing, plane_health, wiring


def index_sync(*, limit: int | None = None, parked: bool = False) -> indexing.ApplyReport:
    """Apply (retry) pending index jobs now; with `parked`, also those that failed too
    often to be retried at every apply (`indexing._failed`)."""
    return indexing.apply_pending(limit=limit, parked=parked)


def index_writer_kept() -> AbstractContextManager[None]:
    """For the index worker: keep the text plane's writer between batches inside the block."""
    return indexing.writer_kept()


def index_writer_let_go() -> None:
    """Give the kept text writer back (the queue is idle: others may write)."""
    indexing.let_go_writer()


def digest_sync(*, limit: int | None = None, parked: bool = False) -> indexing.ApplyReport:
    """Rebuild the altitude digests queued in the outbox now (console/digesting.py)."""
    return indexing.apply_digests(limit=limit, parked=parked)


def index_repair() -> indexing.RepairReport:
    """Rewrite plane rows that differ from the database (missing, extra, stale, duplicated)."""
    return indexing.repair()


def index_rebuild(
    *, progress: Callable[[int], None] | None = None, vectors_from: Path | None = None
) -> indexing.Rebuilt:
    """Recreate both planes from the database (items indexed, texts embedded).

    `vectors_from`: an embedded deployment's LanceDB directory whose vectors
    are reused where text and model match (`indexing.vectors_in`).
    """
    known = indexing.vectors_in(vectors_from) if vectors_from is not None else None
    return indexing.rebuild(progress=progress, known=known)


def index_maintain() -> None:
    """Compact the vector table and build its ANN index once it is large."""
    indexing.maintain()


def vector_copy_publish() -> bool:
    """Write the vector copy's snapshot for serving processes if the plane moved."""
    return indexing.vector_copy_publish()


def bulk_mode() -> None:
    """For batch commands (import, reindex): embed on every core from now on."""
    wiring.use_batch_threads()


def plane_set_aside(plane: plane_health.Unreadable) -> Path:
    """Rename an unreadable plane's folder beside itself, for a rebuild from the database."""
    return plane_health.set_aside(plane)


def plane_folders() -> dict[str, plane_health.Identity]:
    """Each file plane's folder identity now: the index worker watches for a deletion."""
    return plane_health.folders()


def planes_vanished(
    before: dict[str, plane_health.Identity], now: dict[str, plane_health.Identity]
) -> list[str]:
    """The planes whose folder was deleted or replaced between two `plane_folders`."""
    return plane_health.vanished(before, now)


def planes_recover() -> indexing.RepairReport:
    """After a plane's folder was deleted (or replaced) under this process: forget the
    open adapters, whose writes went into nothing on disk, set aside a folder left that
    cannot be read, and write back from the database whatever the planes lack."""
    wiring.reset()
    for plane in plane_health.unreadable():
        if plane.folder is not None:
            plane_health.set_aside(plane)
    return indexing.repair()
