"""The pieces every agent-facing schema is built from: bases, field types, the error.

Request bodies are strict (a string "1" is not a number, 0 is not false) and
forbid unknown fields, so a misspelt field (`budjet`) is a 422 naming it
instead of a silently ignored value. Bounds sit inside the types, so the
OpenAPI and MCP schemas show them as minimum / maximum.
"""

from __future__ import annotations

import re
import typing
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from django.utils.module_loading import import_string
from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Strict,
    field_validator,
)

from console.models import NAME_RE
from recall.agent import DETAILS
from recall.altitude import ALTITUDES
from recall.config import (
    MAX_BUDGET,
    MAX_K,
    MAX_RECALL_DEPTH,
    MAX_RECALL_LIMIT,
    MAX_SESSION_CAP,
    MAX_SESSION_TURNS,
    MAX_SESSION_WINDOW_MINUTES,
    MAX_WEIGHT,
    MAX_WORTH_WEIGHT,
    MIN_BUDGET,
    MIN_TEXT_BUDGET,
    TEXT_BUDGET_WHY,
    out_of_bounds,
)
from recall.decay import MAX_TTL_SECONDS
from recall.graph import MAX_ASSOCIATED, MAX_CAP, MAX_HOPS, MAX_SEEDS
from recall.recall import MAX_TAG_CHARS, tag_form
from recall.requests import ENTITIES, SCOPES
from recall.results import SOURCES
from recall.routing import ROUTINGS
from recall.types import ISOLATIONS, ITEM_KINDS, MEMORY_KINDS

# Vocabularies the engine owns, as the schemas' enums (never copied here).
MemoryKind = Literal[MEMORY_KINDS]  # type: ignore[valid-type]
Scope = Literal[SCOPES]  # type: ignore[valid-type]
Source = Literal[SOURCES]  # type: ignore[valid-type]
ItemKind = Literal[ITEM_KINDS]  # type: ignore[valid-type]
Detail = Literal[DETAILS]  # type: ignore[valid-type]
# Routing and fabriq's knobs (recall/routing.py, recall/requests.py)
Routing = Literal[ROUTINGS]  # type: ignore[valid-type]
Altitude = Literal[ALTITUDES]  # type: ignore[valid-type]
Entity = Literal[ENTITIES]  # type: ignore[valid-type]
Isolation = Literal[ISOLATIONS]  # type: ignore[valid-type]
# The registered channels' names (settings.RECALL["CHANNELS"]), so a weight for
# a channel that does not exist is a schema error naming the known ones.
CHANNEL_NAMES = tuple(import_string(path).name for path in settings.RECALL["CHANNELS"])
ChannelName = Literal[CHANNEL_NAMES]  # type: ignore[valid-type]
NAME_PATTERN = NAME_RE.pattern
SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"


