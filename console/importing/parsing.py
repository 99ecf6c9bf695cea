"""One record into one unsaved, validated memory or note: the field rules of import.

A name that is not a valid memory name (`Caroline, session 1, turn 3`) is
derived into one and kept as `metadata.display_name`; a description over
150 characters moves into the body and is cut at a word boundary; the eval
format's `metadata.session` and `turn_index` become the session and the order
inside it. Nothing here saves a row: ids already taken, projects and the
batches are the writer's (console/importing/writer.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.utils import timezone

from console import services
from console.models import NAME_RE, Memory, Note, Project, new_id
from console.reading import Record
from console.records import RecordError, parse_time
from recall.types import MEMORY_KINDS

ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
DESCRIPTION_CHARS = 150


# --- values -------------------------------------------------------------------


T = TypeVar("T")


def built(
    records: Iterable[Record], build: Callable[[dict[str, Any]], T], errors: list[str]
) -> Iterator[tuple[Record, T]]:
    """Each record with its value from `build`; a record it refuses (RecordError,
    ValueError, TypeError) becomes a line in `errors` naming the record, and is skipped."""
    for record in records:
        try:
            value = build(record.data or {})
        except (RecordError, ValueError, TypeError) as exc:
            errors.append(f"{record.where}: {exc}; skipped")
            continue
        yield record, value


def derive_name(text: str) -> str:
    """A valid memory name for display text ("Caroline, session 1, turn 3")."""
    slug = re.sub(r"[^a-z0-9_.]+", "-", text.lower()).strip("-_.")
    slug = slug[:120].rstrip("-_.")
    if not slug:
        raise RecordError(f"name {text!r} has no letters or digits to make a name from")
    return slug


def cut_description(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head[limit // 2 :]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:.-") + "…"


def explain(exc: ValidationError) -> str:
    """A ValidationError as one line: `field: message; field: message`."""
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    return " ".join(exc.messages)


def number(value: Any, *, key: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise RecordError(f"{key}: {value!r} is not a number") from None


def own_id(data: dict[str, Any]) -> str:
    """The record's `id` when it is ours (a ULID) and the row keeps it, else ""."""
    raw = str(data.get("id") or "")
    return raw if ULID_RE.match(raw) else ""


def _tags(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list):
        return [str(t) for t in value]
    raise RecordError(f"tags: expected a list of strings, got {type(value).__name__}")


def _count(data: Mapping[str, Any], key: str) -> int:
    """A whole count >= 0 (Memory Worth's feedback counters), 0 when absent."""
    value = int(number(data.get(key) or 0, key=key))
    if value < 0:
        raise RecordError(f"{key}: expected a count >= 0, not {value}")
    return value


def _occurred(data: dict[str, Any], session_id: str, created: datetime) -> datetime | None:
    """When the event happened: as given, or, for an evaluation-format turn (a session
    from metadata, no `occurred_at` key), its session's date (`created_at`)."""
    if "occurred_at" in data:
        return parse_time(data.get("occurred_at"), key="occurred_at")
    if session_id and "session_id" not in data and data.get("created_at"):
        return created
    return None


def _session(data: dict[str, Any], metadata: dict[str, Any], slug: str) -> tuple[str, int | None]:
    """The session id and the order inside it (eval: `metadata.session`, `turn_index`).

    Only a record without a `session_id` key (the eval format) takes them from
    its metadata: ours says "no session" with an empty one, metadata or not.
    """
    session_id = str(data.get("session_id") or "")
    order = data.get("session_order")
    if "session_id" not in data and metadata.get("session") not in (None, ""):
        session_id = f"{slug or 'global'}:S{metadata['session']}"
        if order is None:
            order = metadata.get("turn_index")
    if order in (None, ""):
        return session_id, None
    return session_id, int(number(order, key="session_order"))


# --- memories -----------------------------------------------------------------


def memory_ids(data: dict[str, Any]) -> tuple[str, str]:
    """Our id ("" when the record has none) and the external id ("" when none)."""
    own = own_id(data)
    external = data.get("external_id") or ("" if own else data.get("id"))
    return own, str(external or "")


