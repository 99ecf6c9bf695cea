"""Apply queued index jobs as they arrive, until stopped.

Run beside the server when writes should return at commit
(`RECALL_SYNC_ON_COMMIT=0`): the request commits the row and its job, this
worker applies jobs in batches (one text-index commit and one vector merge
per batch). Any number of workers and in-request appliers may run at once:
jobs are claimed (console/indexing.py), and a killed worker's claims are
freed by the next apply on this host. SIGTERM or Ctrl-C finishes the batch in
hand, then exits.

The worker keeps the full-text writer between batches while jobs keep coming
(`--keep-writer`): each batch still commits, but tantivy's writer is taken
once and its segment merges are not waited for at every batch. It lets the
writer go once the queue has been idle that long, and at once when another
process holds the planes' lock (a reindex, an import, a repair).

A plane's folder deleted (or swapped) under the worker is noticed at the next
poll (a stat per plane): the worker reopens the planes and writes back from the
database what they lack (`services.planes_recover`), as `sync_indexes --repair`
would. Before, its open files took the writes into nothing on disk.
"""

from __future__ import annotations

import argparse
import logging
import signal
import time
from collections.abc import Callable
from contextlib import nullcontext
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from console import services
from console.management.commands._unreadable import refused, told

log = logging.getLogger(__name__)
RETRY_PAUSE_S = 1.0  # after a failed pass, before the next


def _seconds(least: float) -> Callable[[str], float]:
    """An argparse type: seconds, at least `least` (a negative interval crashed the
    loop's sleep; a negative period ran maintenance at every poll; 0 polled in a
    busy loop)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not value >= least:  # NaN too
            raise argparse.ArgumentTypeError(f"{text!r}: give at least {least:g} seconds")
        return value

    return parse


class Command(BaseCommand):
    help = "Apply queued index jobs continuously (the index worker)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=_seconds(0.01),
            default=0.1,
            help="seconds to wait when the queue is empty (at least 0.01)",
        )
        parser.add_argument(
            "--maintain-every",
            type=_seconds(0),
            default=600.0,
            help="seconds between vector-table compactions (0: never)",
        )
        parser.add_argument(
            "--keep-writer",
            type=_seconds(0),
            default=1.0,
            help="seconds of an idle queue before the kept text writer is let go (0: never kept)",
        )
        parser.add_argument(
            "--snapshot-every",
            type=_seconds(0),
            default=300.0,
            help="seconds between snapshots of the vector copy for serving processes, "
            "written when the queue is idle and the plane moved (0: never)",
        )
        parser.add_argument(
            "--expire-every",
            type=_seconds(0),
            default=60.0,
            help="seconds between purges of expired memories (0: never; see `expire`)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        with told():  # a plane that cannot be read at the start: one line, what to run
            self._work(lambda: stopping, options)
        self.stdout.write("index worker: stopped")

    def _work(self, stopping: Callable[[], bool], options: dict[str, Any]) -> None:
        refused()  # a damaged plane: one line now, not a failed job at every poll
        keep = options["keep_writer"]
        seen = services.plane_folders()
        self.stdout.write("index worker: applying queued jobs (Ctrl-C stops)")
        while True:
            with services.index_writer_kept() if keep > 0 else nullcontext():
                gone = self._loop(stopping, keep, options, seen)
            if not gone:
                break
            # A plane's folder was deleted (or replaced) under us: the open adapters
            # went on writing into nothing on disk. The database rebuilds what is gone.
            planes = " and ".join(gone)
            self.stdout.write(f"the {planes} plane's folder was deleted or replaced: rebuilding")
            try:
                fixed = services.planes_recover()
            except Exception as exc:  # the database stayed locked, say: try again
                log.exception("rebuilding the planes failed; retrying")
                self.stderr.write(f"rebuilding failed ({type(exc).__name__}: {exc}); retrying")
                time.sleep(RETRY_PAUSE_S)
                continue  # `seen` unchanged: the next poll finds the folder gone again
            self.stdout.write(f"rebuilt from the database: {fixed.rewritten} items written")
            seen = services.plane_folders()

    def _loop(
        self,
        stopping: Callable[[], bool],
        keep: float,
        options: dict[str, Any],
        seen: dict[str, tuple[int, int]],
    ) -> list[str]:
        """Apply jobs until `stopping` (returns []) or a plane folder `seen` vanishes
        (returns its plane's name)."""
        interval, every = options["interval"], options["maintain_every"]
        last_upkeep = last_purge = last_work = time.monotonic()
        purge_every = options["expire_every"]
        # The first snapshot waits a period too: it loads the worker's copy of the whole
        # plane (20-30 s at 100,000 memories) while jobs queue, which a worker just
        # started beside a server under writes should not do at once.
        snapshot_every, last_snapshot = options.get("snapshot_every", 0.0), time.monotonic()
        while not stopping():
            now = services.plane_folders()
            if gone := services.planes_vanished(seen, now):
                return gone
            seen = now
            try:
                report = services.index_sync()
            except Exception as exc:  # the database stayed locked, say: the jobs wait
                log.exception("applying index jobs failed; retrying")
                self.stderr.write(f"applying failed ({type(exc).__name__}: {exc}); retrying")
                # A connection the server dropped (a restart, a failover) stays broken:
                # closed, the next pass opens a new one.
                connections.close_all()
                time.sleep(max(interval, RETRY_PAUSE_S))
                continue
            if report.applied or report.failed:
                self.stdout.write(f"applied {report.applied} jobs, {report.failed} failed")
            if not report.applied:  # digests after the rows they summarise (console/digesting.py)
                built = services.digest_sync(limit=1)
                if built.applied or built.failed:
                    self.stdout.write(f"rebuilt {built.applied} digests, {built.failed} failed")
                report.applied += built.applied
            if every and time.monotonic() - last_upkeep >= every:
                services.index_maintain()
                last_upkeep = time.monotonic()
            if purge_every and time.monotonic() - last_purge >= purge_every:
                purged = services.memories_expire()
                if purged:
                    self.stdout.write(f"purged {len(purged)} expired memories")
                last_purge = time.monotonic()
            if report.applied:
                last_work = time.monotonic()
            elif snapshot_every and time.monotonic() - last_snapshot >= snapshot_every:
                # Idle: the serving processes' next start maps the copy as it is now.
                self._snapshot()
                last_snapshot = time.monotonic()
            else:
                if keep > 0 and time.monotonic() - last_work >= keep:
                    services.index_writer_let_go()
                time.sleep(interval)
        return []

    def _snapshot(self) -> None:
        """Write the vector copy's snapshot; a failure is one line, not the worker's end:
        the snapshot only spares serving processes a read of the plane (a plane's folder
        deleted meanwhile is the next poll's to notice and rebuild)."""
        try:
            if services.vector_copy_publish():
                self.stdout.write("wrote the vector copy's snapshot")
        except Exception as exc:
            log.warning("writing the vector copy's snapshot failed", exc_info=True)
            self.stderr.write(f"writing the vector copy's snapshot failed ({exc}); retrying later")
