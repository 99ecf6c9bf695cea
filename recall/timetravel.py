"""Bitemporal reads: what was true then (`as_of`), what we knew then (`recorded_as_of`).

Two time axes (Snodgrass, "Developing Time-Oriented Database Applications
in SQL", 1999, ch. 10; seed 003's `asOf`, Dakera's since/until):
- valid time: a memory holds over [valid_from, invalid_at), open-ended while
  invalid_at is unset; supersession closes the old memory at the new one's
  valid_from, so along a chain exactly one memory is valid at any instant;
- transaction time: every change of a memory is kept as a revision with the
  instant it was recorded; the state known at an instant is each memory's
  latest revision recorded at or before it, minus those deleted by then.

A request with either instant takes the cold path: the store returns the
scope's memories as of the instants (`MemoryStore.as_of`), this module ranks
them with BM25F (`recall.bm25`) over their text as it was then, and packing
and the scope guard run as on the normal path. The derived planes hold only
the present, so vectors, the graph and notes (which have no history) are not
consulted; a warning says so. `debug.tier` is "cold".
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import lru_cache

from recall import bm25
from recall.config import RecallConfig
from recall.errors import QueryError
from recall.lru import LRU
from recall.packing import pack
from recall.planes import Planes
from recall.query import MIN_WORD_CHARS, WORD, clean, kept, porter, stem, words
from recall.requests import RecallRequest, SearchRequest
from recall.results import ContextPack, Hit, Provenance, SearchResult, to_hit
from recall.scoring import admits
from recall.types import MEMORY, Candidate, Filter, Record

TIER = "cold"
FIELDS = ("as_of", "recorded_as_of")
PARAMS = bm25.Bm25F()
COLD_ONLY = (
    "time travel: ranked by full text over the memories as they were then; "
    "vectors, the graph and notes (which keep no history) are not consulted"
)


def asked(req: RecallRequest | SearchRequest) -> bool:
    """Whether the request travels in time (either instant given)."""
    return req.as_of is not None or req.recorded_as_of is not None


def validate(req: RecallRequest | SearchRequest) -> None:
    """QueryError unless each given instant carries a time zone."""
    for name in FIELDS:
        instant: datetime | None = getattr(req, name)
        if instant is not None and instant.utcoffset() is None:
            raise QueryError(f"{name} must carry a time zone (e.g. 2024-01-01T00:00:00Z)")


def valid_at(record: Record, instant: datetime | None) -> bool:
    """The valid-time rule: valid_from <= instant < invalid_at (open-ended when unset).

    Without an instant, the normal rule: valid while active and invalid_at is unset.
    """
    if instant is None:
        return record.active and record.invalid_at is None
    began = record.valid_from is None or record.valid_from <= instant
    return began and (record.invalid_at is None or instant < record.invalid_at)


def as_known(records: Sequence[Record], *, where: Filter, instant: datetime | None) -> list[Record]:
    """`records` (states known at some instant) with `active` meaning valid at
    `instant`, those `where` admits, by id: the tail every store's `as_of` shares."""
    out = []
    for record in records:
        if record.item != MEMORY:
            continue
        valid = valid_at(record, instant)
        known = record if record.active == valid else replace(record, active=valid)
        if where.admits_record(known):
            out.append(known)
    return sorted(out, key=lambda r: r.id)


_WORD = re.compile(WORD)


def terms(text: str, stems: Callable[[str], str] = stem) -> list[str]:
    """A text's words (2+ characters, as `recall.query.words` keeps them) as lower-cased
    Porter stems, in order, repeats kept: a document's tokens and a query's terms.

    `stems` stems one word: by default the process's cache (`recall.query.stem`);
    a ranking passes a cache of its own for the documents (`lexical`)."""
    found = _WORD.findall(text.lower())  # long words pass without a call of `kept` each
    return [stems(w) for w in found if len(w) >= MIN_WORD_CHARS or kept(w)]


_BAGS: LRU[tuple[int, int], tuple[int, str]] = LRU(1 << 14)


def _bag(record: Record, stems: Callable[[str], str]) -> tuple[int, str]:
    """A document's length in terms and its terms as one string, each between two
    spaces (" a  b  a "), so `str.count(" a ")` is its frequency.

    Kept per text (by its length and hash), so a text ranked once (unchanged
    since, or the same revision) is not tokenized again. 16,384 texts hold about
    one project's scope at 100,000 memories. The string is the compact form: after
    20 cold recalls at 100,000, a Counter per text keyed by the text held 52 MB
    (tracemalloc), these 17 MB; over those recalls the serving process grew 115 MB
    before, 83 MB with these and `lexical`'s own stems (the rest is what reading the
    scope's rows leaves behind). Ranking time is the same.
    """
    text = " ".join((record.name, record.description, record.body, " ".join(record.tags)))
    key = (len(text), hash(text))
    bag = _BAGS.get(key)
    if bag is None:
        tokens = terms(text, stems)
        bag = (len(tokens), f" {'  '.join(tokens)} " if tokens else "")
        _BAGS.put(key, bag)
    return bag


