"""Import of records (console/reading.py) into projects, memories, notes and edges.

Ids. An `id` that is a ULID is ours: the row keeps it, and a record whose id
already exists is skipped (never overwritten: the database is the source of
truth). Any other `id` (`conv-26:D1:3`) is an external id: it goes to
`Memory.external_id` and a record whose external id already exists in its
project is skipped. A record with neither is skipped when its project held a
memory of the same text in the same session before the run (the API's
duplicate rule). Re-importing a file therefore never duplicates.

Projects, notes and edges come as typed records (`type: project | note |
edge`, see console/records.py); edges and parent projects are resolved after
every row is in, since they may point forward in the file.

The parts: `parsing` turns one record into an unsaved, validated row,
`writer` saves them a batch per transaction with their outbox jobs, and
`links` writes what points at what (supersessions, wikilinks, edges, parents).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from console.importing.parsing import cut_description, derive_name
from console.importing.writer import ImportReport, _Importer
from console.models import Memory, Note, Project
from console.reading import Record

__all__ = [
    "ImportReport",
    "Preview",
    "cut_description",
    "derive_name",
    "import_records",
    "preview_records",
]


def import_records(
    records: Iterable[Record],
    *,
    project: str | None = None,
    batch: int = 256,
    index: bool = True,
    progress: Callable[[int], None] | None = None,
    copies: bool = False,
) -> ImportReport:
    """Import records in order, `batch` rows per transaction.

    `project` puts every memory and note into that project, which must exist
    (project records are then ignored; a typo in it made a project, said as one
    the records named). With `index` the outbox jobs of each batch are applied
    after it commits; without, they stay queued for `manage.py sync_indexes`.
    With `copies` (and `project`), rows of other projects the file names are
    copied in under ids of their own (console/importing/copies.py).
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    _target_exists(project)
    started = time.perf_counter()
    importer = _Importer(project=project, index=index, copies=copies)
    pending: list[tuple[Record, Memory | Note]] = []
    seen = 0
    for record in records:
        importer.take(record, pending)
        seen += 1
        if len(pending) >= batch:
            importer.flush(pending)
            if progress:
                progress(seen)
            seen = 0
    importer.flush(pending)
    importer.finish()
    if progress and seen:
        progress(seen)
    importer.report.seconds = time.perf_counter() - started
    return importer.report


def _target_exists(project: str | None) -> None:
    if project and not Project.objects.filter(slug=project).exists():
        raise ValueError(
            f"there is no project {project!r} to import into: create it with "
            f"`manage.py project create {project}` (`manage.py project list` shows them); "
            "nothing imported"
        )


@dataclass(frozen=True, slots=True)
class Preview:
    """What `import_records` would do with a file, told before it writes anything."""

    memories: int  # new memories
    notes: int  # new notes
    present: int  # records already here (same id, external id, or text in its session)
    later: int  # edges, revisions and digests: checked as the import writes them
    errors: list[str]  # bad records, each with its place (`file.jsonl:12: reason`)
    renamed: list[str]  # notes imported under another name (theirs was taken), each placed


def preview_records(records: Iterable[Record], *, project: str, copies: bool = False) -> Preview:
    """The import's own checks on each record (the same `_Importer.take`), without saving:
    how many memories and notes are new, how many are here already, which records
    are refused and why (a second record of one id among them: the first is imported),
    and which notes come in under another name (theirs taken). Into an existing
    `project` only, so nothing (not even a project a record names) is created."""
    _target_exists(project)
    importer = _Importer(project=project, index=False, copies=copies)
    pending: list[tuple[Record, Memory | Note]] = []
    for record in records:
        importer.take(record, pending)
    memories = sum(isinstance(item, Memory) for _, item in pending)
    later = len(importer.edges) + len(importer.revisions) + len(importer.digests)
    report = importer.report
    return Preview(
        memories, len(pending) - memories, report.skipped, later, report.errors, report.renamed
    )
