"""Console forms: parse and validate what a person typed; services do the writing."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields as dc_fields
from datetime import UTC, datetime, timedelta
from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm
from django.utils import timezone

from console.models import validate_name, validate_source_url
from console.services.writes import request_hash
from recall import decay
from recall.altitude import ALTITUDES
from recall.associated import FIELDS as GRAPH_FIELDS
from recall.config import (
    FUSIONS,
    MAX_BUDGET,
    MAX_K,
    MAX_RECALL_DEPTH,
    MAX_RECALL_LIMIT,
    MAX_SESSION_CAP,
    MAX_SESSION_TURNS,
    MAX_SESSION_WINDOW_MINUTES,
    MAX_WEIGHT,
    MAX_WORTH_WEIGHT,
    MIN_BUDGET,
    MIN_TEXT_BUDGET,
    decode_over,
    limits,
)
from recall.graph import MAX_ASSOCIATED, MAX_CAP, MAX_HOPS, MAX_SEEDS
from recall.neighbourhood import FIELDS as SESSION_FIELDS
from recall.recall import MAX_TAG_CHARS, tag_form
from recall.requests import ENTITIES, WORTH_FIELDS
from recall.routing import ROUTINGS
from recall.types import MEMORY_KINDS

_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\")")  # a value a message quotes back


def _amount(value: float) -> str:
    """A limit as a person reads it: 1.0 as "1", 100000 as "100,000"."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


# The engine's limits (recall/config.py) as the console says them (`ConfigForm._plain`).
_NUMBER = r"-?\d+(?:\.\d+)?"
_LIMIT_WORDS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (
        re.compile(rf"within ({_NUMBER})\.\.({_NUMBER})"),
        lambda m: f"between {_amount(float(m[1]))} and {_amount(float(m[2]))}",
    ),
    (re.compile(r"within \(0, 1\]"), "more than 0 and at most 1"),
    (re.compile(r"(?:must be )?(?:a finite number |a number )?>= "), "must be at least "),
    (re.compile(r"(?:must be )?(?:a finite number |a number )?> "), "must be more than "),
]
_CHANNEL_WEIGHT = re.compile(r"channel weight (\w+)=\S+")  # "channel weight fts=-1.0 must ..."

