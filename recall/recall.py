"""Agent Recall: a ranked, token-budgeted, scope-guarded context pack.

The pipeline (ARCHITECTURE section 4), one named stage each:
validate -> filter -> candidates (each rank channel) -> fuse -> hydrate ->
guard -> expand (each expand channel, from the best memories) -> boost ->
rank -> pack. An empty query with a kind browses that kind. An empty query
without one, or a query with no searchable words, returns an empty pack whose
warning says why (the request is well-formed, so the API answers 200 as its
schema promises; the warning surfaces the agent's bug).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import datetime
from typing import overload

from recall import (
    altitude,
    associated,
    context,
    expansion,
    neighbourhood,
    passages,
    routing,
    sanitize,
    timetravel,
    worth,
)
from recall.agent import DETAILS
from recall.channels import FTS, SEMANTIC
from recall.config import MIN_BUDGET, RecallConfig
from recall.errors import IndexUnavailable, QueryError
from recall.fusion import fuse
from recall.gather import Gathered, check_names, gather, select
from recall.packing import attach, pack
from recall.planes import Planes
from recall.ports import EXPAND, RANK, Channel, MemoryStore
from recall.query import NO_WORDS, clean, words
from recall.requests import FILTER_FIELDS, RecallRequest
from recall.results import ContextPack, Hit, to_hit
from recall.scope import recall_filter, scope_of
from recall.scoring import Scored, admits, boost, current_first, guard, hydrate, rank
from recall.shape import with_graph
from recall.types import MEMORY_KINDS, ChannelQuery, Filter, Record

EMPTY_QUERY = "the query is empty: give a query, or a kind to browse"
KIND_OF_NOTES = "a kind filter selects memories, and scope 'notes' has none: nothing to recall"
SINCE_AFTER_UNTIL = "since is after until: no item was created in that window"
BLANK_TAG = "a blank tag matches no item: nothing to recall"


def with_defaults(req: RecallRequest, config: RecallConfig) -> RecallRequest:
    """The request with the config's budget and limit where the caller gave none."""
    return replace(
        req,
        budget=config.budget if req.budget is None else req.budget,
        limit=config.limit if req.limit is None else req.limit,
    )


def validate(req: RecallRequest, config: RecallConfig, channels: Sequence[Channel]) -> None:
    """QueryError with a clear message for any out-of-range request value."""
    limit, budget = req.limit or 0, req.budget or 0
    if not 1 <= limit <= config.max_limit:
        raise QueryError(f"limit must be within 1..{config.max_limit}, not {req.limit}")
    if not MIN_BUDGET <= budget <= config.max_budget:
        message = f"budget must be within {MIN_BUDGET}..{config.max_budget}, not {req.budget}"
        raise QueryError(message)
    if req.detail not in DETAILS:
        raise QueryError(f"detail must be one of {', '.join(DETAILS)}, not {req.detail!r}")
    narrowing(req)
    if req.rrf_k is not None and req.rrf_k < 1:
        raise QueryError(f"rrf_k must be >= 1, not {req.rrf_k}")
    # --- routing and fabriq's knobs (recall/routing.py) ---
    if req.routing is not None and req.routing not in routing.ROUTINGS:
        choices = ", ".join(routing.ROUTINGS)
        raise QueryError(f"routing must be one of {choices}, not {req.routing!r}")
    if req.k is not None and not 1 <= req.k <= config.max_depth:
        raise QueryError(f"k (candidates per channel) must be within 1..{config.max_depth}")
    scope_of(req.scope, req.entities)
    weights = req.channel_weights or {}
    for channel, weight in weights.items():
        if not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
            raise QueryError(f"channel weight {channel}={weight!r} must be a number >= 0")
    check_names(weights, channels)
    ranking = [c.name for c in channels if c.role == RANK]
    merged = {**config.channel_weights, **weights}
    if weights and ranking and not any(merged.get(name, 0) > 0 for name in ranking):
        named = ", ".join(f"{name}=0" for name in ranking)
        raise QueryError(
            f"channel_weights turn off every channel that searches ({named})",
            field="channel_weights",
        )
    associated.validate(req)
    neighbourhood.validate(req)
    altitude.validate(req.altitude)
    timetravel.validate(req)
    worth.validate(req)


MAX_FILTER_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ID_CHARS = 120


