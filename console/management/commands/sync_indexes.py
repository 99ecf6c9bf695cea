"""Apply (retry) pending index jobs now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from console import indexing


class Command(BaseCommand):
    help = "Apply pending index jobs (failed ones are retried)."

    def handle(self, *args: Any, **options: Any) -> None:
        report = indexing.apply_pending()
        self.stdout.write(f"applied {report.applied} jobs, {report.failed} failed (still queued)")