def memory_name(data: dict[str, Any]) -> str:
    name = str(data.get("name") or "").strip()
    if not name:
        raise RecordError("missing name")
    return name


def memory_build(
    data: dict[str, Any], *, name: str, project: Project | None, own: str, external: str
) -> Memory:
    """An unsaved memory of a record, validated, with its content hash."""
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RecordError("metadata: expected a JSON object")
    metadata = dict(metadata)
    if not own and not NAME_RE.match(name):
        metadata.setdefault("display_name", name)
        name = derive_name(name)
    session_id, order = _session(data, metadata, project.slug if project else "")
    kind = str(data.get("kind") or ("episode" if session_id else "fact"))
    if kind not in MEMORY_KINDS:
        raise RecordError(f"unknown kind {kind!r}; expected one of: {', '.join(MEMORY_KINDS)}")
    description, body = _description_and_body(data)
    created = parse_time(data.get("created") or data.get("created_at"), key="created")
    created = created or timezone.now()
    memory = Memory(
        id=own or new_id(),
        project=project,
        kind=kind,
        name=name,
        description=description,
        body=body,
        tags=_tags(data.get("tags")),
        importance=number(data.get("importance", 0.5), key="importance"),
        agent_id=str(data.get("agent_id") or ""),
        session_id=session_id,
        session_order=order,
        source=_given(data, "source", "imported"),
        valid_from=parse_time(data.get("valid_from"), key="valid_from") or created,
        occurred_at=_occurred(data, session_id, created),
        invalid_at=parse_time(data.get("invalid_at"), key="invalid_at"),
        favorite=bool(data.get("favorite")),
        external_id=external,
        metadata=metadata,
        created=created,
        updated=parse_time(data.get("updated"), key="updated") or created,
        access_count=int(number(data.get("access_count") or 0, key="access_count")),
        last_accessed_at=parse_time(data.get("last_accessed_at"), key="last_accessed_at"),
        expires_at=parse_time(data.get("expires_at"), key="expires_at"),
        **{f"feedback_{c}": _count(data, f"feedback_{c}") for c in ("used", "helpful", "harmful")},
    )
    services.memory_validate(memory=memory)
    memory.content_hash = services.content_hash(
        name=memory.name, description=memory.description, body=memory.body
    )
    return memory


def _given(data: dict[str, Any], key: str, default: str) -> str:
    """The record's value, empty included; `default` only when the key is absent (or null).

    An export says "" when a field is empty: reading that as "not given" and
    filling in a default made the round trip lossy.
    """
    value = data.get(key)
    return default if value is None else str(value)


def _description_and_body(data: dict[str, Any]) -> tuple[str, str]:
    """A description too long for its field leads the body and is cut to fit."""
    description = str(data.get("description") or "")
    body = str(data.get("body") or "")
    if len(description) > DESCRIPTION_CHARS:
        body = description + ("\n\n" + body if body else "")
        description = cut_description(description)
    return description, body


# --- notes --------------------------------------------------------------------


def note_build(data: dict[str, Any], *, own: str, project: Callable[[Any], Project | None]) -> Note:
    """An unsaved, validated note; `project` resolves its slug once the title is there."""
    title = str(data.get("title") or "")  # kept as written: spaces round-trip too
    if not title.strip():
        raise RecordError("missing title")
    created = parse_time(data.get("created"), key="created") or timezone.now()
    note = Note(
        id=own or new_id(),
        project=project(data.get("project")),
        title=title,
        slug=str(data.get("slug") or "") or derive_name(title),
        description=str(data.get("description") or ""),
        body=str(data.get("body") or ""),
        tags=services.tags_clean(tags=_tags(data.get("tags"))),
        source_url=str(data.get("source_url") or ""),
        favorite=bool(data.get("favorite")),
        created=created,
        updated=parse_time(data.get("updated"), key="updated") or created,
    )
    if len(note.body) > services.MAX_BODY_CHARS:
        raise RecordError(f"body: over {services.MAX_BODY_CHARS:,} characters")
    note.full_clean(exclude=["project"])
    return note
