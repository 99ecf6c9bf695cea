"""Writes. Every write commits its row and its IndexJob in one transaction.

Named `<entity>_<action>`, keyword-only. Validation errors are Django
`ValidationError`s with messages a person can act on; nothing is half-written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from console import indexing, selectors, wiring
from console.models import Edge, Memory, Note, Project, RetrievalEvent, Setting
from recall import links

MAX_BODY_CHARS = 200_000
MAX_TAGS = 32

MEMORY_FIELDS = (
    "kind",
    "name",
    "description",
    "body",
    "tags",
    "importance",
    "agent_id",
    "session_id",
    "session_order",
    "source",
    "valid_from",
    "external_id",
    "metadata",
)


def content_hash(*, name: str, description: str, body: str) -> str:
    return hashlib.sha256("\x00".join([name, description, body]).encode()).hexdigest()


# --- projects -----------------------------------------------------------------


def project_create(
    *, slug: str, name: str = "", description: str = "", isolation: str = "open"
) -> Project:
    project = Project(slug=slug, name=name or slug, description=description, isolation=isolation)
    project.full_clean()
    project.save()
    return project


def project_get_or_create(*, slug: str) -> Project:
    existing = Project.objects.filter(slug=slug).first()
    return existing or project_create(slug=slug)


# --- memories -----------------------------------------------------------------


def tags_clean(*, tags: Iterable[str] | None) -> list[str]:
    """Stripped, lower-cased, de-duplicated tags cut to 64 characters; at most MAX_TAGS."""
    out = []
    for tag in tags or []:
        tag = str(tag).strip().lower()
        if tag and tag not in out:
            out.append(tag[:64])
    if len(out) > MAX_TAGS:
        raise ValidationError({"tags": f"At most {MAX_TAGS} tags, got {len(out)}."})
    return out


def memory_validate(*, memory: Memory) -> None:
    """Raise ValidationError for a bad memory; cleans its tags in place (saves nothing)."""
    if len(memory.body) > MAX_BODY_CHARS:
        raise ValidationError(
            {
                "body": f"The body has {len(memory.body):,} characters; the limit is "
                f"{MAX_BODY_CHARS:,}. Split it into several memories or link a note."
            }
        )
    if not 0.0 <= float(memory.importance) <= 1.0:
        raise ValidationError({"importance": "Importance must be between 0 and 1."})
    memory.tags = tags_clean(tags=memory.tags)
    memory.full_clean(exclude=["superseded_by", "project"])


def _apply_fields(memory: Memory, fields: Mapping[str, Any]) -> None:
    unknown = set(fields) - set(MEMORY_FIELDS)
    if unknown:
        raise ValueError(f"unknown memory fields: {sorted(unknown)}")
    for key, value in fields.items():
        setattr(memory, key, value)


def memory_links_rewrite(*, memory: Memory) -> None:
    """Derived `wikilink` edges follow the body: parsed once, here, on every change.

    Each `[[name]]` resolves by the engine's one rule (`recall.links.prefer`:
    the active memory of that name in the memory's project, else the global
    one) and keeps its place in the body (`position`), the order links expand in.
    """
    Edge.objects.filter(src=memory, origin="wikilink").delete()
    names = links.names(memory.body)
    if not names:
        return
    targets = selectors.memory_ids_by_name(names, project_id=memory.project_id, exclude=memory.pk)
    Edge.objects.bulk_create(
        [
            Edge(src=memory, dst_id=targets[name], origin="wikilink", position=n)
            for n, name in enumerate(names)
            if name in targets
        ],
        ignore_conflicts=True,
    )


def _link_waiting_sources(memory: Memory) -> None:
    """Bodies that already linked to this name before it existed now get their edge."""
    scope = Q(project_id=memory.project_id) if memory.project_id else Q()
    sources = Memory.objects.filter(scope, body__contains=f"[[{memory.name}").exclude(pk=memory.pk)
    for source in sources:
        if memory.name in links.names(source.body):
            memory_links_rewrite(memory=source)


@transaction.atomic
def memory_create(
    *, project: Project | None, created: datetime | None = None, **fields: Any
) -> Memory:
    memory = Memory(project=project)
    _apply_fields(memory, fields)
    memory.created = memory.updated = created or timezone.now()
    memory_validate(memory=memory)
    memory.content_hash = content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    memory.save(force_insert=True)
    memory_links_rewrite(memory=memory)
    _link_waiting_sources(memory)
    indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_update(*, memory: Memory, **fields: Any) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    _apply_fields(memory, fields)
    memory_validate(memory=memory)
    memory.content_hash = content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    memory.updated = timezone.now()
    memory.save()
    memory_links_rewrite(memory=memory)
    indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_supersede(*, memory: Memory, **fields: Any) -> Memory:
    """Create the replacement and stamp the old one, atomically."""
    old = Memory.objects.select_for_update().get(pk=memory.pk)
    if old.invalid_at is not None:
        raise ValidationError("This memory is no longer active; supersede its replacement instead.")
    carried = {f: getattr(old, f) for f in MEMORY_FIELDS if f not in fields}
    carried.pop("external_id", None)
    new = memory_create(project=old.project, **{**carried, **fields})
    old.invalid_at = timezone.now()
    old.superseded_by = new
    old.save(update_fields=["invalid_at", "superseded_by"])
    indexing.enqueue("memory", old.pk, "upsert")
    return new


@transaction.atomic
def memory_archive(*, memory: Memory) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.invalid_at is None:
        memory.invalid_at = timezone.now()
        memory.save(update_fields=["invalid_at"])
        indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_restore(*, memory: Memory) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.superseded_by_id:
        raise ValidationError("A superseded memory cannot be restored; edit its replacement.")
    if memory.invalid_at is not None:
        memory.invalid_at = None
        memory.save(update_fields=["invalid_at"])
        indexing.enqueue("memory", memory.pk, "upsert")
    return memory


@transaction.atomic
def memory_delete(*, memory: Memory) -> None:
    pk = memory.pk
    Memory.objects.filter(superseded_by_id=pk).update(superseded_by=None)
    Memory.objects.filter(pk=pk).delete()
    indexing.enqueue("memory", pk, "delete")


def memory_mark_accessed(*, ids: Iterable[str], at: datetime | None = None) -> None:
    Memory.objects.filter(pk__in=list(ids)).update(
        access_count=F("access_count") + 1, last_accessed_at=at or timezone.now()
    )


# --- what agents and people saw -----------------------------------------------


def retrieval_record(
    *, kind: str, ids: Sequence[str], query: str = "", project: str | None, agent: str = ""
) -> None:
    """One RetrievalEvent (`miss` when nothing was shown): feeds usage and history."""
    RetrievalEvent.objects.create(
        kind=kind if ids else "miss",
        ids=list(ids),
        query=query[:2000],
        project=project or "",
        agent=agent,
    )


def memory_read_record(*, memory: Memory, agent: str = "") -> None:
    """An agent read one memory in full: counted, and recorded (reads weigh most in usage)."""
    memory_mark_accessed(ids=[memory.pk])
    project = memory.project.slug if memory.project else None
    retrieval_record(kind="read", ids=[memory.pk], project=project, agent=agent)


# --- notes --------------------------------------------------------------------

NOTE_FIELDS = ("title", "slug", "description", "body", "tags", "source_url")


@transaction.atomic
def note_create(*, project: Project | None, **fields: Any) -> Note:
    unknown = set(fields) - set(NOTE_FIELDS) - {"created"}
    if unknown:
        raise ValueError(f"unknown note fields: {sorted(unknown)}")
    note = Note(project=project, **fields)
    if not note.slug:
        note.slug = slugify_name(note.title)
    note.tags = tags_clean(tags=note.tags)
    if len(note.body) > MAX_BODY_CHARS:
        raise ValidationError({"body": f"The body is over {MAX_BODY_CHARS:,} characters."})
    note.full_clean(exclude=["project"])
    note.save(force_insert=True)
    indexing.enqueue("note", note.pk, "upsert")
    return note


@transaction.atomic
def note_update(*, note: Note, **fields: Any) -> Note:
    note = Note.objects.select_for_update().get(pk=note.pk)
    for key, value in fields.items():
        if key not in NOTE_FIELDS:
            raise ValueError(f"unknown note field: {key}")
        setattr(note, key, value)
    note.tags = tags_clean(tags=note.tags)
    if len(note.body) > MAX_BODY_CHARS:
        raise ValidationError({"body": f"The body is over {MAX_BODY_CHARS:,} characters."})
    note.full_clean(exclude=["project"])
    note.updated = timezone.now()
    note.save()
    indexing.enqueue("note", note.pk, "upsert")
    return note


@transaction.atomic
def note_delete(*, note: Note) -> None:
    pk = note.pk
    note.delete()
    indexing.enqueue("note", pk, "delete")


def slugify_name(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:120] or "untitled"


# --- favorites and settings ---------------------------------------------------


def favorite_toggle(*, item: Memory | Note, value: bool | None = None) -> bool:
    """Star or unstar; never bumps `updated` (a star is not an edit)."""
    new = (not item.favorite) if value is None else value
    type(item).objects.filter(pk=item.pk).update(favorite=new)
    item.favorite = new
    return new


def setting_save(*, key: str, value: Mapping[str, Any], user: str = "") -> Setting:
    row, _ = Setting.objects.update_or_create(
        key=key, defaults={"value": dict(value), "updated": timezone.now(), "updated_by": user}
    )
    return row


def setting_reset(*, key: str) -> None:
    Setting.objects.filter(key=key).delete()


# --- the derived planes ---------------------------------------------------------


def index_sync(*, limit: int | None = None) -> indexing.ApplyReport:
    """Apply (retry) pending index jobs now."""
    return indexing.apply_pending(limit=limit)


def index_rebuild(*, progress: Callable[[int], None] | None = None) -> int:
    """Recreate both planes from the database; the number of items indexed."""
    return indexing.rebuild(progress=progress)


def index_maintain() -> None:
    """Compact the vector table and build its ANN index once it is large."""
    indexing.maintain()


def bulk_mode() -> None:
    """For batch commands (import, reindex): embed on every core from now on."""
    wiring.use_batch_threads()
