"""Console Search: every project (or a chosen list), every hit up to the limit.

The pipeline, one named stage each: validate -> filter -> pin (the identifier
channel: exact id, exact name/slug, id prefix of 8+ characters, ranked first)
-> candidates (each rank channel) -> fuse -> floor -> hydrate -> since ->
order. It shares Recall's channels and fusion but, as seamless argues, drops
three Recall behaviours that are wrong for a person searching: no token
budget (the page owes every hit up to the limit), no link expansion (a
neighbour does not match what was typed), no post-fusion boosts. It adds:
- the semantic floor: semantic-only hits below `semantic_floor` are dropped
  (nearest-neighbour search always has a "nearest", however far); lexical
  and identifier matches are exempt;
- snippets (raw, with sentinels) and `snippet_html` on full-text hits,
  `similarity` on every hit the semantic channel found;
- `since`: the channels run `since_depth_factor` times deeper (capped at
  `max_depth`), then hits updated before `since` are dropped after
  hydration, so old items cannot starve recent ones within that depth;
- favourites first, stable within each group;
- pages that agree: a walk by offset reads in two rungs (`depth_for`), the
  first rung's order kept ahead of the deep one's, so it meets each hit once;
  `more` says a channel stopped at its depth;
- snippets for the page alone when the ranking read deeper than it
  (`with_snippets`);
- a cursor for the next page (`recall.walks`): the pages of a walk by cursor
  meet each hit once even when memories change between them.
`semantic=False` is the palette's fast path: the embedder and the vector
index are never touched. An empty or unusable query returns no hits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, TypeVar

from recall import timetravel, walks
from recall.channels import FTS, SEMANTIC
from recall.config import SearchConfig
from recall.errors import QueryError, RecallError
from recall.fusion import Fused, fuse, session_prior
from recall.gather import Gathered, gather, select
from recall.planes import Planes
from recall.ports import PIN, RANK, Channel
from recall.query import NO_WORDS, clean, words
from recall.requests import SearchRequest
from recall.results import Hit, Provenance, SearchResult, to_hit
from recall.sanitize import snippet_html
from recall.scope import search_filter
from recall.scoring import admits
from recall.types import (
    ITEM_KINDS,
    MEMORY_KINDS,
    Candidate,
    ChannelQuery,
    Filter,
    Record,
    conversation,
)

EMPTY_QUERY = "the query is empty: give a word to look for"


def validate(req: SearchRequest, config: SearchConfig) -> int:
    """The page size; QueryError with a clear message for any out-of-range value."""
    limit = config.limit if req.limit is None else req.limit
    timetravel.validate(req)
    if not 1 <= limit <= config.max_limit:
        raise QueryError(f"limit must be within 1..{config.max_limit}, not {limit}")
    if not 0 <= req.offset <= config.max_depth:
        raise QueryError(f"offset must be within 0..{config.max_depth}, not {req.offset}")
    for kind in req.kinds or ():
        if kind not in MEMORY_KINDS:
            raise QueryError(f"kind must be one of {', '.join(MEMORY_KINDS)}, not {kind!r}")
    for item in req.items or ():
        if item not in ITEM_KINDS:
            raise QueryError(f"item must be one of {', '.join(ITEM_KINDS)}, not {item!r}")
    return limit


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def depth_for(req: SearchRequest, config: SearchConfig, *, page: int, pinned: int) -> int:
    """How deep each rank channel reads for a page that ends at `page`.

    A paged search (`req.paged`) reads in two rungs, so that the pages of one walk
    by offset share their rankings (fusion's normalisation, the favourites' lead and
    the full-text re-score all depend on how deep the channels read): every page
    ending within `config.depth` reads that deep, every later one `config.max_depth`
    (`run` keeps the first rung's order ahead of the second's). A search that does
    not page (the palette; the console's window) reads `config.depth` or the page,
    and on the fast path, where full-text order is the final order, only what the
    page can show beside the pinned hits and one more to know whether another page
    follows. With `since`, read deeper so that old items cannot starve recent ones.
    """
    if req.paged:
        depth = config.depth if page <= config.depth else config.max_depth
        if not req.semantic:
            depth += pinned + 1
    else:
        depth = max(config.depth, page)
        if not req.semantic:
            depth = min(depth, page + pinned + 1)
    if req.since is not None:
        depth = min(max(depth, config.max_depth), depth * config.since_depth_factor)
    return depth


def floor(fused: Sequence[Fused], minimum: float) -> list[Fused]:
    """Drop semantic-only hits whose cosine is below `minimum`."""
    return [f for f in fused if f.channels != (SEMANTIC,) or (f.raw(SEMANTIC) or 0.0) >= minimum]


def run(
    req: SearchRequest, *, planes: Planes, channels: Sequence[Channel], config: SearchConfig
) -> SearchResult:
    """Search for `req` under `config` (see the module docstring)."""
    started = time.perf_counter()
    limit = validate(req, config)
    skip = req.offset  # with a cursor: how many of the hits it has not shown to pass over
    ranking = [name for name, weight in config.channel_weights.items() if weight > 0]
    if req.cursor is None:
        walk = walks.start(req, ranking)
    else:
        walk = walks.read(req.cursor, req, ranking, deepest=config.max_depth)
        req = replace(req, offset=min(walk.position + skip, config.max_depth))
    where = search_filter(
        projects=req.projects,
        kinds=req.kinds,
        items=req.items,
        include_inactive=req.include_inactive,
        include_global=req.include_global,
    )
    text = clean(req.query)
    if not words(text, keep_short_last=req.prefix):  # nothing to look for: say so
        said = NO_WORDS if text else EMPTY_QUERY
        return SearchResult((), (said,), {"total": _ms(started)}, False)
    if timetravel.asked(req):  # a past ranking holds still: its pages go by offset
        depth = max(config.max_depth, req.offset + limit)
        past = timetravel.search(req, planes=planes, where=where, limit=limit, depth=depth,
                                 k=config.k)  # fmt: skip
        ids = [h.id for h in past.hits]
        left = req.offset + len(ids) < past.total
        after, onward = _onward(walk, req.offset, ids, len(ids), left=left, limit=limit,
                                config=config)  # fmt: skip
        return replace(past, next_offset=after, cursor=onward, start=walk)
    query = ChannelQuery(text, prefix=req.prefix, snippets=req.snippets)
    pins = gather(
        select(channels, PIN, config.channel_weights),
        query,
        where=where,
        depth=config.identifier_limit,
        embedder=None,
    )
    pinned = sum(len(found) for found in pins.lists.values())
    page = req.offset + limit
    depth = depth_for(req, config, page=page, pinned=pinned)
    # Snippets while ranking only when it reads no more than the page shows; else the
    # page asks for its own (`with_snippets`).
    inline = req.snippets and depth <= page + pinned + 1
    search = Ranking(req, planes, channels, config, replace(query, snippets=inline), where, pins)
    found, full = search.ranked(depth)
    more = full and depth < config.max_depth  # a later page reads deeper
    if req.paged and page > config.depth:  # the first rung's pages came first, as shown
        first = depth_for(req, config, page=config.depth, pinned=pinned)
        head = search.ranked(first)[0][: config.depth]
        seen = {a.record.id for a in head}
        found = head + [a for a in found if a.record.id not in seen]
    if full and not more and (page >= len(found) or page > config.max_depth):
        # The last page a walk reaches (no offset past max_depth): say what is left.
        search.warnings.append(deepest(config.max_depth))
    start = time.perf_counter()
    if req.cursor is None:
        shown = found[req.offset : req.offset + limit]
        passed = [a.record.id for a in found[: req.offset + len(shown)]]
        left = len(found) > req.offset + len(shown)
    else:  # the best the walk has not shown, wherever the ranking has moved them
        rest = [a for a in found if not walk.shown(a.record.id)]
        shown = rest[skip : skip + limit]
        passed = [a.record.id for a in rest[: skip + len(shown)]]
        left = len(rest) > skip + len(shown)
        # Where the walk is in the ranking as it is now: what it showed that is still
        # there, not what it showed (hits archived meanwhile would end it early).
        req = replace(req, offset=len(found) - len(rest) + skip)
    after, onward = _onward(walk, req.offset, passed, len(shown), left=left or more,
                            limit=limit, config=config,
                            ranked=[a.record.id for a in found])  # fmt: skip
    if req.snippets and not inline:
        shown = with_snippets(planes, text, shown, where, prefix=req.prefix,
                              warnings=search.warnings)  # fmt: skip
    now = planes.clock()
    hits = tuple(a.hit(now) for a in shown)
    timings = search.timings
    timings["hydrate"] = round(timings.get("hydrate", 0.0) + _ms(start), 3)
    timings["total"] = _ms(started)
    ranked = tuple(a.record.id for a in found)
    before = walk.then(passed[: len(passed) - len(shown)], req.offset, ranked)
    return SearchResult(hits, tuple(search.warnings), timings, search.embedded, len(found),
                        req.offset, more, after, onward, before, ranked)  # fmt: skip


def _onward(
    walk: walks.Walk, position: int, passed: Sequence[str], count: int, *, left: bool,
    limit: int, config: SearchConfig, ranked: Sequence[str] = (),
) -> tuple[int | None, str | None]:  # fmt: skip
    """The next page's `next_offset` and `cursor` (None on the last page: one short of
    the limit, with nothing left, or past the deepest a search reads): `count` hits
    shown from `position`, `passed` the ids the walk has now gone by, `ranked` the
    ranking's (`walks.Walk.on`)."""
    after = position + count
    if count < limit or not left or after > config.max_depth:
        return None, None
    return after, walk.on(passed, after, ranked)


