"""Meaning in context (recall/context.py): a turn's cosine mixed with its window's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recall.channels.semantic import Semantic
from recall.config import RecallConfig
from recall.context import reading, rescore
from recall.planes import Planes
from recall.testing import InMemoryStore, InMemoryTextIndex, InMemoryVectorIndex
from recall.types import Candidate, ChannelQuery, Context, Filter, VectorRow
from tests.recall.conftest import make_memory, uid
from tests.recall.conftest import make_turn as turn

ALPHA = Filter(projects=("alpha",))
Q = np.array([1.0, 0.0, 0.0], dtype=np.float32)


def planes_with(records, vectors):  # type: ignore[no-untyped-def]
    store = InMemoryStore(records)
    plane = InMemoryVectorIndex()
    plane.upsert([
        VectorRow(id=r.id, item="memory", project=r.project, active=r.active, kind=r.kind,
                  vector=tuple(v / np.linalg.norm(v)), model="test")
        for r, v in zip(records, vectors, strict=True)
    ])  # fmt: skip
    return store, plane


def test_a_turn_scores_with_the_two_turns_before_it_by_hand():
    # The turn (order 3) says little (cosine 0); the two before it talk about the query.
    records = [turn(1, 1), turn(2, 2), turn(3, 3), turn(4, 4)]
    vectors = [np.array(v, dtype=float) for v in ([1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1])]
    store, plane = planes_with(records, vectors)
    found = [Candidate(uid(3), 1, 0.0), Candidate(uid(4), 2, 0.0)]

    got = rescore(found, Q, store=store, vectors=plane, where=ALPHA, context=Context(0.5, 2, 100))

    # window of 3: (0,1,0) + (1,1,0)/sqrt2 + (1,0,0) -> cosine with Q by hand
    w3 = np.array([0, 1, 0]) + np.array([1, 1, 0]) / math.sqrt(2) + np.array([1, 0, 0])
    w4 = np.array([0, 0, 1]) + np.array([0, 1, 0]) + np.array([1, 1, 0]) / math.sqrt(2)
    expected = {uid(3): 0.5 * w3[0] / np.linalg.norm(w3), uid(4): 0.5 * w4[0] / np.linalg.norm(w4)}
    assert [c.id for c in got] == [uid(3), uid(4)]
    assert [c.rank for c in got] == [1, 2]
    for c in got:
        assert c.score == pytest.approx(expected[c.id], abs=1e-6)


def test_no_earlier_turn_out_of_scope_or_other_session_keeps_the_cosine():
    first = turn(1, 1)  # the session's first turn: nothing before it
    lone = make_memory(2, kind="fact")  # no session
    elsewhere = turn(3, 1, session="alpha:S2")
    foreign = turn(4, 1, session="alpha:S3", project="beta")  # before 5, out of scope
    after = turn(5, 2, session="alpha:S3")
    records = [first, lone, elsewhere, foreign, after]
    store, plane = planes_with(records, [np.array([1.0, 0.2, 0.0])] * 5)
    found = [Candidate(r.id, n, 0.3) for n, r in enumerate(records, 1) if r is not foreign]

    got = rescore(found, Q, store=store, vectors=plane, where=ALPHA, context=Context(0.5, 2, 100))

    assert [(c.id, c.score) for c in got] == [(c.id, c.score) for c in found]


def test_mix_zero_is_the_plain_cosine_and_recall_reads_with_its_config():
    records = [turn(1, 1), turn(2, 2)]
    store, plane = planes_with(records, [np.array([1.0, 0, 0]), np.array([0, 1.0, 0])])
    found = [Candidate(uid(2), 1, 0.0)]

    assert rescore(found, Q, store=store, vectors=plane, where=ALPHA,
                   context=Context(0.0, 2, 100)) == found  # fmt: skip
    assert reading(RecallConfig(context_mix=0.0, passage_mix=0.0)) is None
    assert reading(RecallConfig(passage_mix=0.0)) == Context(0.5, 2, 50, 0.0)
    assert reading(RecallConfig(context_mix=0.0)) == Context(0.0, 2, 50, 0.5)
    assert reading(RecallConfig()) == Context(0.5, 2, 50, 0.5)
    with pytest.raises(ValueError, match="context_mix"):
        RecallConfig(context_mix=1.5)


def test_the_semantic_channel_reads_its_pool_and_returns_depth():
    # Turn 2 says nothing the query asks (cosine 0) but follows a turn that does:
    # in context it climbs above turn 3, whose own cosine is a little higher.
    records = [turn(1, 1), turn(2, 2), turn(3, 1, session="alpha:S9")]
    vectors = [np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([0.2, 1.0, 0])]
    store, plane = planes_with(records, vectors)
    channel = Semantic(Planes(text=InMemoryTextIndex(), store=store, vectors=plane))

    plain = channel.candidates(ChannelQuery("q", vector=Q), ALPHA, 3, ())
    mixed = channel.candidates(
        ChannelQuery("q", vector=Q, context=Context(0.5, 2, 3)), ALPHA, 2, ()
    )

    assert [c.id for c in plain] == [uid(1), uid(3), uid(2)]
    # turn 1 keeps 1.0; turn 2: 0.5 x cos(q, (1,1,0)) = 0.354 > turn 3's 0.196
    assert [c.id for c in mixed] == [uid(1), uid(2)]
