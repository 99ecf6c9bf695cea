"""Favorites and projects."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from console import selectors
from console.views.base import HtmxHttpRequest, login_required, page


@login_required
@require_GET
@vary_on_headers("HX-Request")
def favorites(request: HtmxHttpRequest) -> HttpResponse:
    memories, notes = selectors.favorites_list()
    context = {"memories": memories, "notes": notes}
    return page(request, "console/favorites.html", context, "favorites")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def projects(request: HtmxHttpRequest) -> HttpResponse:
    context = {"projects": selectors.project_list()}
    return page(request, "console/projects.html", context, "projects")
