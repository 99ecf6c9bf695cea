"""One error shape for agents, on every surface: {"detail", "field", "code"}.

`describe` turns any exception the agent-facing code raises into the HTTP
status and that body; the REST API, the MCP tools and the middleware that
catches Django's own 404/405/413/500 under /api/v1 all use it, so a rule
breaks the same way whichever door an agent came in by.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, IntegrityError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from pydantic import ValidationError as PydanticValidationError

from console.access import AccessDenied, NotVisible
from console.services import BatchError, IdempotencyConflict, StateConflict
from recall.agent import dumps
from recall.errors import (
    BudgetError,
    ConfigError,
    IndexUnavailable,
    QueryError,
    WalkConflict,
)

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1/"
JSON = "application/json; charset=utf-8"
REASONS = {
    404: "no such API path; the operations are listed at /api/v1/docs",
    405: "this path does not take that method",
    500: "an unexpected error; it has been logged",
}

CODES = {
    400: "invalid",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",  # a request body that stopped arriving (console/bodies.py)
    409: "conflict",
    413: "too_large",
    414: "too_large",
    422: "invalid",
    431: "too_large",
    500: "server_error",
    503: "unavailable",
}
# Old names a request still takes for a field (console/schemas/requests.py's
# AliasChoices): refused only when the new name is in the same request.
RENAMED = {"memory_kind": "kind", "slug": "name"}
PYDANTIC_CODES = {"extra_forbidden": "unknown_field", "missing": "missing"}
# What pydantic puts before a validator's own message ("Value error, give a JSON number").
PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")


@dataclass(frozen=True, slots=True)
class ErrorReply:
    status: int
    detail: str
    code: str
    field: str | None = None
    errors: tuple[dict[str, Any], ...] = ()

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"detail": self.detail, "field": self.field, "code": self.code}
        if len(self.errors) > 1:
            out["errors"] = list(self.errors)
        return out


def simple(status: int, detail: str) -> ErrorReply:
    return ErrorReply(status, detail, CODES.get(status, "invalid"))


def from_pydantic(errors: Sequence[Mapping[str, Any]], *, skip: int = 0) -> ErrorReply:
    """A 422 from pydantic/ninja error dicts (`skip` leading loc parts such as "body")."""
    listed: list[dict[str, Any]] = []
    for error in errors:
        # "[key]" marks a mapping's key, not its value: the key names the field anyway.
        loc = [str(part) for part in error.get("loc", ()) if part != "[key]"][skip:]
        if loc[:1] in (["payload"], ["params"]):  # the views' body and query parameters:
            loc = loc[1:]  # not fields the caller wrote
        field = ".".join(loc) or None
        code = PYDANTIC_CODES.get(str(error.get("type", "")), "invalid")
        message = str(error.get("msg", "invalid value"))
        if message.startswith(PYDANTIC_PREFIXES):  # a validator's own words are the reason
            message = message.split(", ", 1)[1]
        if code == "unknown_field":
            message = f"unknown field {field!r}"
        elif field == "cursor" and error.get("type") == "string_pattern_mismatch":
            message = "cursor: not one this API handed out; pass next_cursor as it came"
        elif code == "missing" and field is None:  # the whole body: none was sent
            message = "this call needs a JSON object as its body"
        elif field:
            message = f"{field}: {message}"
        listed.append({"detail": message, "field": field, "code": code})
    if not listed:
        return ErrorReply(422, "invalid request", "invalid")
    first = listed[0]
    return ErrorReply(422, str(first["detail"]), str(first["code"]), first["field"], tuple(listed))


def naming_what_it_takes(
    reply: ErrorReply,
    takes: Sequence[str],
    nested: Callable[[str], Sequence[str]] | None = None,
) -> ErrorReply:
    """`reply` with its detail naming the fields the call takes, when it refuses an
    unknown one: an agent that sent Search a `query` learns it is `q`. An unknown
    field inside one (`items.0.verdict`) names what that part takes (`nested` reads
    them from the schema), not the call's own fields."""
    codes = {reply.code, *(e.get("code") for e in reply.errors)}
    if "unknown_field" not in codes:
        return reply
    field = reply.field or ""
    if "." in field:
        takes = nested(field) if nested is not None else ()
        if not takes:
            return reply
    if not takes:  # archive, restore: the path names the item, and that is all
        return replace(reply, detail=f"{reply.detail}; this call takes no fields")
    old = field.rsplit(".", 1)[-1]
    new = RENAMED.get(old)
    if reply.code == "unknown_field" and new in takes and old not in takes:
        # an old name is refused only beside its new one: "unknown field 'memory_kind';
        # it takes ... kind ..." told an agent that had sent both to send what it sent
        said = f"{field} is the old name of {new}, and {new} came too: send {new} alone"
        listed = tuple({**e, "detail": said} if i == 0 else e for i, e in enumerate(reply.errors))
        return replace(reply, detail=said, errors=listed)
    return replace(reply, detail=f"{reply.detail}; it takes {', '.join(takes)}")


