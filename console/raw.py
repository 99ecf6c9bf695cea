"""Reads for the agents' raw tools: one plane alone, and a walk over the memory graph.

fabriq exposes its planes as tools beside Recall for agents that want manual
control; these are ours (console/operations.py, REST and MCP), guarded by
`console.access` like every other read. Selectors in all but module: they
never write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.core.exceptions import ObjectDoesNotExist

from console import wiring
from recall.channels import FTS, SEMANTIC
from recall.config import RecallConfig, SearchConfig
from recall.graph import Reached, traverse
from recall.requests import SearchRequest
from recall.results import SearchResult
from recall.types import MEMORY, Filter, Record

# The raw planes as agent tools: "text" is the full-text channel alone, "vector" the
# semantic one; each hit's score is that plane's own (BM25, cosine).
PLANES = {"text": FTS, "vector": SEMANTIC}


def memory_search_plane(
    *,
    plane: str,
    query: str,
    projects: Sequence[str],
    limit: int | None = None,
    offset: int = 0,
    cursor: str | None = None,
    include_global: bool = True,
) -> SearchResult:
    """One plane's own ranking (no fusion, no pins, no floor, no session prior), one
    page from `offset`: its scores descend."""
    engine = wiring.engine()
    channel = PLANES[plane]
    config = replace(
        engine.config(SearchConfig)[0],
        channel_weights={channel: 1.0},
        semantic_floor=0.0,
        favorites_first=False,
        session_prior=0.0,
    )
    request = SearchRequest(
        query=query, projects=tuple(projects), limit=limit, offset=offset, cursor=cursor,
        semantic=channel == SEMANTIC, include_global=include_global,
    )  # fmt: skip
    result = engine.search(request, config=config)
    if channel == SEMANTIC and engine.planes.embedder is None:
        result = replace(result, warnings=(*result.warnings, "no embedding model is configured"))
    hits = tuple(
        replace(h, score=next((p.raw for p in h.sources if p.channel == channel), h.score))
        for h in result.hits
    )
    return replace(result, hits=hits)


@dataclass(frozen=True, slots=True)
class Walked:
    """A graph walk from `start`: what it reached (best first) and their records."""

    start: Record
    reached: tuple[Reached, ...]
    records: dict[str, Record]


def memory_graph(
    *,
    start: str,
    projects: Sequence[str],
    include_global: bool,
    hops: int = 1,
    reverse: bool = False,
    min_weight: float = 0.0,
    cap: int = 10,
) -> Walked:
    """The memories within `hops` of `start` in scope, active only (`recall.graph`)."""
    engine = wiring.engine()
    store = engine.planes.store
    where = Filter(projects=tuple(projects), include_global=include_global, items=(MEMORY,))
    found = store.hydrate([start])
    if start not in found:  # expired (or deleted) since it was looked up: as if never found
        raise ObjectDoesNotExist(f"no memory {start}: it expired or was deleted just now")
    record = found[start]
    decay = engine.config(RecallConfig)[0].graph_decay
    reached = traverse(store, [(start, 1.0)], where=where, hops=hops, reverse=reverse,
                       min_weight=min_weight, cap=cap, decay=decay)  # fmt: skip
    return Walked(record, tuple(reached), store.hydrate([r.id for r in reached]))