SINCE_CHOICES = [
    ("", "Any time"),
    ("1d", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("365d", "Last year"),
]


CHANNEL_NAMES = {
    "fts": "full text",
    "semantic": "meaning",
    "identifier": "name or id",
    "graph": "graph (links and associations)",
}


def _limits(field: forms.Field) -> str:
    """A number field's allowed range in words ("between 0 and 1"), or ""."""
    return _range(getattr(field, "min_value", None), getattr(field, "max_value", None))


def _range(low: float | None, high: float | None) -> str:
    """Bounds in words: "between 0 and 1", "at least 0", "at most 1", or ""."""
    if low is not None and high is not None:
        return f"between {_amount(low)} and {_amount(high)}"
    if low is not None:
        return f"at least {_amount(low)}"
    return f"at most {_amount(high)}" if high is not None else ""


def field_messages(field: forms.Field, name: str, *, limits: str | None = None) -> dict[str, str]:
    """The errors a field can raise, in the console's words: each names the field
    (`name`, its label as the page shows it) and says what it takes ("Importance must
    be between 0 and 1."), where Django would say "Ensure this value is less than or
    equal to 1.0." without saying which field, or why. `limits`: its range in words,
    when the field's own bounds do not hold it (a setting's are the engine's)."""
    name = name.replace("%", "%%")  # the messages are %-formatted with Django's params
    said = {
        "required": f"{name} is required.",
        "invalid_choice": f"{name} must be one of the choices offered, not “%(value)s”.",
    }
    if isinstance(field, forms.IntegerField):  # FloatField and DecimalField too
        limits = _limits(field) if limits is None else limits
        kind = "number" if isinstance(field, forms.FloatField) else "whole number"
        said["invalid"] = f"{name} must be a {kind}{' ' + limits if limits else ''}."
        if limits:
            said["min_value"] = said["max_value"] = f"{name} must be {limits}."
    if isinstance(field, forms.DateTimeField):
        said["invalid"] = f"{name} must be a date and time, e.g. 2026-12-31 23:59 (UTC)."
    max_length = getattr(field, "max_length", None)
    if max_length is not None:
        said["max_length"] = (
            f"{name} must be at most {max_length:,} characters (it has %(show_value)d)."
        )
    return said


class InstantField(forms.DateTimeField):
    """A date and time, as the same instant in UTC (a time typed without a zone is UTC,
    as the help texts say). One whose zone puts it outside the years 1 to 9999 in UTC
    ("9999-12-31 23:59-05:00") is refused at the field: kept with its zone, it answered
    500 wherever it reached the database (SQLite's adapter overflows turning it into UTC)."""

    def to_python(self, value: Any) -> datetime | None:
        instant = super().to_python(value)
        if instant is None or instant.tzinfo is None:
            return instant
        try:
            return instant.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(
                f"{self.label or 'This time'} falls outside the years 1 to 9999 in UTC: "
                "give a time inside them.",
                code="invalid",
            ) from None


# What a number input can show (HTML's "valid floating-point number"); anything else
# it shows blank.
_HTML_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class ConsoleBoundField(forms.BoundField):
    """A field as a console form renders it: a number input carries what its form says
    of a value that is not a number (`data-invalid-message`). A save the browser stops
    for one ("1e", "1.5" in a whole-number field) sends nothing for the server to
    answer, and app.js says it beside the field instead, in the same words."""

    def build_widget_attrs(self, attrs: Any, widget: forms.Widget | None = None) -> Any:
        attrs = super().build_widget_attrs(attrs, widget)
        said = (
            self.form.messages(self.name).get("invalid")
            if isinstance(self.form, ConsoleForm)
            else None
        )
        if said and isinstance(widget or self.field.widget, forms.NumberInput):
            attrs["data-invalid-message"] = said.replace("%%", "%")  # not %-formatted here
        return attrs

    def as_widget(
        self, widget: forms.Widget | None = None, attrs: Any = None, only_initial: bool = False
    ) -> Any:
        """A number field sent what a browser cannot show in a number input ("1e" in a
        link such as `/inspect/?budget=1e`) is a text input holding it: as a number input
        it showed blank beside its error, as if nothing had been typed."""
        widget = widget or self.field.widget
        if isinstance(widget, forms.NumberInput) and self.unshowable():
            kind = "decimal" if isinstance(self.field, forms.FloatField) else "numeric"
            widget = forms.TextInput(attrs={**widget.attrs, "inputmode": kind})
        return super().as_widget(widget, attrs, only_initial)

    def unshowable(self) -> bool:
        """Whether the value sent is not one a number input shows (HTML's "valid
        floating-point number": "1e", "abc" and "1,5" are not; "1.5" and "1e5" are)."""
        value = self.data if self.form.is_bound else None
        return isinstance(value, str) and bool(value) and not _HTML_NUMBER.fullmatch(value)


# Names the fields whose value the browser could not read: a number input holding "1e"
# is sent blank, which read as "Importance is required." (static/console/app.js adds it).
UNREADABLE = "unreadable"


class ConsoleForm(forms.Form):
    """A form a person fills: its errors say which field and what it takes (`field_messages`).

    A label holding a colon ("Weight: meaning") is quoted, so the sentence still reads.
    """

    bound_field_class = ConsoleBoundField

    def field_name(self, name: str) -> str:
        label = str(self[name].label)
        return f"“{label}”" if ":" in label else label

    def full_clean(self) -> None:
        # At clean time, not in __init__: fields added by a subclass's __init__ count too.
        for name, field in self.fields.items():
            field.error_messages.update(self.messages(name))
        super().full_clean()

    def messages(self, name: str) -> dict[str, str]:
        """The errors field `name` can raise, in the console's words (`field_messages`)."""
        return field_messages(self.fields[name], self.field_name(name))

    def clean(self) -> dict[str, Any]:
        """A field sent blank because the browser could not read it (`UNREADABLE`) is
        refused as what it is, a value that is not a number, not as an empty one."""
        cleaned = super().clean() or {}
        for name in self.unreadable():
            self.errors.pop(name, None)  # "Importance is required." would send them looking
            said = self.fields[name].error_messages["invalid"]
            self.add_error(name, forms.ValidationError(said, code="invalid"))
        return cleaned

    def unreadable(self) -> list[str]:
        """The fields sent blank that the browser says held what it could not read."""
        named = self.data.getlist(UNREADABLE) if hasattr(self.data, "getlist") else []
        return [
            name
            for name, field in self.fields.items()
            if self.add_prefix(name) in named
            and "invalid" in field.error_messages
            and self[name].data in field.empty_values
        ]

    def invalid_fields(self) -> list[forms.BoundField]:
        """The fields with an error, in the form's order (an error summary links each)."""
        return [self[name] for name in self.fields if name in self.errors]


class LoginForm(ConsoleForm, AuthenticationForm):
    """The login form in the console's words. A refusal never says which of the two
    was wrong (that would tell a guesser which usernames exist)."""

    error_messages = {
        "invalid_login": "That username and password do not match a login. Check both "
        "(capital letters count) and try again.",
        "inactive": "This login is switched off. Ask whoever runs the console to switch it on.",
    }


class ChoicesForm(ConsoleForm):
    """A form whose choice fields get their choices at run time."""

    def _choices(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices


class ToggleInput(forms.CheckboxInput):
    """A checkbox that is on when absent: a hidden `false` input turns it off.

    The template renders `<input type=hidden name=X value=false>` before the
    checkbox, so an unchecked box sends `false` and a checked one sends both
    (the last value wins); a link like `/?q=x` keeps the default, on.
    """

    def value_from_datadict(self, data: Any, files: Any, name: str) -> bool:
        if name not in data:
            return True
        value = str(data.get(name)).lower()
        return value not in ("false", "0", "off", "")


def project_choices(slugs: Sequence[str], *, blank: str) -> list[tuple[str, str]]:
    return [("", blank), *((slug, slug) for slug in slugs)]


QUERY_CHARS = 500  # a console query's length: the search and palette boxes stop there


class SearchForm(ChoicesForm):
    q = forms.CharField(label="Search", required=False, max_length=QUERY_CHARS)
    project = forms.ChoiceField(label="Project", required=False)
    since = forms.ChoiceField(label="Updated", required=False, choices=SINCE_CHOICES)
    semantic = forms.BooleanField(label="By meaning", required=False, widget=ToggleInput)
    archived = forms.BooleanField(label="Include archived", required=False)
    # `page` is read apart (console/views/paging.py): a page past the end or not a
    # number shows the nearest page and says so, not a refusal of the whole search.

    def __init__(self, *args: Any, projects: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._choices("project", project_choices(projects, blank="All projects"))

    def cleaned_query(self, *, now: datetime) -> dict[str, Any]:
        data = self.cleaned_data
        since = None
        if data.get("since"):
            since = now - timedelta(days=int(data["since"].rstrip("d")))
        return {
            "query": data.get("q") or "",
            "projects": [data["project"]] if data.get("project") else None,
            "semantic": bool(data.get("semantic")),
            "since": since,
            "include_inactive": bool(data.get("archived")),
        }


SORT_CHOICES = [
    ("updated", "Recently updated"),
    ("created", "Recently created"),
    ("importance", "Most important"),
    ("name", "Name (A-Z)"),
]


class BrowseForm(ChoicesForm):
    """A project page's filters; the kind and tag choices carry their counts."""

    kind = forms.ChoiceField(label="Kind", required=False)
    tag = forms.CharField(label="Tag", required=False, max_length=120, widget=forms.Select)
    favorites = forms.BooleanField(label="Starred only", required=False)
    archived = forms.BooleanField(label="Include archived", required=False)
    sort = forms.ChoiceField(label="Sort", required=False, choices=SORT_CHOICES)
    # `page` is read apart, as on the search page (console/views/paging.py).

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._choices("kind", [("", "Any kind"), *((k, k) for k in MEMORY_KINDS)])
        self._tags([("", "Any tag")])
        for name, field in self.fields.items():
            field.widget.attrs["data-focus-key"] = f"browse-{name}"

    def facets(self, *, kinds: Mapping[str, int], tags: Mapping[str, int]) -> None:
        """Label each kind and tag with how many memories it would show; the kind
        chosen stays a choice at (0), so the list shows the filter in force."""
        total = sum(kinds.values())
        chosen = str(self.data.get("kind") or "") if self.is_bound else ""
        if chosen in MEMORY_KINDS and chosen not in kinds:
            kinds = {**kinds, chosen: 0}
        kind_choices = [(k, f"{k} ({n})") for k, n in kinds.items()]
        self._choices("kind", [("", f"Any kind ({total})"), *kind_choices])
        self._tags([("", "Any tag"), *((t, f"{t} ({n})") for t, n in tags.items())])

    def _tags(self, choices: list[tuple[str, str]]) -> None:
        widget = self.fields["tag"].widget
        assert isinstance(widget, forms.Select)
        widget.choices = choices

    def filters(self) -> dict[str, Any]:
        """The valid filters (a bad one is dropped, the rest apply)."""
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        return {
            "kind": data.get("kind") or "",
            "tag": data.get("tag") or "",
            "favorites": bool(data.get("favorites")),
            "archived": bool(data.get("archived")),
            "sort": data.get("sort") or "updated",
        }


class TagsField(forms.CharField):
    """Comma-separated tags in the form, a list for the service."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [t.strip() for t in text.split(",") if t.strip()]

    def validate(self, value: Any) -> None:
        """A tag over MAX_TAG_CHARS is refused, as the API refuses it (the service
        would cut it, and the rest of what the person typed would be lost unseen)."""
        super().validate(value)
        for tag in value or ():
            if len(tag) > MAX_TAG_CHARS:
                raise forms.ValidationError(
                    f"A tag is at most {MAX_TAG_CHARS} characters; “{tag[:24]}…” has {len(tag)}."
                )


class TextForm(ConsoleForm):
    """What the memory and note forms share: typing starts at `FIRST` on a fresh form
    (a form back with errors focuses its first error instead), an item's values as
    the form's initial ones, and the body as typed."""

    FIRST = "body"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.fields[self.FIRST].widget.attrs["autofocus"] = True

    @classmethod
    def initial_from(cls, item: Any) -> dict[str, Any]:
        return {name: getattr(item, name) for name in cls.base_fields}

    def clean_body(self) -> str:
        """The text as typed, with the browser's CRLF line ends back to LF: an edit of
        another field leaves the body byte for byte as it was (no phantom revision)."""
        return str(self.cleaned_data.get("body") or "").replace("\r\n", "\n")


class MemoryForm(TextForm):
    kind = forms.ChoiceField(choices=[(k, k) for k in MEMORY_KINDS])
    name = forms.CharField(
        max_length=120,
        validators=[validate_name],
        help_text="A slug: lower-case letters, digits, '-', '_' or '.'.",
    )
    description = forms.CharField(
        max_length=150, required=False, help_text="One line, at most 150 characters."
    )
    body = forms.CharField(  # unstripped: an edit of another field leaves the body as it was
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10}),
        help_text="Markdown.",
    )
    tags = TagsField(required=False, help_text="Comma-separated.")
    importance = forms.FloatField(
        min_value=0.0, max_value=1.0, initial=0.5, widget=forms.NumberInput(attrs={"step": "0.05"})
    )
    expires_at = InstantField(
        label="Expires", required=False,
        help_text="e.g. 2026-12-31 23:59 (UTC): from then on it leaves every read; blank: never.",
    )  # fmt: skip

    FIRST = "description"  # where typing starts on a fresh form: what an edit changes most

    def clean_expires_at(self) -> datetime | None:
        """A time to come: a past one would hide the memory the moment it is saved."""
        value: datetime | None = self.cleaned_data.get("expires_at")
        if decay.passed(value, timezone.now()):
            raise forms.ValidationError(
                "That time has passed: the memory would leave every read at once. "
                "Archive it instead, or give a time to come."
            )
        return value


UNRECORDED = ("expires_at",)  # form fields a revision does not keep: no base to merge on


def _shown(value: Any) -> str:
    """A saved setting as its form field shows it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merge_edit(
    mine: Mapping[str, Any], saved: Mapping[str, Any], base: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """A three-way merge of an edit form saved after another save of its item: `mine`
    (what was typed), `saved` (the item now), `base` (the item as the form opened).
    A field left as it opened takes the saved value; one changed here or only here
    keeps the typed value; one changed in both, differently, is a clash (typed value
    kept). Without a base (`UNRECORDED`) a field that differs from the saved one clashes.
    Returns the merged values and the clashing fields' names."""
    merged, clashes = dict(mine), []
    for name, typed in mine.items():
        now = saved.get(name)
        if typed == now:
            continue
        if name in UNRECORDED or name not in base:
            clashes.append(name)
        elif typed == base[name]:
            merged[name] = now  # not changed here: the other save's value stands
        elif now != base[name]:
            clashes.append(name)
    return merged, clashes


def opened_digests(values: Mapping[str, Any]) -> str:
    """A note's form values as its edit form opened, as short digests (a note keeps
    no revisions to merge on, and its body may be 200,000 characters)."""
    return json.dumps({name: _value_digest(value) for name, value in values.items()})


def _value_digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def base_from_digests(
    opened: str, mine: Mapping[str, Any], saved: Mapping[str, Any]
) -> dict[str, Any]:
    """The values an edit form opened with, as far as `merge_edit` needs them, from
    their digests: a field's saved or typed value where its digest matches, else a
    value equal to neither (changed in both); none without digests (every field that
    differs is then the person's to check)."""
    try:
        digests = json.loads(opened)
    except ValueError:
        return {}
    if not isinstance(digests, dict):
        return {}
    base: dict[str, Any] = {}
    for name in mine:
        if name not in digests:
            continue
        if _value_digest(saved.get(name)) == digests[name]:
            base[name] = saved.get(name)
        elif _value_digest(mine[name]) == digests[name]:
            base[name] = mine[name]
        else:
            base[name] = object()  # changed here and there
    return base


class NewMemoryForm(ChoicesForm, MemoryForm):
    """A memory written by a person: the memory's fields and where it lives."""

    project = forms.ChoiceField(label="Project", required=False)
    FIRST = "name"  # a new memory starts with what it is called
    field_order = [
        "project", "kind", "name", "description", "body", "tags", "importance", "expires_at",
    ]  # fmt: skip

    def __init__(
        self, *args: Any, projects: Sequence[str] = (), global_choice: bool = True, **kwargs: Any
    ) -> None:
        """`global_choice` False: one of `projects` must be chosen (a person without the
        staff flag: global memories reach every project's agents, `roles.can_change`)."""
        super().__init__(*args, **kwargs)
        choices = project_choices(projects, blank="Global (every open project)")
        self._choices("project", choices if global_choice else choices[1:])
        self.fields["project"].required = not global_choice
        self.order_fields(self.field_order)


class NoteForm(TextForm):
    """A note as a person edits it (its slug stays what it was made with: links use it)."""

    title = forms.CharField(max_length=200)
    description = forms.CharField(
        max_length=150, required=False, help_text="One line, at most 150 characters."
    )
    body = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14}),
        help_text="Markdown; [[a-memory-name]] links to that memory.",
    )
    tags = TagsField(required=False, help_text="Comma-separated.")
    source_url = forms.CharField(
        label="Source",
        max_length=200,
        required=False,
        help_text="Where it came from: an http(s) address, or blank.",
    )

    FIRST = "body"

    def clean_source_url(self) -> str:
        """The service's rule, checked with the other fields: left to the service, a bad
        address was said only once every other field was right, a round later."""
        value = str(self.cleaned_data.get("source_url") or "")
        try:
            validate_source_url(value)
        except forms.ValidationError as exc:  # it names its field: said at the field here
            raise forms.ValidationError(exc.message_dict["source_url"]) from None
        return value


