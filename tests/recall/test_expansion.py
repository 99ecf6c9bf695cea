"""The expand stage and link neighbours in Recall."""

from __future__ import annotations

import pytest

from recall.config import RecallConfig
from recall.expansion import neighbours, seeds, wanted
from recall.requests import RecallRequest
from recall.results import Provenance
from recall.scoring import Scored
from recall.testing import InMemoryStore
from recall.types import Candidate, Filter
from tests.recall.conftest import MakeEngine, ids, invalidate, make_memory, make_note, uid

RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0, "semantic": 1.0, "link": 1.0})


def ask(query: str, **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project="alpha", **kw)  # type: ignore[arg-type]


def scored(*records: object) -> list[Scored]:
    return [Scored(r, 1.0 / n, (), "fts") for n, r in enumerate(records, 1)]  # type: ignore[arg-type]


def test_seeds_are_the_best_memories_never_notes():
    ranked = scored(make_note(1, "Note"), make_memory(2), make_memory(3), make_memory(4))

    assert [s.id for s in seeds(ranked, limit=2)] == [uid(2), uid(3)]
    assert [s.rank for s in seeds(ranked, limit=2)] == [1, 2]


def test_expansion_runs_without_a_kind_filter_only():
    assert wanted(Filter(), limit=5)
    assert not wanted(Filter(kinds=("gotcha",)), limit=5)
    assert not wanted(Filter(), limit=0)


def test_new_neighbours_score_weight_times_edge_over_k_plus_discovery_order():
    present, first, second = make_memory(1), make_memory(2, "b"), make_memory(3, "c")
    store = InMemoryStore([present, first, second])
    found = [Candidate(uid(1), 1, 1.0), Candidate(uid(2), 2, 1.0), Candidate(uid(3), 3, 0.5)]

    out = neighbours({"link": found}, scored(present), store=store, weights={"link": 2.0}, k=60)

    assert [(s.record.id, s.sources) for s in out] == [
        (uid(2), (Provenance("link", 1, 2.0 / 61),)),  # the ranked memory does not count
        (uid(3), (Provenance("link", 2, 2.0 * 0.5 / 62),)),
    ]
    assert [s.score for s in out] == [2.0 / 61, 1.0 / 62]


def test_neighbours_that_no_longer_hydrate_are_dropped_without_a_number():
    store = InMemoryStore([make_memory(3, "c")])
    out = neighbours(
        {"link": [Candidate(uid(2), 1, 1.0), Candidate(uid(3), 2, 1.0)]},
        [],
        store=store,
        weights={"link": 1.0},
        k=60,
    )
    assert [(s.record.id, s.sources[0].rank) for s in out] == [(uid(3), 1)]


def test_link_neighbours_join_recall_with_source_link(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma boot race", body="see [[startup-order]]")
    neighbour = make_memory(2, "startup-order", description="services start in this order")
    engine = make_engine([seed, neighbour], embedder=None)

    pack = engine.recall(ask("chroma"), config=RRF)

    assert ids(pack.items) == [seed.id, neighbour.id]
    assert pack.items[1].source == "link"
    assert pack.items[1].score == pytest.approx(1 / (60 + 1))


def test_names_resolve_in_the_project_before_global(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[shared]]")
    engine = make_engine(
        [seed, make_memory(2, "shared", project=None), make_memory(3, "shared")], embedder=None
    )

    pack = engine.recall(ask("chroma"), config=RRF)

    assert [h.id for h in pack.items if h.source == "link"] == [uid(3)]


def test_neighbours_come_in_body_order(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[gamma]] then [[beta]] then [[gamma]]")
    engine = make_engine([seed, make_memory(2, "beta"), make_memory(3, "gamma")], embedder=None)

    pack = engine.recall(ask("chroma"), config=RRF)

    assert [(h.id, h.sources[0].rank) for h in pack.items if h.source == "link"] == [
        (uid(3), 1),
        (uid(2), 2),
    ]


def test_link_expansion_is_noop_without_bodies(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_memory(2, "unlinked", description="other")]
    )

    pack = engine.recall(ask("chroma", debug=True), config=RRF)

    assert [h.source for h in pack.items] != [] and "link" not in {h.source for h in pack.items}


def test_link_expansion_is_skipped_with_a_kind_filter(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", kind="gotcha", body="[[other]]")
    engine = make_engine([seed, make_memory(2, "other", kind="gotcha")], embedder=None)

    assert ids(engine.recall(ask("chroma", kind="gotcha")).items) == [seed.id]


def test_a_zero_link_weight_turns_expansion_off(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[other]]")
    engine = make_engine([seed, make_memory(2, "other")], embedder=None)

    pack = engine.recall(ask("chroma", channel_weights={"link": 0}), config=RRF)

    assert ids(pack.items) == [seed.id]


def test_out_of_scope_and_inactive_neighbours_are_guarded(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[elsewhere]] [[retired]]")
    engine = make_engine(
        [seed, make_memory(2, "elsewhere", project=None), make_memory(3, "retired")],
        embedder=None,
        isolation={"alpha": "sealed"},
    )
    invalidate(engine, uid(3))

    assert ids(engine.recall(ask("chroma")).items) == [seed.id]


def test_only_the_top_seeds_are_expanded(make_engine: MakeEngine):
    seeds_ = [
        make_memory(i, description="chroma " * (10 - i), body=f"[[n{i}]]") for i in range(1, 8)
    ]
    targets = [make_memory(100 + i, f"n{i}") for i in range(1, 8)]
    engine = make_engine([*seeds_, *targets], embedder=None)

    pack = engine.recall(ask("chroma", limit=100), config=RRF)

    linked = [h.id for h in pack.items if h.source == "link"]
    assert linked == [uid(101), uid(102), uid(103), uid(104), uid(105)]
