"""The shared candidate stage: the FTS leg and the semantic leg.

Each leg returns ranked ids at a depth with scope and validity applied
INSIDE its query (the `Filter`), before the depth limit: filtering after a
fixed depth would let out-of-scope or superseded hits starve live, in-scope
ones. A runtime failure of the semantic leg (EmbedderUnavailable,
IndexUnavailable) skips it with a warning; ConfigError propagates.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from recall.errors import EmbedderUnavailable, IndexUnavailable, QueryError
from recall.fusion import FTS, SEMANTIC
from recall.ports import Embedder, MemoryStore, TextIndex, VectorIndex, Vectors
from recall.requests import SCOPES
from recall.types import ISOLATION_SEALED, MEMORY, NOTE, Candidate, Filter


def recall_filter(
    store: MemoryStore, *, project: str | None, scope: str = "all", kind: str | None = None
) -> Filter:
    """Recall's scope: the bound project plus global (none if sealed); None = global only."""
    if scope not in SCOPES:
        raise QueryError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    items = {"all": None, "memories": (MEMORY,), "notes": (NOTE,)}[scope]
    if kind is not None:
        if scope == "notes":
            raise QueryError("a kind filter selects memories; it contradicts scope 'notes'")
        items = (MEMORY,)
    if project is None:
        return Filter(projects=(), include_global=True, items=items, kinds=_kinds(kind))
    sealed = store.isolation(project) == ISOLATION_SEALED
    return Filter(projects=(project,), include_global=not sealed, items=items, kinds=_kinds(kind))


def _kinds(kind: str | None) -> tuple[str, ...] | None:
    return None if kind is None else (kind,)


def search_filter(
    *,
    projects: tuple[str, ...] | None,
    kinds: tuple[str, ...] | None = None,
    items: tuple[str, ...] | None = None,
    include_inactive: bool = False,
) -> Filter:
    """Search's scope: every project (None) or the chosen ones, plus global."""
    return Filter(
        projects=projects,
        include_global=True,
        active_only=not include_inactive,
        items=items,
        kinds=kinds,
    )


class EmbedCache:
    """A small thread-safe LRU of query embeddings (embedding dominates latency)."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._rows: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, embedder: Embedder, text: str) -> Vectors:
        key = (embedder.model, text)
        with self._lock:
            if key in self._rows:
                self._rows.move_to_end(key)
                return self._rows[key]
        vector = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        with self._lock:
            self._rows[key] = vector
            while len(self._rows) > self._size:
                self._rows.popitem(last=False)
        return vector


@dataclass(slots=True)
class Legs:
    """What the candidate stage found, per channel, and how it went."""

    channels: dict[str, list[Candidate]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    embedded: bool = False
    semantic: str = "off"  # "on", or why it was skipped
    timings: dict[str, float] = field(default_factory=dict)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def gather(
    text: str,
    *,
    where: Filter,
    depth: int,
    text_index: TextIndex,
    vectors: VectorIndex | None,
    embedder: Embedder | None,
    semantic: bool = True,
    snippets: bool = False,
    prefix: bool = False,
    cache: EmbedCache | None = None,
) -> Legs:
    """Run the FTS leg, then (when asked and configured) the semantic leg.

    FTS failures propagate (IndexUnavailable: nothing to degrade to). With
    `semantic=False` the embedder and the vector index are never touched.
    """
    legs = Legs()
    start = time.perf_counter()
    legs.channels[FTS] = text_index.search(
        text, where=where, limit=depth, snippets=snippets, prefix=prefix
    )
    legs.timings["fts"] = _ms(start)
    if not semantic:
        legs.semantic = "off: not asked"
        return legs
    if embedder is None or vectors is None:
        legs.semantic = "off: no embedder or vector index configured"
        return legs
    start = time.perf_counter()
    try:
        vector = (cache or EmbedCache(1)).embed(embedder, text)
    except EmbedderUnavailable as exc:
        legs.warnings.append(f"semantic leg skipped: embedder unavailable ({exc}); FTS only")
        legs.semantic = "skipped: embedder unavailable"
        return legs
    finally:
        legs.timings["embed"] = _ms(start)
    legs.embedded = True
    start = time.perf_counter()
    try:
        legs.channels[SEMANTIC] = vectors.search(vector, where=where, limit=depth)
    except IndexUnavailable as exc:
        legs.warnings.append(f"semantic leg skipped: vector index unavailable ({exc}); FTS only")
        legs.semantic = "skipped: vector index unavailable"
        return legs
    finally:
        legs.timings["vector"] = _ms(start)
    legs.semantic = "on"
    return legs
