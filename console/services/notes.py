"""Notes: people's longer write-ups, indexed like memories."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from anyascii import anyascii
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console import indexing, selectors
from console.models import Note, Project, validate_source_url
from console.services import locks
from console.services.memories import MAX_BODY_CHARS, tags_clean
from recall.query import fold
from recall.types import NOTE

NOTE_FIELDS = ("title", "slug", "description", "body", "tags", "source_url")


@transaction.atomic
def note_create(
    *, project: Project | None, embedded: indexing.Embedded | None = None, **fields: Any
) -> Note:
    """A new note. `embedded`: its text's vector, embedded by the caller before this
    transaction (`indexing.embedded`), kept for the index worker, as a memory's is."""
    if embedded is not None:
        indexing.keep(embedded)
    unknown = set(fields) - set(NOTE_FIELDS) - {"created"}
    if unknown:
        raise ValueError(f"unknown note fields: {sorted(unknown)}")
    note = Note(project=project, **fields)
    if not note.slug:
        note.slug = _free(slugify_name(note.title), project)
    note.tags = tags_clean(tags=note.tags)
    if len(note.body) > MAX_BODY_CHARS:
        raise ValidationError({"body": f"The body is over {MAX_BODY_CHARS:,} characters."})
    note.full_clean(exclude=["project", "source_url"])  # the API's pattern, not URLValidator
    validate_source_url(note.source_url)
    note.save(force_insert=True)
    indexing.enqueue("note", note.pk, "upsert")
    return note


@dataclass(frozen=True, slots=True)
class NoteOutcome:
    """A note write's result: the note, and whether this call created it."""

    note: Note
    created: bool


@transaction.atomic
def note_write(
    *, project: Project | None, embedded: indexing.Embedded | None = None, **fields: Any
) -> NoteOutcome:
    """A new note, unless a note of the project holds exactly this title and body: then
    that note is the answer and nothing is written, as a memory written twice is (an
    agent retrying without a key, or two agents, stored the same note twice, told only
    by the second reply's dedup hint). A near-duplicate is still written."""
    title, body = str(fields.get("title") or ""), str(fields.get("body") or "")
    said = hashlib.sha256(f"{title}\x1f{body}".encode(errors="surrogatepass")).hexdigest()
    locks.hold([f"note:{project.pk if project else ''}:{said}"])
    same = selectors.note_same(project=project, title=title, body=body)
    if same is not None:
        return NoteOutcome(same, False)
    return NoteOutcome(note_create(project=project, embedded=embedded, **fields), True)


TEXT_FIELDS = ("title", "description", "body")  # what a note's vector is made of


def note_edit(*, note: Note, **fields: Any) -> Note:
    """`note_update` with its vector worked out before the transaction: an edit of the
    text embeds it once here (the worker stores that vector, as a new note's); any other
    edit hands on the vector the plane holds (no embedding at all); an edit that changes
    nothing writes nothing. Each edit was embedded again by the worker, text or not."""
    if all(getattr(note, k) == v for k, v in fields.items() if k in NOTE_FIELDS):
        return note
    after = {k: str(fields.get(k, getattr(note, k))) for k in TEXT_FIELDS}
    project = note.project.slug if note.project else None
    if any(after[k] != getattr(note, k) for k in TEXT_FIELDS):
        name = str(fields.get("slug", note.slug))
        embedded = indexing.embedded(project=project, name=name, item=NOTE, **after)
    else:
        embedded = indexing.kept_vector(NOTE, note.pk, project=project, name=note.slug, **after)
    return note_update(note=note, embedded=embedded, **fields)


@transaction.atomic
def note_update(*, note: Note, embedded: indexing.Embedded | None = None, **fields: Any) -> Note:
    """Apply `fields`; `embedded`: the edited note's vector (`note_edit`), kept for the
    index worker. Nothing is written, and no job queued, when no field changes."""
    note = Note.objects.select_for_update().get(pk=note.pk)
    for key in fields:
        if key not in NOTE_FIELDS:
            raise ValueError(f"unknown note field: {key}")
    if all(getattr(note, k) == v for k, v in fields.items()):
        return note
    for key, value in fields.items():
        setattr(note, key, value)
    note.tags = tags_clean(tags=note.tags)
    if len(note.body) > MAX_BODY_CHARS:
        raise ValidationError({"body": f"The body is over {MAX_BODY_CHARS:,} characters."})
    note.full_clean(exclude=["project", "source_url"])  # the API's pattern, not URLValidator
    validate_source_url(note.source_url)
    note.updated = timezone.now()
    note.save()
    if embedded is not None:
        indexing.keep(embedded)
    indexing.enqueue("note", note.pk, "upsert")
    return note


@transaction.atomic
def note_delete(*, note: Note) -> None:
    pk = note.pk
    note.delete()
    indexing.enqueue("note", pk, "delete")


def _free(slug: str, project: Project | None) -> str:
    """`slug`, or `slug-2`, `slug-3`, ... when a note of the project holds it (two notes of
    one title were told apart nowhere: the same slug in the list, the search, the palette)."""
    taken = set(
        Note.objects.filter(project=project, slug__startswith=slug).values_list("slug", flat=True)
    )
    n, free = 1, slug
    while free in taken:
        n += 1
        free = f"{slug[: 120 - len(str(n)) - 1]}-{n}"
    return free


def slugify_name(text: str) -> str:
    """A name made of `text`'s letters and digits: accents off, as search reads them
    ("Hermès café" -> "hermes-cafe", not "herm-s-caf"), other scripts spelled in
    Latin letters ("Развертывание" -> "razvertyvanie", not "untitled" for every
    note titled in Cyrillic, Greek, Arabic or Chinese)."""
    slug = re.sub(r"[^a-z0-9]+", "-", anyascii(fold(text)).lower()).strip("-")
    return slug[:120] or "untitled"
