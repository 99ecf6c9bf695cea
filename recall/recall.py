"""Agent Recall: a ranked, token-budgeted, scope-guarded context pack.

Pipeline (ARCHITECTURE section 4): validate; candidates (FTS + semantic legs,
scope inside the queries); fuse; hydrate from the source of truth (ids that
no longer hydrate are dropped); post-fusion scope guard (a backstop, and the
guard for link neighbours); link expansion; favourite and usage boosts; rank;
pack to the budget. An empty query with a kind browses that kind; an empty
query without one is a QueryError (an agent asking for nothing is a bug worth
surfacing). A query with no searchable words returns an empty pack with a
warning, never an error.

Boosts multiply scores, which needs positive scores: RRF scores are; z-score
fused scores are mapped through the logistic function first (monotonic, into
(0, 1)), so a favourite's negative z-sum is never made worse by its boost.
Link neighbours score 1 / (k + i) on that scale.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from recall.candidates import gather, recall_filter
from recall.config import RecallConfig
from recall.errors import QueryError
from recall.fusion import fuse
from recall.links import expand
from recall.packing import pack
from recall.query import clean, words
from recall.requests import RecallRequest
from recall.results import ContextPack, Hit, Provenance, to_hit
from recall.types import MEMORY, MEMORY_KINDS, Filter, Record

if TYPE_CHECKING:
    from recall.engine import Engine


def validate(req: RecallRequest, config: RecallConfig) -> None:
    """QueryError with a clear message for any out-of-range request value."""
    if not 1 <= req.limit <= config.max_limit:
        raise QueryError(f"limit must be within 1..{config.max_limit}, not {req.limit}")
    if not 1 <= req.budget <= config.max_budget:
        raise QueryError(f"budget must be within 1..{config.max_budget}, not {req.budget}")
    if req.kind is not None and req.kind not in MEMORY_KINDS:
        raise QueryError(f"kind must be one of {', '.join(MEMORY_KINDS)}, not {req.kind!r}")
    if req.k is not None and req.k < 1:
        raise QueryError(f"k must be >= 1, not {req.k}")
    for channel, weight in (req.channel_weights or {}).items():
        if not isinstance(weight, int | float) or math.isnan(weight) or weight < 0:
            raise QueryError(f"channel weight {channel}={weight!r} must be a number >= 0")


@dataclass(slots=True)
class _Scored:
    record: Record
    score: float
    sources: tuple[Provenance, ...]
    source: str


def _admits(where: Filter, r: Record) -> bool:
    return where.admits(project=r.project, active=r.active, item=r.item, kind=r.kind)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def run(engine: Engine, req: RecallRequest, config: RecallConfig) -> ContextPack:
    """Recall for `req` under `config` (see the module docstring)."""
    started = time.perf_counter()
    validate(req, config)
    where = recall_filter(engine.store, project=req.project, scope=req.scope, kind=req.kind)
    k = req.k or config.k
    query = clean(req.query)
    timings: dict[str, float] = {}
    if not query:
        if req.kind is None:
            raise QueryError("the query is empty: give a query, or a kind to browse")
        return _browse(engine, req, config, where, k, started)
    if not words(query):
        return ContextPack((), 0, 0, req.budget, ("the query has no searchable words",))
    legs = gather(
        query,
        where=where,
        depth=config.depth,
        text_index=engine.text,
        vectors=engine.vectors,
        embedder=engine.embedder,
        semantic=config.semantic,
        cache=engine.embed_cache,
    )
    timings.update(legs.timings)
    weights = {**config.channel_weights, **(req.channel_weights or {})}
    start = time.perf_counter()
    fused = fuse(legs.channels, method=config.fusion, weights=weights, k=k)
    timings["fusion"] = _ms(start)

    start = time.perf_counter()
    records = engine.store.hydrate([f.id for f in fused])
    scored = [
        _Scored(records[f.id], _positive(f.score, config.fusion), f.sources, f.source)
        for f in fused
        if f.id in records and _admits(where, records[f.id])
    ]
    timings["hydrate"] = _ms(start)

    start = time.perf_counter()
    if req.kind is None and config.link_seeds:
        seeds = [s.record for s in scored if s.record.item == MEMORY][: config.link_seeds]
        for record, prov in expand(
            seeds,
            store=engine.store,
            project=req.project,
            k=k,
            exclude={s.record.id for s in scored},
        ):
            if _admits(where, record):
                scored.append(_Scored(record, prov.raw, (prov,), "link"))
    timings["links"] = _ms(start)

    _boost(engine, scored, config)
    scored.sort(key=lambda s: (-s.score, s.record.id))
    now = engine.clock()
    ranked = [
        (to_hit(s.record, now=now, source=s.source, score=s.score, sources=s.sources), s.record)
        for s in scored[: req.limit]
    ]
    start = time.perf_counter()
    packed = pack(ranked, budget=req.budget, counter=engine.tokens)
    timings["pack"] = _ms(start)
    timings["total"] = _ms(started)
    warnings = list(legs.warnings)
    if ranked and not packed.items:
        warnings.append("the best hit alone exceeds the token budget; nothing was packed")
    debug: dict[str, object] | None = None
    if req.debug:
        debug = {
            "embedded": legs.embedded,
            "semantic": legs.semantic,
            "fusion": config.fusion,
            "k": k,
            "weights": weights,
            "channels": {s.record.id: {p.channel: p.rank for p in s.sources} for s in scored},
            "omitted_ids": [h.id for h, _ in ranked[len(packed.items) :]],
            "timings_ms": timings,
            "config": asdict(config),
        }
    return ContextPack(
        packed.items, packed.omitted, packed.tokens, req.budget, tuple(warnings), debug
    )


def _positive(score: float, method: str) -> float:
    if method == "zscore":
        return 1 / (1 + math.exp(-score))
    return score


def _boost(engine: Engine, scored: list[_Scored], config: RecallConfig) -> None:
    """Favourite x favorite_boost and usage x (1 + usage_boost * u), after fusion."""
    usage = engine.store.usage([s.record.id for s in scored]) if scored else {}
    for s in scored:
        if s.record.favorite:
            s.score *= config.favorite_boost
        s.score *= 1 + config.usage_boost * usage.get(s.record.id, 0.0)


def _browse(
    engine: Engine, req: RecallRequest, config: RecallConfig, where: Filter, k: int, started: float
) -> ContextPack:
    """Empty query + kind: that kind, newest first, invalidated skipped."""
    now = engine.clock()
    records = [r for r in engine.store.browse(where=where, limit=req.limit) if _admits(where, r)]
    ranked: list[tuple[Hit, Record]] = [
        (to_hit(r, now=now, source="browse", score=1 / (k + i)), r)
        for i, r in enumerate(records, 1)
    ]
    packed = pack(ranked, budget=req.budget, counter=engine.tokens)
    debug: dict[str, object] | None = None
    if req.debug:
        debug = {"mode": "browse", "embedded": False, "timings_ms": {"total": _ms(started)}}
    return ContextPack(packed.items, packed.omitted, packed.tokens, req.budget, (), debug)
