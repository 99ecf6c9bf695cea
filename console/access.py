"""What an agent token may see and do: the one set of guards the API and MCP share.

Every agent-facing read and write goes through a function here, which checks
the token's scope, calls one selector or service, and records what the agent
was shown (`services.retrieval_record`: it feeds the usage boost and the
"when did agents see it" history; a read-only token's, history alone: `_counts`).
The rules:

- a token's projects bound every call; naming any other project (existing or
  not) is `AccessDenied` (403), so a 403 never tells whether a slug exists;
- an item (memory or note) outside the token's scope is `NotVisible` (404),
  exactly as if it did not exist: ids are never confirmed across projects;
- global items (project null) are readable by every token unless the token is
  sealed; a sealed project's token names that project alone and sees no
  global items on any path (recall, search, briefing, prompt recall, reads);
- writes (create, edit, supersede, archive, restore, delete, star) need a
  write token and an item in one of the token's projects; global items are
  curated in the console, never by agents (`AccessDenied`), so one project's
  agent cannot change what every other project recalls;
- creating a project needs a token with the admin scope, which is then
  granted the new project. Slugs are one namespace, so a create of a taken
  slug must fail and tells the token it is taken (the one exception to the
  403 rule above); the refusal is the same whoever holds it, a sealed project
  or the token's own, and names no holder.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console import history, raw, selectors, services, withheld
from console.models import AGENT_SOURCE, NAME_RE, AgentToken, Edge, Memory, Note, Project, new_id
from console.store import now as store_now
from recall import decay
from recall.errors import QueryError
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult
from recall.types import ISOLATION_SEALED, NOTE

log = logging.getLogger(__name__)


class AccessDenied(Exception):
    """The token may not name this project or make this change (403)."""


class NotVisible(Exception):
    """The item does not exist within the token's scope (404)."""


@dataclass(frozen=True, slots=True)
class Access:
    """A verified token's scope, read once per request."""

    token_id: int
    agent: str
    projects: tuple[str, ...]
    may_write: bool
    sealed: bool
    may_admin: bool = False

    def sees(self, project: str | None) -> bool:
        return (not self.sealed) if project is None else project in self.projects


def access_for(token: AgentToken) -> Access:
    rows = sorted(token.projects.values_list("slug", "isolation"))
    sealed = any(isolation == ISOLATION_SEALED for _, isolation in rows)
    if sealed and len(rows) > 1:
        # A project sealed after the token was issued: refuse rather than leak.
        raise AccessDenied("this token mixes a sealed project with others; issue a new token")
    return Access(
        token_id=token.pk,
        agent=token.agent,
        projects=tuple(slug for slug, _ in rows),
        may_write=token.may_write,
        sealed=sealed,
        may_admin=token.may_admin,
    )


# --- project arguments --------------------------------------------------------


def project_of(access: Access, project: str | None) -> str:
    """The one project a call is bound to: named, or the token's only project."""
    if project is None:
        if len(access.projects) == 1:
            return access.projects[0]
        covered = ", ".join(access.projects)
        raise QueryError(f"name a project: this token covers {covered}", field="project")
    if project not in access.projects:
        raise AccessDenied(f"this token may not use project {project!r}")
    return project


def projects_of(access: Access, projects: Sequence[str] | None) -> tuple[str, ...]:
    """Search scope: the named projects (each allowed), or all the token's projects."""
    if not projects:
        return access.projects
    for project in projects:
        project_of(access, project)
    return tuple(dict.fromkeys(projects))


def _writer(access: Access) -> None:
    if not access.may_write:
        raise AccessDenied("this token is read-only; writes need a token created with --write")


# --- retrieval ----------------------------------------------------------------


def _counts(access: Access) -> bool:
    """Whether what this token is shown feeds the usage boost (and a read, decay's
    access stamps). A read-only token's recalls, blocks and reads are history alone:
    they would rank memories for every writing agent, and ranking is a write."""
    return access.may_write


