"""Read-only queries for the console's browsing: a project's memories with sort,
filters, counts and pages; items by id (palette recents); the stored texts a
result's snippet is cut from.

Views import this module as they import the selectors, and like them it
never writes (import-linter holds it to the selectors' contract). A listing
reads one narrow row per memory of the project (id, kind, tags, flags,
dates, name) and filters, counts and sorts those in Python: tags are JSON
lists, which SQLite cannot filter portably, and one pass gives every facet's
count at once. Only the page's rows are then read in full.

Lists that span projects take `projects`, the slugs a person sees
(`console.roles.visible_projects`; None: every project): global items are
always in, since every logged-in person sees them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from console.models import Memory, Note, Project
from console.prepared import Prepared
from console.store import live
from console.store import now as store_now

PER_PAGE = 25
SORTS = {
    "updated": "Recently updated",
    "created": "Recently created",
    "importance": "Most important",
    "name": "Name (A-Z)",
}
TOP_TAGS = 30
GLOBAL = "_global"  # the URL key of the memories outside any project


@dataclass(frozen=True)
class Facet:
    value: str
    count: int


@dataclass(frozen=True)
class Listing:
    """One page of a project's memories and the counts around it."""

    memories: list[Memory]
    total: int
    page: int
    pages: int
    per_page: int
    kinds: list[Facet] = field(default_factory=list)
    tags: list[Facet] = field(default_factory=list)
    archived: int = 0  # archived or superseded memories the filters would admit
    favorites: int = 0

    @property
    def start(self) -> int:
        return (self.page - 1) * self.per_page + 1 if self.total else 0

    @property
    def end(self) -> int:
        return min(self.total, self.page * self.per_page)


@dataclass(frozen=True)
class _Row:
    id: str
    kind: str
    tags: tuple[str, ...]
    favorite: bool
    active: bool
    updated: datetime
    created: datetime
    importance: float
    name: str


def _seen(projects: Sequence[str] | None) -> Q:
    """Items of these projects plus the global ones (None: every item)."""
    if projects is None:
        return Q()
    return Q(project__isnull=True) | Q(project__slug__in=list(projects))


def _live() -> Q:
    """Memories whose expiry has not come (an expired one leaves every list at once)."""
    return live(store_now())


def project_for(*, key: str) -> Project | None:
    """The project a browse URL names (None for the global memories).

    Raises Project.DoesNotExist for an unknown slug.
    """
    return None if key == GLOBAL else Project.objects.get(slug=key)


def _rows(project: Project | None) -> list[_Row]:
    scope = Q(project__isnull=True) if project is None else Q(project=project)
    fields = ("id", "kind", "tags", "favorite", "invalid_at", "updated", "created")
    values = Memory.objects.filter(scope, _live()).values_list(*fields, "importance", "name")
    return [
        _Row(i, k, tuple(str(t) for t in (tags or ())), fav, inv is None, up, cr, imp, name)
        for i, k, tags, fav, inv, up, cr, imp, name in values
    ]


def _sorted(rows: list[_Row], sort: str) -> list[_Row]:
    if sort == "name":
        return sorted(rows, key=lambda r: (r.name, r.id))
    if sort == "created":
        return sorted(rows, key=lambda r: (r.created, r.id), reverse=True)
    if sort == "importance":
        rows = sorted(rows, key=lambda r: (r.updated, r.id), reverse=True)
        return sorted(rows, key=lambda r: r.importance, reverse=True)
    return sorted(rows, key=lambda r: (r.updated, r.id), reverse=True)


