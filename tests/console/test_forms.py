"""The forms people fill (console/forms.py) say what is wrong in the console's words:
each error names its field and what it takes, where Django said "Ensure this value
is less than or equal to 1.0." (which value?) or "Enter a whole number."."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.http import QueryDict

from console.forms import (
    UNREADABLE,
    ConfigForm,
    InspectForm,
    MemoryForm,
    NewNoteForm,
    SearchForm,
)
from console.views import knobs
from recall.config import TEXT_BUDGET_WHY, BriefingConfig, RecallConfig

CHANNELS = ("fts", "semantic")
DJANGO = ("Ensure this value", "Enter a whole number", "Enter a number", "Select a valid choice",
          "This field is required", "Enter a valid date")  # fmt: skip


def memory(**changed: str) -> MemoryForm:
    return MemoryForm({"kind": "fact", "name": "a-name", "importance": "0.5", **changed})


def inspect(**changed: Any) -> InspectForm:
    return InspectForm({"mode": "recall", **changed}, projects=["billing-api"], channels=CHANNELS)


def config(section: str, base: Any, **changed: str) -> ConfigForm:
    data = {f"{section}_config-{name}": value for name, value in changed.items()}
    labels = knobs.labels(section, base)
    return ConfigForm(data, key=f"{section}_config", base=base, override={}, labels=labels)


@pytest.mark.parametrize(
    ("form", "field", "said"),
    [
        (memory(importance="2"), "importance", "Importance must be between 0 and 1."),
        (memory(importance="-0.5"), "importance", "Importance must be between 0 and 1."),
        (memory(importance="lots"), "importance", "Importance must be a number between 0 and 1."),
        (memory(name=""), "name", "Name is required."),
        (memory(description="d" * 151), "description",
         "Description must be at most 150 characters (it has 151)."),
        (memory(kind="rumour"), "kind", "Kind must be one of the choices offered, not “rumour”."),
        (memory(expires_at="tomorrow"), "expires_at",
         "Expires must be a date and time, e.g. 2026-12-31 23:59 (UTC)."),
        (inspect(as_of="yesterday"), "as_of",
         "As of must be a date and time, e.g. 2026-12-31 23:59 (UTC)."),
        # Valid ISO 8601 whose instant is in year 10000 (or 0) in UTC: each was a 500.
        (memory(expires_at="9999-12-31 23:59:59-05:00"), "expires_at",
         "Expires falls outside the years 1 to 9999 in UTC: give a time inside them."),
        (inspect(as_of="9999-12-31T23:59:59-05:00"), "as_of",
         "As of falls outside the years 1 to 9999 in UTC: give a time inside them."),
        (inspect(recorded_as_of="0001-01-01T00:00:00+05:00"), "recorded_as_of",
         "Recorded as of falls outside the years 1 to 9999 in UTC: give a time inside them."),
        (NewNoteForm({"title": "t" * 201}), "title",
         "Title must be at most 200 characters (it has 201)."),
        (inspect(budget="999999"), "budget", "Token budget must be between 22 and 100,000."),
        (inspect(hops="1.5"), "hops", "Link hops must be a whole number between 0 and 3."),
        (inspect(w_semantic="-1"), "w_semantic", "“Weight: meaning” must be between 0 and 1,000."),
        (inspect(session_turns="99"), "session_turns",
         "“Session: turns around” must be between 0 and 20."),
        (inspect(min_importance="2"), "min_importance",
         "Least importance must be between 0 and 1."),
        (inspect(project="vault"), "project",
         "Project the agent works in must be one of the choices offered, not “vault”."),
        (config("briefing", BriefingConfig(), budget="many"), "budget",
         "“Size (tokens)” must be a whole number between 22 and 100,000."),
        (config("briefing", BriefingConfig(), budget="-3"), "budget",
         "“Size (tokens)” must be between 22 and 100,000, not -3: "
         f"{TEXT_BUDGET_WHY}."),
        (config("briefing", BriefingConfig(), hard_cap_factor="x"), "hard_cap_factor",
         "“Hard cap (x size)” must be a number between 1 and 10."),
        (config("briefing", BriefingConfig(), scan_limit="1.5"), "scan_limit",
         "“Newest memories read” must be a whole number between 1 and 10,000."),
        (config("recall", RecallConfig(), graph_hops="9"), "graph_hops",
         "“Link hops” must be between 0 and 3, not 9."),
        (config("recall", RecallConfig(), **{"channel_weights.fts": "-1"}), "channel_weights.fts",
         "“Weight: word matches” must be at least 0."),
        (config("recall", RecallConfig(), asking_turns="-1"), "asking_turns",
         "“Lower turns that only ask” must be between 0 and 1,000, not -1.0."),
    ],
)  # fmt: skip
def test_an_error_names_its_field_and_what_it_takes(
    form: forms.Form, field: str, said: str
) -> None:
    assert not form.is_valid()
    assert form.errors[field] == [said]


def unreadable(form: type[forms.Form], data: dict[str, str], *names: str, **kw: Any) -> Any:
    """`form` bound as the page sends it when the browser could not read `names`: blank,
    and named in `UNREADABLE` (static/console/app.js)."""
    sent = QueryDict(mutable=True)
    sent.update(data)
    sent.setlist(UNREADABLE, list(names))
    return form(sent, **kw)


@pytest.mark.parametrize(
    ("form", "field", "said"),
    [
        (unreadable(MemoryForm, {"kind": "fact", "name": "n", "importance": ""}, "importance"),
         "importance", "Importance must be a number between 0 and 1."),
        (unreadable(InspectForm, {"mode": "recall", "budget": ""}, "budget", projects=[]),
         "budget", "Token budget must be a whole number between 22 and 100,000."),
        (unreadable(ConfigForm, {"briefing_config-hard_cap_factor": ""},
                    "briefing_config-hard_cap_factor", key="briefing_config",
                    base=BriefingConfig(), override={},
                    labels=knobs.labels("briefing", BriefingConfig())),
         "hard_cap_factor", "“Hard cap (x size)” must be a number between 1 and 10."),
    ],
)  # fmt: skip
def test_a_value_the_browser_could_not_read_is_said_to_be_no_number(
    form: forms.Form, field: str, said: str
) -> None:
    """ "1e" in a number field is sent blank: the form said "Importance is required.",
    and a setting's blank meant its base value."""
    assert not form.is_valid()
    assert form.errors[field] == [said]


