"""Favorites, projects and a project's page (browse its memories).

Each lists only what the person sees (console/roles.py): their projects and
the global items; a project page outside them is a 404, as for an unknown slug.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import browse, roles, selectors, services
from console.forms import BrowseForm
from console.models import Project
from console.views import digests
from console.views.base import (
    HtmxHttpRequest,
    login_required,
    or_404,
    page,
    partial,
    visible_or_404,
)
from console.views.paging import asked_page, page_notice


@login_required
@require_GET
@vary_on_headers("HX-Request")
def favorites(request: HtmxHttpRequest) -> HttpResponse:
    memories, notes = browse.favorites(projects=roles.visible_projects(request.user))
    context = {"memories": memories, "notes": notes}
    return page(request, "console/favorites.html", context, "favorites")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def projects(request: HtmxHttpRequest) -> HttpResponse:
    rows = selectors.project_list()
    visible = roles.visible_projects(request.user)
    if visible is not None:
        rows = rows.filter(slug__in=visible)
    context = {"projects": rows, "global_key": browse.GLOBAL, "staff": visible is None}
    return page(request, "console/projects.html", context, "projects")


def _page_url(request: HtmxHttpRequest, number: int) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    if number > 1:
        query["page"] = str(number)
    return f"{request.path}?{query.urlencode()}" if query else request.path


@login_required
@require_GET
@vary_on_headers("HX-Request")
def project_detail(request: HtmxHttpRequest, key: str) -> HttpResponse:
    """A project's memories, sorted, filtered (with counts) and paged, and its notes."""
    project: Project | None = or_404(browse.project_for, key=key)
    slug = project.slug if project else None
    visible_or_404(request, slug)
    form = BrowseForm(request.GET)
    filters = form.filters()
    asked = request.GET.get("page")
    listing = browse.project_memories(project=project, page=asked_page(asked) or 1, **filters)
    form.facets(
        kinds={f.value: f.count for f in listing.kinds},
        tags={f.value: f.count for f in listing.tags},
    )
    notes, note_count = browse.project_notes(project=project)
    context: dict[str, Any] = {
        "project": project,
        "key": key,
        "form": form,
        "listing": listing,
        "filters": filters,
        "page_notice": page_notice(asked, shown=listing.page, pages=listing.pages),
        "notes": notes,
        "note_count": note_count,
        "prev_url": _page_url(request, listing.page - 1) if listing.page > 1 else "",
        "next_url": _page_url(request, listing.page + 1) if listing.page < listing.pages else "",
        "search_url": reverse("search") + (f"?project={project.slug}" if project else ""),
        "oob": partial(request),  # the facet counts follow the filters
        "digest": next(
            iter(selectors.digest_list(projects=[project.slug if project else None])), None
        ),
        "digest_draft": request.session.pop(digests.draft_key(key), None),
        "digest_chars": services.MAX_DIGEST_CHARS,
        "may_import": project is not None and roles.can_change(request.user, project.slug),
    }
    if context["digest"] is not None:
        context["digest_seen"] = services.digest_stamp(context["digest"])
    return page(request, "console/project.html", context, "browse")
