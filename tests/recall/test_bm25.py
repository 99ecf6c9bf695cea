from __future__ import annotations

import math

import pytest

from recall import bm25

PARAMS = bm25.Bm25F()
PASSAGES = bm25.Bm25F(sentence_mix=0)  # whole texts and passages, no sentence window


def scored(streams: list[list[str]], weights: dict[str, float], avglen: float) -> float:
    counts, lengths = bm25.count_terms(bm25.encode(streams), list(weights))
    return bm25.score(counts, lengths, weights, avglen=avglen, params=PARAMS)


def test_idf_is_lucenes_and_never_negative() -> None:
    assert bm25.idf(1, 10) == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert bm25.idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    assert bm25.idf(12, 10) > 0  # df counted over deleted documents too


def test_term_weights_square_idf_and_skip_unknown_terms() -> None:
    weights = bm25.term_weights({"cat": 1, "zzz": 0}, 10, PARAMS)

    assert weights == {"cat": pytest.approx(bm25.idf(1, 10) ** 2)}


def test_score_of_one_stream_matches_bm25_by_hand() -> None:
    # tf 2 in a 4-token text, mean length 8: norm = 1 - 0.4 + 0.4 * 4 / 8 = 0.8
    tf = 2 / 0.8
    expected = 3.0 * tf * 2.2 / (tf + 1.2)

    assert scored([["cat", "sat", "cat", "mat"]], {"cat": 3.0}, 8) == pytest.approx(expected)


def test_neighbour_streams_add_term_frequency_before_saturation() -> None:
    # own text 2 tokens (norm 0.6 + 0.4 * 2 / 4 = 0.8), previous turn 4 tokens (norm 1.0)
    tf = 1 / 0.8 + 0.5 * 1 / 1.0
    expected = 2.0 * tf * 2.2 / (tf + 1.2)
    streams = [["dog", "ran"], ["the", "dog", "was", "big"]]

    got = scored(streams, {"dog": 2.0}, 4)

    assert got == pytest.approx(expected)
    one = scored(streams[:1], {"dog": 2.0}, 4)
    other = scored([[], *streams[1:]], {"dog": 2.0}, 4)
    assert got < one + other  # saturation: not two pieces of evidence


def test_a_term_only_in_the_turn_two_back_counts_at_its_weight() -> None:
    tf = 0.35 / (0.6 + 0.4 * 1 / 2)

    got = scored([["hello"], [], ["paris"]], {"paris": 1.0}, 2)

    assert got == pytest.approx(tf * 2.2 / (tf + 1.2))


def test_no_matching_term_scores_zero() -> None:
    assert scored([["a", "b"]], {"c": 1.0}, 2) == 0.0


@pytest.mark.parametrize(
    ("streams", "terms", "counts", "lengths"),
    [
        ([["a", "a", "b"]], ["a", "b", "c"], [{"a": 2, "b": 1}], [3]),
        ([["aa", "a"], []], ["a"], [{"a": 1}, {}], [2, 0]),  # whole tokens only
        ([["x"], ["y", "x", "x"]], ["x", "y"], [{"x": 1}, {"x": 2, "y": 1}], [1, 3]),
        ([[]], ["a"], [{}], [0]),
        # Several terms are found in one scan: whole tokens, adjacent repeats, regex
        # metacharacters taken literally, a term that is a prefix of another.
        ([["aa", "a", "ab", "abc"]], ["a", "ab"], [{"a": 1, "ab": 1}], [4]),
        ([["a", "a", "a", "b"]], ["a", "b", "a"], [{"a": 3, "b": 1}], [4]),
        (
            [["c++", "c", "v1.2", "v1x2"]],
            ["c++", "v1.2", "c"],
            [{"c++": 1, "v1.2": 1, "c": 1}],
            [4],
        ),
        ([["a", "b"]], [], [{}], [2]),
    ],
)
def test_encode_and_count_terms_round_trip(
    streams: list[list[str]], terms: list[str], counts: list[dict[str, int]], lengths: list[int]
) -> None:
    assert bm25.count_terms(bm25.encode(streams), terms) == (counts, lengths)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"k1": -1.0},
        {"b": 1.5},
        {"query_idf_power": -0.1},
        {"stream_weights": ()},
        {"passage": -1.0},
        {"sentence": -1},
        {"sentence_mix": 1.5},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        bm25.Bm25F(**kwargs)  # type: ignore[arg-type]


