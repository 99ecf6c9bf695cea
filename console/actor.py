"""Who is changing memories in this request: a person (the console) or an agent (its token).

Revisions record it (`MemoryRevision.changed_by`), so a memory's history says who
made each change. The console's middleware (`acting_person`) names the logged-in
person for the request; the REST API names the token's agent once its token is
verified (`console.api`), and MCP for each tool call (`console.mcp`). Each is scoped:
nothing carries over to the next request or call. Read lazily: most requests change nothing, and
naming the person would read the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

_ACTOR: ContextVar[Callable[[], str]] = ContextVar("actor", default=lambda: "")


def name() -> str:
    """Who is acting ("" for the system: an import, a migration, a shell)."""
    return _ACTOR.get()()[:150]


def agent(agent_id: str) -> None:
    """An agent's token acts for the rest of this request: the REST API, inside the
    request's `acting_person` scope, which resets it when the response is made."""
    _ACTOR.set(lambda: _agent(agent_id))


@contextmanager
def acting_agent(agent_id: str) -> Iterator[None]:
    """An agent's token acts inside the block (one MCP tool call), then no one again."""
    token = _ACTOR.set(lambda: _agent(agent_id))
    try:
        yield
    finally:
        _ACTOR.reset(token)


def _agent(agent_id: str) -> str:
    return f"{agent_id} (agent)"


def acting_person(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: the request acts as its logged-in person, until an agent's token says
    otherwise; reset when the response is made, so nothing leaks to the next request."""

    def middleware(request: HttpRequest) -> HttpResponse:
        token = _ACTOR.set(lambda: _person(request))
        try:
            return get_response(request)
        finally:
            _ACTOR.reset(token)

    return middleware


def _person(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return user.get_username() if user is not None and user.is_authenticated else ""
