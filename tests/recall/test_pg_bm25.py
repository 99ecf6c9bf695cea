"""BM25F's arithmetic, checked against hand-computed values (no database).

The expected values are written from the module's parameters (K1, B, the field
weights), so they check the formula, not one choice of parameters.
"""

from __future__ import annotations

import pytest

from recall.indexes.pg_bm25 import FIELD_WEIGHT, K1, B, bm25, weighted_length


def test_a_row_of_average_length_scores_idf_times_the_saturated_frequency() -> None:
    # tf 1 at average length: idf * 1 * (K1 + 1) / (1 + K1)
    assert bm25(2.0, 1.0, 10.0, 10.0) == pytest.approx(2.0)


def test_a_longer_row_scores_less_for_the_same_frequency() -> None:
    expected = (K1 + 1) / (1 + K1 * (1 - B + B * 20.0 / 10.0))
    assert bm25(1.0, 1.0, 20.0, 10.0) == pytest.approx(expected)
    assert bm25(1.0, 1.0, 20.0, 10.0) < bm25(1.0, 1.0, 5.0, 10.0)


def test_an_empty_table_average_does_not_divide_by_zero() -> None:
    # An average of 0 is taken as 1.
    expected = 0.4 * (K1 + 1) / (0.4 + K1 * (1 - B + B * 0.4))
    assert bm25(1.0, 0.4, 0.4, 0.0) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("fields", "counts"),
    [({"A": "chroma boot", "C": "warm the cache"}, {"A": 2, "C": 3}),
     ({"B": "one", "D": "a b c d"}, {"B": 1, "D": 4}), ({"A": "", "C": ""}, {})],
)  # fmt: skip
def test_a_rows_length_counts_each_word_at_its_fields_weight(
    fields: dict[str, str], counts: dict[str, int]
) -> None:
    expected = sum(FIELD_WEIGHT[w] * n for w, n in counts.items())
    assert weighted_length(fields) == pytest.approx(expected)


def test_the_neighbour_turns_count_less_than_the_items_own_text() -> None:
    """Context (D) below the item's own fields, which count alike (recall/bm25.py's stream 0)."""
    assert FIELD_WEIGHT["D"] < FIELD_WEIGHT["C"] == FIELD_WEIGHT["B"] == FIELD_WEIGHT["A"]
