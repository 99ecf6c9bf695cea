"""What agents get back: the documented shape of every reply.

The replies themselves are built by `console/replies.py` (and, for a pack,
`recall.agent.pack_view`) as plain JSON, sanitized for agents; these models
describe them for the OpenAPI page and the MCP tools' output schemas, and the
tests check every reply against its model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema

from console.schemas.common import ItemKind, Source


class Reply(Schema):
    """Replies are documented strictly: a field the code sends is a field listed here."""

    model_config = {"extra": "forbid"}


# Said only when not the default (console.replies.UNSAID): absent means the default.
Starred = Annotated[bool, Field(description="starred by a person; absent: not starred")]
Active = Annotated[
    bool,
    Field(
        description="false when archived or superseded (as of `as_of`, if given); absent: active"
    ),
]


class ProvenanceOut(Reply):
    channel: str = Field(description="fts | semantic | graph | identifier | ...")
    rank: int = Field(description="1-based rank within the channel")
    raw: float = Field(
        description="BM25 for fts, cosine for semantic, seed score x edge weights x decay for graph"
    )
    hops: int | None = Field(None, description="graph: edges from the seed")
    path: list[str] | None = Field(None, description="graph: ids from the seed to this item")


class AttributionOut(Reply):
    source: str | None = Field(None, description="how it was learnt: user_stated, ...")
    agent: str | None = Field(None, description="the agent that wrote it")
    session: str | None = Field(None, description="the session it was written in")


class GraphLinkOut(Reply):
    id: str
    name: str
    rel: str = Field(description="the edge's type")
    weight: float = Field(description="the edge's weight, 0-1")
    reverse: bool | None = Field(None, description="true: the edge points at the item")


class PackItem(Reply):
    """An item leaves out what would say nothing: an absent value, a default (below)
    and the pack's project, which the envelope says once."""

    id: str
    item: ItemKind | Literal["digest"] = Field("memory", description="absent: a memory")
    name: str
    kind: str | None = Field(None, description="constraint, fact, ... (memories)")
    title: str | None = Field(None, description="a note's title, when it differs from its name")
    project: str | None = Field(
        None, description="project slug; null = global; absent: the pack's `project`"
    )
    text: str | None = Field(None, description="the memory's text (detail full)")
    truncated: bool | None = Field(None, description="true when the text was cut to fit")
    description: str | None = Field(None, description="one line (detail index)")
    valid_from: str | None = Field(
        None,
        description="when it became true (ISO 8601, UTC, to the second rounded up: as_of "
        "it finds this version)",
    )
    invalid_at: str | None = Field(
        None, description="when it stopped being true (superseded or archived; as valid_from)"
    )
    occurred_at: str | None = Field(None, description="when the event happened, if known")
    superseded_by: str | None = Field(
        None, description="a past version (include_history, as_of): the id that replaced it"
    )
    attribution: AttributionOut | None = Field(
        None, description="its source, agent and session (those known)"
    )
    graph: list[GraphLinkOut] | None = Field(
        None, description="with include_graph: its 1-hop neighbours in scope"
    )
    favorite: bool | None = Field(None, description="starred by a person")
    source: Source = Field("fused", description="what found it; absent: several channels")
    score: float = Field(description="its rank's score, to 3 significant digits")
    worth: float | None = Field(
        None,
        description="Memory Worth: (helpful + 1) / (helpful + harmful + 2) (memories at "
        "detail full; absent: 0.5, as before any verdict)",
    )
    depth: int | None = Field(None, description="associated items: hops from `via`")
    via: str | None = Field(None, description="associated items: the item it is linked from")
    rel: str | None = Field(None, description="associated items: the type of the last edge")
    covers: int | None = Field(None, description="a digest: how many rows it stands for")
    tokens: int = Field(description="what this item costs in the reply")
    sources: list[ProvenanceOut] | None = Field(None, description="with debug only")


