"""What agents and people saw: retrieval events feed usage and the history pages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from console.models import Memory, RetrievalEvent
from console.services.memories import memory_mark_accessed


def retrieval_record(
    *,
    kind: str,
    ids: Sequence[str],
    query: str = "",
    project: str | None,
    agent: str = "",
    at: datetime | None = None,
    pack_id: str = "",
    budget: int | None = None,
) -> None:
    """One RetrievalEvent (`miss` when nothing was shown): feeds usage and history;
    a recall's carries its `pack_id` (what `POST /feedback` names) and its budget."""
    RetrievalEvent.objects.create(
        kind=kind if ids else "miss",
        ids=list(ids),
        query=query[:2000].replace("\x00", " "),  # a log line; PostgreSQL text holds no NUL
        project=project or "",
        agent=agent,
        at=at or timezone.now(),
        pack_id=pack_id,
        budget=budget,
    )


def memory_read_record(*, memory: Memory, agent: str = "") -> None:
    """An agent read one memory in full: counted, and recorded (reads weigh most in usage)."""
    memory_mark_accessed(ids=[memory.pk])
    project = memory.project.slug if memory.project else None
    retrieval_record(kind="read", ids=[memory.pk], project=project, agent=agent)
