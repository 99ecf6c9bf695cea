"""What an agent token may see and do: the one set of guards the API and MCP share.

Every agent-facing read and write goes through a function here, which checks
the token's scope, calls one selector or service, and records what the agent
was shown (`services.retrieval_record`: it feeds the usage boost and the
"when did agents see it" history). The rules:

- a token's projects bound every call; naming any other project (existing or
  not) is `AccessDenied` (403), so a 403 never tells whether a slug exists;
- an item (memory or note) outside the token's scope is `NotVisible` (404),
  exactly as if it did not exist: ids are never confirmed across projects;
- global items (project null) are readable by every token unless the token is
  sealed; a sealed project's token names that project alone and sees no
  global items on any path (recall, search, briefing, prompt recall, reads);
- writes (create, edit, supersede, archive, restore, star) need a write token
  and an item in one of the token's projects; global items are curated in the
  console, never by agents (`AccessDenied`), so one project's agent cannot
  change what every other project recalls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q

from console import selectors, services
from console.models import AgentToken, Memory, Note, Project
from recall.errors import QueryError
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult
from recall.types import ISOLATION_SEALED


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
    )


# --- project arguments --------------------------------------------------------


def project_of(access: Access, project: str | None) -> str:
    """The one project a call is bound to: named, or the token's only project."""
    if project is None:
        if len(access.projects) == 1:
            return access.projects[0]
        raise QueryError(f"name a project: this token covers {', '.join(access.projects)}")
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


def _seen(
    access: Access, kind: str, ids: Sequence[str], *, query: str, project: str | None
) -> None:
    services.retrieval_record(kind=kind, ids=ids, query=query, project=project, agent=access.agent)


def recall(access: Access, *, project: str | None, **options: Any) -> ContextPack:
    """Recall in one of the token's projects (+ global unless the project is sealed)."""
    bound = project_of(access, project)
    pack = selectors.memory_recall(project=bound, **options)
    _seen(access, "recalled", [h.id for h in pack.items], query=options["query"], project=bound)
    return pack


def search(
    access: Access,
    *,
    query: str,
    projects: Sequence[str] | None = None,
    limit: int | None = None,
    semantic: bool = True,
    since: datetime | None = None,
) -> SearchResult:
    """Search the token's projects (or some of them), plus global unless sealed."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    scope = projects_of(access, projects)
    result = selectors.memory_search(
        query=query,
        projects=scope,
        limit=limit,
        semantic=semantic,
        since=since,
        include_global=not access.sealed,
    )
    where = scope[0] if len(scope) == 1 else None
    _seen(access, "searched", [h.id for h in result.hits], query=query, project=where)
    return result


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
    _seen(access, "injected", result.ids, query=prompt, project=bound)
    return result


def prompt_recall(access: Access, *, project: str | None, prompt: str) -> PromptResult:
    bound = project_of(access, project)
    result = selectors.prompt_recall(project=bound, prompt=prompt)
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
    return memory


def _memory_to_change(access: Access, memory_id: str) -> Memory:
    _writer(access)
    memory = _memory(access, memory_id)
    if memory.project is None:
        raise AccessDenied("global memories are curated in the console, not by agents")
    return memory


def memory_read(access: Access, *, memory_id: str) -> Memory:
    """One memory in scope, recorded as read by this agent."""
    memory = _memory(access, memory_id)
    services.memory_read_record(memory=memory, agent=access.agent)
    return memory


@dataclass(frozen=True, slots=True)
class Written:
    memory: Memory
    dedup_hint: Hit | None


def _hint(memory: Memory) -> Hit | None:
    return selectors.memory_dedup_hint(
        project=memory.project.slug if memory.project else None,
        name=memory.name,
        description=memory.description,
        body=memory.body,
        exclude_id=memory.pk,
    )


def memory_write(access: Access, *, project: str | None, fields: Mapping[str, Any]) -> Written:
    """Create a memory in one of the token's projects; the dedup hint is advisory."""
    _writer(access)
    slug = project_of(access, project)
    memory = services.memory_create(
        project=Project.objects.get(slug=slug), **{"agent_id": access.agent, **fields}
    )
    return Written(memory, _hint(memory))


def memory_update(access: Access, *, memory_id: str, fields: Mapping[str, Any]) -> Memory:
    memory = _memory_to_change(access, memory_id)
    return services.memory_update(memory=memory, **fields) if fields else memory


def memory_supersede(access: Access, *, memory_id: str, fields: Mapping[str, Any]) -> Written:
    """The replacement (same project) and its dedup hint; the old one is stamped."""
    new = services.memory_supersede(memory=_memory_to_change(access, memory_id), **fields)
    return Written(new, _hint(new))


def memory_archive(access: Access, *, memory_id: str) -> Memory:
    return services.memory_archive(memory=_memory_to_change(access, memory_id))


def memory_restore(access: Access, *, memory_id: str) -> Memory:
    return services.memory_restore(memory=_memory_to_change(access, memory_id))


def memory_favorite(access: Access, *, memory_id: str, value: bool | None) -> Memory:
    memory = _memory_to_change(access, memory_id)
    services.favorite_toggle(item=memory, value=value)
    return memory


# --- notes --------------------------------------------------------------------


def _note(access: Access, note_id: str) -> Note:
    try:
        note = selectors.note_get(note_id=note_id)
    except Note.DoesNotExist:
        raise NotVisible("no such note") from None
    if not access.sees(note.project.slug if note.project else None):
        raise NotVisible("no such note")
    return note


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
    if project is not None:
        scope = Q(project__slug=project_of(access, project))
    else:
        scope = Q(project__slug__in=access.projects)
        if not access.sealed:
            scope |= Q(project__isnull=True)
    rows = Note.objects.filter(scope).select_related("project").order_by("-updated", "-id")
    return list(rows[:limit])


def note_write(access: Access, *, project: str | None, fields: Mapping[str, Any]) -> Note:
    _writer(access)
    slug = project_of(access, project)
    return services.note_create(project=Project.objects.get(slug=slug), **fields)


def note_update(access: Access, *, note_id: str, fields: Mapping[str, Any]) -> Note:
    note = _note_to_change(access, note_id)
    return services.note_update(note=note, **fields) if fields else note


def note_favorite(access: Access, *, note_id: str, value: bool | None) -> Note:
    note = _note_to_change(access, note_id)
    services.favorite_toggle(item=note, value=value)
    return note
