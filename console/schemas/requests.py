"""What agents send: one schema per call, shared by the REST API and the MCP tools.

The same model validates a REST body (or query string) and an MCP tool's
arguments, so one rule gives one answer on both surfaces.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field
from pydantic import AliasChoices, ConfigDict, StringConstraints, field_validator, model_validator

from console.models import (
    AGENT_SOURCE,
    NEW_SLUG_PATTERN,
    RESERVED_SLUGS,
    SOURCE_URL_RE,
    reserved_slug_message,
)
from console.schemas.common import (
    Altitude,
    AssociatedCap,
    Body,
    Budget,
    Candidates,
    ChannelName,
    DateTime,
    Depth,
    Detail,
    Entity,
    GraphCap,
    GraphSeeds,
    Hops,
    Instant,
    Isolation,
    MemoryKind,
    Name,
    Order,
    Params,
    RecallLimit,
    Routing,
    RrfK,
    Scope,
    SessionCap,
    SessionTurns,
    Slug,
    Tag,
    TextBudget,
    Ttl,
    Unit,
    Weight,
    WindowMinutes,
    WorthWeight,
)
from console.selectors import CURSOR_PATTERN
from recall import sanitize
from recall.config import (
    DEFAULT_BUDGET,
    DEFAULT_RECALL_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    MAX_BUDGET,
    MAX_SEARCH_DEPTH,
    MAX_SEARCH_LIMIT,
    MIN_BUDGET,
    MIN_TEXT_BUDGET,
)
from recall.graph import REL_RE
from recall.types import RELATED
from recall.walks import CURSOR_PATTERN as SEARCH_CURSOR

Rel = Annotated[str, Field(pattern=REL_RE.pattern, description="a-z, 0-9, _ and -")]
# Stripped first: Python's `$` (schemathesis's generator) admits a final newline.
SourceUrl = Annotated[
    str,
    StringConstraints(strip_whitespace=True, max_length=200, pattern=f"^$|{SOURCE_URL_RE.pattern}"),
]
PROJECT = "one of the token's projects (default: its only one)"
AgentId = Annotated[str, Field(min_length=1, max_length=120)]
AS_OF = "valid time: only what was true at this instant (ISO 8601 with a zone)"
RECORDED_AS_OF = "transaction time: what was known at this instant (ISO 8601 with a zone)"
RECORD = "record what was returned (feeds usage ranking and history); false for evaluations"

# A memory's kind is `kind` in every request and reply; replies said `memory_kind`
# in recall items, search hits and graph nodes until 2026-12, so an agent that read
# it there may send it back: accepted as `kind` (the schema names `kind` only).
KIND_NAMES = AliasChoices("kind", "memory_kind")
# A note's slug is its `name`, as search hits, recall items and dedup hints say it;
# notes_read and notes_write said `slug` until 2026-12: still taken as `name`.
NOTE_NAMES = AliasChoices("name", "slug")
TAGS_SAID = "labels, stored lower-cased without a leading #"


class RecallIn(Body):
    query: str = Field(
        "", max_length=4000, description="what the agent needs; may be empty with `kind`"
    )
    project: Slug | None = Field(None, description=PROJECT)
    # None: the configured value (Settings, `recall_config`): a default here was sent as
    # if the agent had named it, so the setting never applied.
    budget: Budget | None = Field(
        None,
        description="tokens the whole reply may take, JSON envelope included (debug "
        f"excluded); default: the configured one ({DEFAULT_BUDGET} unless changed)",
    )
    limit: RecallLimit | None = Field(
        None,
        description="ranked hits considered; the budget decides how many fit; default: the "
        f"configured one ({DEFAULT_RECALL_LIMIT} unless changed)",
    )
    detail: Detail = Field(
        "full", description="full: each item's text; index: name and description only"
    )
    scope: Scope = Field("all", description="memories, notes, or both")
    kind: MemoryKind | None = Field(
        None, validation_alias=KIND_NAMES, description="only this memory kind (browse if no query)"
    )
    rrf_k: RrfK | None = Field(None, description="RRF constant (when fusion is rrf)")
    channel_weights: dict[ChannelName, Weight] | None = Field(
        None,
        description="weights by channel over the configured ones; 0 turns a channel off, "
        'e.g. {"fts": 1, "semantic": 1, "graph": 0}',
    )
    debug: bool = Field(False, description="add per-channel ranks, timings and config (unbudgeted)")
    record: bool = Field(True, description=RECORD)
    # The graph channel (fabriq Hops / GraphSeeds / GraphReverse); null = the setting.
    hops: Hops | None = Field(
        None, description="edges the graph channel follows from each seed, 0-3 (default 1; 0: off)"
    )
    graph_seeds: GraphSeeds | None = Field(
        None, description="top memories of the other channels the graph expands from (default 8)"
    )
    graph_reverse: bool | None = Field(
        None, description="also follow incoming edges (default false)"
    )
    graph_min_weight: Unit | None = Field(
        None, description="edges lighter than this are not followed, 0-1 (default 0)"
    )
    graph_cap: GraphCap | None = Field(
        None, description="most memories the graph channel adds (default 10)"
    )
    # Associated memories (Dakera): a separate list, within the same budget.
    include_associated: bool = Field(
        False,
        description="add `associated`: memories linked to the items (never one of them), "
        "each with its depth",
    )
    associated_cap: AssociatedCap | None = Field(
        None, description="most associated memories, 0-10 (default 10)"
    )
    associated_depth: Depth | None = Field(None, description="hops from the items, 1-3 (default 1)")
    associated_min_weight: Unit | None = Field(
        None, description="edges lighter than this are not followed, 0-1 (default 0)"
    )
    # Routing (Dakera CE-12) and fabriq's per-request knobs; null = the setting.
    routing: Routing | None = Field(
        None,
        description="auto: by the query's class (the default); vector, bm25 (never embeds) "
        "or hybrid: those channels at the configured weights",
    )
    k: Candidates | None = Field(
        None, description="candidates per channel, 1-200 (default: the setting, 50)"
    )
    strict: bool = Field(False, description="a channel that fails is an error (503), not a warning")
    entities: list[Entity] | None = Field(
        None,
        min_length=1,
        max_length=2,
        description='what to recall: ["memories"], ["notes"] or both (the list form of scope)',
    )
    # --- session neighbourhood (Dakera 004; recall/neighbourhood.py); null = the setting ---
    session_neighbours: bool | None = Field(
        None,
        description="add the session neighbours of the top episodic hits, ranked below them "
        "(default true)",
    )
    session_window_minutes: WindowMinutes | None = Field(
        None, description="+- minutes by occurred_at around each top hit (default 5)"
    )
    session_turns: SessionTurns | None = Field(
        None, description="+- turns by session order around each top hit (default 2)"
    )
    session_cap: SessionCap | None = Field(
        None, description="most neighbours per top hit (default 10)"
    )
    # --- end session neighbourhood ---
    # Filters (Dakera seed 004), inside every channel's query, before its depth;
    # null or absent = no restriction.
    kinds: list[MemoryKind] | None = Field(
        None, min_length=1, description="only these memory kinds (`kind` is a one-item alias)"
    )
    tags: list[Tag] | None = Field(
        None, max_length=32, description="items carrying all of these tags"
    )
    any_tags: list[Tag] | None = Field(
        None, max_length=32, description="items carrying at least one of these tags"
    )
    agent_id: AgentId | None = Field(None, description="only memories written by this agent")
    session_id: AgentId | None = Field(None, description="only memories of this session")
    min_importance: Unit | None = Field(
        None, description="only memories at least this important, 0-1"
    )
    since: DateTime | None = Field(None, description="created at or after (ISO 8601)")
    until: DateTime | None = Field(None, description="created at or before (ISO 8601)")
    as_of: Instant | None = Field(None, description=AS_OF)
    recorded_as_of: Instant | None = Field(None, description=RECORDED_AS_OF)
    # Seed 003 (memory_recall): its names for limit and kinds, its hit graph, the cold tier.
    top_k: RecallLimit | None = Field(
        None, description="seed 003's name for `limit`; when given, it is the limit"
    )
    types: list[MemoryKind] | None = Field(
        None,
        min_length=1,
        description="seed 003's name for `kinds`; when given, they are the kinds",
    )
    include_graph: bool = Field(
        False, description="each item carries `graph`: its 1-hop neighbours in scope"
    )
    include_history: bool = Field(
        False, description="archived and superseded memories are candidates too (the cold tier)"
    )

    # Altitude (fabriq AltEntity / AltScope / AltTenant / AltAuto; recall/altitude.py)
    altitude: Altitude = Field(
        "entity",
        description="entity: rows; scope: the project's digest, then rows it does not cover; "
        "tenant: the digest of every project you may see; auto: rows when they fit the budget, "
        "else the digest (no digest yet: rows and a warning)",
    )

    # Importance, Memory Worth, recency decay (recall/worth.py, recall/decay.py); null = setting.
    importance_weighted: bool | None = Field(
        None, description="rank more important memories higher (default true)"
    )
    worth_weight: WorthWeight | None = Field(
        None, description="how much Memory Worth (agents' feedback) moves a score, 0-2"
    )
    decay: bool | None = Field(
        None, description="fade older memories by a half-life per kind (default false)"
    )

    @model_validator(mode="after")
    def _aliases(self) -> RecallIn:
        """`top_k` and `types`, when given, are the `limit` and `kinds` the engine reads
        (seed 003's names; given beside the others, they win)."""
        if self.top_k is not None:
            self.limit = self.top_k
        if self.types is not None:
            self.kinds = self.types
        return self


class FeedbackItem(Body):
    # One verdict per item, said in the schema as the validator below enforces it.
    model_config = ConfigDict(
        json_schema_extra={
            "not": {
                "required": ["helpful", "harmful"],
                "properties": {"helpful": {"const": True}, "harmful": {"const": True}},
            }
        }
    )

    id: str = Field(max_length=120, description="an item of the pack: its id or name")
    used: bool = Field(False, description="the agent used it")
    helpful: bool = Field(False, description="it helped")
    harmful: bool = Field(False, description="it misled or was wrong")

    @model_validator(mode="after")
    def _one_verdict(self) -> FeedbackItem:
        """Bad input (422 naming the item), not a conflict with stored state (409)."""
        if self.helpful and self.harmful:
            raise ValueError("helpful and harmful cannot both be true")
        return self


class FeedbackIn(Body):
    """Memory Worth: what the items of one recalled pack were worth to the agent."""

    pack_id: str = Field(max_length=26, description="the `pack_id` of a memory_recall reply")
    items: list[FeedbackItem] = Field(
        min_length=1, max_length=100, description="a verdict per item (ids of that pack)"
    )


class Searching(Params):
    """What every search takes: the words and the projects."""

    q: str = Field("", max_length=4000, description="what to look for")
    project: list[Slug] | None = Field(
        None, description="one project or a list (repeatable); default: the token's projects"
    )

    @field_validator("project", mode="before")
    @classmethod
    def _one_as_a_list(cls, value: Any) -> Any:
        """One project where a list is taken (memory_recall's `project` is one string:
        the same argument made memory_search answer 422)."""
        return [value] if isinstance(value, str) else value


class Paging(Searching):
    """A page of a search: its size and where it starts (an offset, or a cursor)."""

    limit: int = Field(DEFAULT_SEARCH_LIMIT, ge=1, le=MAX_SEARCH_LIMIT, description="hits per page")
    offset: int = Field(
        0, ge=0, le=MAX_SEARCH_DEPTH,
        description="hits to skip (paging); beside a cursor, hits it has not shown to pass over",
    )  # fmt: skip
    cursor: str | None = Field(
        None, pattern=SEARCH_CURSOR,
        description="the next_cursor of the page before (instead of offset): a walk by "
        "cursor meets each hit once, even when memories change between its pages; it belongs "
        "to one search (the same q, projects and filters; the limit may change)",
    )  # fmt: skip
    budget: int | None = Field(
        None, ge=MIN_BUDGET, le=MAX_BUDGET,
        description="tokens the whole reply may take: the page ends at the last hit that "
        "fits and next_offset / next_cursor go on from there (default: no limit; `limit` "
        "decides)",
    )  # fmt: skip


class SearchIn(Paging):
    semantic: bool = Field(True, description="false = full-text only (fastest)")
    since: DateTime | None = Field(None, description="only items updated at or after this")
    record: bool = Field(True, description=RECORD)
    as_of: Instant | None = Field(None, description=AS_OF)
    recorded_as_of: Instant | None = Field(None, description=RECORDED_AS_OF)


class PlaneSearchIn(Paging):
    """One plane alone (full text, or vectors): its own ranking and raw scores."""

    record: bool = Field(True, description=RECORD)


class GraphIn(Body):
    """A walk over the memory graph from one memory (by id or name)."""

    memory: str = Field(
        min_length=1, max_length=120, description="the memory to start from: its id or name"
    )
    project: Slug | None = Field(None, description="where to resolve a name " + f"({PROJECT})")
    hops: Depth = Field(1, description="edges to follow, 1-3")
    reverse: bool = Field(False, description="also follow incoming edges")
    min_weight: Unit = Field(0.0, description="edges lighter than this are not followed, 0-1")
    cap: GraphCap = Field(10, description="most memories returned")


class AssociationFields(Body):
    target: str = Field(
        min_length=1, max_length=120, description="the memory to link to: its id or name"
    )
    rel: Rel = Field(RELATED, description="the association's type, e.g. caused, depends-on")
    weight: Unit = Field(1.0, description="how strongly they are linked, 0-1")


class AssociateIn(AssociationFields):
    id: str = Field(max_length=120, description="the memory to link from: its id or name")


class DissociationFields(Body):
    target: str = Field(min_length=1, max_length=120, description="the linked memory: id or name")
    rel: Rel | None = Field(None, description="only this type (default: every type)")


class DissociateIn(DissociationFields):
    id: str = Field(
        max_length=120, description="the memory the association starts from: its id or name"
    )


class BriefingIn(Body):
    project: Slug | None = Field(None, description=PROJECT)
    agent_type: str = Field("", max_length=120, description="non-empty = a subagent's briefing")
    prompt: str = Field(
        "", max_length=4000,
        description="the task: memories matched from it lead as RELEVANT (a subagent's "
        "briefing is constraints and RELEVANT only; a main agent's keeps pins and index)",
    )  # fmt: skip
    budget: TextBudget | None = Field(
        None,
        description="tokens the text may take (default: the configured 1500); at least "
        f"{MIN_TEXT_BUDGET}: the line saying why when no line fits",
    )


class PromptIn(Body):
    project: Slug | None = Field(None, description=PROJECT)
    prompt: str = Field(max_length=20_000, description="the user's prompt")
    budget: TextBudget | None = Field(
        None,
        description="tokens the block may take (default: the configured 300); at least "
        f"{MIN_TEXT_BUDGET}: the line saying why when no line fits",
    )


def as_read(value: Any) -> Any:
    """Text as an agent reads it (`recall.sanitize.escape_angles`: `<`, `>` and any `&`
    that would decode escaped) back to the text stored: one HTML unescape, of a
    string or of each string in a list."""
    if isinstance(value, str):
        return sanitize.read_back(value)
    if isinstance(value, list):
        return [as_read(v) for v in value]
    return value


class MemoryFields(Body):
    """Fields of a memory an agent may set (on write) or change (on edit / supersede).

    Agents read text with `<`, `>` and any `&` that would decode escaped
    (`recall.sanitize.escape_angles`: one HTML unescape gives the stored text
    back), so the text they write is unescaped once: a memory read, changed
    and written back keeps its text instead of gaining a layer of escapes on
    each edit (`&lt;` read, `&lt;` sent, `<` stored).
    """

    kind: MemoryKind | None = Field(
        None, validation_alias=KIND_NAMES, description="constraint, gotcha, fact, episode, ..."
    )
    name: Name | None = Field(None, description="its slug, e.g. chroma-boot-race")
    description: str | None = Field(None, max_length=150, description="one line, shown in indexes")
    body: str | None = Field(None, max_length=200_000, description="markdown; [[name]] links")
    tags: list[Tag] | None = Field(None, max_length=32, description=TAGS_SAID)
    importance: Unit | None = Field(None, description="0..1 (default 0.5)")
    session_id: str | None = Field(
        None, max_length=120, description="the conversation or run it came from"
    )
    session_order: Order | None = Field(
        None,
        description="its place in the session, from 0 (default: the next one); null on an "
        "edit clears it",
    )
    occurred_at: DateTime | None = Field(
        None, description="when the event it records happened; null on an edit clears it"
    )
    source: str | None = Field(None, max_length=32, description="user_stated, agent_inferred, ...")
    valid_from: Instant | None = Field(
        None,
        description="when it became true (default: now; on supersede, closes the old one); "
        "not in the future (409)",
    )
    invalid_at: Instant | None = Field(
        None,
        description="when it stopped being true, if known: after valid_from and not in the "
        "future (409; for an end to come, expires_at)",
    )
    # Expiry (recall/decay.py): from then on it leaves every read; `manage.py expire` purges it.
    ttl_seconds: Ttl | None = Field(None, description="expire this many seconds from now")
    expires_at: DateTime | None = Field(
        None,
        description="expire at this instant (ISO 8601; with ttl_seconds too, the earlier); "
        "null on an edit clears it",
    )

    @field_validator("description", "body", "tags")
    @classmethod
    def _as_read(cls, value: Any) -> Any:
        return as_read(value)


class WriteReply(Body):
    """How much of the memory or note a write's reply repeats."""

    detail: Literal["full", "index"] = Field(
        "index",
        description='"index" (default): the reply leaves out the body, which you sent '
        '(body_chars says its size; a read by id gives it); "full" repeats it',
    )


class MemoryChange(MemoryFields, WriteReply):
    """Fields to change (an edit in place or a supersede), and how much the reply repeats."""


class MemoryItem(MemoryFields):
    """One memory to write."""

    kind: MemoryKind = Field(
        "fact", validation_alias=KIND_NAMES, description="constraint, gotcha, fact, episode, ..."
    )
    name: Name = Field(description="its slug, e.g. chroma-boot-race")
    source: str = Field(AGENT_SOURCE, max_length=32, description="user_stated, ...")


class MemoryIn(MemoryItem, WriteReply):
    project: Slug | None = Field(None, description=PROJECT)
    force: bool = Field(False, description="write even when the same text is already stored")
    idempotency_key: str | None = Field(
        None,
        max_length=200,
        description="a retry with the same key gets the first answer (REST: or the "
        "Idempotency-Key header)",
    )


class MemoryBatchIn(Body):
    project: Slug | None = Field(None, description=PROJECT)
    memories: list[MemoryItem] = Field(
        min_length=1, max_length=500, description="1 to 500 memories, written in one transaction"
    )
    force: bool = Field(False, description="write even items whose text is already stored")
    idempotency_key: str | None = Field(None, max_length=200, description="as for one write")


class MemoryRef(Body):
    """A memory by id, or by name (resolved in the project first, then global)."""

    id: str | None = Field(None, max_length=26, description="the memory's id")
    name: Name | None = Field(None, description="or its name")
    project: Slug | None = Field(None, description="where to resolve a name " + f"({PROJECT})")
    as_of: Instant | None = Field(None, description="the memory as valid then (404 if not)")
    recorded_as_of: Instant | None = Field(None, description="the memory as recorded then")
    budget: int | None = Field(
        None,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="tokens the whole reply may take: a longer body is cut to fit, at a "
        "word, with truncated and body_chars (default: the whole body)",
    )


class SupersedeIn(MemoryChange):
    id: str = Field(max_length=120, description="the memory to replace: its id or name")
    idempotency_key: str | None = Field(
        None, max_length=200, description="a retry with the same key gets the first answer"
    )


class MemoryIdIn(Body):
    id: str = Field(
        max_length=120, description="the memory's id, or its name (as memory_read finds it)"
    )


class FavoriteIn(Body):
    favorite: bool | None = Field(None, description="true stars, false unstars, absent toggles")


class MemoryUpdateIn(MemoryChange):
    id: str = Field(max_length=120, description="the memory to change in place: its id or name")


class MemoryFavoriteIn(FavoriteIn):
    id: str = Field(max_length=120, description="the memory to star or unstar: its id or name")


class MemoryListIn(Params):
    project: Slug | None = Field(
        None, description="one of the token's projects (default: all of them)"
    )
    kind: list[MemoryKind] | None = Field(
        None, validation_alias=KIND_NAMES, description="any of these kinds (repeatable)"
    )
    tags: list[Tag] | None = Field(None, description="all of these tags (repeatable)")
    any_tags: list[Tag] | None = Field(None, description="at least one of these tags")
    session_id: str | None = Field(None, max_length=120, description="only this session")
    agent_id: str | None = Field(None, max_length=120, description="only what this agent wrote")
    created_after: DateTime | None = Field(None, description="created after (ISO 8601)")
    created_before: DateTime | None = Field(None, description="created before (ISO 8601)")
    updated_after: DateTime | None = Field(None, description="updated after (ISO 8601)")
    updated_before: DateTime | None = Field(None, description="updated before (ISO 8601)")
    archived: Literal["exclude", "include", "only"] = Field(
        "exclude", description="archived and superseded memories"
    )
    limit: int = Field(50, ge=1, le=200, description="memories per page")
    cursor: str | None = Field(
        None, pattern=CURSOR_PATTERN, description="next_cursor of the last page"
    )
    detail: Literal["full", "index"] = Field(
        "index",
        description='"index" (default): each memory without its body (body_chars says its '
        'size; memory_read gives it); "full": with the bodies',
    )
    budget: int | None = Field(
        None,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="tokens the whole reply may take: the page ends at the last memory that "
        "fits and next_cursor goes on from there (default: no limit; `limit` decides)",
    )

    @field_validator("kind", "tags", "any_tags", mode="before")
    @classmethod
    def _one_as_a_list(cls, value: Any) -> Any:
        """One value where a list is taken (memory_recall's `kind` is one string)."""
        return [value] if isinstance(value, str) else value


class NoteFields(Body):
    """A note's fields; its text is unescaped once, as a memory's is (`as_read`)."""

    title: str | None = Field(None, min_length=1, max_length=200, description="the note's title")
    name: Name | None = Field(
        None, validation_alias=NOTE_NAMES, description="its slug (default: from the title)"
    )
    description: str | None = Field(None, max_length=150, description="one line")
    body: str | None = Field(None, max_length=200_000, description="markdown")
    tags: list[Tag] | None = Field(None, max_length=32, description=TAGS_SAID)
    source_url: SourceUrl | None = Field(None, description="an http(s) URL (empty clears it)")

    @field_validator("title", "description", "body", "tags")
    @classmethod
    def _as_read(cls, value: Any) -> Any:
        return as_read(value)

    @field_validator("title")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        """A title of spaces was stored as "" (and slugged `untitled`)."""
        if value is not None and not value.strip():
            raise ValueError("give a title that is not blank")
        return value


class NoteChange(NoteFields, WriteReply):
    """Fields of a note to change, and how much the reply repeats."""


class NoteIn(NoteFields, WriteReply):
    project: Slug | None = Field(None, description=PROJECT)
    title: str = Field(min_length=1, max_length=200, description="the note's title")
    idempotency_key: str | None = Field(
        None,
        max_length=200,
        description="a retry with the same key gets the first answer (REST: or the "
        "Idempotency-Key header)",
    )


class NoteListIn(Params):
    project: Slug | None = Field(None, description="default: the token's projects")
    limit: int = Field(20, ge=1, le=100, description="how many of the newest")
    detail: Literal["full", "index"] = Field(
        "index",
        description='"index" (default): each note without its body (body_chars says its '
        'size; a read by id gives it); "full": with the bodies',
    )


class ProjectIn(Body):
    # The reserved words are a lookahead, which pydantic's default (Rust) engine lacks.
    model_config = ConfigDict(**Body.model_config, regex_engine="python-re")

    slug: Slug = Field(
        pattern=NEW_SLUG_PATTERN,
        description="e.g. billing-api; not "
        + " or ".join(RESERVED_SLUGS)
        + " (they label memories outside any project and the deployment's digest)",
    )

    @field_validator("slug", mode="before")
    @classmethod
    def _not_reserved(cls, value: object) -> object:
        if value in RESERVED_SLUGS:  # in the caller's words, not the pattern's
            raise ValueError(reserved_slug_message(str(value)))
        return value

    name: str = Field("", max_length=200, description="for people (default: the slug)")
    description: str = Field("", max_length=2000, description="what the project is")
    isolation: Isolation = Field("open", description="open | confidential | sealed")
