"""Recency decay and expiry (recall/decay.py), with the clock pinned."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from recall.config import RecallConfig
from recall.decay import Decay, decay_factor, expired, half_life
from recall.requests import BriefingRequest, RecallRequest
from tests.recall.conftest import NOW, MakeEngine, ids, make_memory

RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0}, session_prior=0.0, routing="hybrid")
WEEK = 7.0


@pytest.mark.parametrize(
    ("kind", "accessed", "days"),
    [
        ("episode", True, WEEK),
        ("episode", False, WEEK / 1.5),  # never accessed: 50% faster
        ("working", True, WEEK / 3),  # working memory: 3x faster
        ("runbook", True, WEEK / 0.3),  # procedural: 0.3x
        ("protocol", False, WEEK / 0.3 / 1.5),
        ("constraint", True, None),  # durable kinds do not decay
        ("decision", False, None),
    ],
)
def test_half_life_per_kind(kind: str, accessed: bool, days: float | None):
    found = half_life(kind, accessed=accessed)
    assert found == (pytest.approx(days) if days is not None else None)


def test_decay_factor_by_hand():
    week_old = make_memory(1, kind="episode", created=NOW - timedelta(days=7), access_count=1)
    never_read = replace(week_old, access_count=0)
    decay = Decay(half_life_days=7.0, floor=0.5)

    # one half-life: 0.5 + 0.5 x 2^-1 = 0.75
    assert decay_factor(week_old, NOW, decay) == pytest.approx(0.75)
    # 7 days at a half-life of 7/1.5 days: 0.5 + 0.5 x 2^-1.5 = 0.676777
    assert decay_factor(never_read, NOW, decay) == pytest.approx(0.5 + 0.5 * 2**-1.5)
    # the access boost: a read a day ago restarts the clock there
    read = replace(week_old, last_accessed_at=NOW - timedelta(days=1))
    assert decay_factor(read, NOW, decay) == pytest.approx(0.5 + 0.5 * 2 ** (-1 / 7))
    # occurred_at, when known, is where the age runs from
    event = replace(week_old, occurred_at=NOW - timedelta(days=14))
    assert decay_factor(event, NOW, decay) == pytest.approx(0.625)
    assert decay_factor(replace(week_old, kind="constraint"), NOW, decay) == 1.0


def test_decay_reorders_an_old_memory_below_a_fresh_one(make_engine: MakeEngine):
    old = make_memory(1, description="chroma boot race", created=NOW - timedelta(days=7),
                      access_count=1)  # fmt: skip
    new = make_memory(2, description="chroma boot race", created=NOW, access_count=1)
    engine = make_engine([old, new], embedder=None)

    plain = engine.recall(RecallRequest("chroma", "alpha"), config=RRF)
    decayed = engine.recall(RecallRequest("chroma", "alpha", decay=True), config=RRF)

    assert ids(plain.items) == [old.id, new.id]  # decay is off by default
    # old: 1/61 x 0.75 = 0.012295 < new: 1/62 x 1
    assert ids(decayed.items) == [new.id, old.id]
    assert [h.score for h in decayed.items] == pytest.approx([1 / 62, 0.75 / 61])


def test_an_expired_memory_leaves_recall_browse_and_briefing_at_once(make_engine: MakeEngine):
    now = [NOW]
    lasting = make_memory(1, description="chroma boot race")
    brief = make_memory(2, description="chroma boot race", expires_at=NOW + timedelta(minutes=1))
    engine = make_engine([lasting, brief], embedder=None, clock=lambda: now[0])

    def seen() -> tuple[list[str], list[str], tuple[str, ...]]:
        found = engine.recall(RecallRequest("chroma", "alpha"), config=RRF)
        browsed = engine.recall(RecallRequest("", "alpha", kind="fact"), config=RRF)
        briefing = engine.briefing(BriefingRequest(project="alpha"))
        return ids(found.items), ids(browsed.items), briefing.ids

    assert all(brief.id in got for got in seen())
    now[0] = NOW + timedelta(minutes=1)  # expires_at reached: gone
    assert all(brief.id not in got and lasting.id in got for got in seen())
    assert expired(brief, now[0]) and not expired(lasting, now[0])
