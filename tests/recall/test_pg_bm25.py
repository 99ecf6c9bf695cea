"""BM25F's arithmetic, checked against hand-computed values (no database)."""

from __future__ import annotations

import pytest

from recall.indexes.pg_bm25 import bm25, weighted_length


def test_a_row_of_average_length_scores_idf_times_the_saturated_frequency() -> None:
    # tf 1 at average length: 2.0 * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1))
    assert bm25(2.0, 1.0, 10.0, 10.0) == pytest.approx(2.0 * 2.2 / 2.2)


def test_a_longer_row_scores_less_for_the_same_frequency() -> None:
    assert bm25(1.0, 1.0, 20.0, 10.0) == pytest.approx(2.2 / (1 + 1.2 * (0.25 + 1.5)))
    assert bm25(1.0, 1.0, 20.0, 10.0) < bm25(1.0, 1.0, 5.0, 10.0)


def test_an_empty_table_average_does_not_divide_by_zero() -> None:
    assert bm25(1.0, 0.4, 0.4, 0.0) == pytest.approx(0.4 * 2.2 / (0.4 + 1.2 * (0.25 + 0.3)))


@pytest.mark.parametrize(
    ("fields", "length"),
    [({"A": "chroma boot", "C": "warm the cache"}, 2 * 1.0 + 3 * 0.4),
     ({"B": "one", "D": "a b c d"}, 0.6 + 4 * 0.1), ({"A": "", "C": ""}, 0.0)],
)  # fmt: skip
def test_a_rows_length_counts_each_word_at_its_fields_weight(
    fields: dict[str, str], length: float
) -> None:
    assert weighted_length(fields) == pytest.approx(length)
