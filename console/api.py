"""The agent API (`/api/v1`): a transport over `console.operations`.

Each endpoint checks its request against the shared schema, calls one
operation and sends its JSON body compactly (the bytes an agent's context
receives, which is what a pack's `tokens` counts). Bearer tokens only (no
session auth, so no CSRF). Every error is `{"detail", "field", "code"}`
(`console.errors`): 400 bad input, 401 no/invalid/revoked token, 403 a
project the token may not name or a write without a write token, 404 an item
that does not exist in the token's scope (the same reply as for an id that
exists in another project, so ids are never confirmed across projects), 405,
409 an Idempotency-Key reused for another request or a state the request
cannot apply to (superseding an inactive memory, restoring a superseded
one), 413 a body over 2 MB, 422
a schema error (unknown fields included), 503 a plane unavailable.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import typing
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.datastructures import MultiValueDict
from ninja import NinjaAPI, Query, Schema
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.renderers import BaseRenderer
from ninja.security import HttpBearer

from console import access, actor, errors, operations, readable, tokens
from console.access import Access, AccessDenied
from console.schemas import (
    AssociationFields,
    AssociationOut,
    BatchOut,
    BriefingIn,
    ContextPackOut,
    DeletedOut,
    DissociatedOut,
    DissociationFields,
    Error,
    FavoriteIn,
    FavoriteOut,
    FeedbackIn,
    FeedbackOut,
    GraphIn,
    GraphOut,
    MemoryBatchIn,
    MemoryChange,
    MemoryIn,
    MemoryListIn,
    MemoryOut,
    MemoryPage,
    MemoryRef,
    MemoryUpdateOut,
    MemoryWriteOut,
    NoteChange,
    NoteIn,
    NoteListIn,
    NoteOut,
    NotesOut,
    NoteWrittenOut,
    Params,
    PlaneSearchIn,
    ProjectIn,
    ProjectOut,
    ProjectsOut,
    PromptIn,
    RecallIn,
    SearchIn,
    SearchOut,
    TextOut,
    field_names,
    fields_at,
    names_taken,
)
from console.schemas.requests import AS_OF, RECORDED_AS_OF
from recall.agent import dumps
from recall.config import MAX_BUDGET, MIN_BUDGET

log = logging.getLogger(__name__)
JSON = "application/json; charset=utf-8"


class TokenAuth(HttpBearer):
    """`Authorization: Bearer rct_...`: a live token becomes `request.auth` (an Access)."""

    openapi_description = "An agent token from `manage.py agent_token create`."

    def authenticate(self, request: HttpRequest, token: str) -> Access | None:
        found = tokens.token_verify(token)
        return access.access_for(found) if found is not None else None


class ObjectParser(Parser):
    """JSON bodies must be objects: a list, string, number or null is bad input, not `{}`."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        return readable.json_object(request.body)

    def parse_querydict(
        self, data: MultiValueDict[str, Any], list_fields: list[str], request: HttpRequest
    ) -> dict[str, Any]:
        """A query string's old name (`memory_kind` for `kind`) read as the new one.
        Ninja maps query parameters by field name alone: `GET /memories?memory_kind=
        gotcha` passed the unknown-field check (the schema's `AliasChoices` take the
        name) and was then dropped, so every kind came back."""
        parsed = super().parse_querydict(data, list_fields, request)
        for old, new in errors.RENAMED.items():
            if old in parsed and new not in parsed:
                parsed[new] = data.getlist(old) if new in list_fields else data[old]
        return parsed


NO_FAVORITE = FavoriteIn(favorite=None)  # no body: toggle


class CompactJSON(BaseRenderer):
    """Ninja's own replies (errors it raises) as compact JSON too."""

    media_type = "application/json"

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> str:
        return dumps(data)


# What the docs page tells someone writing an agent (the module docstring is for us).
DESCRIBED = (
    "Long-term memory for agents: recall a ranked context pack within a token budget, "
    "search, brief a session, write, supersede and archive. Send `Authorization: Bearer "
    "<token>` (`manage.py agent_token create`); a token sees its projects and the global "
    "memories. Replies are compact JSON, and a pack's `tokens` counts the reply's bytes "
    "as an agent's context receives them. Every error is `{detail, field, code}`: 400 bad "
    "input, 401 no or revoked token, 403 a project the token may not name or a write "
    "without a write token, 404 an item not in the token's scope (an id in another "
    "project reads the same), 409 a reused Idempotency-Key or a state the request cannot "
    "apply to, 413 a body over 2 MB, 422 a field the call does not take or a wrong value "
    "(the detail names the fields it takes), 503 try again shortly."
)

