"""recall/background.py: English word frequencies, the prior of a small scope's idf."""

from __future__ import annotations

import math

import pytest

from recall import background, bm25


def test_the_list_reads_common_words_as_common_and_lacks_names() -> None:
    assert background.frequency("the") == pytest.approx(0.0537, rel=0.02)
    assert background.frequency("people") > background.frequency("zeppelin") > background.FLOOR
    assert background.frequency("glacier-billing-zq81") == background.FLOOR  # not a word of it


def test_a_term_stands_for_the_commonest_of_its_words() -> None:
    stems = {"queues": ("queue",), "queue": ("queue",), "zq81": ("zq81",)}

    known = background.term_frequencies(["queues", "queue", "zq81"], stems.__getitem__)

    assert known == {
        "queue": max(background.frequency("queue"), background.frequency("queues")),
        "zq81": background.FLOOR,
    }


def test_a_share_is_the_poisson_chance_of_one_occurrence_or_more() -> None:
    prior = background.Prior({"people": 1e-3}, length=20)

    assert prior.share("people") == pytest.approx(1 - math.exp(-1e-3 * 20))
    assert prior.share("unknown") == pytest.approx(1 - math.exp(-background.FLOOR * 20))
    longer = background.Prior({"people": 1e-3}, length=400)
    assert longer.share("people") > prior.share("people")  # a longer row holds more words


def test_the_prior_separates_words_a_small_scope_counts_alike() -> None:
    """One row of three holds each word: without the prior they weigh the same."""
    params = bm25.Bm25F()
    dfs = {"people": 1, "zeppelin": 1}
    known = {w: background.frequency(w) for w in dfs}

    plain = bm25.term_weights(dfs, 3, params)
    leaning = bm25.term_weights(dfs, 3, params, background.Prior(known, length=5))

    assert plain["people"] == plain["zeppelin"]
    assert leaning["zeppelin"] > leaning["people"]


def test_a_large_scope_outweighs_the_prior() -> None:
    """At 100,000 rows the prior's 100 barely move an idf; at 3 they decide it."""
    params = bm25.Bm25F()
    prior = background.Prior({"people": background.frequency("people")}, length=20)

    def moved(df: int, n: int) -> float:
        leaning = bm25.term_weights({"people": df}, n, params, prior)["people"]
        return abs(leaning / bm25.term_weights({"people": df}, n, params)["people"] - 1)

    assert moved(5_000, 100_000) < 0.01
    assert moved(1, 3) > 1.0


def test_no_prior_rows_is_no_prior() -> None:
    params = bm25.Bm25F(prior_rows=0)
    prior = background.Prior({"people": 1e-3}, length=20)

    assert bm25.term_weights({"people": 1}, 3, params, prior) == bm25.term_weights(
        {"people": 1}, 3, params
    )
