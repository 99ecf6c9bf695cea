"""Rows per plane, pending jobs and drift between the database and the planes."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.utils import OperationalError, ProgrammingError

from console import selectors
from console.management.commands._unreadable import told
from console.selectors import PlaneDrift


def describe(drift: PlaneDrift) -> str:
    return (
        f"{len(drift.missing)} missing, {len(drift.extra)} extra, {len(drift.stale)} stale, "
        f"{drift.duplicates} duplicate rows"
    )


class Command(BaseCommand):
    help = (
        "Report rows per plane, pending index jobs and drift against the database "
        "(missing, extra, stale content and duplicate rows, by fingerprint)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fail-on-drift", action="store_true", help="exit 1 on any drift")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with told():
                s = selectors.index_status()
        except (OperationalError, ProgrammingError) as exc:
            if "console_" not in str(exc):  # not a table missing: not ours to explain
                raise
            raise CommandError(
                f"the database has no tables yet ({exc}): run `manage.py migrate` first"
            ) from None
        self.stdout.write(f"database      {s.rows} items (memories + notes)")
        self.stdout.write(f"full text     {s.text.rows} rows  [{s.text_backend}]")
        vectors = "off" if s.vectors is None else f"{s.vectors.rows} rows"
        self.stdout.write(f"vectors       {vectors}  [{s.vector_backend or 'none'}]")
        if s.vector_model:
            stale = "  STALE: the embedder now makes " + str(s.embedder_model)
            self.stdout.write(f"vector model  {s.vector_model}{stale if s.stale_model else ''}")
        parked = f"; {s.parked} retried once a minute" if s.parked else ""
        self.stdout.write(f"pending jobs  {s.pending} ({s.failing} with errors{parked})")
        if s.failing:
            self.stdout.write(f"  last error  {s.last_error.splitlines()[0][:300]}")
        self.stdout.write(f"drift         {s.drift}")
        self.stdout.write(f"  text        {describe(s.text)}")
        if s.vectors is not None:
            every = ", every row from another model" if s.stale_model else ""
            self.stdout.write(f"  vectors     {describe(s.vectors)}{every}")
        if s.drift == 0:
            self.stdout.write(self.style.SUCCESS("no drift"))
            return
        if s.failing:  # not lag: applying them fails
            self.stdout.write(
                self.style.WARNING(
                    f"drift found while {s.failing} of {s.pending} waiting jobs fail (the last "
                    "error above): fix its cause; the index worker retries them (once a minute "
                    "after RECALL_MAX_JOB_ATTEMPTS failures), `manage.py sync_indexes` now. A "
                    "plane that cannot be read is rebuilt by `manage.py reindex`"
                )
            )
        elif s.pending:  # queued writes the index has not applied read as drift until it does
            self.stdout.write(
                self.style.WARNING(
                    f"drift found while {s.pending} jobs wait: the index has not applied them "
                    "yet. Start `manage.py index_worker` (make run and make serve start it) or "
                    "run `manage.py sync_indexes`; drift left once the queue is empty needs "
                    "`manage.py sync_indexes --repair`"
                )
            )
        else:
            self.stdout.write(
                self.style.WARNING(
                    "drift found: run `manage.py sync_indexes --repair` (it rewrites what "
                    "differs; after a change of full-text backend or model, `manage.py "
                    "reindex` rebuilds the whole plane, either will do)"
                )
            )
        if options["fail_on_drift"]:
            raise SystemExit(1)