def _seen(
    access: Access, kind: str, ids: Sequence[str], *, query: str, project: str | None,
    pack_id: str = "", budget: int | None = None,
) -> None:  # fmt: skip
    services.retrieval_record(
        kind=kind, ids=ids, query=query, project=project, agent=access.agent, pack_id=pack_id,
        budget=budget, counts=_counts(access),
    )  # fmt: skip


def recall(
    access: Access, *, project: str | None, record: bool = True, **options: Any
) -> ContextPack:
    """Recall in one of the token's projects (+ global unless the project is sealed).

    A recorded recall's reply carries a `pack_id` (its RetrievalEvent's), for feedback.
    """
    bound = project_of(access, project)
    altitude = options.get("altitude")
    if altitude not in (None, "entity"):  # a first digest is built by the worker, not here
        wanted = selectors.digest_projects(bound, access.projects)
        for project_ in wanted if altitude == "tenant" else [bound]:
            services.digest_request(project=project_)
    pack_id = new_id() if record else ""
    if pack_id:
        options["knobs"] = {**(options.get("knobs") or {}), "pack_id": pack_id}
    pack = selectors.memory_recall(project=bound, visible=access.projects, **options)
    if record:
        shown = (*pack.items, *(pack.associated or ()))  # each carries worth to rate
        ids = [h.id for h in shown if h.covers is None]  # rows, not a digest
        query = options.get("query", "")
        _seen(access, "recalled", ids, query=query, project=bound, pack_id=pack_id,
              budget=pack.budget)  # fmt: skip
    return pack


def memory_feedback(
    access: Access, *, pack_id: str, items: Sequence[Mapping[str, Any]]
) -> list[services.Verdict]:
    """Memory Worth verdicts on a pack this token's agent recalled in one of its projects.

    A verdict moves the memory's worth, which ranks it for every agent: a write,
    so a read-only token may not send one."""
    _writer(access)
    try:
        return services.feedback_record(
            pack_id=pack_id, agent=access.agent, sees=access.sees, items=items
        )
    except services.PackForbidden as exc:
        raise AccessDenied(str(exc)) from None


def search(
    access: Access,
    *,
    query: str,
    projects: Sequence[str] | None = None,
    limit: int | None = None,
    offset: int = 0,
    cursor: str | None = None,
    semantic: bool = True,
    since: datetime | None = None,
    record: bool = True,
    as_of: datetime | None = None,
    recorded_as_of: datetime | None = None,
    fit: Callable[[SearchResult], SearchResult] | None = None,
) -> SearchResult:
    """Search the token's projects (or some of them), plus global unless sealed; `fit`
    cuts the page (to a budget) before what it shows is recorded."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    scope = projects_of(access, projects)
    result = selectors.memory_search(
        query=query,
        projects=scope,
        limit=limit,
        offset=offset,
        cursor=cursor,
        semantic=semantic,
        since=since,
        include_global=not access.sealed,
        as_of=as_of,
        recorded_as_of=recorded_as_of,
    )
    result = fit(result) if fit is not None else result
    if record:
        where = scope[0] if len(scope) == 1 else None
        _seen(access, "searched", [h.id for h in result.hits], query=query, project=where)
    return result


def search_plane(
    access: Access,
    *,
    plane: str,
    query: str,
    projects: Sequence[str] | None = None,
    limit: int | None = None,
    offset: int = 0,
    cursor: str | None = None,
    record: bool = True,
    fit: Callable[[SearchResult], SearchResult] | None = None,
) -> SearchResult:
    """One plane alone ("text" or "vector") over the token's projects, plus global unless
    sealed; `fit` as `search`'s."""
    scope = projects_of(access, projects)
    result = raw.memory_search_plane(
        plane=plane, query=query, projects=scope, limit=limit, offset=offset, cursor=cursor,
        include_global=not access.sealed,
    )  # fmt: skip
    result = fit(result) if fit is not None else result
    if record:
        where = scope[0] if len(scope) == 1 else None
        _seen(access, "searched", [h.id for h in result.hits], query=query, project=where)
    return result


