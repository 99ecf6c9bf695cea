"""The ORM implementation of `recall.ports.MemoryStore` (the source of truth)."""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    Exists,
    F,
    Func,
    OuterRef,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Substr
from django.db.models.lookups import GreaterThan
from django.utils import timezone

from console import passage_store
from console.models import (
    Edge,
    IndexJob,
    Memory,
    MemoryRevision,
    Note,
    Project,
    RetrievalEvent,
)
from console.prepared import Prepared, read_rows
from recall import timetravel
from recall.context import turns_before
from recall.decay import expired as is_expired
from recall.neighbourhood import near
from recall.planes import Clock
from recall.ports import Vectors
from recall.results import LEAD_CHARS, lead
from recall.types import (
    EPISODIC_KINDS,
    MEMORY,
    NOTE,
    SUPERSEDES,
    Filter,
    Link,
    Named,
    Neighbour,
    Record,
)

# Usage ranking reads a snapshot of retrieval events cut every USAGE_SNAPSHOT_S
# seconds (aligned to the clock, so every process cuts at the same instants).
USAGE_SNAPSHOT_S = 600
_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ULID_CHARS = re.compile(r"^[0-9A-HJKMNP-TV-Z]+$")
USAGE_WINDOW_DAYS = 120


MEMORY_COLUMNS = (
    "id",
    "project__slug",
    "kind",
    "name",
    "description",
    "body",
    "tags",
    "importance",
    "favorite",
    "invalid_at",
    "created",
    "updated",
    "superseded_by_id",
    "session_id",
    "source",
    "valid_from",
    "occurred_at",
    "session_order",
    "agent_id",
    "expires_at",
    "access_count",
    "last_accessed_at",
    "feedback_helpful",
    "feedback_harmful",
)


def memory_row_record(row: Sequence[Any]) -> Record:
    """The one memory -> Record mapping, from a `values_list(*MEMORY_COLUMNS)` row.

    Positional, in `Record`'s field order: every Recall makes about 130 of them, and
    keywords took twice the time (tests/console/test_store.py pins the order)."""
    (pk, project, kind, name, description, body, tags, importance, favorite, invalid_at,
     created, updated, superseded_by, session_id, source, valid_from,
     occurred_at, session_order, agent_id, expires_at, access_count, last_accessed_at,
     helpful, harmful) = row  # fmt: skip
    return Record(
        pk, MEMORY, project, kind, name, name, description, body, tuple(tags or ()),
        importance, favorite, invalid_at is None, created, updated, superseded_by,
        session_id, source, valid_from, occurred_at, session_order, agent_id, invalid_at,
        expires_at, access_count, last_accessed_at, helpful, harmful,
    )  # fmt: skip


def live(now: datetime, prefix: str = "") -> Q:
    """Memories whose expiry has not come by `now` (`recall.decay.expired`, as SQL).

    Written as `COALESCE(expires_at, 9999-12-31) > now`, a test no index can
    answer, on purpose: as `expires_at IS NULL OR expires_at > now` SQLite
    answered it from the expires_at index (a MULTI-INDEX OR matching nearly
    every row) instead of the query's own index, and a briefing over 100,000
    memories took 270 ms. The purge (`expires_at <= now`) still uses the index.
    """
    never = Value(datetime.max.replace(tzinfo=UTC))
    return Q(GreaterThan(Coalesce(F(f"{prefix}expires_at"), never), now))


def now() -> datetime:
    """The console's clock, read at call time (tests pin `django.utils.timezone.now`)."""
    return timezone.now()


def memory_record(m: Memory) -> Record:
    """A model instance as a Record (through the same mapping as rows)."""
    row = [getattr(m, c) for c in MEMORY_COLUMNS if c != "project__slug"]
    row.insert(1, m.project.slug if m.project_id and m.project else None)
    return memory_row_record(row)


def memory_records(rows: QuerySet[Memory]) -> list[Record]:
    """Records of a memory queryset, in its order, without model instances."""
    return [memory_row_record(row) for row in read_rows(rows, MEMORY_COLUMNS)]


