"""Reads: the one place the console, the API and MCP reach the engine and the ORM.

Named `<entity>_<action>`, keyword-only. Selectors never write: what agents
and people saw is recorded by `services.retrieval_record`, called by whoever
decides it should be (`console/access.py` for agents). The engine resolves its
own configuration (`console/configuration.py`); the settings page reads the
layers here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections
from django.db.models import Count, Q, QuerySet

from console import (
    allocator,
    configuration,
    digesting,
    indexing,
    passage_store,
    plane_health,
    wiring,
)
from console.models import (
    AgentToken,
    Digest,
    Edge,
    IndexJob,
    LinkName,
    Memory,
    MemoryRevision,
    Note,
    Project,
    RetrievalEvent,
)
from console.store import live
from console.store import newest_job as store_newest_job
from console.store import now as store_now
from recall import decay, links, tiers
from recall.config import BriefingConfig, Problem, decode_over
from recall.errors import QueryError, RecallError
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult
from recall.types import ISOLATION_OPEN, ISOLATION_SEALED, MEMORY, NOTE

log = logging.getLogger(__name__)

# --- configuration ------------------------------------------------------------


def config_sections() -> list[str]:
    """The sections the settings page edits, in its order."""
    return list(configuration.LABELS)


def config_labels() -> dict[str, str]:
    """Each section's name for people."""
    return dict(configuration.LABELS)


def config_base(section: str) -> Any:
    """Built-in defaults < settings.RECALL[section] < RECALL_<SECTION>_* environment."""
    return wiring.engine().base.section(section)


def config_override(section: str) -> dict[str, Any]:
    """The section's override row ({} when there is none)."""
    return configuration.override(section)


def config_check(section: str, values: Mapping[str, Any]) -> tuple[Any, tuple[Problem, ...]]:
    """`values` as an override row over the section's base: the config and each problem.

    The same resolution the engine runs at use time, so what saves is what applies.
    """
    return decode_over(config_base(section), dict(values))


def prompt_floors() -> tuple[int, float]:
    """What a memory must share with a prompt to be matched (PromptRecall's floors, the
    override applied): shared words, score."""
    config, _ = config_check("prompt", config_override("prompt"))
    return config.min_shared_words, config.min_score


def channel_names() -> list[str]:
    """The registered channels, in order (what a weight may name)."""
    return [c.name for c in wiring.engine().registered]


# --- retrieval ----------------------------------------------------------------


def memory_recall(
    *,
    query: str,
    project: str | None,
    budget: int | None = None,
    limit: int | None = None,
    scope: str = "all",
    kind: str | None = None,
    rrf_k: int | None = None,
    channel_weights: Mapping[str, float] | None = None,
    debug: bool = False,
    detail: str = "full",
    graph: Mapping[str, Any] | None = None,
    knobs: Mapping[str, Any] | None = None,
    filters: Mapping[str, Any] | None = None,
    altitude: str | None = None,
    visible: Sequence[str] = (),
) -> ContextPack:
    """Agent Recall -> ContextPack. Raises recall.errors.QueryError on bad input.

    `altitude` (recall/altitude.py) other than entity reads the digests of
    `digest_projects(project, visible)`: the projects the caller may see.

    `graph` holds the graph and associated-memory fields (`recall.associated.FIELDS`);
    `knobs` routing and fabriq's per-request fields (`recall.requests.KNOB_FIELDS`);
    `filters` the filter fields (`recall.requests.FILTER_FIELDS`; lists as given).
    """
    given = dict(knobs or {})
    if given.get("entities") is not None:
        given["entities"] = tuple(given["entities"])
    narrow: dict[str, Any] = {
        f: tuple(v) if isinstance(v, list | tuple) else v for f, v in (filters or {}).items()
    }
    request = RecallRequest(
        **(graph or {}),
        **given,
        **narrow,
        detail=detail,
        query=query,
        project=project,
        budget=budget,
        limit=limit,
        scope=scope,
        kind=kind,
        rrf_k=rrf_k,
        channel_weights=channel_weights,
        debug=debug,
        altitude=altitude,
        digests=tuple(digesting.stored(digest_projects(project, visible)))
        if altitude not in (None, "entity")
        else (),
    )
    return wiring.engine().recall(request)


