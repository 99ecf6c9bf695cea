"""The agent API (`/api/v1`): thin endpoints over `console.access`.

Each endpoint parses its schema, calls one guarded function, and renders the
reply schema. Bearer tokens only (no session auth, so no CSRF); errors are
always `{"detail": ...}`: 400 bad input, 401 no/invalid/revoked token, 403 a
project the token may not name or a write without a write token, 404 an item
that does not exist in the token's scope (the same reply as for an id that
exists in another project, so ids are never confirmed across projects), 413
a body over DATA_UPLOAD_MAX_MEMORY_SIZE, 422 schema (ninja's list of fields),
503 a plane unavailable.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Query, Status
from ninja.parser import Parser
from ninja.security import HttpBearer

from console import access, tokens
from console.access import Access, AccessDenied, NotVisible, Written
from console.models import Memory, Note
from console.schemas import (
    BriefingIn,
    ContextPackOut,
    Error,
    FavoriteIn,
    FavoriteOut,
    MemoryFields,
    MemoryIn,
    MemoryOut,
    MemoryWriteOut,
    NoteFields,
    NoteIn,
    NoteListIn,
    NoteOut,
    PromptIn,
    RecallIn,
    SchemaError,
    SearchIn,
    SearchOut,
    TextOut,
)
from recall.errors import BudgetError, ConfigError, IndexUnavailable, QueryError
from recall.results import Briefing, ContextPack, PromptResult, SearchResult

log = logging.getLogger(__name__)


class TokenAuth(HttpBearer):
    """`Authorization: Bearer rct_...`: a live token becomes `request.auth` (an Access)."""

    openapi_description = "An agent token from `manage.py agent_token create`."

    def authenticate(self, request: HttpRequest, token: str) -> Access | None:
        found = tokens.token_verify(token)
        return access.access_for(found) if found is not None else None


class ObjectParser(Parser):
    """JSON bodies must be objects: a list, string or number is bad input, not `{}`."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        data = json.loads(request.body)
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object")
        return data


api = NinjaAPI(
    title="Recall agent API",
    version="1",
    description=__doc__,
    urls_namespace="api-v1",
    auth=TokenAuth(),
    parser=ObjectParser(),
)

READ = {400: Error, 401: Error, 403: Error, 404: Error, 422: SchemaError, 503: Error}
WRITE = {**READ, 413: Error}


def _detail(status: int) -> Callable[[HttpRequest, Exception | type[Exception]], HttpResponse]:
    def handler(request: HttpRequest, exc: Exception | type[Exception]) -> HttpResponse:
        return api.create_response(request, {"detail": str(exc)}, status=status)

    return handler


for _exc, _status in (
    (QueryError, 400),
    (BudgetError, 400),
    (AccessDenied, 403),
    (NotVisible, 404),
    (IndexUnavailable, 503),
    (ConfigError, 503),
):
    api.add_exception_handler(_exc, _detail(_status))


