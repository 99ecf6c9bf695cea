"""Reads: the one place the console, the API and MCP reach the engine and the ORM.

Named `<entity>_<action>`, keyword-only. Retrieval selectors record
RetrievalEvents (what agents and people saw), which feed the usage boost and
the "when did agents see it" history.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import Count, Q, QuerySet

from console import wiring
from console.models import Edge, Memory, Note, Project, RetrievalEvent, Setting
from console.prepared import Prepared
from recall.config import (
    BriefingConfig,
    DedupConfig,
    PromptConfig,
    RecallConfig,
    SearchConfig,
    decode_over,
    from_mapping,
)
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest

C = TypeVar("C", RecallConfig, SearchConfig, BriefingConfig, PromptConfig, DedupConfig)

# Runtime override rows (Setting.key) and the config each one decodes over.
OVERRIDE_KEYS: dict[str, type[Any]] = {
    "search_config": SearchConfig,
    "briefing_config": BriefingConfig,
    "recall_config": RecallConfig,
}
_SETTINGS_SECTION = {
    "search_config": "SEARCH",
    "briefing_config": "BRIEFING",
    "recall_config": "RECALL",
}


# --- configuration layers -----------------------------------------------------


def config_base(key: str) -> Any:
    """Built-in defaults < settings.RECALL[section] < RECALL_<SECTION>_* environment."""
    cls = OVERRIDE_KEYS[key]
    section = _SETTINGS_SECTION[key]
    config = from_mapping(cls(), settings.RECALL.get(section, {}) or {})
    return from_mapping(config, os.environ, prefix=f"RECALL_{section}_")


def config_override(key: str) -> dict[str, Any]:
    row = Setting.objects.filter(key=key).values_list("value", flat=True).first()
    return dict(row) if isinstance(row, Mapping) else {}


def config_effective(key: str) -> tuple[Any, tuple[str, ...]]:
    """The base with the override row decoded over it, at use time (failure-soft)."""
    rows = _SETTING.rows("value", key)  # on every keystroke: compiled once
    return decode_over(config_base(key), rows[0][0] if rows else None)


_SETTING = Prepared(lambda _, key: Setting.objects.filter(key=key).values_list("value")[:1])


# --- retrieval ----------------------------------------------------------------


def _record(kind: str, ids: Sequence[str], *, query: str, project: str | None, agent: str) -> None:
    RetrievalEvent.objects.create(
        kind=kind if ids else "miss",
        ids=list(ids),
        query=query[:2000],
        project=project or "",
        agent=agent,
    )


def memory_recall(
    *,
    query: str,
    project: str | None,
    budget: int | None = None,
    limit: int | None = None,
    scope: str = "all",
    kind: str | None = None,
    k: int | None = None,
    channel_weights: Mapping[str, float] | None = None,
    debug: bool = False,
    agent: str = "",
    record: bool = True,
) -> Any:
    """Agent Recall -> ContextPack. Raises recall.errors.QueryError on bad input."""
    config, warnings = config_effective("recall_config")
    request = RecallRequest(
        query=query,
        project=project,
        budget=budget if budget is not None else config.budget,
        limit=limit if limit is not None else config.limit,
        scope=scope,
        kind=kind,
        k=k,
        channel_weights=channel_weights,
        debug=debug,
    )
    pack = wiring.engine().recall(request, config=config)
    if record:
        _record("recalled", [h.id for h in pack.items], query=query, project=project, agent=agent)
    return pack


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
    agent: str = "",
    record: bool = False,
) -> Any:
    """Search every project (None) or a list -> SearchResult."""
    config, _ = config_effective("search_config")
    request = SearchRequest(
        query=query,
        projects=tuple(projects) if projects else None,
        limit=limit if limit is not None else config.limit,
        semantic=semantic,
        since=since,
        kinds=tuple(kinds) if kinds else None,
        items=tuple(items) if items else None,
        include_inactive=include_inactive,
        prefix=prefix,
    )
    result = wiring.engine().search(request, config=config)
    if record:
        project = projects[0] if projects and len(projects) == 1 else None
        _record("searched", [h.id for h in result.hits], query=query, project=project, agent=agent)
    return result


def briefing_render(
    *,
    project: str | None,
    agent_type: str = "",
    prompt: str = "",
    budget: int | None = None,
    agent: str = "",
    record: bool = True,
) -> Any:
    """Session-start briefing text and the ids rendered, with the live override row."""
    config, _ = config_effective("briefing_config")
    request = BriefingRequest(project=project, agent_type=agent_type, prompt=prompt, budget=budget)
    briefing = wiring.engine().briefing(request, config=config)
    if record:
        _record("injected", list(briefing.ids), query=prompt, project=project, agent=agent)
    return briefing


def prompt_recall(*, project: str | None, prompt: str, agent: str = "") -> Any:
    result = wiring.engine().prompt_recall(PromptRequest(project=project, prompt=prompt))
    if result.ids:
        # "prompt" (not "injected") so per-prompt matches feed the usage boost
        # while briefing lines, shown every session, do not.
        _record("prompt", list(result.ids), query=prompt, project=project, agent=agent)
    return result


def memory_dedup_hint(
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    exclude_id: str | None = None,
) -> Any:
    """The most similar active in-scope memory (advisory; None on embedder trouble)."""
    return wiring.engine().dedup_hint(
        project=project, name=name, description=description, body=body, exclude_id=exclude_id
    )


# --- items --------------------------------------------------------------------


def memory_get(*, memory_id: str) -> Memory:
    """Raises Memory.DoesNotExist."""
    return Memory.objects.select_related("project", "superseded_by").get(pk=memory_id)


def note_get(*, note_id: str) -> Note:
    return Note.objects.select_related("project").get(pk=note_id)


def memory_read(*, memory_id: str, agent: str = "") -> Memory:
    """An agent reading one memory: recorded (reads weigh most in usage)."""
    memory = memory_get(memory_id=memory_id)
    from console.services import memory_mark_accessed

    memory_mark_accessed(ids=[memory.pk])
    _record(
        "read",
        [memory.pk],
        query="",
        project=memory.project.slug if memory.project else None,
        agent=agent,
    )
    return memory


@dataclass(frozen=True)
class MemoryDetail:
    memory: Memory
    links: list[Memory]
    backlinks: list[Memory]
    chain_back: list[Memory]  # older versions this one replaced, newest first
    chain_forward: list[Memory]  # replacements, oldest first
    history: list[RetrievalEvent]


def memory_detail(*, memory_id: str, history_limit: int = 20) -> MemoryDetail:
    memory = memory_get(memory_id=memory_id)
    links = [e.dst for e in Edge.objects.filter(src=memory).select_related("dst__project")]
    backlinks = [e.src for e in Edge.objects.filter(dst=memory).select_related("src__project")]
    back: list[Memory] = []
    current: Memory | None = Memory.objects.filter(superseded_by=memory).first()
    while current is not None and len(back) < 50:
        back.append(current)
        current = Memory.objects.filter(superseded_by=current).first()
    forward: list[Memory] = []
    nxt = memory.superseded_by
    while nxt is not None and len(forward) < 50:
        forward.append(nxt)
        nxt = nxt.superseded_by
    history = list(RetrievalEvent.objects.filter(ids__icontains=memory.pk)[:history_limit])
    return MemoryDetail(memory, links, backlinks, back, forward, history)


def favorites_list() -> tuple[list[Memory], list[Note]]:
    memories = list(Memory.objects.filter(favorite=True).select_related("project"))
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
