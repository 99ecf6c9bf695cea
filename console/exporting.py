"""Export of projects, memories, notes and explicit edges (formats: console/records.py).

JSON lines: projects by slug, then memories, notes and explicit edges by id,
then every memory's revisions and the altitude digests a person edited (an
automatic digest is rebuilt from the rows), keys in a fixed order
(`records.*_KEYS`; inside a record, every mapping's keys sorted), timestamps
ISO-8601 UTC, so SQLite and PostgreSQL export the same rows as the same bytes. Markdown:
one file per item in a folder per project, explicit edges in their source
memory's front matter. Wikilink edges are not exported: they are derived
from bodies on import. Importing an export into an empty database and
exporting again gives identical bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from console.models import Digest, Edge, Memory, MemoryRevision, Note, Project
from console.records import (
    DIGEST_KEYS,
    MEMORY_KEYS,
    NOTE_KEYS,
    PROJECT_KEYS,
    REVISION_KEYS,
    TYPES,
    iso,
    markdown_text,
)


def _keyed(
    row: Memory | Note | MemoryRevision | Digest, keys: tuple[str, ...], times: tuple[str, ...],
    **values: Any,
) -> dict[str, Any]:  # fmt: skip
    """The record in `keys` order: its `type` and `values`, its project's slug, the
    `times` as ISO-8601 UTC, and otherwise the row's own attribute of that name."""
    values["project"] = row.project.slug if row.project else None
    values |= {t: iso(getattr(row, t)) for t in times}
    return {k: values[k] if k in values else getattr(row, k) for k in keys}


def project_record(p: Project) -> dict[str, Any]:
    values = {
        "type": "project",
        "slug": p.slug,
        "name": p.name,
        "description": p.description,
        "parent": p.parent.slug if p.parent else None,
        "isolation": p.isolation,
        "favorite": p.favorite,
        "retired_at": iso(p.retired_at),
        "created": iso(p.created),
    }
    return {k: values[k] for k in PROJECT_KEYS}


def memory_record(m: Memory) -> dict[str, Any]:
    times = (
        "valid_from", "occurred_at", "invalid_at", "created", "updated", "last_accessed_at",
        "expires_at",
    )  # fmt: skip
    return _keyed(m, MEMORY_KEYS, times, type="memory", id=m.pk, superseded_by=m.superseded_by_id)


def note_record(n: Note) -> dict[str, Any]:
    return _keyed(n, NOTE_KEYS, ("created", "updated"), type="note", id=n.pk)


def edge_record(e: Edge) -> dict[str, Any]:
    return {
        "type": "edge",
        "src": e.src_id,
        "dst": e.dst_id,
        "rel": e.rel,
        "weight": e.weight,
        "created": iso(e.created),
    }


def revision_record(r: MemoryRevision) -> dict[str, Any]:
    times = ("recorded_at", "valid_from", "invalid_at", "created")
    return _keyed(
        r, REVISION_KEYS, times, type="revision", memory=r.memory_id,
        superseded_by=r.superseded_by_id or None,
    )  # fmt: skip


def digest_record(d: Digest) -> dict[str, Any]:
    return _keyed(d, DIGEST_KEYS, ("edited_at",), type="digest", sentences=d.sentences)


