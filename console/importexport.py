"""Import and export of projects, memories, notes and explicit edges.

Two formats, one record shape (a dict per item, with a `type` of `project`,
`memory`, `note` or `edge`; a record without `type` is a memory):

- JSON lines: one record per line. Our export writes projects (by slug), then
  memories, notes and explicit edges (each by id), keys in a fixed order,
  timestamps ISO-8601 UTC. Lines in the evaluation format (`id`, `project`,
  `name`, `description`, `created_at`, `metadata`) import too.
- Markdown: one file per item, YAML front matter plus the body, in a folder
  per project (`_global/` for global memories and inbox notes, `_notes/` for
  notes, `_project.md` for the project itself). Explicit edges sit in their
  source memory's front matter.

Ids. An `id` that is a ULID is ours: the row keeps it, and a record whose id
already exists is skipped (never overwritten: the database is the source of
truth). Any other `id` (`conv-26:D1:3`) is an external id: it goes to
`Memory.external_id` and a record whose external id already exists in its
project is skipped. Re-importing a file therefore never duplicates.

Validation happens per record before it is saved, and each save runs in its
own savepoint, so a bad record is reported with its line and skipped while
everything else imports. Rows are written a batch per transaction with their
outbox jobs; the jobs of a batch are applied once it commits (batched
embedding), in file order, so an episode's session context is already in the
database when it is indexed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml
from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from console import indexing, services
from console.models import NAME_RE, Edge, IndexJob, Memory, Note, Project, new_id
from recall.types import MEMORY, MEMORY_KINDS, NOTE

ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
DESCRIPTION_CHARS = 150
TYPES = ("project", "memory", "note", "edge")

MEMORY_KEYS = (
    "type", "id", "project", "kind", "name", "description", "body", "tags", "importance",
    "agent_id", "session_id", "session_order", "source", "valid_from", "invalid_at",
    "superseded_by", "favorite", "external_id", "metadata", "created", "updated",
    "access_count", "last_accessed_at",
)  # fmt: skip
NOTE_KEYS = (
    "type", "id", "project", "title", "slug", "description", "body", "tags", "source_url",
    "favorite", "created", "updated",
)  # fmt: skip
PROJECT_KEYS = (
    "type", "slug", "name", "description", "parent", "isolation", "favorite", "retired_at",
    "created",
)  # fmt: skip


class RecordError(ValueError):
    """A record that cannot be imported; the message says why."""


@dataclass
class Record:
    where: str  # "file.jsonl:12" or "notes/x.md"
    data: dict[str, Any] | None
    error: str = ""


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


def iso(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a `Z`; microseconds only when there are some."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    spec = "microseconds" if value.microsecond else "seconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def parse_time(value: Any, *, key: str) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        try:
            parsed = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise RecordError(f"{key}: {value!r} is not an ISO-8601 timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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


# --- reading ------------------------------------------------------------------


def read_records(paths: Iterable[Path]) -> Iterator[Record]:
    """Records of JSON-lines files and markdown files or folders, in order."""
    for path in paths:
        if path.is_dir():
            yield from _read_markdown(sorted(path.rglob("*.md")), root=path)
        elif path.suffix.lower() in (".md", ".markdown"):
            yield from _read_markdown([path], root=path.parent)
        else:
            yield from _read_jsonl(path)


def count_records(paths: Iterable[Path]) -> int:
    total = 0
    for path in paths:
        if path.is_dir():
            total += sum(1 for _ in path.rglob("*.md"))
        elif path.suffix.lower() in (".md", ".markdown"):
            total += 1
        else:
            with path.open("rb") as fh:
                total += sum(1 for line in fh if line.strip())
    return total


def _read_jsonl(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8", newline="") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Record(where, None, f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(data, dict):
                yield Record(where, None, "not a JSON object")
                continue
            yield Record(where, data)


def parse_markdown(text: str) -> dict[str, Any]:
    """Front matter and body of one markdown file (body exactly as exported)."""
    match = FRONT_MATTER.match(text)
    if not match:
        raise RecordError("no YAML front matter (the file must start with a '---' line)")
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise RecordError(f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise RecordError("front matter must be a mapping of keys to values")
    # Our export writes "\n" + body + "\n" after the front matter: strip exactly
    # those, so a body's own blank lines and carriage returns survive.
    newline = "\r\n" if match.group(0).endswith("\r\n") else "\n"
    body = text[match.end() :]
    body = body.removeprefix(newline)
    body = body.removesuffix(newline)
    if data.get("type", "memory") != "project":
        data["body"] = body
    elif body.strip():
        data.setdefault("description", body.strip())
    return data


def _read_markdown(paths: list[Path], *, root: Path) -> Iterator[Record]:
    """Projects first, then memories in time order (session turns in order), notes."""
    records: list[tuple[tuple[Any, ...], Record]] = []
    for path in paths:
        where = str(path.relative_to(root)) if path != root else path.name
        try:
            data = parse_markdown(path.read_bytes().decode("utf-8"))
        except (RecordError, UnicodeDecodeError) as exc:
            records.append(((9, where), Record(where, None, str(exc))))
            continue
        rank = TYPES.index(data["type"]) if data.get("type") in TYPES else 1
        when = str(data.get("created") or data.get("created_at") or "")
        order = data.get("session_order")
        order = order if isinstance(order, int) else 0
        session = str(data.get("session_id") or "")
        records.append(((rank, when, session, order, where), Record(where, data)))
    for _, record in sorted(records, key=lambda pair: pair[0]):
        yield record


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
        services._validate(memory)
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
            tags=services._clean_tags(_tags(data.get("tags"))),
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
            IndexJob.objects.bulk_create(
                IndexJob(item=MEMORY if isinstance(i, Memory) else NOTE, item_id=i.pk, op="upsert")
                for i in saved
            )
            memories = [i for i in saved if isinstance(i, Memory)]
            _link(memories)
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


def _link(memories: list[Memory]) -> None:
    """Wikilink edges of the batch, and of earlier bodies that named its memories."""
    if not memories:
        return
    for memory in memories:
        if services.link_names(memory.body):
            services._rewrite_links(memory)
    names = {m.name for m in memories}
    ids = [m.pk for m in memories]
    waiting = Memory.objects.filter(body__contains="[[").exclude(pk__in=ids)
    for source in waiting.only("id", "project_id", "body"):
        if names.intersection(services.link_names(source.body)):
            services._rewrite_links(source)


# --- exporting ----------------------------------------------------------------


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
    values = {
        "type": "memory",
        "id": m.pk,
        "project": m.project.slug if m.project else None,
        "superseded_by": m.superseded_by_id,
        "valid_from": iso(m.valid_from),
        "invalid_at": iso(m.invalid_at),
        "created": iso(m.created),
        "updated": iso(m.updated),
        "last_accessed_at": iso(m.last_accessed_at),
    }
    return {k: values[k] if k in values else getattr(m, k) for k in MEMORY_KEYS}


def note_record(n: Note) -> dict[str, Any]:
    values = {
        "type": "note",
        "id": n.pk,
        "project": n.project.slug if n.project else None,
        "created": iso(n.created),
        "updated": iso(n.updated),
    }
    return {k: values[k] if k in values else getattr(n, k) for k in NOTE_KEYS}


def edge_record(e: Edge) -> dict[str, Any]:
    return {
        "type": "edge",
        "src": e.src_id,
        "dst": e.dst_id,
        "rel": e.rel,
        "weight": e.weight,
        "created": iso(e.created),
    }


def export_records(*, project: str | None = None) -> Iterator[dict[str, Any]]:
    """Projects by slug, then memories, notes and explicit edges by id.

    Wikilink edges are not exported: they are derived from bodies on import.
    """
    projects = Project.objects.select_related("parent").order_by("slug")
    memories = Memory.objects.select_related("project").order_by("pk")
    notes = Note.objects.select_related("project").order_by("pk")
    edges = Edge.objects.filter(origin="explicit").order_by("src_id", "dst_id", "rel", "pk")
    if project is not None:
        if not Project.objects.filter(slug=project).exists():
            raise ValueError(f"no project with slug {project!r}")
        projects = projects.filter(slug=project)
        memories = memories.filter(project__slug=project)
        notes = notes.filter(project__slug=project)
        edges = edges.filter(src__project__slug=project)
    yield from (project_record(p) for p in projects)
    yield from (memory_record(m) for m in memories.iterator(chunk_size=1000))
    yield from (note_record(n) for n in notes.iterator(chunk_size=1000))
    yield from (edge_record(e) for e in edges)


def export_jsonl(out: Path, *, project: str | None = None) -> dict[str, int]:
    """One JSON object per line; returns the count per record type."""
    counts = dict.fromkeys(TYPES, 0)
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for record in export_records(project=project):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            counts[record["type"]] += 1
    return counts


def export_markdown(out: Path, *, project: str | None = None) -> dict[str, int]:
    """One markdown file per item under `out`, which must be new or empty."""
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty: export markdown into a new folder")
    counts = dict.fromkeys(TYPES, 0)
    records = list(export_records(project=project))
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
        path.write_text(markdown_text(record), encoding="utf-8", newline="\n")
        counts[kind] += 1
    return counts


def markdown_text(record: dict[str, Any]) -> str:
    front = {k: v for k, v in record.items() if k != "body"}
    matter = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1 << 16)
    return f"---\n{matter}---\n\n{record.get('body', '')}\n"
