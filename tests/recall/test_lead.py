"""An item's one-line stand-in (`recall.results.lead`): block marks go, text stays."""

from __future__ import annotations

import pytest

from recall.results import lead


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("-40 °C is the lowest the sensor reads.", "-40 °C is the lowest the sensor reads."),
        ("#4512 is the tracking issue", "#4512 is the tracking issue"),
        ("**Bold** first line", "**Bold** first line"),
        ("`zebrafish` code", "`zebrafish` code"),
        ("+1 for rotating keys", "+1 for rotating keys"),
        ("## Deploys\nthe rest", "Deploys"),
        ("> - quoted item", "quoted item"),
        ("* starred item", "starred item"),
        ("---\n\n#\n# Runbook", "Runbook"),
    ],
)
def test_the_first_line_loses_its_block_marks_but_not_its_text(body: str, line: str) -> None:
    assert lead("", body) == line


def test_a_description_stands_for_the_item_when_there_is_one() -> None:
    assert lead("Deploys run nightly.", "- anything") == "Deploys run nightly."