def field_names(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields a request schema takes, as callers spell them (aliases included)."""
    return tuple(f.alias or name for name, f in model.model_fields.items())


def names_taken(model: type[BaseModel]) -> frozenset[str]:
    """Every name a request schema takes for its fields: `field_names`, and the old names
    a field still accepts (`AliasChoices`, e.g. `memory_kind` for `kind`), which the
    schema and its "it takes ..." lists leave out."""
    taken = set(field_names(model))
    for f in model.model_fields.values():
        if isinstance(f.validation_alias, AliasChoices):
            taken |= {c for c in f.validation_alias.choices if isinstance(c, str)}
    return frozenset(taken)


def fields_at(model: type[BaseModel], path: str) -> tuple[str, ...]:
    """The fields of the schema that holds the field at dotted `path` ("items.0.verdict":
    an item's), as `field_names` spells them; () when the path leaves the schemas."""
    for part in path.split(".")[:-1]:
        if part.isdigit():
            continue
        field = next((f for name, f in model.model_fields.items() if part in (name, f.alias)), None)
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            return ()
        model = inner
    return field_names(model)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema an annotation holds (itself, or inside list[...], X | None, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _without_nul(value: Any) -> Any:
    """`value` with each NUL character in every string in it made a space.

    JSON allows U+0000 in a string; PostgreSQL's text and jsonb hold none (SQLite
    would), so the API replaces it on every database alike rather than refusing a
    schema-valid request on one of them; a space, as dropped it joined the words
    it stood between ("nul\\u0000inside" stored "nulinside").
    """
    if isinstance(value, str):
        return value.replace("\x00", " ")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_nul(v) for k, v in value.items()}
    return value


class Body(Schema):
    """A JSON body: strict types, unknown fields refused, NUL characters made spaces
    once the value is valid (a length limit counts them, as the schema does)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _drop_nul(cls, value: Any) -> Any:
        return _without_nul(value)


class Params(Schema):
    """Query-string parameters: strings coerced, unknown parameters refused, NUL dropped
    once the value is valid."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _drop_nul(cls, value: Any) -> Any:
        return _without_nul(value)


def _not_a_number(value: Any) -> Any:
    numeric = isinstance(value, int | float) or (
        isinstance(value, str)
        and re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", value)
    )
    if numeric:
        raise ValueError("give an ISO 8601 date-time, not a number")
    return value


def _utc(value: datetime) -> datetime:
    """A date-time as the same instant in UTC (a bare one is read as UTC, as the
    database would store it): ISO 8601 and Python allow offsets up to 23:59,
    PostgreSQL up to 15:59. An instant that is outside the years 1 to 9999 once in
    UTC ("9999-12-31T23:59:59-05:00") is refused: kept with its offset, it answered
    500 wherever it reached the database (SQLite's adapter overflows turning it into
    UTC; PostgreSQL would store a year 10000 that Python cannot read back)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            "this instant falls outside the years 1 to 9999 once in UTC: give one "
            "inside them (e.g. 9999-12-31T23:59:59Z)"
        ) from None


def _json_number(value: Any) -> Any:
    if isinstance(value, bool | str):
        raise ValueError("give a JSON number")
    return value


def _int(low: int, high: int) -> Any:
    # JSON Schema counts 5.0 as an integer; strict pydantic would not.
    return Annotated[int, Strict(False), Field(ge=low, le=high), BeforeValidator(_json_number)]


Budget = _int(MIN_BUDGET, MAX_BUDGET)  # a pack: its own envelope needs room


def _text_budget(value: Any) -> Any:
    """A block's budget out of bounds, refused in the words the engine and the Settings
    page use (`recall.config.out_of_bounds`), why included: "Input should be greater
    than or equal to 22" said neither why, nor what the page said of its own bound."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not MIN_TEXT_BUDGET <= value <= MAX_BUDGET:
        said = out_of_bounds("budget", MIN_TEXT_BUDGET, MAX_BUDGET, value, TEXT_BUDGET_WHY)
        raise ValueError(said.removeprefix("budget "))  # the field is named before it
    return value


# A block: or the line saying why none came.
TextBudget = Annotated[
    int, Strict(False), Field(ge=MIN_TEXT_BUDGET, le=MAX_BUDGET),
    BeforeValidator(_json_number), BeforeValidator(_text_budget),  # the last runs first
]  # fmt: skip
RecallLimit = _int(1, MAX_RECALL_LIMIT)
RrfK = _int(1, MAX_K)
Candidates = _int(1, MAX_RECALL_DEPTH)  # fabriq K: candidates per channel
Order = _int(0, 1_000_000)
Ttl = _int(1, MAX_TTL_SECONDS)  # a memory's time to live, in seconds
WorthWeight = Annotated[
    float, Strict(False), Field(ge=0, le=MAX_WORTH_WEIGHT), BeforeValidator(_json_number)
]
Hops = _int(0, MAX_HOPS)
Depth = _int(1, MAX_HOPS)
GraphSeeds = _int(0, MAX_SEEDS)
GraphCap = _int(0, MAX_CAP)
AssociatedCap = _int(0, MAX_ASSOCIATED)
Weight = Annotated[float, Field(ge=0, le=MAX_WEIGHT, allow_inf_nan=False)]
Unit = Annotated[float, Strict(False), Field(ge=0, le=1), BeforeValidator(_json_number)]
# A tag in its stored form, so `#Billing` writes and finds `billing`. One of only `#` and
# spaces becomes blank, never refused (the schema allows it): a write drops it, a filter
# answers that it matches nothing.
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS), AfterValidator(tag_form)]
Name = Annotated[str, Field(pattern=NAME_PATTERN, description="slug, e.g. chroma-boot-race")]
Slug = Annotated[str, Field(min_length=1, max_length=64, description="a project's slug")]
# A date-time in a body or query string ("0.5" is not read as a Unix time); a bare
# time is read as UTC.
DateTime = Annotated[datetime, Strict(False), BeforeValidator(_not_a_number), AfterValidator(_utc)]


def _aware(value: datetime) -> datetime:
    if value.utcoffset() is None:
        raise ValueError(
            "give a date and time with its time zone, e.g. 2024-01-01T00:00:00Z (a date, "
            "or a time without a zone, is ambiguous)"
        )
    return value


# An instant with its time zone (valid time and the bitemporal reads: recall/timetravel.py).
Instant = Annotated[
    datetime, Strict(False), BeforeValidator(_not_a_number), AfterValidator(_aware),
    AfterValidator(_utc),
]  # fmt: skip


class Error(Schema):
    """Every error, on every surface: what went wrong, which field, a stable code."""

    detail: str = Field(description="What went wrong, for a person or an agent to act on.")
    field: str | None = Field(None, description="The request field at fault, when one is.")
    code: str = Field(
        description="invalid | unknown_field | missing | unauthorized | forbidden | not_found "
        "| method_not_allowed | conflict | too_large | unavailable | server_error"
    )


# --- session neighbourhood (Dakera 004): request bounds, the settings' (recall/config.py) ---
WindowMinutes = Annotated[
    float, Strict(False), Field(ge=0, le=MAX_SESSION_WINDOW_MINUTES), BeforeValidator(_json_number)
]
SessionTurns = _int(0, MAX_SESSION_TURNS)
SessionCap = _int(0, MAX_SESSION_CAP)
# --- end session neighbourhood ---