def memory_graph(
    access: Access,
    *,
    memory_id: str | None = None,
    name: str | None = None,
    project: str | None = None,
    **walk: Any,
) -> raw.Walked:
    """A walk from a memory the token sees, over the token's projects (+ global unless
    sealed): nothing outside them is reached, walked through or named."""
    start = memory_find(access, memory_id=memory_id, name=name, project=project)
    return raw.memory_graph(
        start=start.pk, projects=access.projects, include_global=not access.sealed, **walk
    )


def briefing(
    access: Access,
    *,
    project: str | None,
    agent_type: str = "",
    prompt: str = "",
    budget: int | None = None,
) -> Briefing:
    bound = project_of(access, project)
    result = selectors.briefing_render(
        project=bound, agent_type=agent_type, prompt=prompt, budget=budget
    )
    # Its budget kept, as a recall's is: the memory page's Inspect link runs it again.
    _seen(access, "injected", result.ids, query=prompt, project=bound, budget=budget)
    return result


def prompt_recall(
    access: Access, *, project: str | None, prompt: str, budget: int | None = None
) -> PromptResult:
    bound = project_of(access, project)
    result = selectors.prompt_recall(project=bound, prompt=prompt, budget=budget)
    if result.ids:
        # "prompt" (not "injected") so per-prompt matches feed the usage boost
        # while briefing lines, shown every session, do not.
        _seen(access, "prompt", result.ids, query=prompt, project=bound)
    return result


# --- memories -----------------------------------------------------------------


def _memory(access: Access, memory_id: str) -> Memory:
    try:
        memory = selectors.memory_get(memory_id=memory_id)
    except Memory.DoesNotExist:
        raise NotVisible("no such memory") from None
    if not access.sees(memory.project.slug if memory.project else None):
        raise NotVisible("no such memory")
    if memory.expires_at is not None and memory.expires_at <= store_now():
        raise NotVisible("no such memory (it has expired)")
    return memory


def _memory_to_change(access: Access, memory_id: str) -> Memory:
    """The memory a change names, by id or, as a read resolves it, by name."""
    _writer(access)
    memory = memory_find(access, memory_id=memory_id)
    if memory.project is None:
        raise AccessDenied("global memories are curated in the console, not by agents")
    return memory


def memory_find(
    access: Access, *, memory_id: str | None = None, name: str | None = None,
    project: str | None = None,
) -> Memory:  # fmt: skip
    """A memory by id, or by name: the project's active memory of that name, else the
    global one (`recall.links.prefer`; a sealed token sees no global memory)."""
    if memory_id:
        try:
            return _memory(access, memory_id.upper())
        except NotVisible:
            if not name and not NAME_RE.match(memory_id):
                raise
            name = name or memory_id
    if not name:
        raise QueryError("give a memory's id or its name")
    if project is None and len(access.projects) > 1:
        return _named_in_one(access, name)
    bound = project_of(access, project)
    found = selectors.memory_named(name=name, project=bound)
    if found is None or not access.sees(found.project.slug if found.project else None):
        raise NotVisible(f"no active memory named {name!r} in {bound} or global")
    return found


def _named_in_one(access: Access, name: str) -> Memory:
    """The memory `name` means for a token of several projects when no project is
    named: the one project holding it, else the global one. Changes (archive, edit,
    supersede ...) take no project, so asking for one left such a token no way to
    change a memory by name."""
    found = {
        m.pk: m
        for slug in access.projects
        if (m := selectors.memory_named(name=name, project=slug)) is not None
    }
    own = [m for m in found.values() if m.project is not None]
    if len(own) > 1:  # the ids: a change by name takes no project to choose with
        holders = ", ".join(sorted(f"{m.pk} in {m.project.slug}" for m in own if m.project))
        raise QueryError(
            f"{name!r} names a memory in each of your projects: {holders}; give the id of "
            "the one you mean",
            field="name",
        )
    chosen = own or [m for m in found.values() if access.sees(None)]
    if not chosen:
        covered = ", ".join(access.projects)
        raise NotVisible(f"no active memory named {name!r} in {covered} or global")
    return chosen[0]


