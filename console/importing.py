"""Import of records (console/reading.py) into projects, memories, notes and edges.

Ids. An `id` that is a ULID is ours: the row keeps it, and a record whose id
already exists is skipped (never overwritten: the database is the source of
truth). Any other `id` (`conv-26:D1:3`) is an external id: it goes to
`Memory.external_id` and a record whose external id already exists in its
project is skipped. Re-importing a file therefore never duplicates.

Projects, notes and edges come as typed records (`type: project | note |
edge`, see console/records.py); edges and parent projects are resolved after
every row is in, since they may point forward in the file.

Validation happens per record before it is saved, and each save runs in its
own savepoint, so a bad record is reported with its line and skipped while
everything else imports. Rows are written a batch per transaction with their
outbox jobs (`indexing.enqueue_many`, no apply on commit); the jobs of a batch
are applied once it commits (batched embedding), in file order, so an
episode's session context is already in the database when it is indexed.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from console import indexing, services
from console.models import NAME_RE, Edge, Memory, Note, Project, new_id
from console.reading import Record
from console.records import TYPES, RecordError, parse_time
from recall.types import MEMORY, MEMORY_KINDS, NOTE

ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
DESCRIPTION_CHARS = 150


@dataclass
class ImportReport:
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    memories: int = 0
    notes: int = 0
    projects: int = 0
    edges: int = 0
    seconds: float = 0.0

    @property
    def imported(self) -> int:
        return self.memories + self.notes

    @property
    def rate(self) -> float:
        """Memories per second, end to end (embedding included when indexing)."""
        return self.memories / self.seconds if self.seconds else 0.0


# --- values -------------------------------------------------------------------


def derive_name(text: str) -> str:
    """A valid memory name for display text ("Caroline, session 1, turn 3")."""
    slug = re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-_.")
    slug = slug[:120].rstrip("-_.")
    if not slug:
        raise RecordError(f"name {text!r} has no letters or digits to make a name from")
    return slug


def cut_description(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head[limit // 2 :]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:.-") + "…"


def _tags(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list):
        return [str(t) for t in value]
    raise RecordError(f"tags: expected a list of strings, got {type(value).__name__}")


def _explain(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return " ".join(exc.messages)


# --- importing ----------------------------------------------------------------


def import_records(
    records: Iterable[Record],
    *,
    project: str | None = None,
    batch: int = 256,
    index: bool = True,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import records in order, `batch` rows per transaction.

    `project` puts every memory and note into that project (project records
    are then ignored). With `index` the outbox jobs of each batch are applied
    after it commits; without, they stay queued for `manage.py sync_indexes`.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    started = time.perf_counter()
    importer = _Importer(project=project, index=index)
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


@dataclass
class _Link:
    old: str  # the superseded memory
    new: str  # its replacement


class _Importer:
    def __init__(self, *, project: str | None, index: bool) -> None:
        self.override = project
        self.index = index
        self.report = ImportReport()
        self.projects: dict[str, Project] = {}
        self.parents: list[tuple[str, str, str]] = []
        self.links: list[_Link] = []
        self.supersedes: dict[str, str] = {}
        self.edges: list[Record] = []
        self.seen: set[str] = set()  # our ids taken in this run
        self.external: dict[int | None, set[str]] = {}  # external ids per project id
        self.mentions: _Mentions | None = None  # read at the first batch

    def fail(self, record: Record, reason: str) -> None:
        self.report.errors.append(f"{record.where}: {reason}; skipped")

    def take(self, record: Record, pending: list[tuple[Record, Memory | Note]]) -> None:
        """Validate one record; a valid new memory or note joins the pending batch."""
        if record.data is None:
            self.fail(record, record.error)
            return
        data = record.data
        kind = data.get("type", "memory")
        try:
            if kind == "project":
                self.project_record(data, record.where)
                return
            if kind == "edge":
                self.edges.append(record)
                return
            if kind == "memory":
                item: Memory | Note | None = self.memory(data, record.where)
            elif kind == "note":
                item = self.note(data)
            else:
                raise RecordError(f"unknown type {kind!r}; expected one of {', '.join(TYPES)}")
        except RecordError as exc:
            self.fail(record, str(exc))
            return
        except ValidationError as exc:
            self.fail(record, _explain(exc))
            return
        if item is None:
            self.report.skipped += 1
        else:
            pending.append((record, item))

    def project(self, slug: Any) -> Project | None:
        slug = self.override or slug
        if slug in (None, ""):
            return None
        slug = str(slug)
        if slug not in self.projects:
            found = Project.objects.filter(slug=slug).first()
            if found is None:
                found = services.project_create(slug=slug)
                self.report.projects += 1
            self.projects[slug] = found
        return self.projects[slug]

    def known_external(self, project: Project | None) -> set[str]:
        """External ids already in a project, loaded once (a query per row is slow)."""
        key = project.pk if project else None
        if key not in self.external:
            rows = Memory.objects.filter(project=project).exclude(external_id="")
            self.external[key] = set(rows.values_list("external_id", flat=True))
        return self.external[key]

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
            favorite=bool(data.get("favorite")),
            retired_at=parse_time(data.get("retired_at"), key="retired_at"),
            created=parse_time(data.get("created"), key="created") or project.created,
        )
        self.projects[slug] = Project.objects.get(pk=project.pk)
        self.report.projects += 1
        if data.get("parent"):
            self.parents.append((slug, str(data["parent"]), where))

    def memory(self, data: dict[str, Any], where: str) -> Memory | None:
        """An unsaved, validated memory, or None when it was imported before."""
        raw_id = str(data.get("id") or "")
        own = bool(ULID_RE.match(raw_id))
        external = str(data.get("external_id") or ("" if own else raw_id))
        name = str(data.get("name") or "").strip()
        if not name:
            raise RecordError("missing name")
        project = self.project(data.get("project"))
        slug = project.slug if project else ""
        if own and (raw_id in self.seen or Memory.objects.filter(pk=raw_id).exists()):
            return None
        known = self.known_external(project) if external else set()
        if external in known:
            return None
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise RecordError("metadata: expected a JSON object")
        metadata = dict(metadata)
        if not own and not NAME_RE.match(name):
            metadata.setdefault("display_name", name)
            name = derive_name(name)
        session_id, order = _session(data, metadata, slug)
        kind = str(data.get("kind") or ("episode" if session_id else "fact"))
        if kind not in MEMORY_KINDS:
            raise RecordError(f"unknown kind {kind!r}; expected one of: {', '.join(MEMORY_KINDS)}")
        description = str(data.get("description") or "")
        body = str(data.get("body") or "")
        if len(description) > DESCRIPTION_CHARS:
            body = description + ("\n\n" + body if body else "")
            description = cut_description(description)
        created = parse_time(data.get("created") or data.get("created_at"), key="created")
        created = created or timezone.now()
        memory = Memory(
            id=raw_id if own else new_id(),
            project=project,
            kind=kind,
            name=name,
            description=description,
            body=body,
            tags=_tags(data.get("tags")),
            importance=_number(data.get("importance", 0.5), key="importance"),
            agent_id=str(data.get("agent_id") or ""),
            session_id=session_id,
            session_order=order,
            source=str(data.get("source") or "imported"),
            valid_from=parse_time(data.get("valid_from"), key="valid_from") or created,
            invalid_at=parse_time(data.get("invalid_at"), key="invalid_at"),
            favorite=bool(data.get("favorite")),
            external_id=external,
            metadata=metadata,
            created=created,
            updated=parse_time(data.get("updated"), key="updated") or created,
            access_count=int(_number(data.get("access_count") or 0, key="access_count")),
            last_accessed_at=parse_time(data.get("last_accessed_at"), key="last_accessed_at"),
        )
        services.memory_validate(memory=memory)
        memory.content_hash = services.content_hash(
            name=memory.name, description=memory.description, body=memory.body
        )
        if own:
            self.seen.add(raw_id)
        if external:
            known.add(external)
        if data.get("superseded_by"):
            self.supersedes[memory.pk] = str(data["superseded_by"])
        for edge in data.get("edges") or []:
            if isinstance(edge, dict):
                self.edges.append(Record(where, {"type": "edge", **edge, "src": memory.pk}))
        return memory

    def note(self, data: dict[str, Any]) -> Note | None:
        raw_id = str(data.get("id") or "")
        own = bool(ULID_RE.match(raw_id))
        if own and (raw_id in self.seen or Note.objects.filter(pk=raw_id).exists()):
            return None
        title = str(data.get("title") or "").strip()
        if not title:
            raise RecordError("missing title")
        created = parse_time(data.get("created"), key="created") or timezone.now()
        note = Note(
            id=raw_id if own else new_id(),
            project=self.project(data.get("project")),
            title=title,
            slug=str(data.get("slug") or "") or derive_name(title),
            description=str(data.get("description") or ""),
            body=str(data.get("body") or ""),
            tags=services.tags_clean(tags=_tags(data.get("tags"))),
            source_url=str(data.get("source_url") or ""),
            favorite=bool(data.get("favorite")),
            created=created,
            updated=parse_time(data.get("updated"), key="updated") or created,
        )
        if len(note.body) > services.MAX_BODY_CHARS:
            raise RecordError(f"body: over {services.MAX_BODY_CHARS:,} characters")
        note.full_clean(exclude=["project"])
        if own:
            self.seen.add(raw_id)
        return note

    def flush(self, pending: list[tuple[Record, Memory | Note]]) -> None:
        """Save a batch and its outbox jobs in one transaction, then index it."""
        if not pending:
            return
        with transaction.atomic():
            saved = self.save(pending)
            indexing.enqueue_many(
                (MEMORY if isinstance(i, Memory) else NOTE, i.pk, "upsert") for i in saved
            )
            memories = [i for i in saved if isinstance(i, Memory)]
            if self.mentions is None:
                self.mentions = _Mentions()
            _link(memories, self.mentions)
            for memory in memories:
                if memory.pk in self.supersedes:
                    self.links.append(_Link(memory.pk, self.supersedes.pop(memory.pk)))
            self.resolve_links()
        self.report.memories += len(memories)
        self.report.notes += len(saved) - len(memories)
        pending.clear()
        if self.index:
            self.apply()

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

    def resolve_links(self) -> None:
        """Stamp `superseded_by` once the replacement exists (it may come later)."""
        waiting = []
        for link in self.links:
            if Memory.objects.filter(pk=link.new).exists():
                Memory.objects.filter(pk=link.old).update(superseded_by_id=link.new)
            else:
                waiting.append(link)
        self.links = waiting

    def finish(self) -> None:
        for link in self.links:
            self.report.warnings.append(
                f"memory {link.old}: its replacement {link.new} is not in the import; "
                "it stays inactive without a superseded_by link"
            )
        for slug, parent, where in self.parents:
            found = Project.objects.filter(slug=parent).first()
            if found is None:
                self.report.warnings.append(f"{where}: parent project {parent!r} not found")
            else:
                Project.objects.filter(slug=slug).update(parent=found)
        for record in self.edges:
            try:
                self.edge(record.data or {})
            except (RecordError, ValidationError, ValueError) as exc:
                self.fail(record, str(exc))

    def edge(self, data: dict[str, Any]) -> None:
        src, dst = str(data.get("src") or ""), str(data.get("dst") or "")
        found = set(Memory.objects.filter(pk__in=[src, dst]).values_list("pk", flat=True))
        for end in (src, dst):
            if end not in found:
                raise RecordError(f"edge {src} -> {dst}: memory {end!r} not found")
        _, created = Edge.objects.get_or_create(
            src_id=src,
            dst_id=dst,
            rel=str(data.get("rel") or "links"),
            origin="explicit",
            defaults={
                "weight": _number(data.get("weight", 1.0), key="weight"),
                "created": parse_time(data.get("created"), key="created") or timezone.now(),
            },
        )
        if created:
            self.report.edges += 1
        else:
            self.report.skipped += 1

    def apply(self) -> None:
        result = indexing.apply_pending()
        if result.failed:
            self.report.warnings.append(
                f"{result.failed} index jobs failed; they stay queued (manage.py sync_indexes)"
            )


def _session(data: dict[str, Any], metadata: dict[str, Any], slug: str) -> tuple[str, int | None]:
    """The session id and the order inside it (eval: `metadata.session`, `turn_index`)."""
    session_id = str(data.get("session_id") or "")
    order = data.get("session_order")
    if not session_id and metadata.get("session") not in (None, ""):
        session_id = f"{slug or 'global'}:S{metadata['session']}"
        if order is None:
            order = metadata.get("turn_index")
    if order in (None, ""):
        return session_id, None
    return session_id, int(_number(order, key="session_order"))


def _number(value: Any, *, key: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RecordError(f"{key}: {value!r} is not a number") from None


class _Mentions:
    """Which stored bodies name which memories in a `[[link]]`.

    Read once per import and extended batch by batch, so that finding the
    earlier bodies that named a batch's memories is a lookup, not a scan of
    every body per batch (which made a 100k import quadratic).
    """

    def __init__(self) -> None:
        self.sources: dict[str, set[str]] = defaultdict(set)
        rows = Memory.objects.filter(body__contains="[[").values_list("pk", "body")
        for pk, body in rows.iterator(chunk_size=2000):
            self.add(pk, body)

    def add(self, pk: str, body: str) -> None:
        for name in services.link_names(body):
            self.sources[name].add(pk)

    def naming(self, names: Iterable[str]) -> set[str]:
        return set().union(*(self.sources.get(name, ()) for name in names))


def _link(memories: list[Memory], mentions: _Mentions) -> None:
    """Wikilink edges of the batch, and of earlier bodies that named its memories."""
    if not memories:
        return
    for memory in memories:
        if services.link_names(memory.body):
            services.memory_links_rewrite(memory=memory)
    waiting = mentions.naming(m.name for m in memories) - {m.pk for m in memories}
    for memory in memories:
        mentions.add(memory.pk, memory.body)
    for source in Memory.objects.filter(pk__in=waiting).only("id", "project_id", "body"):
        services.memory_links_rewrite(memory=source)
