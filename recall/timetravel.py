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
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from recall import background, bm25, passages
from recall.config import RecallConfig
from recall.errors import QueryError
from recall.packing import pack
from recall.planes import Planes
from recall.query import MIN_WORD_CHARS, WORD, clean, fold, kept, porter, stem, words
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


def terms(text: str) -> list[str]:
    """A text's words (2+ characters, as `recall.query.words` keeps them) as lower-cased,
    folded Porter stems, in order, repeats kept: a query's terms. A ranking reads its
    documents through `_Vocabulary`, which counts the same."""
    found = _WORD.findall(fold(text.lower()))  # long words pass without a call of `kept` each
    return [stem(w) for w in found if len(w) >= MIN_WORD_CHARS or kept(w)]


class _Vocabulary:
    """What one ranking has learnt of the words its documents use: which are no
    terms (`dropped`: one character, not an ideograph) and which stem to a query
    term (`hits`: word -> term). Each distinct word is stemmed once per ranking
    (Porter is pure Python), not through the process's cache (`recall.query.stem`):
    a scope's words read once would sit there and keep the memory the ranking
    frees. A document is read with C-level set operations on its words, not a
    call per word."""

    def __init__(self, wanted: Collection[str]) -> None:
        self.wanted = wanted
        self.seen: set[str] = set()
        self.dropped: set[str] = set()
        self.hits: dict[str, str] = {}

    def learn(self, new: Iterable[str]) -> None:
        for word in new:
            self.seen.add(word)
            if not kept(word):
                self.dropped.add(word)
            elif (term := porter(word)) in self.wanted:
                self.hits[word] = term

    def read(self, record: Record) -> tuple[int, dict[str, int]]:
        """The record's length in terms and how often it says each query term: what
        `terms` of its text would give, counted."""
        text = " ".join((record.name, record.description, record.body, " ".join(record.tags)))
        found = _WORD.findall(fold(text.lower()))
        distinct = set(found)
        if new := distinct - self.seen:
            self.learn(new)
        length = len(found) - sum(found.count(w) for w in distinct & self.dropped)
        counts: dict[str, int] = {}
        for word in distinct & self.hits.keys():
            term = self.hits[word]
            counts[term] = counts.get(term, 0) + found.count(word)
        return length, counts


def lexical(records: Sequence[Record], query: str, *, limit: int) -> list[Candidate]:
    """BM25F (one stream) of `records` for `query`, best first, ties by id, score > 0.

    Nothing is kept between rankings: at 100,000 memories a cache of each text's
    terms (16,384 texts, about one project's scope) made a cold recall no faster
    across projects (p50 874 ms with it, 847 on first sight) and left the serving
    process 60 MB larger after 20 of them; read through `_Vocabulary`, a scope's
    15,000 memories are ranked in about half the time their tokenizing took."""
    wanted = dict.fromkeys(terms(" ".join(words(query))))
    vocabulary = _Vocabulary(wanted)
    read = [(r.id, *vocabulary.read(r)) for r in records]
    dfs = dict.fromkeys(wanted, 0)
    for _, _, counts in read:
        for t in counts:
            dfs[t] += 1
    avglen = sum(length for _, length, _ in read) / len(read) if read else 0.0
    known = background.term_frequencies(words(query), terms)  # the scope's idf prior
    weights = bm25.term_weights(dfs, len(read), PARAMS, background.Prior(known, avglen))
    scored = [
        (bm25.score([counts], [length], weights, avglen=avglen, params=PARAMS), doc_id)
        for doc_id, length, counts in read
        if counts
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
    if isinstance(req, RecallRequest) and req.include_history and req.as_of is not None:
        ordered = then_first(ordered, req.as_of)
    out = []
    for record, cand in ordered:
        if not admits(where, record):  # the backstop guard, as on the normal path
            continue
        prov = (Provenance(source, cand.rank, cand.score),)
        out.append((to_hit(record, now=now, source=source, score=1 / (k + cand.rank),
                           sources=prov), record))  # fmt: skip
    return out, len(out)


def then_first(
    ordered: Sequence[tuple[Record, Candidate]], at: datetime
) -> list[tuple[Record, Candidate]]:
    """`ordered` with, in each chain of versions it holds (joined by `superseded_by`),
    the version valid at `at` in the chain's best place and the others after it,
    newest first: a history asked as of an instant reads what was true then first,
    as the present one reads what is true now first (`scoring.current_first`). Before,
    a version retired a month before `at` ranked above the one valid then."""
    ids = {record.id for record, _ in ordered}
    head: dict[str, str] = {}

    def root(doc: str) -> str:
        while head.get(doc, doc) != doc:
            doc = head[doc]
        return doc

    for record, _ in ordered:
        successor = record.superseded_by
        if successor in ids and root(successor) != root(record.id):  # a loop ends too
            head[root(record.id)] = root(successor)
    places: dict[str, list[int]] = {}
    for n, (record, _) in enumerate(ordered):
        places.setdefault(root(record.id), []).append(n)
    out = list(ordered)
    oldest = datetime.min.replace(tzinfo=at.tzinfo)
    for chain in places.values():
        members = sorted(
            (ordered[n] for n in chain),
            key=lambda pair: (
                not valid_at(pair[0], at),
                -(pair[0].valid_from or oldest).timestamp(),
            ),
        )
        for n, member in zip(chain, members, strict=True):
            out[n] = member
    return out


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
        associated=req.include_associated, pack_id=req.pack_id, home=req.project,
        focus=passages.worded(words(req.query)) if req.query else None,
    )  # fmt: skip
    linked: tuple[Hit, ...] | None = () if req.include_associated else None
    info = debug(req, started, found) if req.debug else None
    return ContextPack(
        packed.items, packed.omitted, packed.tokens, budget, packed.warnings, info, req.detail,
        found, linked, req.pack_id, req.project,
    )  # fmt: skip