def memory_read(
    access: Access, *, memory_id: str | None = None, name: str | None = None,
    project: str | None = None,
) -> Memory:  # fmt: skip
    """One memory in scope, by id or name, recorded as read by this agent."""
    memory = memory_find(access, memory_id=memory_id, name=name, project=project)
    services.memory_read_record(memory=memory, agent=access.agent, counts=_counts(access))
    return memory


def memory_read_as_of(
    access: Access, *, memory_id: str | None = None, name: str | None = None,
    project: str | None = None, as_of: datetime | None, recorded_as_of: datetime | None,
) -> Memory:  # fmt: skip
    """A memory as it was (`console.history.memory_as_of`), by id or by the name it
    had then (the project's first, then the global one), guarded by the project it
    was in then: a token never sees another project's history."""

    def seen(found: Memory | None) -> Memory | None:
        visible = found is not None and access.sees(found.project.slug if found.project else None)
        return found if visible else None

    if memory_id:
        found = seen(history.memory_as_of(
            memory_id=memory_id.upper(), as_of=as_of, recorded_as_of=recorded_as_of
        ))  # fmt: skip
        if found is not None:
            return found
        if name or not NAME_RE.match(memory_id):
            raise NotVisible("no such memory at that time")
        name = memory_id
    if not name:
        raise QueryError("give a memory's id or its name")
    bound = project_of(access, project)
    found = seen(history.memory_named_as_of(
        name=name, project=bound, as_of=as_of, recorded_as_of=recorded_as_of
    ))  # fmt: skip
    if found is None:
        raise NotVisible(f"no memory named {name!r} in {bound} or global at that time")
    return found


def memory_list(
    access: Access, *, project: str | None = None, cursor: str | None = None, **filters: Any
) -> selectors.MemoryPage:
    """A page of memories in one of the token's projects, or in all of them (+ global)."""
    scope = (project_of(access, project),) if project else access.projects
    return selectors.memory_list(
        projects=scope, include_global=not access.sealed, cursor=cursor, **filters
    )


@dataclass(frozen=True, slots=True)
class Written:
    """A write's outcome: the memory, whether it was created, and its dedup hint."""

    memory: Memory
    created: bool
    dedup_hint: Hit | None


def _project(access: Access, project: str | None) -> Project:
    return selectors.project_get(slug=project_of(access, project))


PASSED = (
    "this instant has passed: the memory would leave every read at once "
    "(archive it instead, or give a time to come)"
)


def _ahead(fields: Mapping[str, Any], field: str = "expires_at") -> None:
    """StateConflict (409, naming `field`) for an expiry already past: the memory would
    be gone the moment it is written, and the 201 would say nothing of it. A
    well-formed value the clock forbids, which no schema can express (an import
    may still carry a lapsed expiry: console/importing)."""
    at = fields.get("expires_at")
    if isinstance(at, datetime) and decay.passed(at, store_now()):
        raise services.StateConflict({field: PASSED})


def memory_write(
    access: Access, *, project: str | None, fields: Mapping[str, Any], force: bool = False
) -> Written:
    """Create a memory in one of the token's projects (unless its exact text is there)."""
    _writer(access)
    _ahead(fields)
    withheld.unmarked(fields)
    target = _project(access, project)
    outcome = services.memory_write(
        project=target, force=force, embedded=_embedded(target, fields),
        **{"agent_id": access.agent, **fields},
    )  # fmt: skip
    hint = selectors.memory_like(outcome.memory) if outcome.created else None
    return Written(outcome.memory, outcome.created, hint)


def _embedded(target: Project, fields: Mapping[str, Any]) -> selectors.Embedded | None:
    """The vector of a memory about to be written, embedded outside its transaction."""
    return selectors.write_embedding(
        project=target.slug, name=str(fields.get("name", "")),
        description=str(fields.get("description", "")), body=str(fields.get("body") or ""),
    )  # fmt: skip