REVISION_COLUMNS = (
    "memory_id", "project__slug", "kind", "name", "description", "body", "tags", "importance",
    "invalid_at", "created", "recorded_at", "superseded_by_id", "session_id", "source",
    "valid_from", "agent_id",
)  # fmt: skip


def revision_row_record(row: Sequence[Any]) -> Record:
    """A recorded state of a memory, from a `values_list(*REVISION_COLUMNS)` row, as the
    Record it was (`updated`: when it was recorded; no star: a star is no revision)."""
    (pk, project, kind, name, description, body, tags, importance, invalid_at, created,
     recorded_at, superseded_by, session_id, source, valid_from, agent_id) = row  # fmt: skip
    return Record(
        id=pk, item=MEMORY, project=project, kind=kind, name=name, title=name,
        description=description, body=body, tags=tuple(tags or ()), importance=importance,
        active=invalid_at is None, created=created, updated=recorded_at,
        superseded_by=superseded_by or None, session_id=session_id, source=source,
        valid_from=valid_from, agent_id=agent_id, invalid_at=invalid_at,
    )  # fmt: skip


def note_record(n: Note) -> Record:
    """A note as a Record."""
    return Record(
        id=n.pk,
        item=NOTE,
        project=n.project.slug if n.project_id and n.project else None,
        kind="note",
        name=n.slug,
        title=n.title,
        description=n.description,
        body=n.body,
        tags=tuple(n.tags or ()),
        favorite=n.favorite,
        active=True,
        created=n.created,
        updated=n.updated,
    )


def _scope(where: Filter, *, by_id: bool = False) -> Q:
    """The rows of `where`'s projects (and the global ones when it includes them).
    `by_id` names the projects by a subquery of their ids instead of joining
    their slugs, so a count can be answered from an index alone."""
    q = Q()
    if where.projects is not None:
        if by_id:
            ids = Project.objects.filter(slug__in=list(where.projects)).values("pk")
            q = Q(project_id__in=ids)
        else:
            q = Q(project__slug__in=list(where.projects))
        if where.include_global:
            q |= Q(project__isnull=True)
    elif not where.include_global:
        q = Q(project__isnull=False)
    return q


def _ends(where: Filter, end: str) -> Q:
    """`where` on the memory at one end of an edge (`end` "src" or "dst")."""
    q = Q()
    if where.projects is not None:
        q = Q(**{f"{end}__project__slug__in": list(where.projects)})
        if where.include_global:
            q |= Q(**{f"{end}__project__isnull": True})
    elif not where.include_global:
        q = Q(**{f"{end}__project__isnull": False})
    if where.active_only:
        q &= Q(**{f"{end}__invalid_at__isnull": True})
    if where.kinds is not None:
        q &= Q(**{f"{end}__kind__in": list(where.kinds)})
    if where.items is not None and MEMORY not in where.items:
        q &= Q(pk__in=[])
    if where.narrowed:
        q &= _attributes(where, f"{end}__")
    return q


def _attributes(where: Filter, prefix: str = "") -> Q:
    """Recall's attribute filters (tags ... until) on memories, as one Q (mirrors
    `Filter.admits`); `prefix` reaches a related memory (an edge's end)."""
    q = Q()
    if where.agent_id is not None:
        q &= Q(**{f"{prefix}agent_id": where.agent_id})
    if where.session_id is not None:
        q &= Q(**{f"{prefix}session_id": where.session_id})
    if where.min_importance is not None:
        q &= Q(**{f"{prefix}importance__gte": where.min_importance})
    if where.since is not None:
        q &= Q(**{f"{prefix}created__gte": where.since})
    if where.until is not None:
        q &= Q(**{f"{prefix}created__lte": where.until})
    if where.tags or where.any_tags:
        q &= _tagged(where, f"{prefix}tags")
    return q