def export_records(
    *, project: str | None = None, revisions: bool = True, within: tuple[str, ...] | None = None
) -> Iterator[dict[str, Any]]:
    """Projects by slug, then memories, notes and explicit edges by id, then (with
    `revisions`) every memory's revisions by memory id and number, deleted ones' too,
    and the digests a person edited, by project.

    `within` (when no `project` is named) keeps the projects of those slugs and the
    global items alone: what a console person who is not staff sees (console/roles.py).
    Wikilink edges are not exported: they are derived from bodies on import.
    """
    history = MemoryRevision.objects.select_related("project").order_by("memory_id", "number")
    projects = Project.objects.select_related("parent").order_by("slug")
    memories = Memory.objects.select_related("project").order_by("pk")
    notes = Note.objects.select_related("project").order_by("pk")
    edges = Edge.objects.filter(origin="explicit").order_by("src_id", "dst_id", "rel", "pk")
    edited = Digest.objects.filter(edited=True).select_related("project").order_by("key")
    if project is not None:
        if not Project.objects.filter(slug=project).exists():
            raise ValueError(f"no project with slug {project!r}")
        projects = projects.filter(slug=project)
        memories = memories.filter(project__slug=project)
        notes = notes.filter(project__slug=project)
        edges = edges.filter(src__project__slug=project)
        history = history.filter(project__slug=project)
        edited = edited.filter(key=project)
    elif within is not None:
        seen = Q(project__isnull=True) | Q(project__slug__in=within)
        projects = projects.filter(slug__in=within)
        memories = memories.filter(seen)
        notes = notes.filter(seen)
        edges = edges.filter(
            Q(src__project__isnull=True) | Q(src__project__slug__in=within),
            Q(dst__project__isnull=True) | Q(dst__project__slug__in=within),
        )
        history = history.filter(seen)
        edited = edited.filter(seen)
    with snapshot():
        yield from (project_record(p) for p in projects)
        yield from (memory_record(m) for m in memories.iterator(chunk_size=1000))
        yield from (note_record(n) for n in notes.iterator(chunk_size=1000))
        yield from (edge_record(e) for e in edges)
        if revisions:
            yield from (revision_record(r) for r in history.iterator(chunk_size=1000))
            yield from (digest_record(d) for d in edited)


@contextmanager
def snapshot() -> Iterator[None]:
    """Every read inside sees the database as it was at the first: an export taken
    while agents write is one moment's rows. Read in separate statements, a memory
    came out at its 140th edit beside its 144th revision, and revisions of memories
    the file did not hold (an import took them silently).

    PostgreSQL: a read-only REPEATABLE READ transaction. SQLite: a deferred read
    transaction, WAL's snapshot (Django's own would BEGIN IMMEDIATE and hold the
    write lock, stopping every writer for the whole export).
    """
    if connection.in_atomic_block or not connection.get_autocommit():
        yield  # inside a caller's transaction already: its view
        return
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield
        return
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cur:
        cur.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute("ROLLBACK")  # it read, and wrote nothing


def _settled(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the keys of every mapping inside it (a memory's metadata, a
    revision's) in sorted order, its own keys left in `records.*_KEYS` order: each
    database keeps JSON its own way (PostgreSQL's jsonb reorders keys), and the same
    rows must export as the same bytes from either."""

    def settled(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: settled(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [settled(v) for v in value]
        return value

    return {key: settled(value) for key, value in record.items()}


def jsonl_lines(
    *, project: str | None = None, within: tuple[str, ...] | None = None
) -> Iterator[tuple[str, str]]:
    """Each record's type and its line of the JSON-lines export, newline included, one
    at a time: the command writes them to a file, the console streams them (an export
    held whole in memory grew with the database)."""
    for record in export_records(project=project, within=within):
        yield record["type"], json.dumps(_settled(record), ensure_ascii=False) + "\n"


def export_jsonl(out: Path, *, project: str | None = None) -> dict[str, int]:
    """One JSON object per line; returns the count per record type.

    Written beside `out` and moved into place when whole: a refused export (an
    unknown project) left an empty file, and a folder that does not exist is
    made, as the markdown export makes its own."""
    counts = dict.fromkeys(TYPES, 0)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as fh:
            for kind, line in jsonl_lines(project=project):
                fh.write(line)
                counts[kind] += 1
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return counts


def export_markdown(out: Path, *, project: str | None = None) -> dict[str, int]:
    """One markdown file per item under `out`, which must be new or empty."""
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty: export markdown into a new folder")
    counts = dict.fromkeys(TYPES, 0)
    records = list(export_records(project=project, revisions=False))  # history: JSON lines
    edges: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] == "edge":
            edge = {k: v for k, v in record.items() if k not in ("type", "src")}
            edges.setdefault(record["src"], []).append(edge)
            counts["edge"] += 1
    for record in records:
        kind = record["type"]
        if kind == "edge":
            continue
        folder = out / (record["slug"] if kind == "project" else record["project"] or "_global")
        if kind == "project":
            path = folder / "_project.md"
        elif kind == "note":
            path = folder / "_notes" / f"{record['slug']}--{record['id']}.md"
        else:
            path = folder / f"{record['name']}--{record['id']}.md"
            if record["id"] in edges:
                record["edges"] = edges[record["id"]]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown_text(_settled(record)), encoding="utf-8", newline="\n")
        counts[kind] += 1
    return counts