def test_pairs_are_the_querys_neighbouring_terms_in_order_each_once() -> None:
    weights = {"support": 1.0, "group": 1.0, "lgbtq": 2.0}
    sequence = ["lgbtq", "support", "group", "support", "group", "zzz"]

    assert bm25.pairs(sequence, weights) == [
        ("lgbtq", "support"),
        ("support", "group"),
        ("group", "support"),
    ]
    assert bm25.pairs(["a", "a"], {"a": 1.0}) == []


def test_a_pair_with_a_word_nearly_every_memory_holds_is_left_out() -> None:
    weights = bm25.term_weights({"the": 9_000, "support": 40, "group": 60}, 10_000, PARAMS)

    assert bm25.pairs(["the", "support", "group"], weights) == [("support", "group")]


def test_a_pair_counts_where_its_second_term_follows_within_the_window() -> None:
    stored = bm25.encode([["support", "x", "x", "x", "group", "group", "support"]])
    pair = [("support", "group")]

    near, _ = bm25.count_terms(stored, ["support", "group"], pair, window=4)
    far, _ = bm25.count_terms(stored, ["support", "group"], pair, window=3)

    assert near[0] == {"support": 2, "group": 2, "support group": 1}
    assert far[0] == {
        "support": 2,
        "group": 2,
    }  # 4 tokens on, and "group support" is the other order


def test_words_said_together_outrank_the_same_words_apart() -> None:
    weights = {"support": 2.0, "group": 1.5}
    sequence = ["support", "group"]
    found = bm25.pairs(sequence, weights)
    weighted = bm25.pair_weights(found, weights, PARAMS)
    apart = ["support", "is", "what", "we", "need", "said", "the", "group"]
    together = ["what", "is", "said", "we", "need", "the", "support", "group"]

    def scored_with_pairs(tokens: list[str]) -> float:
        counts, lengths = bm25.count_terms(bm25.encode([tokens]), sequence, found, PARAMS.window)
        return bm25.score(counts, lengths, weighted, avglen=8, params=PARAMS)

    assert weighted["support group"] == pytest.approx(PARAMS.proximity * 1.5)
    assert scored_with_pairs(together) > scored_with_pairs(apart)
    assert scored_with_pairs(apart) == pytest.approx(scored([apart], weights, 8))  # BM25F alone


# -- passages (score_document) --------------------------------------------------


def _filler(n: int) -> list[str]:
    return [f"w{i % 50}" for i in range(n)]


def test_a_long_text_scores_as_its_best_passage_by_hand() -> None:
    # 1,000 tokens, "zq81" once at 600; mean length 10: a passage is 64 tokens (PASSAGE_MIN)
    own = _filler(1000)
    own[600] = "zq81"
    weights = {"zq81": 3.0}
    tf = 1 / (1 - 0.4 + 0.4 * 64 / 10)
    expected = 3.0 * tf * 2.2 / (tf + 1.2)

    got = bm25.score_document(bm25.encode([own]), weights, [], avglen=10, params=PASSAGES)

    assert got == pytest.approx(expected)
    assert got > 5 * scored([own], weights, 10)  # the whole text's score