def digest_projects(project: str | None, visible: Sequence[str]) -> list[str | None]:
    """Whose digests a recall bound to `project` may read, the bound project first.

    The tenant digest's scope guard: the other projects the caller may see
    (`visible`) only when they are open (a confidential project's sentences
    never leave it; a sealed one's neither), then the global digest unless the
    bound project is sealed (then its own digest alone).
    """
    if project is None:
        return [None]
    rows = dict(
        Project.objects.filter(slug__in=[project, *visible]).values_list("slug", "isolation")
    )
    if rows.get(project) == ISOLATION_SEALED:
        return [project]
    others = sorted(p for p in set(visible) - {project} if rows.get(p) == ISOLATION_OPEN)
    return [project, *others, None]


def digest_list(*, projects: Sequence[str | None]) -> list[Digest]:
    """The stored digest rows of these projects (None: the global one), for the console."""
    keys = [digesting.key_of(p) for p in projects]
    return list(Digest.objects.filter(key__in=keys))


def memory_search(
    *,
    query: str,
    projects: Sequence[str] | None = None,
    limit: int | None = None,
    semantic: bool = True,
    since: datetime | None = None,
    prefix: bool = False,
    kinds: Sequence[str] | None = None,
    items: Sequence[str] | None = None,
    include_inactive: bool = False,
    include_global: bool = True,
    offset: int = 0,
    as_of: datetime | None = None,
    recorded_as_of: datetime | None = None,
    snippets: bool = True,
    paged: bool = True,
    cursor: str | None = None,
) -> SearchResult:
    """Search every project (None) or a list -> SearchResult (one page from `offset`, or
    from where `cursor` left off; `paged=False`: no later page will be asked, see
    `SearchRequest`)."""
    request = SearchRequest(
        offset=offset,
        cursor=cursor,
        query=query,
        projects=tuple(projects) if projects is not None else None,  # (): global only
        limit=limit,
        semantic=semantic,
        since=since,
        kinds=tuple(kinds) if kinds else None,
        items=tuple(items) if items else None,
        include_inactive=include_inactive,
        prefix=prefix,
        include_global=include_global,
        as_of=as_of,
        recorded_as_of=recorded_as_of,
        snippets=snippets,
        paged=paged,
    )
    return wiring.engine().search(request)


def briefing_render(
    *,
    project: str | None,
    agent_type: str = "",
    prompt: str = "",
    budget: int | None = None,
    config: BriefingConfig | None = None,
) -> Briefing:
    """Session-start briefing text and the ids rendered (`config`: an unsaved preview)."""
    request = BriefingRequest(project=project, agent_type=agent_type, prompt=prompt, budget=budget)
    return wiring.engine().briefing(request, config=config)


def prompt_recall(*, project: str | None, prompt: str, budget: int | None = None) -> PromptResult:
    request = PromptRequest(project=project, prompt=prompt, budget=budget)
    return wiring.engine().prompt_recall(request)


def text_stamp() -> object:
    """What the palette's kept answers hang on: the full-text plane's stamp (it moves
    when the index applies a change) with the newest queued index job (it moves when
    a change commits, before the index has it); None when the plane cannot tell."""
    text = tiers.stamp(wiring.engine().planes.text)
    if text is None:
        return None
    return text, store_newest_job()


def palette_kept(key: tuple[Any, ...]) -> tuple[object, bytes | None]:
    """(the stamp now, the palette's answer kept for `key` under it or None); the stamp
    is None when nothing can be kept (`text_stamp`)."""
    stamp = text_stamp()
    if stamp is None:
        return None, None
    kept = wiring.palette_answers().get(key, valid=lambda kept: kept[0] == stamp)
    return stamp, None if kept is None else kept[1]


def palette_keep(key: tuple[Any, ...], stamp: object, answer: bytes) -> None:
    """Keep a rendered palette answer made under `stamp` (see `palette_kept`)."""
    wiring.palette_answers().put(key, (stamp, answer))


