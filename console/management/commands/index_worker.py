"""Apply queued index jobs as they arrive, until stopped.

Run beside the server when writes should return at commit
(`RECALL_SYNC_ON_COMMIT=0`): the request commits the row and its job, this
worker applies jobs in batches (one text-index commit and one vector merge
per batch). Any number of workers and in-request appliers may run at once:
jobs are claimed (console/indexing.py), and a killed worker's claims are
freed by the next apply on this host. SIGTERM or Ctrl-C finishes the batch in
hand, then exits.
"""

from __future__ import annotations

import signal
import time
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import services


class Command(BaseCommand):
    help = "Apply queued index jobs continuously (the index worker)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval", type=float, default=0.1, help="seconds to wait when the queue is empty"
        )
        parser.add_argument(
            "--maintain-every",
            type=float,
            default=600.0,
            help="seconds between vector-table compactions (0: never)",
        )
        parser.add_argument(
            "--expire-every",
            type=float,
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
        interval, every = options["interval"], options["maintain_every"]
        last_upkeep = last_purge = time.monotonic()
        purge_every = options["expire_every"]
        self.stdout.write("index worker: applying queued jobs (Ctrl-C stops)")
        while not stopping:
            report = services.index_sync()
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
            if not report.applied:
                time.sleep(interval)
        self.stdout.write("index worker: stopped")
