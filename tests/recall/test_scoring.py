"""hydrate -> guard -> boost -> rank, checked against hand-computed values."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from recall.fusion import Fused
from recall.results import Provenance
from recall.scoring import Scored, boost, current_first, guard, hydrate, positive, rank
from recall.testing import InMemoryStore
from recall.types import Filter
from tests.recall.conftest import make_memory, uid


def fused(i: int, score: float) -> Fused:
    return Fused(uid(i), score, (Provenance("fts", 1, score),))


def test_positive_is_the_logistic_for_zscore_and_identity_for_rrf():
    assert positive(0.0, "zscore") == 0.5
    assert positive(2.0, "zscore") == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert positive(-2.0, "zscore") == pytest.approx(1 / (1 + math.exp(2.0)))
    assert positive(0.03, "rrf") == 0.03


@pytest.mark.parametrize("score", [-1e6, -3000.0, 3000.0, 1e6])
def test_positive_never_overflows(score: float):
    value = positive(score, "zscore")
    assert 0.0 <= value <= 1.0


def test_ids_that_no_longer_hydrate_are_dropped_in_fused_order():
    store = InMemoryStore([make_memory(1), make_memory(3)])

    got = hydrate(store, [fused(3, 1.0), fused(2, 0.5), fused(1, -1.0)], method="zscore")

    assert [s.record.id for s in got] == [uid(3), uid(1)]
    assert got[0].score == pytest.approx(positive(1.0, "zscore"))


def test_guard_keeps_in_scope_live_rows_only():
    rows = [
        Scored(make_memory(1), 1.0, (), "fts"),
        Scored(make_memory(2, project="beta"), 1.0, (), "fts"),
        Scored(make_memory(3, active=False), 1.0, (), "fts"),
    ]
    where = Filter(projects=("alpha",), include_global=False)

    assert [s.record.id for s in guard(where, rows)] == [uid(1)]


def test_boosts_multiply_favourite_then_usage():
    star = Scored(make_memory(1, favorite=True), 0.5, (), "fts")
    used = Scored(make_memory(2), 0.5, (), "fts")
    store = InMemoryStore(usage={uid(2): 0.5})

    boost(store, [star, used], favorite=1.15, usage=0.1)

    assert star.score == pytest.approx(0.5 * 1.15)
    assert used.score == pytest.approx(0.5 * (1 + 0.1 * 0.5))


def test_rank_is_best_first_with_ties_by_id():
    rows = [Scored(make_memory(i), s, (), "fts") for i, s in ((3, 0.5), (1, 0.5), (2, 0.9))]
    assert [s.record.id for s in rank(rows)] == [uid(2), uid(1), uid(3)]


def test_current_first_puts_a_chains_newest_ranked_version_where_its_best_one_was():
    """1 -> 2 -> 3 (3 is current); 4 stands alone; 5's successor 6 was not ranked."""

    def at(n: int, score: float, successor: int | None = None) -> Scored:
        record = replace(
            make_memory(n), superseded_by=None if successor is None else uid(successor)
        )
        return Scored(record, score, (), "fts")

    ordered = current_first([at(1, 0.9, 2), at(4, 0.7), at(5, 0.6, 6), at(2, 0.5, 3), at(3, 0.4)])

    assert [s.record.id for s in ordered] == [uid(n) for n in (3, 2, 1, 4, 5)]
    looped = current_first([at(7, 0.9, 8), at(8, 0.8, 7)])  # bad data must not hang
    assert sorted(s.record.id for s in looped) == [uid(7), uid(8)]


def test_a_turn_asks_when_its_text_ends_with_a_question_mark() -> None:
    from recall.types import asks

    turn = {"kind": "episode", "session_id": "s1"}
    assert asks(make_memory(1, description="Mel: what got you into running?  \n", **turn))
    assert not asks(make_memory(2, description="Mel: running? It cleared my head.", **turn))
    # the body is the turn's text when there is one (the description then sums it up)
    assert asks(make_memory(3, description="a question", body="How was it?", **turn))
    assert not asks(make_memory(4, description="How was it?", body="Great, thanks.", **turn))
    # not a turn: a note, or an episode outside any session
    assert not asks(make_memory(5, description="why does it race?", kind="gotcha", session_id="s1"))
    assert not asks(make_memory(6, description="why does it race?", kind="episode"))