class ContextPackOut(Reply):
    project: str | None = Field(
        None,
        description="the recall's project: an item of it leaves its `project` out; absent when "
        "the pack holds no item",
    )
    items: list[PackItem]
    associated: list[PackItem] | None = Field(
        None,
        description="with include_associated: memories linked to the items, never one of them",
    )
    omitted: int = Field(ge=0, description="ranked hits within the limit that did not fit")
    total_found: int | None = Field(
        None, ge=0, description="distinct in-scope hits the channels found, before limit and budget"
    )
    tokens: int = Field(
        ge=0, description="tokens of this whole reply as sent (compact JSON, debug excluded)"
    )
    budget: int
    warnings: list[str] = Field(description="degraded channels, never silent")
    pack_id: str | None = Field(
        None, description="this recall's id, for memory_feedback (recorded recalls only)"
    )
    debug: dict[str, Any] | None = Field(None, description="ranks, timings, config (unbudgeted)")


class VerdictOut(Reply):
    id: str
    used: bool
    helpful: bool
    harmful: bool
    worth: float = Field(description="the memory's Memory Worth after this feedback")


class FeedbackOut(Reply):
    pack_id: str
    items: list[VerdictOut]


class SearchHitOut(Reply):
    """A hit leaves out what it would say twice or not at all: a title that is its
    name (a memory's always is), a time it does not have, an attribution unknown, and
    `favorite`, `active` and `source` at their defaults (below)."""

    id: str
    item: ItemKind
    name: str
    title: str | None = Field(None, description="a note's title, when it differs from its name")
    kind: str | None = Field(None, description="constraint, fact, ... (memories; null: a note)")
    project: str | None
    description: str
    snippet: str | None = Field(
        description="plain text around the match (no markup); null when the match is "
        "in what the title or description already shows"
    )
    similarity: float | None = Field(description="cosine, on hits the semantic channel found")
    source: Source = Field("fused", description="what found it; absent: several channels")
    score: float
    favorite: Starred = False
    active: Active = True
    updated: str | None
    valid_from: str | None = Field(None, description="when it became true (memories)")
    invalid_at: str | None = Field(None, description="when it stopped being true, if it did")
    occurred_at: str | None = Field(None, description="when the event happened, if known")
    attribution: AttributionOut | None = Field(
        None, description="its source, agent and session (those known)"
    )


class SearchOut(Reply):
    hits: list[SearchHitOut]
    total: int = Field(
        description="hits found within the depth the search read (at least the page and one "
        "more when there is one): a floor, not a census"
    )
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")
    next_cursor: str | None = Field(
        description="pass as cursor for the next page (instead of next_offset: it meets each "
        "hit once even when memories change between pages); null on the last"
    )
    warnings: list[str]


class AssociationOut(Reply):
    src: str = Field(description="the memory it links from")
    dst: str = Field(description="the memory it links to")
    rel: str = Field(description="its type")
    weight: float = Field(description="0-1")
    created: bool = Field(
        description="false: an association of this type existed; its weight is set"
    )


class DissociatedOut(Reply):
    src: str
    dst: str
    removed: int = Field(description="associations removed (0: there was none)")


class GraphNodeOut(Reply):
    id: str
    name: str
    kind: str
    project: str | None
    description: str
    hops: int = Field(description="edges from the start (0: the start itself)")
    through: list[str] | None = Field(
        None,
        description="ids of the memories the path goes through, between the start and this "
        "one (left out at one hop)",
    )
    rels: list[str] = Field(
        description="the type of each edge from the start (~ marks an incoming one)"
    )
    score: float = Field(description="product of the edge weights x decay per hop after the first")


class GraphOut(Reply):
    start: GraphNodeOut
    nodes: list[GraphNodeOut] = Field(description="best path first; never the start")


class TextOut(Reply):
    text: str = Field(description='the block to place in context ("" when there is none)')
    ids: list[str] = Field(description="the memories it shows")
    tokens: int = Field(description="what the text costs")
    warnings: list[str] = Field(
        default_factory=list, description="why the text is empty, when the budget was why"
    )