def lexical(records: Sequence[Record], query: str, *, limit: int) -> list[Candidate]:
    """BM25F (one stream) of `records` for `query`, best first, ties by id, score > 0.

    The documents' words are stemmed through a cache of this ranking's own (Porter
    is pure Python: each distinct word once), not the process's: the words of a
    scope read once would sit there among the objects the ranking frees and keep
    the memory those held. At 100,000 memories, 20 cold recalls grew the process
    57 MB through the shared cache (no kept terms), 17 MB through their own."""
    stems = lru_cache(maxsize=None)(porter)
    bags = [(r.id, _bag(r, stems)) for r in records]
    wanted = {t: f" {t} " for t in dict.fromkeys(terms(" ".join(words(query))))}
    dfs = dict.fromkeys(wanted, 0)
    matched = []
    for doc_id, (length, text) in bags:
        found = {t: n for t, key in wanted.items() if (n := text.count(key))}
        if found:
            for t in found:
                dfs[t] += 1
            matched.append((doc_id, length, found))
    weights = bm25.term_weights(dfs, len(bags), PARAMS)
    avglen = sum(length for _, (length, _) in bags) / len(bags) if bags else 0.0
    scored = [
        (bm25.score([found], [length], weights, avglen=avglen, params=PARAMS), doc_id)
        for doc_id, length, found in matched
    ]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [Candidate(i, n, v) for n, (v, i) in enumerate(scored[:limit], 1)]


def ranked_hits(
    req: RecallRequest | SearchRequest, planes: Planes, where: Filter, *, depth: int, k: int
) -> tuple[list[tuple[Hit, Record]], int]:
    """The scope's memories as of the request's instants, ranked: (hit, record) pairs
    best first (an empty query: newest first), and how many matched."""
    known = planes.store.as_of(where=where, valid_at=req.as_of, recorded_at=req.recorded_as_of)
    now = planes.clock()
    query = clean(req.query)
    if not words(query):
        known = sorted(known, key=lambda r: (r.updated or now, r.id), reverse=True)
        ordered = [(r, Candidate(r.id, n, 0.0)) for n, r in enumerate(known[:depth], 1)]
        source = "browse"
    else:
        by_id = {r.id: r for r in known}
        ordered = [(by_id[c.id], c) for c in lexical(known, query, limit=depth)]
        source = "fts"
    out = []
    for record, cand in ordered:
        if not admits(where, record):  # the backstop guard, as on the normal path
            continue
        prov = (Provenance(source, cand.rank, cand.score),)
        out.append((to_hit(record, now=now, source=source, score=1 / (k + cand.rank),
                           sources=prov), record))  # fmt: skip
    return out, len(out)


def debug(req: RecallRequest | SearchRequest, started: float, found: int) -> dict[str, object]:
    return {
        "tier": TIER,
        "as_of": req.as_of.isoformat() if req.as_of else None,
        "recorded_as_of": req.recorded_as_of.isoformat() if req.recorded_as_of else None,
        "found": found,
        "timings_ms": {"total": round((time.perf_counter() - started) * 1000, 3)},
    }


def search(
    req: SearchRequest, *, planes: Planes, where: Filter, limit: int, depth: int, k: int
) -> SearchResult:
    """Search as of the request's instants (no snippets: the text plane holds the present)."""
    started = time.perf_counter()
    hits = [h for h, _ in ranked_hits(req, planes, where, depth=depth, k=k)[0]]
    if req.since is not None:
        hits = [h for h in hits if h.updated is not None and h.updated >= req.since]
    timings = {"total": round((time.perf_counter() - started) * 1000, 3)}
    page = tuple(hits[req.offset : req.offset + limit])
    return SearchResult(page, (COLD_ONLY,), timings, False, len(hits), req.offset)


def recall_pack(
    req: RecallRequest, *, planes: Planes, where: Filter, config: RecallConfig, started: float
) -> ContextPack:
    """Recall as of the request's instants: ranked, then packed as the normal path packs."""
    budget, limit = req.budget or config.budget, req.limit or config.limit
    ranked, found = ranked_hits(
        req, planes, where, depth=req.k or config.depth, k=req.rrf_k or config.k
    )
    packed = pack(
        ranked[:limit], budget=budget, counter=planes.tokens, detail=req.detail,
        item_tokens=config.item_cap(budget), warnings=(COLD_ONLY,), total_found=found,
        associated=req.include_associated, pack_id=req.pack_id,
    )  # fmt: skip
    linked: tuple[Hit, ...] | None = () if req.include_associated else None
    info = debug(req, started, found) if req.debug else None
    return ContextPack(
        packed.items, packed.omitted, packed.tokens, budget, packed.warnings, info, req.detail,
        found, linked, req.pack_id,
    )  # fmt: skip