def warm(projects: Sequence[str] | None = None) -> None:
    """Everything a server's first requests would otherwise wait for: the
    planes, the model and the vector copy (`wiring.warm`), then the PromptRecall
    corpus of the global memories and of each project (`projects`; None: every
    one; later rebuilds happen off the request); what they loaded then stays
    out of the cyclic collector's way (`allocator.freeze`)."""
    wiring.warm()
    if projects is None:
        projects = list(Project.objects.values_list("slug", flat=True))
    for slug in [None, *projects]:
        prompt_recall(project=slug, prompt="warm up")
    allocator.freeze()


def warm_quietly(projects: Sequence[str] | None = None) -> None:
    """`warm` on a thread of its own (a server's start): its database connection is
    given back at the end (PostgreSQL's pool would lose it with the thread)."""
    try:
        warm(projects)
    finally:
        connections.close_all()


def memory_dedup_hint(
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    exclude: Collection[str] = (),
    kind: str = "fact",
    item: str = MEMORY,
    title: str = "",
) -> Hit | None:
    """The most similar active in-scope memory (advisory; None on embedder trouble),
    the memories written but not indexed yet among them, and those indexed since.
    `item` NOTE: the most similar note to a note (`dedup.hint`), the notes written but
    not indexed yet among them, as for memories."""
    pending = indexing.unindexed_vectors(project=project, item=item)
    indexing.vectors_caught_up()
    return wiring.engine().dedup_hint(
        project=project,
        name=name,
        description=description,
        body=body,
        exclude=exclude,
        kind=kind,
        pending=pending,
        item=item,
        title=title,
    )


def memory_like(memory: Memory, *, later: Collection[str] = ()) -> Hit | None:
    """The dedup hint of a memory just saved (by an agent or a person), never itself
    nor one of `later` (a batch's items after it: two like items each named the
    other, and an agent following both superseded both): advisory, so a plane that
    cannot answer leaves it out rather than turning a kept write into an error."""
    try:
        return memory_dedup_hint(
            project=memory.project.slug if memory.project else None,
            name=memory.name,
            description=memory.description,
            body=memory.body,
            exclude=[memory.pk, *later],
            kind=memory.kind,
        )
    except RecallError as exc:
        log.warning("dedup hint for %s left out: %s", memory.pk, exc)
        return None


def note_like(note: Note) -> Hit | None:
    """The dedup hint of a note just saved: the most similar other note in its scope,
    by the same mechanism as a memory's (`memory_like`), advisory as it is."""
    try:
        return memory_dedup_hint(
            project=note.project.slug if note.project else None,
            name=note.slug,
            title=note.title,
            description=note.description,
            body=note.body,
            exclude=[note.pk],
            kind=NOTE,
            item=NOTE,
        )
    except RecallError as exc:
        log.warning("dedup hint for %s left out: %s", note.pk, exc)
        return None


Embedded = indexing.Embedded  # a text's vector embedded before its write


def write_embedding(
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    title: str = "",
    item: str = MEMORY,
) -> Embedded | None:
    """A memory's (or with `item` NOTE, a note's) vector embedded before its write (one
    embedding per write: the dedup hint reads it from the embedder's cache, the index
    worker from the outbox's KnownVector row)."""
    return indexing.embedded(
        project=project, name=name, description=description, body=body, title=title, item=item
    )


PlaneDrift = indexing.PlaneDrift  # what index_status reports per plane


def index_status() -> indexing.Status:
    """Rows per plane, pending jobs and drift against the database."""
    return indexing.status()


def planes_unreadable() -> list[plane_health.Unreadable]:
    """The derived planes that cannot be opened or read (a damaged folder), each named."""
    return plane_health.unreadable()


def embedder_model() -> str | None:
    """The configured embedding model's name (None: no semantic plane)."""
    embedder = wiring.embedder()
    return embedder.model if embedder is not None else None


def index_pending(*, ids: Sequence[str]) -> bool:
    """Whether any of these items still waits for its index job (not for its sentence
    vectors: it is findable by its words and its own vector without them)."""
    jobs = IndexJob.objects.filter(item_id__in=list(ids)).exclude(item=passage_store.PASSAGES)
    return jobs.exists()


