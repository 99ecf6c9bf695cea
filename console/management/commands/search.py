"""Try Search by hand: `manage.py search "deploy" --project billing-api --no-semantic`.

Prints one line per hit (rank, source, score, each channel's rank and raw
score, similarity) and the snippet, matches in «guillemets» (brackets ran into
`[[links]]`: `[[[rollback]-billing]]`), each of its lines indented under the
hit and blank ones left out (a snippet of a list or a code block began its
second line at the margin, where it read as the next hit). A starred hit says
"starred": favorites come first, so one ranked above hits whose scores are
higher, with nothing said why. Nothing is recorded.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import selectors
from console.management.projects import unknown
from recall import RecallError
from recall.sanitize import MARK_END, MARK_START


class Command(BaseCommand):
    help = "Run a console Search and print the hits with their provenance and snippets."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="what to look for")
        parser.add_argument("--project", action="append", help="repeatable; default: all")
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--offset", type=int, default=0)
        parser.add_argument(
            "--no-semantic", action="store_true", help="full text only (the palette's fast path)"
        )
        parser.add_argument("--archived", action="store_true", help="include archived ones")

    def handle(self, *args: Any, **options: Any) -> None:
        unknown(options["project"])
        try:
            result = selectors.memory_search(
                query=options["query"], projects=options["project"], limit=options["limit"],
                offset=options["offset"], semantic=not options["no_semantic"],
                include_inactive=options["archived"],
            )  # fmt: skip
        except RecallError as exc:
            raise CommandError(str(exc)) from exc
        for n, hit in enumerate(result.hits, result.offset + 1):
            channels = ", ".join(f"{p.channel} #{p.rank} ({p.raw:.3f})" for p in hit.sources)
            similarity = f", cosine {hit.similarity:.3f}" if hit.similarity is not None else ""
            archived = "" if hit.active else " (archived)"
            starred = " starred" if hit.favorite else ""
            self.stdout.write(
                f"{n:>3}. {hit.title} [{hit.memory_kind or hit.kind}, {hit.project or 'global'}]"
                f"{archived}{starred} {hit.source} score {hit.score:.4f}{similarity}; {channels}"
            )
            if hit.snippet:
                snippet = hit.snippet.replace(MARK_START, "«").replace(MARK_END, "»")
                for line in filter(str.strip, snippet.splitlines()):
                    self.stdout.write(f"       {line.rstrip()}")
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(warning))
        shown = f"{result.offset + 1}-{result.offset + len(result.hits)}" if result.hits else "0"
        more = " or more (--offset reads on)" if result.more else ""
        self.stdout.write(f"hits {shown} of {result.total}{more}")
