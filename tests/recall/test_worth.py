"""Importance and Memory Worth in ranking (recall/worth.py), against hand-computed values."""

from __future__ import annotations

import pytest

from recall.config import RecallConfig
from recall.errors import QueryError
from recall.requests import RecallRequest
from recall.worth import importance_factor, worth, worth_factor
from tests.recall.conftest import MakeEngine, ids, make_memory

# RRF over full text alone: rank r scores 1 / (60 + r), no session prior.
RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0}, session_prior=0.0, routing="hybrid")


def ask(**kw: object) -> RecallRequest:
    return RecallRequest(query="chroma", project="alpha", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("helpful", "harmful", "expected"),
    [(0, 0, 1 / 2), (1, 0, 2 / 3), (0, 1, 1 / 3), (3, 1, 4 / 6), (9, 0, 10 / 11)],
)
def test_worth_is_laplaces_rule_of_succession(helpful: int, harmful: int, expected: float):
    assert worth(helpful, harmful) == pytest.approx(expected)


def test_factors_are_one_at_the_defaults_and_linear_around_them():
    assert importance_factor(0.5, 0.5) == 1
    assert importance_factor(1.0, 0.5) == pytest.approx(1.25)
    assert importance_factor(0.0, 0.5) == pytest.approx(0.75)
    assert worth_factor(0.5, 2.0) == 1
    assert worth_factor(2 / 3, 1.0) == pytest.approx(7 / 6)


def test_worth_reorders_two_memories_by_hand_computed_scores(make_engine: MakeEngine):
    a = make_memory(1, description="chroma boot race")
    b = make_memory(2, description="chroma boot race", helpful=1)  # one helpful verdict
    engine = make_engine([a, b], embedder=None)

    off = engine.recall(ask(worth_weight=0.0), config=RRF)
    on = engine.recall(ask(worth_weight=1.0), config=RRF)

    assert ids(off.items) == [a.id, b.id]  # a tie in fts: rank by id
    assert [h.score for h in off.items] == pytest.approx([1 / 61, 1 / 62])
    # b: 1/62 x (1 + 1 x (2/3 - 1/2)) = 7/372 = 0.018817 > a: 1/61 = 0.016393
    assert ids(on.items) == [b.id, a.id]
    assert [h.score for h in on.items] == pytest.approx([7 / 372, 1 / 61])
    assert [h.worth for h in on.items] == pytest.approx([2 / 3, 1 / 2])


def test_importance_weighting_is_on_by_default_and_can_be_turned_off(make_engine: MakeEngine):
    a = make_memory(1, description="chroma boot race")
    b = make_memory(2, description="chroma boot race", importance=1.0)
    engine = make_engine([a, b], embedder=None)

    weighted = engine.recall(ask(), config=RRF)
    plain = engine.recall(ask(importance_weighted=False), config=RRF)

    # b: 1/62 x (1 + 0.5 x (1 - 0.5)) = 1.25/62 = 0.020161 > 1/61
    assert ids(weighted.items) == [b.id, a.id]
    assert [h.score for h in weighted.items] == pytest.approx([1.25 / 62, 1 / 61])
    assert ids(plain.items) == [a.id, b.id]


@pytest.mark.parametrize("bad", [-0.1, 2.5, float("nan")])
def test_a_worth_weight_out_of_range_is_a_query_error(make_engine: MakeEngine, bad: float):
    engine = make_engine([make_memory(1, description="chroma")], embedder=None)
    with pytest.raises(QueryError, match="worth_weight"):
        engine.recall(ask(worth_weight=bad), config=RRF)