BATCH_HINTS = 20  # the longest batch whose items get dedup hints (one embedding each)


def memory_write_batch(
    access: Access,
    *,
    project: str | None,
    items: Sequence[Mapping[str, Any]],
    force: bool = False,
) -> list[Written]:
    """Up to 500 memories in one transaction: all written, or none. A batch of up to
    BATCH_HINTS gets a dedup hint per item created, as a single write does: each item is
    embedded before the transaction (the index worker reuses the vector), about 10 ms a
    short text on a core, so a longer batch (an import) is left at commit speed."""
    _writer(access)
    for i, item in enumerate(items):
        _ahead(item, f"memories.{i}.expires_at")
        withheld.unmarked(item, f"memories.{i}.")
    target = _project(access, project)
    hinted = len(items) <= BATCH_HINTS
    embedded = [_embedded(target, item) for item in items] if hinted else []
    rows = [{"agent_id": access.agent, **item} for item in items]
    outcomes = services.memory_write_batch(
        project=target, items=rows, force=force, embedded=embedded
    )
    like = selectors.memory_like
    return [
        Written(o.memory, o.created, like(o.memory, later=_made_after(outcomes, i)))
        if hinted and o.created
        else Written(o.memory, o.created, None)
        for i, o in enumerate(outcomes)
    ]


def _made_after(outcomes: Sequence[services.Outcome], i: int) -> list[str]:
    """The memories the batch created after its item `i` (`_hint` leaves them out)."""
    return [o.memory.pk for o in outcomes[i + 1 :] if o.created]


TEXT_FIELDS = frozenset({"name", "description", "body"})  # what a dedup hint compares


def memory_update(access: Access, *, memory_id: str, fields: Mapping[str, Any]) -> Written:
    """The edited memory, and its dedup hint when the edit changed its text: an edit
    can make it say what another memory says, as a write can (it came back silent)."""
    memory = _memory_to_change(access, memory_id)
    _ahead(fields)
    fields = withheld.restored(memory, fields)
    if not fields:
        return Written(memory, False, None)
    edited = services.memory_update(memory=memory, **fields)
    reworded = bool(TEXT_FIELDS & fields.keys())
    return Written(edited, False, selectors.memory_like(edited) if reworded else None)


def memory_supersede(access: Access, *, memory_id: str, fields: Mapping[str, Any]) -> Written:
    """The replacement (same project) and its dedup hint; the old one is stamped."""
    _ahead(fields)
    try:
        old = _memory_to_change(access, memory_id)
    except NotVisible:
        archived = _archived_named(access, memory_id)
        if archived is None:
            raise
        raise NotVisible(
            f"no active memory named {memory_id!r}; {archived.pk} of that name is archived: "
            "restore it first, then supersede it"
        ) from None
    # The replacement's text is the superseding agent's (as a person's supersede in the
    # console is theirs): it carried the old version's author and source, so other
    # agents read an agent's rewrite as what a user stated.
    by = {"agent_id": access.agent, "source": fields.get("source") or AGENT_SOURCE}
    new = services.memory_supersede(memory=old, **withheld.restored(old, fields) | by)
    return Written(new, True, selectors.memory_like(new))


def memory_archive(access: Access, *, memory_id: str) -> Memory:
    """Archive (a memory archived already, named or by id, answers as it is)."""
    return services.memory_archive(memory=_archived_too(access, memory_id))


def _archived_too(access: Access, memory_id: str) -> Memory:
    """The memory an archive, restore or delete names: by id, by its active name, else
    (a name no active memory holds) the most recently archived one of that name in
    the one project of the token's that has one."""
    try:
        return _memory_to_change(access, memory_id)
    except NotVisible:
        found = _archived_named(access, memory_id)
        if found is None:
            raise
        return found