def test_a_blank_field_the_browser_read_is_still_blank() -> None:
    form = unreadable(MemoryForm, {"kind": "fact", "name": "n", "importance": "0.5"}, "importance")
    assert form.is_valid(), form.errors


def bounded(form: forms.Form) -> list[tuple[str, str]]:
    """(field, a value past its limits) for each field that has a limit to break."""
    out = []
    for name, field in form.fields.items():
        if isinstance(field, forms.IntegerField):
            high = field.max_value
            out.append((name, str(high * 10 + 1) if high is not None else "-1"))
        elif isinstance(field, forms.CharField) and field.max_length:
            out.append((name, "x" * (field.max_length + 1)))
    return out


@pytest.mark.parametrize(
    "make",
    [memory, lambda **c: NewNoteForm(c), inspect, lambda **c: SearchForm(c)],
    ids=["memory", "note", "inspector", "search"],
)
def test_no_field_a_person_fills_speaks_django_s_default_words(make: Any) -> None:
    for name, value in bounded(make()):
        form = make(**{name: value})
        assert not form.is_valid(), name
        said, label = form.errors[name], str(form[name].label)
        named = (f"{label} must be ", f"“{label}” must be ")
        assert any(s.startswith(named) for s in said), said
        assert not any(default in s for default in DJANGO for s in said), said


def test_a_number_field_carries_what_its_form_says_of_no_number() -> None:
    """For app.js to say at the field when the browser stops a save for it (nothing is
    sent, so no answer can say it)."""
    setting = config("briefing", BriefingConfig())["scan_limit"]
    said = "“Newest memories read” must be a whole number between 1 and 10,000."
    assert f'data-invalid-message="{said}"' in str(setting)
    assert "data-invalid-message" not in str(config("briefing", BriefingConfig())["tag"])
