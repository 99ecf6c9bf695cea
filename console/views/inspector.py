"""The Recall inspector: run a Recall or a Briefing as an agent would, and see why.

Each recalled item shows its text, its dates and why it came, in words (the
channels' numbers sit behind a disclosure). Without a project the run is an
agent bound to no project, which sees only global memories: the page says
so. A briefing with a query is the briefing a subagent gets (constraints
plus the memories that match its task), so the query is never ignored. The
project choices are the person's own (console/roles.py), so a run for a
project they do not see is refused at the field.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import browse, roles, selectors
from console.forms import InspectForm
from console.views import present
from console.views.base import HtmxHttpRequest, login_required, page, partial
from console.views.text import Matcher
from recall import RecallError

OMITTED_SHOWN = 10
SUBAGENT = "subagent"  # the type a briefing with a query runs as when none is given


def _recall(form: InspectForm, visible: list[str]) -> dict[str, Any]:
    data = form.cleaned_data
    pack = selectors.memory_recall(
        altitude=data.get("altitude") or None,
        visible=visible,
        query=data["query"],
        project=data["project"] or None,
        budget=data["budget"],
        limit=data["limit"],
        rrf_k=data["rrf_k"],
        channel_weights=form.channel_weights(),
        debug=True,
        graph={**form.graph_options(), **form.session_options()},
        knobs=form.knob_options(),
        filters=form.filter_options(),
    )
    matcher = Matcher.for_query(data["query"])
    texts = browse.texts(ids=[h.id for h in pack.items])
    judged = present.rank(pack.items, matcher, texts, order=False)
    rows = present.rows(judged, matcher, texts, chars=400)
    ids = (pack.debug or {}).get("omitted_ids") or []
    omitted = [str(i) for i in ids] if isinstance(ids, list) else []
    omitted_items = browse.items_by_id(ids=omitted[:OMITTED_SHOWN])
    more = max(0, pack.omitted - len(omitted_items))
    titles = {h.id: h.title for h in pack.items}
    associated = [(h, titles.get(h.via or "", h.via)) for h in pack.associated or ()]
    return {
        "pack": pack, "rows": rows, "omitted_items": omitted_items, "omitted_more": more,
        "associated": associated, "altitude": (pack.debug or {}).get("altitude"),
    }  # fmt: skip


def _briefing(form: InspectForm) -> dict[str, Any]:
    data = form.cleaned_data
    agent_type = data["agent_type"] or (SUBAGENT if data["query"].strip() else "")
    briefing = selectors.briefing_render(
        project=data["project"] or None,
        agent_type=agent_type,
        prompt=data["query"],
        budget=data["budget"],
    )
    items = browse.items_by_id(ids=list(briefing.ids))
    cut = browse.items_by_id(ids=list(briefing.omitted[:OMITTED_SHOWN]))
    return {
        "briefing": briefing, "briefing_items": items, "as_subagent": bool(agent_type),
        "briefing_cut": cut, "briefing_cut_more": max(0, len(briefing.omitted) - len(cut)),
        "prompt_floors": selectors.prompt_floors(),
    }  # fmt: skip


@login_required
@require_GET
@vary_on_headers("HX-Request")
def inspect(request: HtmxHttpRequest) -> HttpResponse:
    """Run a Recall (or a Briefing) as an agent would, without recording it."""
    asked = request.GET.copy()
    if asked:
        asked.setdefault("mode", "recall")  # a link written without it: what the page opens on
    form = InspectForm(
        asked or None,
        projects=roles.project_slugs(request.user),
        channels=selectors.channel_names(),
        initial={"mode": "recall"},
    )
    context: dict[str, Any] = {"form": form, "pack": None, "briefing": None, "error": ""}
    context["oob"] = partial(request)  # each field's error goes to its slot beside the field
    if form.is_bound and form.is_valid():
        context["no_project"] = not form.cleaned_data["project"]
        try:
            if form.cleaned_data["mode"] == "briefing":
                context.update(_briefing(form))
            else:
                context.update(_recall(form, roles.project_slugs(request.user)))
        except RecallError as exc:
            context["error"] = str(exc)
    return page(request, "console/inspect.html", context, "inspect-result")
