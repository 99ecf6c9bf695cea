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
    counts: bool = True,
) -> None:
    """One RetrievalEvent (`miss` when nothing was shown): feeds usage (unless not
    `counts`) and history; a recall's carries its `pack_id` (what `POST /feedback`
    names) and its budget."""
    RetrievalEvent.objects.create(
        kind=kind if ids else "miss",
        ids=list(ids),
        query=query[:2000].replace("\x00", " "),  # a log line; PostgreSQL text holds no NUL
        project=project or "",
        agent=agent,
        at=at or timezone.now(),
        pack_id=pack_id,
        budget=budget,
        counts=counts,
    )


def memory_read_record(*, memory: Memory, agent: str = "", counts: bool = True) -> None:
    """An agent read one memory in full: recorded, and when it `counts`, counted
    (access_count and last_accessed_at, which decay reads; reads weigh most in usage)."""
    if counts:
        memory_mark_accessed(ids=[memory.pk])
    project = memory.project.slug if memory.project else None
    retrieval_record(kind="read", ids=[memory.pk], project=project, agent=agent, counts=counts)