def tag_form(tag: str) -> str:
    """A tag as it is stored and matched: trimmed, lower-cased, no leading `#`.

    Agents write `#billing` as often as `billing`; stored as typed, the two
    were two tags, a filter on one missed the other, and the console (which
    puts a `#` before every tag) showed `##billing`.

    Invisible characters (control and format characters such as an RTL override,
    a joiner that joins nothing) are dropped and each run of spaces and line breaks
    made one space, as every read shows a tag (`sanitize.name`): stored with them,
    "a\u202eb" read as "ab", a filter or a write-back of the tag as read was another
    tag, and one of only joiners read as "" (now blank: dropped from a write).
    """
    return " ".join(sanitize.normalise(tag).split()).lstrip("#").strip().lower()


def kinds_of(req: RecallRequest) -> tuple[str, ...] | None:
    """The kinds asked for: `kind` (a one-item alias) joined to `kinds`, or None (any)."""
    if req.kind is None and req.kinds is None:
        return None
    return tuple(dict.fromkeys([*([req.kind] if req.kind is not None else []),
                                *(req.kinds or ())]))  # fmt: skip


def _tags(name: str, tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as memories store them (stripped, lower-cased), checked. A tag that is
    blank once stripped is kept as "": no item carries it (see `unmatchable`)."""
    out = tuple(dict.fromkeys(str(t).strip().lower() for t in tags))
    if len(out) > MAX_FILTER_TAGS:
        raise QueryError(f"{name} takes at most {MAX_FILTER_TAGS} tags, not {len(out)}")
    for tag in out:
        if len(tag) > MAX_TAG_CHARS:
            raise QueryError(f"each of {name} must be at most {MAX_TAG_CHARS} characters")
    return out


def _ident(name: str, value: str | None) -> str | None:
    if value is not None and not 1 <= len(value) <= MAX_ID_CHARS:
        raise QueryError(f"{name} must be 1..{MAX_ID_CHARS} characters (omit it for any)")
    return value


def narrowing(req: RecallRequest) -> Filter:
    """The request's attribute filters as a Filter (tags ... until; scope is added by
    `recall_filter`); QueryError with a clear message for a bad value. A filter no
    item can pass is not an error (the schema cannot say so): see `unmatchable`."""
    if req.kinds is not None and not req.kinds:
        raise QueryError("kinds must name at least one kind (omit it for any kind)")
    for kind in kinds_of(req) or ():
        if kind not in MEMORY_KINDS:
            raise QueryError(f"kind must be one of {', '.join(MEMORY_KINDS)}, not {kind!r}")
    low = req.min_importance
    if low is not None and (
        not isinstance(low, int | float) or not math.isfinite(low) or not 0 <= low <= 1
    ):
        raise QueryError(f"min_importance must be a number within 0..1, not {low!r}")
    for name, instant in (("since", req.since), ("until", req.until)):
        if instant is not None and instant.utcoffset() is None:
            raise QueryError(f"{name} must carry a time zone (e.g. 2024-01-01T00:00:00Z)")
    return Filter(
        tags=_tags("tags", req.tags),
        any_tags=_tags("any_tags", req.any_tags),
        agent_id=_ident("agent_id", req.agent_id),
        session_id=_ident("session_id", req.session_id),
        min_importance=None if low is None else float(low),
        since=req.since,
        until=req.until,
        active_only=not req.include_history,
    )


def unmatchable(where: Filter) -> str | None:
    """Why no item can pass `where`'s attribute filters, or None (then the planes decide)."""
    if where.since is not None and where.until is not None and where.since > where.until:
        return SINCE_AFTER_UNTIL
    if "" in where.tags or (where.any_tags and not any(where.any_tags)):
        return BLANK_TAG
    return None


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


class Ranked(Sequence[tuple[Hit, Record]]):
    """The ranked memories as (Hit, Record) pairs, each Hit made when first read.

    A pack reads the few that fit its budget out of up to `limit` ranked: at
    100,000 memories making all 100 Hits was 1.1 ms of a 22-26 ms Recall, for
    the 10-15 a 1,000-token budget holds."""

    def __init__(self, scored: Sequence[Scored], now: datetime) -> None:
        self._scored = scored
        self._now = now
        self._made: list[tuple[Hit, Record] | None] = [None] * len(scored)

    def __len__(self) -> int:
        return len(self._scored)

    @overload
    def __getitem__(self, at: int) -> tuple[Hit, Record]: ...

    @overload
    def __getitem__(self, at: slice) -> list[tuple[Hit, Record]]: ...

    def __getitem__(self, at: int | slice) -> tuple[Hit, Record] | list[tuple[Hit, Record]]:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        made = self._made[at]
        if made is None:
            s = self._scored[at]
            hit = to_hit(s.record, now=self._now, source=s.source, score=s.score, sources=s.sources)
            made = self._made[at] = (hit, s.record)
        return made