def project_memories(
    *,
    project: Project | None,
    kind: str = "",
    tag: str = "",
    archived: bool = False,
    favorites: bool = False,
    sort: str = "updated",
    page: int = 1,
    per_page: int = PER_PAGE,
) -> Listing:
    """A page of the project's memories (None: the global ones) under the filters.

    Each facet counts what the other filters admit, as on GitHub or Datasette:
    kinds ignore the kind filter, tags the tag filter. `archived` also shows
    memories no longer active (archived or superseded); without it they are
    counted so the page can say what is hidden. A page past the end is the last.
    """
    rows = _rows(project)

    def admits(row: _Row, *, skip: str = "") -> bool:
        return (
            (archived or row.active or skip == "archived")
            and (not favorites or row.favorite or skip == "favorites")
            and (not kind or row.kind == kind or skip == "kind")
            and (not tag or tag in row.tags or skip == "tag")
        )

    kinds = Counter(r.kind for r in rows if admits(r, skip="kind"))
    tags = Counter(t for r in rows if admits(r, skip="tag") for t in set(r.tags))
    hidden = 0 if archived else sum(1 for r in rows if not r.active and admits(r, skip="archived"))
    chosen = _sorted([r for r in rows if admits(r)], sort if sort in SORTS else "updated")
    pages = max(1, -(-len(chosen) // per_page))
    page = min(max(1, page), pages)
    ids = [r.id for r in chosen[(page - 1) * per_page : page * per_page]]
    by_id = Memory.objects.select_related("project").in_bulk(ids)
    top_tags = sorted(tags.items(), key=lambda item: (-item[1], item[0]))[:TOP_TAGS]
    if tag and tag not in dict(top_tags):
        top_tags.append((tag, tags.get(tag, 0)))
    return Listing(
        memories=[by_id[i] for i in ids if i in by_id],
        total=len(chosen),
        page=page,
        pages=pages,
        per_page=per_page,
        kinds=[Facet(k, n) for k, n in sorted(kinds.items())],
        tags=[Facet(t, n) for t, n in top_tags],
        archived=hidden,
        favorites=sum(1 for r in rows if r.favorite and admits(r, skip="favorites")),
    )


def project_notes(*, project: Project | None, limit: int = 10) -> tuple[list[Note], int]:
    """The newest notes of the project (None: the inbox) and how many it has."""
    scope = Q(project__isnull=True) if project is None else Q(project=project)
    rows = Note.objects.filter(scope).order_by("-updated", "-id")
    return list(rows[:limit]), rows.count()


@dataclass(frozen=True)
class Item:
    """A memory or note as a list shows it."""

    kind: str  # "memory" | "note"
    id: str
    title: str
    description: str
    project: str | None
    memory_kind: str
    active: bool
    updated: datetime | None


def _memory_item(m: Memory) -> Item:
    project = m.project.slug if m.project else None
    return Item("memory", m.pk, m.name, m.description, project, m.kind, m.active, m.updated)


def _note_item(n: Note) -> Item:
    project = n.project.slug if n.project else None
    return Item("note", n.pk, n.title, n.description, project, "", True, n.updated)


def items_by_id(*, ids: Sequence[str], projects: Sequence[str] | None = None) -> list[Item]:
    """Memories and notes with these ids, in the order given; unknown ids, and
    items outside `projects`, are skipped."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, Item] = {}
    seen = _seen(projects)
    for m in Memory.objects.filter(seen, pk__in=wanted).select_related("project"):
        found[m.pk] = _memory_item(m)
    for n in Note.objects.filter(seen, pk__in=wanted).select_related("project"):
        found[n.pk] = _note_item(n)
    return [found[i] for i in wanted if i in found]


def recently_updated(*, limit: int = 5, projects: Sequence[str] | None = None) -> list[Item]:
    """The newest active memories and notes in `projects`, newest first."""
    seen = _seen(projects)
    memories = Memory.objects.filter(seen, _live(), invalid_at__isnull=True)
    memories = memories.select_related("project")
    notes = Note.objects.filter(seen).select_related("project")
    items = [_memory_item(m) for m in memories.order_by("-updated", "-id")[:limit]]
    items += [_note_item(n) for n in notes.order_by("-updated", "-id")[:limit]]
    items.sort(key=lambda i: (i.updated is not None, i.updated, i.id), reverse=True)
    return items[:limit]


def favorites(*, projects: Sequence[str] | None) -> tuple[list[Memory], list[Note]]:
    """Starred memories and notes in `projects` (and global), newest first."""
    seen = _seen(projects)
    memories = Memory.objects.filter(seen, _live(), favorite=True).select_related("project")
    notes = Note.objects.filter(seen, favorite=True).select_related("project")
    return list(memories), list(notes)


@dataclass(frozen=True)
class Text:
    """What a result's snippet is cut from, and a memory's state for its badge."""

    description: str
    body: str
    state: str = "active"  # "active" | "archived" | "superseded"


# `texts` runs on every palette keystroke: compiled once per number of ids.
_MEMORY_TEXTS = Prepared(
    lambda n, *ids: Memory.objects.filter(pk__in=ids).order_by(),
    model=Memory,
    columns=("id", "description", "body", "invalid_at", "superseded_by_id"),
)
_NOTE_TEXTS = Prepared(
    lambda n, *ids: Note.objects.filter(pk__in=ids).order_by(),
    model=Note,
    columns=("id", "description", "body"),
)


def texts(*, ids: Iterable[str]) -> dict[str, Text]:
    """Each item's description and body (memories and notes), by id: one read of the
    memories, and of the notes only for ids that are not memories."""
    wanted = list(dict.fromkeys(ids))
    found: dict[str, Text] = {}
    if not wanted:
        return found
    for pk, description, body, invalid_at, superseded in _MEMORY_TEXTS.rows(len(wanted), *wanted):
        state = "active" if invalid_at is None else "superseded" if superseded else "archived"
        found[pk] = Text(description or "", body or "", state)
    rest = [i for i in wanted if i not in found]
    for pk, description, body in _NOTE_TEXTS.rows(len(rest), *rest) if rest else ():
        found[pk] = Text(description or "", body or "")
    return found
