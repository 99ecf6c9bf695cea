"""Import memories, notes and projects from JSON lines or markdown (see console/importing.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from console import importing, reading, selectors, services

PROGRESS_FROM = 500  # records; shorter runs print only the summary


class Command(BaseCommand):
    help = (
        "Import JSON-lines files (our export or the evaluation format) and markdown files "
        "or folders with YAML front matter. Bad records are reported and skipped; records "
        "imported before (same id, or same external id in the project) are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
        parser.add_argument("--project", help="import every memory and note into this project")
        parser.add_argument("--batch", type=int, default=256, help="rows per transaction")
        parser.add_argument(
            "--no-index",
            action="store_true",
            help="leave the index jobs queued (apply them with manage.py sync_indexes)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        services.bulk_mode()
        paths: list[Path] = options["files"]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise CommandError(f"not found: {', '.join(missing)}")
        if empty := reading.empty_folders(paths):
            raise CommandError("\n".join(empty))
        total = reading.count_records(paths)
        with tqdm(total=total, unit="rec", desc="import", disable=total < PROGRESS_FROM) as bar:
            try:
                report = importing.import_records(
                    reading.read_records(paths),
                    project=options["project"],
                    batch=options["batch"],
                    index=not options["no_index"],
                    progress=bar.update,
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        if not options["no_index"]:
            services.index_maintain()  # compaction, and the ANN index once the table is large
        for line in report.errors:
            self.stderr.write(self.style.ERROR(line))
        for line in report.warnings:
            self.stderr.write(self.style.WARNING(line))
        if options["no_index"]:
            indexed = "index jobs left queued"
        elif selectors.embedder_model() is not None:
            indexed = "embedding included"
        else:
            indexed = "full text only: no embedder configured"
        self.stdout.write(
            f"imported {report.imported} ({report.memories} memories, {report.notes} notes, "
            f"{report.projects} projects, {report.edges} edges, {report.revisions} revisions, "
            f"{report.digests} edited digests), "
            f"skipped {report.skipped}, "
            f"errors {len(report.errors)} in {report.seconds:.1f} s "
            f"({report.rate:.0f} memories/s, {indexed})"
        )
        if report.errors:  # the rest is imported; a script must still see the failure
            count = len(report.errors)
            raise CommandError(f"{count} record{'s' if count > 1 else ''} refused (listed above)")
