"""Load the demo projects, memories and notes (console/demo.py) and index them."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import demo


class Command(BaseCommand):
    help = "Load demo data: four projects with memories, a supersede, favorites, links, notes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-empty", action="store_true", help="do nothing when any memory exists"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = demo.demo_load(if_empty=options["if_empty"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if report is None:
            self.stdout.write("memories exist already: demo data not loaded")
            return
        self.stdout.write(
            f"loaded {report.projects} projects, {report.memories} memories "
            f"({report.superseded} superseded, {report.favorites} favorites), "
            f"{report.notes} notes and {report.edges} links in {report.seconds:.1f} s"
        )