def item_count() -> int:
    """Memories and notes in the database."""
    return Memory.objects.count() + Note.objects.count()


# --- items --------------------------------------------------------------------


def unlinked_names(memory: Memory) -> list[str]:
    """The `[[names]]` of a memory's body that no memory it may link to has yet (a link
    waits for its name: `services.link_waiting_sources`)."""
    names = links.names(memory.body)
    if not names:
        return []
    found = memory_ids_by_name(names, project_id=memory.project_id, exclude=memory.pk)
    return [name for name in names if name not in found]


def turn_sharing_place(memory: Memory) -> str | None:
    """Another live memory of the same project and session at the same session_order,
    if one is (the turns read before each are found by this order)."""
    if not memory.session_id or memory.session_order is None:
        return None
    scope = (
        Q(project__isnull=True) if memory.project_id is None else Q(project_id=memory.project_id)
    )
    rows = Memory.objects.filter(
        scope,
        session_id=memory.session_id,
        session_order=memory.session_order,
        invalid_at__isnull=True,
    ).exclude(pk=memory.pk)
    return rows.order_by("id").values_list("pk", flat=True).first()


def links_left_by_rename(memory: Memory) -> str | None:
    """When the memory's last change renamed it, what to tell its editor of the bodies
    that still link to its old name (they reach no memory now, or another of that
    name), else None. Read from its last two revisions."""
    last = list(
        MemoryRevision.objects.filter(memory_id=memory.pk).order_by("-number")[:2]
        .values_list("name", flat=True)
    )  # fmt: skip
    if len(last) < 2 or last[0] == last[1] or memory.name != last[0]:
        return None
    was = last[1]
    left = sorted(m.name for m in memories_naming(memory=memory, name=was))
    if not left:
        return None
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    one = len(left) == 1
    return (
        f"renamed from {was}: {shown} still {'links' if one else 'link'} to [[{was}]], "
        f"which no longer reaches it; change {'that link' if one else 'those links'} to "
        f"[[{memory.name}]]"
    )


def memory_ids_by_name(
    names: Sequence[str], *, project_id: int | None, exclude: str | None = None
) -> dict[str, str]:
    """Each name's active, unexpired memory id by `recall.links.prefer` (project first,
    then global; a sealed project's own only, as its tokens see no global memory: a
    link there made an edge to one, and its missing warning told a name existed)."""
    reach = Q(project_id=project_id)
    if project_id is None or not _sealed(project_id):
        reach |= Q(project__isnull=True)
    rows = (
        Memory.objects.filter(live(store_now()), name__in=list(names), invalid_at__isnull=True)
        .filter(reach)
        .exclude(pk=exclude)
        .values_list("name", "id", "project_id")
    )
    return links.prefer(rows, project_id)


def _sealed(project_id: int) -> bool:
    return Project.objects.filter(pk=project_id, isolation=ISOLATION_SEALED).exists()


def memory_name_holder(
    *, name: str, project_id: int | None, exclude: Sequence[str] = ()
) -> Memory | None:
    """The active, unexpired memory of exactly this project (None = global) that
    holds `name`, other than `exclude`: a name picks one memory (`[[name]]` links,
    reads by name), so a second active one would take them over silently.

    Read by the name index alone, scope and expiry checked on the few rows of that
    name: with the project in the query SQLite searched its (project, invalid_at)
    index instead, every active memory of the project (19 ms a write at 10,000
    memories a project)."""
    at = store_now()
    rows = Memory.objects.filter(name=name, invalid_at__isnull=True).order_by()
    held = [
        m
        for m in rows
        if m.project_id == project_id and not decay.passed(m.expires_at, at) and m.pk not in exclude
    ]
    return min(held, key=lambda m: m.pk, default=None)


def memory_archived_named(*, name: str, project: str) -> Memory | None:
    """The project's most recently archived memory of `name` (archived: closed, not
    superseded); what a restore by name means when no active memory holds it."""
    rows = Memory.objects.filter(
        project__slug=project, name=name, invalid_at__isnull=False, superseded_by__isnull=True
    )
    return rows.select_related("project").order_by("-invalid_at", "-id").first()


