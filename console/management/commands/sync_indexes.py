"""Apply (retry) pending index jobs now; --repair also fixes the drift index_status finds."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import services
from console.management.commands._unreadable import refused, told


def _failed(count: int) -> str:
    return f", {count} failed (still queued: `manage.py index_status` shows why)" if count else ""


class Command(BaseCommand):
    help = (
        "Apply pending index jobs (failed ones are retried); --repair rewrites plane rows "
        "that are missing, extra, stale or duplicated; --optimize compacts the vector table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--repair",
            action="store_true",
            help="compare every plane row with the database and rewrite what differs",
        )
        parser.add_argument(
            "--optimize", action="store_true", help="compact the vector table, build its ANN index"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with told():
            self._sync(repair=options["repair"], optimize=options["optimize"])

    def _sync(self, *, repair: bool, optimize: bool) -> None:
        refused()  # a damaged plane: named, not "applied 0 jobs, 1 failed" and exit 0
        report = services.index_sync(parked=True)  # those retried once a minute too
        self.stdout.write(f"applied {report.applied} jobs{_failed(report.failed)}")
        built = services.digest_sync(parked=True)
        self.stdout.write(f"rebuilt {built.applied} digests{_failed(built.failed)}")
        if repair:
            fixed = services.index_repair()
            self.stdout.write(
                f"repaired: {fixed.deleted} extra rows deleted, {fixed.rewritten} items rewritten"
            )
        if optimize:
            services.index_maintain()
            self.stdout.write("vector plane optimized")
