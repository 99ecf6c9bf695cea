"""Export a project (or everything the person sees) and import a file into a project.

The export is the command's JSON lines, streamed. The import is an upload, its
preview (nothing written), then the import itself (console/transfer.py). An
upload is bound to the session that sent it: its token in another session is
answered as a gone one, so nobody applies a file they did not preview.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console import browse, roles, transfer
from console.models import Project
from console.views.base import HtmxHttpRequest, changeable_or_403, login_required, or_404

_UPLOADS = "import_uploads"  # session key: {token: project slug}


@login_required
@require_GET
def export_download(request: HtmxHttpRequest) -> StreamingHttpResponse:
    """`?project=<slug>`: that project; without: every project the person sees and the
    global items. A project the person does not see is a 404, as everywhere."""
    slug = request.GET.get("project") or None
    if slug is not None:
        or_404(Project.objects.get, slug=slug)
        if not roles.can_see(request.user, slug):
            raise Http404("No such item.")
    lines = transfer.export_lines(project=slug, within=roles.visible_projects(request.user))
    response = StreamingHttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    name = transfer.export_filename(slug, today=timezone.now().date())
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _target(request: HtmxHttpRequest, key: str) -> Project:
    """The project to import into: one the person may change (never the global items)."""
    project = or_404(browse.project_for, key=key)
    if project is None:
        raise Http404("Import into a project: the global memories are written one by one.")
    changeable_or_403(request, project.slug)
    return project


@login_required
@require_http_methods(["GET", "POST"])
@csrf_exempt  # checked by `_import_upload`, once the size cap is in place (below)
def import_upload(request: HtmxHttpRequest, key: str) -> HttpResponse:
    """The upload form; a POSTed file is kept and previewed. A body announced over the
    limit is refused before it is read, and one that streams past it is cut off
    (`transfer.CappedUpload`): the CSRF check reads the body, so the cap goes in first
    (Django's "modifying upload handlers on the fly")."""
    project = _target(request, key)
    context: dict[str, Any] = {"project": project, "max_mb": transfer.MAX_UPLOAD_BYTES // 2**20}
    capped = transfer.CappedUpload(request)
    if request.method == "POST":
        context["refused"] = transfer.announced_over(request.META.get("CONTENT_LENGTH"))
        if context["refused"] is not None:
            return render(request, "console/import.html", context, status=413)
        request.upload_handlers.insert(0, capped)
    return _import_upload(request, key, context, capped)


@csrf_protect
def _import_upload(
    request: HtmxHttpRequest, key: str, context: dict[str, Any], capped: transfer.CappedUpload
) -> HttpResponse:
    if request.method == "POST":
        file = request.FILES.get("file")
        if capped.refused is not None:
            context["refused"] = f"{capped.refused}: nothing was kept."
            return render(request, "console/import.html", context, status=413)
        if file is None:
            context["refused"] = "Choose a JSON-lines file (.jsonl) to import."
            return render(request, "console/import.html", context, status=400)
        try:
            upload = transfer.upload_keep(file)
        except transfer.UploadRefused as exc:
            context["refused"] = str(exc)
            return render(request, "console/import.html", context, status=400)
        request.session[_UPLOADS] = {**request.session.get(_UPLOADS, {}), upload.token: key}
        context |= {
            "upload": upload,
            "preview": transfer.import_preview(upload, project=context["project"].slug),
        }
    return render(request, "console/import.html", context)


@login_required
@require_POST
def import_apply(request: HtmxHttpRequest, key: str) -> HttpResponse:
    """Import a previewed upload, then back to the project with what was done."""
    project = _target(request, key)
    token = request.POST.get("token", "")
    kept: dict[str, str] = request.session.get(_UPLOADS, {})
    upload = transfer.upload_find(token) if kept.get(token) == key else None
    report = transfer.import_apply(upload, project=project.slug) if upload else None
    if upload is None or report is None:
        messages.error(request, "That upload is gone (imported, or a day old): upload it again.")
        return redirect(reverse("import_upload", args=[key]))
    request.session[_UPLOADS] = {t: k for t, k in kept.items() if t != token}
    said = (
        f"Imported {report.memories} memor{'y' if report.memories == 1 else 'ies'} and "
        f"{report.notes} note{'' if report.notes == 1 else 's'} from {upload.name}; "
        f"{report.skipped} already here"
    )
    renamed = len(report.renamed)
    if renamed:
        said += f"; {renamed} note{'' if renamed == 1 else 's'} under another name"
    if report.errors:
        said += f"; {len(report.errors)} refused (the preview listed them)"
    said += ". Search finds them as the index worker indexes them"
    messages.success(request, said + " (`manage.py index_status` counts what waits).")
    return redirect(reverse("project_detail", args=[key]))