def note_links(*, note: Note) -> dict[str, str]:
    """The memory ids a note's `[[name]]` links mean, as a memory's links mean them
    (the note's project first, then global); a name no active memory has is absent."""
    names = links.names(note.body)
    return memory_ids_by_name(names, project_id=note.project_id) if names else {}


def memory_named(*, name: str, project: str | None) -> Memory | None:
    """The active memory a `[[name]]` means seen from `project` (slug; None = global)."""
    project_id = None
    if project is not None:
        project_id = Project.objects.filter(slug=project).values_list("pk", flat=True).first()
        if project_id is None:
            return None
    found = memory_ids_by_name([name], project_id=project_id).get(name)
    return memory_get(memory_id=found) if found else None


def memory_duplicate(
    *, project_id: int | None, content_hash: str, session_id: str
) -> Memory | None:
    """An active, unexpired memory of the project holding exactly this text in this
    session (an expired one is gone for every read, so it answers no write either)."""
    scope = Q(project__isnull=True) if project_id is None else Q(project_id=project_id)
    rows = Memory.objects.filter(
        scope,
        live(store_now()),
        content_hash=content_hash,
        session_id=session_id,
        invalid_at__isnull=True,
    )
    return rows.select_related("project").order_by("id").first()


def retired_with_text(*, project_id: int | None, hashes: Collection[str]) -> dict[str, Memory]:
    """By text hash, the latest archived or superseded memory of the project that held
    that text (unexpired; the replacement read with it): what an agent writing that
    text again should be told, as it may be restating what was retired as wrong."""
    scope = Q(project__isnull=True) if project_id is None else Q(project_id=project_id)
    held = Memory.objects.filter(
        scope, content_hash__in=[h for h in hashes if h], invalid_at__isnull=False
    )
    ids = list(held.values_list("pk", flat=True))  # nearly always none: one plain read
    if not ids:
        return {}
    rows = (
        Memory.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=store_now()), pk__in=ids
        )
        .select_related("superseded_by")
        .order_by("invalid_at", "id")
    )
    return {memory.content_hash: memory for memory in rows}  # the latest last: it wins


def memories_replaced_by(*, memory: Memory) -> list[Memory]:
    """The memories `memory` superseded (their `superseded_by` names it)."""
    return list(Memory.objects.filter(superseded_by_id=memory.pk).order_by("name"))


def memories_naming(*, memory: Memory, name: str | None = None) -> list[Memory]:
    """Memories whose body names `memory` (or `name`, its name before a rename) in a
    `[[link]]`: read from `LinkName`'s index, in its project (anywhere for a global
    memory). The project is checked on the rows found: in the query, SQLite walked
    the project's index instead."""
    said = memory.name if name is None else name
    naming = list(LinkName.objects.filter(name=said).values_list("src_id", flat=True))
    if not naming:
        return []
    rows = Memory.objects.filter(pk__in=naming).exclude(pk=memory.pk).order_by()
    return [
        m
        for m in rows.only("id", "project_id", "body", "name")
        if not memory.project_id or m.project_id == memory.project_id
    ]


def memory_get(*, memory_id: str) -> Memory:
    """Raises Memory.DoesNotExist."""
    return Memory.objects.select_related("project", "superseded_by").get(pk=memory_id)


def note_get(*, note_id: str) -> Note:
    return Note.objects.select_related("project").get(pk=note_id)


def note_same(*, project: Project | None, title: str, body: str) -> Note | None:
    """The project's note (None: the inbox's) holding exactly this title and body, the
    oldest: a note written again (an agent's retry, two agents) is that note."""
    rows = Note.objects.select_related("project").filter(project=project, title=title, body=body)
    return rows.order_by("created", "id").first()


def notes_named(name: str) -> list[Note]:
    """Every note of this name (slug), in any project or the inbox."""
    return list(Note.objects.select_related("project").filter(slug=name))