def within(
    result: SearchResult, measure: Callable[[SearchResult], int], budget: int
) -> SearchResult:
    """The longest first part of `result`'s page whose reply, as `measure` counts it,
    fits `budget`, its `next_offset` and `cursor` going on after the last hit kept. When
    not even the first hit fits, no hit, a warning naming what the first needs (when it
    fits itself) and the next page this one. A walk that cannot go on from the page's
    start (`start` None: no hit, or a cursor past its marks) keeps its page."""
    if result.start is None or measure(result) <= budget:
        return result
    low, high = 0, len(result.hits) - 1  # first(low) fits once low > 0; grows with n
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if measure(first(result, mid)) <= budget else (low, mid - 1)
    if low > 0:
        return first(result, low)
    empty, needs = first(result, 0), measure(first(result, 1))
    for said in (
        f"budget {budget} fits no hit of this page (the first takes {needs}); ask with more",
        f"nothing listed: the first hit needs a budget of {needs}",
    ):
        told = replace(empty, warnings=(*empty.warnings, said))
        if measure(told) <= budget:
            return told
    return empty


def first(result: SearchResult, count: int) -> SearchResult:
    """`result` with the first `count` hits of its page, the next page after them."""
    kept = result.hits[:count]
    after = result.offset + count
    walk = result.start.then((h.id for h in kept), after, result.ranked) if result.start else None
    onward = walks.cursor(walk.key, walk.position, walk.seen) if walk is not None else None
    return replace(result, hits=kept, next_offset=after, cursor=onward)


