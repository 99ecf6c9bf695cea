"""What the Django admin saves, through the same outbox as every other write.

The admin edits whole rows (a memory moved to another project, a project's
slug renamed); each function here saves what the admin built and queues the
index jobs the change implies, in one transaction, so no admin change can
leave a plane showing an item under its old project. The admin's forms
validate first (`memory_validate` runs in the memory form), so these only save.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from console import indexing
from console.models import Memory, Note, Project
from console.services.memories import (
    content_hash,
    memory_delete,
    memory_links_rewrite,
    tags_clean,
)
from console.services.notes import note_delete
from console.services.revisions import revision_record
from recall.types import MEMORY, NOTE


@transaction.atomic
def memory_admin_save(*, memory: Memory, created: bool) -> Memory:
    """Save the admin's memory (any field, its project too) and queue its index job."""
    memory.tags = tags_clean(tags=memory.tags)
    memory.content_hash = content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    if not created:
        memory.updated = timezone.now()
    memory.save()
    memory_links_rewrite(memory=memory)
    revision_record(memory=memory, op="create" if created else "edit")
    indexing.enqueue(MEMORY, memory.pk, "upsert")
    return memory


@transaction.atomic
def note_admin_save(*, note: Note, created: bool) -> Note:
    """Save the admin's note and queue its index job."""
    if not created:
        note.updated = timezone.now()
    note.save()
    indexing.enqueue(NOTE, note.pk, "upsert")
    return note


@transaction.atomic
def memories_delete(memories: Iterable[Memory]) -> None:
    for memory in memories:
        memory_delete(memory=memory)


@transaction.atomic
def notes_delete(notes: Iterable[Note]) -> None:
    for note in notes:
        note_delete(note=note)


@transaction.atomic
def project_admin_save(*, project: Project, previous_slug: str | None) -> Project:
    """Save the project; a renamed slug re-indexes its items (the planes store the slug)."""
    project.save()
    if previous_slug is not None and previous_slug != project.slug:
        _reindex_items_of(project)
    return project


@transaction.atomic
def projects_delete(projects: Iterable[Project]) -> None:
    """Delete projects with their memories and notes, and take those out of the planes."""
    for project in projects:
        jobs = [(MEMORY, pk, "delete") for pk in project.memories.values_list("pk", flat=True)]
        jobs += [(NOTE, pk, "delete") for pk in project.notes.values_list("pk", flat=True)]
        project.delete()
        indexing.enqueue_many(jobs, apply_on_commit=True)


def _reindex_items_of(project: Project) -> None:
    jobs = [(MEMORY, pk, "upsert") for pk in project.memories.values_list("pk", flat=True)]
    jobs += [(NOTE, pk, "upsert") for pk in project.notes.values_list("pk", flat=True)]
    indexing.enqueue_many(jobs, apply_on_commit=True)