class NewNoteForm(ChoicesForm, NoteForm):
    """A note written in the console: the note's fields and where it lives."""

    project = forms.ChoiceField(label="Project", required=False)
    FIRST = "title"
    field_order = ["project", "title", "description", "body", "tags", "source_url"]

    def __init__(self, *args: Any, projects: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._choices("project", project_choices(projects, blank="Inbox (no project)"))
        self.order_fields(self.field_order)


def _tag_list(text: str | None) -> tuple[str, ...]:
    """Comma-separated tags as a tuple, in their stored form (blank parts dropped)."""
    return tuple(t for t in (tag_form(part) for part in (text or "").split(",")) if t)


def _utc(instant: datetime | None) -> datetime | None:
    """A typed date-time as UTC: the form's inputs carry no zone."""
    if instant is None or instant.tzinfo is not None:
        return instant
    return instant.replace(tzinfo=UTC)


def _setting_or_yes_no(label: str, help_text: str) -> forms.NullBooleanField:
    """A yes / no choice whose blank means the saved setting."""
    choices = [("", "Setting"), ("true", "Yes"), ("false", "No")]
    return forms.NullBooleanField(
        label=label, required=False, widget=forms.Select(choices=choices), help_text=help_text
    )


class InspectForm(ChoicesForm):
    """A Recall or Briefing as an agent would ask it; one weight field per registered channel."""

    mode = forms.ChoiceField(
        choices=[("recall", "Recall"), ("briefing", "Briefing")], widget=forms.RadioSelect
    )
    project = forms.ChoiceField(label="Project the agent works in", required=False)
    query = forms.CharField(label="Query", required=False, max_length=2000)
    budget = forms.IntegerField(
        label="Token budget",
        required=False,
        min_value=MIN_TEXT_BUDGET,  # a briefing's least; a Recall's is checked in `clean`
        max_value=MAX_BUDGET,
        help_text=f"How much text the agent may receive (at least {MIN_TEXT_BUDGET}; a Recall: "
        f"{MIN_BUDGET}); blank uses the setting.",
    )
    limit = forms.IntegerField(
        label="Most items",
        required=False,
        min_value=1,
        max_value=MAX_RECALL_LIMIT,
        help_text="Blank uses the setting.",
    )
    rrf_k = forms.IntegerField(
        label="Rank smoothing (RRF k)",
        required=False,
        min_value=1,
        max_value=MAX_K,
        help_text="Only for rank fusion; blank uses the setting.",
    )
    agent_type = forms.CharField(
        label="Subagent type",
        required=False,
        max_length=120,
        help_text="Optional label; a briefing with a query is a subagent's.",
    )
    # The graph channel and associated memories (recall/associated.py; blank = the setting).
    hops = forms.IntegerField(
        label="Link hops", required=False, min_value=0, max_value=MAX_HOPS,
        help_text="How far the graph follows links from the top results, 0-3 (0: off).",
    )  # fmt: skip
    graph_seeds = forms.IntegerField(
        label="Top results whose links are followed", required=False, min_value=0,
        max_value=MAX_SEEDS, help_text="Blank uses the setting (8).",
    )  # fmt: skip
    graph_reverse = forms.NullBooleanField(
        label="Follow links backwards", required=False,
        widget=forms.Select(choices=[("", "Setting"), ("true", "Yes"), ("false", "No")]),
        help_text="Also follow links that point at a result.",
    )  # fmt: skip
    graph_min_weight = forms.FloatField(
        label="Lightest link followed", required=False, min_value=0, max_value=1,
        help_text="0-1; lighter associations are skipped.",
    )  # fmt: skip
    graph_cap = forms.IntegerField(
        label="Most linked memories", required=False, min_value=0, max_value=MAX_CAP,
        help_text="How many memories the graph may add.",
    )  # fmt: skip
    include_associated = forms.BooleanField(
        label="Add associated memories", required=False,
        help_text="A separate list of memories linked to the items, never one of them.",
    )  # fmt: skip
    associated_cap = forms.IntegerField(
        label="Most associated memories", required=False, min_value=0, max_value=MAX_ASSOCIATED,
        help_text="0-10; blank uses the setting (10).",
    )  # fmt: skip
    associated_depth = forms.IntegerField(
        label="Associated: hops", required=False, min_value=1, max_value=MAX_HOPS,
        help_text="1-3; blank uses the setting (1).",
    )  # fmt: skip
    associated_min_weight = forms.FloatField(
        label="Associated: lightest link", required=False, min_value=0, max_value=1,
        help_text="0-1; lighter links are skipped.",
    )  # fmt: skip

    # Routing and fabriq's per-request knobs (recall/routing.py; blank = the setting).
    altitude = forms.ChoiceField(
        label="Altitude", required=False,
        choices=[("", "entity (rows)"), *((a, a) for a in ALTITUDES if a != "entity")],
        help_text="scope: the project's digest; tenant: every visible project's; "
        "auto: the digest only when the rows do not fit the budget.",
    )  # fmt: skip
    routing = forms.ChoiceField(
        label="Routing", required=False,
        choices=[("", "Setting"), *((r, r) for r in ROUTINGS)],
        help_text="auto picks weights by the query's kind; bm25 never embeds the query.",
    )  # fmt: skip
    k = forms.IntegerField(
        label="Candidates per channel (k)", required=False, min_value=1,
        max_value=MAX_RECALL_DEPTH, help_text="How deep each channel looks; blank: the setting.",
    )  # fmt: skip
    strict = forms.BooleanField(
        label="Strict", required=False,
        help_text="A channel that fails is an error instead of a warning.",
    )  # fmt: skip
    entities = forms.MultipleChoiceField(
        label="Recall from", required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(e, e) for e in ENTITIES], help_text="None ticked: both.",
    )  # fmt: skip

    include_graph = forms.BooleanField(
        label="Show each result's links", required=False,
        help_text="Each item lists its 1-hop neighbours (id, name, link type, weight).",
    )  # fmt: skip
    include_history = forms.BooleanField(
        label="Include archived and superseded", required=False,
        help_text="Past memories are candidates too (the cold tier).",
    )  # fmt: skip
    # --- importance, worth, decay (recall/worth.py, recall/decay.py; blank = the setting) ---
    importance_weighted = _setting_or_yes_no(
        "Weigh importance", "More important memories rank higher."
    )
    worth_weight = forms.FloatField(
        label="Worth weight", required=False, min_value=0, max_value=MAX_WORTH_WEIGHT,
        help_text="0-2: how much agents' feedback moves a score; blank: the setting (0.5).",
    )  # fmt: skip
    decay = _setting_or_yes_no("Recency decay", "Older memories fade by a half-life per kind.")

    def options_given(self) -> bool:
        """Whether "More options" holds something: an error, or a value in any field
        but the mode, the query and the project (a link that sets a weight opens it)."""
        if not self.is_bound:
            return False
        shown = ("mode", "query", "project")
        if any(name not in shown for name in self.errors):
            return True
        given = [v for k, v in self.cleaned_data.items() if k not in shown]
        return any(v is not None and v is not False and v not in ("", []) for v in given)

    def knob_options(self) -> dict[str, Any]:
        """Routing and fabriq's knobs given (`recall.requests.KNOB_FIELDS`), and the
        importance, worth and decay fields (`recall.requests.WORTH_FIELDS`)."""
        data = self.cleaned_data
        given: dict[str, Any] = {
            "routing": data.get("routing") or None,
            "k": data.get("k"),
            "strict": bool(data.get("strict")),
            "entities": list(data.get("entities") or []) or None,
            "include_graph": bool(data.get("include_graph")),
            "include_history": bool(data.get("include_history")),
            **{f: data.get(f) for f in WORTH_FIELDS},
        }
        return {f: v for f, v in given.items() if v is not None}

    # --- session neighbourhood (recall/neighbourhood.py, Dakera 004; blank = the setting) ---
    session_neighbours = _setting_or_yes_no(
        "Add session neighbours", "Memories of a top result's session said just before or after it."
    )
    session_window_minutes = forms.FloatField(
        label="Session: minutes around", required=False, min_value=0,
        max_value=MAX_SESSION_WINDOW_MINUTES,
        help_text="By when they happened; blank: the setting (5).",
    )  # fmt: skip
    session_turns = forms.IntegerField(
        label="Session: turns around", required=False, min_value=0, max_value=MAX_SESSION_TURNS,
        help_text="By their order in the session; blank uses the setting (2).",
    )  # fmt: skip
    session_cap = forms.IntegerField(
        label="Session: most per result", required=False, min_value=0, max_value=MAX_SESSION_CAP,
        help_text="Blank uses the setting (10).",
    )  # fmt: skip

    def session_options(self) -> dict[str, Any]:
        """The session-neighbourhood fields given (`recall.neighbourhood.FIELDS`)."""
        given = {f: self.cleaned_data.get(f) for f in SESSION_FIELDS}
        return {f: v for f, v in given.items() if v is not None}

    # --- end session neighbourhood ---

    # Recall's filters (Dakera seed 004; blank = no restriction), inside every channel.
    kinds = forms.MultipleChoiceField(
        label="Only these kinds", required=False, choices=[(k, k) for k in MEMORY_KINDS],
        widget=forms.CheckboxSelectMultiple, help_text="None ticked: every kind.",
    )  # fmt: skip
    tags = forms.CharField(
        label="Tags: all of", required=False, max_length=2000,
        help_text="Comma-separated; items must carry every one.",
    )  # fmt: skip
    any_tags = forms.CharField(
        label="Tags: any of", required=False, max_length=2000,
        help_text="Comma-separated; items must carry at least one.",
    )  # fmt: skip
    agent_id = forms.CharField(
        label="Written by agent", required=False, max_length=120,
        help_text="Only memories this agent wrote.",
    )  # fmt: skip
    session_id = forms.CharField(
        label="Session", required=False, max_length=120,
        help_text="Only memories of this session.",
    )  # fmt: skip
    min_importance = forms.FloatField(
        label="Least importance", required=False, min_value=0, max_value=1,
        help_text="0-1; less important memories are left out.",
    )  # fmt: skip
    since = InstantField(
        label="Created since", required=False,
        help_text="e.g. 2024-06-01 00:00 (UTC); at or after.",
    )  # fmt: skip
    until = InstantField(
        label="Created until", required=False,
        help_text="e.g. 2024-06-30 23:59 (UTC); at or before.",
    )  # fmt: skip
    # Bitemporal recall (recall/timetravel.py): answered by the cold path.
    as_of = InstantField(
        label="As of", required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="UTC; what was true then (valid time).",
    )  # fmt: skip
    recorded_as_of = InstantField(
        label="Recorded as of", required=False,
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S"
        ),
        help_text="UTC; what was known then (transaction time).",
    )  # fmt: skip

    def filter_options(self) -> dict[str, Any]:
        """The filters given (`recall.requests.FILTER_FIELDS`), as the engine takes them."""
        data = self.cleaned_data
        given: dict[str, Any] = {
            "kinds": tuple(data.get("kinds") or ()) or None,
            "tags": _tag_list(data.get("tags")),
            "any_tags": _tag_list(data.get("any_tags")),
            "agent_id": (data.get("agent_id") or "").strip() or None,
            "session_id": (data.get("session_id") or "").strip() or None,
            "min_importance": data.get("min_importance"),
            "since": _utc(data.get("since")),
            "until": _utc(data.get("until")),
            "as_of": _utc(data.get("as_of")),
            "recorded_as_of": _utc(data.get("recorded_as_of")),
        }
        return {f: v for f, v in given.items() if v not in (None, ())}

    def graph_options(self) -> dict[str, Any]:
        """The graph and associated fields given (`recall.associated.FIELDS`)."""
        given = {f: self.cleaned_data.get(f) for f in GRAPH_FIELDS}
        given["include_associated"] = bool(given["include_associated"])
        return {f: v for f, v in given.items() if v is not None}

    def __init__(
        self,
        *args: Any,
        projects: Sequence[str] = (),
        channels: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._choices("project", project_choices(projects, blank="No project (global only)"))
        self.channels = list(channels)
        for channel in self.channels:
            self.fields[f"w_{channel}"] = forms.FloatField(
                label=f"Weight: {CHANNEL_NAMES.get(channel, channel)}",
                required=False,
                min_value=0,
                max_value=MAX_WEIGHT,
                help_text="0 turns it off; blank uses the setting.",
            )
        for name, field in self.fields.items():  # its help, and its error slot (inspect.html)
            helped = [f"{self[name].auto_id}_helptext"] if field.help_text else []
            field.widget.attrs["aria-describedby"] = " ".join([*helped, f"err-inspect-{name}"])

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        budget = cleaned.get("budget")
        if cleaned.get("mode") == "recall" and budget is not None and budget < MIN_BUDGET:
            self.add_error("budget", f"A Recall needs a budget of at least {MIN_BUDGET} tokens.")
        return cleaned

    def channel_weights(self) -> dict[str, float] | None:
        weights = {
            channel: float(self.cleaned_data[f"w_{channel}"])
            for channel in self.channels
            if self.cleaned_data.get(f"w_{channel}") is not None
        }
        return weights or None


class ConfigForm(ConsoleForm):
    """One override field per config knob; blank means "use the base value".

    Mapping knobs (channel weights) get one field per key, named `knob.key`.
    Values are checked by decoding them over the base, the same way the
    engine will at use time, so what saves is what applies.
    """

    def __init__(
        self,
        *args: Any,
        key: str,
        base: Any,
        override: Mapping[str, Any],
        labels: Mapping[str, tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.key, self.base, self.override = key, base, dict(override)
        # What the person was shown as saved: a save sends it back (`changed_since`).
        self.seen = request_hash(self.override)[:16]
        self.labels = dict(labels or {})
        initial = {}
        for name, value in self.override.items():
            if isinstance(value, Mapping):
                initial.update({f"{name}.{sub}": v for sub, v in value.items()})
            else:
                initial[name] = value
        kwargs.update(initial=initial, prefix=key)
        super().__init__(*args, **kwargs)
        self.rows: list[dict[str, Any]] = []
        for spec in dc_fields(base):
            value = getattr(base, spec.name)
            if isinstance(value, Mapping):
                for sub, sub_value in value.items():
                    self._add(f"{spec.name}.{sub}", sub_value, knob=spec.name)
            else:
                self._add(spec.name, value, knob=spec.name)

    def _add(self, name: str, base_value: Any, *, knob: str) -> None:
        field: forms.Field
        if isinstance(base_value, bool):
            field = forms.TypedChoiceField(
                choices=[("", "default"), ("true", "on"), ("false", "off")], required=False
            )
        elif name == "fusion":
            field = forms.ChoiceField(choices=[("", "default"), *((f, f) for f in FUSIONS)])
            field.required = False
        elif isinstance(base_value, int):
            field = forms.IntegerField(required=False)
        elif isinstance(base_value, float):
            field = forms.FloatField(required=False)
        else:
            field = forms.CharField(required=False, max_length=200)
        label, help_text = self.labels.get(name) or (name.replace("_", " ").capitalize(), "")
        field.label = label
        field.help_text = help_text or "A setting of the engine."
        help_id, error_id = f"help-{self.key}-{name}", f"err-{self.key}-{name}"
        field.widget.attrs["aria-describedby"] = f"{help_id} {error_id}"
        self.fields[name] = field
        self.rows.append(
            {
                "name": name,
                "knob": knob,
                "base": base_value,
                "overridden": name in self.initial,
                "help_id": help_id,
                "error_id": error_id,
            }
        )

    def values(self, *, separate: bool = False) -> dict[str, Any]:
        """The non-blank fields as an override row (mapping knobs merged over the base).

        `separate`: one single-knob row per field instead, keyed by field name.
        """
        out: dict[str, Any] = {}
        for name, value in self.cleaned_data.items():
            if value in (None, ""):
                continue
            if isinstance(getattr(self.base, name, None), bool):
                value = value == "true"
            knob, _, sub = name.partition(".")
            if separate:
                out[name] = {knob: {sub: value} if sub else value}
            elif sub:
                merged = out.setdefault(knob, dict(getattr(self.base, knob)))
                merged[sub] = value
            else:
                out[name] = value
        return out

    def clean(self) -> dict[str, Any]:
        """Each field decoded over the base on its own, then all together: a problem
        goes to the field of its knob (recall.config.Problem.knob), else to the form."""
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        for name, value in self.values(separate=True).items():
            for problem in decode_over(self.base, value)[1]:
                self.add_error(name, self._plain(problem.message))
        if not self.errors:
            for problem in decode_over(self.base, self.values())[1]:
                target = next((r["name"] for r in self.rows if r["knob"] == problem.knob), None)
                self.add_error(target, self._plain(problem.message))
        return cleaned

    def field_name(self, name: str) -> str:
        return f"“{self[name].label}”"  # as `_plain` names a field in the engine's messages

    def messages(self, name: str) -> dict[str, str]:
        """As any console form's, with the engine's bounds of the knob (`limits`): "1.5"
        in a whole-number setting is told the range it must be in, as a 0 there is."""
        bounds = limits(self.base).get(name)
        said = _range(*bounds) if bounds else None
        return field_messages(self.fields[name], self.field_name(name), limits=said)

    def _plain(self, message: str) -> str:
        """The engine's message in the console's words: each setting's key (`scan_limit`)
        named by the label a person sees on the page ("Scan limit"), and its limits
        said as the other forms say them ("within 0..3" as "between 0 and 3")."""
        parts = _QUOTED.split(message)  # odd parts are values quoted back: left as typed
        weights = {  # "fts" -> "channel_weights.fts", the row that the next loop names
            r["name"].partition(".")[2]: r["name"]
            for r in self.rows
            if r["name"].startswith("channel_weights.")
        }
        for n, part in enumerate(parts):
            if n % 2 == 0:
                part = _CHANNEL_WEIGHT.sub(lambda m: weights.get(m[1], m[0]), part)
                for words, plain in _LIMIT_WORDS:
                    part = words.sub(plain, part)
                parts[n] = part
        for name in sorted((r["name"] for r in self.rows), key=len, reverse=True):
            label = self.fields[name].label
            if label and label != name:
                key = re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w.])")
                parts = [p if n % 2 else key.sub(f"“{label}”", p) for n, p in enumerate(parts)]
        said = "".join(parts)
        return said if said.endswith((".", "?", "!")) else f"{said}."

    def changed_since(self, seen: str) -> bool:
        """Whether the saved override moved since a page showing stamp `seen` was
        rendered (another tab or person saved): a save from it would undo theirs."""
        return bool(seen) and seen != self.seen

    def shown(self) -> dict[str, str]:
        """Each field's saved value as its field shows it ("" for the base value)."""
        return {row["name"]: _shown(self.initial.get(row["name"])) for row in self.rows}

    @property
    def opened(self) -> str:
        """What the page shows as saved, sent back with a save (`merge`'s base)."""
        return json.dumps(self.shown(), sort_keys=True)

    def merge(self, data: Mapping[str, Any], opened: str) -> tuple[dict[str, str], list[str]]:
        """A save from a page opened before another save (`changed_since`): the fields
        typed in `data` merged, field by field (`merge_edit`), with what is saved now
        (this form's override) against what the page showed (`opened`). The merged
        form data, and the names of the fields changed on both sides (every field that
        differs, when `opened` cannot be read: a page from before the merge)."""
        try:
            base = json.loads(opened)
        except ValueError:
            base = None
        if not isinstance(base, dict) or not all(isinstance(v, str) for v in base.values()):
            base = {}
        saved = self.shown()
        typed = {name: str(data.get(f"{self.key}-{name}", "")).strip() for name in saved}
        merged, clashes = merge_edit(typed, saved, base)
        return {f"{self.key}-{name}": value for name, value in merged.items()}, clashes

    def config(self) -> Any:
        """The base with the valid fields decoded over it (for the live preview)."""
        return decode_over(self.base, self.values())[0]

    def bound_rows(self) -> list[dict[str, Any]]:
        return [{**row, "field": self[row["name"]]} for row in self.rows]