def deepest(depth: int) -> str:
    return (
        f"more match than a search reads: it ranks the best {depth} of each kind "
        "(words, meaning); narrow the query or filter to reach the rest"
    )


def with_snippets(
    planes: Planes,
    text: str,
    page: Sequence[Admitted],
    where: Filter,
    *,
    prefix: bool,
    warnings: list[str],
) -> list[Admitted]:
    """The page's hits with the snippets the full-text plane gives the ones it found
    (a ranking deeper than the page read without them: at 500 deep they were a third
    of a page's time)."""
    wanted = [a.record.id for a in page if a.lexical]
    if not wanted:
        return list(page)
    try:
        given = planes.text.snippets(text, wanted, where=where, prefix=prefix)
    except RecallError as exc:
        warnings.append(f"snippets unavailable ({exc})")
        return list(page)
    return [replace(a, snippet=given.get(a.record.id, a.snippet)) for a in page]


class Ranking:
    """One search's rank channels, fused and hydrated at a depth (`ranked`): a paged
    search past the first rung ranks at two depths (`depth_for`)."""

    def __init__(
        self,
        req: SearchRequest,
        planes: Planes,
        channels: Sequence[Channel],
        config: SearchConfig,
        query: ChannelQuery,
        where: Filter,
        pins: Gathered,
    ) -> None:
        self.req, self.planes, self.channels, self.config = req, planes, channels, config
        self.query, self.where, self.pins = query, where, pins
        self.pinned_hits = [c for found in pins.lists.values() for c in found]
        self.timings: dict[str, float] = dict(pins.timings)
        self.warnings: list[str] = list(pins.warnings)
        self.embedded = False

    def ranked(self, depth: int) -> tuple[list[Admitted], bool]:
        """(the admitted hits in their order, whether a channel stopped at `depth`:
        more may match than it read)."""
        config, weights = self.config, self.config.channel_weights
        gathered = gather(
            select(self.channels, RANK, weights, off=() if self.req.semantic else (SEMANTIC,)),
            self.query,
            where=self.where,
            depth=depth,
            embedder=self.planes.embedder,
        )
        full = any(_full(name, found, depth, config) for name, found in gathered.lists.items())
        gathered.merge(self.pins)
        self.timings.update(gathered.timings)
        self.warnings += [w for w in gathered.warnings if w not in self.warnings]
        self.embedded = self.embedded or gathered.embedded
        start = time.perf_counter()
        fused = fuse(gathered.lists, method=config.fusion, weights=weights, k=config.k)
        fused = floor(fused, config.semantic_floor)
        self.timings["fusion"] = _ms(start)

        start = time.perf_counter()
        lists, pinned = self.pins.lists, self.pinned_hits
        found = admitted(self.planes, lists, pinned, fused, self.where, prior=config.session_prior)
        if self.req.since is not None:
            found = since(found, self.req.since)
        # What was typed (an id or a name) stays first; favorites lead the rest.
        typed = {c.id for c in pinned}
        lead = config.favorites_first
        found.sort(key=lambda a: (a.record.id not in typed, lead and not a.favorite))
        self.timings["hydrate"] = _ms(start)
        return found, full


