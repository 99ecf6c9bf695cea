"""Search and the keystroke palette."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import selectors
from console.forms import SearchForm
from console.views.base import HtmxHttpRequest, login_required, page
from recall import RecallError


@login_required
@require_GET
@vary_on_headers("HX-Request")
def search(request: HtmxHttpRequest) -> HttpResponse:
    projects = selectors.project_slugs()
    if request.GET:
        form = SearchForm(request.GET, projects=projects)
    else:
        form = SearchForm(projects=projects, initial={"semantic": True})
    result, error = None, ""
    if form.is_bound and form.is_valid():
        params = form.cleaned_query(now=timezone.now())
        if params["query"].strip():
            try:
                result = selectors.memory_search(**params)
            except RecallError as exc:
                error = str(exc)
    context = {"form": form, "result": result, "error": error}
    return page(request, "console/search.html", context, "results")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def palette(request: HtmxHttpRequest) -> HttpResponse:
    """The keystroke palette: the FTS fast path (never embeds), last word a prefix."""
    query = request.GET.get("q", "")[:500]
    result, error = None, ""
    if query.strip():
        try:
            result = selectors.memory_search(query=query, semantic=False, prefix=True, limit=8)
        except RecallError as exc:
            error = str(exc)
    context = {"q": query, "result": result, "error": error}
    response = page(request, "console/palette.html", context, "palette-results")
    if result is not None and result.timings:
        response["Server-Timing"] = f"search;dur={result.timings.get('total', 0)}"
    return response
