"""The batch writer: records in, rows and outbox jobs out, a batch per transaction.

Validation happens per record before it is saved, and each save runs in its
own savepoint, so a bad record is reported with its place and skipped while
everything else imports. Rows are written a batch per transaction with their
outbox jobs (`indexing.enqueue_many`, no apply on commit); the jobs of a batch
are applied once it commits (batched embedding), in file order, so an
episode's session context is already in the database when it is indexed.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from console import indexing, services
from console.importing import links, parsing
from console.importing.copies import Rekey
from console.importing.digests import digests_import
from console.importing.revisions import revisions_import
from console.models import Memory, MemoryRevision, Note, Project
from console.reading import Record
from console.records import TYPES, RecordError, parse_time
from console.services.revisions import revision_of
from recall.ports import Vectors
from recall.types import MEMORY, NOTE


@dataclass
class ImportReport:
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)  # notes given another name (also warned)
    memories: int = 0
    notes: int = 0
    projects: int = 0
    edges: int = 0
    revisions: int = 0
    digests: int = 0
    seconds: float = 0.0

    @property
    def imported(self) -> int:
        return self.memories + self.notes

    @property
    def rate(self) -> float:
        """Memories per second, end to end (embedding included when indexing)."""
        return self.memories / self.seconds if self.seconds else 0.0


class _Importer:
    def __init__(self, *, project: str | None, index: bool, copies: bool = False) -> None:
        self.override = project
        self.index = index
        self.report = ImportReport()
        # Ids of other projects' rows become their copies' (console/importing/copies.py).
        self.rekey = Rekey(Project.objects.get(slug=project)) if copies and project else None
        self.projects: dict[str, Project] = {}
        self.parents: list[tuple[str, str, str]] = []
        self.supersessions: list[links.Supersession] = []
        self.supersedes: dict[str, tuple[str, str]] = {}  # old id -> (new id, where)
        self.edges: list[Record] = []
        self.revisions: list[Record] = []
        self.digests: list[Record] = []
        self.imported: set[str] = set()  # memories saved in this run
        self.seen: dict[str, str] = {}  # our ids taken in this run, each to its record's place
        self.external: dict[int | None, set[str]] = {}  # external ids per project id
        self.run_external: dict[tuple[int | None, str], str] = {}  # this run's, to its place
        self.note_names: dict[int | None, dict[str, str]] = {}  # see `names_taken`
        self.texts: dict[int | None, set[tuple[str, str]]] = {}  # see `known_texts`
        self.note_texts: dict[int | None, set[tuple[str, str]]] = {}  # `known_note_texts`
        self.mentions: links.Mentions | None = None  # read at the first batch
        self.embedding: Future[dict[str, Vectors]] | None = None  # the last batch's texts
        self.waiting = 0  # that batch's jobs, applied after the next one is saved

    def fail(self, record: Record, reason: str) -> None:
        self.report.errors.append(f"{record.where}: {reason}; skipped")

    def take(self, record: Record, pending: list[tuple[Record, Memory | Note]]) -> None:
        """Validate one record; a valid new memory or note joins the pending batch."""
        if record.data is None:
            self.fail(record, record.error)
            return
        data = record.data
        if self.rekey is not None:
            data = self.rekey.record(data)
            record = Record(record.where, data)
        kind = data.get("type", "memory")
        try:
            if kind == "project":
                self.project_record(data, record.where)
                return
            if kind == "edge":
                self.edges.append(record)
                return
            if kind == "revision":
                self.revisions.append(record)
                return
            if kind == "digest":
                self.digests.append(record)
                return
            if kind == "memory":
                item: Memory | Note | None = self.memory(data, record.where)
            elif kind == "note":
                item = self.note(data, record.where)
            else:
                raise RecordError(f"unknown type {kind!r}; expected one of {', '.join(TYPES)}")
        except RecordError as exc:
            self.fail(record, str(exc))
            return
        except ValidationError as exc:
            self.fail(record, parsing.explain(exc))
            return
        if item is None:
            self.report.skipped += 1
        else:
            pending.append((record, item))

    # --- projects -------------------------------------------------------------

    def project(self, slug: Any) -> Project | None:
        slug = self.override or slug
        if slug in (None, ""):
            return None
        slug = str(slug)
        if slug not in self.projects:
            found = Project.objects.filter(slug=slug).first()
            if found is None:  # said, as a typo in a slug would make a project too
                found = services.project_create(slug=slug)
                self.report.projects += 1
                self.report.warnings.append(
                    f"project {slug!r} did not exist: created it, open (records named it); "
                    f"`manage.py project isolation {slug} confidential|sealed` changes that"
                )
            self.projects[slug] = found
        return self.projects[slug]

    def project_record(self, data: dict[str, Any], where: str) -> None:
        slug = str(data.get("slug") or "")
        if self.override:
            return
        if not slug:
            raise RecordError("a project record needs a slug")
        if Project.objects.filter(slug=slug).exists():
            self.report.skipped += 1
            return
        project = services.project_create(
            slug=slug,
            name=str(data.get("name") or ""),
            description=str(data.get("description") or ""),
            isolation=str(data.get("isolation") or "open"),
        )
        Project.objects.filter(pk=project.pk).update(
            name=project.name if data.get("name") is None else str(data["name"]),
            favorite=bool(data.get("favorite")),
            retired_at=parse_time(data.get("retired_at"), key="retired_at"),
            created=parse_time(data.get("created"), key="created") or project.created,
        )
        self.projects[slug] = Project.objects.get(pk=project.pk)
        self.report.projects += 1
        if data.get("parent"):
            self.parents.append((slug, str(data["parent"]), where))

    # --- memories and notes ---------------------------------------------------

    def known_external(self, project: Project | None) -> set[str]:
        """External ids already in a project, loaded once (a query per row is slow)."""
        key = project.pk if project else None
        if key not in self.external:
            rows = Memory.objects.filter(project=project).exclude(external_id="")
            self.external[key] = set(rows.values_list("external_id", flat=True))
        return self.external[key]

    def known_texts(self, project: Project | None) -> set[tuple[str, str]]:
        """(content hash, session) of each memory the project held when this run first
        looked, loaded once: a record with no id is skipped when its exact text is
        there already (the API's duplicate rule), so a file imported twice is not
        imported twice. Rows of this run are not added: two equal records of one
        file (two turns saying "Yes!") both stay, as on the first run."""
        key = project.pk if project else None
        if key not in self.texts:
            rows = Memory.objects.filter(project=project)
            self.texts[key] = set(rows.values_list("content_hash", "session_id"))
        return self.texts[key]

    def known_note_texts(self, project: Project | None) -> set[tuple[str, str]]:
        """(title, body) of each note the project held when this run first looked: a
        note record with no id is skipped when one of the same title and body is there,
        as `known_texts` does for memories, so a file imported twice (a note written by
        hand, or by another tool, has no id) does not add its notes twice."""
        key = project.pk if project else None
        if key not in self.note_texts:
            rows = Note.objects.filter(project=project)
            self.note_texts[key] = set(rows.values_list("title", "body"))
        return self.note_texts[key]

    def memory(self, data: dict[str, Any], where: str) -> Memory | None:
        """An unsaved, validated memory, or None when it was imported before."""
        own, external = parsing.memory_ids(data)
        name = parsing.memory_name(data)
        project = self.project(data.get("project"))
        self.once(own)
        if own and Memory.objects.filter(pk=own).exists():
            return None
        ours = (project.pk if project else None, external)
        if external and ours in self.run_external:
            raise RecordError(
                f"external id {external!r} is {self.run_external[ours]}'s too, imported from there"
            )
        known = self.known_external(project) if external else set()
        if external in known:
            return None
        memory = parsing.memory_build(data, name=name, project=project, own=own, external=external)
        said = (memory.content_hash, memory.session_id)
        if not (own or external) and said in self.known_texts(project):
            return None
        if own:
            self.seen[own] = where
        if external:
            known.add(external)
            self.run_external[ours] = where
        if data.get("superseded_by"):
            self.supersedes[memory.pk] = (str(data["superseded_by"]), where)
        for edge in data.get("edges") or []:
            if isinstance(edge, dict):
                self.edges.append(Record(where, {"type": "edge", **edge, "src": memory.pk}))
        return memory

    def once(self, own: str) -> None:
        """RecordError for a record of an id an earlier record of this run took: the
        import kept the first and passed over the second, and the preview counted it
        "already here", though nothing of that id was here and its text was lost."""
        if own and own in self.seen:
            raise RecordError(f"id {own} is {self.seen[own]}'s too, imported from there")

    def note(self, data: dict[str, Any], where: str) -> Note | None:
        own = parsing.own_id(data)
        self.once(own)
        if own and Note.objects.filter(pk=own).exists():
            return None
        note = parsing.note_build(data, own=own, project=self.project)
        if not own and (note.title, note.body) in self.known_note_texts(note.project):
            return None
        taken, name = self.names_taken(note.project), note.slug
        if name in taken:  # one name, two notes: reads by name asked for an id
            note.slug = _free_name(name, taken)
            holder = f"the note of {taken[name]}" if taken[name] else "a note here"
            said = f"{where}: note {note.title!r} imported as {note.slug!r}: "
            said += f"{holder} has the name {name!r}"
            self.report.renamed.append(said)
            self.report.warnings.append(said)
        taken[note.slug] = where
        if own:
            self.seen[own] = where
        return note

    def names_taken(self, project: Project | None) -> dict[str, str]:
        """The names of the project's notes: those it held when this run first looked
        (to "") and those this run gave (to the record's place). A note record of a
        name taken gets the next free one (`name-2`), as a note written in the console
        does, and a warning says so: two notes of one name made every read by that
        name a 400 asking for an id."""
        key = project.pk if project else None
        if key not in self.note_names:
            rows = Note.objects.filter(project=project).values_list("slug", flat=True)
            self.note_names[key] = dict.fromkeys(rows, "")
        return self.note_names[key]

    # --- batches --------------------------------------------------------------

    def flush(self, pending: list[tuple[Record, Memory | Note]]) -> None:
        """Save a batch and its outbox jobs in one transaction, then index it."""
        if not pending:
            return
        with transaction.atomic():
            saved = self.save(pending)
            indexing.enqueue_many(
                ((MEMORY if isinstance(i, Memory) else NOTE, i.pk, "upsert") for i in saved),
                in_transaction=self.index,
            )
            memories = [i for i in saved if isinstance(i, Memory)]
            if self.mentions is None:
                self.mentions = links.Mentions()
            links.wikilinks_write(memories, self.mentions)
            self.history(memories)
            for memory in memories:
                if memory.pk in self.supersedes:
                    new, where = self.supersedes.pop(memory.pk)
                    self.supersessions.append(links.Supersession(memory.pk, new, where))
            self.supersessions, refused = links.supersessions_stamp(self.supersessions)
        for link, why in refused:
            self.report.errors.append(
                f"{link.where}: memory {link.old} superseded by {link.new}: {why}; link refused"
            )
        self.report.memories += len(memories)
        self.report.notes += len(saved) - len(memories)
        pending.clear()
        if self.index:
            self.apply_behind(indexing.embedding_ahead([i.pk for i in saved]), len(saved))

    def save(self, pending: list[tuple[Record, Memory | Note]]) -> list[Memory | Note]:
        """Insert the batch at once; if the database refuses, row by row to find who."""
        try:
            with transaction.atomic():
                Memory.objects.bulk_create([i for _, i in pending if isinstance(i, Memory)])
                Note.objects.bulk_create([i for _, i in pending if isinstance(i, Note)])
            return [item for _, item in pending]
        except DatabaseError:
            pass
        saved: list[Memory | Note] = []
        for record, item in pending:
            try:
                with transaction.atomic():
                    item.save(force_insert=True)
            except DatabaseError as exc:
                self.fail(record, f"could not be saved ({exc})")
                self.supersedes.pop(item.pk, None)
                continue
            saved.append(item)
        return saved

    def history(self, memories: list[Memory]) -> None:
        """Revision 1 (`import`) of each memory saved, as the file gave it."""
        now = timezone.now()
        rows = []
        for memory in memories:
            row = revision_of(memory, op="import", number=1, at=now)
            row.superseded_by_id = self.supersedes.get(memory.pk, ("",))[0]
            rows.append(row)
            self.imported.add(memory.pk)
        MemoryRevision.objects.bulk_create(rows)

    def finish(self) -> None:
        """After the last batch: its index jobs and what still waits, parent projects,
        explicit edges, the file's revisions (console/importing/revisions.py)."""
        if self.embedding is not None:  # the last batch (and every job left, passages too)
            embedding, self.embedding = self.embedding, None
            self.apply(ahead=embedding.result())
        for link in self.supersessions:
            self.report.warnings.append(
                f"memory {link.old}: its replacement {link.new} is not in the import; "
                "it stays inactive without a superseded_by link"
            )
        self.report.warnings.extend(links.parents_set(self.parents))
        for record in self.edges:
            try:
                created = links.edge_import(record.data or {})
            except (RecordError, ValidationError, ValueError) as exc:
                self.fail(record, str(exc))
                continue
            if created:
                self.report.edges += 1
            else:
                self.report.skipped += 1
        if self.revisions:
            with transaction.atomic():
                saved, skipped, errors = revisions_import(
                    self.revisions, imported=self.imported, project=self.project
                )
            self.report.revisions = saved
            self.report.errors.extend(errors)
            self.report.skipped += skipped
        if self.digests:
            saved, skipped, errors = digests_import(self.digests, project=self.project)
            self.report.digests = saved
            self.report.errors.extend(errors)
            self.report.skipped += skipped

    def apply_behind(self, embedding: Future[dict[str, Vectors]] | None, jobs: int) -> None:
        """Apply the previous batch's jobs, its texts embedded while this batch was read
        and saved; this batch's texts are embedded meanwhile (`indexing.embedding_ahead`:
        one thread, in order). The model, most of an import's time, then runs on every
        core while the rows are saved and the planes written, not after them. Without
        an embedding ahead (no vector plane, planes written in the transaction) a batch
        is applied at once."""
        if self.embedding is not None:
            self.apply(limit=self.waiting, ahead=self.embedding.result())
        self.embedding, self.waiting = embedding, jobs
        if embedding is None:
            self.apply()

    def apply(self, *, limit: int | None = None, ahead: dict[str, Vectors] | None = None) -> None:
        result = indexing.apply_pending(limit=limit, ahead=ahead)
        if result.failed:
            self.report.warnings.append(
                f"{result.failed} index jobs failed; they stay queued (manage.py sync_indexes)"
            )


def _free_name(name: str, taken: dict[str, str]) -> str:
    """`name-2`, `name-3`, ...: the first `taken` lacks (cut to the slug's 120)."""
    n = 2
    while (free := f"{name[: 120 - len(str(n)) - 1]}-{n}") in taken:
        n += 1
    return free