@dataclass(frozen=True)
class MemoryDetail:
    memory: Memory
    links: list[Memory]
    backlinks: list[Memory]
    chain_back: list[Memory]  # older versions this one replaced, newest first
    chain_forward: list[Memory]  # replacements, oldest first
    history: list[RetrievalEvent]
    note_backlinks: list[Note] = field(default_factory=list)  # notes whose links reach it


def memory_successors(memory: Memory, *, limit: int = 50) -> list[Memory]:
    """The versions after `memory` down its supersede chain, oldest first; the last is
    the one true now (`limit` also ends a cycle a hand-edited database could hold)."""
    chain: list[Memory] = []
    seen = {memory.pk}
    nxt = memory.superseded_by
    while nxt is not None and nxt.pk not in seen and len(chain) < limit:
        chain.append(nxt)
        seen.add(nxt.pk)
        nxt = nxt.superseded_by
    return chain


def memory_detail(*, memory_id: str, history_limit: int = 20) -> MemoryDetail:
    memory = memory_get(memory_id=memory_id)
    edges = Edge.objects.filter(src=memory).order_by("position", "id")
    links = [e.dst for e in edges.select_related("dst__project")]
    backlinks = [e.src for e in Edge.objects.filter(dst=memory).select_related("src__project")]
    back: list[Memory] = []
    current: Memory | None = Memory.objects.filter(superseded_by=memory).first()
    while current is not None and len(back) < 50:
        back.append(current)
        current = Memory.objects.filter(superseded_by=current).first()
    forward = memory_successors(memory)
    history = list(RetrievalEvent.objects.filter(ids__has_string=memory.pk)[:history_limit])
    notes = notes_linking(memory)
    return MemoryDetail(memory, links, backlinks, back, forward, history, notes)


def notes_linking(memory: Memory, *, limit: int = 50) -> list[Note]:
    """Notes whose `[[links]]` reach `memory` (a note's links resolve as a memory's do:
    its project's memory of the name, else the global one). Notes keep no link rows, so
    their bodies are read: those holding `[[name`, then each one's own resolution."""
    rows = Note.objects.filter(body__contains=f"[[{memory.name}").select_related("project")
    reached: dict[int | None, bool] = {}  # by the note's project: where the name leads
    out = []
    for note in rows.order_by("title")[:limit]:
        if memory.name not in links.names(note.body):
            continue
        if note.project_id not in reached:
            found = memory_ids_by_name([memory.name], project_id=note.project_id)
            reached[note.project_id] = found.get(memory.name) == memory.pk
        if reached[note.project_id]:
            out.append(note)
    return out


def favorites_list() -> tuple[list[Memory], list[Note]]:
    starred = Memory.objects.filter(live(store_now()), favorite=True)
    memories = list(starred.select_related("project"))
    notes = list(Note.objects.filter(favorite=True).select_related("project"))
    return memories, notes


def project_list() -> QuerySet[Project]:
    return Project.objects.annotate(
        active_memories=Count(
            "memories", filter=Q(memories__invalid_at__isnull=True), distinct=True
        ),
        inactive_memories=Count(
            "memories", filter=Q(memories__invalid_at__isnull=False), distinct=True
        ),
        note_count=Count("notes", distinct=True),
    ).order_by("slug")


def project_slugs() -> list[str]:
    return list(Project.objects.order_by("slug").values_list("slug", flat=True))


# --- listings for agents ----------------------------------------------------------


@dataclass(frozen=True)
class MemoryPage:
    memories: list[Memory]
    next_cursor: str | None


ARCHIVED = ("exclude", "include", "only")


CURSOR_PATTERN = r"^[0-9]{1,16}-[0-9A-Z]{26}$"  # published in the API schema
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _cursor_decode(cursor: str) -> tuple[datetime, str]:
    """A keyset position, `<updated, microseconds since 1970>-<id>`: any value of the
    published pattern is a position (the page after it), so none is refused."""
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise QueryError("cursor is not one this API gave out; start again without it")
    micros, _, pk = cursor.partition("-")
    return _EPOCH + timedelta(microseconds=int(micros)), pk


