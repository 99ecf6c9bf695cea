"""The session neighbourhood (Dakera 004): the rule, the channel, and Recall with it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from recall.channels.session import Session
from recall.config import RecallConfig
from recall.errors import ChannelOff, QueryError
from recall.neighbourhood import near
from recall.planes import Planes
from recall.requests import RecallRequest
from recall.testing import InMemoryStore, InMemoryTextIndex
from recall.types import Candidate, ChannelQuery, Filter, Nearby, Neighbour
from tests.recall.conftest import NOW, MakeEngine, make_memory, uid
from tests.recall.conftest import make_turn as turn

ALPHA = Filter(projects=("alpha",))
RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0, "session": 1.0})


def test_neighbours_are_within_the_turns_nearest_first_and_capped():
    seed = turn(5, 5)
    others = [turn(n, n) for n in (2, 3, 4, 6, 7, 8)]

    found = near([seed], [seed, *others], where=ALPHA, minutes=5, turns=2, cap=3)

    assert found == {
        uid(5): (Neighbour(uid(4), 1, 0.0), Neighbour(uid(6), 1, 0.0), Neighbour(uid(3), 2, 0.0))
    }


def test_the_time_window_decides_where_there_is_no_order():
    seed = turn(1, None)
    inside = turn(2, None, occurred_at=NOW + timedelta(minutes=4))
    outside = turn(3, None, occurred_at=NOW - timedelta(minutes=6))
    untimed = turn(4, None, occurred_at=None)

    found = near([seed], [inside, outside, untimed], where=ALPHA, minutes=5, turns=2, cap=10)

    assert found == {uid(1): (Neighbour(uid(2), None, 4.0),)}


def test_both_measures_apply_where_both_are_known():
    seed = turn(1, 10)
    late = turn(2, 11, occurred_at=NOW + timedelta(hours=1))  # one turn, but an hour later
    assert near([seed], [late], where=ALPHA, minutes=5, turns=2, cap=10) == {}


def test_other_sessions_out_of_scope_and_inactive_never_come_back():
    seed = turn(1, 1)
    candidates = [
        turn(2, 2, session="alpha:S2"),  # another session
        turn(3, 2, project="beta"),  # out of scope
        turn(4, 2, active=False),  # superseded or archived
        make_memory(5, session_order=2),  # no session
    ]
    assert near([seed], candidates, where=ALPHA, minutes=5, turns=2, cap=10) == {}


def test_the_channel_scores_below_the_seed_by_distance_and_keeps_the_best_seed():
    records = [turn(n, n) for n in range(1, 7)] + [make_memory(9, kind="fact")]
    store = InMemoryStore(records)
    channel = Session(Planes(text=InMemoryTextIndex(), store=store))
    seeds = [Candidate(uid(3), 1, 0.8), Candidate(uid(9), 2, 0.7), Candidate(uid(6), 3, 0.5)]

    found = channel.candidates(ChannelQuery("x", nearby=Nearby()), ALPHA, 50, seeds)

    got = {c.id: (round(c.score, 3), c.distance, c.path) for c in found}
    assert got[uid(2)] == (0.4, 1, (uid(3), uid(2)))  # 0.8 x 0.5
    assert got[uid(1)] == (0.2, 2, (uid(3), uid(1)))  # 0.8 x 0.25
    assert got[uid(5)] == (0.25, 1, (uid(6), uid(5)))  # 0.5 x 0.5 beats 0.8 x 0.25
    assert got[uid(4)] == (0.4, 1, (uid(3), uid(4)))  # its nearer, better seed
    assert uid(9) not in got and all(c.score < 0.8 for c in found)  # a fact seeds nothing
    assert [c.rank for c in found] == list(range(1, len(found) + 1))


def test_the_channel_is_off_without_a_reach():
    channel = Session(Planes(text=InMemoryTextIndex(), store=InMemoryStore()))
    with pytest.raises(ChannelOff):
        channel.candidates(ChannelQuery("x"), ALPHA, 10, [Candidate(uid(1), 1, 1.0)])


def test_recall_brings_the_turn_after_the_hit_with_session_provenance(make_engine: MakeEngine):
    asked = turn(1, 1, description="where did the albatross land")
    answer = turn(2, 2, description="on the lighthouse roof")
    far = turn(3, 9, description="lunch was soup")
    engine = make_engine([asked, answer, far], embedder=None)

    on = engine.recall(RecallRequest("albatross", "alpha", debug=True), config=RRF)
    off = engine.recall(
        RecallRequest("albatross", "alpha", session_neighbours=False, debug=True), config=RRF
    )

    assert [h.id for h in on.items] == [uid(1), uid(2)]
    (prov,) = on.items[1].sources
    assert (prov.channel, prov.hops, prov.path) == ("session", 1, (uid(1), uid(2)))
    assert on.items[1].score < on.items[0].score
    assert [h.id for h in off.items] == [uid(1)]
    assert off.debug is not None and off.debug["channel_status"]["session"].startswith("off")


def test_recall_fields_override_the_config(make_engine: MakeEngine):
    records = [turn(1, 1, description="albatross"), turn(2, 2), turn(3, 3)]
    engine = make_engine(records, embedder=None)

    one = engine.recall(RecallRequest("albatross", "alpha", session_turns=1), config=RRF)
    two = engine.recall(RecallRequest("albatross", "alpha", session_turns=2), config=RRF)
    capped = engine.recall(
        RecallRequest("albatross", "alpha", session_turns=2, session_cap=1), config=RRF
    )
    off = replace_config(session_neighbours=False)
    asked = engine.recall(RecallRequest("albatross", "alpha", session_neighbours=True), config=off)

    assert {h.id for h in one.items} == {uid(1), uid(2)}
    assert {h.id for h in two.items} == {uid(1), uid(2), uid(3)}
    assert {h.id for h in capped.items} == {uid(1), uid(2)}
    assert {h.id for h in asked.items} == {uid(1), uid(2), uid(3)}


def replace_config(**kw: object) -> RecallConfig:
    from dataclasses import replace

    return replace(RRF, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad", [{"session_turns": -1}, {"session_cap": 51}, {"session_window_minutes": float("nan")}]
)
def test_out_of_range_fields_are_refused_by_name(make_engine: MakeEngine, bad: dict) -> None:
    engine = make_engine([turn(1, 1)], embedder=None)
    with pytest.raises(QueryError, match=next(iter(bad))):
        engine.recall(RecallRequest("x", "alpha", **bad))
