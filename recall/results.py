"""What the engine returns: hits, context packs, search results, blocks of text.

Frozen, slotted dataclasses with plain values, so the API, MCP and the console
serialise them without touching the engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from recall.types import MEMORY, Record
from recall.walks import Walk
from recall.worth import worth_of

# What found a hit: one channel's name (every channel in `recall.channels`), "fused"
# when several did, "browse" without a query, "digest" for an altitude digest.
SOURCES = ("semantic", "fts", "fused", "graph", "browse", "identifier", "digest", "session")


@dataclass(frozen=True, slots=True)
class Provenance:
    """How one channel saw a hit: its 1-based rank there and its raw score.

    `raw` is BM25 for "fts", cosine similarity for "semantic", the path score
    (seed score x edge weights x decay per hop) for "graph", and the lane (0
    exact id, 1 exact name, 2 id prefix) for "identifier". A "graph" hit also
    carries its `hops` from the seed and the `path` (seed first, the hit last).
    """

    channel: str
    rank: int
    raw: float
    hops: int | None = None
    path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphLink:
    """One 1-hop neighbour of a hit (`include_graph`, seed 003's `graph`): the
    memory at the other end of an edge, the edge's type and weight, and
    `reverse` when the edge points at the hit."""

    id: str
    name: str
    rel: str
    weight: float
    reverse: bool = False


@dataclass(frozen=True, slots=True)
class Hit:
    """One result, the same JSON contract for agents and people.

    `kind` is the item ("memory" | "note"); `memory_kind` the memory's kind
    (constraint, fact, ...; "" for notes). `source` is "fused" when both
    channels found the hit, else the one channel (or lane) that did. Search
    sets `snippet` (raw, with \\x01/\\x02 sentinels) and `snippet_html` on FTS
    hits and `similarity` (raw cosine) on every hit the semantic leg found;
    Recall sets neither, but sets `tokens` and `sources`, and, packed for an
    agent, `text` (sanitized, maybe cut short: `truncated`).

    Seed 003's hit shape: `valid_from` / `invalid_at` (valid time),
    `origin`, `agent_id` and `session_id` (the attribution: how the memory
    was learnt, by which agent, in which session) and, when asked
    (`include_graph`), `graph`: its 1-hop neighbours in scope.
    """

    kind: str
    id: str
    name: str
    title: str
    description: str
    project: str | None
    age: str
    source: str
    score: float
    snippet: str | None = None
    snippet_html: str | None = None
    similarity: float | None = None
    favorite: bool = False
    tokens: int | None = None
    sources: tuple[Provenance, ...] = ()
    updated: datetime | None = None
    memory_kind: str = ""
    active: bool = True
    text: str | None = None
    truncated: bool = False
    valid_from: datetime | None = None
    occurred_at: datetime | None = None
    session_id: str = ""
    depth: int | None = None  # an associated item: hops from the main item `via`
    via: str | None = None
    rel: str | None = None  # an associated item: the type of the edge that reached it
    invalid_at: datetime | None = None
    superseded_by: str | None = None  # a past version (include_history, as_of): its successor
    origin: str = ""  # the memory's source: user_stated, agent_inferred, ...
    agent_id: str = ""
    graph: tuple[GraphLink, ...] | None = None
    covers: int | None = None  # a digest item: how many rows it covers (recall/altitude.py)
    worth: float | None = None  # a memory's Memory Worth (recall/worth.py); None for notes
    expires_at: datetime | None = None  # not shown: the hot tier keeps a pack only until then


@dataclass(frozen=True, slots=True)
class ContextPack:
    """Recall's reply: hits packed into a token budget (`tokens <= budget`).

    `tokens` counts the whole reply as an agent receives it (the compact JSON
    of `recall.agent.pack_view`, envelope included, `debug` excluded);
    `omitted` counts the ranked hits (within the limit) that did not fit;
    `warnings` names every degraded channel; `debug` is set when asked.
    `detail` is "full" (items carry their text) or "index" (descriptions).
    `total_found` counts the distinct in-scope hits the channels found
    (before the limit and the budget). `associated` (None unless asked) holds
    memories linked to the packed items, never one of them, within the same
    budget (Dakera's associated memories).
    """

    items: tuple[Hit, ...]
    omitted: int
    tokens: int
    budget: int
    warnings: tuple[str, ...] = ()
    debug: dict[str, object] | None = None
    detail: str = "full"
    total_found: int | None = None
    associated: tuple[Hit, ...] | None = None
    pack_id: str | None = None  # the recall's id for feedback (counted in `tokens`)
    project: str | None = None  # the recall's project: its items leave it out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Search's reply: every hit up to the limit, no budget.

    `timings` holds milliseconds per stage (embed, each channel, fusion,
    hydrate, total); `embedded` says whether the query was embedded. `hits`
    is the page from `offset`; `total` counts every hit found (the channels
    read deep enough for the page, so it is a floor when it reaches their depth);
    `more`: a channel stopped at its depth, so hits may follow past `total` (a
    later page reads deeper); `next_offset` and `cursor` ask for the next page
    (None on the last: a page short of the limit, or the deepest a search reads),
    the cursor without meeting a hit twice (`recall.walks`).
    """

    hits: tuple[Hit, ...]
    warnings: tuple[str, ...] = ()
    timings: Mapping[str, float] | None = None
    embedded: bool = False
    total: int = 0
    offset: int = 0
    more: bool = False
    next_offset: int | None = None
    cursor: str | None = None
    # Where the walk stood before this page's first hit and the ranking it read: what a
    # shorter page's cursor goes on from (`recall.search.within`); None: no next page.
    start: Walk | None = None
    ranked: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Briefing:
    """The session-start block, the ids it actually rendered, its token cost, and why
    it is empty when the budget was the reason."""

    text: str
    ids: tuple[str, ...]
    tokens: int
    warnings: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()  # the memories whose lines did not fit, in block order


@dataclass(frozen=True, slots=True)
class PromptResult:
    """The per-prompt recall block ("" when nothing clears the floors) and its ids;
    `warnings` says so when memories matched but the budget held none of them."""

    text: str
    ids: tuple[str, ...]
    tokens: int = 0
    warnings: tuple[str, ...] = ()


def age(updated: datetime | None, now: datetime) -> str:
    """A compact age: "now", "5min", "3h", "2d", "4mo", "1y" ("" when unknown).

    Under a minute is "now": "0m" beside "1mo" read as a month to people, and
    so did "1m" to an agent (minutes are "min").
    """
    if updated is None:
        return ""
    seconds = max(0.0, (now - updated).total_seconds())
    if seconds < 60:
        return "now"
    if seconds < 3600:
        return f"{int(seconds // 60)}min"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h"
    days = int(seconds // 86400)
    if days < 30:
        return f"{days}d"
    if days < 365:
        return f"{days // 30}mo"
    return f"{days // 365}y"


# A line's block marks: a heading's #s, a quote's >, a list item's -, * or + (each
# followed by a space: "-40 °C" and "#4512" are text, and so is **bold**).
_BLOCK_MARK = re.compile(r"(?:#{1,6}(?=\s)|>|[-*+](?=\s))\s*")
_RULE = re.compile(r"[-*_=#>\s]+")  # a rule or an empty heading: no text
LEAD_CHARS = 300  # of a body, enough for its lead (`lead`'s default limit, twice)


def lead(description: str, body: str, limit: int = 150) -> str:
    """What stands for an item in a one-line list: its description, else the first
    line of its body with its block marks dropped (a heading's, a quote's, a list
    item's; a sign or an emphasis is text), cut to `limit` characters (an
    agent's index line or briefing line said nothing for a memory written without a
    description)."""
    if description.strip():
        return description
    for line in body.splitlines():
        line = line.strip()
        while mark := _BLOCK_MARK.match(line):
            line = line[mark.end() :]
        if line and not _RULE.fullmatch(line):
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def to_hit(
    record: Record,
    *,
    now: datetime,
    source: str,
    score: float,
    sources: tuple[Provenance, ...] = (),
    snippet: str | None = None,
    snippet_html: str | None = None,
    similarity: float | None = None,
) -> Hit:
    """A hydrated record as a Hit (tokens unset; snippet and similarity as given)."""
    return Hit(
        kind=record.item,
        id=record.id,
        name=record.name,
        title=record.title or record.name,
        description=lead(record.description, record.body),
        project=record.project,
        age=age(record.updated, now),
        source=source,
        score=score,
        snippet=snippet,
        snippet_html=snippet_html,
        similarity=similarity,
        favorite=record.favorite,
        sources=sources,
        updated=record.updated,
        memory_kind=record.kind if record.item == MEMORY else "",
        active=record.active,
        valid_from=record.valid_from,
        occurred_at=record.occurred_at,
        session_id=record.session_id,
        invalid_at=record.invalid_at,
        superseded_by=record.superseded_by,
        origin=record.source,
        agent_id=record.agent_id,
        worth=worth_of(record) if record.item == MEMORY else None,
        expires_at=record.expires_at,
    )