def tokens(text: str) -> int:
    """`text`'s size in tokens, counted as the engine counts what an agent receives."""
    return wiring.engine().planes.tokens.count(text)


def _cursor(updated: datetime, pk: str) -> str:
    """The keyset position `_cursor_decode` reads: the page after (updated, pk)."""
    return f"{(updated - _EPOCH) // timedelta(microseconds=1)}-{pk}"


def cursor_after(memory: Memory) -> str:
    """The cursor of the page that follows `memory` (newest first)."""
    return _cursor(memory.updated, memory.pk)


def cursor_before(memory: Memory) -> str:
    """A cursor whose page starts at `memory`, for the first page: past every id
    updated at the same instant ("Z" sorts after every id's characters)."""
    return _cursor(memory.updated, "Z" * 26)


def memory_list(
    *,
    projects: Sequence[str],
    include_global: bool,
    cursor: str | None = None,
    limit: int = 50,
    kind: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    any_tags: Sequence[str] | None = None,
    session_id: str | None = None,
    agent_id: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
    archived: str = "exclude",
) -> MemoryPage:
    """Memories in scope, newest first (updated, then id), a keyset page at a time.

    Tags match in Python over the page's candidates (JSON lists are not
    portably indexable), so a tag filter reads ahead until the page is full.
    """
    if archived not in ARCHIVED:
        raise QueryError(f"archived must be one of {', '.join(ARCHIVED)}, not {archived!r}")
    scope = Q(project__slug__in=list(projects))
    if include_global:
        scope |= Q(project__isnull=True)
    rows = Memory.objects.filter(scope, live(store_now())).select_related("project")
    if archived == "exclude":
        rows = rows.filter(invalid_at__isnull=True)
    elif archived == "only":
        rows = rows.filter(invalid_at__isnull=False)
    simple = {
        "kind__in": list(kind) if kind else None,
        "session_id": session_id,
        "agent_id": agent_id,
        "created__gt": created_after,
        "created__lt": created_before,
        "updated__gt": updated_after,
        "updated__lt": updated_before,
    }
    rows = rows.filter(**{k: v for k, v in simple.items() if v is not None})
    if cursor:
        updated, pk = _cursor_decode(cursor)
        rows = rows.filter(Q(updated__lt=updated) | Q(updated=updated, pk__lt=pk))
    rows = rows.order_by("-updated", "-id")
    wanted_all, wanted_any = set(tags or ()), set(any_tags or ())
    page: list[Memory] = []
    last: Memory | None = None
    for memory in rows.iterator(chunk_size=max(limit * 2, 100)):
        last = memory
        have = set(memory.tags or ())
        if wanted_all <= have and (not wanted_any or wanted_any & have):
            page.append(memory)
            if len(page) == limit:
                break
    more = (
        len(page) == limit
        and last is not None
        and rows.filter(
            Q(updated__lt=last.updated) | Q(updated=last.updated, pk__lt=last.pk)
        ).exists()
    )
    return MemoryPage(page, cursor_after(last) if more and last is not None else None)


def project_get(*, slug: str) -> Project:
    """Raises Project.DoesNotExist."""
    return Project.objects.get(slug=slug)


def tokens_mixing(*, project: Project) -> int:
    """Live tokens bound to this project and to others: refused once it is sealed
    (console/access.py), until they are reissued."""
    bound = AgentToken.objects.filter(projects=project, revoked__isnull=True).values("pk")
    mixed = AgentToken.objects.filter(pk__in=bound).annotate(bound_to=Count("projects"))
    return mixed.filter(bound_to__gt=1).count()


def projects_named(*, slugs: Sequence[str]) -> list[Project]:
    return list(Project.objects.filter(slug__in=list(slugs)).order_by("slug"))


def note_list(*, projects: Sequence[str], include_inbox: bool, limit: int) -> list[Note]:
    """Newest notes first in these projects (+ the inbox of global notes)."""
    scope = Q(project__slug__in=list(projects))
    if include_inbox:
        scope |= Q(project__isnull=True)
    rows = Note.objects.filter(scope).select_related("project").order_by("-updated", "-id")
    return list(rows[:limit])