def _archived_named(access: Access, name: str) -> Memory | None:
    """The most recently archived memory named `name` in the one project of the
    token's that has one (None: not a name, or no such project, or several)."""
    if not NAME_RE.match(name):
        return None
    found = [
        m
        for slug in access.projects
        if (m := selectors.memory_archived_named(name=name, project=slug)) is not None
    ]
    return found[0] if len(found) == 1 else None


def memory_restore(access: Access, *, memory_id: str) -> Memory:
    """Restore by id, or by the name of an archived memory. A name an active memory
    holds answered with that one, unchanged and silent, while the archived one of the
    name stayed archived: a 409 says which is which."""
    memory = _archived_too(access, memory_id)
    if memory.pk != memory_id.upper() and memory.invalid_at is None:
        archived = _archived_named(access, memory_id)
        if archived is not None:
            raise services.StateConflict(
                f"{memory_id!r} names an active memory, {memory.pk}; the archived one of that "
                f"name is {archived.pk}: archive or rename the active one, then restore "
                f"{archived.pk} by its id"
            )
    return services.memory_restore(memory=memory)


def memory_delete(access: Access, *, memory_id: str) -> str:
    """Delete for good (its index rows follow through the outbox); the id it had.

    A name deletes the active memory of that name only: an archived one is deleted
    by its id. A retried delete by name (its reply lost) would otherwise delete the
    next memory that had the name."""
    try:
        memory = _memory_to_change(access, memory_id)
    except NotVisible:
        archived = _archived_too(access, memory_id)  # raises when there is none
        raise NotVisible(
            f"no active memory named {memory_id!r}; an archived one is {archived.pk}: "
            "delete it by its id (a delete by name takes the active memory only)"
        ) from None
    services.memory_delete(memory=memory)
    return str(memory.pk)


def memory_associate(
    access: Access, *, memory_id: str, target: str, rel: str, weight: float
) -> tuple[Edge, bool]:
    """An association from a memory in one of the token's projects to one it sees
    (same project or global: `services.link_refusal`); (edge, created)."""
    src = _memory_to_change(access, memory_id)
    try:
        dst = memory_find(
            access, memory_id=target, project=src.project.slug if src.project else None
        )
    except NotVisible as exc:  # 409, not 404: the memory in the path is there
        missing = f"No memory {target!r} this token can see to associate with."
        raise services.StateConflict({"target": missing}) from exc
    for field, end in (("id", src), ("target", dst)):
        if end.superseded_by_id:  # a walk never reaches it: the edge would be dead
            chain = selectors.memory_successors(end)
            now = f"{chain[-1].pk} ({chain[-1].name!r})" if chain else "its replacement"
            said = f"{end.name!r} was superseded; associate the current version, {now}."
            raise services.StateConflict({field: said})
    return services.association_write(src=src, dst=dst, rel=rel, weight=weight)


def memory_dissociate(
    access: Access, *, memory_id: str, target: str, rel: str | None = None
) -> tuple[str, str, int]:
    """Remove associations from a memory the token may change; (src, dst, how many).

    A target the token cannot see removes nothing (0), as one with no association."""
    src = _memory_to_change(access, memory_id)
    try:
        dst = memory_find(
            access, memory_id=target, project=src.project.slug if src.project else None
        )
    except NotVisible:
        return src.pk, target, 0
    return src.pk, dst.pk, services.association_delete(src=src, dst=dst, rel=rel)


def memory_favorite(access: Access, *, memory_id: str, value: bool | None) -> Memory:
    memory = _memory_to_change(access, memory_id)
    services.favorite_toggle(item=memory, value=value)
    return memory


# --- projects -------------------------------------------------------------------


def project_list(access: Access) -> list[Project]:
    return selectors.projects_named(slugs=access.projects)


def project_create(access: Access, **fields: Any) -> Project:
    """A new project (admin scope); the token is granted it."""
    if not access.may_admin:
        raise AccessDenied("creating projects needs a token with the admin scope (--admin)")
    if access.sealed or fields.get("isolation") == ISOLATION_SEALED:
        raise AccessDenied("a sealed project has a token of its own: create it in the console")
    return services.project_create_for_token(token_id=access.token_id, **fields)