def _validation_text(exc: DjangoValidationError) -> tuple[str, str | None]:
    if hasattr(exc, "error_dict"):
        items = exc.message_dict
        field = next(iter(items), None)
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in items.items()), field
    return " ".join(exc.messages), None


def describe(exc: BaseException) -> ErrorReply | None:
    """The error reply for an exception, or None for one that is a real crash."""
    if isinstance(exc, QueryError):
        return ErrorReply(400, str(exc), CODES.get(400, "invalid"), exc.field)
    if isinstance(exc, BudgetError):
        return simple(400, str(exc))
    if isinstance(exc, WalkConflict):
        return ErrorReply(409, str(exc), "conflict", "cursor")
    if isinstance(exc, BatchError):
        listed = tuple(
            {"detail": message, "field": f"memories.{i}", "code": "invalid"}
            for i, message in sorted(exc.errors.items())
        )
        first = listed[0]
        return ErrorReply(400, str(exc), "invalid", first["field"], listed)
    if isinstance(exc, StateConflict):  # the field it names, when it names one
        field = next(iter(exc.message_dict), None) if hasattr(exc, "error_dict") else None
        return ErrorReply(409, " ".join(exc.messages), "conflict", field)
    if isinstance(exc, DjangoValidationError):
        detail, field = _validation_text(exc)
        return ErrorReply(400, detail, "invalid", field)
    if isinstance(exc, PydanticValidationError):
        return from_pydantic([dict(e) for e in exc.errors(include_url=False)])
    if isinstance(exc, AccessDenied):
        return simple(403, str(exc))
    if isinstance(exc, NotVisible | ObjectDoesNotExist):
        return simple(404, str(exc) or "not found")
    if isinstance(exc, IdempotencyConflict):
        return simple(409, str(exc))
    if isinstance(exc, RequestDataTooBig):
        return simple(413, "the request body is larger than the 2 MB limit")
    if isinstance(exc, SuspiciousOperation):  # e.g. over 1,000 query parameters
        return simple(400, f"the request was refused: {exc}")
    if isinstance(exc, IndexUnavailable | ConfigError):
        return simple(503, str(exc))
    if isinstance(exc, OperationalError):  # the server dropped us, a failover, a lock held
        log.warning("the database could not be used: %s", " ".join(str(exc).split()))
        return simple(503, "the database cannot be used just now; try again shortly")
    if isinstance(exc, IntegrityError):  # two requests took one slug or name at once:
        # each passed the check before the other committed, and the database kept one
        log.warning("a write collided with the database's constraints: %s", exc)
        return simple(409, "the change collided with another made at the same moment (a name "
                      "or slug taken meanwhile): read the state again and retry")  # fmt: skip
    if isinstance(exc, DataError):  # e.g. a NUL, which PostgreSQL text cannot hold
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid value"
        return simple(400, f"the database cannot store a value of this request: {reason}")
    return None


def _console_405(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """A console address that only takes a POST, opened as a page: the console's own
    page saying so (Django answers it with an empty body, a browser's error page)."""
    if response.content:
        return response
    page = render(request, "405.html", status=405)
    if "Allow" in response:
        page["Allow"] = response["Allow"]
    return page


def api_json_errors(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: under /api/v1, an error Django or ninja answered in HTML or with no
    body (an unmatched path's 404, a wrong method's 405, a server error) becomes the
    one JSON error shape, so an agent never has to parse a web page."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if response.status_code == 405 and not request.path.startswith(API_PREFIX):
            return _console_405(request, response)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        reason = REASONS.get(status, response.reason_phrase or "error")
        if status == 405 and response.get("Allow"):
            reason = f"{reason}: use {response['Allow']}"
        body = simple(status, reason).body()
        replaced = HttpResponse(dumps(body), status=status, content_type=JSON)
        for header in ("Allow", "WWW-Authenticate", "Retry-After"):
            if header in response:
                replaced[header] = response[header]
        return replaced

    return middleware