class _JsonHas(Func):
    """SQLite: whether a JSON list column holds `values[0]` (or any of `values` with
    `any_of`), as an EXISTS over `json_each`; the column is compiled by Django, so
    it is aliased right inside joins and subqueries."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, column: str, values: Sequence[str], *, any_of: bool = False) -> None:
        super().__init__(F(column), *(Value(v) for v in values))
        self.any_of = any_of

    def as_sql(
        self,
        compiler: Any,
        connection: Any,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> Any:
        column, *values = self.get_source_expressions()
        column_sql, params = compiler.compile(column)
        marks = []
        for value in values:
            value_sql, value_params = compiler.compile(value)
            marks.append(value_sql)
            params = [*params, *value_params]
        test = f"IN ({', '.join(marks)})" if self.any_of else f"= {marks[0]}"
        return f"EXISTS (SELECT 1 FROM json_each({column_sql}) WHERE value {test})", list(params)


def _tagged(where: Filter, column: str) -> Q:
    """Every tag of `where.tags` and one of `where.any_tags` in the JSON list `column`.

    PostgreSQL matches with jsonb containment (`@>`, `?|`); SQLite, which has
    no JSON containment lookup, with EXISTS over `json_each`. Either way the
    match runs inside the query, before any limit.
    """
    q = Q()
    if connection.vendor == "postgresql":
        for tag in where.tags:
            q &= Q(**{f"{column}__contains": [tag]})
        if where.any_tags:
            q &= Q(**{f"{column}__has_any_keys": list(where.any_tags)})
        return q
    for tag in where.tags:
        q &= Q(_JsonHas(column, [tag]))
    if where.any_tags:
        q &= Q(_JsonHas(column, list(where.any_tags), any_of=True))
    return q


def _valid_at(instant: datetime | None) -> Q:
    """`recall.timetravel.valid_at` as SQL over a memory's or a revision's columns:
    valid_from <= instant < invalid_at (either open when unset); without an
    instant, invalid_at unset."""
    if instant is None:
        return Q(invalid_at__isnull=True)
    began = Q(valid_from__isnull=True) | Q(valid_from__lte=instant)
    return began & (Q(invalid_at__isnull=True) | Q(invalid_at__gt=instant))


def _memories(where: Filter, *, by_id: bool = False) -> QuerySet[Memory]:
    rows = Memory.objects.filter(_scope(where, by_id=by_id)).select_related("project")
    if where.active_only:
        rows = rows.filter(invalid_at__isnull=True)
    if where.kinds is not None:
        rows = rows.filter(kind__in=list(where.kinds))
    if where.narrowed:
        rows = rows.filter(_attributes(where))
    return rows


def _notes(where: Filter) -> QuerySet[Note]:
    rows = Note.objects.filter(_scope(where)).select_related("project")
    if where.kinds is not None and "note" not in where.kinds:
        return rows.none()
    if where.memories_only:  # a note has no agent, session or importance
        return rows.none()
    if where.since is not None:
        rows = rows.filter(created__gte=where.since)
    if where.until is not None:
        rows = rows.filter(created__lte=where.until)
    return rows.filter(_tagged(where, "tags")) if where.tags or where.any_tags else rows


def _newest(where: Filter, now: datetime, favorites_only: bool = False) -> QuerySet[Memory]:
    """The memories `where` admits that are live at `now`, newest first (`browse`'s
    and `names`' order, and PromptRecall's refresh read)."""
    rows = _memories(where).filter(live(now))
    if favorites_only:
        # `favorite IN (true)`, not Django's bare `WHERE favorite`: standard SQL that
        # both databases match to the (favorite, updated) index (SQLite would not for
        # a bare boolean column).
        rows = rows.filter(favorite__in=[True])
    return rows.order_by("-updated", "-id")


def _identify(rows: QuerySet[Any], name: str, limit: int, *args: str) -> QuerySet[Any]:
    """`rows` matching an exact id, name, or id range (read as keys: pk, `name`)."""
    upper, lower, *prefix = args
    match = Q(pk=upper) | Q(**{name: lower})
    if prefix:
        match |= Q(pk__gte=prefix[0], pk__lt=prefix[1])
    return rows.filter(match).order_by()[:limit]


EDGE_COLUMNS = ("src_id", "dst_id", "weight", "rel")
_IDENTIFY_MEMORY = Prepared(
    lambda key, *args: _identify(_memories(key[0]), "name", key[1], *args),
    model=Memory,
    columns=("pk", "name"),
)
_IDENTIFY_NOTE = Prepared(
    lambda key, *args: _identify(_notes(key[0]), "slug", key[1], *args),
    model=Note,
    columns=("pk", "slug"),
)
_HYDRATE = Prepared(
    lambda n, *ids: Memory.objects.filter(pk__in=ids).order_by(),
    model=Memory,
    columns=MEMORY_COLUMNS,
)
_LINKS = Prepared(
    lambda n, *ids: Edge.objects.filter(src_id__in=ids).order_by("src_id", "position", "id"),
    model=Edge,
    columns=EDGE_COLUMNS,
)

# The graph walk's reads (`edges`): keyed by (filter, number of ids, min_weight).
_EDGES_OUT = Prepared(
    lambda key, *ids: Edge.objects.filter(
        _ends(key[0], "dst"), src_id__in=ids, weight__gte=key[2]
    ).order_by("src_id", "position", "dst_id", "rel"),
    model=Edge,
    columns=EDGE_COLUMNS,
)
_EDGES_IN = Prepared(
    lambda key, *ids: Edge.objects.filter(
        _ends(key[0], "src"), dst_id__in=ids, weight__gte=key[2]
    ).order_by("dst_id", "position", "src_id", "rel"),
    model=Edge,
    columns=EDGE_COLUMNS,
)
# PromptRecall's refresh (`names` with `since`): keyed by (filter, limit).
# A memory without a description is named in PromptRecall's corpus by its body's
# lead (`recall.results.lead`): its head, read only for such a memory.
NAMED_COLUMNS = ("id", "name", "description", "head", "updated")
_HEAD = Case(
    When(description="", then=Substr("body", 1, LEAD_CHARS)),
    default=Value(""),
    output_field=TextField(),
)


def _named(rows: QuerySet[Memory]) -> QuerySet[Memory]:
    return rows.annotate(head=_HEAD)


def _named_row(row: Sequence[Any]) -> Named:
    memory_id, name, description, head, updated = row
    return Named(memory_id, name, lead(description, head or ""), updated)


_NAMES_SINCE = Prepared(
    lambda key, now, since: _named(_newest(key[0], now).filter(updated__gte=since))[: key[1]],
    model=Memory,
    columns=NAMED_COLUMNS,
)
_REPLACED = Prepared(
    lambda key, *ids: (
        Memory.objects.filter(_ends(key[0], "superseded_by"), pk__in=ids)
        .filter(superseded_by__isnull=False)
        .order_by("id")
    ),
    model=Memory,
    columns=("id", "superseded_by_id"),
)

# The semantic channel's pool: each memory's place in its session (`earlier_turns`).
_SEATS = Prepared(
    lambda n, *ids: (
        Memory.objects.filter(pk__in=ids, session_order__isnull=False)
        .exclude(session_id="")
        .order_by()
    ),
    model=Memory,
    columns=("pk", "session_id", "session_order", "kind"),
)

# The turns before those (`earlier_turns`): keyed by (filter, sessions, orders), the
# counts padded to powers of two (an IN list repeats its last value) so that a few
# dozen shapes serve every pool; the arguments are now, the sessions, the orders.
_BEFORE = Prepared(
    lambda key, now, *args: (
        _memories(key[0])
        .filter(live(now), session_id__in=args[: key[1]], session_order__in=args[key[1] :])
        .order_by()
    ),
    model=Memory,
    columns=("pk", "session_id", "session_order", "kind"),
    size=1024,
)


def _near(key: tuple[Filter, tuple[tuple[bool, bool], ...]], now: Any, *args: Any) -> Any:
    """The session channel's read (`session_neighbours`): the live rows in scope in each
    seed's session within its bounds; keyed by (filter, each seed's (has an order, has a
    time)), the arguments now, then per seed its session and the bounds it has."""
    where, seats = key
    bound = iter(args)
    reach = Q(pk__in=[])
    for has_order, has_time in seats:
        q = Q(session_id=next(bound))
        if has_order:
            q &= Q(session_order__range=(next(bound), next(bound))) | Q(session_order__isnull=True)
        if has_time:
            q &= Q(occurred_at__range=(next(bound), next(bound))) | Q(occurred_at__isnull=True)
        reach |= q
    return _memories(where).filter(reach, live(now)).order_by()


_NEAR = Prepared(_near, model=Memory, columns=MEMORY_COLUMNS, size=1024)


def _padded(values: Sequence[Any]) -> list[Any]:
    """`values` with its last repeated up to a power of two (for a prepared IN list)."""
    size = 1 << max(0, len(values) - 1).bit_length()
    return [*values, *[values[-1]] * (size - len(values))]


_ISOLATION = Prepared(
    lambda _, slug: Project.objects.filter(slug=slug).order_by()[:1],
    model=Project,
    columns=("isolation",),
)


def usage_cut(now: datetime) -> datetime:
    """The latest snapshot instant at or before `now` (a multiple of USAGE_SNAPSHOT_S)."""
    stamp = int(now.timestamp()) // USAGE_SNAPSHOT_S * USAGE_SNAPSHOT_S
    return datetime.fromtimestamp(stamp, tz=UTC)


def _lane(pk: str, name: str, upper: str, lower: str) -> int:
    return 0 if pk == upper else 1 if name == lower else 2


_NEWEST = Prepared(lambda key: IndexJob.objects.order_by("-id")[:1], model=IndexJob, columns=["pk"])
_EXPIRED = Prepared(
    lambda key, at: Memory.objects.filter(expires_at__lte=at).order_by(),
    model=Memory,
    columns=["pk"],
)


class _Read:
    """What one request has read (`DjangoStore.reading`): memory rows by id,
    sentence vectors by id (None: asked, and the memory has none), and projects'
    isolation by slug."""

    __slots__ = ("isolation", "passages", "rows")

    def __init__(self) -> None:
        self.rows: dict[str, Record] = {}
        self.passages: dict[str, Vectors | None] = {}
        self.isolation: dict[str, str] = {}


_READ: ContextVar[_Read | None] = ContextVar("memory_rows_read", default=None)


def newest_job() -> int | None:
    """The newest queued index job's id, None when none waits (compiled once: the
    palette asks on every keystroke, `selectors.text_stamp`; so does every Recall,
    `DjangoStore.stamp`; a rebuild drops the jobs up to it)."""
    rows = _NEWEST.rows(None)
    return int(rows[0][0]) if rows else None


class DjangoStore:
    """Hydration, scoped listings, link resolution and usage from the ORM.

    Expiry is read against `clock` (the console's clock by default): hydration
    drops an expired row in Python (its query is compiled once, so it cannot
    carry "now"), the listings filter it in SQL.
    """

    def __init__(self, clock: Clock = now) -> None:
        self.clock = clock
        self._usage: dict[str, float] = {}
        self._usage_cut: datetime | None = None
        self._usage_lock = threading.Lock()

    def stamp(self) -> object:
        """The newest outbox job's id (`recall.tiers.Stamped`): every write, by any
        process, commits one in its transaction, so the hot tier sees a write by
        another process at once even while the index worker is down and the planes
        hold still (a deleted memory was recalled hot for up to 30 s)."""
        return newest_job() or 0  # None would say "no stamp": no hot tier

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Keep the memory rows read in the block for the block (`recall.ports.ReadsOnce`):
        one Recall read the semantic pool's rows for their sessions, then hydrated them;
        the session channel read its seeds' rows, hydrated already, and its neighbours',
        hydrated again by the second fusion; a pack cutting a long memory read its
        sentence vectors, read already by the semantic channel. A context variable: a
        thread, or a request, never sees another's rows, and none are kept once the
        block ends."""
        token = _READ.set(_Read())
        try:
            yield
        finally:
            _READ.reset(token)

    @staticmethod
    def _records(ids: list[str]) -> list[Record]:
        """The memories of `ids` (distinct) that exist, as records; within `reading`
        each row is read once."""
        memo = _READ.get()
        if memo is None:
            return [memory_row_record(row) for row in _HYDRATE.rows(len(ids), *ids)]
        read = memo.rows
        missing = [i for i in ids if i not in read]
        if missing:
            for row in _HYDRATE.rows(len(missing), *missing):
                read[row[0]] = memory_row_record(row)
        return [read[i] for i in ids if i in read]

    @staticmethod
    def _remember(records: Iterable[Record]) -> None:
        """Rows a channel read whole, kept for the hydration after it (within `reading`)."""
        memo = _READ.get()
        if memo is not None:
            memo.rows.update((r.id, r) for r in records)

    def hydrate(self, ids: Iterable[str], *, expired: bool = False) -> dict[str, Record]:
        """Rows as plain tuples (no model instances): this runs on every query; an
        expired memory only with `expired` (the cold tier's `include_history`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        records = self._records(wanted)
        at = self.clock()
        found = {r.id: r for r in records if expired or not is_expired(r, at)}
        gone = {r.id for r in records} - set(found)
        rest = [i for i in wanted if i not in found and i not in gone]
        if rest:
            found.update(
                {
                    n.pk: note_record(n)
                    for n in Note.objects.filter(pk__in=rest).select_related("project")
                }
            )
        return found

    def browse(self, *, where: Filter, limit: int, favorites_only: bool = False) -> list[Record]:
        items = where.items or (MEMORY, NOTE)
        records: list[Record] = []
        if MEMORY in items:
            records += memory_records(_newest(where, self.clock(), favorites_only)[:limit])
        if NOTE in items:
            notes = _notes(where).filter(favorite=True) if favorites_only else _notes(where)
            records += [note_record(n) for n in notes.order_by("-updated", "-id")[:limit]]
        records.sort(
            key=lambda r: (r.updated.timestamp() if r.updated else 0.0, r.id), reverse=True
        )
        return records[:limit]

    def names(self, *, where: Filter, limit: int, since: datetime | None = None) -> list[Named]:
        if where.items and MEMORY not in where.items:
            return []
        if since is not None:  # a refresh, every few seconds per scope: compiled once
            found = _NAMES_SINCE.rows((where, limit), self.clock(), since)
            return [_named_row(row) for row in found]
        fields = _named(_newest(where, self.clock())).values_list(*NAMED_COLUMNS)
        return [_named_row(row) for row in fields[:limit]]

    def count(self, *, where: Filter) -> int:
        items = where.items or (MEMORY, NOTE)
        counted = _memories(where, by_id=True).filter(live(self.clock()))
        total = counted.count() if MEMORY in items else 0
        return total + (_notes(where).count() if NOTE in items else 0)

    def expired_ids(self) -> frozenset[str]:
        """Expired, not yet purged: one range on the expires_at index (empty nearly always:
        the index worker purges every minute), compiled once: every Recall asks."""
        return frozenset(pk for (pk,) in _EXPIRED.rows(None, self.clock()))

    def links(self, ids: Sequence[str]) -> dict[str, tuple[Link, ...]]:
        """Each memory's stored edges (written from its body), in body order."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found: dict[str, list[Link]] = defaultdict(list)
        for src, dst, weight, rel in _LINKS.rows(len(wanted), *wanted):
            found[src].append(Link(dst, weight, rel))
        return {src: tuple(edges) for src, edges in found.items()}

    def edges(
        self, ids: Sequence[str], *, where: Filter, reverse: bool = False, min_weight: float = 0.0
    ) -> dict[str, tuple[Link, ...]]:
        """One indexed read per direction (compiled once per shape: the graph walk asks
        once per hop); scope, validity and weight inside the query."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found: dict[str, list[Link]] = defaultdict(list)
        shape = (where, len(wanted), float(min_weight))
        for src, dst, weight, rel in _EDGES_OUT.rows(shape, *wanted):
            found[src].append(Link(dst, weight, rel))
        if reverse:
            for src, dst, weight, rel in _EDGES_IN.rows(shape, *wanted):
                found[dst].append(Link(src, weight, rel, reverse=True))
        self._supersessions(wanted, where, reverse, found)
        return {here: tuple(edges) for here, edges in found.items()}

    @staticmethod
    def _supersessions(
        wanted: list[str], where: Filter, reverse: bool, found: dict[str, list[Link]]
    ) -> None:
        """`superseded_by` read as edges replacement -> replaced (type `supersedes`, weight 1).

        The replaced end is inactive, so under an active-only filter the
        forward edge can never be admitted: that read is skipped.
        """
        if not where.active_only:
            olds = _memories(where).filter(superseded_by_id__in=wanted).order_by("id")
            for old, new in olds.values_list("id", "superseded_by_id"):
                found[new].append(Link(old, 1.0, SUPERSEDES))
        if reverse:
            for old, new in _REPLACED.rows((where, len(wanted)), *wanted):
                found[old].append(Link(new, 1.0, SUPERSEDES, reverse=True))

    def session_neighbours(
        self,
        ids: Sequence[str],
        *,
        where: Filter,
        minutes: float,
        turns: int,
        cap: int,
        kinds: Collection[str] | None = None,
    ) -> dict[str, tuple[Neighbour, ...]]:
        """One read of the seeds' rows, one of their sessions' rows near them
        (both bounded by the session index, compiled once per shape: this runs on
        every Recall); `recall.neighbourhood.near` decides."""
        wanted = list(dict.fromkeys(ids))
        if not wanted or cap <= 0:
            return {}
        seeds = [r for r in self._records(wanted) if r.session_id]
        if kinds is not None:  # here, not in SQL: `kind IN` lures SQLite off the primary key
            seeds = [s for s in seeds if s.kind in kinds]
        if not seeds:
            return {}
        seeds.sort(key=lambda r: r.id)  # one shape per pattern, whatever the order asked
        span = timedelta(minutes=minutes)
        seats: list[tuple[bool, bool]] = []
        args: list[Any] = []
        for seed in seeds:
            seats.append((seed.session_order is not None, seed.occurred_at is not None))
            args.append(seed.session_id)
            if seed.session_order is not None:
                args += [seed.session_order - turns, seed.session_order + turns]
            if seed.occurred_at is not None:
                args += [seed.occurred_at - span, seed.occurred_at + span]
        rows = _NEAR.rows((where, tuple(seats)), self.clock(), *args)
        found = [memory_row_record(row) for row in rows]
        self._remember(found)
        return near(seeds, found, where=where, minutes=minutes, turns=turns, cap=cap)

    def earlier_turns(
        self, ids: Sequence[str], *, where: Filter, turns: int
    ) -> dict[str, tuple[str, ...]]:
        """Two reads: the seeds' (session, order) (compiled once: the semantic channel
        asks for its whole pool on every Recall), then the live rows in scope at the
        orders before them in those sessions (session index); `turns_before` matches.
        Turns only (`EPISODIC_KINDS`), kept here, not in SQL: `kind IN` lured SQLite
        onto the kind index, scanning every turn (1.51 -> 0.32 and 1.30 -> 0.23 ms
        per Recall for the two reads at 10,000 memories)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted or turns <= 0:
            return {}
        seeds = [
            (pk, session, order)
            for pk, session, order, kind in _SEATS.rows(len(wanted), *wanted)
            if kind in EPISODIC_KINDS
        ]
        if not seeds:
            return {}
        sessions = _padded(sorted({session for _, session, _ in seeds}))
        orders = _padded(sorted({order - d for _, _, order in seeds for d in range(1, turns + 1)}))
        key = (where, len(sessions), len(orders))
        rows = [
            (pk, session, order)
            for pk, session, order, kind in _BEFORE.rows(key, self.clock(), *sessions, *orders)
            if order is not None and kind in EPISODIC_KINDS
        ]
        return turns_before(seeds, rows, turns)

    def passages(self, ids: Sequence[str]) -> dict[str, Vectors]:
        memo = _READ.get()
        if memo is None:
            return passage_store.read(ids)
        read = memo.passages
        missing = [i for i in dict.fromkeys(ids) if i not in read]
        if missing:
            found = passage_store.read(missing)
            read.update((i, found.get(i)) for i in missing)
        return {i: v for i in ids if (v := read.get(i)) is not None}

    def identifiers(self, text: str, *, where: Filter, limit: int) -> list[Record]:
        """Exact id (lane 0), exact name/slug (1), id prefix of 8+ characters (2).

        One query per table whose OR terms are all indexed (primary key, name,
        a primary-key range for the prefix), never a LIKE scan: the palette
        asks on every keystroke.
        """
        token = text.strip()
        if not token or len(token) > 120 or not _IDENTIFIER.match(token):
            return []
        upper, lower = token.upper(), token.lower()
        ranged = len(token) >= 8 and _ULID_CHARS.match(upper) is not None
        args = (upper, lower, upper, upper + "~") if ranged else (upper, lower)
        items = where.items or (MEMORY, NOTE)
        # Keys first (usually none match), then hydrate only the matches.
        found: list[tuple[str, str]] = []
        if MEMORY in items:
            found += _IDENTIFY_MEMORY.rows((where, limit * 2), *args)
        if NOTE in items:
            found += _IDENTIFY_NOTE.rows((where, limit * 2), *args)
        if not found:
            return []
        ranked = sorted(found, key=lambda f: (_lane(f[0], f[1], upper, lower), f[0]))[:limit]
        records = self.hydrate(pk for pk, _ in ranked)
        return [records[pk] for pk, _ in ranked if pk in records]

    def usage(self, ids: Sequence[str]) -> dict[str, float]:
        table = self._usage_table()
        return {i: table[i] for i in ids if i in table}

    def _usage_table(self) -> dict[str, float]:
        """Decayed usage per id as of the last snapshot cut (`usage_cut`).

        Events are counted only before the cut, and the table is the same for
        every call until the next cut: a recall's own events cannot move the
        next identical recall, so two in a row give identical packs.
        """
        cut = usage_cut(timezone.now())
        if cut == self._usage_cut:
            return self._usage
        with self._usage_lock:
            if cut == self._usage_cut:
                return self._usage
            from recall.usage import utility

            since = cut - timedelta(days=USAGE_WINDOW_DAYS)
            grouped: dict[str, list[tuple[str, datetime]]] = defaultdict(list)
            rows = RetrievalEvent.objects.filter(at__gte=since, at__lt=cut, counts=True)
            for kind, ids, at in rows.values_list("kind", "ids", "at"):
                for item_id in ids or []:
                    grouped[item_id].append((kind, at))
            self._usage = {i: utility(evts, cut) for i, evts in grouped.items()}
            self._usage_cut = cut
            return self._usage

    def as_of(
        self, *, where: Filter, valid_at: datetime | None = None,
        recorded_at: datetime | None = None,
    ) -> list[Record]:  # fmt: skip
        """See the port: the current rows, or each memory's latest revision by
        `recorded_at` (one query: no later revision recorded by then), in scope.

        When `where` wants valid memories only, the valid-time rule is part of
        the query (`_valid_at`), so the rows valid at another time are never
        read (`as_known` still applies the rule to what is read), and the
        projects are named by id, unordered, so SQLite reads their index
        instead of walking every memory by `updated`: at 100,000 memories one
        project's scope (17,139 rows, 5,153 of them valid) read in 186 ms
        instead of 863."""
        loose = replace(where, active_only=False)
        valid = _valid_at(valid_at) if where.active_only else Q()
        if recorded_at is None:
            known = memory_records(_memories(loose, by_id=True).filter(valid).order_by())
        else:
            later = MemoryRevision.objects.filter(
                memory_id=OuterRef("memory_id"), number__gt=OuterRef("number"),
                recorded_at__lte=recorded_at,
            )  # fmt: skip
            rows = MemoryRevision.objects.filter(recorded_at__lte=recorded_at, deleted=False)
            rows = rows.exclude(Exists(later)).filter(_scope(loose), valid).order_by()
            if where.kinds is not None:
                rows = rows.filter(kind__in=list(where.kinds))
            if where.narrowed:
                rows = rows.filter(_attributes(where))
            known = [revision_row_record(r) for r in read_rows(rows, REVISION_COLUMNS)]
        return timetravel.as_known(known, where=where, instant=valid_at)

    def isolation(self, project: str) -> str:
        """Read on every Recall (the scope filter): compiled once, and within `reading`
        read once (a Recall read it for its hot-tier key, then for its scope)."""
        memo = _READ.get()
        if memo is not None and project in memo.isolation:
            return memo.isolation[project]
        rows = _ISOLATION.rows("isolation", project)
        found = str(rows[0][0]) if rows and rows[0][0] else "open"
        if memo is not None:
            memo.isolation[project] = found
        return found
