"""The MCP server (`manage.py mcp`, stdio): the agent API's calls as MCP tools.

The token comes from the RECALL_AGENT_TOKEN environment variable and is
verified on every call (a revoked token stops working mid-session). Every
tool goes through `console.access`, the same guards as the HTTP API, and
replies with the API's JSON shapes (`console.schemas`). Errors come back as
tool errors whose text starts with the HTTP status the API would have used.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from django.core.exceptions import ValidationError
from django.db import close_old_connections
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from ninja import Schema

from console import access, schemas, tokens
from console.access import Access, AccessDenied, NotVisible
from console.schemas import MemoryKind as Kind
from console.schemas import Scope
from recall.errors import IndexUnavailable, QueryError, RecallError

log = logging.getLogger(__name__)
TOKEN_ENV = "RECALL_AGENT_TOKEN"
P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = """\
Long-term memory for this project. Call `briefing` once at session start;
`memory_recall` before acting on anything past sessions may have settled
(conventions, gotchas, decisions); `memory_read` for a hit's full body;
`memory_write` when you learn something a future session needs (check the
returned dedup_hint and supersede instead of duplicating); `memory_supersede`
when a memory is wrong or outdated."""


def current_access() -> Access:
    """The scope of the token in RECALL_AGENT_TOKEN, verified now."""
    token = tokens.token_verify(os.environ.get(TOKEN_ENV, ""))
    if token is None:
        raise ToolError(f"401: {TOKEN_ENV} is missing, invalid or revoked")
    return access.access_for(token)


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Translate the error family to tool errors that carry the API's status."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except AccessDenied as exc:
            raise ToolError(f"403: {exc}") from exc
        except NotVisible as exc:
            raise ToolError(f"404: {exc}") from exc
        except (QueryError, ValidationError) as exc:
            raise ToolError(f"400: {_text(exc)}") from exc
        except (IndexUnavailable, RecallError) as exc:
            raise ToolError(f"503: {exc}") from exc

    return wrapper


def _text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(exc.messages)
    return str(exc)


def _dump(schema: type[Schema], value: Any) -> dict[str, Any]:
    return schema.from_orm(value).model_dump(mode="json")


def _set(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


# --- tools --------------------------------------------------------------------


@guarded
def memory_recall(
    query: str,
    project: str | None = None,
    budget: int | None = None,
    limit: int | None = None,
    scope: Scope = "all",
    kind: Kind | None = None,
) -> dict[str, Any]:
    """Recall what past sessions learned that bears on a task: a ranked pack of memories
    and notes that fits a token budget. Call it BEFORE you plan or change anything
    non-trivial (a build, a deploy, a schema, an unfamiliar module), and whenever the user
    refers to something decided earlier. Empty query + kind lists that kind, newest first.
    Use memory_read on an item's id for its full body."""
    pack = access.recall(
        current_access(), project=project, query=query, budget=budget, limit=limit,
        scope=scope, kind=kind,
    )  # fmt: skip
    return _dump(schemas.ContextPackOut, pack)


@guarded
def memory_search(
    query: str,
    project: list[str] | None = None,
    limit: int | None = None,
    semantic: bool = True,
    since: datetime | None = None,
) -> dict[str, Any]:
    """Search memories and notes by words or meaning across your projects (no budget,
    with snippets). Call it when you are looking for a specific memory, name or id to
    read, edit or supersede; prefer memory_recall to gather context for a task."""
    result = access.search(
        current_access(), query=query, projects=project, limit=limit, semantic=semantic,
        since=since,
    )  # fmt: skip
    return _dump(schemas.SearchOut, result)


@guarded
def memory_read(id: str) -> dict[str, Any]:
    """Read one memory in full (body, tags, validity, what superseded it). Call it when a
    recall or search hit looks relevant and its description is not enough."""
    return _dump(schemas.MemoryOut, access.memory_read(current_access(), memory_id=id))


