"""Memory and note pages: read, edit, supersede, archive, restore, delete, star.

Every view fetches its item through `_memory` / `_note`, which answer 404 for
an item outside the person's projects (console/roles.py) exactly as for an
unknown id; the memory page also drops links, backlinks, versions and agent
history that belong to projects the person does not see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.messages.storage.base import BaseStorage
from django.core.exceptions import ValidationError
from django.forms import Form
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from console import browse, history, roles, selectors, services, withheld
from console.forms import (
    MemoryForm,
    NewMemoryForm,
    NewNoteForm,
    NoteForm,
    base_from_digests,
    merge_edit,
    opened_digests,
)
from console.models import Memory, Note
from console.views.base import (
    HtmxHttpRequest,
    add_errors,
    changeable_or_403,
    done,
    error_text,
    login_required,
    next_url,
    or_404,
    page,
    partial,
    visible_or_404,
)
from recall.worth import worth


def _memory(request: HtmxHttpRequest, memory_id: str, *, change: bool = False) -> Memory:
    """The memory the person sees (404 otherwise); `change`: one they may change (403
    for a global memory without the staff flag: `roles.can_change`)."""
    memory: Memory = or_404(selectors.memory_get, memory_id=memory_id)
    (changeable_or_403 if change else visible_or_404)(request, roles.project_of(memory))
    return memory


def _note(request: HtmxHttpRequest, note_id: str) -> Note:
    note: Note = or_404(selectors.note_get, note_id=note_id)
    visible_or_404(request, roles.project_of(note))
    return note


Item = TypeVar("Item", Memory, Note)
F = TypeVar("F", bound=Form)


def _visible(request: HtmxHttpRequest, detail: selectors.MemoryDetail) -> selectors.MemoryDetail:
    """The detail without what belongs to projects the person does not see (a
    global memory is linked from, and read by agents of, every project)."""
    visible = roles.visible_projects(request.user)
    if visible is None:
        return detail

    def shown(items: list[Item]) -> list[Item]:
        return [m for m in items if roles.project_of(m) in (None, *visible)]

    return replace(
        detail,
        links=shown(detail.links),
        backlinks=shown(detail.backlinks),
        chain_back=shown(detail.chain_back),
        chain_forward=shown(detail.chain_forward),
        # An event without a project came from a search over several: not theirs to read.
        history=[e for e in detail.history if e.project in visible],
        note_backlinks=shown(detail.note_backlinks),
    )


def _detail_context(request: HtmxHttpRequest, memory_id: str) -> dict[str, Any]:
    detail = or_404(selectors.memory_detail, memory_id=memory_id)
    visible_or_404(request, roles.project_of(detail.memory))
    detail = _visible(request, detail)
    memory = detail.memory
    links = {m.name: reverse("memory_detail", args=[m.pk]) for m in detail.links}
    context = {"d": detail, "m": memory, "links": links, "by_name": _by_name(memory.project)}
    texts = {name: getattr(memory, name, "") for name in withheld.TEXTS}
    # Right after a save the page's messages say the same lines: said twice, one
    # under the other, it read as two problems.
    flashed = _flashed(request)
    return context | {
        "worth": worth(memory.feedback_helpful, memory.feedback_harmful),
        "withheld": [said for said in _for_people(withheld.warnings(texts)) if said not in flashed],
        "may_change": roles.can_change(request.user, roles.project_of(memory)),
    }


def _flashed(request: HtmxHttpRequest) -> set[str]:
    """What this page's messages say, read without using them up: they are still
    shown (a partial that shows none keeps them for the next page)."""
    storage = messages.get_messages(request)
    said = {str(message) for message in storage}
    if isinstance(storage, BaseStorage):
        storage.used = False
    return said


def _by_name(project: Any) -> str:
    """The `[[name]]` fallback URL, `__name__` filled in by the markdown tag."""
    url = reverse("memory_by_name", args=["__name__"])
    return f"{url}?{urlencode({'project': project.slug})}" if project else url


@login_required
@require_GET
@vary_on_headers("HX-Request")
def memory_detail(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    context = _detail_context(request, memory_id)
    return page(request, "console/memory.html", context, "memory-main")


@login_required
@require_GET
def memory_by_name(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """Where a `[[name]]` link lands: the active memory of that name (the
    linking project's first, then global), else a search for the name. A
    project the person does not see is treated as unknown: a search."""
    project = request.GET.get("project") or None
    found = None
    seen = roles.can_see(request.user, project)
    if seen:
        found = selectors.memory_named(name=name, project=project)
    if found is not None and roles.can_see(request.user, roles.project_of(found)):
        return redirect("memory_detail", memory_id=found.pk)
    # Said, not a silent search (it read as the link's answer), kept to the project.
    # A link from a global memory looks among global memories alone: "in any project
    # you see" was said above a search whose first result was that very name.
    if project and seen:
        said = f"No active memory is named {name} in {project} or global"
    elif project is None:
        said = f"No global memory is named {name}"
    else:
        said = f"No active memory is named {name} in any project you see"
    messages.info(request, f"{said}: searching for it.")
    asked = {"q": name, **({"project": project} if project and seen else {})}
    return redirect(f"{reverse('search')}?{urlencode(asked)}")


STALE = (
    "This {what} was saved again after you opened it (at {at} UTC: by someone else, or "
    "in another tab), so your changes were not saved over it. Your text is kept below: "
    "compare it with the saved version ({links} below), then save again to replace it."
)


def _stamp(item: Memory | Note) -> str:
    """What an edit form remembers of the item it opened: its last save."""
    return item.updated.isoformat()


def _saved_since(form: Form, item: Memory | Note, seen: str, *, links: str) -> bool:
    """Whether `item` was saved after its form opened at `seen` (two tabs: no lost
    update); then the form says so (`links`: what the page offers to compare with)."""
    if seen == _stamp(item):
        return False
    at = item.updated.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    what = "memory" if isinstance(item, Memory) else "note"
    form.add_error(None, STALE.format(what=what, at=at, links=links))
    return True


def _for_people(warnings: list[str]) -> list[str]:
    """`console.withheld.warnings` as a page says them ("Body, line 2: ...")."""
    return [said[:1].upper() + said[1:] for said in warnings]


def _warn_withheld(request: HtmxHttpRequest, fields: dict[str, Any]) -> None:
    """Say which lines agents will read as withheld (`console.withheld.warnings`)."""
    for said in _for_people(withheld.warnings(fields)):
        messages.warning(request, said)


def _told(
    request: HtmxHttpRequest, saved: Memory, fields: dict[str, Any], *, reworded: bool = True
) -> None:
    """What a person should know of a memory they just wrote: the lines agents will read
    as withheld, and, when its words changed, an active memory that says much the same
    (agents' writes get this as their dedup hint; a person's came back with "Saved")."""
    _warn_withheld(request, fields)
    if not reworded:
        return
    like = selectors.memory_like(saved)
    if like is not None:
        messages.info(
            request,
            f"{saved.name} reads much like {like.name} (similarity {like.similarity or 0:.2f}): "
            "if they say the same, supersede or archive one of them.",
        )


def _memory_form(request: HtmxHttpRequest, memory: Memory, *, supersede: bool) -> HttpResponse:
    closed = memory.superseded_by_id or (supersede and memory.invalid_at is not None)
    if closed and request.method == "GET":  # a form its save would refuse: say so at once
        what = "superseded" if memory.superseded_by_id else "archived"
        messages.info(request, f"{memory.name} is {what}: it cannot be changed that way.")
        return redirect("memory_detail", memory_id=memory.pk)
    seen, stale = _stamp(memory), False
    base = history.latest_number(memory_id=memory.pk)
    if request.method == "POST":
        form = MemoryForm(request.POST)
        seen = request.POST.get("seen") or seen  # kept through a form back with errors
        merged: dict[str, Any] | None = None
        if form.is_valid() and seen != _stamp(memory):
            form, merged = _merged(form, memory, request.POST.get("base", ""))
            if merged is None:  # the same field changed in both: the person decides
                seen, stale = _stamp(memory), True  # told: a second save is deliberate
        if form.is_valid() and not stale:
            values = merged if merged is not None else form.cleaned_data
            write = services.memory_supersede if supersede else services.memory_update
            # A new version a person wrote is theirs (as "New memory" is), not the old
            # version's agent's; an edit keeps its memory's author.
            by = {"source": "user_stated", "agent_id": ""} if supersede else {}
            try:
                saved = write(memory=memory, **values, **by)
            except ValidationError as exc:
                add_errors(form, exc)
            else:
                if not supersede and saved.updated == memory.updated:
                    messages.info(request, f"Nothing changed in {saved.name}: nothing saved.")
                else:
                    joined = " with the change saved meanwhile" if merged is not None else ""
                    # A supersession names the old version and its replacement: "Superseded
                    # x-v2." read as though the new version had been superseded.
                    said = (
                        f"Superseded {memory.name} with {saved.name}"
                        if supersede
                        else f"Saved {saved.name}"
                    )
                    messages.success(request, f"{said}{joined}.")
                    if not supersede and saved.invalid_at is not None:  # archived, maybe meanwhile
                        messages.info(
                            request,
                            f"{saved.name} is archived: agents do not read it (Restore brings "
                            "it back).",
                        )
                    words = ("name", "description", "body")
                    reworded = supersede or any(
                        getattr(saved, f) != getattr(memory, f) for f in words
                    )
                    _told(request, saved, values, reworded=reworded)
                    renamed = None if supersede else selectors.links_left_by_rename(saved)
                    if renamed:
                        messages.warning(request, renamed[:1].upper() + renamed[1:] + ".")
                return done(request, reverse("memory_detail", args=[saved.pk]))
    else:
        form = MemoryForm(initial=MemoryForm.initial_from(memory))
    # Superseded in another tab while this form was open: the refusal names the
    # replacement, and the form links to its own form there (the text stays here).
    later = selectors.memory_successors(memory) if memory.superseded_by_id else []
    context = {
        "form": form, "m": memory, "supersede": supersede, "seen": seen, "stale": stale,
        "base": base, "replacement": later[-1] if later else None,
    }  # fmt: skip
    return page(request, "console/memory_form.html", context, "memory-form")


def _merged(
    form: MemoryForm, memory: Memory, base: str
) -> tuple[MemoryForm, dict[str, Any] | None]:
    """An edit saved after another save of its memory (two tabs, two people), merged
    field by field with it against the revision the form opened at (`base`): the
    merged values when no field changed in both, else the form with the merge in it,
    what clashed named (a save of the form as it was undid the other change)."""
    opened = (
        history.state_numbered(memory_id=memory.pk, number=int(base)) if base.isdigit() else None
    )
    if opened is None:  # no base to merge on: the whole form is the person's to check
        _saved_since(form, memory, "", links="links")
        return form, None
    base_values = MemoryForm.initial_from(opened)
    return _merged_with(form, memory, MemoryForm.initial_from(memory), base_values, "links")


def _merged_with(
    form: F, item: Memory | Note, saved: Mapping[str, Any], base: Mapping[str, Any], links: str
) -> tuple[F, dict[str, Any] | None]:
    """`_merged`'s merge, for any edit form: the merged values, or the form with them."""
    merged, clashes = merge_edit(form.cleaned_data, saved, base)
    if not clashes:
        return form, merged
    data = QueryDict(mutable=True)
    data.update(form.data)
    for name, value in merged.items():
        data[name] = form.fields[name].prepare_value(value) if value is not None else ""
    again = type(form)(data)
    again.is_valid()
    _saved_since(again, item, "", links=links)
    labels = ", ".join(str(again.fields[name].label or name).lower() for name in clashes)
    again.add_error(
        None,
        f"Changed there and here: {labels} (your text is kept). Every other field now "
        "holds the saved version, with your changes to it.",
    )
    return again, None


def _created(
    request: HtmxHttpRequest,
    form: NewMemoryForm | NewNoteForm,
    write: Callable[..., Any],
    shown: Callable[[Any], tuple[str, str]],
    said: Callable[[Any, dict[str, Any]], None] | None = None,
) -> HttpResponse | None:
    """A new item's form, posted: `write` it into the project chosen and go to its page
    (`shown`: its label and its page's URL name; `said`: what else to tell of the item
    and the values written, after "Created"), else None with the errors on `form`."""
    if not form.is_valid():
        return None
    data = dict(form.cleaned_data)
    project = browse.project_for(key=data.pop("project") or browse.GLOBAL)
    try:
        saved = write(project=project, **data)
    except ValidationError as exc:
        add_errors(form, exc)
        return None
    label, url_name = shown(saved)
    messages.success(request, f"Created {label}.")
    if said is not None:
        said(saved, data)
    return done(request, reverse(url_name, args=[saved.pk]))


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_new(request: HtmxHttpRequest) -> HttpResponse:
    """Write a memory by hand (the palette's "New memory")."""
    projects = roles.project_slugs(request.user)  # a hidden project is an invalid choice
    curates = roles.can_change(request.user, None)  # "Global" is a choice for staff alone
    if request.method == "POST":
        form = NewMemoryForm(request.POST, projects=projects, global_choice=curates)
        made = _created(
            request, form, lambda **data: services.memory_create(source="user_stated", **data),
            lambda m: (m.name, "memory_detail"), said=lambda m, data: _told(request, m, data),
        )  # fmt: skip
        if made is not None:
            return made
    else:
        wanted = request.GET.get("project", "")
        form = NewMemoryForm(
            projects=projects,
            global_choice=curates,
            initial={"project": wanted if wanted in projects else "", "kind": "fact"},
        )
    return page(request, "console/memory_new.html", {"form": form}, "memory-form")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_edit(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    return _memory_form(request, _memory(request, memory_id, change=True), supersede=False)


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_supersede(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    return _memory_form(request, _memory(request, memory_id, change=True), supersede=True)


def _curate(
    request: HtmxHttpRequest, memory: Memory, action: Callable[..., Any], *, verb: str
) -> HttpResponse:
    error = done_text = ""
    try:
        action(memory=memory)
    except ValidationError as exc:
        error = error_text(exc)
    else:
        done_text = f"{verb} {memory.name}."
    url = reverse("memory_detail", args=[memory.pk])
    if not partial(request):
        if error:
            messages.error(request, error)
        return redirect(url)
    context = {**_detail_context(request, memory.pk), "error": error, "done": done_text}
    return render(request, "console/memory.html#memory-head", context)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_archive(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory(request, memory_id, change=True)
    return _curate(request, memory, services.memory_archive, verb="Archived")


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_restore(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory(request, memory_id, change=True)
    return _curate(request, memory, services.memory_restore, verb="Restored")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def memory_delete(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    """GET asks for confirmation (inline for htmx); POST deletes."""
    memory = _memory(request, memory_id, change=True)
    if request.method == "POST":
        services.memory_delete(memory=memory)
        messages.success(request, f"Deleted {memory.name}.")
        return done(request, reverse("search"))
    consequence = "It leaves the indexes at once and cannot be undone."
    replaced = selectors.memories_replaced_by(memory=memory)
    if replaced:  # they stay closed: nothing is current in their place afterwards
        names = ", ".join(m.name for m in replaced)
        consequence += (
            f" It replaced {names}, which then {'stays' if len(replaced) == 1 else 'stay'} "
            "archived (restore to make current again)."
        )
    consequence += " Archiving keeps it for history instead."
    return _confirm(request, memory.name, reverse("memory_delete", args=[memory.pk]),
                    reverse("memory_detail", args=[memory.pk]), consequence)  # fmt: skip


def _confirm(
    request: HtmxHttpRequest, label: str, action: str, back: str, consequence: str
) -> HttpResponse:
    """The question before a delete: inline for htmx, a page without."""
    context = {"label": label, "action": action, "back": back, "consequence": consequence}
    return page(request, "console/delete_confirm.html", context, "confirm")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def note_delete(request: HtmxHttpRequest, note_id: str) -> HttpResponse:
    """GET asks for confirmation (inline for htmx); POST deletes. A note keeps no
    history, so nothing archives it: a note that should go is deleted."""
    note = _note(request, note_id)
    if request.method == "POST":
        services.note_delete(note=note)
        messages.success(request, f"Deleted the note {note.title}.")
        home = reverse("project_detail", args=[note.project.slug]) if note.project else None
        return done(request, home or reverse("search"))
    consequence = "It leaves search and the indexes at once and cannot be undone."
    return _confirm(request, note.title, reverse("note_delete", args=[note.pk]),
                    reverse("note_detail", args=[note.pk]), consequence)  # fmt: skip


def _star(request: HtmxHttpRequest, item: Memory | Note, *, kind: str, url: str) -> HttpResponse:
    wanted = request.POST.get("value")
    value = None if wanted is None else wanted == "on"
    services.favorite_toggle(item=item, value=value)
    if not partial(request):
        return redirect(next_url(request, url))
    label = item.title if isinstance(item, Note) else item.name  # as the page named it
    context = {"kind": kind, "id": item.pk, "favorite": item.favorite, "label": label}
    return render(request, "console/parts.html#star", context)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def memory_star(request: HtmxHttpRequest, memory_id: str) -> HttpResponse:
    memory = _memory(request, memory_id, change=True)
    url = reverse("memory_detail", args=[memory.pk])
    return _star(request, memory, kind="memory", url=url)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def note_star(request: HtmxHttpRequest, note_id: str) -> HttpResponse:
    note = _note(request, note_id)
    return _star(request, note, kind="note", url=reverse("note_detail", args=[note.pk]))


@login_required
@require_GET
@vary_on_headers("HX-Request")
def note_detail(request: HtmxHttpRequest, note_id: str) -> HttpResponse:
    note = _note(request, note_id)
    found = selectors.note_links(note=note)
    links = {name: reverse("memory_detail", args=[pk]) for name, pk in found.items()}
    context = {"n": note, "links": links, "by_name": _by_name(note.project)}
    return page(request, "console/note.html", context, "note-main")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def note_edit(request: HtmxHttpRequest, note_id: str) -> HttpResponse:
    """Edit a note's text, tags and source (its slug stays: links name it)."""
    note = _note(request, note_id)
    seen, stale, base = _stamp(note), False, opened_digests(NoteForm.initial_from(note))
    if request.method == "POST":
        form = NoteForm(request.POST)
        seen = request.POST.get("seen") or seen  # kept through a form back with errors
        opened = request.POST.get("base", "")
        merged: dict[str, Any] | None = None
        if form.is_valid() and seen != _stamp(note):  # saved meanwhile: merge, as memories do
            saved_values = NoteForm.initial_from(note)
            base_values = base_from_digests(opened, form.cleaned_data, saved_values)
            form, merged = _merged_with(form, note, saved_values, base_values, "the link")
            if merged is None:  # the same field changed in both: the person decides
                seen, stale = _stamp(note), True
        if form.is_valid() and not stale:
            values = merged if merged is not None else form.cleaned_data
            if all(getattr(note, k) == v for k, v in values.items()):
                messages.info(request, f"Nothing changed in {note.title}: nothing saved.")
                return done(request, reverse("note_detail", args=[note.pk]))
            try:
                saved = services.note_edit(note=note, **values)
            except ValidationError as exc:
                add_errors(form, exc)
            else:
                joined = " with the change saved meanwhile" if merged is not None else ""
                messages.success(request, f"Saved {saved.title}{joined}.")
                return done(request, reverse("note_detail", args=[saved.pk]))
        if not stale:  # the form goes back with errors: it still opened where it did
            base = opened or base
    else:
        form = NoteForm(initial=NoteForm.initial_from(note))
    context = {"form": form, "n": note, "seen": seen, "stale": stale, "base": base}
    return page(request, "console/note_form.html", context, "note-form")


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def note_new(request: HtmxHttpRequest) -> HttpResponse:
    """Write a note by hand (a project page's "New note")."""
    projects = roles.project_slugs(request.user)  # a hidden project is an invalid choice
    if request.method == "POST":
        form = NewNoteForm(request.POST, projects=projects)
        made = _created(request, form, services.note_create, lambda n: (n.title, "note_detail"))
        if made is not None:
            return made
    else:
        wanted = request.GET.get("project", "")
        form = NewNoteForm(
            projects=projects, initial={"project": wanted if wanted in projects else ""}
        )
    chosen = form["project"].value()  # Cancel goes back to the project it was opened from
    back = reverse("project_detail", args=[chosen]) if chosen in projects else reverse("search")
    return page(request, "console/note_form.html", {"form": form, "back": back}, "note-form")
