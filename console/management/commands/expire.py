"""Purge expired memories: their rows, edges, feedback, and (through the outbox) index rows.

An expired memory is already out of every read; this frees what it held.
`--dry-run` lists what would go and changes nothing. The index worker runs
the same purge every `--expire-every` seconds.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import services


class Command(BaseCommand):
    help = "Delete memories whose expiry has passed (and their index entries)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="list what would be purged; change nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry = options["dry_run"]
        expired = services.memories_expire(dry_run=dry)
        for e in expired:
            where = e.project or "global"
            self.stdout.write(f"{e.id}  {where}/{e.name}  expired {e.expires_at.isoformat()}")
        if dry:
            self.stdout.write(f"would purge {len(expired)} expired memories (dry run)")
            return
        report = services.index_sync()  # apply the delete jobs now, not at the next write
        self.stdout.write(
            f"purged {len(expired)} expired memories; applied {report.applied} index jobs"
        )