# --- notes --------------------------------------------------------------------


def _note(access: Access, note_id: str) -> Note:
    """A note by id, or by its name (slug) as hits, items and dedup hints give it: the
    token's projects' note of that name, else the inbox's (a memory's name resolves
    so too); a name two of the token's projects hold asks for the id."""
    try:
        note = selectors.note_get(note_id=note_id.upper())
    except Note.DoesNotExist:
        if not NAME_RE.match(note_id):
            raise NotVisible("no such note") from None
        return _note_named(access, note_id)
    if not access.sees(note.project.slug if note.project else None):
        raise NotVisible("no such note")
    return note


def _note_named(access: Access, name: str) -> Note:
    found = [n for n in selectors.notes_named(name) if access.sees(_slug_of(n))]
    own = [n for n in found if n.project is not None]
    if len(own) > 1:
        where = ", ".join(sorted(_slug_of(n) or "" for n in own))
        raise QueryError(f"notes named {name!r} are in {where}: give the note's id")
    if own or found:
        return (own or found)[0]
    raise NotVisible(f"no note named {name!r} in the token's projects or the inbox")


def _slug_of(note: Note) -> str | None:
    return note.project.slug if note.project else None


def _note_to_change(access: Access, note_id: str) -> Note:
    _writer(access)
    note = _note(access, note_id)
    if note.project is None:
        raise AccessDenied("inbox notes are curated in the console, not by agents")
    return note


def note_read(access: Access, *, note_id: str) -> Note:
    return _note(access, note_id)


def note_list(access: Access, *, project: str | None = None, limit: int = 20) -> list[Note]:
    """Newest notes in one project, or in all the token's projects (+ inbox unless sealed)."""
    scope = (project_of(access, project),) if project is not None else access.projects
    include_inbox = project is None and not access.sealed
    return selectors.note_list(projects=scope, include_inbox=include_inbox, limit=limit)


@dataclass(frozen=True, slots=True)
class NoteWritten:
    """A note's write or edit, whether a write created it, and its dedup hint (the
    most similar other note)."""

    note: Note
    dedup_hint: Hit | None
    created: bool = True


NOTE_TEXT = frozenset({"title", "slug", "description", "body"})  # what a note's hint compares


def note_write(access: Access, *, project: str | None, fields: Mapping[str, Any]) -> NoteWritten:
    """A new note and its dedup hint, as a memory's write gets one; a note of the
    project with this very title and body is the answer instead (not written, not
    embedded, no hint), as a memory's exact text is."""
    _writer(access)
    withheld.unmarked(fields)
    target = _project(access, project)
    title, body = str(fields.get("title") or ""), str(fields.get("body") or "")
    same = selectors.note_same(project=target, title=title, body=body)
    if same is not None:
        return NoteWritten(same, None, created=False)
    embedded = selectors.write_embedding(
        project=target.slug, name=str(fields.get("slug") or ""), item=NOTE, title=title,
        description=str(fields.get("description") or ""), body=body,
    )  # fmt: skip
    outcome = services.note_write(project=target, embedded=embedded, **fields)
    hint = selectors.note_like(outcome.note) if outcome.created else None
    return NoteWritten(outcome.note, hint, created=outcome.created)


def note_update(access: Access, *, note_id: str, fields: Mapping[str, Any]) -> NoteWritten:
    """The edited note, and its dedup hint when the edit changed its text."""
    note = _note_to_change(access, note_id)
    fields = withheld.restored(note, fields)
    if not fields:
        return NoteWritten(note, None)
    edited = services.note_edit(note=note, **fields)
    return NoteWritten(edited, selectors.note_like(edited) if NOTE_TEXT & fields.keys() else None)


def note_favorite(access: Access, *, note_id: str, value: bool | None) -> Note:
    note = _note_to_change(access, note_id)
    services.favorite_toggle(item=note, value=value)
    return note
