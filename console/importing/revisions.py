"""Revision records (a memory's recorded states, `type: revision`) into MemoryRevision.

A memory imported in this run takes the file's history in place of the
`import` revision the writer gave it, so an export imported into an empty
database exports the same bytes again. A memory that was already here keeps
the history this database recorded (the database is the source of truth):
the file's revisions of it are skipped. Revisions of a memory that exists
nowhere (it was deleted before the export) are imported when no history of
that id is stored yet, so what was known before a delete survives the trip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from console.importing.parsing import built
from console.models import Memory, MemoryRevision, Project
from console.reading import Record
from console.records import RecordError, parse_time
from console.services.memories import tags_clean

OPS = {op for op, _ in MemoryRevision.OPS}


def revision_build(
    data: dict[str, Any], *, project: Callable[[Any], Project | None]
) -> MemoryRevision:
    """An unsaved revision from its record; RecordError names a bad field."""
    memory_id, number, op = str(data.get("memory") or ""), data.get("number"), data.get("op")
    if not memory_id or len(memory_id) > 26:
        raise RecordError("a revision needs the id of its memory (`memory`, at most 26 characters)")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise RecordError(f"number: {number!r} is not a revision number (1, 2, ...)")
    if op not in OPS:
        raise RecordError(f"op: {op!r} is not one of {', '.join(sorted(OPS))}")
    valid_from = parse_time(data.get("valid_from"), key="valid_from")
    recorded_at = parse_time(data.get("recorded_at"), key="recorded_at")
    if valid_from is None or recorded_at is None:
        raise RecordError("a revision needs valid_from and recorded_at")
    return MemoryRevision(
        memory_id=memory_id, number=number, op=op, recorded_at=recorded_at,
        project=project(data.get("project")), kind=str(data.get("kind") or "fact"),
        name=str(data.get("name") or ""), description=str(data.get("description") or ""),
        body=str(data.get("body") or ""), tags=tags_clean(tags=data.get("tags") or []),
        importance=float(data.get("importance", 0.5)), valid_from=valid_from,
        invalid_at=parse_time(data.get("invalid_at"), key="invalid_at"),
        superseded_by_id=str(data.get("superseded_by") or ""),
        source=str(data.get("source") or ""), agent_id=str(data.get("agent_id") or ""),
        session_id=str(data.get("session_id") or ""), deleted=bool(data.get("deleted")),
        created=parse_time(data.get("created"), key="created"),
    )  # fmt: skip


def revisions_import(
    records: Iterable[Record], *, imported: set[str], project: Callable[[Any], Project | None]
) -> tuple[int, int, list[str]]:
    """Save the revision records (see the module docstring): (saved, skipped, errors)."""
    by_memory: dict[str, list[MemoryRevision]] = {}
    errors: list[str] = []
    for record, row in built(records, lambda data: revision_build(data, project=project), errors):
        rows = by_memory.setdefault(row.memory_id, [])
        if any(r.number == row.number for r in rows):
            errors.append(
                f"{record.where}: revision {row.number} of {row.memory_id} twice; skipped"
            )
            continue
        rows.append(row)
    ids = list(by_memory)
    stored = set(
        MemoryRevision.objects.filter(memory_id__in=ids).values_list("memory_id", flat=True)
    )
    present = set(Memory.objects.filter(pk__in=ids).values_list("pk", flat=True))
    saved, skipped = [], 0
    for memory_id, rows in by_memory.items():
        if memory_id in imported:
            MemoryRevision.objects.filter(memory_id=memory_id).delete()
        elif memory_id in present or memory_id in stored:
            skipped += len(rows)
            continue
        saved.extend(rows)
    MemoryRevision.objects.bulk_create(saved, batch_size=1000)
    return len(saved), skipped, errors
