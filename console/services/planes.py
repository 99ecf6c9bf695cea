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


def bulk_mode() -> None:
    """For batch commands (import, reindex): embed on every core from now on."""
    wiring.use_batch_threads()


def plane_set_aside(plane: plane_health.Unreadable) -> Path:
    """Rename an unreadable plane's folder beside itself, for a rebuild from the database."""
    return plane_health.set_aside(plane)
