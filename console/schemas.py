"""Request and reply schemas of the agent API (and the MCP tools' JSON).

Hit and ContextPack follow ARCHITECTURE section 4 field by field; `memory_kind`
(constraint, fact, ...) is the one addition, since an agent weighs a
constraint differently from a fact. Request limits mirror the models'
validators so a schema-valid body is rarely refused by a service.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import BeforeValidator, ConfigDict, Strict

from console.models import NAME_RE, Memory, Note
from recall.config import (
    DEFAULT_BUDGET,
    DEFAULT_RECALL_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    MAX_BUDGET,
    MAX_K,
    MAX_RECALL_LIMIT,
    MAX_SEARCH_LIMIT,
    MAX_WEIGHT,
)
from recall.requests import SCOPES
from recall.results import SOURCES
from recall.types import ITEM_KINDS, MEMORY_KINDS

# Vocabularies the engine owns, as the schema's enums (never copied here).
MemoryKind = Literal[MEMORY_KINDS]  # type: ignore[valid-type]
Scope = Literal[SCOPES]  # type: ignore[valid-type]
Source = Literal[SOURCES]  # type: ignore[valid-type]
ItemKind = Literal[ITEM_KINDS]  # type: ignore[valid-type]
NAME_PATTERN = NAME_RE.pattern
Weight = Annotated[float, Field(ge=0, le=MAX_WEIGHT, allow_inf_nan=False)]
Tag = Annotated[str, Field(min_length=1, max_length=64)]

# --- errors -------------------------------------------------------------------


class Error(Schema):
    detail: str = Field(description="What went wrong, for a person or an agent to act on.")


class SchemaError(Schema):
    detail: list[dict[str, Any]] = Field(description="Pydantic's list of invalid fields.")


# --- hits ---------------------------------------------------------------------


class ProvenanceOut(Schema):
    channel: str = Field(description="fts | semantic | link | identifier")
    rank: int = Field(description="1-based rank within the channel")
    raw: float = Field(description="BM25 for fts, cosine for semantic, 1/(k+i) for link")


class HitOut(Schema):
    kind: ItemKind
    id: str
    name: str
    title: str
    description: str
    project: str | None = Field(description="project slug; null = global")
    age: str = Field(description='compact age since the last update: "5m", "3h", "2d"')
    source: Source
    score: float
    favorite: bool
    memory_kind: str = Field(description='constraint, fact, ... ("" for notes)')


class RecallHit(HitOut):
    tokens: int = Field(description="estimated tokens of the text this item costs")
    sources: list[ProvenanceOut]


class SearchHit(HitOut):
    snippet: str | None = Field(description="raw text, matches wrapped in \\u0001...\\u0002")
    snippet_html: str | None = Field(description="escaped snippet with <mark> around matches")
    similarity: float | None = Field(description="raw cosine, on hits the semantic leg found")


class ContextPackOut(Schema):
    items: list[RecallHit]
    omitted: int = Field(ge=0, description="ranked hits within the limit that did not fit")
    tokens: int = Field(ge=0, description="tokens used; never more than budget")
    budget: int
    warnings: list[str] = Field(description="degraded channels, never silent")
    debug: dict[str, Any] | None = Field(description="per-channel ranks, timings, embedded")


class SearchOut(Schema):
    hits: list[SearchHit]
    warnings: list[str]


class TextOut(Schema):
    text: str
    ids: list[str]
    tokens: int | None = None


# --- requests -----------------------------------------------------------------


class Body(Schema):
    """A JSON body: strict types, so "1" is not a number and 0 is not false."""

    model_config = ConfigDict(strict=True)


def _not_a_number(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(
        r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", value
    ):
        raise ValueError("give an ISO 8601 date-time, not a number")
    return value


def _json_number(value: Any) -> Any:
    if isinstance(value, bool | str):
        raise ValueError("give a JSON number")
    return value


# JSON Schema counts 5.0 as an integer; strict pydantic would not. The bounds sit
# inside the type so the OpenAPI schema shows them as minimum/maximum.
Budget = Annotated[int, Strict(False), Field(ge=1, le=MAX_BUDGET), BeforeValidator(_json_number)]
RecallLimit = Annotated[
    int, Strict(False), Field(ge=1, le=MAX_RECALL_LIMIT), BeforeValidator(_json_number)
]
RrfK = Annotated[int, Strict(False), Field(ge=1, le=MAX_K), BeforeValidator(_json_number)]
# A query-string date-time (pydantic would otherwise read "0.5" as a Unix time).
QueryDateTime = Annotated[datetime, BeforeValidator(_not_a_number)]


class RecallIn(Body):
    query: str = Field(
        "", max_length=4000, description="what the agent needs; may be empty with kind"
    )
    project: str | None = Field(
        None, max_length=64, description="one of the token's projects (default: its only one)"
    )
    budget: Budget | None = Field(None, description=f"token budget (default {DEFAULT_BUDGET})")
    limit: RecallLimit | None = Field(
        None, description=f"ranked hits considered (default {DEFAULT_RECALL_LIMIT})"
    )
    scope: Scope = "all"
    kind: MemoryKind | None = Field(None, description="only this memory kind (browse if no query)")
    k: RrfK | None = Field(None, description="RRF constant (default 60)")
    channel_weights: dict[str, Weight] | None = Field(
        None,
        description="weights by channel merged over the configured ones (0 turns a channel "
        'off), e.g. {"fts": 1, "semantic": 1, "link": 1}',
    )
    debug: bool = False


class SearchIn(Schema):
    q: str = Field("", max_length=4000, description="what to look for")
    project: list[str] | None = Field(None, description="repeatable; default: the token's projects")
    limit: int | None = Field(
        None, ge=1, le=MAX_SEARCH_LIMIT, description=f"hits (default {DEFAULT_SEARCH_LIMIT})"
    )
    semantic: bool = Field(True, description="false = full-text only (fastest)")
    since: QueryDateTime | None = Field(None, description="only items updated at or after this")


class NoteListIn(Schema):
    project: str | None = Field(None, max_length=64, description="default: the token's projects")
    limit: int = Field(20, ge=1, le=100)


class BriefingIn(Body):
    project: str | None = Field(None, max_length=64)
    agent_type: str = Field("", max_length=120, description="non-empty = a subagent's briefing")
    prompt: str = Field("", max_length=4000, description="a subagent's task, for RELEVANT")
    budget: Budget | None = None


class PromptIn(Body):
    project: str | None = Field(None, max_length=64)
    prompt: str = Field(max_length=20_000)


class MemoryFields(Body):
    kind: MemoryKind | None = None
    name: str | None = Field(None, pattern=NAME_PATTERN, description="slug, e.g. chroma-boot-race")
    description: str | None = Field(None, max_length=150, description="one line, shown in indexes")
    body: str | None = Field(None, max_length=200_000, description="markdown; [[name]] links")
    tags: list[Tag] | None = Field(None, max_length=32)
    importance: float | None = Field(None, ge=0, le=1)
    session_id: str | None = Field(None, max_length=120)
    source: str | None = Field(None, max_length=32, description="user_stated, agent_inferred, ...")


class MemoryIn(MemoryFields):
    project: str | None = Field(None, max_length=64, description="default: the token's only one")
    kind: MemoryKind = "fact"
    name: str = Field(pattern=NAME_PATTERN, description="slug, e.g. chroma-boot-race")
    source: str = Field("agent_inferred", max_length=32)


class FavoriteIn(Body):
    favorite: bool | None = Field(None, description="true stars, false unstars, absent toggles")


class NoteFields(Body):
    title: str | None = Field(None, min_length=1, max_length=200)
    slug: str | None = Field(None, pattern=NAME_PATTERN)
    description: str | None = Field(None, max_length=150)
    body: str | None = Field(None, max_length=200_000)
    tags: list[Tag] | None = Field(None, max_length=32)
    source_url: str | None = Field(None, max_length=200)


class NoteIn(NoteFields):
    project: str | None = Field(None, max_length=64, description="default: the token's only one")
    title: str = Field(min_length=1, max_length=200)


# --- items --------------------------------------------------------------------


class MemoryOut(Schema):
    id: str
    project: str | None
    kind: str
    name: str
    description: str
    body: str
    tags: list[str]
    importance: float
    agent_id: str
    session_id: str
    source: str
    valid_from: datetime
    invalid_at: datetime | None
    superseded_by: str | None
    favorite: bool
    active: bool
    created: datetime
    updated: datetime

    @staticmethod
    def resolve_project(obj: Memory) -> str | None:
        return obj.project.slug if obj.project else None

    @staticmethod
    def resolve_superseded_by(obj: Memory) -> str | None:
        return obj.superseded_by_id

    @staticmethod
    def resolve_active(obj: Memory) -> bool:
        return obj.invalid_at is None


class DedupHintOut(HitOut):
    similarity: float | None = Field(description="cosine to the memory just written")


class MemoryWriteOut(Schema):
    memory: MemoryOut
    dedup_hint: DedupHintOut | None = Field(
        description="the most similar active memory in scope (cosine >= 0.83); advisory"
    )


class NoteOut(Schema):
    id: str
    project: str | None
    title: str
    slug: str
    description: str
    body: str
    tags: list[str]
    source_url: str
    favorite: bool
    created: datetime
    updated: datetime

    @staticmethod
    def resolve_project(obj: Note) -> str | None:
        return obj.project.slug if obj.project else None


class FavoriteOut(Schema):
    id: str
    favorite: bool