api = NinjaAPI(
    title="Recall agent API",
    version="1",
    description=DESCRIBED,
    urls_namespace="api-v1",
    auth=TokenAuth(),
    parser=ObjectParser(),
    renderer=CompactJSON(),
)

COMMON: dict[int, Any] = dict.fromkeys((400, 401, 403, 404, 405, 409, 413, 422, 503), Error)


def send(body: dict[str, Any], status: int = 200) -> HttpResponse:
    return HttpResponse(dumps(body), status=status, content_type=JSON)


def _answer(answer: operations.Answer) -> HttpResponse:
    return send(answer.body, answer.status)


def error_response(reply: errors.ErrorReply) -> HttpResponse:
    return send(reply.body(), reply.status)


@api.exception_handler(Exception)
def _any(request: HttpRequest, exc: Exception) -> HttpResponse:
    described = errors.describe(exc)
    if described is None:
        log.exception("unexpected error on %s", request.path)
        described = errors.simple(500, "an unexpected error; it has been logged")
    return error_response(described)


class UnknownFields(NinjaValidationError):
    """Fields a call does not know, with the names it takes (`_known`)."""

    def __init__(self, unknown: list[tuple[str, str]], takes: Iterable[str]) -> None:
        super().__init__([{"loc": loc, "type": "extra_forbidden"} for loc in unknown])
        self.takes = tuple(sorted(takes))


# Each endpoint's fields (its body's, or its query string's), by method and URL
# route ("/api/v1/memories/<memory_id>"): ninja refuses an unknown body field before
# the view runs, so the reply is told them here.
TAKES: dict[tuple[str, str], type[Schema]] = {}


def _route(path: str) -> str:
    """An endpoint's path as Django's resolver spells its route."""
    return errors.API_PREFIX.rstrip("/") + re.sub(r"\{(\w+)\}", r"<\1>", path)


def _schema_of(view: Callable[..., HttpResponse]) -> type[Schema] | None:
    """The schema of a view's body, or of its query string."""
    hints = typing.get_type_hints(view, include_extras=True)
    for name in ("payload", "params"):
        model = hints.get(name)
        if typing.get_origin(model) is typing.Annotated:  # Query[X]
            model = typing.get_args(model)[0]
        if isinstance(model, type) and issubclass(model, Schema):
            return model
    return None


