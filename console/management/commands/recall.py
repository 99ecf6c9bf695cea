"""Try Recall by hand: `manage.py recall "how do we deploy" --project billing-api`.

Prints the pack as an agent would get it, one item per block: rank, source,
score, each channel's rank and raw score, tokens, then the item's text.
`--json` prints the agent's exact reply instead. Nothing is recorded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from console import selectors
from console.management.projects import unknown
from recall import RecallError
from recall.agent import dumps, pack_view


class Command(BaseCommand):
    help = "Run a Recall as an agent would and print the pack with each hit's provenance."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query", help="what the agent asks for")
        parser.add_argument("--project", help="the project it is bound to (default: global only)")
        parser.add_argument("--budget", type=int, help="tokens (default: the configured one)")
        parser.add_argument("--limit", type=int, help="ranked hits considered")
        parser.add_argument("--kind", help="only this memory kind")
        parser.add_argument("--detail", choices=("full", "index"), default="full")
        parser.add_argument("--json", action="store_true", help="the agent's exact reply")

    def handle(self, *args: Any, **options: Any) -> None:
        unknown(options["project"] and [options["project"]])
        try:
            pack = selectors.memory_recall(
                query=options["query"], project=options["project"], budget=options["budget"],
                limit=options["limit"], kind=options["kind"], detail=options["detail"],
                debug=True,
            )  # fmt: skip
        except RecallError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            # without debug's block and each item's `sources`, as an agent receives it
            self.stdout.write(dumps(pack_view(replace(pack, debug=None))))
            return
        for n, hit in enumerate(pack.items, 1):
            where = hit.project or "global"
            channels = ", ".join(f"{p.channel} #{p.rank} ({p.raw:.3f})" for p in hit.sources)
            self.stdout.write(
                f"{n:>2}. {hit.name} [{hit.memory_kind or hit.kind}, {where}] {hit.source} "
                f"score {hit.score:.4f}, {hit.tokens} tokens; {channels}"
            )
            for line in (hit.text or hit.description).splitlines()[:6]:
                self.stdout.write(f"      {line}")
        for warning in pack.warnings:
            self.stderr.write(self.style.WARNING(warning))
        self.stdout.write(
            f"{len(pack.items)} items, {pack.omitted} omitted, {pack.tokens}/{pack.budget} tokens"
        )
