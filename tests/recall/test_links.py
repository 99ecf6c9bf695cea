"""`[[name]]` parsing and the one name-resolution rule."""

from __future__ import annotations

import pytest

from recall.links import WIKILINK, names, prefer


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("see [[beta-note]] then [[gamma-note]] and [[beta-note]]", ["beta-note", "gamma-note"]),
        ("[[name|shown text]] and [[other#section]]", ["name", "other"]),
        ("[[ spaced ]]", ["spaced"]),
        ("no links, [single] brackets, [[]] and [[bad\nname]]", []),
        ("", []),
        (None, []),
        # Code is not link syntax: TOML's array-of-tables, in a span or a fenced block.
        ("Set `[[tool.mypy.overrides]]` per module, see [[typing-rules]].", ["typing-rules"]),
        ("``a `[[x]]` b`` then [[y]]", ["y"]),
        ('```toml\n[[package]]\nname = "a"\n```\nafter [[lockfile]]', ["lockfile"]),
        ("~~~~\n[[inside]]\n~~~\n[[still-inside]]\n~~~~\n[[out]]", ["out"]),
        ("an unclosed `[[tick]] is prose", ["tick"]),
    ],
)
def test_names_in_order_of_first_appearance(body: str | None, expected: list[str]):
    assert names(body) == expected


def test_the_alias_is_a_group_for_renderers():
    match = WIKILINK.search("[[deploy-order#step-2|the order]]")
    assert match is not None and (match.group(1), match.group(2)) == ("deploy-order", "the order")


def test_the_project_beats_global_and_the_newest_wins_within_a_scope():
    rows = [
        ("shared", "01A", None),
        ("shared", "01B", "alpha"),
        ("shared", "01C", "alpha"),  # a newer replacement in the project
        ("only-global", "01D", None),
        ("only-global", "01E", None),
        ("elsewhere", "01F", "beta"),  # another project's memory is never meant
    ]

    assert prefer(rows, "alpha") == {"shared": "01C", "only-global": "01E"}
    assert prefer(rows, None) == {"shared": "01A", "only-global": "01E"}
