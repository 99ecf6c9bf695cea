"""Notes: people's longer write-ups, indexed like memories."""

from __future__ import annotations

import re
from typing import Any

from anyascii import anyascii
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console import indexing
from console.models import Note, Project, validate_source_url
from console.services.memories import MAX_BODY_CHARS, tags_clean
from recall.query import fold

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
    note.full_clean(exclude=["project", "source_url"])  # the API's pattern, not URLValidator
    validate_source_url(note.source_url)
    note.updated = timezone.now()
    note.save()
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
