"""Transaction time: every change of a memory kept as a revision row.

`revision_record` is called by each memory write (create, edit, supersede,
archive, restore, delete, the admin's save, the importer) inside that
write's own transaction, so a change and its revision commit together or
not at all. A revision is a snapshot of the fields that matter to what an
agent is told (`SNAPSHOT`); a star and an access count are not revisions.
A deleted memory keeps its revisions, the last one a `delete`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Max
from django.utils import timezone

from console import actor
from console.models import Memory, MemoryRevision

SNAPSHOT = (
    "project_id", "kind", "name", "description", "body", "tags", "importance",
    "valid_from", "invalid_at", "source", "agent_id", "session_id", "created",
)  # fmt: skip


def revision_of(memory: Memory, *, op: str, number: int, at: datetime) -> MemoryRevision:
    """An unsaved revision: `memory` as it is now, numbered `number`, recorded `at`."""
    values = {f: getattr(memory, f) for f in SNAPSHOT}
    return MemoryRevision(
        memory_id=memory.pk, number=number, op=op, recorded_at=at,
        superseded_by_id=memory.superseded_by_id or "", deleted=op == "delete",
        changed_by=actor.name(), **values,
    )  # fmt: skip


def revision_record(*, memory: Memory, op: str, at: datetime | None = None) -> MemoryRevision:
    """Save the next revision of `memory` (the caller holds its transaction)."""
    last = MemoryRevision.objects.filter(memory_id=memory.pk).aggregate(n=Max("number"))["n"]
    row = revision_of(memory, op=op, number=(last or 0) + 1, at=at or timezone.now())
    row.save(force_insert=True)
    return row


def revisions_record_new(memories: Iterable[Memory], *, op: str) -> None:
    """Revision 1 of memories saved just now (a batch: one insert)."""
    now = timezone.now()
    MemoryRevision.objects.bulk_create([revision_of(m, op=op, number=1, at=now) for m in memories])
