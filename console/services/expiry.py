"""Purging expired memories: rows go, and their plane entries follow through the outbox.

An expired memory already leaves every read the moment its `expires_at`
passes (`console.store`, `recall.decay.expired`); purging frees its row,
edges, feedback and index entries. Run by `manage.py expire` and, every
`--expire-every` seconds, by `manage.py index_worker`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from console import indexing
from console.models import Memory

PURGE_BATCH = 500


@dataclass(frozen=True, slots=True)
class Expired:
    """One memory past its expiry (what `--dry-run` lists)."""

    id: str
    name: str
    project: str | None
    expires_at: datetime


def memories_expired(*, now: datetime | None = None) -> list[Expired]:
    """Every memory whose `expires_at` is at or before `now`, soonest first."""
    rows = Memory.objects.filter(expires_at__lte=now or timezone.now())
    columns = rows.order_by("expires_at", "pk").values_list(
        "pk", "name", "project__slug", "expires_at"
    )
    return [Expired(pk, name, slug, at) for pk, name, slug, at in columns if at is not None]


def memories_expire(*, now: datetime | None = None, dry_run: bool = False) -> list[Expired]:
    """Delete the memories expired by `now` with one outbox delete job each (in batches,
    each one transaction); `dry_run` deletes nothing. Returns what was (or would be) purged."""
    expired = memories_expired(now=now)
    if dry_run:
        return expired
    for start in range(0, len(expired), PURGE_BATCH):
        ids = [e.id for e in expired[start : start + PURGE_BATCH]]
        with transaction.atomic():
            Memory.objects.filter(superseded_by_id__in=ids).update(superseded_by=None)
            Memory.objects.filter(pk__in=ids).delete()
            indexing.enqueue_many([("memory", i, "delete") for i in ids], apply_on_commit=True)
    return expired
