"""Rebuild both derived planes from the database (switching backends is this)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand
from tqdm import tqdm

from console import selectors, services


class Command(BaseCommand):
    help = "Rebuild the full-text and vector planes from the database, with batched embedding."

    def handle(self, *args: Any, **options: Any) -> None:
        services.bulk_mode()
        total = selectors.item_count()
        started = time.perf_counter()
        with tqdm(total=total, unit="item", desc="reindex", disable=total < 50) as bar:
            done = services.index_rebuild(progress=bar.update)
        seconds = time.perf_counter() - started
        rate = done / seconds if seconds else 0.0
        self.stdout.write(f"reindexed {done} items in {seconds:.1f} s ({rate:.0f} items/s)")
