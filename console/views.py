"""Human console views: thin functions over selectors and services.

Every view checks the login itself, so a partial request cannot bypass it.
One template per page; an htmx request gets the page's inline partial
(`Vary: HX-Request`). Every POST also works as a plain form: it redirects,
while the htmx one gets the fragment back. Query errors show inline with a
200, since htmx 2 does not swap 4xx responses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from console import selectors, services
from console.forms import ConfigForm, InspectForm, MemoryForm, SearchForm
from console.models import Memory, Note
from recall import RecallError

V = TypeVar("V", bound=Callable[..., HttpResponse])
BRIEFING = "briefing_config"


# --- plumbing -----------------------------------------------------------------


def login_required(view: V) -> V:
    """Anonymous pages redirect to the login; anonymous htmx requests get a 403
    whose HX-Redirect sends the whole window to the login page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if getattr(request, "htmx", False):
            current = urlsplit(request.htmx.current_url or "/")  # type: ignore[attr-defined]
            response = HttpResponse("Log in to continue.", status=403)
            next_url = current.path + (f"?{current.query}" if current.query else "")
            response["HX-Redirect"] = f"{reverse('login')}?{urlencode({'next': next_url})}"
            return response
        return redirect_to_login(request.get_full_path())

    return wrapped  # type: ignore[return-value]


