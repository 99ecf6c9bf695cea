"""Console forms: parse and validate what a person typed; services do the writing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields as dc_fields
from datetime import datetime, timedelta
from typing import Any

from django import forms

from console.models import validate_name
from recall.config import FUSIONS, MAX_K, MAX_RECALL_LIMIT, MAX_WEIGHT, decode_over
from recall.types import MEMORY_KINDS

SINCE_CHOICES = [
    ("", "Any time"),
    ("1d", "Last 24 hours"),
    ("7d", "Last 7 days"),
    ("30d", "Last 30 days"),
    ("365d", "Last year"),
]


class ChoicesForm(forms.Form):
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


class SearchForm(ChoicesForm):
    q = forms.CharField(label="Search", required=False, max_length=500)
    project = forms.ChoiceField(label="Project", required=False)
    since = forms.ChoiceField(label="Updated", required=False, choices=SINCE_CHOICES)
    semantic = forms.BooleanField(label="Semantic", required=False, widget=ToggleInput)

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


class MemoryForm(forms.Form):
    kind = forms.ChoiceField(choices=[(k, k) for k in MEMORY_KINDS])
    name = forms.CharField(
        max_length=120,
        validators=[validate_name],
        help_text="A slug: lower-case letters, digits, '-', '_' or '.'.",
    )
    description = forms.CharField(
        max_length=150, required=False, help_text="One line, at most 150 characters."
    )
    body = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 10}), help_text="Markdown."
    )
    tags = TagsField(required=False, help_text="Comma-separated.")
    importance = forms.FloatField(
        min_value=0.0, max_value=1.0, initial=0.5, widget=forms.NumberInput(attrs={"step": "0.05"})
    )

    @classmethod
    def initial_from(cls, memory: Any) -> dict[str, Any]:
        return {name: getattr(memory, name) for name in cls.base_fields}


class InspectForm(ChoicesForm):
    """A Recall or Briefing as an agent would ask it; one weight field per registered channel."""

    mode = forms.ChoiceField(
        choices=[("recall", "Recall"), ("briefing", "Briefing")], widget=forms.RadioSelect
    )
    project = forms.ChoiceField(label="Project", required=False)
    query = forms.CharField(label="Query", required=False, max_length=2000)
    budget = forms.IntegerField(label="Token budget", required=False, min_value=1)
    limit = forms.IntegerField(
        label="Limit", required=False, min_value=1, max_value=MAX_RECALL_LIMIT
    )
    k = forms.IntegerField(label="RRF k", required=False, min_value=1, max_value=MAX_K)
    agent_type = forms.CharField(label="Subagent type (briefing)", required=False, max_length=120)

    def __init__(
        self,
        *args: Any,
        projects: Sequence[str] = (),
        channels: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._choices("project", project_choices(projects, blank="(global only)"))
        self.channels = list(channels)
        for channel in self.channels:
            self.fields[f"w_{channel}"] = forms.FloatField(
                label=f"{channel} weight", required=False, min_value=0, max_value=MAX_WEIGHT
            )

    def channel_weights(self) -> dict[str, float] | None:
        weights = {
            channel: float(self.cleaned_data[f"w_{channel}"])
            for channel in self.channels
            if self.cleaned_data.get(f"w_{channel}") is not None
        }
        return weights or None


class ConfigForm(forms.Form):
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
        **kwargs: Any,
    ) -> None:
        self.key, self.base, self.override = key, base, dict(override)
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
                choices=[("", "(base)"), ("true", "on"), ("false", "off")], required=False
            )
        elif name == "fusion":
            field = forms.ChoiceField(choices=[("", "(base)"), *((f, f) for f in FUSIONS)])
            field.required = False
        elif isinstance(base_value, int):
            field = forms.IntegerField(required=False)
        elif isinstance(base_value, float):
            field = forms.FloatField(required=False)
        else:
            field = forms.CharField(required=False, max_length=200)
        field.label = name.replace("_", " ")
        field.widget.attrs["placeholder"] = "base"
        self.fields[name] = field
        overridden = name in self.initial
        self.rows.append({"name": name, "knob": knob, "base": base_value, "overridden": overridden})

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
                self.add_error(name, problem.message)
        if not self.errors:
            for problem in decode_over(self.base, self.values())[1]:
                target = next((r["name"] for r in self.rows if r["knob"] == problem.knob), None)
                self.add_error(target, problem.message)
        return cleaned

    def config(self) -> Any:
        """The base with the valid fields decoded over it (for the live preview)."""
        return decode_over(self.base, self.values())[0]

    def bound_rows(self) -> list[dict[str, Any]]:
        return [{**row, "field": self[row["name"]]} for row in self.rows]