@api.exception_handler(DjangoValidationError)
def _invalid(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
    if hasattr(exc, "error_dict"):
        text = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
    else:
        text = " ".join(exc.messages)
    return api.create_response(request, {"detail": text}, status=400)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    detail = "the request body is larger than the 2 MB limit"
    return api.create_response(request, {"detail": detail}, status=413)


def _auth(request: HttpRequest) -> Access:
    found = getattr(request, "auth", None)
    if not isinstance(found, Access):  # ninja's auth ran first: never reached
        raise AccessDenied("no verified token on this request")
    return found


def _fields(payload: Any, *, defaults: bool = False) -> dict[str, Any]:
    """The fields a caller set (null = not set); `defaults` adds the schema's defaults."""
    fields: dict[str, Any] = payload.dict(
        exclude_unset=not defaults, exclude_none=True, exclude={"project"}
    )
    return fields


# --- retrieval ----------------------------------------------------------------


@api.post("/recall", response={200: ContextPackOut, **READ}, tags=["retrieval"])
def recall(request: HttpRequest, payload: RecallIn) -> ContextPack:
    """Recall: the ranked, token-budgeted context pack for one of the token's projects."""
    options = payload.dict()
    return access.recall(_auth(request), project=options.pop("project"), **options)


@api.get("/search", response={200: SearchOut, **READ}, tags=["retrieval"])
def search(request: HttpRequest, params: Query[SearchIn]) -> SearchResult:
    """Search the token's projects (or the repeated `project`s), plus global unless sealed."""
    return access.search(
        _auth(request),
        query=params.q,
        projects=params.project,
        limit=params.limit,
        semantic=params.semantic,
        since=params.since,
    )


@api.post("/briefing", response={200: TextOut, **READ}, tags=["retrieval"])
def briefing(request: HttpRequest, payload: BriefingIn) -> Briefing:
    """The session-start briefing: its text and the ids it rendered."""
    return access.briefing(_auth(request), **payload.dict())


@api.post("/prompt-recall", response={200: TextOut, **READ}, tags=["retrieval"])
def prompt_recall(request: HttpRequest, payload: PromptIn) -> PromptResult:
    """The per-prompt recall block ("" when nothing clears the floors) and its ids."""
    return access.prompt_recall(_auth(request), **payload.dict())


# --- memories -----------------------------------------------------------------


@api.post("/memories", response={201: MemoryWriteOut, **WRITE}, tags=["memories"])
def memory_create(request: HttpRequest, payload: MemoryIn) -> Status[Written]:
    """Write a memory (write token); the reply carries its dedup hint (advisory)."""
    fields = _fields(payload, defaults=True)
    return Status(201, access.memory_write(_auth(request), project=payload.project, fields=fields))


@api.get("/memories/{memory_id}", response={200: MemoryOut, **READ}, tags=["memories"])
def memory_read(request: HttpRequest, memory_id: str) -> Memory:
    return access.memory_read(_auth(request), memory_id=memory_id)


@api.patch("/memories/{memory_id}", response={200: MemoryOut, **WRITE}, tags=["memories"])
def memory_update(request: HttpRequest, memory_id: str, payload: MemoryFields) -> Memory:
    return access.memory_update(_auth(request), memory_id=memory_id, fields=_fields(payload))


@api.post(
    "/memories/{memory_id}/supersede", response={201: MemoryWriteOut, **WRITE}, tags=["memories"]
)
def memory_supersede(
    request: HttpRequest, memory_id: str, payload: MemoryFields
) -> Status[Written]:
    """Replace a memory: the new one carries over every field not given."""
    fields = _fields(payload)
    return Status(201, access.memory_supersede(_auth(request), memory_id=memory_id, fields=fields))


@api.post("/memories/{memory_id}/archive", response={200: MemoryOut, **READ}, tags=["memories"])
def memory_archive(request: HttpRequest, memory_id: str) -> Memory:
    return access.memory_archive(_auth(request), memory_id=memory_id)


@api.post("/memories/{memory_id}/restore", response={200: MemoryOut, **READ}, tags=["memories"])
def memory_restore(request: HttpRequest, memory_id: str) -> Memory:
    return access.memory_restore(_auth(request), memory_id=memory_id)


@api.post("/memories/{memory_id}/favorite", response={200: FavoriteOut, **WRITE}, tags=["memories"])
def memory_favorite(
    request: HttpRequest, memory_id: str, payload: FavoriteIn | None = None
) -> Memory:
    """Star (`{"favorite": true}`), unstar (`false`) or toggle (no body)."""
    value = payload.favorite if payload else None
    return access.memory_favorite(_auth(request), memory_id=memory_id, value=value)


# --- notes --------------------------------------------------------------------


@api.get("/notes", response={200: list[NoteOut], **READ}, tags=["notes"])
def note_list(request: HttpRequest, params: Query[NoteListIn]) -> list[Note]:
    """Newest notes in one project, or in all the token's projects."""
    return access.note_list(_auth(request), project=params.project, limit=params.limit)


@api.post("/notes", response={201: NoteOut, **WRITE}, tags=["notes"])
def note_create(request: HttpRequest, payload: NoteIn) -> Status[Note]:
    fields = _fields(payload, defaults=True)
    return Status(201, access.note_write(_auth(request), project=payload.project, fields=fields))


@api.get("/notes/{note_id}", response={200: NoteOut, **READ}, tags=["notes"])
def note_read(request: HttpRequest, note_id: str) -> Note:
    return access.note_read(_auth(request), note_id=note_id)


@api.patch("/notes/{note_id}", response={200: NoteOut, **WRITE}, tags=["notes"])
def note_update(request: HttpRequest, note_id: str, payload: NoteFields) -> Note:
    return access.note_update(_auth(request), note_id=note_id, fields=_fields(payload))


@api.post("/notes/{note_id}/favorite", response={200: FavoriteOut, **WRITE}, tags=["notes"])
def note_favorite(request: HttpRequest, note_id: str, payload: FavoriteIn | None = None) -> Note:
    """Star (`{"favorite": true}`), unstar (`false`) or toggle (no body)."""
    value = payload.favorite if payload else None
    return access.note_favorite(_auth(request), note_id=note_id, value=value)