@api.exception_handler(NinjaValidationError)
def _schema(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    found = list(exc.errors)
    if request.method in ("POST", "PATCH"):  # body calls take no query parameters
        listed = {tuple(e.get("loc", ())) for e in found}
        found += [
            {"loc": ("query", key), "type": "extra_forbidden"}
            for key in request.GET
            if ("query", key) not in listed
        ]
    route = "/" + request.resolver_match.route if request.resolver_match else ""
    schema = TAKES.get((request.method or "", route))
    takes = field_names(schema) if schema is not None else ()
    if isinstance(exc, UnknownFields):
        takes = exc.takes
    nested = functools.partial(fields_at, schema) if schema is not None else None
    described = errors.from_pydantic(found, skip=1)
    return error_response(errors.naming_what_it_takes(described, takes, nested))


UNREADABLE = "the body must be one JSON object ({...}): it is not valid JSON, or not an object"


@api.exception_handler(HttpError)
def _http(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, readable.NumberOutOfRange):  # valid JSON, no such number
        field = exc.__cause__.field
        return error_response(errors.ErrorReply(422, f"{field}: {exc.__cause__}", "invalid", field))
    detail = str(exc)
    if exc.status_code == 400 and detail.startswith("Cannot parse request body"):
        detail = UNREADABLE  # ninja's words hide which (ObjectParser's reason)
    return error_response(errors.simple(exc.status_code, detail))


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    detail = "a valid agent token is required: Authorization: Bearer <token>"
    return error_response(errors.simple(401, detail))


def _auth(request: HttpRequest) -> Access:
    found = getattr(request, "auth", None)
    if not isinstance(found, Access):  # ninja's auth ran first: never reached
        raise AccessDenied("no verified token on this request")
    actor.agent(found.agent)  # revisions of what this request changes name its agent
    return found


def _known(request: HttpRequest, schema: type[Params] = Params, *extra: str) -> None:
    """Query parameters (and, on a call that takes no body, body fields) the call does
    not know are refused, as unknown fields of a body schema are."""
    names = {*field_names(schema), *extra}  # what the refusal says it takes
    taken = names | names_taken(schema)  # and the old names it still reads
    unknown = [("query", key) for key in request.GET if key not in taken]
    if request.method in ("POST", "DELETE") and request.body.strip():
        try:  # its keys alone: a number too long to read is still a field it does not take
            body = json.loads(request.body, parse_int=str)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise HttpError(400, "this call takes no body")
        unknown += [("body", key) for key in body]
    if unknown:
        raise UnknownFields(unknown, names)


IDEMPOTENCY_KEY_CHARS = 200  # as the body's `idempotency_key`


def _key(request: HttpRequest) -> str | None:
    key = request.headers.get("Idempotency-Key") or None
    if key is not None and len(key) > IDEMPOTENCY_KEY_CHARS:
        raise NinjaValidationError([{
            "loc": ["header", "Idempotency-Key"], "type": "string_too_long",
            "msg": f"String should have at most {IDEMPOTENCY_KEY_CHARS} characters",
        }])  # fmt: skip
    return key


def _checked(view: Callable[..., HttpResponse], *, body: bool) -> Callable[..., HttpResponse]:
    """`view` refusing a query string that is not UTF-8 (`readable.query_string_utf8`)
    and, on a call that takes a `body`, any query parameter at all."""

    @functools.wraps(view)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        readable.query_string_utf8(request.META.get("QUERY_STRING", ""))
        if body and request.GET:
            raise NinjaValidationError(
                [{"loc": ("query", k), "type": "extra_forbidden"} for k in request.GET]
            )
        return view(request, *args, **kwargs)

    return checked


def endpoint(
    method: str, path: str, op: str, response: dict[int, Any], tags: list[str]
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Register a view with an explicit operation id, its docstring as description."""
    route = getattr(api, method)

    def register(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        summary = (view.__doc__ or op).strip().splitlines()[0]
        schema = _schema_of(view)
        if schema is not None:
            TAKES[method.upper(), _route(path)] = schema
        return route(  # type: ignore[no-any-return]
            path,
            response={**response, **COMMON},
            tags=tags,
            operation_id=op,
            summary=summary,
            description=view.__doc__ or summary,
        )(_checked(view, body="payload" in inspect.signature(view).parameters))

    return register


# --- retrieval ----------------------------------------------------------------


@endpoint("post", "/recall", "recall", {200: ContextPackOut}, ["retrieval"])
def recall(request: HttpRequest, payload: RecallIn) -> HttpResponse:
    """Recall: ranked memories with their text, the whole reply within `budget` tokens."""
    return _answer(operations.recall(_auth(request), payload))


@endpoint("post", "/feedback", "feedback", {200: FeedbackOut}, ["retrieval"])
def feedback(request: HttpRequest, payload: FeedbackIn) -> HttpResponse:
    """Memory Worth: per item of a recalled pack (its `pack_id`), used / helpful / harmful.

    Needs a write token (worth ranks memories for every agent); only the agent that
    recalled the pack may rate it."""
    return _answer(operations.feedback(_auth(request), payload))


@endpoint("get", "/search", "search", {200: SearchOut}, ["retrieval"])
def search(request: HttpRequest, params: Query[SearchIn]) -> HttpResponse:
    """Search the token's projects (or the repeated `project`s), a page at a time."""
    _known(request, SearchIn)
    return _answer(operations.search(_auth(request), params))


@endpoint("get", "/search/text", "search_text", {200: SearchOut}, ["retrieval"])
def search_text(request: HttpRequest, params: Query[PlaneSearchIn]) -> HttpResponse:
    """Full text alone: BM25 ranking and scores, no fusion (the raw text plane)."""
    _known(request, PlaneSearchIn)
    return _answer(operations.search_text(_auth(request), params))


@endpoint("get", "/search/vector", "search_vector", {200: SearchOut}, ["retrieval"])
def search_vector(request: HttpRequest, params: Query[PlaneSearchIn]) -> HttpResponse:
    """Vectors alone: cosine ranking and scores, no floor, no fusion (the raw vector plane)."""
    _known(request, PlaneSearchIn)
    return _answer(operations.search_vector(_auth(request), params))


@endpoint("post", "/graph", "memory_graph", {200: GraphOut}, ["retrieval"])
def memory_graph(request: HttpRequest, payload: GraphIn) -> HttpResponse:
    """Walk the memory graph from one memory: what its links and associations reach."""
    return _answer(operations.memory_graph(_auth(request), payload))


@endpoint("post", "/briefing", "briefing", {200: TextOut}, ["retrieval"])
def briefing(request: HttpRequest, payload: BriefingIn) -> HttpResponse:
    """The session-start briefing: its text, the ids it shows, its tokens."""
    return _answer(operations.briefing(_auth(request), payload))


@endpoint("post", "/prompt-recall", "prompt_recall", {200: TextOut}, ["retrieval"])
def prompt_recall(request: HttpRequest, payload: PromptIn) -> HttpResponse:
    """The per-prompt recall block ("" when nothing clears the floors), within its budget."""
    return _answer(operations.prompt_recall(_auth(request), payload))


# --- memories -----------------------------------------------------------------


@endpoint("get", "/memories", "memory_list", {200: MemoryPage}, ["memories"])
def memory_list(request: HttpRequest, params: Query[MemoryListIn]) -> HttpResponse:
    """List memories newest first, filtered, a page at a time (`next_cursor`)."""
    _known(request, MemoryListIn)
    return _answer(operations.memory_list(_auth(request), params))


@endpoint(
    "post", "/memories", "memory_write", {200: MemoryWriteOut, 201: MemoryWriteOut}, ["memories"]
)
def memory_write(request: HttpRequest, payload: MemoryIn) -> HttpResponse:
    """Write a memory: 201 created, or 200 with the stored one when the text is already there.

    Send an `Idempotency-Key` header to make retries safe: a retry gets the first answer.
    """
    return _answer(operations.memory_write(_auth(request), payload, key=_key(request)))


@endpoint(
    "post", "/memories/batch", "memory_write_batch", {200: BatchOut, 201: BatchOut}, ["memories"]
)
def memory_write_batch(request: HttpRequest, payload: MemoryBatchIn) -> HttpResponse:
    """Write up to 500 memories in one transaction: all of them, or (on any error) none.

    201 when any was created; 200 when every text was already there (as one write).
    """
    return _answer(operations.memory_write_batch(_auth(request), payload, key=_key(request)))


# A past state of a memory (console/history.py): RFC 3339 instants, with their offset.
AS_OF_QUERY: Any = Query(None, description=AS_OF)  # type: ignore[type-arg]
RECORDED_AS_OF_QUERY: Any = Query(None, description=RECORDED_AS_OF)  # type: ignore[type-arg]
BUDGET_QUERY: Any = Query(  # type: ignore[type-arg]
    None,
    ge=MIN_BUDGET,
    le=MAX_BUDGET,
    description="tokens the whole reply may take: a longer body is cut to fit",
)  # a memory's or a note's read


@endpoint("get", "/memories/{memory_id}", "memory_read", {200: MemoryOut}, ["memories"])
def memory_read(
    request: HttpRequest,
    memory_id: str,
    project: str | None = Query(  # type: ignore[type-arg]
        None, min_length=1, max_length=64, description="where to resolve a name"
    ),
    as_of: datetime | None = AS_OF_QUERY,
    recorded_as_of: datetime | None = RECORDED_AS_OF_QUERY,
    budget: int | None = BUDGET_QUERY,
) -> HttpResponse:
    """Read one memory by id, or by name (in `project` first, then global); with
    `as_of` / `recorded_as_of`, as it was then (404 if it was not valid / known); with
    `budget`, its body cut to fit."""
    _known(request, Params, "project", "as_of", "recorded_as_of", "budget")
    when = {"as_of": as_of, "recorded_as_of": recorded_as_of, "budget": budget}
    ref = MemoryRef.model_validate(
        {"id": memory_id, "name": None, "project": project, **when}
        if len(memory_id) <= 26
        else {"id": None, "name": memory_id, "project": project, **when}
    )
    return _answer(operations.memory_read(_auth(request), ref))


@endpoint("patch", "/memories/{memory_id}", "memory_update", {200: MemoryUpdateOut}, ["memories"])
def memory_update(request: HttpRequest, memory_id: str, payload: MemoryChange) -> HttpResponse:
    """Edit a memory in place (a correction; use supersede when the fact changed)."""
    return _answer(operations.memory_update(_auth(request), memory_id, payload))


@endpoint("delete", "/memories/{memory_id}", "memory_delete", {200: DeletedOut}, ["memories"])
def memory_delete(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Delete a memory for good; its index rows follow."""
    _known(request)
    return _answer(operations.memory_delete(_auth(request), memory_id))


@endpoint(
    "post", "/memories/{memory_id}/supersede", "memory_supersede", {201: MemoryWriteOut},
    ["memories"],
)  # fmt: skip
def memory_supersede(request: HttpRequest, memory_id: str, payload: MemoryChange) -> HttpResponse:
    """Replace a memory: the new one carries over every field not given.

    Send an `Idempotency-Key` header to make retries safe: a retry gets the first answer.
    """
    who = _auth(request)
    return _answer(operations.memory_supersede(who, memory_id, payload, key=_key(request)))


@endpoint("post", "/memories/{memory_id}/archive", "memory_archive", {200: MemoryOut}, ["memories"])
def memory_archive(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Archive a memory: it stops being recalled, and can be restored."""
    _known(request)
    return _answer(operations.memory_archive(_auth(request), memory_id))


@endpoint("post", "/memories/{memory_id}/restore", "memory_restore", {200: MemoryOut}, ["memories"])
def memory_restore(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Restore an archived memory."""
    _known(request)
    return _answer(operations.memory_restore(_auth(request), memory_id))


@endpoint(
    "post", "/memories/{memory_id}/associate", "memory_associate",
    {200: AssociationOut, 201: AssociationOut}, ["memories"],
)  # fmt: skip
def memory_associate(
    request: HttpRequest, memory_id: str, payload: AssociationFields
) -> HttpResponse:
    """Link a memory to another (same project or global) with a type and a weight 0-1:
    201 created, or 200 with the weight of the existing one of that type set."""
    return _answer(operations.memory_associate(_auth(request), memory_id, payload))


@endpoint(
    "post", "/memories/{memory_id}/dissociate", "memory_dissociate", {200: DissociatedOut},
    ["memories"],
)  # fmt: skip
def memory_dissociate(
    request: HttpRequest, memory_id: str, payload: DissociationFields
) -> HttpResponse:
    """Remove a memory's association(s) to another (of one type, or all)."""
    return _answer(operations.memory_dissociate(_auth(request), memory_id, payload))


@endpoint(
    "post", "/memories/{memory_id}/favorite", "memory_favorite", {200: FavoriteOut}, ["memories"]
)
def memory_favorite(
    request: HttpRequest, memory_id: str, payload: FavoriteIn = NO_FAVORITE
) -> HttpResponse:
    """Star (`{"favorite": true}`), unstar (`false`) or toggle (no body)."""
    return _answer(operations.memory_favorite(_auth(request), memory_id, payload))


# --- notes --------------------------------------------------------------------


@endpoint("get", "/notes", "note_list", {200: NotesOut}, ["notes"])
def note_list(request: HttpRequest, params: Query[NoteListIn]) -> HttpResponse:
    """Newest notes in one project, or in all the token's projects."""
    _known(request, NoteListIn)
    return _answer(operations.note_list(_auth(request), params))


@endpoint("post", "/notes", "note_write", {200: NoteWrittenOut, 201: NoteWrittenOut}, ["notes"])
def note_write(request: HttpRequest, payload: NoteIn) -> HttpResponse:
    """Write a note for people (a longer write-up): 201 created, or 200 with the note
    there (`existing`) when the project holds this very title and body already.

    Send an `Idempotency-Key` header to make retries safe: a retry gets the first answer.
    """
    return _answer(operations.note_write(_auth(request), payload, key=_key(request)))


@endpoint("get", "/notes/{note_id}", "note_read", {200: NoteOut}, ["notes"])
def note_read(
    request: HttpRequest,
    note_id: str,
    budget: int | None = BUDGET_QUERY,
) -> HttpResponse:
    """Read one note; with `budget`, its body cut to fit (`truncated`, `body_chars`)."""
    _known(request, Params, "budget")
    return _answer(operations.note_read(_auth(request), note_id, budget=budget))


@endpoint("patch", "/notes/{note_id}", "note_update", {200: NoteWrittenOut}, ["notes"])
def note_update(request: HttpRequest, note_id: str, payload: NoteChange) -> HttpResponse:
    """Edit a note."""
    return _answer(operations.note_update(_auth(request), note_id, payload))


@endpoint("post", "/notes/{note_id}/favorite", "note_favorite", {200: FavoriteOut}, ["notes"])
def note_favorite(
    request: HttpRequest, note_id: str, payload: FavoriteIn = NO_FAVORITE
) -> HttpResponse:
    """Star (`{"favorite": true}`), unstar (`false`) or toggle (no body)."""
    return _answer(operations.note_favorite(_auth(request), note_id, payload))


# --- projects -------------------------------------------------------------------


@endpoint("get", "/projects", "project_list", {200: ProjectsOut}, ["projects"])
def project_list(request: HttpRequest) -> HttpResponse:
    """The projects this token may use."""
    _known(request)
    return _answer(operations.project_list(_auth(request)))


@endpoint("post", "/projects", "project_create", {201: ProjectOut}, ["projects"])
def project_create(request: HttpRequest, payload: ProjectIn) -> HttpResponse:
    """Create a project (a token with the admin scope), granted to this token."""
    return _answer(operations.project_create(_auth(request), payload))
