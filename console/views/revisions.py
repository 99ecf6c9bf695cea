"""A memory's revision history (transaction time) and the diff between two revisions.

The list shows every revision the person may see (each one's project is
checked as on every page: a memory that moved from a project the person does
not see shows only the revisions since it moved; none at all is a 404, as for
an unknown id). A deleted memory's history stays readable here. By default
each revision is diffed against its predecessor; `?a=N&b=M` compares two. A
revision compared with itself (`?a=1&b=1`) showed "#1 → #1" and no change, as if
nothing had been recorded: the page says to choose two, and shows the default diffs;
a memory with one revision has nothing to compare, and offers no comparison.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import history, roles
from console.views.base import HtmxHttpRequest, login_required, page


def _number(request: HtmxHttpRequest, key: str) -> int | None:
    value = request.GET.get(key, "")
    return int(value) if value.isdigit() else None


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_revisions(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    rows = history.revisions_of(memory_id=memory_id.upper())
    shown = [r for r in rows if roles.can_see(request.user, r.project.slug if r.project else None)]
    if not shown:
        raise Http404("No such item.")
    by_number = {r.number: r for r in shown}
    a, b = _number(request, "a"), _number(request, "b")
    same = a is not None and a == b and a in by_number  # nothing to compare: said, not diffed
    if a in by_number and b in by_number and not same:
        diffs = [history.revision_diff(by_number[a], by_number[b])]
    else:
        before = [None, *shown[:-1]]
        diffs = [history.revision_diff(old, new) for old, new in zip(before, shown, strict=True)]
        diffs.reverse()  # newest first
    latest = shown[-1]
    context = {
        "latest": latest,
        "revisions": shown,
        "diffs": diffs,
        "a": a,
        "b": b,
        "same": same,
        "exists": not latest.deleted,
    }
    return page(request, "console/memory_revisions.html", context, "revisions")
