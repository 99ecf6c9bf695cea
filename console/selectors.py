"""Reads: the one place the console, the API and MCP reach the engine and the ORM.

Named `<entity>_<action>`, keyword-only. Selectors never write: what agents
and people saw is recorded by `services.retrieval_record`, called by whoever
decides it should be (`console/access.py` for agents). The engine resolves its
own configuration (`console/configuration.py`); the settings page reads the
layers here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet

from console import configuration, indexing, wiring
from console.models import Edge, Memory, Note, Project, RetrievalEvent
from recall import links
from recall.config import BriefingConfig, Problem, decode_over
from recall.requests import BriefingRequest, PromptRequest, RecallRequest, SearchRequest
from recall.results import Briefing, ContextPack, Hit, PromptResult, SearchResult

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
    k: int | None = None,
    channel_weights: Mapping[str, float] | None = None,
    debug: bool = False,
) -> ContextPack:
    """Agent Recall -> ContextPack. Raises recall.errors.QueryError on bad input."""
    request = RecallRequest(
        query=query,
        project=project,
        budget=budget,
        limit=limit,
        scope=scope,
        kind=kind,
        k=k,
        channel_weights=channel_weights,
        debug=debug,
    )
    return wiring.engine().recall(request)


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
) -> SearchResult:
    """Search every project (None) or a list -> SearchResult."""
    request = SearchRequest(
        query=query,
        projects=tuple(projects) if projects else None,
        limit=limit,
        semantic=semantic,
        since=since,
        kinds=tuple(kinds) if kinds else None,
        items=tuple(items) if items else None,
        include_inactive=include_inactive,
        prefix=prefix,
        include_global=include_global,
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


def prompt_recall(*, project: str | None, prompt: str) -> PromptResult:
    return wiring.engine().prompt_recall(PromptRequest(project=project, prompt=prompt))


def memory_dedup_hint(
    *,
    project: str | None,
    name: str,
    description: str,
    body: str = "",
    exclude_id: str | None = None,
) -> Hit | None:
    """The most similar active in-scope memory (advisory; None on embedder trouble)."""
    return wiring.engine().dedup_hint(
        project=project, name=name, description=description, body=body, exclude_id=exclude_id
    )


def index_status() -> indexing.Status:
    """Rows per plane, pending jobs and drift against the database."""
    return indexing.status()


def embedder_model() -> str | None:
    """The configured embedding model's name (None: no semantic plane)."""
    embedder = wiring.embedder()
    return embedder.model if embedder is not None else None


def item_count() -> int:
    """Memories and notes in the database."""
    return Memory.objects.count() + Note.objects.count()


# --- items --------------------------------------------------------------------


def memory_ids_by_name(
    names: Sequence[str], *, project_id: int | None, exclude: str | None = None
) -> dict[str, str]:
    """Each name's active memory id by `recall.links.prefer` (project first, then global)."""
    rows = (
        Memory.objects.filter(name__in=list(names), invalid_at__isnull=True)
        .filter(Q(project_id=project_id) | Q(project__isnull=True))
        .exclude(pk=exclude)
        .values_list("name", "id", "project_id")
    )
    return links.prefer(rows, project_id)


def memory_named(*, name: str, project: str | None) -> Memory | None:
    """The active memory a `[[name]]` means seen from `project` (slug; None = global)."""
    project_id = None
    if project is not None:
        project_id = Project.objects.filter(slug=project).values_list("pk", flat=True).first()
        if project_id is None:
            return None
    found = memory_ids_by_name([name], project_id=project_id).get(name)
    return memory_get(memory_id=found) if found else None


def memory_get(*, memory_id: str) -> Memory:
    """Raises Memory.DoesNotExist."""
    return Memory.objects.select_related("project", "superseded_by").get(pk=memory_id)


def note_get(*, note_id: str) -> Note:
    return Note.objects.select_related("project").get(pk=note_id)


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
    edges = Edge.objects.filter(src=memory).order_by("position", "id")
    links = [e.dst for e in edges.select_related("dst__project")]
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