@guarded
def memory_write(
    name: str,
    description: str,
    body: str = "",
    kind: Kind = "fact",
    tags: list[str] | None = None,
    importance: float | None = None,
    source: str = "agent_inferred",
    project: str | None = None,
) -> dict[str, Any]:
    """Save something a future session must know: a convention, gotcha, decision,
    constraint or fact learned the hard way. Call it when you discover it, not at the end.
    `name` is a slug (chroma-boot-race); `description` one line (<= 150 chars). The reply's
    dedup_hint names a very similar existing memory: if it says the same, supersede that
    one instead of keeping two. Needs a write token."""
    fields = _set(
        name=name, description=description, body=body, kind=kind, tags=tags,
        importance=importance, source=source,
    )  # fmt: skip
    written = access.memory_write(current_access(), project=project, fields=fields)
    return _dump(schemas.MemoryWriteOut, written)


@guarded
def memory_supersede(
    id: str,
    name: str | None = None,
    description: str | None = None,
    body: str | None = None,
    kind: Kind | None = None,
    tags: list[str] | None = None,
    importance: float | None = None,
) -> dict[str, Any]:
    """Replace a memory that is wrong or outdated: the new version keeps every field you
    do not give, and the old one stops being recalled. Call it when you find a memory
    contradicted by what you just verified, or when memory_write's dedup_hint matches."""
    fields = _set(
        name=name, description=description, body=body, kind=kind, tags=tags,
        importance=importance,
    )  # fmt: skip
    written = access.memory_supersede(current_access(), memory_id=id, fields=fields)
    return _dump(schemas.MemoryWriteOut, written)


@guarded
def notes_read(
    id: str | None = None, project: str | None = None, limit: int = 20
) -> dict[str, Any]:
    """Read people's notes: one note by id, or the newest notes of a project. Call it when
    a recall hit is a note, or when the user points you at their notes."""
    scope = current_access()
    if id is not None:
        return {"notes": [_dump(schemas.NoteOut, access.note_read(scope, note_id=id))]}
    if not 1 <= limit <= 100:
        raise QueryError(f"limit must be within 1..100, not {limit}")
    notes = access.note_list(scope, project=project, limit=limit)
    return {"notes": [_dump(schemas.NoteOut, n) for n in notes]}


@guarded
def notes_write(
    title: str,
    body: str = "",
    description: str = "",
    tags: list[str] | None = None,
    source_url: str = "",
    project: str | None = None,
    id: str | None = None,
) -> dict[str, Any]:
    """Write a longer note for people (a summary, a write-up, a link with context); with
    `id`, update that note. Call it when the user asks for notes; use memory_write for
    short facts a future agent must recall. Needs a write token."""
    fields = _set(title=title, body=body, description=description, tags=tags, source_url=source_url)
    scope = current_access()
    if id is not None:
        note = access.note_update(scope, note_id=id, fields=fields)
    else:
        note = access.note_write(scope, project=project, fields=fields)
    return _dump(schemas.NoteOut, note)


@guarded
def briefing(
    project: str | None = None, agent_type: str = "", prompt: str = "", budget: int | None = None
) -> str:
    """The session-start briefing: constraints, starred memories and an index of the rest.
    Call it ONCE at the start of a session (a subagent passes agent_type and its task as
    prompt) and keep it in mind; then use memory_recall for anything specific."""
    result = access.briefing(
        current_access(), project=project, agent_type=agent_type, prompt=prompt, budget=budget
    )
    return str(result.text)


TOOLS: tuple[Callable[..., Any], ...] = (
    memory_recall,
    memory_search,
    memory_read,
    memory_write,
    memory_supersede,
    notes_read,
    notes_write,
    briefing,
)


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        name="recall", title="Recall memory", version="1", instructions=INSTRUCTIONS
    )
    for tool in TOOLS:
        server.add_tool(
            tool, name=tool.__name__, description=" ".join((tool.__doc__ or "").split())
        )
    return server


def serve() -> None:
    """Run over stdio until the client closes the pipe."""
    build_server().run("stdio")
