"""Datasets into the (throwaway) database through the normal import path."""

from __future__ import annotations

import io
import time
from pathlib import Path

from django.core.management import CommandError, call_command, get_commands

from console import indexing
from console.models import IndexJob, Memory


def migrate() -> None:
    call_command("migrate", verbosity=0, interactive=False)


def drain() -> int:
    """Apply every pending index job (the loader's batches); returns how many."""
    applied = 0
    while IndexJob.objects.exists():
        report = indexing.apply_pending()
        applied += report.applied
        if report.applied == 0:
            failing = IndexJob.objects.exclude(last_error="").values_list("last_error", flat=True)
            raise RuntimeError(f"index jobs keep failing: {list(failing[:3])}")
    return applied


def import_path(path: Path) -> dict[str, float | str]:
    """`manage.py import_memories PATH`, then drain the outbox; timed together."""
    if "import_memories" not in get_commands():
        raise RuntimeError("manage.py import_memories is not available in this tree")
    started = time.perf_counter()
    refused = ""
    try:
        call_command("import_memories", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    except CommandError as exc:  # records it refused: the rest is imported, and measured
        refused = str(exc)
    drain()
    seconds = time.perf_counter() - started
    count = Memory.objects.count()
    load = {"memories": count, "seconds": round(seconds, 2), "per_s": round(count / seconds, 1)}
    return load | ({"refused": refused} if refused else {})


def external_ids() -> dict[str, str]:
    """Memory primary key -> the dataset's own id (Memory.external_id)."""
    return dict(Memory.objects.exclude(external_id="").values_list("pk", "external_id"))


def vector_copy_ready() -> dict[str, float]:
    """Wait for the in-process vector copy (when configured); its load time in s.

    Until it is loaded LanceDB answers searches, with slightly different
    scores: a harness that compares or times searches waits for it first."""
    from console import wiring
    from recall.indexes.hot_vectors import HotVectorIndex

    vectors = wiring.vector_index()
    if not isinstance(vectors, HotVectorIndex):
        return {}
    started = time.perf_counter()
    vectors.wait_ready()
    return {"vector_copy_load_s": round(time.perf_counter() - started, 2)}