def test_the_best_passage_is_the_one_holding_most_of_the_query() -> None:
    own = _filler(2000)
    own[100], own[900], own[930] = "glacier", "glacier", "zq81"  # the last two: one passage
    weights = {"glacier": 1.0, "zq81": 3.0}
    one_passage = [["glacier", "zq81", *_filler(62)]]  # both terms in 64 tokens

    got = bm25.score_document(bm25.encode([own]), weights, [], avglen=10, params=PASSAGES)

    assert got == pytest.approx(scored(one_passage, weights, 10))


def test_a_passage_counts_its_pairs_of_neighbouring_words() -> None:
    own = _filler(1000)
    own[500], own[501] = "support", "group"
    pair = ("support", "group")
    weights = bm25.pair_weights([pair], {"support": 1.0, "group": 1.0}, PARAMS)
    no_pair = {"support": 1.0, "group": 1.0}
    stored = bm25.encode([own])

    with_pair = bm25.score_document(stored, weights, [pair], avglen=10, params=PASSAGES)
    without = bm25.score_document(stored, no_pair, [], avglen=10, params=PASSAGES)

    assert with_pair > without


def test_short_texts_and_passage_zero_score_the_whole_text() -> None:
    weights = {"cat": 3.0}
    short = [["cat", *_filler(40)]]
    long = [["cat", *_filler(999)]]
    whole_only = bm25.Bm25F(passage=0, sentence_mix=0)

    assert bm25.score_document(
        bm25.encode(short), weights, [], avglen=10, params=PASSAGES
    ) == pytest.approx(scored(short, weights, 10))
    long_whole = bm25.score_document(bm25.encode(long), weights, [], avglen=10, params=whole_only)
    assert long_whole == pytest.approx(scored(long, weights, 10))
    assert bm25.passage_length(100, PARAMS) == 200
    assert bm25.passage_length(10, PARAMS) == bm25.PASSAGE_MIN


def test_passages_count_the_sparse_terms_alike_whatever_else_the_finder_finds() -> None:
    # "w3" is dense (every 50th token) and found by the query's finder too; the
    # sparse terms' passages and counts do not move for it (score_document's finder).
    own = _filler(1000)
    own[400], own[402], own[700] = "support", "group", "zq81"
    text = bm25.encode([own]).split("\n")[1]
    sparse, pairs = ["support", "group", "zq81"], [("support", "group")]

    def counts(*terms: str) -> list[dict[str, int]]:
        finder = bm25._finder(terms)
        return bm25._passage_counts(text, sparse, pairs, span=64, window=4, finder=finder)

    alone = counts("support", "group", "zq81")
    assert counts("w3", "support", "group", "zq81") == alone
    assert alone == [{"support": 1, "group": 1, "support group": 1}, {"group": 1}, {"zq81": 1}]


# -- sentence-sized windows (score_document) ---------------------------------------


def test_a_text_holding_the_query_in_one_sentence_beats_one_holding_it_apart() -> None:
    # Same length, same words: a summary that says "adopt" and "puppy" in one
    # sentence answers "did she adopt a puppy" better than one that says them 40
    # tokens apart; the whole-text score cannot tell them apart.
    weights = {"adopt": 2.0, "puppy": 2.0}
    together, apart = _filler(60), _filler(60)
    together[10], together[14] = "adopt", "puppy"
    apart[10], apart[50] = "adopt", "puppy"

    def read(own: list[str], params: bm25.Bm25F) -> float:
        return bm25.score_document(bm25.encode([own]), weights, [], avglen=30, params=params)

    assert read(together, PASSAGES) == pytest.approx(read(apart, PASSAGES))
    assert read(together, PARAMS) > read(apart, PARAMS) * 1.05


def test_the_window_score_is_mixed_half_and_half_by_hand() -> None:
    # 60 tokens, "zq81" once; mean length 30: the window is 20 tokens holding it once
    own = _filler(60)
    own[30] = "zq81"
    weights = {"zq81": 3.0}
    whole = scored([own], weights, 30)
    tf = 1 / (1 - 0.4 + 0.4 * 20 / 30)
    window = 3.0 * tf * 2.2 / (tf + 1.2)

    got = bm25.score_document(bm25.encode([own]), weights, [], avglen=30, params=PARAMS)

    assert got == pytest.approx(0.5 * whole + 0.5 * window)


