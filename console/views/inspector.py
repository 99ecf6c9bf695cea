"""The Recall inspector: run a Recall or a Briefing as an agent would, and see why."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import selectors
from console.forms import InspectForm
from console.views.base import HtmxHttpRequest, login_required, page
from recall import RecallError


@login_required
@require_GET
@vary_on_headers("HX-Request")
def inspect(request: HtmxHttpRequest) -> HttpResponse:
    """Run a Recall (or a Briefing) as an agent would, without recording it."""
    form = InspectForm(
        request.GET or None,
        projects=selectors.project_slugs(),
        channels=selectors.channel_names(),
        initial={"mode": "recall"},
    )
    pack = briefing = None
    error = ""
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            if data["mode"] == "briefing":
                briefing = selectors.briefing_render(
                    project=data["project"] or None,
                    agent_type=data["agent_type"],
                    prompt=data["query"],
                    budget=data["budget"],
                )
            else:
                pack = selectors.memory_recall(
                    query=data["query"],
                    project=data["project"] or None,
                    budget=data["budget"],
                    limit=data["limit"],
                    k=data["k"],
                    channel_weights=form.channel_weights(),
                    debug=True,
                )
        except RecallError as exc:
            error = str(exc)
    context = {"form": form, "pack": pack, "briefing": briefing, "error": error}
    return page(request, "console/inspect.html", context, "inspect-result")