def run(
    req: RecallRequest, *, planes: Planes, channels: Sequence[Channel], config: RecallConfig
) -> ContextPack:
    """Recall for `req` under `config` (see the module docstring)."""
    started = time.perf_counter()
    req = with_defaults(req, config)
    validate(req, config, channels)
    budget, limit = req.budget or config.budget, req.limit or config.limit
    scope = scope_of(req.scope, req.entities)
    kinds = kinds_of(req)
    where = recall_filter(
        planes.store, project=req.project, scope=scope, kinds=kinds, narrow=narrowing(req)
    )
    rrf_k = req.rrf_k or config.k
    depth = req.k or config.depth  # fabriq K: candidates per channel
    query = clean(req.query)
    nothing = unmatchable(where) or (
        KIND_OF_NOTES if kinds is not None and scope == "notes" else None
    )
    if timetravel.asked(req) and not nothing and (words(query) or kinds is not None):
        return timetravel.recall_pack(req, planes=planes, where=where, config=config,
                                      started=started)  # fmt: skip
    if not nothing and not query and kinds is not None and scope != "notes":
        return browse(req, planes=planes, where=where, k=rrf_k, started=started, config=config)
    if nothing or not words(query):  # nothing to look for: an empty pack that says why
        why = nothing or (NO_WORDS if query else EMPTY_QUERY)
        empty = pack(
            [], budget=budget, counter=planes.tokens, warnings=(why,), total_found=0,
            associated=req.include_associated, pack_id=req.pack_id, home=req.project,
        )  # fmt: skip
        none = () if req.include_associated else None
        return ContextPack(
            (), 0, empty.tokens, budget, empty.warnings, None, req.detail, 0, none, req.pack_id,
            req.project,
        )  # fmt: skip

    merged = {**config.channel_weights, **(req.channel_weights or {})}
    mode = req.routing or config.routing
    routed = routing.route(mode, query, merged, config.routing_weights, given=req.channel_weights)
    weights = routed.weights
    off = () if config.semantic else (SEMANTIC,)
    ranking = select(channels, RANK, weights, off=off)
    asked = ChannelQuery(query, context=context.reading(config))
    gathered = gather(ranking, asked, where=where, depth=depth, embedder=planes.embedder)
    _strict(req, gathered.warnings)
    if not req.include_history:
        _drop_expired(gathered, planes.store)
    _filtered_out(gathered, where, planes.store)  # before the meaning floor drops any
    _meaning_floor(gathered, config.meaning_floor, where)
    _nothing_held(gathered, where)
    timings = gathered.timings

    start = time.perf_counter()
    fused = fuse(gathered.lists, method=config.fusion, weights=weights, k=rrf_k)
    timings["fusion"] = _ms(start)

    graph_seeds = associated.seeds(req, config)
    session_seeds = neighbourhood.seeds(req, config)  # the session channel (Dakera 004)
    expands = expansion.wanted(where, limit=max(graph_seeds, session_seeds))
    start = time.perf_counter()
    hydrated = hydrate(  # the turns that ask are lowered once the expansion is fused in
        planes.store, fused, method=config.fusion, prior=config.session_prior,
        asking=0.0 if expands else config.asking_turns, expired=req.include_history,
    )  # fmt: skip
    scored = guard(where, hydrated)
    timings["hydrate"] = _ms(start)

    if expands:  # recall/expansion.py
        seeds = expansion.seeds(scored, limit=max(graph_seeds, session_seeds))
        expanding = select(channels, EXPAND, weights)
        walked = replace(
            gathered.query or ChannelQuery(query),
            walk=replace(associated.walk(req, config), seeds=graph_seeds),
            nearby=neighbourhood.nearby(req, config),
        )
        extra = gather(expanding, walked, where=where, depth=depth, embedder=None, seeds=seeds)
        _strict(req, extra.warnings)
        refused = expansion.refuse(
            gathered.lists, extra.lists, scored, store=planes.store, method=config.fusion,
            weights=weights, k=rrf_k, prior=config.session_prior, asking=config.asking_turns,
        )  # fmt: skip
        scored = guard(where, refused)
        gathered.merge(extra)

    now = planes.clock()
    boosted = boost(planes.store, scored, favorite=config.favorite_boost, usage=config.usage_boost)
    scored = rank(worth.weigh(boosted, now=now, **worth.knobs(req, config)))
    if req.include_history:
        scored = current_first(scored)
    ranked: Sequence[tuple[Hit, Record]] = Ranked(scored[:limit], now)
    if req.include_graph:  # seed 003: each hit's 1-hop neighbours, counted in its tokens
        ranked = with_graph(planes.store, ranked, where=where)
    start = time.perf_counter()
    cap = config.item_cap(budget)
    packed = pack(
        ranked, budget=budget, counter=planes.tokens, detail=req.detail,
        item_tokens=cap, warnings=gathered.warnings, total_found=len(scored),
        associated=req.include_associated, pack_id=req.pack_id, home=req.project,
        focus=passages.focus(
            planes.store, gathered.query.vector if gathered.query else None, query
        ),
    )  # fmt: skip
    how = altitude.Packing(
        budget, planes.tokens, req.detail, cap, tuple(gathered.warnings),
        len(scored), req.include_associated, req.pack_id, limit, req.project,
    )  # fmt: skip
    answered = altitude.answer(
        req.altitude or altitude.ENTITY, packed, ranked, project=req.project,
        digests_=req.digests, how=how,
    )  # fmt: skip
    packed = answered.packed
    linked: tuple[Hit, ...] | None = None
    if req.include_associated:  # Dakera's associated memories (recall/associated.py)
        found = associated.find(
            planes.store, packed.items, where=where, req=req, config=config, now=now
        )
        found = [(h, r) for h, r in found if h.id not in answered.covered]
        packed, linked = attach(
            packed, found, budget=budget, counter=planes.tokens, detail=req.detail,
            item_tokens=cap, total_found=len(scored), pack_id=req.pack_id, home=req.project,
        )  # fmt: skip
    timings["pack"] = _ms(start)
    timings["total"] = _ms(started)
    debug: dict[str, object] | None = None
    if req.debug:
        shown = {h.id for h in packed.items} | answered.covered
        debug = {
            "embedded": gathered.embedded,
            "semantic": gathered.status.get(SEMANTIC, "off: not asked"),
            "channel_status": dict(gathered.status),
            "fusion": config.fusion,
            "rrf_k": rrf_k,
            "k": depth,
            "routing": routed.as_debug(),
            "weights": weights,
            "channels": _ranks(scored),
            "omitted_ids": [h.id for h, _ in ranked if h.id not in shown],
            "altitude": answered.debug,
            "timings_ms": timings,
            "config": asdict(config),
        }
    return ContextPack(
        packed.items, packed.omitted, packed.tokens, budget, packed.warnings, debug, req.detail,
        len(scored), linked, req.pack_id, req.project,
    )  # fmt: skip


