"""Snippets cut in Python (recall/indexes/fragments.py): raw text, matched words marked."""

from __future__ import annotations

import re

import pytest

from recall.indexes import fragments


def marked(snippet: str | None) -> list[str]:
    assert snippet is not None
    return re.findall("\x01(.*?)\x02", snippet)


def test_the_documents_own_characters_stay_as_they_are() -> None:
    text = "if a < b & c then the cache <b>flushes</b>"

    snippet = fragments.fragment(text, lambda w: w == "cache")

    assert snippet == "if a < b & c then the \x01cache\x02 <b>flushes</b>"


def test_nothing_matched_is_none_and_the_head_stands_in() -> None:
    assert fragments.fragment("plain words", lambda w: False) is None
    assert fragments.snippet(["", "plain words"], lambda w: False) == "plain words"
    assert fragments.snippet(["", ""], lambda w: False, fallback="the-name") == "the-name"


def test_the_window_leads_with_a_few_words_before_the_match() -> None:
    text = " ".join(["lorem"] * 150 + ["walrus"] + ["ipsum"] * 150)

    snippet = fragments.fragment(text, lambda w: w == "walrus")

    assert snippet is not None
    words = snippet.split()
    assert len(words) == fragments.WINDOW
    assert words.index("\x01walrus\x02") == fragments.LEAD


def test_a_text_shorter_than_the_window_is_shown_whole() -> None:
    """The PostgreSQL plane showed "near the Straße office; naïve café résumé." of a
    fourteen-word memory (six words before the match), tantivy the whole text."""
    text = "Keep the signed copies in the drawer near the Straße office; naïve café résumé."

    snippet = fragments.fragment(text, lambda w: w == "resume")

    assert snippet is not None and snippet.replace("\x01", "").replace("\x02", "") == text


def test_a_window_near_the_end_takes_earlier_words() -> None:
    text = " ".join(["lorem"] * 100 + ["walrus", "ipsum"])

    snippet = fragments.fragment(text, lambda w: w == "walrus")

    assert snippet is not None and len(snippet.split()) == fragments.WINDOW
    assert snippet.endswith("\x01walrus\x02 ipsum")


def test_the_window_with_most_matches_wins() -> None:
    text = "kiwi " + "x " * 40 + "kiwi mango kiwi " + "y " * 40

    snippet = fragments.fragment(text, lambda w: w in {"kiwi", "mango"})

    assert marked(snippet) == ["kiwi", "mango", "kiwi"]


def test_stray_sentinels_in_the_text_are_dropped() -> None:
    snippet = fragments.fragment("a \x01fake\x02 mark and a real one", lambda w: w == "real")

    assert marked(snippet) == ["real"]


@pytest.mark.parametrize(
    ("text", "words"),
    [("Chroma-Boot_race", ["chroma", "boot", "race"]), ("Naïve café", ["naive", "cafe"]),
     ("nul\x00byte", ["nul", "byte"]), ("!!!", [])],
)  # fmt: skip
def test_tokens(text: str, words: list[str]) -> None:
    assert fragments.tokens(text) == words
