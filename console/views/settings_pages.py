"""Settings: every section's knobs over their base values, with a live briefing preview.

Staff only (`staff_required`: the 403 page for anyone else), on every view,
the preview and the save included, since a saved knob changes what every
agent and person gets.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import trigger_client_event

from console import selectors, services
from console.forms import ConfigForm
from console.views import knobs
from console.views.base import HtmxHttpRequest, login_required, page, partial, staff_required
from recall import RecallError

BRIEFING = "briefing"


def _section(key: str) -> str:
    """The config section of a settings URL key ("search_config" -> "search"), or 404."""
    section = key.removesuffix("_config")
    if not key.endswith("_config") or section not in selectors.config_sections():
        raise Http404("No such settings section.")
    return section


CHANGED = (
    "{what} saved by someone else (or in another tab) after you opened this page, as "
    "{saved}; nothing was saved. Your values are still in the fields: save again to "
    "replace it."
)
MERGED = "Saved, with the change saved meanwhile kept. The next call uses these values."


def _clash(form: ConfigForm, clashes: list[str]) -> str:
    """CHANGED for the fields changed both here and by another save, each with the
    value saved now (a field whose base is in use shows none: it is named)."""
    saved = form.shown()
    labels = [f"“{form.fields[name].label}”" for name in clashes]
    what = (", ".join(labels[:-1]) + " and " + labels[-1]) if len(labels) > 1 else labels[0]
    values = [saved[name] or "its base value" for name in clashes]
    return CHANGED.format(
        what=f"{what} {'were' if len(labels) > 1 else 'was'}", saved=", ".join(values)
    )


def _config_form(section: str, data: Any = None, *, override: Any = None) -> ConfigForm:
    base = selectors.config_base(section)
    if override is None:
        override = selectors.config_override(section)
    labels = knobs.labels(section, base)
    return ConfigForm(data, key=f"{section}_config", base=base, override=override, labels=labels)


def _briefing_preview(form: ConfigForm, project: str | None) -> dict[str, Any]:
    """The briefing under the form's (unsaved) values decoded over the base.

    A value the engine would refuse is reported at its field (the preview's
    out-of-band error slots); no preview renders until every field is valid.
    """
    form.is_valid()
    context: dict[str, Any] = {"preview_form": form, "briefing": None, "preview_errors": []}
    if form.errors:
        context["blocked"] = [str(form[name].label) for name in form.errors if name in form.fields]
        context["preview_errors"] = [str(e) for e in form.non_field_errors()]
        return context
    try:
        context["briefing"] = selectors.briefing_render(project=project, config=form.config())
    except RecallError as exc:
        context["preview_errors"] = [str(exc)]
    return context


def _settings_context(forms: dict[str, ConfigForm], project: str | None) -> dict[str, Any]:
    labels = selectors.config_labels()
    preview_form = _config_form(
        BRIEFING,
        {f"{BRIEFING}_config-{k}": v for k, v in forms[BRIEFING].initial.items()},
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
@staff_required
@require_GET
@vary_on_headers("HX-Request")
def settings_page(request: HtmxHttpRequest) -> HttpResponse:
    forms = {section: _config_form(section) for section in selectors.config_sections()}
    project = request.GET.get("preview_project") or None
    return page(request, "console/settings.html", _settings_context(forms, project), "sections")


@login_required
@staff_required
@require_POST
@vary_on_headers("HX-Request")
def settings_save(request: HtmxHttpRequest, key: str) -> HttpResponse:
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
        field = form.fields.get(knob)  # the row's label, as the page names it
        notice = f"{field.label if field is not None else knob} reset to its base value."
    elif form.changed_since(request.POST.get("seen", "")):
        merged, clashes = form.merge(request.POST, request.POST.get("opened", ""))
        form = _config_form(section, merged)  # stamped with what is saved now
        if clashes:
            form.is_valid()  # the values typed stay in their fields, checked
            form.add_error(None, _clash(form, clashes))
        elif form.is_valid():
            services.setting_save(key=key, value=form.values(), user=user)
            notice = MERGED
    elif form.is_valid():
        services.setting_save(key=key, value=form.values(), user=user)
        notice = "Saved. The next call uses these values."
    if notice:
        form = _config_form(section)
        if not partial(request):
            messages.success(request, notice)
            return redirect("settings")
    if not partial(request):
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
@staff_required
@require_GET
@vary_on_headers("HX-Request")
def settings_preview(request: HtmxHttpRequest) -> HttpResponse:
    form = _config_form(BRIEFING, request.GET, override={})
    project = request.GET.get("preview_project") or None
    context = {"preview_project": project or "", **_briefing_preview(form, project)}
    context["oob"] = partial(request)  # each field's error goes to its own slot
    return page(request, "console/settings_preview.html", context, "preview")