def _strict(req: RecallRequest, warnings: Sequence[str]) -> None:
    """With `strict` (fabriq), a channel that failed is an error, not a warning."""
    if req.strict and warnings:
        raise IndexUnavailable("strict recall: " + "; ".join(warnings))


def _ranks(scored: Sequence[Scored]) -> dict[str, dict[str, int]]:
    return {s.record.id: {p.channel: p.rank for p in s.sources} for s in scored}


def browse(
    req: RecallRequest,
    *,
    planes: Planes,
    where: Filter,
    k: int,
    started: float,
    config: RecallConfig | None = None,
) -> ContextPack:
    """Empty query + kind: that kind, newest first, invalidated skipped."""
    budget, limit = req.budget or 1, req.limit or 1
    now = planes.clock()
    records = [r for r in planes.store.browse(where=where, limit=limit) if admits(where, r)]
    ranked: list[tuple[Hit, Record]] = [
        (to_hit(r, now=now, source="browse", score=1 / (k + i)), r)
        for i, r in enumerate(records, 1)
    ]
    if req.include_graph:
        ranked = with_graph(planes.store, ranked, where=where)
    said = () if records else (NOTHING_LISTED.format(names=_filters_named(where)),)
    packed = pack(
        ranked, budget=budget, counter=planes.tokens, detail=req.detail, warnings=said,
        total_found=len(records), associated=req.include_associated, pack_id=req.pack_id,
        home=req.project,
    )  # fmt: skip
    linked: tuple[Hit, ...] | None = None
    if req.include_associated:
        found = associated.find(planes.store, packed.items, where=where, req=req,
                                config=config or RecallConfig(), now=now)  # fmt: skip
        packed, linked = attach(
            packed, found, budget=budget, counter=planes.tokens, detail=req.detail,
            total_found=len(records), pack_id=req.pack_id, home=req.project,
        )  # fmt: skip
    debug: dict[str, object] | None = None
    if req.debug:
        debug = {"mode": "browse", "embedded": False, "timings_ms": {"total": _ms(started)}}
    return ContextPack(
        packed.items, packed.omitted, packed.tokens, budget, packed.warnings, debug, req.detail,
        len(records), linked, req.pack_id, req.project,
    )  # fmt: skip


