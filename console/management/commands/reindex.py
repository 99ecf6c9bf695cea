"""Rebuild both derived planes from the database (switching backends is this)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from console import selectors, services


class Command(BaseCommand):
    help = "Rebuild the full-text and vector planes from the database, with batched embedding."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--vectors-from",
            type=Path,
            help="an embedded deployment's LanceDB directory (RECALL_DATA_DIR/vectors) whose "
            "vectors to copy where the text and model are unchanged, instead of embedding",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        services.bulk_mode()
        total = selectors.item_count()
        started = time.perf_counter()
        source = options.get("vectors_from")
        if source is not None and not source.is_dir():  # it was ignored: all embedded again
            raise CommandError(
                f"--vectors-from {source}: no such folder (give RECALL_DATA_DIR/vectors of the "
                "deployment whose vectors to copy)"
            )
        for bad in selectors.planes_unreadable():  # a damaged folder: rebuilt from empty
            if bad.in_database:  # a table: nothing to set aside
                raise CommandError(f"{bad}. {bad.advice}")
            if bad.folder is None:
                raise CommandError(f"{bad}: make it readable and run again")
            moved = services.plane_set_aside(bad)
            self.stdout.write(f"{bad}: set it aside as {moved}, to rebuild it from the database")
        with tqdm(total=total, unit="item", desc="reindex", disable=total < 50) as bar:
            done = services.index_rebuild(progress=bar.update, vectors_from=source)
        seconds = time.perf_counter() - started
        rate = done.items / seconds if seconds else 0.0
        if done.embedded >= done.items:  # "the other vectors copied" read so with none
            vectors = f"embedded {done.embedded} texts"
        else:
            vectors = f"embedded {done.embedded} texts, the other vectors copied"
        self.stdout.write(
            f"reindexed {done.items} items in {seconds:.1f} s ({rate:.0f} items/s); "
            f"{vectors}; writing the planes {done.writing_s:.1f} s, compacting them "
            f"{done.maintaining_s:.1f} s"
        )
