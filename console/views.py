"""Human console views: thin functions over selectors and services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.models import Memory


@login_required
@require_GET
def search(request: HttpRequest) -> HttpResponse:
    memories = Memory.objects.select_related("project").filter(invalid_at__isnull=True)[:200]
    return render(request, "console/memory_list.html", {"memories": memories})
