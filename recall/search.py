"""Console Search: every project (or a chosen list), every hit up to the limit.

Shares Recall's candidate stage and fusion but, as seamless argues, drops
three Recall behaviours that are wrong for a person searching: no token
budget (the page owes every hit up to the limit), no post-fusion scope guard
(scope lives in the candidate queries), no link expansion (a neighbour does
not match what was typed). It adds:
- the identifier lane: exact id, exact name/slug, id prefix (>= 8 chars),
  ranked first with source "identifier";
- the semantic floor: semantic-only hits below `semantic_floor` are dropped
  (nearest-neighbour search always has a "nearest", however far); lexical
  and identifier matches are exempt;
- snippets (raw, with sentinels) and `snippet_html` on FTS hits, `similarity`
  on every hit the semantic leg found;
- `since`: the legs run `since_depth_factor` times deeper (capped at
  `max_depth`), then hits updated before `since` are dropped after
  hydration, so old items cannot starve recent ones within that depth;
- favourites first, stable within each group.
`semantic=False` is the palette's fast path: the embedder and the vector
index are never touched. An empty or unusable query returns no hits.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from recall.candidates import gather, search_filter
from recall.config import SearchConfig
from recall.errors import QueryError
from recall.fusion import FTS, SEMANTIC, fuse
from recall.query import clean, words
from recall.requests import SearchRequest
from recall.results import Hit, Provenance, SearchResult, to_hit
from recall.sanitize import snippet_html
from recall.types import ITEM_KINDS, MEMORY_KINDS, Record

if TYPE_CHECKING:
    from recall.engine import Engine


def validate(req: SearchRequest, config: SearchConfig) -> None:
    """QueryError with a clear message for any out-of-range request value."""
    if not 1 <= req.limit <= config.max_limit:
        raise QueryError(f"limit must be within 1..{config.max_limit}, not {req.limit}")
    for kind in req.kinds or ():
        if kind not in MEMORY_KINDS:
            raise QueryError(f"kind must be one of {', '.join(MEMORY_KINDS)}, not {kind!r}")
    for item in req.items or ():
        if item not in ITEM_KINDS:
            raise QueryError(f"item must be one of {', '.join(ITEM_KINDS)}, not {item!r}")


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def run(engine: Engine, req: SearchRequest, config: SearchConfig) -> SearchResult:
    """Search for `req` under `config` (see the module docstring)."""
    started = time.perf_counter()
    validate(req, config)
    where = search_filter(
        projects=req.projects,
        kinds=req.kinds,
        items=req.items,
        include_inactive=req.include_inactive,
    )
    query = clean(req.query)
    if not words(query, keep_short_last=req.prefix):
        return SearchResult((), (), {"total": _ms(started)}, False)
    identified: list[Record] = []
    if " " not in query:
        identified = engine.store.identifiers(query, where=where, limit=config.identifier_limit)
    depth = config.depth
    if not req.semantic:
        # No fusion on the fast path: full-text order is the final order, so
        # fetch (and snippet, and hydrate) only what the page can show beside
        # the identifier hits. Favourites come first among those hits.
        depth = min(depth, req.limit + len(identified))
    if req.since is not None:
        depth = min(max(depth, config.max_depth), depth * config.since_depth_factor)
    legs = gather(
        query,
        where=where,
        depth=depth,
        text_index=engine.text,
        vectors=engine.vectors,
        embedder=engine.embedder,
        semantic=req.semantic,
        snippets=True,
        prefix=req.prefix,
        cache=engine.embed_cache,
    )
    timings = dict(legs.timings)
    start = time.perf_counter()
    fused = fuse(legs.channels, method=config.fusion, weights=config.channel_weights, k=config.k)
    fused = [
        f
        for f in fused
        if f.channels != (SEMANTIC,) or (f.raw(SEMANTIC) or 0.0) >= config.semantic_floor
    ]
    timings["fusion"] = _ms(start)

    start = time.perf_counter()
    taken = {r.id for r in identified}
    records = engine.store.hydrate([f.id for f in fused if f.id not in taken])
    now = engine.clock()
    by_id = {f.id: f for f in fused}
    hits: list[Hit] = []
    for record in identified:
        lane = _lane(record, query)
        prov = Provenance("identifier", lane + 1, float(lane))
        hit = to_hit(record, now=now, source="identifier", score=1 / (1 + lane), sources=(prov,))
        also = by_id.get(record.id)
        hits.append(_with(hit, also.snippet, also.raw(SEMANTIC)) if also else hit)
    for f in fused:
        hydrated = records.get(f.id)
        if hydrated is None or f.id in taken:
            continue
        hit = to_hit(hydrated, now=now, source=f.source, score=f.score, sources=f.sources)
        hits.append(_with(hit, f.snippet if FTS in f.channels else None, f.raw(SEMANTIC)))
    if req.since is not None:
        since = req.since
        hits = [h for h in hits if h.updated is not None and h.updated >= since]
    hits.sort(key=lambda h: not h.favorite)
    timings["hydrate"] = _ms(start)
    timings["total"] = _ms(started)
    return SearchResult(tuple(hits[: req.limit]), tuple(legs.warnings), timings, legs.embedded)


def _lane(record: Record, query: str) -> int:
    """0 exact id, 1 exact name/slug, 2 id prefix (the store's own order)."""
    if record.id.upper() == query.upper():
        return 0
    if query in (record.name, record.title):
        return 1
    return 2


def _with(hit: Hit, snippet: str | None, similarity: float | None) -> Hit:
    return replace(hit, snippet=snippet, snippet_html=snippet_html(snippet), similarity=similarity)
