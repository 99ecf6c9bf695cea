"""A project's altitude digest in the console: a person edits it or asks for a rebuild.

POST only (CSRF-checked by the middleware), for a project the person sees;
the page itself shows the digest (console/views/lists.py, project_detail).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from console import browse, services
from console.models import Digest, Project
from console.views.base import login_required, or_404, visible_or_404


@login_required
@require_POST
def digest_update(request: HttpRequest, key: str) -> HttpResponse:
    project: Project | None = or_404(browse.project_for, key=key)
    slug = project.slug if project else None
    visible_or_404(request, slug)
    url = reverse("project_detail", args=[key]) + "#digest"
    if request.POST.get("action") == "rebuild":
        built = services.digest_rebuild(project=slug)
        if built is None:
            messages.error(request, "No embedder is configured: a digest cannot be built.")
        else:
            messages.success(request, "Digest rebuilt from the rows.")
        return redirect(url)
    try:
        services.digest_edit(
            project=slug, text=request.POST.get("text", ""), by=request.user.get_username()
        )
    except Digest.DoesNotExist:
        messages.error(request, "There is no digest to edit yet: build it first.")
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Digest saved; automatic rebuilds keep your edit.")
    return redirect(url)
