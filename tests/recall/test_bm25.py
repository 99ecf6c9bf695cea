from __future__ import annotations

import math

import pytest

from recall import bm25

PARAMS = bm25.Bm25F()


def test_idf_is_lucenes_and_never_negative() -> None:
    assert bm25.idf(1, 10) == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert bm25.idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    assert bm25.idf(12, 10) > 0  # df counted over deleted documents too


def test_term_weights_raise_idf_to_one_and_a_half_and_skip_unknown_terms() -> None:
    weights = bm25.term_weights({"cat": 1, "zzz": 0}, 10, PARAMS)

    assert weights == {"cat": pytest.approx(bm25.idf(1, 10) ** 1.5)}


def test_score_of_one_stream_matches_bm25_by_hand() -> None:
    # tf 2 in a 4-token text, mean length 8: norm = 1 - 0.4 + 0.4 * 4 / 8 = 0.8
    tf = 2 / 0.8
    expected = 3.0 * tf * 2.2 / (tf + 1.2)

    got = bm25.score([["cat", "sat", "cat", "mat"]], {"cat": 3.0}, avglen=8, params=PARAMS)

    assert got == pytest.approx(expected)


def test_neighbour_streams_add_term_frequency_before_saturation() -> None:
    # own text 2 tokens (norm 0.6 + 0.4 * 2 / 4 = 0.8), previous turn 4 tokens (norm 1.0)
    tf = 1 / 0.8 + 0.5 * 1 / 1.0
    expected = 2.0 * tf * 2.2 / (tf + 1.2)
    streams = [["dog", "ran"], ["the", "dog", "was", "big"]]

    got = bm25.score(streams, {"dog": 2.0}, avglen=4, params=PARAMS)

    assert got == pytest.approx(expected)
    one = bm25.score(streams[:1], {"dog": 2.0}, avglen=4, params=PARAMS)
    other = bm25.score([[], *streams[1:]], {"dog": 2.0}, avglen=4, params=PARAMS)
    assert got < one + other  # saturation: not two pieces of evidence


def test_a_term_only_in_the_turn_two_back_counts_at_its_weight() -> None:
    streams: list[list[str]] = [["hello"], [], ["paris"]]
    tf = 0.35 / (0.6 + 0.4 * 1 / 2)

    got = bm25.score(streams, {"paris": 1.0}, avglen=2, params=PARAMS)

    assert got == pytest.approx(tf * 2.2 / (tf + 1.2))


def test_no_matching_term_scores_zero() -> None:
    assert bm25.score([["a", "b"]], {"c": 1.0}, avglen=2, params=PARAMS) == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [{"k1": -1.0}, {"b": 1.5}, {"query_idf_power": -0.1}, {"stream_weights": ()}],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        bm25.Bm25F(**kwargs)  # type: ignore[arg-type]