def _partial(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request  # type: ignore[union-attr]


def _page(
    request: HttpRequest, template: str, context: dict[str, Any], partial: str
) -> HttpResponse:
    if _partial(request):
        template = f"{template}#{partial}"
    return render(request, template, context)


def _done(request: HttpRequest, url: str) -> HttpResponse:
    """After a successful write: htmx navigates the window, a plain form redirects."""
    return HttpResponseClientRedirect(url) if _partial(request) else redirect(url)


def _next_url(request: HttpRequest, default: str) -> str:
    url = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return url if url and safe else default


def _or_404(get: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return get(**kwargs)
    except ObjectDoesNotExist as exc:
        raise Http404("No such item.") from exc


def _memory(memory_id: str) -> Memory:
    return _or_404(selectors.memory_get, memory_id=memory_id)  # type: ignore[no-any-return]


def _add_errors(form: Any, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


# --- search and palette -------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def search(request: HttpRequest) -> HttpResponse:
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
    return _page(request, "console/search.html", context, "results")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def palette(request: HttpRequest) -> HttpResponse:
    """The keystroke palette: the FTS fast path (never embeds), last word a prefix."""
    query = request.GET.get("q", "")[:500]
    result, error = None, ""
    if query.strip():
        try:
            result = selectors.memory_search(query=query, semantic=False, prefix=True, limit=8)
        except RecallError as exc:
            error = str(exc)
    context = {"q": query, "result": result, "error": error}
    response = _page(request, "console/palette.html", context, "palette-results")
    if result is not None and result.timings:
        response["Server-Timing"] = f"search;dur={result.timings.get('total', 0)}"
    return response


# --- memories and notes -------------------------------------------------------


def _detail_context(memory_id: str) -> dict[str, Any]:
    detail = _or_404(selectors.memory_detail, memory_id=memory_id)
    memory = detail.memory
    links = {m.name: reverse("memory_detail", args=[m.pk]) for m in detail.links}
    return {"d": detail, "m": memory, "links": links, "by_name": _by_name(memory.project)}


def _by_name(project: Any) -> str:
    """The `[[name]]` fallback URL, `__name__` filled in by the markdown tag."""
    url = reverse("memory_by_name", args=["__name__"])
    return f"{url}?{urlencode({'project': project.slug})}" if project else url


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_detail(request: HttpRequest, memory_id: str) -> HttpResponse:
    return _page(request, "console/memory.html", _detail_context(memory_id), "memory-main")


@login_required
@require_GET
def memory_by_name(request: HttpRequest, name: str) -> HttpResponse:
    """Where a `[[name]]` link lands: the active memory of that name (the
    linking project's first, then global), else a search for the name."""
    project = request.GET.get("project") or None
    try:
        hits = selectors.memory_search(
            query=name, projects=[project] if project else None, semantic=False, limit=10
        ).hits
    except RecallError:
        hits = ()
    named = [h for h in hits if h.kind == "memory" and h.name == name and h.active]
    named.sort(key=lambda h: h.project != project)
    if named:
        return redirect("memory_detail", memory_id=named[0].id)
    return redirect(f"{reverse('search')}?{urlencode({'q': name})}")


def _memory_form(request: HttpRequest, memory: Memory, *, supersede: bool) -> HttpResponse:
    if request.method == "POST":
        form = MemoryForm(request.POST)
        if form.is_valid():
            write = services.memory_supersede if supersede else services.memory_update
            try:
                saved = write(memory=memory, **form.cleaned_data)
            except ValidationError as exc:
                _add_errors(form, exc)
            else:
                verb = "Superseded" if supersede else "Saved"
                messages.success(request, f"{verb} {saved.name}.")
                return _done(request, reverse("memory_detail", args=[saved.pk]))
    else:
        form = MemoryForm(initial=MemoryForm.initial_from(memory))
    context = {"form": form, "m": memory, "supersede": supersede}
    return _page(request, "console/memory_form.html", context, "memory-form")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_edit(request: HttpRequest, memory_id: str) -> HttpResponse:
    return _memory_form(request, _memory(memory_id), supersede=False)


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_supersede(request: HttpRequest, memory_id: str) -> HttpResponse:
    return _memory_form(request, _memory(memory_id), supersede=True)


def _curate(request: HttpRequest, memory: Memory, action: Callable[..., Any]) -> HttpResponse:
    error = ""
    try:
        action(memory=memory)
    except ValidationError as exc:
        error = " ".join(exc.messages)
    url = reverse("memory_detail", args=[memory.pk])
    if not _partial(request):
        if error:
            messages.error(request, error)
        return redirect(url)
    context = {**_detail_context(memory.pk), "error": error}
    return render(request, "console/memory.html#memory-head", context)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_archive(request: HttpRequest, memory_id: str) -> HttpResponse:
    return _curate(request, _memory(memory_id), services.memory_archive)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_restore(request: HttpRequest, memory_id: str) -> HttpResponse:
    return _curate(request, _memory(memory_id), services.memory_restore)


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_delete(request: HttpRequest, memory_id: str) -> HttpResponse:
    """GET asks for confirmation (inline for htmx); POST deletes."""
    memory = _memory(memory_id)
    if request.method == "POST":
        services.memory_delete(memory=memory)
        messages.success(request, f"Deleted {memory.name}.")
        return _done(request, reverse("search"))
    return _page(request, "console/memory_delete.html", {"m": memory}, "confirm")


def _star(request: HttpRequest, item: Memory | Note, *, kind: str, url: str) -> HttpResponse:
    wanted = request.POST.get("value")
    value = None if wanted is None else wanted == "on"
    services.favorite_toggle(item=item, value=value)
    if not _partial(request):
        return redirect(_next_url(request, url))
    context = {"kind": kind, "id": item.pk, "favorite": item.favorite, "label": str(item)}
    return render(request, "console/parts.html#star", context)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_star(request: HttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory(memory_id)
    url = reverse("memory_detail", args=[memory.pk])
    return _star(request, memory, kind="memory", url=url)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def note_star(request: HttpRequest, note_id: str) -> HttpResponse:
    note = _or_404(selectors.note_get, note_id=note_id)
    return _star(request, note, kind="note", url=reverse("note_detail", args=[note.pk]))


@login_required
@require_GET
@vary_on_headers("HX-Request")
def note_detail(request: HttpRequest, note_id: str) -> HttpResponse:
    note = _or_404(selectors.note_get, note_id=note_id)
    return _page(request, "console/note.html", {"n": note}, "note-main")


# --- lists --------------------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def favorites(request: HttpRequest) -> HttpResponse:
    memories, notes = selectors.favorites_list()
    context = {"memories": memories, "notes": notes}
    return _page(request, "console/favorites.html", context, "favorites")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def projects(request: HttpRequest) -> HttpResponse:
    context = {"projects": selectors.project_list()}
    return _page(request, "console/projects.html", context, "projects")


# --- settings -----------------------------------------------------------------

BRIEFING = "briefing"


def _section(key: str) -> str:
    """The config section of a settings URL key ("search_config" -> "search"), or 404."""
    section = key.removesuffix("_config")
    if not key.endswith("_config") or section not in selectors.config_sections():
        raise Http404("No such settings section.")
    return section


def _config_form(section: str, data: Any = None) -> ConfigForm:
    base, override = selectors.config_base(section), selectors.config_override(section)
    return ConfigForm(data, key=f"{section}_config", base=base, override=override)


def _briefing_preview(form: ConfigForm, project: str | None) -> dict[str, Any]:
    """The briefing under the form's (unsaved) values decoded over the base."""
    form.is_valid()
    errors = [str(e) for errs in form.errors.values() for e in errs]
    try:
        briefing = selectors.briefing_render(project=project, config=form.config())
    except RecallError as exc:
        return {"briefing": None, "preview_errors": [*errors, str(exc)]}
    return {"briefing": briefing, "preview_errors": errors}


def _settings_context(forms: dict[str, ConfigForm], project: str | None) -> dict[str, Any]:
    labels = selectors.config_labels()
    preview_form = ConfigForm(
        {f"{BRIEFING}_config-{k}": v for k, v in forms[BRIEFING].initial.items()},
        key=f"{BRIEFING}_config",
        base=selectors.config_base(BRIEFING),
        override={},
    )
    return {
        "forms": {f"{s}_config": f for s, f in forms.items()},
        "labels": {f"{s}_config": label for s, label in labels.items()},
        "others": [(f"{s}_config", labels[s], f) for s, f in forms.items() if s != BRIEFING],
        "projects": selectors.project_slugs(),
        "preview_project": project or "",
        **_briefing_preview(preview_form, project),
    }


@login_required
@require_GET
@vary_on_headers("HX-Request")
def settings_page(request: HttpRequest) -> HttpResponse:
    forms = {section: _config_form(section) for section in selectors.config_sections()}
    project = request.GET.get("preview_project") or None
    return _page(request, "console/settings.html", _settings_context(forms, project), "sections")


@login_required
@require_POST
@vary_on_headers("HX-Request")
def settings_save(request: HttpRequest, key: str) -> HttpResponse:
    """Save the section's overrides, reset it to base, or reset one knob."""
    section = _section(key)
    action = request.POST.get("action", "save")
    form = _config_form(section, request.POST)
    user = request.user.get_username()
    notice = ""
    if action == "reset":
        services.setting_reset(key=key)
        notice = "Reset to base values."
    elif action.startswith("reset:"):
        knob = action.split(":", 1)[1].split(".", 1)[0]
        override = {k: v for k, v in selectors.config_override(section).items() if k != knob}
        if override:
            services.setting_save(key=key, value=override, user=user)
        else:
            services.setting_reset(key=key)
        notice = f"{knob} reset to its base value."
    elif form.is_valid():
        services.setting_save(key=key, value=form.values(), user=user)
        notice = "Saved. The next call uses these values."
    if notice:
        form = _config_form(section)
        if not _partial(request):
            messages.success(request, notice)
            return redirect("settings")
    if not _partial(request):
        forms = {s: form if s == section else _config_form(s) for s in selectors.config_sections()}
        return render(request, "console/settings.html", _settings_context(forms, None))
    context = {
        "key": key,
        "label": selectors.config_labels()[section],
        "form": form,
        "notice": notice,
        "projects": selectors.project_slugs(),
        "preview_project": request.POST.get("preview_project", ""),
    }
    response = render(request, "console/settings.html#config-section", context)
    return trigger_client_event(response, "settings-saved", after="settle")


@login_required
@require_GET
@vary_on_headers("HX-Request")
def settings_preview(request: HttpRequest) -> HttpResponse:
    base = selectors.config_base(BRIEFING)
    form = ConfigForm(request.GET, key=f"{BRIEFING}_config", base=base, override={})
    project = request.GET.get("preview_project") or None
    context = {"preview_project": project or "", **_briefing_preview(form, project)}
    return _page(request, "console/settings_preview.html", context, "preview")


# --- recall inspector ---------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def inspect(request: HttpRequest) -> HttpResponse:
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
    return _page(request, "console/inspect.html", context, "inspect-result")