class MemoryOut(Reply):
    """A memory leaves out `favorite`, `active`, `expires_at`, `worth`, `session_id`,
    `session_order`, `occurred_at`, `invalid_at` and `superseded_by` at their defaults
    (below), as a search hit and a recall item do."""

    id: str
    project: str | None
    kind: str
    name: str
    description: str
    body: str = Field("", description='the body (a list with detail "index" leaves it out)')
    body_chars: int | None = Field(
        None,
        description='with detail "index", or a body cut to a budget: the whole body\'s '
        "length (memory_read without a budget gives it)",
    )
    truncated: bool | None = Field(None, description="the body was cut to the budget")
    tags: list[str]
    importance: float
    agent_id: str
    session_id: str = Field("", description="its conversation; absent: none")
    session_order: int | None = Field(None, description="its turn in the session; absent: none")
    occurred_at: datetime | None = Field(None, description="when it happened; absent: not given")
    source: str
    valid_from: datetime
    invalid_at: datetime | None = Field(
        None, description="when it stopped being true (archived, superseded); absent: still true"
    )
    superseded_by: str | None = Field(None, description="its replacement's id; absent: none")
    favorite: Starred = False
    active: Active = True
    created: datetime
    updated: datetime
    expires_at: datetime | None = Field(
        None, description="when it leaves every read; absent: never (it does not expire)"
    )
    worth: float = Field(
        0.5,
        description="Memory Worth from agents' feedback: (helpful + 1) / (helpful + harmful "
        "+ 2); absent: 0.5, as before any verdict",
    )


class DedupHintOut(Reply):
    id: str
    name: str
    description: str
    project: str | None
    similarity: float = Field(description="cosine to the memory (or note) just written")
    advice: str = Field(description="what to do about it")


class MemoryUpdateOut(MemoryOut):
    dedup_hint: DedupHintOut | None = Field(
        description="when the edit changed the name or text: a very similar active memory "
        "in scope, if any (advisory)"
    )
    warnings: list[str] = Field(
        description="lines of this edit agents will read as withheld; indexing deferred"
    )


class MemoryWriteOut(Reply):
    memory: MemoryOut
    created: bool = Field(description="false: the same text was already stored; this is it")
    dedup_hint: DedupHintOut | None = Field(
        description="a very similar active memory in scope, if any (advisory)"
    )
    warnings: list[str] = Field(description="e.g. indexing deferred; the write committed")


class BatchItemOut(Reply):
    id: str
    name: str
    created: bool
    dedup_hint: DedupHintOut | None = Field(
        description="a very similar active memory in scope, another item of this batch "
        "included (advisory; batches of up to 20 items, see warnings)"
    )


class BatchOut(Reply):
    items: list[BatchItemOut]
    created: int
    existing: int
    warnings: list[str] = Field(
        description="e.g. memories.N: its text was already stored under another name; "
        "indexing deferred"
    )


class MemoryPage(Reply):
    memories: list[MemoryOut]
    next_cursor: str | None = Field(description="pass as cursor for the next page")
    warnings: list[str] = Field(description="a budget that fits no memory of the page says so")


class DeletedOut(Reply):
    id: str
    deleted: bool


class NoteOut(Reply):
    id: str
    project: str | None
    title: str
    name: str = Field(description="its slug, as a search hit and a recall item name it")
    description: str
    body: str = Field("", description='the body (a list with detail "index" leaves it out)')
    body_chars: int | None = Field(
        None,
        description='with detail "index", or a body cut to a budget: the whole body\'s '
        "length in characters",
    )
    truncated: bool | None = Field(None, description="the body was cut to the budget")
    tags: list[str]
    source_url: str
    favorite: Starred = False
    created: datetime
    updated: datetime


class NoteWrittenOut(NoteOut):
    dedup_hint: DedupHintOut | None = Field(
        description="a very similar note in scope, if any (advisory); on an edit, only "
        "when it changed the title, name or text"
    )
    existing: bool = Field(
        False,
        description="the project held a note of this very title and body: this is that "
        "note, nothing was written (200, not 201), as a memory written twice",
    )


class NotesOut(Reply):
    notes: list[NoteOut]


class FavoriteOut(Reply):
    id: str
    favorite: bool


class ProjectOut(Reply):
    slug: str
    name: str
    description: str
    isolation: str


class ProjectsOut(Reply):
    projects: list[ProjectOut]
