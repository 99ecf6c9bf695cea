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

from console import browse, selectors, services
from console.models import Digest, Project
from console.views.base import changeable_or_403, login_required, or_404

DIGEST = "digest"  # its messages show in the digest section, where the person is


@login_required
@require_POST
def digest_update(request: HttpRequest, key: str) -> HttpResponse:
    project: Project | None = or_404(browse.project_for, key=key)
    slug = project.slug if project else None
    changeable_or_403(request, slug)  # the global digest: staff (`roles.can_change`)
    url = reverse("project_detail", args=[key]) + "#digest"
    if request.POST.get("action") == "rebuild":
        had = bool(selectors.digest_list(projects=[slug]))  # "Build now" makes the first
        built = services.digest_rebuild(project=slug)
        if built is None:
            messages.error(request, "No embedder is configured: a digest cannot be built.", DIGEST)
        else:
            said = "Digest rebuilt from the rows." if had else "Digest built from the rows."
            messages.success(request, said, DIGEST)
        return redirect(url)
    text = request.POST.get("text", "")
    try:
        services.digest_edit(
            project=slug, text=text, by=request.user.get_username(),
            seen=request.POST.get("seen", ""),
        )  # fmt: skip
    except Digest.DoesNotExist:
        messages.error(request, "There is no digest to edit yet: build it first.", DIGEST)
    except ValueError as exc:
        messages.error(request, str(exc), DIGEST)
        request.session[draft_key(key)] = text[: services.MAX_DIGEST_CHARS * 2]  # not lost
    else:
        messages.success(request, "Digest saved; automatic rebuilds keep your edit.", DIGEST)
    return redirect(url)


def draft_key(key: str) -> str:
    """Where a refused edit's text waits for the page to show it again (the session)."""
    return f"digest-draft:{key}"
