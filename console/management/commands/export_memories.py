"""Export projects, memories, notes and explicit edges (see console/exporting.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import exporting

PLURALS = {
    "project": "projects",
    "memory": "memories",
    "note": "notes",
    "edge": "edges",
    "revision": "revisions",
    "digest": "edited digests",
}


class Command(BaseCommand):
    help = (
        "Export everything (or one project) as JSON lines, one record per line with a 'type' "
        "of project, memory, note or edge; or as markdown, one file per item in a folder per "
        "project. Importing the export into an empty database and exporting again gives "
        "identical files."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, help="a .jsonl file or a folder")
        parser.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
        parser.add_argument("--project", help="only this project (its memories, notes, edges)")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options["out"]
        export = (
            exporting.export_markdown if options["format"] == "markdown" else exporting.export_jsonl
        )
        try:
            counts = export(out, project=options["project"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:  # a folder where a file goes, a file where a folder goes, ...
            raise CommandError(f"cannot export to {out}: {exc.strerror or exc}") from exc
        summary = ", ".join(f"{n} {PLURALS[kind]}" for kind, n in counts.items())
        self.stdout.write(f"exported {summary} to {out}")
