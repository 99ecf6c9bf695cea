"""The console's matcher asks `word_of` only of the text words that can match
(`console.views.text._candidates`): it must find and mark exactly what asking
every word found and marked."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from console.views.text import _TOKEN, Matcher, plain

# Words that stem, inflect and share prefixes with the queries below, in any case,
# joined by spaces, underscores, punctuation and ideographs (each a word of its own).
PIECES = [
    "party", "parties", "Partying", "part", "deploy", "deployment", "DEPLOYS", "deployed",
    "retry", "retries", "re", "ret", "cache", "caches", "caching", "cat", "category",
    "发票", "任务", "運行", "İstanbul", "straße", "naïve", "x", "ab", "abc", "_", " ", ".",
    ", ", "\n", "-", "snake_case_deploy", "re_try", "42", "v2deploy",
]  # fmt: skip
QUERIES = ["parties", "deploy", "retry ca", "re", "ab cat", "发票", "naïve part", "dep", "x"]


def _reference(matcher: Matcher, text: str) -> tuple[set[str], list[tuple[int, int]]]:
    """What every word asked gives: the words found, the spans marked."""
    asked = [(m, matcher.word_of(m.group())) for m in _TOKEN.finditer(text)]
    return {w for _, w in asked if w}, [m.span() for m, w in asked if w]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(QUERIES),
    st.booleans(),
    st.lists(st.sampled_from(PIECES), max_size=30),
    st.lists(st.sampled_from(["deployment", "caching", "Partying"]), max_size=2),
)
# A word starts after an underscore, and right after an ideograph (a text with one
# is searched everywhere), and a prefix inside a word starts none.
@example("deploy", True, ["snake_case_deploy"], [])
@example("deploy", True, ["发票", "deployed", "x", "v2deploy"], [])
@example("dep", True, ["re_try", "DEPLOYS", "-", "deployment"], ["deployment"])
def test_the_candidate_words_find_and_mark_what_every_word_did(
    query: str, prefix: bool, pieces: list[str], marked: list[str]
) -> None:
    text = "".join(pieces)
    fragments = [f"\x01{word}\x02" for word in marked]
    matcher = Matcher.for_query(query, prefix=prefix, fragments=fragments)
    found, spans = _reference(Matcher.for_query(query, prefix=prefix, fragments=fragments), text)

    assert matcher.found(text) == found
    assert [m.span() for m in matcher.tokens(text) if matcher.word_of(m.group())] == spans
    assert matcher.mark(text).count("<mark>") <= len(spans)  # ideographs share one mark


def test_a_prefix_and_an_inflection_are_still_marked() -> None:
    matcher = Matcher.for_query("parties dep", prefix=True)

    marked = matcher.mark("The Party deployed; a partition did not.")

    assert marked == "The <mark>Party</mark> <mark>deployed</mark>; a partition did not."


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["dep", "pa", "x", "ret", "cach", "ca", "发"]),
    st.lists(st.sampled_from(PIECES), max_size=30),
    st.lists(st.sampled_from(["deployment", "caching", "Partying", "retries", "发票"]), max_size=3),
)
def test_one_short_typed_word_marks_the_same_without_the_index_fragments(
    query: str, pieces: list[str], marked: list[str]
) -> None:
    # The palette leaves the index's snippets out then (`Matcher.marks_more`).
    text = "".join(pieces)
    fragments = [f"\x01{word}\x02" for word in marked]
    told = Matcher.for_query(query, prefix=True, fragments=fragments)
    alone = Matcher.for_query(query, prefix=True)

    assert not Matcher.marks_more(query, prefix=True)
    assert alone.found(text) == told.found(text) and alone.mark(text) == told.mark(text)


def test_fragments_can_mark_more_for_a_longer_or_a_second_word() -> None:
    assert Matcher.marks_more("deploys", prefix=True)
    assert Matcher.marks_more("deploys ca", prefix=True)
    assert Matcher.marks_more("dep", prefix=False)
    told = Matcher.for_query("deploys", prefix=True, fragments=["\x01deployment\x02"])
    assert told.mark("a deployment") == "a <mark>deployment</mark>"
    assert Matcher.for_query("deploys", prefix=True).mark("a deployment") == "a deployment"


def test_a_link_whose_address_holds_parentheses_reads_as_its_text() -> None:
    """A snippet read "see the article) for background": the address ended at its first ")"."""
    wiki = "See [the article](https://en.wikipedia.org/wiki/Idempotence_(computing)) for more."
    assert plain(wiki) == "See the article for more."
    assert plain("[bad](javascript:alert(1)) and ![a chart](c_(1).png) here") == (
        "bad and a chart here"
    )
    assert plain("[plain](https://example.com) (aside)") == "plain (aside)"
