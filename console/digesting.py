"""Altitude digests in the database: built from the rows, kept fresh through the outbox.

A digest is rebuilt by a job in the outbox (`IndexJob`, item "digest",
item_id the project's slug or "" for the global memories), never on a
request's path: `touched` (called by `console.indexing` after each batch of
memory jobs) marks the digests of the projects the batch changed stale and
queues one job per project (no second job while one waits: one rebuild per
project per batch, however many rows changed); `indexing.apply_digests`
(the index worker, `manage.py sync_indexes`) runs them. A recall that asks
for a digest that does not exist yet queues its first build (`queue`).

A person's edit is kept (`edited`): an automatic rebuild then only marks it
stale, until the person asks for a rebuild (`rebuild(force=True)`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.utils import timezone

from console import store, wiring
from console.models import Digest, IndexJob, Memory, Project
from recall import digest as digests

log = logging.getLogger(__name__)
DIGEST = "digest"
VECTORS = digests.VectorCache()  # this process's sentence vectors: rebuilds embed what changed


def key_of(project: str | None) -> str:
    return project or ""


def to_value(row: Digest) -> digests.Digest:
    """The engine's value of a stored digest."""
    sentences = tuple(
        digests.Sentence(
            str(s.get("text", "")),
            str(s.get("source", "")),
            tuple(str(i) for i in s.get("covers", [])),
            float(s.get("score", 0.0)),
        )  # fmt: skip
        for s in row.sentences
    )
    project = row.key or None
    return digests.Digest(project, sentences, row.built_at, row.edited, row.stale)


def stored(projects: Iterable[str | None]) -> list[digests.Digest]:
    """The stored digests of `projects` (None: the global one), in the given order."""
    keys = [key_of(p) for p in projects]
    rows = {row.key: row for row in Digest.objects.filter(key__in=keys)}
    return [to_value(rows[k]) for k in keys if k in rows]


def queue(projects: Iterable[str | None]) -> int:
    """Queue a rebuild of each project's digest, unless one already waits; how many queued."""
    keys = {key_of(p) for p in projects}
    waiting = IndexJob.objects.filter(item=DIGEST, item_id__in=keys, claimed_until__isnull=True)
    fresh = sorted(keys - set(waiting.values_list("item_id", flat=True)))
    IndexJob.objects.bulk_create([IndexJob(item=DIGEST, item_id=k, op="upsert") for k in fresh])
    return len(fresh)


def touched(projects: Iterable[str | None], gone: Iterable[str] = ()) -> None:
    """After a batch of memory jobs: the digests of these projects, and those that cover
    a deleted memory, are stale; queue their rebuilds. Projects without a digest stay
    without one until something asks for it."""
    keys = {key_of(p) for p in projects}
    gone = set(gone)
    if gone:
        keys |= {
            row.key
            for row in Digest.objects.only("key", "sentences")
            if any(gone.intersection(s.get("covers", [])) for s in row.sentences)
        }
    rows = Digest.objects.filter(key__in=keys)
    found = list(rows.values_list("key", flat=True))
    if found:
        rows.update(stale=True)
        queue(k or None for k in found)


def _records(project: Project | None) -> list[Any]:
    """The project's live memories: active and not expired (an expired one is gone from
    every read at its instant, before `expire` purges it)."""
    rows = Memory.objects.filter(project=project, invalid_at__isnull=True)
    rows = rows.exclude(expires_at__lte=timezone.now()).order_by("id")
    return store.memory_records(rows)


def rebuild(project: str | None, *, force: bool = False) -> Digest | None:
    """Build the project's digest from its active memories now (None: no embedder).

    Unchanged rows (same fingerprint) are not rebuilt unless `force`; an
    edited digest is only marked stale unless `force` (a person asked).
    """
    embedder = wiring.embedder()
    if embedder is None:
        log.warning("no embedder is configured: digests cannot be built")
        return None
    owner = Project.objects.get(slug=project) if project else None
    records = _records(owner)
    fingerprint = digests.fingerprint(records, embedder.model)
    row, _ = Digest.objects.get_or_create(key=key_of(project), defaults={"project": owner})
    if not force and (row.edited or (row.fingerprint == fingerprint and row.built_at)):
        row.stale = row.fingerprint != fingerprint
        row.save(update_fields=["stale"])
        return row
    counter = wiring.engine().planes.tokens
    built = digests.build(
        records, project=project, embedder=embedder, counter=counter, now=timezone.now(),
        cache=VECTORS,
    )  # fmt: skip
    row.sentences = sentence_rows(built.sentences)
    row.tokens = counter.count(built.text)
    row.fingerprint, row.model, row.built_at = fingerprint, embedder.model, built.built_at
    row.stale = row.edited = False
    row.edited_by, row.edited_at = "", None
    row.save()
    return row


def sentence_rows(sentences: Sequence[digests.Sentence]) -> list[dict[str, Any]]:
    return [
        {"text": s.text, "source": s.source, "covers": list(s.covers), "score": s.score}
        for s in sentences
    ]
