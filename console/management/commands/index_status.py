"""Rows per plane, pending jobs and drift between the database and the planes."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console import selectors


class Command(BaseCommand):
    help = "Report rows per plane, pending index jobs and drift against the database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fail-on-drift", action="store_true", help="exit 1 on any drift")

    def handle(self, *args: Any, **options: Any) -> None:
        s = selectors.index_status()
        self.stdout.write(f"database      {s.rows} items (memories + notes)")
        self.stdout.write(f"full text     {s.text_rows} rows  [{s.text_backend}]")
        vectors = "off" if s.vector_rows is None else f"{s.vector_rows} rows"
        self.stdout.write(f"vectors       {vectors}  [{s.vector_backend or 'none'}]")
        if s.vector_model:
            stale = "  STALE: the embedder now makes " + str(s.embedder_model)
            self.stdout.write(f"vector model  {s.vector_model}{stale if s.stale_model else ''}")
        self.stdout.write(f"pending jobs  {s.pending} ({s.failing} with errors)")
        self.stdout.write(
            f"drift         {s.drift} (text: {s.missing_text} missing, {s.extra_text} extra; "
            f"vectors: {s.missing_vectors} missing, {s.extra_vectors} extra"
            f"{', all stale' if s.stale_model else ''})"
        )
        if s.drift == 0:
            self.stdout.write(self.style.SUCCESS("no drift"))
        else:
            self.stdout.write(self.style.WARNING("drift found: run `manage.py reindex`"))
            if options["fail_on_drift"]:
                raise SystemExit(1)