def test_the_window_keeps_the_neighbour_turns_and_short_texts_score_whole() -> None:
    weights = {"tuesday": 2.0, "zq81": 3.0}
    short = [["zq81", *_filler(39)], ["tuesday"]]  # own text of 40 tokens: two windows
    long = [[*_filler(60)], ["tuesday"]]  # only the turn before holds a query word
    neighbours = bm25.score([{}, {"tuesday": 1}], [60, 1], weights, avglen=30, params=PARAMS)

    got_short = bm25.score_document(bm25.encode(short), weights, [], avglen=30, params=PARAMS)
    got_long = bm25.score_document(bm25.encode(long), weights, [], avglen=30, params=PARAMS)

    assert got_short == pytest.approx(scored(short, weights, 30))
    assert got_long == pytest.approx(neighbours)  # whole and window alike: the turn before


def test_the_window_counts_pairs_where_they_are() -> None:
    pair = ("support", "group")
    weights = bm25.pair_weights([pair], {"support": 1.0, "group": 1.0}, PARAMS)
    near, far = _filler(80), _filler(80)
    near[40], near[41], near[70] = "support", "group", "support"
    far[10], far[41], far[70] = "support", "group", "support"

    def read(own: list[str]) -> float:
        return bm25.score_document(bm25.encode([own]), weights, [pair], avglen=30, params=PARAMS)

    assert read(near) > read(far)


# -- one Scorer a query (the full-text re-score) ------------------------------------


def _long_with_pair() -> list[list[str]]:
    """A text read every way: a pair (positions for its count), a sparse term in a text
    longer than a passage (passages) and an own text longer than two windows (window)."""
    own = _filler(300)
    own[40], own[41], own[200], own[250] = "support", "group", "support", "zq81"
    return [own, ["support", *_filler(5)], _filler(3)]


def test_one_scorer_reused_across_documents_scores_each_as_a_fresh_one_does() -> None:
    # The re-score makes one Scorer a query and hands it document after document:
    # nothing one document leaves in it may change the next one's score, in any order.
    # (`score_document` is a fresh Scorer a document; its floats were checked equal to
    # the code before the Scorer on 10,330 re-scores of 200 Recalls, docs/FIGURES.md.)
    pair = ("support", "group")
    weights = bm25.pair_weights([pair], {"support": 1.0, "group": 1.5, "zq81": 4.0}, PARAMS)
    documents = [
        _long_with_pair(),
        [["zq81", *_filler(10)]],  # a sentence: read whole
        [_filler(50), ["group", "support", "group"]],  # only the turn before holds them
        [[]],
    ]
    scorer = bm25.Scorer(weights, [pair], avglen=30, params=PARAMS)

    for streams in [*documents, *reversed(documents)]:
        stored = bm25.encode(streams)
        alone = bm25.score_document(stored, weights, [pair], avglen=30, params=PARAMS)
        assert scorer.score(stored) == alone  # the same float, not an approximation


def test_a_document_s_own_text_is_scanned_for_places_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The pair's count, the passages and the window each read the own text's places:
    # three scans of the same text, now one.
    pair = ("support", "group")
    weights = bm25.pair_weights([pair], {"support": 1.0, "group": 1.5, "zq81": 4.0}, PARAMS)
    scanned: list[str] = []
    positions = bm25._positions

    def counted(text: str, finder: object) -> dict[str, list[int]]:
        scanned.append(text)
        return positions(text, finder)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25, "_positions", counted)
    stored = bm25.encode(_long_with_pair())

    bm25.score_document(stored, weights, [pair], avglen=30, params=PARAMS)

    own = stored.split("\n")[1]
    assert scanned.count(own) == 1
