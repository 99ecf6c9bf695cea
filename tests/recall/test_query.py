from __future__ import annotations

import pytest

from recall.query import FOLDS, clean, fold, is_id_prefix, looks_like_identifier, words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chroma boot race", ["chroma", "boot", "race"]),
        ("chroma-boot-race", ["chroma", "boot", "race"]),
        ("AND OR NOT", ["and", "or", "not"]),
        ('"quoted" words', ["quoted", "words"]),
        ("a b cd", ["cd"]),
        ("!!! ??? ...", []),
        ("🚀 🔥", []),
        ("nul\x00byte", ["nul", "byte"]),
        ("repeat Repeat REPEAT", ["repeat"]),
        ("", []),
    ],
)
def test_words(text: str, expected: list[str]):
    assert words(text) == expected


def test_the_last_short_word_is_kept_as_a_prefix():
    assert words("chroma b", keep_short_last=True) == ["chroma", "b"]


def test_clean_caps_a_huge_query():
    assert len(clean("x" * 10_000)) == 2000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("01HZX000000000000000000001", True),
        ("01HZX000", True),
        ("chroma-boot-race", True),
        ("two words", False),
        ("plain", False),
    ],
)
def test_looks_like_identifier(text: str, expected: bool):
    assert looks_like_identifier(text) is expected


def test_an_id_prefix_needs_eight_characters():
    assert not is_id_prefix("01HZX00")


def test_words_fold_accents_and_ascii_text_is_kept_as_is() -> None:
    assert words("Hermès CAFÉ Łódź Straße Æther naïve") == [
        "hermes", "cafe", "lodz", "strasse", "aether", "naive",
    ]  # fmt: skip
    text = "plain ascii"
    assert fold(text) is text
    assert fold("日本語 Ελληνικά русский") == "日本語 Ελληνικά русский"  # other scripts keep theirs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ｄｅｐｌｏｙ ｔｈｅ ｂｉｌｌｉｎｇ ａｐｉ", "Deploy the billing api"),  # full width
        ("ﬁle ①", "file 1"),  # a ligature, a circled digit
        ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana
        ("Hermès", "Hermès"),  # NFKC composes: an accent stays on its letter
    ],
)
def test_clean_reads_compatibility_forms_as_what_they_stand_for(text: str, expected: str) -> None:
    # The query is embedded as `clean` returns it, and stored texts are embedded NFKC
    # (`recall.types.embeddable`): a full-width query must not read as other words.
    assert clean(text) == expected


def test_full_width_words_fold_to_ascii() -> None:
    wide = "Ｄｅｐｌｏｙ ｔｈｅ ｂｉｌｌｉｎｇ ａｐｉ ｖ２"
    assert words(wide) == ["deploy", "the", "billing", "api", "v2"]
    assert fold("ｂｉｌｌｉｎｇ１２") == "billing12"  # what the text planes index (`FOLDS`)


def test_the_fold_is_the_one_tantivy_indexes_with() -> None:
    # The tantivy plane folds with its own ascii_fold; a query word folded otherwise
    # would miss as a prefix. Two letters tantivy itself folds oddly are left out.
    import tantivy

    plane = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )
    odd = {"ǧ", "ẛ"}  # tantivy: "G" and "f"
    differ = {chr(c): base for c, base in FOLDS.items() if plane.analyze(chr(c)) != [base]}

    assert set(differ) == odd
