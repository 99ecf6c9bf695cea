"""Search and the keystroke palette.

Both read the last word as a prefix (the word being typed). Search reads a
window of the engine's best hits once, drops meaning-only noise below the
calibrated floor (console/views/present.py), orders them by the relevance
label and pages through the window; it also counts the archived matches a
search hides, so it can offer them. The palette stays on the full-text fast
path (it never embeds) and, empty, offers recent items and commands.

Both run over the person's projects only (console/roles.py: staff every
project, others their grants, global items for all); the project filter
offers those and nothing else, and the Settings and agent tokens commands are
for staff.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse, QueryDict
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import browse, roles, selectors
from console.forms import QUERY_CHARS, SearchForm
from console.views import present
from console.views.base import HtmxHttpRequest, login_required, page, partial
from console.views.paging import asked_page, page_notice
from console.views.text import Matcher
from recall import RecallError
from recall.query import NO_WORDS

WINDOW = 100  # hits read per search; the pages walk through them
PER_PAGE = 20
PALETTE_HITS = 8
# The palette keeps its rendered answers to queries this short, per (query, scope, staff),
# each while the stamp it was made under holds (`selectors.text_stamp`): every change to
# what a row shows (text, state, a delete) queues an index job and reaches the index.
SHORT_ANSWER = 4
RECENT_MAX = 8
_ID = re.compile(r"^[0-9A-Za-z]{10,26}$")


def _url(params: QueryDict, **changes: Any) -> str:
    query = params.copy()
    if "page" not in changes:
        query.pop("page", None)  # a changed filter starts again at the first page
    for key, value in changes.items():
        query.pop(key, None)
        if value and not (key == "page" and value == 1):
            query[key] = str(value)
    return f"{reverse('search')}?{query.urlencode()}"


def _hidden(params: dict[str, Any]) -> int:
    """How many archived or superseded memories match the words (the fast path)."""
    if params["include_inactive"]:
        return 0
    try:
        found = selectors.memory_search(
            **{**params, "semantic": False, "include_inactive": True},
            prefix=True,
            limit=WINDOW,
            paged=False,
        )
    except RecallError:
        return 0
    return sum(1 for h in found.hits if not h.active)


def _suggestions(data: QueryDict, params: dict[str, Any], hidden: int) -> list[tuple[str, str]]:
    """Ways out of an empty result: each drops a filter or widens the search."""
    out = []
    if params["projects"]:
        out.append(("Search all projects", _url(data, project="")))
    if params["since"] is not None:
        out.append(("Search any time", _url(data, since="")))
    if not params["semantic"]:
        out.append(("Also match by meaning", _url(data, semantic="on")))
    if hidden:
        out.append((f"Include archived ({hidden})", _url(data, archived="on")))
    return out


def _results(form: SearchForm, data: QueryDict, scope: list[str] | None) -> dict[str, Any]:
    """The page of results; `scope` is the projects searched (roles.search_scope)."""
    params = form.cleaned_query(now=timezone.now())
    scoped = {**params, "projects": scope}
    try:
        result = selectors.memory_search(**scoped, prefix=True, limit=WINDOW, paged=False)
    except RecallError as exc:
        return {"error": str(exc)}
    if not result.hits and NO_WORDS in result.warnings:
        return {"no_words": True}  # one message, not "no results" beside the warning
    hits = list(result.hits)  # the engine's semantic floor already applied
    fragments = [h.snippet for h in hits]
    matcher = Matcher.for_query(params["query"], prefix=True, fragments=fragments)
    texts = browse.texts(ids=[h.id for h in hits])
    judged = present.rank(hits, matcher, texts)
    pages = max(1, -(-len(judged) // PER_PAGE))
    number = min(asked_page(data.get("page")) or 1, pages)
    start = (number - 1) * PER_PAGE
    hidden = _hidden(scoped)
    capped = (getattr(result, "total", 0) or 0) > len(result.hits) or len(result.hits) >= WINDOW
    return {
        "rows": present.rows(judged[start : start + PER_PAGE], matcher, texts),
        "total": len(judged),
        "capped": capped,
        "start": start + 1,
        "end": min(len(judged), start + PER_PAGE),
        "prev_url": _url(data, page=number - 1) if number > 1 else "",
        "next_url": _url(data, page=number + 1) if number < pages else "",
        "page_notice": page_notice(data.get("page"), shown=number, pages=pages),
        "hidden": hidden,
        "archived_url": _url(data, archived="on") if hidden else "",
        "suggestions": _suggestions(data, params, hidden),
        "result": result,
        "browse_url": (
            reverse("project_detail", args=[params["projects"][0]]) if params["projects"] else ""
        ),
    }


@login_required
@require_GET
@vary_on_headers("HX-Request")
def search(request: HtmxHttpRequest) -> HttpResponse:
    projects = roles.project_slugs(request.user)  # a hidden project is an invalid choice
    if request.GET:
        form = SearchForm(request.GET, projects=projects)
    else:
        form = SearchForm(projects=projects, initial={"semantic": True})
    context: dict[str, Any] = {"form": form, "error": "", "q": ""}
    if form.is_bound and form.is_valid():
        context["q"] = form.cleaned_data["q"] or ""
        if context["q"].strip():
            chosen = [form.cleaned_data["project"]] if form.cleaned_data.get("project") else None
            scope = roles.search_scope(request.user, chosen)
            context.update(_results(form, request.GET, scope))
    return page(request, "console/search.html", context, "results")


TOKENS = "admin:console_agenttoken_changelist"  # agents' API and MCP tokens, in the admin
COMMANDS = [
    ("Go to Search", "search", "search find home"),
    ("Go to Favorites", "favorites", "starred favourites"),
    ("Go to Projects", "projects", "browse"),
    ("Go to Settings", "settings", "knobs configure preferences"),
    ("Go to Inspector", "inspect", "recall briefing debug"),
    ("New memory", "memory_new", "create add write"),
    ("New note", "note_new", "create add write"),
    ("Manage agent tokens", TOKENS, "api mcp keys secrets revoke admin"),
    ("Toggle theme", "", "dark light mode colour color"),
]
STAFF_ONLY = {"settings", TOKENS}


def _commands(query: str, *, staff: bool) -> list[dict[str, Any]]:
    """The palette's commands whose words start with every word typed.

    `named`: two or more words typed, each the start of a word of the command's own
    label ("new note", "go to set"): the person is naming the command, and it leads
    the list, so Enter runs it instead of opening a memory that happens to hold
    those words."""
    wanted = query.lower().split()
    out = []
    for label, view, extra in COMMANDS:
        if view in STAFF_ONLY and not staff:
            continue
        words = f"{label} {extra}".lower().split()
        if all(any(w.startswith(q) for w in words) for q in wanted):
            own = label.lower().split()
            named = len(wanted) > 1 and all(any(w.startswith(q) for w in own) for q in wanted)
            url = reverse(view) if view else ""
            out.append(
                {"label": label, "url": url, "command": "" if view else "theme", "named": named}
            )
    return out


@login_required
@require_GET
@vary_on_headers("HX-Request")
def palette(request: HtmxHttpRequest) -> HttpResponse:
    """The keystroke palette: the FTS fast path (never embeds), last word a prefix.

    The rendered answer to a short query (the first letters typed: the most asked
    and, as a prefix, the dearest) is kept per scope until the full-text plane's
    stamp moves (`selectors.palette_kept`)."""
    query = request.GET.get("q", "")[:QUERY_CHARS]
    scope = roles.search_scope(request.user, None)
    staff = roles.is_staff(request.user)
    key = (query, None if scope is None else tuple(scope), staff)
    stamp: object = None
    if partial(request) and 0 < len(query.strip()) <= SHORT_ANSWER:
        stamp, kept = selectors.palette_kept(key)
        if kept is not None:
            return HttpResponse(kept)
    context: dict[str, Any] = {"q": query, "rows": [], "error": "", "result": None}
    visible = roles.visible_projects(request.user)
    if query.strip():
        try:
            result = selectors.memory_search(
                query=query,
                projects=scope,
                semantic=False,
                prefix=True,
                limit=PALETTE_HITS,
                snippets=Matcher.marks_more(query, prefix=True),
                paged=False,
            )
        except RecallError as exc:
            context["error"] = str(exc)
        else:
            matcher = Matcher.for_query(
                query, prefix=True, fragments=[h.snippet for h in result.hits]
            )
            texts = browse.texts(ids=[h.id for h in result.hits])
            # Ordered by label as the search page orders them: a starred row that only
            # mentions the word came before the memory named by it, and Enter opened it.
            judged = present.rank(result.hits, matcher, texts)
            # One line each, cut by an ellipsis: each snippet starts near its match.
            context["rows"] = present.rows(judged, matcher, texts, chars=140, lead=30, near=True)
            context["result"] = result
            if not result.hits:  # as the search page offers them: say so, link there
                context["hidden"] = _hidden(
                    {"query": query, "projects": scope, "since": None, "include_inactive": False}
                )
    else:
        ids = [i for i in request.GET.get("recent", "").split(",") if _ID.match(i)][:RECENT_MAX]
        context["recent"] = browse.items_by_id(ids=ids, projects=visible)
        context["recent_label"] = "Recent" if context["recent"] else "Recently updated"
        if not context["recent"]:
            context["recent"] = browse.recently_updated(limit=5, projects=visible)
    context["commands"] = _commands(query, staff=staff)
    context["commands_first"] = any(c["named"] for c in context["commands"])
    wider = {"q": query, "archived": "on"} if context.get("hidden") else {"q": query}
    context["all_url"] = f"{reverse('search')}?{urlencode(wider)}"
    response = page(request, "console/palette.html", context, "palette-results")
    result = context["result"]
    if result is not None and result.timings:
        response["Server-Timing"] = f"search;dur={result.timings.get('total', 0)}"
    if stamp is not None and not context["error"]:
        selectors.palette_keep(key, stamp, response.content)
    return response
