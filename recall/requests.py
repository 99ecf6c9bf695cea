"""What callers ask the engine: frozen, slotted request values.

Validation against the configured limits happens in the engine
(`recall.recall.validate`, `recall.search.validate`), which raises QueryError.
A `None` budget or limit means the resolved config's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from recall.types import Digest

SCOPES = ("all", "memories", "notes")
ENTITIES = ("memories", "notes")  # fabriq's `entities`: the list form of `scope`
# Routing and fabriq's per-request knobs: the RecallRequest fields the edges pass through.
KNOB_FIELDS = ("routing", "k", "strict", "entities", "include_graph", "include_history")
# Recall's filters (Dakera seed 004), as request fields: see `RecallRequest`.
FILTER_FIELDS = (
    "kinds", "tags", "any_tags", "agent_id", "session_id", "min_importance", "since", "until",
    "as_of", "recorded_as_of",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """An agent's recall, bound to one project (None = global only).

    An empty query with a `kind` (or `kinds`) browses those kinds newest
    first. `kinds`, `tags` ... `until` filter inside every channel's query
    (`recall.types.Filter`); `kind` is a one-item alias of `kinds`. `detail`
    "full" packs each item's text, "index" only its description. `rrf_k`
    overrides the RRF constant;
    `channel_weights` are merged over the configured weights (0 turns a
    channel off; a name that is not a registered channel is a QueryError).
    The graph and associated-memory fields are read by `recall.associated`;
    `routing` by `recall.routing`; `k`, `strict` and `entities` by `recall.recall`.
    """

    query: str
    project: str | None
    budget: int | None = None
    limit: int | None = None
    scope: str = "all"
    kind: str | None = None
    rrf_k: int | None = None
    channel_weights: Mapping[str, float] | None = None
    debug: bool = False
    detail: str = "full"
    # The graph channel and associated memories (`recall.associated`); None
    # means the config's value (`graph_hops`, ..., `associated_cap`, ...).
    hops: int | None = None
    graph_seeds: int | None = None
    graph_reverse: bool | None = None
    graph_min_weight: float | None = None
    graph_cap: int | None = None
    include_associated: bool = False
    associated_cap: int | None = None
    associated_depth: int | None = None
    associated_min_weight: float | None = None
    # Routing (Dakera CE-12) and fabriq's per-request knobs; None = the config's
    # value (`routing`, `depth`). `k`: candidates per channel (at most the
    # config's `max_depth`); `strict`: a channel failure is an error, not a
    # warning; `entities`: "memories", "notes" or both (the list form of `scope`).
    routing: str | None = None
    k: int | None = None
    strict: bool = False
    entities: tuple[str, ...] | None = None
    # --- session neighbourhood (`recall.neighbourhood`, Dakera 004); None =
    # the config's `session_neighbours`, `session_window_minutes`, ... ---
    session_neighbours: bool | None = None
    session_window_minutes: float | None = None
    session_turns: int | None = None
    session_cap: int | None = None
    # --- end session neighbourhood ---
    # Filters (Dakera seed 004), applied inside every channel's query: see
    # `recall.types.Filter`. Empty / None means no restriction.
    kinds: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()  # all of these
    any_tags: tuple[str, ...] = ()  # at least one of these
    agent_id: str | None = None
    session_id: str | None = None
    min_importance: float | None = None
    since: datetime | None = None  # created at or after
    until: datetime | None = None  # created at or before
    # Seed 003: each hit's 1-hop neighbours (`recall.shape`); archived and
    # superseded memories as candidates too (the cold tier, `recall.tiers`).
    include_graph: bool = False
    include_history: bool = False
    # --- altitude (fabriq; recall/altitude.py): "auto" | "entity" | "scope" |
    # "tenant", None = entity; `digests` are the ones the caller may see (the
    # edge reads them; the engine never reads storage for them) ---
    altitude: str | None = None
    digests: tuple[Digest, ...] = ()
    # Bitemporal reads (`recall.timetravel`): valid at / as recorded at that instant.
    as_of: datetime | None = None
    recorded_as_of: datetime | None = None
    # Importance, worth, decay (`recall.worth`, `recall.decay`); None = the config's.
    importance_weighted: bool | None = None
    worth_weight: float | None = None
    decay: bool | None = None
    pack_id: str | None = None  # rides in the reply (`POST /feedback` names it)


# The RecallRequest fields of importance, worth and decay the edges pass through.
WORTH_FIELDS = ("importance_weighted", "worth_weight", "decay")


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A person's search: every project (None) or the listed ones, plus global.

    `semantic=False` is the FTS-only fast path (never embeds); `prefix=True`
    lets the last word match as a prefix (the palette's word being typed);
    `since` keeps items updated at or after that instant;
    `include_global=False` leaves global items out (a sealed project's view);
    `snippets=False` leaves the full-text hits' snippets out (a caller that cuts
    its own: the palette, when they could mark nothing more);
    `paged=False`: the caller never asks a later page by offset (the palette, the
    console's window), so the fast path reads only what the page shows
    (`recall.search.depth_for`); `cursor`: a page after the first by the
    `SearchResult.cursor` of the page before it, instead of `offset`
    (`recall.walks`: no hit twice, whatever changes between pages).
    """

    query: str
    projects: tuple[str, ...] | None = None
    limit: int | None = None
    semantic: bool = True
    since: datetime | None = None
    kinds: tuple[str, ...] | None = None
    items: tuple[str, ...] | None = None
    include_inactive: bool = False
    prefix: bool = False
    include_global: bool = True
    offset: int = 0
    # Bitemporal reads (`recall.timetravel`): valid at / as recorded at that instant.
    as_of: datetime | None = None
    recorded_as_of: datetime | None = None
    snippets: bool = True
    paged: bool = True
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class BriefingRequest:
    """A session-start briefing; a non-empty `agent_type` is a subagent."""

    project: str | None
    agent_type: str = ""
    prompt: str = ""
    budget: int | None = None


@dataclass(frozen=True, slots=True)
class PromptRequest:
    """A user prompt to match against the memories in scope (`budget`: tokens, at most)."""

    project: str | None
    prompt: str
    budget: int | None = None