ANSWERS_NOTHING = "no memory answers this"
NOTHING_CLOSE = (
    "{nothing} holds the query's words, and nothing is close enough in meaning "
    "(below {floor}): " + ANSWERS_NOTHING
)
NOTHING_HELD = "{nothing} holds the query's words: " + ANSWERS_NOTHING
NOTHING_LISTED = "nothing in scope passes the filters ({names}): nothing to list"


FILTERED_OUT = "nothing in scope passes the filters ({names}): " + ANSWERS_NOTHING


def _drop_expired(gathered: Gathered, store: MemoryStore) -> None:
    """Take the memories whose expiry has come out of every channel's list (ranks
    closed up): the planes hold them until the purge, and a full-text hit on one
    kept the meaning floor and "no memory answers this" from applying, though
    hydration then dropped it."""
    if not any(gathered.lists.values()):
        return
    gone = store.expired_ids()
    if not gone:
        return
    for channel, found in gathered.lists.items():
        if any(c.id in gone for c in found):
            kept = [c for c in found if c.id not in gone]
            gathered.lists[channel] = [replace(c, rank=n) for n, c in enumerate(kept, 1)]


def _filtered_out(gathered: Gathered, where: Filter, store: MemoryStore) -> None:
    """When no channel found anything because no item in scope passes the filters,
    say so: an agent's tag that no memory carries got a bare empty pack.

    The meaning channel returns the nearest items the filters admit however far
    they are, so when it ran and found none, none passes; without it, one count
    says (34 ms for a tag at 100,000 memories, so not asked otherwise)."""
    if where.kinds is None and not where.narrowed:
        return
    if any(gathered.lists.values()):
        return
    if gathered.status.get(SEMANTIC) != "on" and store.count(where=where) > 0:
        return
    gathered.warnings.append(FILTERED_OUT.format(names=_filters_named(where)))


def _filters_named(where: Filter) -> str:
    """The filter fields `where` restricts, as a warning names them ("kinds, tags")."""
    return ", ".join(f for f in FILTER_FIELDS if getattr(where, f, None) not in (None, ()))


def _nothing(where: Filter) -> str:
    """What held nothing: the scope, and the filters when some narrow it (a `since`
    that left out the memories holding the words read as though none held them)."""
    if where.kinds is None and not where.narrowed:
        return "nothing in scope"
    return f"nothing in scope that passes the filters ({_filters_named(where)})"


def _nothing_held(gathered: Gathered, where: Filter) -> None:
    """When full text ran, found nothing, and no other channel found anything (an
    identifier is searched by its words alone), say so: the pack was bare."""
    if gathered.status.get(FTS) != "on" or any(gathered.lists.values()):
        return
    if not any(w.endswith(ANSWERS_NOTHING) for w in gathered.warnings):
        gathered.warnings.append(NOTHING_HELD.format(nothing=_nothing(where)))


def _meaning_floor(gathered: Gathered, floor: float, where: Filter) -> None:
    """With no memory holding any of the query's words (full text ran and found none),
    drop the meaning-only candidates below `floor`: the nearest of unrelated memories
    is no answer, and the pack says so instead of filling the budget with them."""
    if floor <= 0 or gathered.status.get(FTS) != "on" or gathered.lists.get(FTS):
        return
    meant = gathered.lists.get(SEMANTIC)
    if not meant:
        return
    kept = [c for c in meant if c.score >= floor]
    if len(kept) == len(meant):
        return
    gathered.lists[SEMANTIC] = kept
    if not kept:
        gathered.warnings.append(NOTHING_CLOSE.format(nothing=_nothing(where), floor=floor))