def _full(channel: str, found: Sequence[Candidate], depth: int, config: SearchConfig) -> bool:
    """Whether a channel's list stopped at `depth` with hits that could still show:
    past a meaning list's floor, every deeper neighbour is below it too."""
    if len(found) < depth:
        return False
    return channel != SEMANTIC or found[-1].score >= config.semantic_floor


@dataclass(frozen=True, slots=True)
class Admitted:
    """A hit whose hydrated row is in scope, before it is made a Hit: only the
    page's hits are (their snippet HTML, age and worth), not every admitted one."""

    record: Record
    source: str
    score: float
    sources: tuple[Provenance, ...]
    snippet: str | None
    similarity: float | None
    lexical: bool  # the full-text channel found it: a snippet is owed

    @property
    def updated(self) -> datetime | None:
        return self.record.updated

    @property
    def favorite(self) -> bool:
        return self.record.favorite

    def hit(self, now: datetime) -> Hit:
        return to_hit(self.record, now=now, source=self.source, score=self.score,
                      sources=self.sources, snippet=self.snippet,
                      snippet_html=snippet_html(self.snippet),
                      similarity=self.similarity)  # fmt: skip


def admitted(
    planes: Planes,
    pin_lists: dict[str, list[Candidate]],
    pinned: Sequence[Candidate],
    fused: Sequence[Fused],
    where: Filter,
    *,
    prior: float = 0.0,
) -> list[Admitted]:
    """Pinned hits first (score 1 / (1 + lane)), then the fused ones, hydrated.

    The fused ones take the session prior first (`prior`, see
    `recall.fusion.session_prior`).

    Only hits whose hydrated row `where` admits survive: the planes are a
    derived copy, and a stale row (written before its item moved project or
    was archived) must never reach someone outside the item's scope now.
    """
    channel_of = {c.id: name for name, found in pin_lists.items() for c in found}
    records = planes.store.hydrate([c.id for c in pinned] + [f.id for f in fused])
    if prior:
        sessions = {i: conversation(r) for i, r in records.items()}
        fused = session_prior(fused, sessions, weight=prior)
    by_id = {f.id: f for f in fused}
    hits: list[Admitted] = []
    taken: set[str] = set()
    for cand in pinned:
        record = records.get(cand.id)
        if record is None or cand.id in taken or not admits(where, record):
            continue
        taken.add(cand.id)
        prov = Provenance(channel_of[cand.id], cand.rank, cand.score)
        also = by_id.get(record.id)
        snippet, similarity = (also.snippet, also.raw(SEMANTIC)) if also else (None, None)
        lexical = also is not None and FTS in also.channels
        hits.append(Admitted(record, channel_of[cand.id], 1 / (1 + cand.score), (prov,),
                             snippet, similarity, lexical))  # fmt: skip
    for f in fused:
        record = records.get(f.id)
        if record is None or f.id in taken or not admits(where, record):
            continue
        lexical = FTS in f.channels
        snippet = f.snippet if lexical else None
        hits.append(
            Admitted(record, f.source, f.score, f.sources, snippet, f.raw(SEMANTIC), lexical)
        )
    return hits


class _Updated(Protocol):
    @property
    def updated(self) -> datetime | None: ...


U = TypeVar("U", bound=_Updated)


def since(hits: Sequence[U], instant: datetime) -> list[U]:
    """Hits updated at or after `instant`."""
    return [h for h in hits if h.updated is not None and h.updated >= instant]
